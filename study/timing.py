"""Steady-state timing, after the first call and a warm-up, in three separate notions.

1. Per-call latency (``latency_*``, the default): device events around each call, calls
   back to back, so launch and dispatch overhead count, as in any loop. On the CPU a
   monotonic clock (perf_counter_ns) around each call.
2. Device time (``device_time_*``, CUDA only): events around a CUDA-graph replay of many
   calls (no launch overhead), or ``triton.testing.do_bench`` (L2 flushed between calls).
3. Kernel time (``kernel_us_per_step``) comes from the profiler, in ``study.trace``.

They answer different questions and differ by tens of percent on small cells: never
compare across them. Every number reports its method next to it, and device time says
whether L2 was flushed between calls (``L2``): a graph replay does not flush, do_bench does.

4. Paired (``paired``): a compiled cell also times the same work eagerly, in alternating
   blocks of ``calls`` back-to-back calls (eager, compiled, compiled, eager, ...). Each block
   starts after a synchronise and ``lead_in`` untimed calls: the first timed call then queues
   behind work already on the device, as in any back-to-back loop, instead of paying its own
   launch from an idle device (without it, GPU-bound speedups read 1.5-9.6% low: the compiled
   call's longer host path to its first kernel counted once per block). Both sides see the
   same host, clocks and load, so their ratio holds where the absolute latency of a host-bound
   cell moves between processes. PyTorch's dynamo benchmark harness alternates for the same
   reason ("to handle frequency scaling").

The garbage collector is run before, and held off during, every timed phase (``quiet``).
"""

from __future__ import annotations

import gc
import statistics
import time
from collections.abc import Callable
from contextlib import contextmanager

import torch


def summarize(samples_us: list[float]) -> dict:
    """Median, p10, p90 and count of a list of microsecond samples."""
    xs = sorted(samples_us)
    if not xs:
        return {"median": None, "p10": None, "p90": None, "n": 0}
    q = statistics.quantiles(xs, n=10, method="inclusive") if len(xs) > 1 else [xs[0]] * 9
    return {"median": statistics.median(xs), "p10": q[0], "p90": q[8], "n": len(xs)}


def sync(device: str) -> None:
    if device == "cuda":
        torch.cuda.synchronize()


def per_call(step: Callable[[], object], device: str, warmup: int, repeat: int) -> dict:
    """Per-call latency in microseconds: events (or a monotonic clock) around each call."""
    for _ in range(warmup):
        step()
    sync(device)
    if device == "cuda":
        starts = [torch.cuda.Event(enable_timing=True) for _ in range(repeat)]
        ends = [torch.cuda.Event(enable_timing=True) for _ in range(repeat)]
        for s, e in zip(starts, ends, strict=True):
            s.record()
            step()
            e.record()
        torch.cuda.synchronize()
        samples = [s.elapsed_time(e) * 1e3 for s, e in zip(starts, ends, strict=True)]
        method = "cuda_events_per_call"
    else:
        samples = []
        for _ in range(repeat):
            t0 = time.perf_counter_ns()
            step()
            samples.append((time.perf_counter_ns() - t0) / 1e3)
        method = "perf_counter_per_call"
    return {**summarize(samples), "method": method}


@contextmanager
def quiet():
    """No garbage collection inside a timed phase (one is run before it)."""
    was = gc.isenabled()
    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def block(step: Callable[[], object], device: str, calls: int, lead_in: int = 0) -> float:
    """Per-call time of ``calls`` back-to-back calls in microseconds, after ``lead_in`` untimed
    calls (queued ahead of the first timed one)."""
    if device == "cuda":
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        torch.cuda.synchronize()
        for _ in range(lead_in):
            step()
        s.record()
        for _ in range(calls):
            step()
        e.record()
        torch.cuda.synchronize()
        return s.elapsed_time(e) * 1e3 / calls
    for _ in range(lead_in):
        step()
    t0 = time.perf_counter_ns()
    for _ in range(calls):
        step()
    return (time.perf_counter_ns() - t0) / 1e3 / calls


def block_calls(latency_us: float | None, block_ms: float, most: int = 1000) -> int:
    """Calls per block so that a block lasts about ``block_ms`` (at least one call)."""
    if not latency_us or latency_us <= 0:
        return 1
    return max(1, min(most, round(block_ms * 1e3 / latency_us)))


def paired(
    eager, compiled, device: str, pairs: int, calls: int, lead_in: int = 0
) -> tuple[list, list]:
    """Per-call times of eager and compiled blocks, timed in alternation (ABBA order, so
    neither side always runs first). Returns (eager samples, compiled samples), paired."""
    e, c = [], []
    for i in range(pairs):
        if i % 2 == 0:
            e.append(block(eager, device, calls, lead_in))
            c.append(block(compiled, device, calls, lead_in))
        else:
            c.append(block(compiled, device, calls, lead_in))
            e.append(block(eager, device, calls, lead_in))
    return e, c


def graph_replay(step: Callable[[], object], calls: int, replays: int) -> dict:
    """Device time per call from events around replays of one CUDA graph of ``calls`` calls."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            step()
    torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for _ in range(calls):
            step()
    graph.replay()  # first replay uploads the graph
    torch.cuda.synchronize()
    samples = []
    for _ in range(replays):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        graph.replay()
        e.record()
        torch.cuda.synchronize()
        samples.append(s.elapsed_time(e) * 1e3 / calls)
    del graph
    return {**summarize(samples), "method": f"cuda_graph_replay_x{calls}", "l2": "not flushed"}


def do_bench(step: Callable[[], object]) -> dict:
    """Device time per call from triton.testing.do_bench (L2 flushed before every call)."""
    from triton.testing import do_bench as _do_bench

    ms = _do_bench(step, warmup=25, rep=100, return_mode="all")
    return {**summarize([m * 1e3 for m in ms]), "method": "do_bench_l2_flush", "l2": "flushed"}


def device_time(
    step: Callable[[], object], method: str, uses_cudagraphs: bool, calls: int, replays: int
) -> dict:
    """Device time per call by the chosen method; the method actually used is returned.

    A compiled function that already replays CUDA graphs (reduce-overhead, max-autotune)
    cannot be captured into another graph, so it is timed with do_bench instead, and the
    row says so.
    """
    if method == "none":
        return {"median": None, "p10": None, "p90": None, "n": 0, "method": "none", "l2": None}
    if method == "graph" and not uses_cudagraphs:
        return graph_replay(step, calls, replays)
    out = do_bench(step)
    if method == "graph":
        out["method"] += " (cudagraph mode: graph capture not possible)"
    return out
