"""Facts about the source tree, measured from the code: prints figures; asserts nothing.

    python benchmarks/tree_facts.py            # the table benchmarks/README.md quotes

Modules and lines per folder; import cycles between the project's modules (every import,
the ones inside functions included); private names (``_x``) one module takes from another;
the lines of process plumbing (the sweep's own processes: study/sweep, the entry, the Hydra
plugins, the cell's process), in lines and in code lines (no blank line, comment or
docstring), with v2's files measured the same way from git; modules over 300 lines and
functions over 60 lines, and which of them say why (a ``# Long:`` comment at the top of the
module or function); and which modules of the sweep's own process import torch at module level
(none should).
"""

from __future__ import annotations

import ast
import io
import subprocess
import sys
import tokenize
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("study", "analysis", "hydra_plugins")
PLUMBING = ("study/sweep/", "study/run.py", "hydra_plugins/", "study/cell/worker.py")
# The count of process plumbing (2,352 lines in v2: server, client, jobs, part of sweep,
# sweep_check, callbacks, prewarm, pycache, the sweeper plugin), file by file in this tree.
GROUPS = {
    "transport and scheduling": ("study/sweep/warm_parent.py",
                                 "study/sweep/scheduler.py", "study/sweep/launcher.py",
                                 "study/sweep/sweeper.py", "hydra_plugins/study_plugins/__init__.py"),
    "the warm parent's extras": ("study/sweep/prewarm.py", "study/sweep/pycache.py"),
    "the sweep dir": ("study/sweep/sweepdir.py",),
}  # fmt: skip
WARM_PARENT = ("study/sweep/warm_parent.py", "study/sweep/prewarm.py")  # they import torch on purpose
# v2's plumbing, as the issue listed it (sweep.py whole: its lines 52-157 were the count's part)
V2 = ("1f7468f", ("study/server.py", "study/client.py", "study/jobs.py", "study/sweep.py",
                  "study/sweep_check.py", "study/callbacks.py", "study/prewarm.py",
                  "study/pycache.py", "hydra_plugins/study_sweeper/__init__.py"))  # fmt: skip
WHY = "# Long:"  # a long module or function says why at its top


def code_lines(src: str) -> int:
    """Lines holding code: no blank line, comment or docstring."""
    tree = ast.parse(src)
    docs = set()
    for n in ast.walk(tree):
        body = getattr(n, "body", None)
        if (
            isinstance(n, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
            and body
        ):
            first = body[0]
            if isinstance(first, ast.Expr) and isinstance(getattr(first, "value", None), ast.Constant) \
                    and isinstance(first.value.value, str):  # fmt: skip
                docs.update(range(first.lineno, first.end_lineno + 1))
    skip = {tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT,
            tokenize.ENDMARKER}  # fmt: skip
    lines = set()
    for tok in tokenize.generate_tokens(io.StringIO(src).readline):
        if tok.type not in skip:
            lines.update(x for x in range(tok.start[0], tok.end[0] + 1) if x not in docs)
    return len(lines)


def says_why(lines: list[str], start: int) -> bool:
    """A ``# Long:`` comment within the first 12 lines from ``start`` (0-based)."""
    return any(x.strip().startswith(WHY) for x in lines[start : start + 12])


def modules() -> dict[str, Path]:
    out = {}
    for pkg in PACKAGES:
        for p in sorted((ROOT / pkg).rglob("*.py")):
            parts = p.relative_to(ROOT).with_suffix("").parts
            name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            out[name] = p
    return out


def imports(name: str, path: Path, known: dict) -> list[tuple[str, list[str], bool]]:
    """(module imported, names taken from it, at module level?) for each import of a project module."""
    tree = ast.parse(path.read_text())
    top = set(map(id, tree.body))
    out = []
    pkg = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name in known:
                    out.append((a.name, [], id(node) in top))
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(pkg.split(".")[: len(pkg.split(".")) - node.level + 1] + [base])
            for a in node.names:
                sub = f"{base}.{a.name}"
                if sub in known:
                    out.append((sub, [], id(node) in top))
                elif base in known:
                    out.append((base, [a.name], id(node) in top))
    return out


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index, low, stack, on, out, n = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = n[0]
        n[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in graph:
        if v not in index:
            visit(v)
    return out


def doc_end(path: Path) -> int:
    """The line after the module's docstring (0-based), or 0."""
    body = ast.parse(path.read_text()).body
    first = body[0] if body else None
    is_doc = isinstance(first, ast.Expr) and isinstance(getattr(first, "value", None), ast.Constant)
    return first.end_lineno if is_doc else 0


def functions(path: Path) -> list[tuple[int, str, bool]]:
    """(lines, name, says why) of every function."""
    text = path.read_text()
    lines = text.splitlines()
    return [
        (node.end_lineno - node.lineno + 1, node.name, says_why(lines, node.lineno))
        for node in ast.walk(ast.parse(text))
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
    ]


def torch_at_top(path: Path) -> bool:
    tree = ast.parse(path.read_text())
    for node in tree.body:
        names = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            names = [node.module or ""]
        if any(n == "torch" or n.startswith("torch.") for n in names):
            return True
    return False


def import_graph(known: dict) -> tuple[dict[str, set[str]], list[str]]:
    """(module -> the modules it imports, 'file: module._name' for each private name taken)."""
    graph: dict[str, set[str]] = defaultdict(set)
    private = []
    for m, p in known.items():
        for target, names, _ in imports(m, p, known):
            if target != m and not (known[target].name == "__init__.py" and m.startswith(target)):
                graph[m].add(target)
            where = p.relative_to(ROOT).as_posix()
            private += [f"{where}: {target}.{x}" for x in names if x.startswith("_")]
    return graph, private


def sweep_imports_torch(known: dict) -> list[str]:
    """Modules of the sweep's own process that import torch at module level (none should)."""
    rel = {m: p.relative_to(ROOT).as_posix() for m, p in known.items()}
    return [r for m, r in rel.items() if r.startswith(PLUMBING) and r not in WARM_PARENT
            and r != "study/cell/worker.py" and torch_at_top(known[m])]  # fmt: skip


def main() -> None:
    known = modules()
    rel = {m: p.relative_to(ROOT).as_posix() for m, p in known.items()}
    graph, private = import_graph(known)
    folders: dict[str, list[int]] = defaultdict(list)
    for p in known.values():
        folders[str(p.parent.relative_to(ROOT))].append(len(p.read_text().splitlines()))
    print("| folder | modules | lines |\n|---|---:|---:|")
    for f in sorted(folders):
        print(f"| `{f}/` | {len(folders[f])} | {sum(folders[f]):,} |")
    plumbing = {r: len(known[m].read_text().splitlines()) for m, r in rel.items()
                if r.startswith(PLUMBING)}  # fmt: skip
    code = {r: code_lines(known[m].read_text()) for m, r in rel.items() if r in plumbing}
    print("\nprocess plumbing, by the issue's count:")
    total = total_code = 0
    for group, files in GROUPS.items():
        n = sum(plumbing.get(f, 0) for f in files)
        c = sum(code.get(f, 0) for f in files)
        total, total_code = total + n, total_code + c
        print(
            f"  {group}: {n:,} lines, {c:,} code lines ("
            + ", ".join(f"{f.rsplit('/', 1)[-1]} {plumbing.get(f, 0)}" for f in files)
            + ")"
        )
    rev, old = V2
    try:
        srcs = [subprocess.run(["git", "show", f"{rev}:{f}"], cwd=ROOT, capture_output=True,
                               text=True, check=True).stdout for f in old]  # fmt: skip
        print(f"  all: {total:,} lines, {total_code:,} code lines; v2's ({rev}, same files as "
              f"the issue, sweep.py whole): {sum(len(x.splitlines()) for x in srcs):,} lines, "
              f"{sum(code_lines(x) for x in srcs):,} code lines")  # fmt: skip
    except (OSError, subprocess.CalledProcessError):
        print(f"  all: {total:,} lines, {total_code:,} code lines (v2's: no git history here)")
    print(
        "  beside them the entry and the cell's process: "
        + ", ".join(
            f"{f} {plumbing[f]}"
            for f in ("study/run.py", "study/cell/worker.py", "study/sweep/rundir.py")
        )
    )
    cyc = cycles(graph)
    print(f"import cycles: {len(cyc)}" + "".join(f"\n  {' <-> '.join(c)}" for c in cyc))
    print(
        f"private names used across modules: {len(private)}" + "".join(f"\n  {x}" for x in private)
    )
    sweep_torch = sweep_imports_torch(known)
    print(f"modules of the sweep's own process importing torch at module level: {len(sweep_torch)}"
          + "".join(f"\n  {x}" for x in sweep_torch))  # fmt: skip
    big = sorted(((len(t), r, says_why(t, doc_end(known[m]))) for m, r in rel.items()
                  if len(t := known[m].read_text().splitlines()) > 300), reverse=True)  # fmt: skip
    mark = {True: " (says why)", False: ""}
    print(f"modules over 300 lines: {len(big)}, {sum(not w for *_, w in big)} without a why"
          + "".join(f"\n  {r}: {n}{mark[w]}" for n, r, w in big))  # fmt: skip
    funcs = sorted(((n, f"{rel[m]}:{name}", w) for m, p in known.items()
                    for n, name, w in functions(p)), reverse=True)  # fmt: skip
    long = [f for f in funcs if f[0] > 60]
    print(f"functions over 60 lines: {len(long)}, {sum(not w for *_, w in long)} without a why"
          + "".join(f"\n  {f}: {n}{mark[w]}" for n, f, w in long))  # fmt: skip
    print("longest functions: " + ", ".join(f"{f} ({n})" for n, f, _ in funcs[:5]))


if __name__ == "__main__":
    main()
