"""Profiler pass and trace reading: every kernel of a run, attributed to its step.

``profile`` runs the cell's step under torch.profiler with a wait/warmup/active schedule and
exports a gzipped Chrome trace (opens in Perfetto). ``parse`` turns the trace's events into
one row per distinct kernel and one summary per run, without dividing totals by step count:

- GPU: a kernel's ``args.correlation`` equals that of its CPU-side launch (cudaLaunchKernel,
  cuLaunchKernel*, cudaGraphLaunch); the step is the ``ProfilerStep#N`` range on the launching
  thread that contains the launch. A kernel's own timestamp is never used for attribution:
  GPU work is asynchronous. Kernels replayed from a CUDA graph share one cudaGraphLaunch and
  are marked ``graph_launched``.
- CPU: the "kernels" are the aten ops and Inductor's C++ kernels that do their work
  themselves (self time >= half their duration; view/alloc ops are left out), timed by self
  time.
"""

# Long: the profiler pass and its reader share one model of the trace (steps, phases, intervals);
# the CUDA and CPU parsers are two halves of one parse.

from __future__ import annotations

import bisect
import gzip
import json
import math
import re
import statistics
from collections import Counter, defaultdict
from collections.abc import Callable
from pathlib import Path

from study.observe.classify import classify, is_generated, short_name
from study.rows.revealed import FP32_GEMM

DEVICE_CATS = {"kernel", "gpu_memcpy", "gpu_memset"}
LAUNCH_CATS = {"cuda_runtime", "cuda_driver"}
LAUNCH_RE = re.compile(
    r"^(cuda|cu)(LaunchKernel|LaunchCooperativeKernel|GraphLaunch|Memcpy|Memset)"
)
STEP_RE = re.compile(r"^ProfilerStep#(\d+)$")
PHASE_RE = re.compile(r"^study::(fwd|bwd|optim)$")  # study.cell.passes' record_function ranges
REGION_RE = re.compile(r"^Torch-Compiled Region|CompiledFxGraph|^CUDAGraphNode|cudagraph", re.I)
# aten ops that only make views, allocate or inspect: they launch no kernel.
METADATA_OPS = {
    "aten::" + n
    for n in (
        "empty empty_strided empty_like view reshape _reshape_alias _unsafe_view as_strided "
        "transpose t permute expand expand_as unsqueeze squeeze slice select detach alias "
        "resolve_conj resolve_neg lift_fresh result_type is_same_size size stride numel "
        "flatten unflatten split chunk narrow unbind split_with_sizes set_ contiguous_ "
        "_has_compatible_shallow_copy_type is_nonzero item _local_scalar_dense to "
        "scaled_dot_product_attention _fused_sdp_choice dropout"
    ).split()
}
# Composite ops that delegate their work to a child op, which is the kernel we count.
WRAPPER_OPS = {
    "aten::" + n
    for n in (
        "to _to_copy clone contiguous matmul linear softmax masked_fill addmm_ "
        "_scaled_dot_product_attention_math scaled_dot_product_attention einsum"
    ).split()
}


def profile(
    step: Callable[[], object],
    device: str,
    wait: int,
    warmup: int,
    active: int,
    record_shapes: bool,
    trace_path: Path,
) -> list[dict]:
    """Run ``wait + warmup + active`` steps under the profiler; write and return the trace."""
    import torch
    from torch.profiler import ProfilerActivity, schedule

    acts = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device == "cuda" else [])
    sched = schedule(wait=wait, warmup=warmup, active=active, repeat=1)
    with torch.profiler.profile(
        activities=acts, schedule=sched, record_shapes=record_shapes
    ) as prof:
        for _ in range(wait + warmup + active):
            step()
            prof.step()
        if device == "cuda":
            torch.cuda.synchronize()
    trace_path.parent.mkdir(parents=True, exist_ok=True)
    prof.export_chrome_trace(str(trace_path))
    return load_events(trace_path)


def load_events(path: Path) -> list[dict]:
    opener = gzip.open if str(path).endswith(".gz") else open
    with opener(path, "rt") as f:
        data = json.load(f)
    return data["traceEvents"] if isinstance(data, dict) else data


class _Intervals:
    """CPU-side ranges of one thread, for 'innermost range containing t' queries."""

    def __init__(self, events: list[dict]):
        self.ev = sorted(events, key=lambda e: (e["ts"], -e.get("dur", 0)))
        self.starts = [e["ts"] for e in self.ev]

    def containing(self, t: float) -> list[dict]:
        """All ranges containing t, outermost first."""
        i = bisect.bisect_right(self.starts, t)
        hits = [e for e in self.ev[:i] if e["ts"] <= t <= e["ts"] + e.get("dur", 0)]
        return hits


def _steps(events: list[dict]) -> list[dict]:
    # CPU-side step ranges only: the GPU-side copies (gpu_user_annotation) share the name.
    steps = [
        e
        for e in events
        if e.get("ph") == "X"
        and STEP_RE.match(e.get("name", ""))
        and e.get("cat") != "gpu_user_annotation"
    ]
    return sorted(steps, key=lambda e: e["ts"])


def _step_of(steps: list[dict], tid, t: float, phases=()) -> int | None:
    """The step whose range on thread ``tid`` holds ``t``. A launch from another thread
    (autograd runs the backward on its own) belongs to the step that holds it in time, when it
    falls inside one of the pass's own ranges (``phases``); otherwise it is unattributed."""
    for i, s in enumerate(steps):
        if s.get("tid") == tid and s["ts"] <= t <= s["ts"] + s["dur"]:
            return i
    if any(a <= t <= b for a, b, _ in phases):
        for i, s in enumerate(steps):
            if s["ts"] <= t <= s["ts"] + s["dur"]:
                return i
    return None


def _phases(events: list[dict]) -> list[tuple[float, float, str]]:
    """(start, end, phase) of the pass's ranges (study::fwd|bwd|optim), CPU side."""
    out = []
    for e in events:
        m = PHASE_RE.match(e.get("name", ""))
        if m and e.get("ph") == "X" and e.get("cat") == "user_annotation":
            out.append((e["ts"], e["ts"] + e.get("dur", 0), m.group(1)))
    return sorted(out)


def _phase_at(phases, t: float) -> str:
    """fwd, bwd or optim: the pass's range that holds ``t`` (a forward-only pass has none)."""
    for a, b, p in phases:
        if a <= t <= b:
            return p
    return "fwd"


def _occupancy(args: dict):
    occ = args.get("est. achieved occupancy %")
    # 0% is what kernels launched through cuLaunchKernelEx (e.g. cuDNN SDPA) report: a
    # recording gap, not a fact. A kernel that ran had some occupancy.
    return None if occ in (None, 0, 0.0) else occ


def _fmt_dim(v):
    if v is None:
        return None
    if isinstance(v, (list, tuple)):
        return "x".join(str(x) for x in v)
    return str(v)


def _union_us(intervals: list[tuple[float, float]]) -> float:
    total, end = 0.0, None
    for s, e in sorted(intervals):
        if end is None or s > end:
            total += e - s
            end = e
        elif e > end:
            total += e - end
            end = e
    return total


def _med(xs):
    return statistics.median(xs) if xs else None


AOTI_SHIM = "aoti_torch_cpu_"  # C++ wrappers (cpp_wrapper, AOTInductor) call aten through shims


def aten_name(e: dict) -> dict:
    """A C++ wrapper's call into aten, recorded as its shim's range (``aoti_torch_cpu_addmm_out``)
    with no ``aten::`` op inside, named as the op it runs (``aten::addmm_out``): the CPU's
    kernels and the SDPA proof read aten names."""
    name = e.get("name", "")
    if name.startswith(AOTI_SHIM):
        return {**e, "name": "aten::" + name[len(AOTI_SHIM) :], "aoti_shim": name}
    return e


def parse(events: list[dict], device: str) -> tuple[list[dict], dict]:
    """Kernel rows (one per distinct kernel) and a run summary from a trace's events."""
    steps = _steps(events)
    if not steps:
        return [], {"profile_note": "no ProfilerStep ranges in the trace"}
    cpu_ranges = defaultdict(list)
    for e in events:
        if (
            e.get("ph") == "X"
            and e.get("cat") in ("cpu_op", "user_annotation")
            and not STEP_RE.match(e.get("name", ""))
        ):
            cpu_ranges[e.get("tid")].append(aten_name(e))
    ranges = {tid: _Intervals(evs) for tid, evs in cpu_ranges.items()}
    op_names = sorted({e["name"] for evs in cpu_ranges.values() for e in evs})
    phases = _phases(events)
    if device == "cuda":
        rows, summary = _parse_cuda(events, steps, ranges, phases)
    else:
        rows, summary = _parse_cpu(steps, cpu_ranges, phases)
    summary["op_names"] = op_names
    return rows, summary


def _parse_cuda(events, steps, ranges, phases=()):
    # Long: one pass over the device events: each kernel to its step, phase and launch; the state it
    # keeps spans the loop.
    launches = {}
    for e in events:
        if e.get("cat") in LAUNCH_CATS and e.get("ph") == "X":
            corr = e.get("args", {}).get("correlation")
            if corr is not None:
                launches[corr] = e
    per_step = [[] for _ in steps]  # device events of each step
    launches_per_step = [0] * len(steps)
    for e in launches.values():
        if LAUNCH_RE.match(e["name"]):
            i = _step_of(steps, e.get("tid"), e["ts"], phases)
            if i is not None:
                launches_per_step[i] += 1
    unattributed = 0
    info = {}  # (kernel name, phase) -> launch context
    op_calls = defaultdict(lambda: [set() for _ in steps])  # key -> launching op calls/step
    for e in events:
        if e.get("cat") not in DEVICE_CATS or e.get("ph") != "X":
            continue
        args = e.get("args", {})
        launch = launches.get(args.get("correlation"))
        i = _step_of(steps, launch.get("tid"), launch["ts"], phases) if launch else None
        if i is None:
            unattributed += 1
            continue
        name = e["name"]
        key = (name, _phase_at(phases, launch["ts"]))
        per_step[i].append({**e, "key": key, "in_graph": launch["name"] == "cudaGraphLaunch"})
        ctx = ranges.get(launch.get("tid"))
        around = [r for r in (ctx.containing(launch["ts"]) if ctx else []) if r["name"] != name]
        op_events = [r for r in around if r.get("cat") == "cpu_op"]
        if op_events:
            op_calls[key][i].add(id(op_events[-1]))
        if key not in info:
            ops = [r["name"] for r in op_events]
            regions = [r["name"] for r in around if REGION_RE.search(r["name"])]
            info[key] = {
                "cpu_op": ops[-1] if ops else None,
                "op_max_input_numel": _max_numel(op_events[-1]) if op_events else None,
                "cpu_region": regions[0] if regions else None,
                "graph_launched": launch["name"] == "cudaGraphLaunch",
                "grid": _fmt_dim(args.get("grid")),
                "block": _fmt_dim(args.get("block")),
                "registers_per_thread": args.get("registers per thread"),
                "shared_mem_bytes": args.get("shared memory"),
                "occupancy_pct": _occupancy(args),
                "bytes": args.get("bytes"),
            }
        elif launch["name"] == "cudaGraphLaunch":
            info[key]["graph_launched"] = True
    launches = [Counter(e["key"] for e in evs) for evs in per_step]
    for key, calls in op_calls.items():  # launches of this kernel per call of its op
        ratios = [launches[i][key] / len(c) for i, c in enumerate(calls) if c]
        if ratios:
            r = _med(ratios)
            info[key]["launches_per_op_call"] = int(r) if float(r).is_integer() else r
    durs = {i: [(e["ts"], e["ts"] + e["dur"]) for e in evs] for i, evs in enumerate(per_step)}
    rows = _kernel_rows(per_step, lambda e: e["dur"], info)
    kernel_sum = [sum(e["dur"] for e in evs) for evs in per_step]
    busy = [_union_us(durs[i]) for i in range(len(steps))]
    span = [(max(b for _, b in d) - min(a for a, _ in d)) if d else 0.0 for d in durs.values()]
    wall = []
    for i, s in enumerate(steps):
        last = max((b for _, b in durs[i]), default=s["ts"] + s["dur"])
        wall.append(max(s["ts"] + s["dur"], last) - s["ts"])
    summary = _summary(per_step, rows, steps, kernel_sum)
    summary.update(
        launches_per_step=_med(launches_per_step),
        gpu_us_per_step=_med(busy),
        idle_us_per_step=_med([sp - b for sp, b in zip(span, busy, strict=True)]),
        profiled_step_us=_med(wall),
        unattributed_events=unattributed,
        graph_launched=any(r["graph_launched"] for r in rows),
        cudagraph_kernel_share=_graph_share(per_step),
    )
    cpu, gpu = summary["cpu_us_per_step"], summary["gpu_us_per_step"]
    summary["cpu_bound"] = None if cpu is None or gpu is None else bool(cpu > gpu)
    return rows, summary


def _graph_share(per_step) -> float | None:
    """The share of the profiled steps' device time (kernels, memcpy and memset) that a CUDA
    graph's replay launched (one cudaGraphLaunch for all of it); None where no device time."""
    total = sum(e["dur"] for evs in per_step for e in evs)
    in_graph = sum(e["dur"] for evs in per_step for e in evs if e["in_graph"])
    return in_graph / total if total > 0 else None


def _is_compute(e: dict) -> bool:
    name = e["name"]
    if classify(name) == "cpp_generated":
        return True
    return (
        name.startswith("aten::")
        and name not in METADATA_OPS
        and name not in WRAPPER_OPS
        and not _scalar_only(e)
    )


def _parse_cpu(steps, cpu_ranges, phases=()):
    """CPU 'kernels': compute ops whose time is their own. An op counts when no compute op
    runs inside it, or when its own time (minus the compute ops inside) is at least half its
    duration (e.g. the CPU flash kernel, which zero-fills its output inside)."""
    # Long: the CPU half of parse: one pass over the op events, each to its step and phase; the
    # state it keeps spans the loop.
    main_tids = {s.get("tid") for s in steps}
    per_step = [[] for _ in steps]
    info = {}
    for tid, evs in cpu_ranges.items():
        if tid not in main_tids:
            continue
        evs = sorted(
            (e for e in evs if e.get("cat") == "cpu_op"), key=lambda e: (e["ts"], -e["dur"])
        )
        stack, children, parent = [], defaultdict(list), {}
        for e in evs:
            while stack and e["ts"] >= stack[-1]["ts"] + stack[-1]["dur"]:
                stack.pop()
            if stack:
                children[id(stack[-1])].append(e)
                parent[id(e)] = stack[-1]
            stack.append(e)

        def compute_inside(e, children=children):
            out = []
            for c in children[id(e)]:
                out += [c] if _is_compute(c) else compute_inside(c, children)
            return out

        for e in evs:
            if not _is_compute(e) or e["dur"] <= 0:
                continue
            inner = compute_inside(e)
            self_us = e["dur"] - sum(c["dur"] for c in inner)
            if inner and self_us < 0.5 * e["dur"]:
                continue
            i = _step_of(steps, tid, e["ts"])
            if i is None:
                continue
            name = e["name"]
            key = (name, _phase_at(phases, e["ts"]))
            per_step[i].append({**e, "self": self_us, "key": key})
            if key not in info:
                p = parent.get(id(e))
                chain = []
                while p is not None:
                    chain.append(p["name"])
                    p = parent.get(id(p))
                regions = [n for n in reversed(chain) if REGION_RE.search(n)]
                info[key] = {
                    "cpu_op": chain[0] if chain else None,
                    "cpu_region": regions[0] if regions else None,
                    "graph_launched": False,
                }
    rows = _kernel_rows(per_step, lambda e: e["self"], info)
    kernel_sum = [sum(e["self"] for e in evs) for evs in per_step]
    summary = _summary(per_step, rows, steps, kernel_sum)
    cpu = summary["cpu_us_per_step"]
    summary.update(
        launches_per_step=None,
        gpu_us_per_step=summary["kernel_us_per_step"],  # the CPU is the device: kernel self time
        idle_us_per_step=None if cpu is None else cpu - summary["kernel_us_per_step"],
        profiled_step_us=cpu,
        unattributed_events=0,
        graph_launched=False,
        cpu_bound=None,
    )
    return rows, summary


def _max_numel(op: dict) -> int | None:
    """Elements of an op's largest input, from the trace's ``Input Dims`` (record_shapes)."""
    best = None
    for d in op.get("args", {}).get("Input Dims") or []:
        if isinstance(d, list) and d and all(isinstance(x, int) for x in d):
            n = math.prod(d)
            best = n if best is None else max(best, n)
    return best


def _scalar_only(e: dict) -> bool:
    """An op on 0-dim tensors only (e.g. wrapping a Python scalar): no kernel on a device."""
    dims = e.get("args", {}).get("Input Dims")
    return bool(dims) and all(d == [] for d in dims)


def _kernel_rows(per_step, dur_of, info) -> list[dict]:
    """One row per (kernel, phase): the same kernel in the forward and the backward is two."""
    n = len(per_step)
    by_key = defaultdict(list)
    counts = defaultdict(lambda: [0] * n)
    for i, evs in enumerate(per_step):
        for e in evs:
            by_key[e["key"]].append(dur_of(e))
            counts[e["key"]][i] += 1
    step_total = sum(sum(dur_of(e) for e in evs) for evs in per_step) / max(n, 1)
    rows = []
    for (name, phase), ds in by_key.items():
        c = counts[(name, phase)]
        us_per_step = sum(ds) / n
        cls = classify(name)
        rows.append(
            {
                "kernel": name,
                "phase": phase,
                "kernel_short": short_name(name),
                "kernel_class": cls,
                "generated": is_generated(name),
                "calls_per_step": c[0] if len(set(c)) == 1 else statistics.median(c),
                "calls_consistent": len(set(c)) == 1,
                "us_per_step": us_per_step,
                "mean_us": sum(ds) / len(ds),
                "min_us": min(ds),
                "max_us": max(ds),
                "share": us_per_step / step_total if step_total > 0 else None,
                **{k: v for k, v in info.get((name, phase), {}).items() if k != "bytes"},
            }
        )
    rows.sort(key=lambda r: -r["us_per_step"])
    return rows


def _summary(per_step, rows, steps, kernel_sum) -> dict:
    counts = [len(evs) for evs in per_step]
    classes, phases = Counter(), Counter()
    for r in rows:
        classes[r["kernel_class"]] += r["calls_per_step"]
        phases[r["phase"]] += r["calls_per_step"]
    dom = rows[0] if rows else None
    return {
        "profiled_steps": len(steps),
        "kernels_per_step": _med(counts),
        "steps_consistent": len(set(counts)) == 1,
        "kernels_by_class": ";".join(f"{k}:{v:g}" for k, v in sorted(classes.items())),
        "kernels_by_phase": ";".join(
            f"{p}:{phases[p]:g}" for p in ("fwd", "bwd", "optim") if phases.get(p)
        ),
        "copies_per_step": sum(r["calls_per_step"] for r in rows if r["kernel_class"] == "copy"),
        "memsets_per_step": sum(r["calls_per_step"] for r in rows if r["kernel_class"] == "memset"),
        "generated_per_step": sum(r["calls_per_step"] for r in rows if r["generated"]),
        "cpu_us_per_step": _med([s["dur"] for s in steps]),
        "kernel_us_per_step": _med(kernel_sum),
        "dominant_kernel": dom["kernel"] if dom else None,
        "dominant_share": dom["share"] if dom else None,
        "dominant_occupancy_pct": dom.get("occupancy_pct") if dom else None,
        "fp32_gemms_per_step": sum(
            r["calls_per_step"]
            for r in rows
            if r["kernel_class"].startswith("gemm") and FP32_GEMM.search(r["kernel"])
        ),
    }
