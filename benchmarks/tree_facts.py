"""Facts about the source tree, measured from the code: prints figures; asserts nothing.

    python benchmarks/tree_facts.py            # benchmarks/README.md's "The tree" quotes it

It imports nothing of the project: it parses the files with ``ast``. It prints, in this order:

- modules (``__init__.py`` not counted) and lines per folder, and the folders over
  ``FOLDER_MAX`` modules;
- two-way folder pairs in ``study/``, ``analysis/`` and ``reference/`` (``HOUSE``), within a
  package or across them: two folders whose modules import each other, counting every import,
  at module level and inside functions; a top-level module such as ``study/run.py`` is its own
  folder;
- project imports inside functions, with and without a stated reason (a comment on the import
  line, or on the line above it or above the run of imports it belongs to, e.g.
  ``# deferred: torch``; ``# noqa`` and ``# fmt:`` pragmas are not reasons), and each one
  without;
- import cycles between modules, private names (``_x``) one module takes from another, and the
  modules of the sweep's own process that import torch at module level;
- the process plumbing in lines and code lines (no blank line, comment or docstring);
- the longest modules and functions, and, of those over 300 and 60 lines, which say why (a
  ``# Long:`` comment at the top of the module or function).

tests/test_house.py holds the house to these figures.
"""

from __future__ import annotations

import ast
import io
import re
import subprocess
import sys
import tokenize
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("study", "analysis", "reference", "hydra_plugins")
HOUSE = ("study", "analysis", "reference")  # the packages the two-way-pair rule covers
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
WARM_PARENT = (
    "study/sweep/warm_parent.py",
    "study/sweep/prewarm.py",
)  # they import torch on purpose
# v2's plumbing, as the issue listed it (sweep.py whole: its lines 52-157 were the count's part)
V2 = ("1f7468f", ("study/server.py", "study/client.py", "study/jobs.py", "study/sweep.py",
                  "study/sweep_check.py", "study/callbacks.py", "study/prewarm.py",
                  "study/pycache.py", "hydra_plugins/study_sweeper/__init__.py"))  # fmt: skip
WHY = "# Long:"  # a long module or function says why at its top
FOLDER_MAX = 15  # modules a folder holds before it should split by the stage it serves
PRAGMA = re.compile(r"^(noqa|fmt:|type:|pragma|pylint|isort|ruff:)", re.I)  # not a reason


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


def modules(root: Path = ROOT, packages: tuple[str, ...] = PACKAGES) -> dict[str, Path]:
    """Dotted module name -> its file, for every module of ``packages`` under ``root``."""
    out = {}
    for pkg in packages:
        for p in sorted((root / pkg).rglob("*.py")):
            parts = p.relative_to(root).with_suffix("").parts
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
                base = _relative(pkg, node.level, node.module)
            for a in node.names:
                sub = f"{base}.{a.name}"
                if sub in known:
                    out.append((sub, [], id(node) in top))
                elif base in known:
                    out.append((base, [a.name], id(node) in top))
    return out


def _relative(pkg: str, level: int, module: str | None) -> str:
    """The absolute name of ``from .module import`` (``level`` dots) inside package ``pkg``."""
    parts = pkg.split(".")
    return ".".join(parts[: len(parts) - level + 1] + ([module] if module else []))


# Imports: where each project import sits, and whether it says why.


@dataclass(frozen=True)
class Import:
    """One import statement of project modules."""

    path: str  # the importing file, relative to the root
    line: int
    targets: tuple[str, ...]  # the project modules it imports
    in_function: bool  # inside a function (or lambda), not at module or class level
    reason: str  # the comment that says why it is there, or ""


def _statements(tree: ast.Module):
    """(import statement, inside a function?) for every import in the tree."""
    stack = [(tree, False)]
    while stack:
        node, inside = stack.pop()
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.Import | ast.ImportFrom):
                yield child, inside
            fn = isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda)
            stack.append((child, inside or fn))


def _targets(node: ast.Import | ast.ImportFrom, name: str, is_init: bool, known) -> list[str]:
    """The project modules one import statement of module ``name`` imports."""
    if isinstance(node, ast.Import):
        found = [a.name for a in node.names if a.name in known]
    else:
        base = node.module or ""
        if node.level:
            base = _relative(name if is_init else name.rpartition(".")[0], node.level, node.module)
        found = [f"{base}.{a.name}" if f"{base}.{a.name}" in known else base
                 for a in node.names if f"{base}.{a.name}" in known or base in known]  # fmt: skip
    return list(dict.fromkeys(found))


def _said(comment: str) -> str:
    """A comment's text without its pragmas (``# noqa: X``, ``# fmt: skip``); "" if none is left."""
    parts = [c.strip() for c in comment.split("#")]
    return " # ".join(c for c in parts if c and not PRAGMA.match(c))


def reason(lines: list[str], node: ast.stmt) -> str:
    """The comment that says why an import is there: on its own lines, or on the line above it
    or above the run of imports it belongs to. A function's ``# Long:`` comment is not one."""
    for text in lines[node.lineno - 1 : node.end_lineno]:
        if "#" in text and (said := _said(text.split("#", 1)[1])):
            return said
    i = node.lineno - 2
    while i >= 0 and lines[i].strip().startswith(("import ", "from ")):
        i -= 1
    block = []
    while i >= 0 and lines[i].strip().startswith("#"):
        block.insert(0, lines[i].strip()[1:].strip())
        i -= 1
    said = _said(" ".join(block)) if block else ""
    return "" if said.startswith(WHY[1:].strip()) else said


def project_imports(name: str, path: Path, known: dict, root: Path = ROOT) -> list[Import]:
    """Every import statement of ``path`` (module ``name``) that imports a project module."""
    text = path.read_text()
    lines = text.splitlines()
    where = path.relative_to(root).as_posix()
    out = []
    for node, inside in _statements(ast.parse(text)):
        targets = _targets(node, name, path.name == "__init__.py", known)
        if targets:
            said = reason(lines, node)
            out.append(Import(where, node.lineno, tuple(targets), inside, said))
    return sorted(out, key=lambda i: i.line)


def function_imports(known: dict, root: Path = ROOT) -> list[Import]:
    """The project imports inside functions, every module of ``known``."""
    return [i for m, p in known.items() for i in project_imports(m, p, known, root)
            if i.in_function]  # fmt: skip


def unexplained(found: list[Import]) -> list[Import]:
    return [i for i in found if not i.reason]


# Folders: how many modules each holds, and which import each other.


def folder(path: Path, root: Path = ROOT) -> str:
    """The folder a module counts in for the pairs: its directory (``study/cell``); a top-level
    module of a package (``study/run.py``) is its own folder, the package's ``__init__`` the
    package's."""
    rel = path.relative_to(root)
    return (
        rel.as_posix()
        if len(rel.parts) == 2 and rel.name != "__init__.py"
        else rel.parent.as_posix()
    )


def modules_per_folder(known: dict, root: Path = ROOT) -> dict[str, int]:
    """Directory -> the modules in it (``__init__.py`` not counted)."""
    out: dict[str, int] = defaultdict(int)
    for p in known.values():
        out[p.parent.relative_to(root).as_posix()] += p.name != "__init__.py"
    return dict(sorted(out.items()))


def big_folders(known: dict, root: Path = ROOT, most: int = FOLDER_MAX) -> dict[str, int]:
    return {f: n for f, n in modules_per_folder(known, root).items() if n > most}


def folder_edges(known: dict, root: Path = ROOT, package=HOUSE) -> dict[tuple, list]:
    """(folder, folder it imports) -> the imports behind it, within ``package`` (a name, or a
    tuple of them: imports across those packages count too)."""
    edges: dict[tuple, list] = defaultdict(list)
    packages = (package,) if isinstance(package, str) else tuple(package)
    inside = {m for m in known if m in packages or m.startswith(tuple(f"{p}." for p in packages))}
    for m in sorted(inside):
        a = folder(known[m], root)
        for imp in project_imports(m, known[m], known, root):
            for b in {folder(known[t], root) for t in imp.targets if t in inside} - {a}:
                edges[(a, b)].append(imp)
    return dict(edges)


def two_way_pairs(known: dict, root: Path = ROOT, package=HOUSE) -> list[tuple[str, str]]:
    """Pairs of folders of ``package`` (a name or a tuple; every package of the house by default)
    whose modules import each other (either way: at module level or inside functions)."""
    edges = folder_edges(known, root, package)
    return sorted((a, b) for a, b in edges if a < b and (b, a) in edges)


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


def import_graph(known: dict, root: Path = ROOT) -> tuple[dict[str, set[str]], list[str]]:
    """(module -> the modules it imports, 'file: module._name' for each private name taken)."""
    graph: dict[str, set[str]] = defaultdict(set)
    private = []
    for m, p in known.items():
        for target, names, _ in imports(m, p, known):
            # a module inside a package runs the package's __init__ first, which is no cycle;
            # a name taken from that __init__ (``from pkg import main``) is one where the
            # __init__ imports the module back (analysis.findings and its summary did)
            inside = known[target].name == "__init__.py" and m.startswith(f"{target}.")
            if target != m and (names or not inside):
                graph[m].add(target)
            where = p.relative_to(root).as_posix()
            private += [f"{where}: {target}.{x}" for x in names if x.startswith("_")]
    return graph, private


def sweep_imports_torch(known: dict) -> list[str]:
    """Modules of the sweep's own process that import torch at module level (none should)."""
    rel = {m: p.relative_to(ROOT).as_posix() for m, p in known.items()}
    return [r for m, r in rel.items() if r.startswith(PLUMBING) and r not in WARM_PARENT
            and r != "study/cell/worker.py" and torch_at_top(known[m])]  # fmt: skip


def plumbing_lines(known: dict) -> None:
    """Prints the process plumbing by the groups above, and v2's from git where it can."""
    rel = {m: p.relative_to(ROOT).as_posix() for m, p in known.items()}
    lines = {
        r: len(known[m].read_text().splitlines()) for m, r in rel.items() if r.startswith(PLUMBING)
    }
    code = {r: code_lines(known[m].read_text()) for m, r in rel.items() if r in lines}
    print("\n## Process plumbing (lines, code lines)")
    total = total_code = 0
    for group, files in GROUPS.items():
        n, c = sum(lines.get(f, 0) for f in files), sum(code.get(f, 0) for f in files)
        total, total_code = total + n, total_code + c
        each = ", ".join(f"{f.rsplit('/', 1)[-1]} {lines[f]}" for f in files if f in lines)
        print(f"  {group}: {n:,} lines, {c:,} code lines ({each})")
    rev, old = V2
    try:
        srcs = [subprocess.run(["git", "show", f"{rev}:{f}"], cwd=ROOT, capture_output=True,
                               text=True, check=True).stdout for f in old]  # fmt: skip
        v2 = (f"v2's ({rev}, sweep.py whole): {sum(len(x.splitlines()) for x in srcs):,} lines, "
              f"{sum(code_lines(x) for x in srcs):,} code lines")  # fmt: skip
    except (OSError, subprocess.CalledProcessError):
        v2 = "v2's: no git history here"
    print(f"  all: {total:,} lines, {total_code:,} code lines; {v2}")
    beside = ("study/run.py", "study/cell/worker.py", "study/sweep/rundir.py")
    print("  beside them, the entry and the cell's process: "
          + ", ".join(f"{f} {lines[f]}" for f in beside if f in lines))  # fmt: skip


def main(top: int = 5) -> None:
    known = modules()
    rel = {m: p.relative_to(ROOT).as_posix() for m, p in known.items()}
    graph, private = import_graph(known)

    print("## Folders (modules without __init__.py, lines)\n")
    lines: dict[str, int] = defaultdict(int)
    for p in known.values():
        lines[p.parent.relative_to(ROOT).as_posix()] += len(p.read_text().splitlines())
    per = modules_per_folder(known)
    print("| folder | modules | lines |\n|---|---:|---:|")
    for f, n in per.items():
        print(f"| `{f}/` | {n} | {lines[f]:,} |")
    big = big_folders(known)
    print(f"\nfolders over {FOLDER_MAX} modules: {len(big)}"
          + "".join(f"\n  {f}/: {n}" for f, n in big.items()))  # fmt: skip

    edges = folder_edges(known)
    pairs = two_way_pairs(known)
    print("\n## Imports\n")
    print(
        f"two-way folder pairs in {', '.join(f'{p}/' for p in HOUSE)} (folders that import each "
        f"other): {len(pairs)}"
    )
    for a, b in pairs:
        ab, ba = edges[(a, b)], edges[(b, a)]
        print(
            f"  {a} <-> {b}: {len(ab)} imports -> ({sum(i.in_function for i in ab)} in "
            f"functions), {len(ba)} <- ({sum(i.in_function for i in ba)} in functions)"
        )
    found = function_imports(known)
    bare = unexplained(found)
    by_pkg = defaultdict(lambda: [0, 0])
    for i in found:
        by_pkg[i.path.split("/")[0]][0] += 1
        by_pkg[i.path.split("/")[0]][1] += not i.reason
    print(
        f"project imports inside functions: {len(found)}, {len(found) - len(bare)} with a "
        f"reason, {len(bare)} without ("
        + ", ".join(f"{k}/: {n}, {u} without" for k, (n, u) in sorted(by_pkg.items()))
        + ")"
    )
    for head, group in (("with a reason", [i for i in found if i.reason]), ("without", bare)):
        print(
            f"  {head}:"
            + "".join(
                f"\n    {i.path}:{i.line} {', '.join(i.targets)}"
                + (f"  # {i.reason}" if i.reason else "")
                for i in group
            )
        )
    cyc = cycles(graph)
    print(f"import cycles between modules of {', '.join(f'{p}/' for p in PACKAGES)}: {len(cyc)}"
          + "".join(f"\n  {' <-> '.join(c)}" for c in cyc))  # fmt: skip
    print(f"private names used across modules: {len(private)}"
          + "".join(f"\n  {x}" for x in private))  # fmt: skip
    sweep_torch = sweep_imports_torch(known)
    print(f"modules of the sweep's own process importing torch at module level: {len(sweep_torch)}"
          + "".join(f"\n  {x}" for x in sweep_torch))  # fmt: skip

    plumbing_lines(known)

    print("\n## Long modules and functions")
    mods = sorted(((len(t), r, says_why(t, doc_end(known[m]))) for m, r in rel.items()
                   for t in [known[m].read_text().splitlines()]), reverse=True)  # fmt: skip
    funcs = sorted(((n, f"{rel[m]}:{name}", w) for m, p in known.items()
                    for n, name, w in functions(p)), reverse=True)  # fmt: skip
    print("longest modules: " + ", ".join(f"{r} ({n})" for n, r, _ in mods[:top]))
    print("longest functions: " + ", ".join(f"{f} ({n})" for n, f, _ in funcs[:top]))
    mark = {True: " (says why)", False: ""}
    long_mods = [x for x in mods if x[0] > 300]
    print(f"modules over 300 lines: {len(long_mods)}, {sum(not w for *_, w in long_mods)} "
          "without a why" + "".join(f"\n  {r}: {n}{mark[w]}" for n, r, w in long_mods))  # fmt: skip
    long_funcs = [f for f in funcs if f[0] > 60]
    print(f"functions over 60 lines: {len(long_funcs)}, {sum(not w for *_, w in long_funcs)} "
          "without a why" + "".join(f"\n  {f}: {n}{mark[w]}" for n, f, w in long_funcs))  # fmt: skip


if __name__ == "__main__":
    main()
