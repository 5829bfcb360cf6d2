"""The blog's table, automated: "variant | compile | kernels per forward | what the trace revealed".

Each finding is a named rule over one run's row and its kernel rows (plain dicts of CSV
strings or numbers); a rule returns a sentence built from the measured values, or None.
Pure functions, no torch: the sweep writes ``revealed.csv`` with them, and the analysis
reads it. Every sentence quotes the numbers it comes from.
"""

from __future__ import annotations

import re

from study.rows import metrics

LOW_PRECISION = {"bf16", "fp16"}
FP32_GEMM = re.compile(r"f32f32|sgemm|_s\d{3,4}gemm|tf32|fp32", re.I)
LOW_OCCUPANCY_PCT = 25.0


def _f(v):
    try:
        x = float(v)
    except (TypeError, ValueError):
        return None
    return None if x != x else x


def _b(v) -> bool:
    return str(v).strip().lower() in ("true", "1", "1.0")


def _graph_input_copies(kernels):
    """Copies that CUDA graph trees make before a replay: eager copy launches inside the
    compiled region of a run whose other kernels are replayed from a graph."""
    if not any(_b(k.get("graph_launched")) for k in kernels):
        return []
    return [
        k
        for k in kernels
        if k["kernel_class"] == "copy" and not _b(k.get("graph_launched")) and k.get("cpu_region")
    ]


def hidden_copy(run, kernels, ctx=None):
    graph_copies = {k["kernel"] for k in _graph_input_copies(kernels)}
    ks = [k for k in kernels if k["kernel_class"] == "copy" and k["kernel"] not in graph_copies]
    if not ks:
        return None
    n = sum(_f(k["calls_per_step"]) or 0 for k in ks)
    return f"hidden copy: {n:g} copy kernel(s)/step ({ks[0]['kernel_short']})"


def fp32_gemm(run, kernels, ctx=None):
    if run.get("dtype") not in LOW_PRECISION:
        return None
    ks = [
        k for k in kernels if k["kernel_class"].startswith("gemm") and FP32_GEMM.search(k["kernel"])
    ]
    if not ks:
        return None
    phases = sorted({k.get("phase") or "fwd" for k in ks}, key=["fwd", "bwd", "optim"].index)
    where = f" (in the {' and '.join(phases)})" if phases != ["fwd"] else ""
    return f"FP32 GEMM in a {run['dtype']} run: {len(ks)} kernel(s){where}, e.g. {ks[0]['kernel_short']}"


def mask_rebuilt(run, kernels, ctx=None):
    ks = [
        k
        for k in kernels
        if re.search(r"triu|tril", k["kernel"], re.I)
        and k["kernel_class"] != "cpp_generated"
        and not k["kernel"].startswith("triton_")
    ]
    if not ks:
        return None
    return f"mask rebuilt every call: {ks[0]['kernel_short']}"


def single_fused(run, kernels, ctx=None):
    work = [k for k in kernels if k["kernel_class"] not in ("memset", "copy")]
    if len(work) != 1 or (_f(work[0]["calls_per_step"]) or 0) != 1:
        return None
    k = work[0]
    if k["kernel_class"] not in ("flash", "mem_efficient", "cudnn") and not _b(k.get("generated")):
        return None
    extra = len(kernels) - 1
    return f"single fused kernel: {k['kernel_short']}" + (
        f" (+{extra} memset/copy)" if extra else ""
    )


def low_occupancy_fastest(run, kernels, ctx=None):
    """The fastest ok cell of its family and device runs a low-occupancy dominant kernel."""
    if ctx is None or run.get("status") != "ok":
        return None
    peers = [
        r
        for r in ctx
        if r.get("status") == "ok"
        and r.get("family") == run.get("family")
        and r.get("device") == run.get("device")
        and _f(r.get("latency_median_us")) is not None
    ]
    if not peers or min(peers, key=lambda r: _f(r["latency_median_us"]))["run_id"] != run["run_id"]:
        return None
    dom = max(kernels, key=lambda k: _f(k["us_per_step"]) or 0, default=None)
    occ = _f(dom.get("occupancy_pct")) if dom else None
    if occ is None or occ >= LOW_OCCUPANCY_PCT:
        return None
    return f"fastest cell, yet its main kernel runs at {occ:.0f}% estimated occupancy ({dom['kernel_short']})"


def low_occupancy(run, kernels, ctx=None):
    dom = max(kernels, key=lambda k: _f(k["us_per_step"]) or 0, default=None)
    occ = _f(dom.get("occupancy_pct")) if dom else None
    if occ is None or occ >= LOW_OCCUPANCY_PCT or low_occupancy_fastest(run, kernels, ctx):
        return None
    return f"main kernel at {occ:.0f}% estimated occupancy ({dom['kernel_short']})"


def cpu_above_gpu(run, kernels, ctx=None):
    """Profiled CPU time above GPU busy time: CPU-bound, unless the per-call latency, timed
    without the profiler, or the host time measured behind a GPU sleep, says GPU-bound
    (study.rows.metrics.host_bound): the profiler slows
    the host side (v3's block, eager: 826 us of CPU against 724 of GPU, 639 us a call)."""
    cpu, gpu = _f(run.get("cpu_us_per_step")), _f(run.get("gpu_us_per_step"))
    if run.get("device") != "cuda" or cpu is None or gpu is None or cpu <= gpu:
        return None
    said = f"{cpu:.0f} us CPU vs {gpu:.0f} us GPU per step"
    lat = _f(run.get("latency_median_us"))
    measured = _f(run.get("host_us")) is not None
    hb = metrics.bound_verdict({**run, "host_us": _f(run.get("host_us")), "latency_median_us": lat,
                                "device_time_us": _f(run.get("device_time_us")),
                                "gpu_us_per_step": gpu})[0]  # fmt: skip
    if (hb if measured else metrics.inferred_host_bound(lat, gpu)) is False:
        return f"CPU above GPU under the profiler, GPU-bound per call: {said}, {lat:.0f} us a call"
    return f"CPU-bound: {said}"


def cudagraph_input_copies(run, kernels, ctx=None):
    ks = _graph_input_copies(kernels)
    if not ks:
        return None
    n = sum(_f(k["calls_per_step"]) or 0 for k in ks)
    return (
        f"CUDA-graph input copies: {n:g}/step ({ks[0]['kernel_short']}, launched before the replay)"
    )


def split_launches(run, kernels, ctx=None):
    """One aten op call launching the same kernel several times: on CUDA, TensorIterator
    splits an op over more than 2^31 - 1 elements into 32-bit-indexable pieces, and a foreach
    op (multi_tensor_apply) launches once per batch of tensor chunks."""
    said = {k["kernel"] for k in _graph_input_copies(kernels)}  # cudagraph_input_copies says
    ks = [
        k
        for k in kernels
        if (_f(k.get("launches_per_op_call")) or 1) >= 2
        and str(k.get("cpu_op") or "").startswith("aten::")
        and not _b(k.get("graph_launched"))
        and k["kernel"] not in said
    ]
    if not ks:
        return None
    k = max(ks, key=lambda k: _f(k["launches_per_op_call"]))
    n = _f(k.get("op_max_input_numel"))
    if n is not None and n > 2**31 - 1:
        why = f"; its largest input has {n:,.0f} elements, over 2^31-1, so it is split for 32-bit indexing"
    elif "multi_tensor_apply" in str(k.get("kernel") or k.get("kernel_short") or ""):
        why = "; a foreach op launches once per batch of tensor chunks (multi_tensor_apply)"
    else:
        why = ""
    more = f" (and {len(ks) - 1} more kernel(s) split)" if len(ks) > 1 else ""
    return (
        f"split launches: one {k['cpu_op']} call launches {_f(k['launches_per_op_call']):g} x "
        f"{k['kernel_short']}{why}{more}"
    )


def partitioner_recomputes(run, kernels, ctx=None):
    """A compiled training pass that saves less for backward than eager: AOTAutograd's
    partitioner chose to recompute the rest in the backward (its min-cut trades memory for
    recomputation)."""
    mine, eager = _f(run.get("saved_bytes")), _f(run.get("eager_saved_bytes"))
    n, en = _f(run.get("saved_tensors")), _f(run.get("eager_saved_tensors"))
    if None in (mine, eager, n, en) or run.get("compile") == "off" or mine >= eager:
        return None
    return (
        f"partitioner saves {n:g} tensor(s), {mine / 2**20:.3g} MiB, for backward where eager "
        f"saves {en:g}, {eager / 2**20:.3g} MiB: the rest is recomputed in the backward"
    )


def backward_heavier(run, kernels, ctx=None):
    """The backward launches more kernels than the forward (training passes)."""
    by = {}
    for k in kernels:
        p = k.get("phase") or "fwd"
        by[p] = by.get(p, 0) + (_f(k["calls_per_step"]) or 0)
    if not by.get("bwd"):
        return None
    parts = ", ".join(f"{p} {by[p]:g}" for p in ("fwd", "bwd", "optim") if by.get(p))
    return f"kernels per step by phase: {parts}"


def backend_missing(run, kernels, ctx=None):
    if run.get("status") != "invalid" or not run.get("backend_expected"):
        return None
    return f"pinned backend {run['backend_expected']} did not run (seen: {run.get('backend_seen') or 'none'})"


RULES = [
    hidden_copy,
    fp32_gemm,
    mask_rebuilt,
    single_fused,
    low_occupancy_fastest,
    low_occupancy,
    cpu_above_gpu,
    cudagraph_input_copies,
    split_launches,
    partitioner_recomputes,
    backward_heavier,
    backend_missing,
]


def reveal(run: dict, kernels: list[dict], ctx: list[dict] | None = None) -> list[str]:
    return [s for rule in RULES if (s := rule(run, kernels, ctx))]


def table(runs: list[dict], kernels_by_run: dict[str, list[dict]]) -> list[dict]:
    """One row per run: broken predictions first (study.rows.expect), then what the rules found;
    the runs with surprises come first."""
    out = []
    for r in runs:
        said = [x for x in str(r.get("surprise_detail") or "").split("; ") if x]
        found = [f"surprise: {x}" for x in said]
        found += reveal(r, kernels_by_run.get(r["run_id"], []), runs)
        if r.get("status") not in ("ok", "invalid"):
            found.append(f"{r.get('status')}: {(r.get('reason') or '')[:120]}")
        out.append(
            {
                "run_id": r["run_id"],
                "variant": r.get("variant"),
                "family": r.get("family"),
                "compile": r.get("compile"),
                "device": r.get("device"),
                "dtype": r.get("dtype"),
                "kernels_per_step": r.get("kernels_per_step"),
                "latency_median_us": r.get("latency_median_us"),
                "speedup": r.get("speedup"),
                "surprises": r.get("surprises"),
                "revealed": "; ".join(found),
            }
        )
    return sorted(out, key=lambda x: -(_f(x["surprises"]) or 0))
