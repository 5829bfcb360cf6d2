"""What moves a host-bound cell between processes? Prints one line per fresh process.

    python benchmarks/host_probe.py [REPEATS]      # on a CUDA host

For nn.Linear (1024 x 32 -> 64, bf16: a few microseconds of GPU work, so the per-call latency
is the host's), each setting runs REPEATS fresh processes. A process pins itself (or not),
sets torch's threads, compiles with Inductor's async-compile pool on or off, and prints the
compile time, the eager and compiled per-call medians (CUDA events around each call), and the
paired ratio from alternating blocks. The settings that matter become study's defaults
(study.measure.host_load); the figures are in benchmarks/README.md.
"""

from __future__ import annotations

import os
import subprocess
import sys

SETTINGS = {  # name: (cores or None for the inherited set, compile_threads or None)
    "unpinned, pool": (None, None),
    "unpinned, no pool": (None, 1),
    "1 core, no pool": ([3], 1),
    "4 cores, no pool": ([3, 4, 5, 6], 1),
}

CHILD = r"""
import json, os, statistics, sys, time
cores, threads = json.loads(sys.argv[1]), json.loads(sys.argv[2])
if cores:
    os.sched_setaffinity(0, cores)
import torch
if cores:
    torch.set_num_threads(len(cores))
import torch._inductor.config as ic
if threads:
    ic.compile_threads = threads
lin = torch.nn.Linear(32, 64).cuda().bfloat16().eval().requires_grad_(False)
x = torch.randn(1024, 32, device="cuda", dtype=torch.bfloat16)
comp = torch.compile(lin)
t = time.perf_counter(); comp(x); torch.cuda.synchronize(); first = time.perf_counter() - t

def per_call(fn, n=2000):
    for _ in range(50): fn(x)
    torch.cuda.synchronize()
    ev = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(n)]
    for s, e in ev:
        s.record(); fn(x); e.record()
    torch.cuda.synchronize()
    return statistics.median(s.elapsed_time(e) * 1e3 for s, e in ev)

def block(fn, k=50):
    torch.cuda.synchronize()
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    s.record()
    for _ in range(k): fn(x)
    e.record(); torch.cuda.synchronize()
    return s.elapsed_time(e) * 1e3 / k

eager, compiled = per_call(lin), per_call(comp)
pairs = [(block(lin), block(comp)) for _ in range(40)]
ratio = statistics.median(a for a, _ in pairs) / statistics.median(b for _, b in pairs)
print(f"first call {first:5.1f}s  eager {eager:6.1f} us  compiled {compiled:6.1f} us  "
      f"cross {eager / compiled:4.2f}x  paired {ratio:4.2f}x  threads {torch.get_num_threads()}")
"""


def main(repeats: int) -> None:
    import json

    for name, (cores, threads) in SETTINGS.items():
        for _ in range(repeats):
            r = subprocess.run(
                [sys.executable, "-c", CHILD, json.dumps(cores), json.dumps(threads)],
                capture_output=True,
                text=True,
                env={**os.environ, "PYTHONUNBUFFERED": "1"},
            )
            line = r.stdout.strip() or f"failed: {r.stderr.strip().splitlines()[-1:]}"
            print(f"{name:20s} {line}", flush=True)


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 3)
