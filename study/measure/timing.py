"""Steady-state timing, after the first call and a warm-up, in three separate notions.

1. Per-call latency (``latency_*``, the default): calls back to back, so launch and dispatch
   overhead count, as in any loop. CUDA: device events around chunks of ``repeat / CHUNKS``
   calls (an event pair around each call would add its own host time to every call). CPU: a
   monotonic clock (perf_counter_ns) around each call.
2. Device time (``device_time_*``, CUDA only): events around a CUDA-graph replay of many
   calls (no launch overhead), or ``triton.testing.do_bench`` (L2 flushed between calls).
3. Kernel time (``kernel_us_per_step``) comes from the profiler, in ``study.observe.trace``.

They answer different questions and differ by tens of percent on small cells: never
compare across them. Every number reports its method next to it, and device time says
whether L2 was flushed between calls (``L2``): a graph replay does not flush, do_bench does.

4. Paired (``rounds`` with ``eager``): a compiled cell also times the same work eagerly, in alternating
   blocks of ``calls`` back-to-back calls (eager, compiled, compiled, eager, ...). Each block
   starts after a synchronise and ``lead_in`` untimed calls: the first timed call then queues
   behind work already on the device, as in any back-to-back loop, instead of paying its own
   launch from an idle device (without it, GPU-bound speedups read 1.5-9.6% low: the compiled
   call's longer host path to its first kernel counted once per block). Both sides see the
   same host, clocks and load, so their ratio holds where the absolute latency of a host-bound
   cell moves between processes. PyTorch's dynamo benchmark harness alternates for the same
   reason ("to handle frequency scaling").

5. Host phase (``study.measure.host_gauge``): with a ``Phases`` given, per-call chunks and paired blocks
   each run between two gauges of the host's speed, and go on until enough of them ran in the
   host's fast phase (or ``timing.max_s`` passed); the cell then keeps the fast ones, so that
   eager and compiled, per-call and paired, are compared in the same phase.

The garbage collector is run before, and held off during, every timed phase (``quiet``).
"""

from __future__ import annotations

import gc
import statistics
import time
from collections.abc import Callable
from contextlib import contextmanager
from dataclasses import dataclass, field

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


CHUNKS = 10  # a round's per-call chunk is repeat / CHUNKS calls
FLOOR_MS = 10.0  # CUDA pair blocks hold a per-call chunk's calls, up to this long (pair_calls)
MIN_ROUNDS = 10  # rounds a cell times whatever timing.max_s says (timing.pairs is at least 10)


def _calls(step: Callable[[], object], device: str, calls: int) -> list:
    """``calls`` back-to-back calls. CPU: a monotonic clock around each call (microseconds).
    CUDA: one pair of events around all of them (read after a synchronise with ``_us``), not
    around each: an event pair per call adds host time of its own to every call, which a
    host-bound cell then pays (compiled cuDNN attention read 80 us per call with per-call
    events on the H200 host, against 60 us back to back; eager's GPU-bound 59 us did not move)."""
    if device == "cuda":
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        for _ in range(calls):
            step()
        e.record()
        return [(s, e, calls)]
    samples = []
    for _ in range(calls):
        t0 = time.perf_counter_ns()
        step()
        samples.append((time.perf_counter_ns() - t0) / 1e3)
    return samples


def _us(marks: list) -> list[float]:
    """Microseconds per call of what ``_calls`` returned; CUDA events must have completed."""
    return [m if isinstance(m, float) else m[0].elapsed_time(m[1]) * 1e3 / m[2] for m in marks]


def per_call(step: Callable[[], object], device: str, warmup: int, repeat: int) -> dict:
    """Per-call latency in microseconds: a monotonic clock around each call (CPU), or events
    around each of ``CHUNKS`` chunks of ``repeat / CHUNKS`` back-to-back calls (CUDA)."""
    for _ in range(warmup):
        step()
    sync(device)
    size = max(1, repeat // CHUNKS)
    marks = [m for _ in range(-(-repeat // size)) for m in _calls(step, device, size)]
    sync(device)
    return {**summarize(_us(marks)), "method": _method(device, size)}


def _method(device: str, size: int) -> str:
    return f"cuda_events_per_{size}_calls" if device == "cuda" else "perf_counter_per_call"


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


def block_calls(latency_us: float | None, block_ms: float, least: int = 3, most: int = 1000) -> int:
    """Calls per block so that a block lasts about ``block_ms``, and holds at least ``least``
    calls: a block of one slow call (a training step) would time one call from an idle device,
    not a steady state."""
    if not latency_us or latency_us <= 0:
        return least
    return max(least, min(most, round(block_ms * 1e3 / latency_us)))


def pair_calls(latency_us: float | None, block_ms: float, calls: int, device: str) -> int:
    """Calls per paired block: about ``block_ms`` (block_calls); on CUDA also at least a
    per-call chunk (``calls / CHUNKS``), so that a paired block and a per-call sample time the
    same length of queue. A compiled training step whose host time is close to its GPU time
    fills the queue slowly: on the H200, flash fwd_bwd under default read 447-453 µs a step in
    chunks of 10 but about 477 in pairs of 3-call blocks (0.93-0.95x paired against 0.99-1.00x
    per call, eager at 443-446 µs either way). The floor stops at ``FLOOR_MS`` a block: a
    50 ms step is GPU-bound, and 10-call blocks would stretch each round over phase changes."""
    least = 3
    if device == "cuda" and latency_us and latency_us > 0:  # a chunk's calls, up to FLOOR_MS
        least = max(3, min(calls // CHUNKS, round(FLOOR_MS * 1e3 / latency_us)))
    return block_calls(latency_us, block_ms, least=least)


def _pair(eager, compiled, device: str, calls: int, lead_in: int, i: int) -> tuple[float, float]:
    """(eager, compiled) per-call block times; the even pairs time eager first (ABBA)."""
    if i % 2 == 0:
        a = block(eager, device, calls, lead_in)
        return a, block(compiled, device, calls, lead_in)
    b = block(compiled, device, calls, lead_in)
    return block(eager, device, calls, lead_in), b


def latency_rounds(repeat: int) -> int:
    """Rounds that give ``repeat`` per-call samples on the CPU (a chunk of repeat / CHUNKS
    calls a round; CUDA: one sample a round, over the same rounds)."""
    size = max(1, repeat // CHUNKS)
    return -(-repeat // size)


@dataclass
class Rounds:
    """What ``rounds`` timed, one entry per round: the per-call samples of the step's chunk,
    the eager and compiled block of its pair (when paired), and its gauge (an index into
    ``phases.readings``)."""

    method: str
    chunks: list = field(default_factory=list)
    eager: list = field(default_factory=list)
    compiled: list = field(default_factory=list)
    gauges: list = field(default_factory=list)


def rounds(
    step: Callable[[], object],
    device: str,
    phases,
    repeat: int,
    max_s: float,
    lead_in: int = 0,
    eager: Callable[[], object] | None = None,
    pairs: int = 0,
    calls: int = 1,
) -> Rounds:
    """The steady-state timing of a cell, in rounds between two gauges of the host's speed
    (``phases``: study.measure.host_gauge.Phases). A round is a pair of eager and compiled blocks (with
    ``eager``: ABBA order over rounds), then a chunk of ``repeat / CHUNKS`` calls of ``step``
    timed as ``_calls`` does (after ``lead_in`` untimed calls). Per-call latency and the paired
    speedup are so taken at the same moments, in the same host phase.

    Rounds go on until ``repeat`` per-call samples and ``pairs`` pairs ran in the fast phase, or
    ``max_s`` seconds passed once ``MIN_ROUNDS`` rounds ran in all (the fewest a 95% interval
    is taken over): a ``pairs`` that ``max_s`` cannot hold ends short, never hangs."""
    size = max(1, repeat // CHUNKS)
    out = Rounds(_method(device, size))
    want = max(latency_rounds(repeat), pairs if eager is not None else 0)
    t0 = time.perf_counter()

    def one(i=0):
        pair = _pair(eager, step, device, calls, lead_in, i) if eager is not None else None
        for _ in range(lead_in):
            step()
        return pair, _calls(step, device, size)

    while True:
        pair, marks = phases.bracket(lambda i=len(out.gauges): one(i))
        out.gauges.append(len(phases.readings) - 1)
        out.chunks.append(marks)
        if pair is not None:
            out.eager.append(pair[0])
            out.compiled.append(pair[1])
        fast = phases.count_fast(out.gauges)
        least = min(want, MIN_ROUNDS)
        if fast >= want or (time.perf_counter() - t0 >= max_s and len(out.gauges) >= least):
            break
    sync(device)
    out.chunks = [_us(c) for c in out.chunks]
    return out


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
