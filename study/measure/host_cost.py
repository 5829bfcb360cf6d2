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

A model-sized call needs three more things (measured on an H100, 2026-12-06:
benchmarks/host_block_probe.py):

- **The launch queue.** The GPU holds about a thousand queued launches (1,021 on the H100); past
  that a launch waits for the GPU, however long the sleep. Its depth is measured once per
  process (``queue_depth``), and each callable's share of it once (``queue_slots``: the
  launches one call leaves queued behind a sleep), so a block never holds more than half of it.
- **No cold call.** The first call after a synchronise runs 6-50% slower than a call in a steady
  loop (ResNet-18 compiled: 1,011-1,103 us against 926), so each block first makes ``lead_in``
  untimed calls behind the same sleep, then times its calls (after two: 965 us against 960).
- **A call that waits inside.** A call that reads a value back to the host (transformers'
  eager GPT-2 and BERT) runs host and device in series: no block is ever covered. It is found
  before any block (``syncs``: torch's sync debug mode) and named ``serial``.

Then each figure is checked against its own call (``check``): host us at the timed calls' host
speed (host units x the timing's gauge) above the call's latency beyond the timing's noise
(its p90) is a broken figure: it is not reported, and the row says why.

On the CPU host and device are one: nothing is measured, and the columns stay blank.
"""

from __future__ import annotations

import functools
import statistics
import time
import warnings
from dataclasses import dataclass, field

import torch

MIN_SLEEP_MS, MAX_SLEEP_MS = 0.5, 1000.0  # timing.host_sleep_ms's range (study.config.rules)
COVER = 0.5  # a block is sized to take at most this share of the sleep (est. from the latency)
MIN_FAST_BLOCKS = 5  # fewer fast blocks than this: the figures use every covered block
QUEUE_SHARE = 0.5  # a block's calls (lead-in too) take at most this share of the launch queue
MAX_DEPTH = 8192  # launches queue_depth tries before it calls the queue deeper than it looks
WAITED_US = 200.0  # a launch that took longer than this waited for room in the queue
LEAD_IN = 2  # untimed calls behind the sleep before a block's timed calls


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
    sleep covered the block (``covered``: the GPU had not finished it when the block ended).
    ``lead_in`` untimed calls precede each block's timed ``calls``; ``slots``: the launch
    queue's entries one call takes; ``why``: why no block was timed (a call that waits inside,
    or one that fills the queue alone); ``status``: serial where the call syncs."""

    calls: int
    sleep_ms: float
    lead_in: int = 0
    slots: int | None = None
    why: str | None = None
    status: str | None = None
    host_us: list[float] = field(default_factory=list)
    gauge_us: list[float] = field(default_factory=list)
    covered: list[bool] = field(default_factory=list)


@functools.cache
def queue_depth() -> int:
    """Launches the GPU's queue holds before a launch waits (about 1,000 on the H100), measured
    once per process: tiny kernels queued behind a long sleep until one launch waits."""
    cycles_ms = cycles_per_ms()
    return _free_slots(cycles_ms, lambda: None)


def _free_slots(cycles_ms: float, before) -> int:
    """Tiny launches that fit behind a 50 ms sleep after ``before()`` until one waits."""
    torch.cuda.synchronize()
    torch.cuda._sleep(int(50 * cycles_ms))
    before()
    n = 0
    while n < MAX_DEPTH:
        t = time.perf_counter_ns()
        torch.cuda._sleep(1)
        if (time.perf_counter_ns() - t) / 1e3 > WAITED_US:
            break
        n += 1
    torch.cuda.synchronize()
    return n


def syncs(fn) -> str | None:
    """The synchronising op one call of ``fn`` runs (torch's sync debug mode), or None."""
    torch.cuda.synchronize()
    was = torch.cuda.get_sync_debug_mode()
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        torch.cuda.set_sync_debug_mode("warn")
        try:
            fn()
        finally:
            torch.cuda.set_sync_debug_mode(was)
    torch.cuda.synchronize()
    for w in seen:  # not the mode's own warning that it is a prototype
        text = " ".join(str(w.message).split())
        if "called a synchronizing" in text:
            return text.split(" (Triggered")[0][:120]
    return None


def queue_slots(fn, depth: int, cycles_ms: float) -> int:
    """The launch queue's entries one call of ``fn`` takes: the room left behind a sleep after
    one call, taken from the room without it (``depth``). A call that fills it alone: depth."""
    return max(0, depth - _free_slots(cycles_ms, fn))


def plan(latency_us: float | None, sleep_ms: float, most: int, slots: int | None,
         depth: int | None) -> tuple[int, float, int, str | None]:  # fmt: skip
    """(timed calls per block, sleep ms, lead-in calls, why none). At most ``most`` timed calls;
    the lead-in and timed calls take at most ``COVER`` of the sleep by the per-call latency (an
    upper bound of the host time when host-bound, and the device time when GPU-bound; a call
    too long for that stretches the sleep) and at most ``QUEUE_SHARE`` of the launch queue."""
    lead = LEAD_IN
    n = most
    if slots and depth:
        fit = int(QUEUE_SHARE * depth) // slots
        if fit < 1:
            fit, lead = (1, 0) if slots < depth else (0, 0)
        if fit == 0:
            return (
                0,
                sleep_ms,
                0,
                (
                    f"host time per call not measured: one call queues {slots} launches and the "
                    f"GPU's launch queue holds {depth}: a call waits for the GPU whatever the sleep"
                ),
            )
        lead = min(lead, max(0, fit - 1))
        n = min(n, max(1, fit - lead))
    if not latency_us or latency_us <= 0:
        return n, sleep_ms, lead, None
    n = max(1, min(n, int(COVER * sleep_ms * 1e3 / latency_us) - lead))
    total = (n + lead) * latency_us / 1e3 / COVER
    return n, max(sleep_ms, min(MAX_SLEEP_MS, total)), lead, None


def block_calls(latency_us: float | None, sleep_ms: float, most: int) -> tuple[int, float]:
    """(calls per block, sleep ms) by time alone, with no lead-in (``plan`` without a queue)."""
    n, sleep, _, _ = plan(latency_us, sleep_ms, most, None, None)
    if latency_us and latency_us > 0:  # no lead-in: the calls alone fill their share
        n = max(1, min(most, int(COVER * sleep_ms * 1e3 / latency_us)))
        sleep = max(sleep_ms, min(MAX_SLEEP_MS, n * latency_us / 1e3 / COVER))
    return n, sleep


def one_block(fn, b: Blocks, gauge, cycles_ms: float) -> None:
    """One block of ``b.calls`` calls behind a sleep of ``b.sleep_ms``, between two gauges,
    after ``b.lead_in`` untimed calls behind the same sleep."""
    g0 = gauge()
    torch.cuda._sleep(int(b.sleep_ms * cycles_ms))
    behind = torch.cuda.Event()
    behind.record()
    for _ in range(b.lead_in):
        fn()
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
    ``blocks`` blocks each, alternating in ABBA order so both sides see the same phases. A
    callable that syncs inside, or fills the launch queue alone, gets no block (its ``why``)."""
    cycles_ms = cycles_per_ms()
    for fn in fns.values():  # a call before the first block: nothing lazy inside a block
        fn()
    torch.cuda.synchronize()
    depth = queue_depth()
    out = {}
    for k, fn in fns.items():
        op = syncs(fn)
        if op:
            out[k] = Blocks(0, sleep_ms, status="serial", why=(
                "host and device run in series: a call waits for the GPU inside "
                f"({op}), so no block can time its host work alone"))  # fmt: skip
            continue
        slots = queue_slots(fn, depth, cycles_ms)
        n, sleep, lead, why = plan(latency_us.get(k), sleep_ms, most, slots, depth)
        out[k] = Blocks(n, sleep, lead, slots, why, "queue_full" if why else None)
    names = [k for k in fns if out[k].calls > 0]
    for i in range(blocks):
        for k in names if i % 2 == 0 else names[::-1]:
            one_block(fns[k], out[k], gauge, cycles_ms)
    return out, depth


def figures(b: Blocks, bar: float | None) -> tuple[dict, str | None]:
    """(host_us, host_units, host_gauge_us, host_blocks, host_blocks_fast) of one callable's
    blocks, from the covered blocks whose gauge read within ``bar`` µs (the fast phase), or
    every covered block when fewer than ``MIN_FAST_BLOCKS`` did; and a note or None."""
    ok = [i for i, c in enumerate(b.covered) if c]
    fast = [i for i in ok if bar is None or b.gauge_us[i] <= bar]
    use = fast if len(fast) >= MIN_FAST_BLOCKS else ok
    out = {"host_blocks": len(b.covered), "host_blocks_fast": len(fast), "host_calls": b.calls,
           "host_queue_slots": b.slots, "host_status": b.status}  # fmt: skip
    if b.why:
        return out, b.why
    if not use:
        out["host_status"] = "not_covered"
        return out, (
            f"host time per call not measured: the {b.sleep_ms:g} ms sleep did not cover any "
            f"block of {b.calls} calls (a call waited for the GPU, or the block outlasted it)"
        )
    out["host_status"] = "measured"
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


def check(host_units, latency_us, latency_p90_us, gauge_us) -> tuple[bool, str | None]:
    """(the host figure holds, why not): ``host_units`` at the timed calls' host speed
    (``gauge_us``, the timing rounds' gauge) against the call's own latency. In a steady loop a
    call's host time is at most its latency; above the latency's p90 (the timing's noise) the
    figure is broken (blocks that ran otherwise than the timed calls), not a finding."""
    if not host_units or not latency_us or not gauge_us:
        return True, None
    at = host_units * gauge_us
    bar = max(latency_p90_us or latency_us, latency_us)
    if at <= bar:
        return True, None
    return False, (
        f"host time per call not reported: {at:.0f} us at the timed calls' host speed "
        f"({host_units:.2f} units x {gauge_us:.1f} us) is above the call's own latency "
        f"{latency_us:.0f} us (p90 {bar:.0f}), which a steady loop cannot be: the blocks ran "
        "otherwise than the timed calls; no host verdict is drawn from it"
    )
