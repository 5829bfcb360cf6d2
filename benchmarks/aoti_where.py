"""Where does AOTInductor die on this machine? Each step in its own process, with faulthandler.

    python benchmarks/aoti_where.py [cuda|cpu]

Steps, for an nn.Linear(1024, 1024) on 256 rows in bf16: export; aoti_compile_and_package;
aoti_load_package; one call. A step that kills its process (SIGSEGV) is named with the
Python stack faulthandler printed, so the failure is placed in the build, the loader or the
call. Prints one line per step and the versions that matter (torch, CUDA, compiler).
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile

STEP = r"""
import faulthandler, sys, time, torch
faulthandler.enable()
dev, step, pkg = sys.argv[1], sys.argv[2], sys.argv[3]
m = torch.nn.Linear(1024, 1024).to(dev, torch.bfloat16).eval().requires_grad_(False)
x = torch.randn(256, 1024, device=dev, dtype=torch.bfloat16)
t = time.perf_counter()
if step == "compile":
    ep = torch.export.export(m, (x,))
    print("export ok", flush=True)
    torch._inductor.aoti_compile_and_package(ep, package_path=pkg)
    print(f"compile+package ok ({time.perf_counter() - t:.1f} s)", flush=True)
else:
    f = torch._inductor.aoti_load_package(pkg)
    print("load ok", flush=True)
    y = f(x)
    if dev == "cuda":
        torch.cuda.synchronize()
    err = (y.float() - m(x).float()).abs().max().item()
    print(f"call ok, max abs err vs eager {err:.3g}", flush=True)
"""


def main(dev: str) -> int:
    import torch

    cxx = subprocess.run(["c++", "--version"], capture_output=True, text=True).stdout
    print(f"torch {torch.__version__}, CUDA {torch.version.cuda}, c++: {cxx.splitlines()[:1]}")
    with tempfile.TemporaryDirectory() as d:
        pkg = os.path.join(d, "linear.pt2")
        for step in ("compile", "load_and_call"):
            p = subprocess.run(
                [sys.executable, "-c", STEP, dev, step, pkg], capture_output=True, text=True
            )
            tail = "\n    ".join((p.stdout + p.stderr).strip().splitlines()[-25:])
            print(f"{step}: exit {p.returncode}\n    {tail}")
            if p.returncode != 0:
                return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "cuda"))
