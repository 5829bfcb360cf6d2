"""Host time per call, measured directly: issue a block of calls while the GPU is kept busy.

Why: a call's latency is the larger of its host time and its device time, so latency alone
cannot say how much host work a call takes once the call is GPU-bound, and a host-bound
figure inferred from latency belongs to the host it ran on (H200 hosts differ in speed by up
to 2.4x, and one host alternates between a fast and a slow phase, x1.7). Here the host time
is timed on its own:

1. queue ``torch.cuda._sleep`` on the stream, long enough to outlast the block (a spin kernel
   of a given number of GPU clock cycles; its cycles per ms are measured once per process);
2. record an event behind it, then time issuing ``n`` back-to-back calls on the host clock;
3. ask the event whether the sleep has finished. It has not: the GPU was still busy with the
   sleep when the last call had been issued, so no call waited for the GPU, and the block's
   time is host time alone. It has: the queue may have drained (the block took longer than the
   sleep, or a call synchronised with the GPU), so that block is not counted.

The host's gauge (study.measure.host_gauge) is read right before and right after each block, so every
block has the host's speed beside it: ``host_units`` is host µs over gauge µs, the call's host
cost in units of this host's speed, which carries from one host to another better than µs do.
A compiled cell times its eager twin's blocks in the same rounds, alternating (ABBA), so both
sides see the same phases. Blocks are judged fast against the cell's fast level, as the timed
rounds are (study.measure.host_gauge.Phases).

On the CPU host and device are one: nothing is measured, and the columns stay blank.
"""

from __future__ import annotations

import functools
import statistics
import time
from dataclasses import dataclass, field

import torch

MIN_SLEEP_MS, MAX_SLEEP_MS = 0.5, 1000.0  # timing.host_sleep_ms's range (study.config.rules)
COVER = 0.5  # a block is sized to take at most this share of the sleep (est. from the latency)
MIN_FAST_BLOCKS = 5  # fewer fast blocks than this: the figures use every covered block


@functools.cache
def cycles_per_ms() -> float:
    """GPU clock cycles ``torch.cuda._sleep`` spins per millisecond, measured once per process
    (about 2,000,000 on the H200: 1.98 GHz)."""
    torch.cuda._sleep(1_000_000)  # the first launch loads the kernel: not a measurement
    torch.cuda.synchronize()
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    cycles = 20_000_000
    s.record()
    torch.cuda._sleep(cycles)
    e.record()
    e.synchronize()
    return cycles / max(s.elapsed_time(e), 1e-3)


def available(device: str) -> str | None:
    """Why host time cannot be measured here, or None when it can."""
    if device != "cuda":
        return "host time per call is not measured on the CPU: host and device are one there"
    if not hasattr(torch.cuda, "_sleep"):
        return "host time per call not measured: this torch has no torch.cuda._sleep"
    return None


@dataclass
class Blocks:
    """One callable's blocks: host µs per call, the gauge around the block, and whether the
    sleep covered the block (``covered``: the GPU had not finished it when the block ended)."""

    calls: int
    sleep_ms: float
    host_us: list[float] = field(default_factory=list)
    gauge_us: list[float] = field(default_factory=list)
    covered: list[bool] = field(default_factory=list)


def block_calls(latency_us: float | None, sleep_ms: float, most: int) -> tuple[int, float]:
    """(calls per block, sleep ms): at most ``most`` calls, taking at most ``COVER`` of the sleep
    by the per-call latency (an upper bound of the host time when host-bound, and the device
    time when GPU-bound); a call too long for that stretches the sleep to cover one call."""
    if not latency_us or latency_us <= 0:
        return most, sleep_ms
    n = max(1, min(most, int(COVER * sleep_ms * 1e3 / latency_us)))
    return n, max(sleep_ms, min(MAX_SLEEP_MS, n * latency_us / 1e3 / COVER))


def one_block(fn, b: Blocks, gauge, cycles_ms: float) -> None:
    """One block of ``b.calls`` calls behind a sleep of ``b.sleep_ms``, between two gauges."""
    g0 = gauge()
    torch.cuda._sleep(int(b.sleep_ms * cycles_ms))
    behind = torch.cuda.Event()
    behind.record()
    t = time.perf_counter_ns()
    for _ in range(b.calls):
        fn()
    host = (time.perf_counter_ns() - t) / 1e3 / b.calls
    # the sleep still running now: the GPU never waited for the host, and the host never
    # waited for the GPU (a sync inside a call would have waited for the sleep to end, which
    # then reads as finished); finished: the block is not host time alone
    b.covered.append(not behind.query())
    b.gauge_us.append(max(g0, gauge()))
    b.host_us.append(host)
    torch.cuda.synchronize()  # the queue starts empty for the next block


def measure(fns: dict, latency_us: dict, blocks: int, sleep_ms: float, most: int, gauge):
    """{name: Blocks} for each callable of ``fns`` ({"eager": fn, "compiled": fn} or one),
    ``blocks`` blocks each, alternating in ABBA order so both sides see the same phases."""
    cycles_ms = cycles_per_ms()
    out = {k: Blocks(*block_calls(latency_us.get(k), sleep_ms, most)) for k in fns}
    for fn in fns.values():  # a call before the first block: nothing lazy inside a block
        fn()
    torch.cuda.synchronize()
    names = list(fns)
    for i in range(blocks):
        for k in names if i % 2 == 0 else names[::-1]:
            one_block(fns[k], out[k], gauge, cycles_ms)
    return out


def figures(b: Blocks, bar: float | None) -> tuple[dict, str | None]:
    """(host_us, host_units, host_gauge_us, host_blocks, host_blocks_fast) of one callable's
    blocks, from the covered blocks whose gauge read within ``bar`` µs (the fast phase), or
    every covered block when fewer than ``MIN_FAST_BLOCKS`` did; and a note or None."""
    ok = [i for i, c in enumerate(b.covered) if c]
    fast = [i for i in ok if bar is None or b.gauge_us[i] <= bar]
    use = fast if len(fast) >= MIN_FAST_BLOCKS else ok
    out = {"host_blocks": len(b.covered), "host_blocks_fast": len(fast), "host_calls": b.calls}
    if not use:
        return out, (
            f"host time per call not measured: the {b.sleep_ms:g} ms sleep did not cover any "
            f"block of {b.calls} calls (a call waited for the GPU, or the block outlasted it)"
        )
    out.update(
        host_us=statistics.median(b.host_us[i] for i in use),
        host_units=statistics.median(b.host_us[i] / b.gauge_us[i] for i in use),
        host_gauge_us=statistics.median(b.gauge_us[i] for i in use),
    )
    why = []
    if len(ok) < len(b.covered):
        why.append(
            f"{len(b.covered) - len(ok)} of {len(b.covered)} blocks not covered by the sleep"
        )
    if len(fast) < MIN_FAST_BLOCKS:
        why.append(f"only {len(fast)} ran in the host's fast phase: host_us from all {len(ok)}")
    return out, ("host time per call: " + "; ".join(why)) if why else None
