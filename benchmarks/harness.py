"""A benchmark of the harness itself: fidelity, overhead and noise. Prints figures; asserts nothing.

    python benchmarks/harness.py                # on a CUDA machine (CPU: fidelity of the CPU paths only)

1. Fidelity, like against like (target within +-3%):
   - device time, do_bench mode, against triton.testing.do_bench on the same callable;
   - device time, graph-replay mode, against do_bench (different things: shown, not targeted);
   - per-call latency against a plain loop of CUDA events written here, independently;
   - kernel time per step against the same kernels' durations summed straight from the trace JSON.
2. Overhead per cell (target <= 1 s on the GPU): the cell's process wall time minus compile
   (first call), minus the measured phases (timing, profiling); and the process start + imports.
3. Noise (target <= 2%): coefficient of variation of the medians of one cell run N times, each
   in a fresh process.
"""

from __future__ import annotations

import gzip
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def pct(a, b):
    return 100.0 * (a - b) / b if a is not None and b else float("nan")


def compose(*overrides: str):
    from hydra import compose as hcompose
    from hydra import initialize_config_dir

    import study.run  # noqa: F401 - registers the config schema

    with initialize_config_dir(config_dir=str(ROOT / "conf"), version_base="1.3"):
        return hcompose(config_name="config", overrides=list(overrides))


def fidelity(variant: str, mode: str) -> None:
    import torch

    from study.cell import compiling
    from study.cell.build import build_workload, resolve_device, sdpa_pin
    from study.measure import timing
    from study.observe import trace

    cfg = compose(f"variant={variant}", f"compile={mode}")  # the family's shapes for this device
    dev = resolve_device("auto")
    _, _, wl = build_workload(cfg, dev)
    with sdpa_pin(wl.sdpa_backend):
        fn = compiling.make(wl.fn, mode, False, False)

        def step():
            return fn(*wl.inputs)

        for _ in range(5):
            step()
        lat = timing.per_call(step, dev, 10, 200)["median"]
        # An independent loop of events, written here.
        if dev == "cuda":
            s = [torch.cuda.Event(enable_timing=True) for _ in range(200)]
            e = [torch.cuda.Event(enable_timing=True) for _ in range(200)]
            for a, b in zip(s, e, strict=True):
                a.record()
                fn(*wl.inputs)
                b.record()
            torch.cuda.synchronize()
            plain = statistics.median(a.elapsed_time(b) * 1e3 for a, b in zip(s, e, strict=True))
        else:
            xs = []
            for _ in range(200):
                t0 = time.perf_counter()
                fn(*wl.inputs)
                xs.append((time.perf_counter() - t0) * 1e6)
            plain = statistics.median(xs)
        print(
            f"  per-call latency {lat:9.1f} us vs plain event loop {plain:9.1f} us  ({pct(lat, plain):+.1f}%)"
        )
        if dev == "cuda":
            from triton.testing import do_bench

            ours = timing.device_time(step, "do_bench", compiling.uses_cudagraphs(mode), 20, 10)[
                "median"
            ]
            ref = do_bench(step, warmup=25, rep=100, return_mode="median") * 1e3
            print(
                f"  device time (do_bench mode) {ours:9.1f} us vs triton do_bench {ref:9.1f} us  ({pct(ours, ref):+.1f}%)"
            )
            if not compiling.uses_cudagraphs(mode):
                g = timing.device_time(step, "graph", False, 20, 10)["median"]
                print(
                    f"  device time (graph replay)  {g:9.1f} us vs triton do_bench {ref:9.1f} us  ({pct(g, ref):+.1f}%, "
                    "different notion: no L2 flush, no launch gaps)"
                )
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "t.json.gz"
            ev = trace.profile(step, dev, 1, 1, 3, True, path)
            rows, summ = trace.parse(ev, dev)
            raw = json.load(gzip.open(path, "rt"))["traceEvents"]
        if dev == "cuda":
            direct = (
                sum(x["dur"] for x in raw if x.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset"))
                / 3
            )
            print(
                f"  kernel time/step {summ['kernel_us_per_step']:9.1f} us vs trace sum {direct:9.1f} us  "
                f"({pct(summ['kernel_us_per_step'], direct):+.1f}%)"
            )


def one_cell(out: Path, *overrides: str) -> tuple[dict, float]:
    t0 = time.perf_counter()
    p = subprocess.run(
        [sys.executable, "-m", "study.run", f"out_root={out}", *overrides],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    wall = time.perf_counter() - t0
    if p.returncode != 0:
        raise SystemExit(p.stderr[-2000:])
    run_csv = sorted(out.glob("runs/*/run.csv"))[-1]
    from study.rows import io

    return io.read_csv(run_csv)[0], wall


def overhead_and_noise(variant: str, mode: str, n: int) -> None:
    meds = []
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(n):
            row, wall = one_cell(Path(tmp) / str(i), f"variant={variant}", f"compile={mode}")
            meds.append(float(row["latency_median_us"]))
            if i == 0:
                cell = float(row["wall_s"])
                first = float(row["first_call_s"] or 0)
                measured = float(row["measure_s"]) + float(row["profile_s"])
                print(
                    f"  cell wall {cell:.2f} s = first call {first:.2f} s + measured {measured:.2f} s "
                    f"+ overhead {cell - first - measured:.2f} s;  process start + imports + Hydra {wall - cell:.2f} s"
                )
    mean = statistics.mean(meds)
    cv = 100 * statistics.stdev(meds) / mean if len(meds) > 1 else float("nan")
    print(
        f"  noise: medians over {n} fresh processes {', '.join(f'{m:.1f}' for m in meds)} us -> CV {cv:.2f}%"
    )


if __name__ == "__main__":
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    for variant, mode in (("flash", "off"), ("naive", "default"), ("mlp", "default")):
        print(f"fidelity: {variant} / {mode}")
        fidelity(variant, mode)
    print("overhead and noise: flash / off")
    overhead_and_noise("flash", "off", n)
    print("overhead: naive / default")
    overhead_and_noise("naive", "default", 1)
