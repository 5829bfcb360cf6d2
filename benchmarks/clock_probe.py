"""Do sustained GEMMs lower the H200's clocks, and does a GPU-bound call's latency follow?

v3 on the H200 (2026-12-02): part1's matmul+bias at n=4096 compiled under `default` read 195 µs
a call with 180 µs of device time (a CUDA-graph replay), in all 3 of its processes, where v2
read 178 against 179; the eager step inside those processes' pairs read 243 µs against 215 in
eager's own cell. The MLP alike (242 against 227). Flash, GPU-bound too, read its device time.
One candidate: the clocks drop under a long run of back-to-back GEMMs (power or thermal), and
a cell's timing runs longer than a replay. This times one workload in chunks of back-to-back
calls (CUDA events around each chunk) for a few seconds at a time, eager then compiled then
eager, while nvidia-smi samples the SM clock, power, temperature and the clock-event reasons
every 50 ms, and prints per second: the median µs a call, and what the GPU said meanwhile.

    python benchmarks/clock_probe.py [--n 4096] [--seconds 6] [--chunk 10] [--one-core]

Reading it: µs a call rising as the SM clock falls (reasons: SW power cap, HW slowdown) says
the clocks; a flat clock with a slower compiled phase says the process; slower with --one-core
than without says the pinning.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import time

FIELDS = "timestamp,clocks.sm,power.draw,temperature.gpu,{}.active"


def smi() -> subprocess.Popen:
    """nvidia-smi sampling every 50 ms (clocks_event_reasons on newer drivers, else
    clocks_throttle_reasons), one CSV line each."""
    for reasons in ("clocks_event_reasons", "clocks_throttle_reasons"):
        q = FIELDS.format(reasons)
        ok = subprocess.run(["nvidia-smi", f"--query-gpu={q}", "--format=csv,noheader,nounits"],
                            capture_output=True, text=True)  # fmt: skip
        if ok.returncode == 0:
            return subprocess.Popen(
                ["nvidia-smi", f"--query-gpu={q}", "--format=csv,noheader,nounits", "-lms", "50"],
                stdout=subprocess.PIPE, text=True)  # fmt: skip
    raise SystemExit("nvidia-smi answers neither clocks_event_reasons nor clocks_throttle_reasons")


def run(fn, seconds: float, chunk: int, label: str, marks: list) -> None:
    import torch

    t_end = time.time() + seconds
    while time.time() < t_end:
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        for _ in range(chunk):
            fn()
        b.record()
        b.synchronize()
        marks.append((time.time(), label, 1e3 * a.elapsed_time(b) / chunk))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--n", type=int, default=4096)
    p.add_argument("--seconds", type=float, default=6.0)
    p.add_argument("--chunk", type=int, default=10)
    p.add_argument("--one-core", action="store_true",
                   help="every thread on one core, as study's cells are timed (timing.one_core)")  # fmt: skip
    args = p.parse_args()
    if args.one_core:  # before torch starts its threads: they inherit the main thread's mask
        import os

        os.sched_setaffinity(0, {max(os.sched_getaffinity(0))})
    import torch

    x = torch.randn(args.n, args.n, device="cuda", dtype=torch.bfloat16)
    w = torch.randn(args.n, args.n, device="cuda", dtype=torch.bfloat16)
    bias = torch.randn(args.n, device="cuda", dtype=torch.bfloat16)

    def eager():
        return x @ w + bias

    compiled = torch.compile(eager)
    for _ in range(3):
        eager(), compiled()
    torch.cuda.synchronize()
    proc, marks = smi(), []
    time.sleep(0.5)
    for label, fn in (("eager", eager), ("compiled", compiled), ("eager", eager)):
        run(fn, args.seconds, args.chunk, label, marks)
    time.sleep(0.2)
    proc.terminate()
    samples = []
    for line in proc.communicate()[0].splitlines():
        ts, sm, pw, temp, why = (s.strip() for s in line.split(","))
        t = time.mktime(time.strptime(ts.split(".")[0], "%Y/%m/%d %H:%M:%S"))
        samples.append((t + float("0." + ts.split(".")[1]), float(sm), float(pw), temp, why))
    t0 = marks[0][0]
    print(f"matmul+bias n={args.n} bf16, chunks of {args.chunk} calls; per second:")
    print("  s  phase     us/call  SM MHz  power W  temp C  clock-event reasons")
    for sec in range(int(marks[-1][0] - t0) + 1):
        ms = [m for m in marks if sec <= m[0] - t0 < sec + 1]
        ss = [s for s in samples if sec <= s[0] - t0 < sec + 1]
        if not ms:
            continue
        lat = statistics.median(m[2] for m in ms)
        sm = statistics.median(s[1] for s in ss) if ss else float("nan")
        pw = statistics.median(s[2] for s in ss) if ss else float("nan")
        why = ",".join(sorted({s[4] for s in ss})) if ss else "?"
        temp = ss[-1][3] if ss else "?"
        print(f"{sec:3d}  {ms[0][1]:<8} {lat:8.1f}  {sm:6.0f}  {pw:7.0f}  {temp:>6}  {why}")


if __name__ == "__main__":
    main()
