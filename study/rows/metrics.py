"""Pure metric functions: numbers in, numbers out. No torch, no I/O.

Conventions (also in SCHEMA.md):
- FLOPs come from the call itself (study.observe.flops): flop_counter, or the variant's own formula.
  A multiply-add is 2; bias adds, softmax, norms and elementwise ops are not counted.
- Causal attention counts the FULL score matrix, 4*B*H*S^2*D (q@k^T and p@v), not half.
  This is flop_counter's convention for SDPA. The naive and math variants do compute the
  full matrix; flash, efficient and cuDNN skip the masked blocks, so their rate is nominal:
  up to 2x HIGHER than the work they did (on the H200, cuDNN reads ~930 "TFLOP/s" at
  seq_len 8192, above the 767 TFLOP/s calibrated bf16 matmul peak).
- bytes_min reads every input once and writes every output once (parameters included).
"""

from __future__ import annotations

import math


def rate(amount: float | None, us: float | None, scale: float) -> float | None:
    """amount / time, in units of ``scale`` per second (1e12 -> TFLOP/s, 1e9 -> GB/s)."""
    if amount is None or us is None or us <= 0 or (isinstance(us, float) and math.isnan(us)):
        return None
    return amount / (us * 1e-6) / scale


def arith_intensity(flops: float | None, nbytes: float | None) -> float | None:
    if not flops or not nbytes:
        return None
    return flops / nbytes


def roofline(
    tflops: float | None,
    gbps: float | None,
    intensity: float | None,
    peak_tflops: float | None,
    peak_gbps: float | None,
) -> dict:
    """Percent of each measured ceiling, and which one bounds the cell. Unknown -> None."""
    out = {"pct_peak_compute": None, "pct_peak_bw": None, "bound": None, "ridge_intensity": None}
    if peak_tflops and tflops is not None:
        out["pct_peak_compute"] = 100.0 * tflops / peak_tflops
    if peak_gbps and gbps is not None:
        out["pct_peak_bw"] = 100.0 * gbps / peak_gbps
    if peak_tflops and peak_gbps and intensity is not None:
        ridge = peak_tflops * 1e12 / (peak_gbps * 1e9)  # FLOP/byte where the roofs meet
        out["ridge_intensity"] = ridge
        out["bound"] = "compute" if intensity >= ridge else "memory"
    return out


HOST_BOUND = 1.10  # rows without host_us: per-call latency above this x the GPU busy time


def host_bound(host_us: float | None, device_us: float | None) -> bool | None:
    """The one definition of host-bound (SCHEMA.md, ``host_bound``): the host time per call,
    measured behind a GPU sleep (``host_us``, study.measure.host_cost), exceeds the device time
    per call (``device_time_us``; the profiler's GPU busy time per step where there is none), so
    the GPU waits on the host. None where either is unknown. analysis/ applies the same rule;
    for rows measured before ``host_us`` existed it falls back to ``inferred_host_bound``."""
    if not host_us or not device_us:
        return None
    return host_us > device_us


# host_us above this x the per-call latency: no verdict from it. Up to fast_ratio (1.3) the two
# can differ by the host's phase alone (host_us and the latency come from different blocks, each
# judged fast within 1.3x of the level); past it, the host blocks ran in another phase than the
# rounds, or a call waited inside its block.
HOST_OVER_LATENCY = 1.30


def bound_verdict(row: dict) -> tuple[bool | None, str | None]:
    """(``host_bound``, a note or None) of a CUDA row. In a steady loop a call's host time is
    at most its latency, so a ``host_us`` far above ``latency_median_us`` means its blocks ran
    in a slower phase than the timed rounds (m4 of 2026-12-04: compiled Linear 95.8 us of host
    time from slow-phase blocks, 55.4 us a call), or a call waited inside its block: no verdict
    then, and the note says why."""
    host, lat = row.get("host_us"), row.get("latency_median_us")
    if host and lat and host > HOST_OVER_LATENCY * lat:
        return None, (
            f"host_us {host:.0f} us is over {HOST_OVER_LATENCY:g}x the per-call latency "
            f"{lat:.0f} us: its blocks ran in a slower host phase than the timed rounds, or a "
            "call waited inside its block; no host_bound verdict is drawn from it"
        )
    return host_bound(host, device_us(row)), None


def device_us(row: dict) -> float | None:
    """Device µs per call for the bound verdict: ``device_time_us`` where a CUDA graph's replay
    timed it (no host in it). Where do_bench timed it (CUDA-graph modes, training steps), its
    events bracket the call as issued, so a host-bound call reads its host time there (Linear
    under reduce-overhead, H200: 95.9 us "device" for 7.0 us of kernels, 87.9 us a call): the
    profiler's GPU busy time per step (``gpu_us_per_step``) instead, where the row has it."""
    dev, busy = _num(row.get("device_time_us")), _num(row.get("gpu_us_per_step"))
    method = row.get("device_time_method")
    method = method if isinstance(method, str) else ""  # a blank cell reads as NaN
    if dev and (method.startswith("cuda_graph_replay") or not method or not busy):
        return dev
    return busy or dev


def _num(x) -> float | None:
    """A figure, or None for a missing one (None, NaN, pandas' NA)."""
    try:
        v = float(x)
    except (TypeError, ValueError):
        return None
    return v if v == v else None


def inferred_host_bound(latency_us: float | None, gpu_busy_us: float | None) -> bool | None:
    """Rows without ``host_us`` (before it was measured): the per-call latency more than 10% over
    the profiler's GPU busy time per step. An inference from latency: it belongs to the host the
    row ran on."""
    if not latency_us or not gpu_busy_us:
        return None
    return latency_us > HOST_BOUND * gpu_busy_us


def speedup(eager_us: float | None, compiled_us: float | None) -> float | None:
    if not eager_us or not compiled_us:
        return None
    return eager_us / compiled_us


# A ratio of latencies timed apart (two cells, two processes) this far outside the paired
# speedup's 95% interval disagrees with it: separate processes on a quiet host differ by a
# few percent (docs/method.md, "One speedup").
APART_NOISE = 0.05


def apart_note(apart, paired, low, high, busy: bool) -> str:
    """Why the ratio of two latencies timed apart (``speedup``: the eager cell's over the
    compiled cell's) disagrees with the paired speedup, in a few words; '' when it lies within
    the paired 95% interval widened by ``APART_NOISE``, or either is unknown. ``busy``: either
    side was timed outside the host's fast phase (``timing_phase`` not fast)."""
    a, p, lo, hi = (_num(x) for x in (apart, paired, low, high))
    if a is None or p is None:
        return ""
    lo, hi = lo if lo is not None else p, hi if hi is not None else p
    if lo * (1 - APART_NOISE) <= a <= hi * (1 + APART_NOISE):
        return ""
    why = "host busy between them" if busy else "separate processes"
    return f"timed apart {a:.2f}x: {why}"


def payback_calls(
    compile_s: float | None, eager_us: float | None, compiled_us: float | None
) -> float | None:
    """Calls after which compiling has paid for itself; None when compiled is not faster."""
    if compile_s is None or eager_us is None or compiled_us is None:
        return None
    gain_us = eager_us - compiled_us
    if gain_us <= 0:
        return None
    return compile_s * 1e6 / gain_us


def rates(row: dict, peaks: dict) -> dict:
    """A row's rates from its FLOPs, bytes and times, and its place against ``peaks``
    ({'tflops', 'gbps'} from study.measure.calibrate; empty: unknown, never guessed)."""
    out = {
        "arith_intensity": arith_intensity(row.get("flops"), row.get("bytes_min")),
        "tflops": rate(row.get("flops"), row.get("latency_median_us"), 1e12),
        "gbps": rate(row.get("bytes_min"), row.get("latency_median_us"), 1e9),
        "tflops_device": rate(row.get("flops"), row.get("device_time_us"), 1e12),
        "gbps_device": rate(row.get("bytes_min"), row.get("device_time_us"), 1e9),
        "tflops_useful": rate(row.get("flops_useful"), row.get("latency_median_us"), 1e12),
        "peak_tflops": peaks.get("tflops"),
        "peak_gbps": peaks.get("gbps"),
    }
    use_dev = out["tflops_device"] is not None
    roof = roofline(
        out["tflops_device"] if use_dev else out["tflops"],
        out["gbps_device"] if use_dev else out["gbps"],
        out["arith_intensity"],
        out["peak_tflops"],
        out["peak_gbps"],
    )
    roof.pop("ridge_intensity", None)
    return out | roof
