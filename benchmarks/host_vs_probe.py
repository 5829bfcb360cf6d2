"""Does the study's host time per call agree with an independent probe? Prints a table; asserts
nothing. CUDA only (the H200):

    python benchmarks/host_vs_probe.py [--rounds 300]

For nn.Linear 1024x1024 on 256 rows and cuDNN SDPA (B8 H16 S1024 D64, causal, bf16), eager and
``torch.compile`` default, in one process, each callable is timed two ways, a probe round and a study block in turn
(so that both see the same host phases):

- the probe's way (the method of an independent 60-line probe, no project code): rounds of
  about 3 ms of ``torch.cuda._sleep`` queued first, then 20 calls timed on the host clock,
  a pure-Python gauge (best of 3 runs of a 300-iteration loop) read around each round; its
  figure is the median over rounds whose gauge read within 1.3x of the lowest;
- the study's way: ``study.measure.host_cost.measure`` and ``figures`` (a sleep that must still be
  running when the block ends, the study's gauge of ``study.measure.host_gauge``, fast blocks against the
  level that gauge held for 5 readings).

The cuDNN rows pin the backend outside the callable, as a cell does; a last row pins it inside
every call, as the probe's own script does: ``sdpa_kernel`` entered and left per call is host
work of its own, which the cell's callable does not do. The units columns divide by each
method's own gauge: the pure loop (the probe's), the loop plus one CPU tensor add (the study's).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def loop_gauge() -> float:
    best = 1e9
    for _ in range(3):
        t = time.perf_counter_ns()
        s = 0
        for i in range(300):
            s += i * i
        best = min(best, (time.perf_counter_ns() - t) / 1e3)
    return best


def probe_round(fn, calls: int = 20) -> tuple[float, float]:
    """(gauge, host us per call) of one round, the probe's method."""
    import torch

    g0 = loop_gauge()
    torch.cuda._sleep(int(6e6))  # about 3 ms of GPU work queued first
    t = time.perf_counter_ns()
    for _ in range(calls):
        fn()
    host = (time.perf_counter_ns() - t) / 1e3 / calls
    g1 = loop_gauge()
    torch.cuda.synchronize()
    return max(g0, g1), host


def both(fn, rounds: int) -> tuple[tuple[float, float, int], dict]:
    """The probe's round and the study's block in turn, ``rounds`` times, so that both see the
    same host phases: ((probe us, probe units, rounds kept), the study's figures)."""
    from study.measure import host_cost, host_gauge

    rows, b = [], host_cost.Blocks(*host_cost.block_calls(50.0, 5.0, 20))
    cycles = host_cost.cycles_per_ms()
    for _ in range(rounds):
        rows.append(probe_round(fn))
        host_cost.one_block(fn, b, host_gauge.gauge_us, cycles)
    lo = min(g for g, _ in rows)
    fast = [r for r in rows if r[0] <= 1.3 * lo]
    p = (statistics.median(h for _, h in fast), statistics.median(h / g for g, h in fast),
         len(fast))  # fmt: skip
    ph = host_gauge.Phases(readings=list(b.gauge_us))
    return p, host_cost.figures(b, ph.ratio * ph.level())[0]


def main() -> None:
    import torch
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=300, help="probe rounds and study blocks each")
    a = ap.parse_args()
    torch.manual_seed(0)
    dev, dt = "cuda", torch.bfloat16
    q, k, v = (torch.randn(8, 16, 1024, 64, device=dev, dtype=dt) for _ in range(3))
    lin = torch.nn.Linear(1024, 1024, device=dev, dtype=dt)
    x = torch.randn(256, 1024, device=dev, dtype=dt)

    def attn():
        return F.scaled_dot_product_attention(q, k, v, is_causal=True)

    def attn_pinned_inside():
        with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
            return F.scaled_dot_product_attention(q, k, v, is_causal=True)

    lin_c = torch.compile(lambda: lin(x))
    cases = [("linear eager", lambda: lin(x), False), ("linear compiled", lin_c, False),
             ("cudnn eager", attn, True), ("cudnn compiled", torch.compile(attn), True),
             ("cudnn eager, pin inside", attn_pinned_inside, False)]  # fmt: skip
    print(f"{'callable':26} {'probe us':>9} {'study us':>9} {'study/probe':>11} "
          f"{'probe units':>11} {'study units':>11}  kept (probe rounds, study blocks)")  # fmt: skip
    with torch.no_grad():
        for name, fn, pin in cases:
            with sdpa_kernel(SDPBackend.CUDNN_ATTENTION) if pin else _null():
                for _ in range(20):
                    fn()
                torch.cuda.synchronize()
                (p_us, p_units, kept), s = both(fn, a.rounds)
            print(f"{name:26} {p_us:9.1f} {s['host_us']:9.1f} {s['host_us'] / p_us:11.3f} "
                  f"{p_units:11.2f} {s['host_units']:11.2f}  {kept}, {s['host_blocks_fast']}")  # fmt: skip


class _null:
    def __enter__(self):
        return self

    def __exit__(self, *a):
        return False


if __name__ == "__main__":
    main()
