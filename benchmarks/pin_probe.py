"""Which imports initialise CUDA? (They must not run before a cell's GPU pin: study.worker.)

    python benchmarks/pin_probe.py [MODULE ...]      # on a host with 2+ GPUs

For each module, a fresh process imports it with every GPU visible, then pins
``CUDA_VISIBLE_DEVICES`` to the last GPU and asks CUDA which device it really runs on (its
UUID against nvidia-smi's). "pin holds" means the module is safe to import in
``study.worker.prepare``; "pin ignored" means the import initialised CUDA. Prints one line per
module with the import time. On the H200 pair, importing ``torch._inductor.compile_fx`` early
put every compiled cell on GPU 0, which is why prepare leaves it out (3-5 s per compiled cell).
"""

from __future__ import annotations

import subprocess
import sys

DEFAULT = [
    "torch",
    "torch._dynamo",
    "torch.utils.flop_counter",
    "study.cell",
    "triton",
    "torch._inductor.config",
    "torch._inductor.utils",
    "torch._inductor.codecache",
    "torch._inductor.select_algorithm",
    "torch._inductor.compile_fx",
]

CHILD = r"""
import os, subprocess, sys, time
t = time.perf_counter()
import importlib
importlib.import_module(sys.argv[1])
dt = time.perf_counter() - t
last = sys.argv[2]
os.environ["CUDA_VISIBLE_DEVICES"] = last
import torch
got = str(torch.cuda.get_device_properties(0).uuid).removeprefix("GPU-")
want = subprocess.run(["nvidia-smi", "--query-gpu=uuid", "--format=csv,noheader", "-i", last],
                      capture_output=True, text=True).stdout.strip().removeprefix("GPU-")
print(f"{sys.argv[1]:40s} {dt:6.2f} s  " + ("pin holds" if got == want else "pin IGNORED"))
"""


def main(mods: list[str]) -> None:
    try:
        out = subprocess.run(
            ["nvidia-smi", "--query-gpu=index", "--format=csv,noheader"],
            capture_output=True,
            text=True,
        )
    except FileNotFoundError:
        sys.exit("pin_probe needs nvidia-smi on PATH and a host with at least 2 GPUs")
    gpus = out.stdout.split()
    if len(gpus) < 2:
        sys.exit("pin_probe needs a host with at least 2 GPUs (nvidia-smi lists fewer)")
    for m in mods or DEFAULT:
        r = subprocess.run(
            [sys.executable, "-c", CHILD, m, gpus[-1]], capture_output=True, text=True
        )
        print(r.stdout.strip() or f"{m:40s} failed: {r.stderr.strip().splitlines()[-1:]}")


if __name__ == "__main__":
    main(sys.argv[1:])
