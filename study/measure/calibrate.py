"""Device ceilings, measured: dense matmul rate per dtype and device copy bandwidth.

    python -m study.measure.calibrate                 # this machine's device (cuda if present)
    python -m study.measure.calibrate device=cpu dtypes=[fp32]
    python -m study.measure.calibrate calibration_file=OUT/ceilings.json

Results are cached per device name, dtype and torch version in ~/.cache/study/ceilings.json,
or the file given as ``calibration_file`` (the cells' config key of that name). Cells read them for ``pct_peak_*`` and ``bound``; with no entry those
columns stay empty: a ceiling is never guessed.

CUDA: the fastest of square matmuls at 4096, 6144 and 8192 (2048 and 4096 for fp32), timed
with CUDA events, back to back, no L2 flush (the "without flush" figure;
``matmul_tflops_do_bench`` keeps the do_bench, flushed one, at the winning size); a 1 GiB
device-to-device copy, counting bytes read plus written. CPU: the faster of 512^3 and 1024^3,
and a 256 MiB copy on the CPU threads torch uses. One size alone can sit below what a
workload of another size reaches (8192^3 ran 0.5% below a compiled 4096^3 matmul on the H200).
"""

from __future__ import annotations

import functools
import json
import os
import statistics
import sys
import time
from pathlib import Path

from study.config import env

DTYPES = {"bf16": "bfloat16", "fp16": "float16", "fp32": "float32"}
# Square matmul sizes tried per device, (16-bit, fp32); the ceiling is the fastest of them.
MATMUL_SIZES = {
    "cuda": ((4096, 6144, 8192), (2048, 4096)),
    "cpu": ((512, 1024), (512, 1024)),
}


def cache_path(path: str | None = None) -> Path:
    """``path`` (the config's calibration_file) if given, else ~/.cache/study/ceilings.json."""
    if path:
        return Path(path).expanduser()
    return Path.home() / ".cache" / "study" / "ceilings.json"


def _key(device_name, dtype, torch_version) -> str:
    return f"{device_name}|{dtype}|{torch_version}"


def load(path: str | None = None) -> dict:
    p = cache_path(path)
    try:
        got = json.loads(p.read_text())
    except (OSError, json.JSONDecodeError, UnicodeDecodeError):
        return {}
    return got if isinstance(got, dict) else {}  # a list or a number is no ceilings file


def lookup(device_name, dtype, torch_version, path: str | None = None) -> dict:
    """{'tflops': ..., 'gbps': ...} for this device/dtype/torch, or {} when not calibrated.
    ``path``: a ceilings file (the config's ``calibration_file``), else the default."""
    if not device_name or not dtype or not torch_version:
        return {}
    return load(path).get(_key(device_name, dtype, torch_version), {})


def entries(path: str | None = None) -> list[tuple[str, str, str, dict]]:
    """Every ceiling in a file as (device name, dtype, torch version, entry), for readers of it
    (``analysis.tables.predict``); entries without both ``tflops`` and ``gbps`` are left out."""
    return [(*k.split("|"), v) for k, v in load(path).items()
            if k.count("|") == 2 and isinstance(v, dict) and {"tflops", "gbps"} <= set(v)]  # fmt: skip


def store(device_name, dtype, torch_version, result: dict, path: str | None = None) -> Path:
    p = cache_path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    data = load(path)
    data[_key(device_name, dtype, torch_version)] = result
    tmp = p.with_name(f".{p.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(data, indent=2, sort_keys=True))
    os.replace(tmp, p)
    return p


def _time_us(fn, device: str, reps: int) -> float:
    import torch

    for _ in range(3):
        fn()
    samples = []
    for _ in range(reps):
        if device == "cuda":
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            s.record()
            fn()
            e.record()
            torch.cuda.synchronize()
            samples.append(s.elapsed_time(e) * 1e3)
        else:
            t0 = time.perf_counter_ns()
            fn()
            samples.append((time.perf_counter_ns() - t0) / 1e3)
    return statistics.median(samples)


def measure(device: str, dtype: str) -> dict:
    import torch

    dt = getattr(torch, DTYPES[dtype])
    gen = torch.Generator(device=device).manual_seed(0)
    best = None
    for n in MATMUL_SIZES[device][dtype == "fp32"]:  # the roof is the best of several sizes
        a = torch.randn(n, n, device=device, dtype=dt, generator=gen)  # random, never zeros
        b = torch.randn(n, n, device=device, dtype=dt, generator=gen)
        mm = functools.partial(torch.matmul, a, b)
        us = _time_us(mm, device, 10 if device == "cuda" else 5)
        rate = 2 * n**3 / (us * 1e-6) / 1e12
        if best is None or rate > best[0]:
            best = (rate, n, us, a, b)
        del a, b, mm
    rate, n, us, a, b = best
    mm = functools.partial(torch.matmul, a, b)
    out = {
        "tflops": rate,
        "matmul_n": n,
        "matmul_us": us,
        "matmul_sizes": ",".join(map(str, MATMUL_SIZES[device][dtype == "fp32"])),
    }
    if device == "cuda":
        try:
            from triton.testing import do_bench

            ms = do_bench(mm, warmup=25, rep=200, return_mode="median")
            out["matmul_tflops_do_bench"] = 2 * n**3 / (ms * 1e-3) / 1e12
        except ImportError:
            pass
    del a, b, mm
    nbytes = (1 << 30) if device == "cuda" else (256 << 20)
    src = torch.empty(nbytes, dtype=torch.uint8, device=device).random_(generator=gen)
    dst = torch.empty_like(src)
    us = _time_us(lambda: dst.copy_(src), device, 20 if device == "cuda" else 5)
    out["gbps"] = 2 * nbytes / (us * 1e-6) / 1e9  # read + write
    out["copy_bytes"] = nbytes
    return out


def calibrate(
    device: str = "auto", dtypes=("bf16", "fp16", "fp32"), path: str | None = None
) -> dict:
    import torch

    if device == "auto":
        device = "cuda" if torch.cuda.is_available() else "cpu"
    info = env.collect(device)
    results = {}
    for d in dtypes:
        r = measure(device, d)
        r["measured_at"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        store(info["device_name"], d, info["torch_version"], r, path)
        results[d] = r
        print(
            f"{info['device_name']} {d}: matmul {r['tflops']:.1f} TFLOP/s (n={r['matmul_n']}), "
            f"copy {r['gbps']:.0f} GB/s (read+write)"
            + (
                f", do_bench {r['matmul_tflops_do_bench']:.1f} TFLOP/s"
                if "matmul_tflops_do_bench" in r
                else ""
            )
        )
    print(f"cached in {cache_path(path)}")
    return results


def main(argv: list[str]) -> None:
    device, dtypes, path = "auto", ["bf16", "fp16", "fp32"], None
    for a in argv:
        if a.startswith("device="):
            device = a.split("=", 1)[1]
        elif a.startswith("dtypes="):
            dtypes = [x for x in a.split("=", 1)[1].strip("[]").split(",") if x]
        elif a.startswith("calibration_file="):
            path = a.split("=", 1)[1] or None
        else:
            sys.exit(
                f"unknown argument {a!r}; usage: python -m study.measure.calibrate "
                "[device=cuda|cpu|auto] [dtypes=[bf16,fp32]] [calibration_file=PATH]"
            )
    bad = [d for d in dtypes if d not in DTYPES]
    if bad:
        sys.exit(f"unknown dtype(s) {bad}; allowed: {', '.join(DTYPES)}")
    calibrate(device, dtypes, path)


if __name__ == "__main__":
    main(sys.argv[1:])
