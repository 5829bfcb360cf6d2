"""Skip slow rounds, or wait for a fast phase? Both policies on the same cells, in one process.

    python benchmarks/phase_policy.py                 # CUDA: nn.Linear and cuDNN SDPA, compiled
    python benchmarks/phase_policy.py --secs 20

Prints figures; asserts nothing. ``skip`` is what the study does (study.measure.timing.rounds): time
every round between two gauges and keep the fast ones. ``wait`` polls the gauge (every 0.5 ms)
until it reads fast, then times the round, and keeps it if its closing gauge still reads fast.
For each policy, alternated over several tries: the seconds to 30 fast pairs, the share of
timed rounds that were kept, and the paired speedup with its 95% interval.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch  # noqa: E402

from study.measure import host_gauge as phase  # noqa: E402
from study.measure import timing  # noqa: E402
from study.observe import stats  # noqa: E402


def cases(device: str):
    dt = torch.bfloat16 if device == "cuda" else torch.float32
    lin = torch.nn.Linear(1024, 1024, device=device, dtype=dt)
    x = torch.randn(256, 1024, device=device, dtype=dt)
    out = {"linear": (lambda: lin(x), torch.compile(lambda: lin(x)))}
    if device == "cuda":
        import torch.nn.functional as F
        from torch.nn.attention import SDPBackend, sdpa_kernel

        q, k, v = (torch.randn(8, 16, 1024, 64, device=device, dtype=dt) for _ in range(3))

        def cudnn():
            with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
                return F.scaled_dot_product_attention(q, k, v, is_causal=True)

        out["cudnn"] = (cudnn, torch.compile(cudnn))
    return out


def skip(ph, eager, comp, device, calls, pairs):
    r = timing.rounds(comp, device, ph, 10, 60.0, 1, eager, pairs, calls)
    fast, _ = phase.split(r.gauges, ph)
    return [r.eager[k] for k in fast], [r.compiled[k] for k in fast], len(r.gauges)


def wait(ph, eager, comp, device, calls, pairs):
    e, c, timed = [], [], 0
    while len(e) < pairs:
        while ph.gauge() > ph.ratio * ph.level():
            time.sleep(0.0005)
        timed += 1
        a, b = ph.bracket(lambda n=timed: timing._pair(eager, comp, device, calls, 1, n))
        if ph.fast(len(ph.readings) - 1):
            e.append(a)
            c.append(b)
    return e, c, timed


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tries", type=int, default=4)
    ap.add_argument("--pairs", type=int, default=30)
    a = ap.parse_args()
    device = "cuda" if torch.cuda.is_available() else "cpu"
    print(
        f"{torch.cuda.get_device_name() if device == 'cuda' else 'cpu'}, torch {torch.__version__}"
    )
    for name, (eager, comp) in cases(device).items():
        with torch.no_grad():
            for _ in range(20):
                eager(), comp()
            timing.sync(device)
            ph = phase.Phases()
            for _ in range(200):  # the level from a first look at the gauge
                ph.bracket(lambda: None)
            est = timing.per_call(comp, device, 3, 20)["median"]
            calls = timing.block_calls(est, 2.0)
            for t in range(a.tries):
                for policy in (skip, wait) if t % 2 == 0 else (wait, skip):
                    t0 = time.perf_counter()
                    e, c, timed = policy(ph, eager, comp, device, calls, a.pairs)
                    s = time.perf_counter() - t0
                    sp, lo, hi = stats.ratio_of_medians(e, c)
                    print(
                        f"{name:7s} {policy.__name__:4s} try {t}: {s:5.2f} s to {len(e)} fast "
                        f"pairs, {len(e) / timed:4.0%} of timed rounds kept, speedup {sp:.3f} "
                        f"[{lo:.3f}-{hi:.3f}], eager {statistics.median(e):.1f} us, "
                        f"level {ph.level():.1f} us"
                    )


if __name__ == "__main__":
    main()
