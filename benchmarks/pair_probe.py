"""Why does eager's training step read slower in a compiled cell's pairs than in its own cell?

v3's part3 pass=fwd_bwd on the H200 (flash, cuDNN): eager alone 437-448 µs a step, eager in
the compiled cells' paired blocks 549-876 µs, while the compiled step reads the same both ways.
This times eager flash-attention fwd_bwd (B8 H16 S1024 D64 bf16, causal; forward,
(out * g).sum(), backward, as study.cell.passes does) with study's own block timer
(study.measure.timing.block: synchronise, lead-in calls, events around N calls), in round-robin
rounds so that every condition sees the same host phases:

    python benchmarks/pair_probe.py [--rounds 40] [--compile default]

Conditions, each a median over the rounds (µs a step), in one process. First, before anything
is compiled, eager in blocks of 10 calls (a per-call chunk's length) and of 3 (a training
cell's pair block at timing.block_ms=2). Then torch.compile of the same forward, warmed, and
rounds of: eager x10 after eager, eager x3 after eager, compiled x3, eager x3 after compiled,
compiled x10, eager x10 after compiled.
Reading it: eager x3 >> eager x10 says the block is too short; 'after eager' once compiled >>
before says compiling slows eager's step in the process; 'after compiled' >> 'after eager'
says a compiled block just before slows it. Each row also gives the 10th percentile.
--one-core times the rounds with every thread of the process on one core, as study's cells
are timed (timing.one_core): against a run without it, it says whether spreading the main and
autograd threads over cores is what moves the step.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def main() -> None:
    import torch
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel

    from study.measure.pinning import OneCore
    from study.measure.timing import block

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=40)
    ap.add_argument("--compile", default="default", help="torch.compile mode")
    ap.add_argument("--backend", default="flash", choices=["flash", "cudnn"])
    ap.add_argument("--seq", type=int, default=1024)
    ap.add_argument("--device", default="cuda", help="cpu: a smoke test of the script")
    ap.add_argument("--one-core", action="store_true",
                    help="time with every thread on one core, as study does (timing.one_core)")  # fmt: skip
    a = ap.parse_args()
    dev, dt = a.device, torch.bfloat16
    torch.manual_seed(0)
    q, k, v = (
        torch.randn(8, 16, a.seq, 64, device=dev, dtype=dt, requires_grad=True) for _ in "qkv"
    )
    g = torch.randn(8, 16, a.seq, 64, device=dev, dtype=dt)
    pin = {"flash": SDPBackend.FLASH_ATTENTION, "cudnn": SDPBackend.CUDNN_ATTENTION}[a.backend]

    def attn(q, k, v):
        with sdpa_kernel(pin):
            return F.scaled_dot_product_attention(q, k, v, is_causal=True)

    def step_of(fn):
        def step():
            for t in (q, k, v):
                t.grad = None
            (fn(q, k, v) * g).sum().backward()

        return step

    eager = step_of(attn)
    for _ in range(10):
        eager()
    if dev == "cuda":
        torch.cuda.synchronize()
    times: dict[str, list[float]] = {}

    def put(name, us):
        times.setdefault(name, []).append(us)

    half = a.rounds // 2
    for _ in range(half):  # before compile
        put("eager x10", block(eager, dev, 10, 1))
        put("eager x3", block(eager, dev, 3, 1))
    compiled_attn = torch.compile(attn, mode=None if a.compile == "default" else a.compile)
    compiled = step_of(compiled_attn)
    for _ in range(5):
        compiled()
    if dev == "cuda":
        torch.cuda.synchronize()
    one = OneCore(a.one_core).__enter__()  # the compiled step exists: from here on, timing
    block(eager, dev, 10, 1)  # so that the first round's first block follows eager too
    for _ in range(a.rounds):  # what each block follows is in its name
        put("eager x10 after eager", block(eager, dev, 10, 1))
        put("eager x3 after eager", block(eager, dev, 3, 1))
        put("compiled x3", block(compiled, dev, 3, 1))
        put("eager x3 after compiled", block(eager, dev, 3, 1))
        put("compiled x10", block(compiled, dev, 10, 1))
        put("eager x10 after compiled", block(eager, dev, 10, 1))
    import time

    def split(fn, calls=50):
        """Host µs a call in the forward, the loss and the backward (perf_counter, no sync)."""
        f = b = 0.0
        for _ in range(calls):
            for t in (q, k, v):
                t.grad = None
            t0 = time.perf_counter()
            y = fn(q, k, v)
            t1 = time.perf_counter()
            (y * g).sum().backward()
            t2 = time.perf_counter()
            f, b = f + t1 - t0, b + t2 - t1
        if dev == "cuda":
            torch.cuda.synchronize()
        return f / calls * 1e6, b / calls * 1e6

    for name, fn in (("eager", attn), ("compiled", compiled_attn)):
        fs, bs = zip(*(split(fn) for _ in range(5)), strict=True)
        print(f"  host split, {name:8s}: forward {statistics.median(fs):7.1f} µs, loss and "
              f"backward {statistics.median(bs):7.1f} µs a call (median of 5 x 50 calls)")  # fmt: skip
    threads = []  # which core each of this process's threads last ran on (/proc: field 39)
    for task in sorted(Path("/proc/self/task").glob("*")):
        try:
            comm = (task / "comm").read_text().strip()
            cpu = (task / "stat").read_text().rsplit(")", 1)[1].split()[36]
        except (OSError, IndexError):
            continue
        threads.append(f"{comm}@{cpu}")
    print(f"  threads (name@last core): {' '.join(threads)}; allowed cores: "
          f"{sorted(os.sched_getaffinity(0))}")  # fmt: skip
    where = f"all threads on core {one.core}" if one.core is not None else "threads spread"
    print(f"{a.backend} fwd_bwd, compile={a.compile}, {where} after compiling, torch {torch.__version__}, "
          f"{torch.cuda.get_device_name() if dev == 'cuda' else 'CPU'}: µs a step, median [p10] over rounds")  # fmt: skip
    for name, xs in times.items():
        p10 = statistics.quantiles(xs, n=10)[0] if len(xs) > 1 else xs[0]
        print(f"  {name:26s} {statistics.median(xs):8.1f}  [{p10:8.1f}]  ({len(xs)} rounds)")


if __name__ == "__main__":
    main()
