"""What Inductor generated and what compiling cost, for every compiled cell.

- ``settings(run_dir, device)``: Inductor config for capture, applied in the cell's own
  process before compiling: the debug trace (output code, post-grad FX graph) and the
  provenance map kernel -> post-grad nodes, into ``<run>/generated/debug``; on the CPU the
  per-kernel profiler ranges of the C++ kernels (otherwise they are invisible in traces).
  The ``trace.*`` keys are outside Inductor's cache key, so capture never changes what is
  compiled.
- ``harvest(run_dir, store)``: the generated wrapper modules (from PyCodeCache, so also on a
  cache hit), one source file per kernel under ``generated/kernels/``, and per kernel its
  fused aten ops, from the provenance map + post-grad graph (Inductor's own metadata) or else
  the ``Original ATen`` origin comments of the generated source. Never from the kernel name.
  Provenance is written only while compiling, so it is also kept beside the warm cache
  (``store``) and restored from there on a cache hit. ``analyse(run_dir)`` re-reads a run
  dir's saved code without torch (study.reparse).
- ``metrics()``: compile time split by phase, caches, graphs, graph breaks with reasons,
  recompiles, cudagraph skips with reasons (torch._dynamo's compilation metrics/counters).
- ``Autotune``: every choice max-autotune benchmarked, its time and the winner.
"""

# Long: Inductor's capture settings and the harvest of what they capture (debug dirs, provenance,
# kernels, autotune) must agree on the same files.

from __future__ import annotations

import json
import re
import shutil
from collections import defaultdict
from pathlib import Path

from study.config.check import unknown_inductor_keys
from study.observe import graph_breaks

KERNEL_DEF = re.compile(r"^(?P<name>(?:triton|cpp)_\w+) = async_compile\.(?P<kind>\w+)\(", re.M)
ORIGIN = re.compile(r"Original ATen: \[(?P<ops>[^\]]*)\]")
FX_LINE = re.compile(r"^\s*(?P<node>\w+)(?:: [^=]*)? = torch\.ops\.(?P<op>[\w.]+)\(", re.M)
SUBGRAPH = re.compile(r"^(?P<indent>\s*)class (?P<name>\w+)\(torch\.nn\.Module\):", re.M)
# A C++ kernel's profiler range: graph_<i>_cpp_fused_<...> (pointwise), graph_<i>_kernel (template)
CPP_RECORD = re.compile(r'RecordFunctionHandle\s+\w+\("(?P<name>graph_\d+_\w+)"')
# A C++ kernel's definition (cpp_wrapper and AOTInductor sources: not 'name = async_compile')
CPP_DEF = re.compile(r'^extern "C"\s+void\s+(?P<name>cpp_\w+)\([^;{)]*\)\s*\{', re.M)
# A Triton kernel a C++ wrapper launches by name (its source is a separate kernel module)
CPP_TRITON_REF = re.compile(r'"(?P<name>triton_\w+)"')
FROZEN = "_frozen_param"  # a parameter freezing made a constant of (compile.freezing)
TRITON_DEF = re.compile(r"^def (?P<name>triton_\w+)\(", re.M)
EXTERN_CALL = re.compile(
    r"^\s*(?:\w+ = )?(?P<call>extern_kernels\.\w+|torch\.ops\.aten\.\w+(?:\.\w+)?)\(", re.M
)


def settings(run_dir: Path, device: str) -> dict:
    """Capture settings this torch knows (older versions lack some trace.* keys)."""
    s = {
        "trace.enabled": True,
        "trace.debug_dir": str(run_dir / "generated" / "debug"),
        "trace.fx_graph": False,
        "trace.ir_pre_fusion": False,
        "trace.ir_post_fusion": False,
        "trace.fx_graph_transformed": True,  # the post-grad FX graph
        "trace.output_code": True,
        "trace.provenance_tracking_level": 1,
    }
    if device == "cpu":
        s["cpp.enable_kernel_profile"] = True
    missing = set(unknown_inductor_keys(s))
    return {k: v for k, v in s.items() if k not in missing}


def apply(patches: dict) -> list[str]:
    """Set Inductor config keys in this (the cell's own) process. Returns unknown keys."""
    import torch._inductor.config as ic

    bad = unknown_inductor_keys(patches)
    if bad:
        return bad
    for k, v in patches.items():
        obj = ic
        *parents, leaf = k.split(".")
        for p in parents:
            obj = getattr(obj, p)
        setattr(obj, leaf, v)
    return []


def _inductor_kind(name: str, src_kind: str) -> str:
    for prefix, kind in (
        ("triton_poi_", "pointwise"),
        ("triton_red_", "reduction"),
        ("triton_per_", "persistent_reduction"),
        ("triton_tem_", "template"),
        ("triton_for_", "foreach"),
        ("triton_spl_", "split_scan"),
    ):
        if name.startswith(prefix):
            return kind
    if name.startswith("cpp_"):
        return "cpp"
    return src_kind


def _op(op: str) -> str:
    return op.rsplit(".", 1)[0] if op.count(".") >= 2 else op


def _post_grad_ops(debug_dir: Path) -> dict[str, str]:
    """post-grad node name -> aten op, from the graph's fx_graph_transformed.py. A subgraph node
    (a FlexAttention score_mod/mask_mod, say ``sdpa_score0``) -> its ops, as
    ``sdpa_score0(aten.div,aten.tanh,aten.mul)``."""
    ops = {}
    for f in debug_dir.glob("fx_graph_transformed.py"):
        text = f.read_text()
        for m in FX_LINE.finditer(text):
            ops[m.group("node")] = _op(m.group("op"))
        for m in SUBGRAPH.finditer(text):
            body = []
            for line in text[m.end() :].splitlines()[1:]:
                if line.strip() and len(line) - len(line.lstrip()) <= len(m.group("indent")):
                    break  # dedented: the subgraph's class ended
                body.append(line)
            inner = [_op(x.group("op")) for x in FX_LINE.finditer("\n".join(body))]
            ops[m.group("name")] = f"{m.group('name')}({','.join(inner)})"
    return ops


def _provenance(debug_dir: Path) -> tuple[dict[str, list[str]], set[str]]:
    """kernel name -> post-grad node names, from Inductor's provenance mapping; and the
    post-grad nodes that come from a scaled_dot_product_attention call (pre-grad)."""
    out, from_sdpa = defaultdict(list), set()
    for f in debug_dir.glob("inductor_provenance_tracking_node_mappings*.json"):
        try:
            data = json.loads(f.read_text())
        except json.JSONDecodeError:
            continue
        for key, mapping in data.items():
            if not isinstance(mapping, dict):
                continue
            if key.endswith("CodeToPost"):
                for kname, nodes in mapping.items():
                    out[kname.split(":")[0]].extend(nodes)
            elif key == "preToPost":
                for pre, nodes in mapping.items():
                    if "scaled_dot_product" in pre:
                        from_sdpa.update(nodes)
    return out, from_sdpa


# What a graph's debug dir holds that the analysis needs: kept beside a warm cache entry.
PROVENANCE_FILES = ("fx_graph_transformed.py", "inductor_provenance_tracking_node_mappings*.json")


def _debug_dirs(debug: Path) -> dict[str, Path]:
    """Each graph's debug dir, keyed by the text of its output code (= its wrapper module, or
    AOTInductor's C++ source)."""
    if not debug.exists():
        return {}
    return {
        f.read_text(): f.parent
        for pattern in ("output_code.py", "output_code.cpp")
        for f in debug.rglob(pattern)
    }


def _is_wrapper(text: str) -> bool:
    """A graph's wrapper module (Python, or cpp_wrapper's Python holding the C++), not one
    kernel's module."""
    return "def call(" in text or "async_compile" in text or "cpp_wrapper_src" in text


def provenance_store() -> Path | None:
    """Where provenance lives beside the Inductor cache this process uses: a cache hit loads
    a wrapper without compiling, so without this its provenance (written only while
    compiling) would be gone, and a decomposed-math row could not be proven."""
    import os

    d = os.environ.get("TORCHINDUCTOR_CACHE_DIR")
    return Path(d).parent / "provenance" if d else None


def harvest(run_dir: Path, store: Path | None = None) -> dict:
    """Copy generated code into ``generated/`` and map each kernel to its source and ops.

    A graph compiled here leaves its provenance in ``generated/debug``; it is also saved in
    ``store`` under the wrapper module's name (which is a hash of its code). A graph loaded
    from the cache has no debug dir: its provenance is restored from ``store`` into
    ``generated/debug/restored/<module>``. Either way the run dir holds what ``analyse``
    needs, also for ``study.reparse``.
    """
    from torch._inductor.codecache import PyCodeCache

    gen = run_dir / "generated"
    gen.mkdir(parents=True, exist_ok=True)
    files = sorted(
        {Path(m.__file__) for m in _modules(PyCodeCache) if getattr(m, "__file__", None)}
    )
    debug = gen / "debug"
    graphs = _debug_dirs(debug)
    restored = 0
    cpp = sorted(debug.rglob("output_code.cpp")) if debug.exists() else []
    for j, f in enumerate(cpp):
        shutil.copyfile(f, gen / f"output_code_{j}.cpp")  # AOTInductor's source (no PyCodeCache)
    kernel_modules = []
    for i, f in enumerate(files):
        text = f.read_text()
        if not _is_wrapper(text):
            if TRITON_DEF.search(text):  # a Triton kernel's module: a C++ wrapper may launch it
                kernel_modules.append(f)
            continue
        cpp += [f] if "cpp_wrapper_src" in text else []
        shutil.copyfile(f, gen / f"output_code_{i}.py")
        if store is None:
            continue
        saved = store / f.stem
        if text in graphs:
            saved.mkdir(parents=True, exist_ok=True)
            for pattern in PROVENANCE_FILES:
                for p in graphs[text].glob(pattern):
                    shutil.copyfile(p, saved / p.name)
            (saved / "output_code.py").write_text(text)
        elif saved.exists():
            dst = debug / "restored" / f.stem
            shutil.copytree(saved, dst, dirs_exist_ok=True)
            restored += 1
    if cpp and kernel_modules:  # C++ launches Triton kernels by name: keep their sources
        (gen / "kernel_modules").mkdir(exist_ok=True)
        for f in kernel_modules:
            shutil.copyfile(f, gen / "kernel_modules" / f.name)
    out = analyse(run_dir)
    out["provenance_restored"] = restored
    return out


def analyse(run_dir: Path) -> dict:
    """Each generated kernel of a run dir: its source file, fused aten ops and whether it came
    from an SDPA call, from the saved wrappers and debug dirs (no compiling, no torch)."""
    gen = run_dir / "generated"
    kdir = gen / "kernels"
    kdir.mkdir(parents=True, exist_ok=True)
    graphs = _debug_dirs(gen / "debug")
    kernels, externs, wrappers = {}, set(), []
    modules = {
        m.group("name"): (f, m.start())
        for f in sorted((gen / "kernel_modules").glob("*.py"))
        for m in TRITON_DEF.finditer(f.read_text())
    }
    for dst in sorted([*gen.glob("output_code_*.py"), *gen.glob("output_code_*.cpp")]):
        text = dst.read_text()
        wrappers.append(dst)
        graph = graphs.get(text)
        node_ops = _post_grad_ops(graph) if graph else {}
        prov, from_sdpa = _provenance(graph) if graph else ({}, set())
        defs = sorted(
            [(m.start(), m.group("name"), m.group("kind")) for m in KERNEL_DEF.finditer(text)]
            + [(m.start(), m.group("name"), "cpp") for m in CPP_DEF.finditer(text)]
        )
        launched = {m.group("name") for m in CPP_TRITON_REF.finditer(text)}
        for name in sorted(launched - {d[1] for d in defs} - set(kernels)):
            if name in modules:  # launched from C++, compiled from its own kernel module
                f, _ = modules[name]
                src = kdir / f"{name}.py"
                shutil.copyfile(f, src)
                kernels[name] = _kernel(name, src, run_dir, prov, node_ops, from_sdpa, "", "")
        for j, (start, name, kind) in enumerate(defs):
            end = defs[j + 1][0] if j + 1 < len(defs) else len(text)
            body = text[start:end]
            ext = ".cpp" if kind.startswith("cpp") else ".py"
            src = kdir / f"{name}{ext}"
            src.write_text(body)
            preamble = text[max(0, start - 2000) : start].rsplit("\n\n", 1)[-1]
            kernels[name] = _kernel(name, src, run_dir, prov, node_ops, from_sdpa, preamble, body,
                                    kind)  # fmt: skip
        externs.update(c.group("call") for c in EXTERN_CALL.finditer(text))
    texts = [w.read_text() for w in wrappers]
    return {
        "kernels": kernels,
        "cpp_wrapper": any(
            "cpp_wrapper_src" in x or w.suffix == ".cpp"
            for w, x in zip(wrappers, texts, strict=True)
        ),
        "frozen": any(FROZEN in x for x in texts),
        "externs": sorted(externs),
        "wrappers": [str(d.relative_to(run_dir)) for d in wrappers],
        "post_grad_graph": any((g / "fx_graph_transformed.py").exists() for g in graphs.values()),
    }


def _kernel(name, src, run_dir, prov, node_ops, from_sdpa, preamble, body, kind="triton"):
    """One generated kernel's row: its source, the aten ops it fused (Inductor's provenance,
    else the origin comments before its definition), its kind and its trace name."""
    if name in prov:
        fused, how = sorted({node_ops.get(n, n) for n in prov[name]}), "provenance"
    else:
        o = ORIGIN.findall(preamble)
        fused = sorted({x.strip() for x in ",".join(o).split(",") if x.strip()})
        how = "origin_comment" if fused else ""
    record = CPP_RECORD.search(body)
    return {
        "trace_name": record.group("name") if record else None,
        "source_file": str(src.relative_to(run_dir)),
        "fused_ops": " ".join(fused),
        "fused_ops_from": how,
        "inductor_kind": (
            "template"  # a C++ template (flex_attention, GEMM) records graph_<i>_kernel
            if record and "_cpp_" not in record.group("name")
            else _inductor_kind(name, kind)
        ),
        "from_sdpa": bool(from_sdpa.intersection(prov.get(name, ()))),
    }


def _modules(cache):
    mods = getattr(cache, "modules", None)
    if isinstance(mods, dict):
        return list(mods.values())
    return list(mods or [])


def match_kernel(trace_name: str, kernels: dict) -> str | None:
    """The generated kernel behind a trace name (CPU ranges are 'graph_<i>_<name>', and a C++
    template's is 'graph_<i>_kernel', which its source records)."""
    if trace_name in kernels:
        return trace_name
    m = re.match(r"^graph_\d+_(cpp_\w+)$", trace_name)
    if m and m.group(1) in kernels:
        return m.group(1)
    hits = [k for k, v in kernels.items() if v.get("trace_name") == trace_name]
    return hits[0] if len(hits) == 1 else None


def join(kernel_rows: list[dict], harvested: dict) -> None:
    """Fill source_file / fused_ops / inductor_kind on kernel rows, in place."""
    gk = harvested.get("kernels", {})
    for r in kernel_rows:
        key = match_kernel(r["kernel"], gk)
        if key:
            r.update({k: gk[key][k] for k in ("source_file", "fused_ops", "inductor_kind")})
        elif r.get("cpu_region") and not r.get("generated"):
            r["inductor_kind"] = "extern"  # a library kernel called from compiled code


def metrics() -> dict:
    """Compile-cost figures of this process's compiles (call after compiling)."""
    from torch._dynamo.utils import counters, get_compilation_metrics

    ms = list(get_compilation_metrics())

    def total(attr, scale=1.0):
        vals = [getattr(m, attr, None) for m in ms]
        vals = [v for v in vals if v is not None]
        return sum(vals) * scale if vals else None

    frame = total("entire_frame_compile_time_s")
    backend = total("backend_compile_time_s")
    inductor = total("inductor_compile_time_s")
    breaks = {str(k): v for k, v in counters["graph_break"].items()}
    skips = sorted(
        {m.cudagraph_skip_reason for m in ms if getattr(m, "cudagraph_skip_reason", None)}
    )
    recompiles = [m.recompile_reason for m in ms if getattr(m, "recompile_reason", None)]
    ind = counters["inductor"]
    hits = (ind.get("fxgraph_cache_hit", 0) or 0) + (
        counters["aot_autograd"].get("autograd_cache_hit", 0) or 0
    )
    misses = (ind.get("fxgraph_cache_miss", 0) or 0) + (
        counters["aot_autograd"].get("autograd_cache_miss", 0) or 0
    )
    return {
        "compile_s": frame,
        "dynamo_s": None if frame is None or backend is None else frame - backend,
        "aot_s": None if backend is None or inductor is None else backend - inductor,
        "inductor_s": inductor,
        "codegen_s": total("code_gen_time_s"),
        "triton_compile_s": total("triton_compile_time_us", 1e-6),
        "autotune_s": total("compile_time_autotune_time_us", 1e-6),
        "fxgraph_cache_hits": ind.get("fxgraph_cache_hit", 0),
        "fxgraph_cache_misses": ind.get("fxgraph_cache_miss", 0),
        "cache_hits": hits,
        "cache_misses": misses,
        "graphs": counters["stats"].get("unique_graphs", 0),
        "graph_ops": ops if (ops := total("graph_op_count")) is None else int(ops),
        "graph_breaks": sum(breaks.values()),
        **graph_breaks.columns(breaks),  # reasons, and counts by registry code (GB0059)
        "recompiles": len(recompiles),
        "recompile_reasons": " | ".join(recompiles),
        "cudagraph_skips": ind.get("cudagraph_skips", 0),
        "cudagraph_skip_reasons": " | ".join(skips),
    }


class Autotune:
    """Collects max-autotune's benchmarked choices through Inductor's feedback hook."""

    def __init__(self):
        self.rows: list[dict] = []
        self.available = False

    def __enter__(self):
        try:
            from torch._inductor import select_algorithm as sa

            sa.add_feedback_saver(self._save)
            self.available = True
        except (ImportError, AttributeError):
            self.available = False
        return self

    def __exit__(self, *exc):
        if self.available:
            from torch._inductor import select_algorithm as sa

            sa.clear_feedback_savers()
        return False

    def _save(self, timings, name, input_nodes, *rest, **kw):
        finite = {
            c: t for c, t in timings.items() if t is not None and t == t and t != float("inf")
        }
        best = min(finite.values()) if finite else None
        shapes = ""
        try:
            shapes = " x ".join(str(list(n.get_size())) for n in input_nodes)
        except Exception:  # noqa: BLE001 - shapes are a label only; symbolic sizes may not print
            shapes = ""
        op_id = len({r["op_id"] for r in self.rows})
        for c, t in timings.items():
            desc = getattr(c, "description", "") or ""
            self.rows.append(
                {
                    "op_id": op_id,
                    "op": name,
                    "input_shapes": shapes,
                    "choice": getattr(c, "name", str(c)),
                    "description": str(desc)[:300],
                    "time_us": None if t is None or t != t or t == float("inf") else t * 1e3,
                    "winner": best is not None and t == best,
                }
            )
