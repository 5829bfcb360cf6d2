"""Can a warm parent that imported MODULE fork a child that then uses CUDA and Inductor?

    python benchmarks/fork_probe.py [MODULE ...]     # on a CUDA host (one GPU is enough)

The sweep's warm parent (study.sweep.warm_parent) imports torch, Dynamo, Inductor and Triton once and
forks one child per cell. That only works when none of those imports initialises CUDA in the
parent: a forked child cannot use a CUDA context its parent made ("Cannot re-initialize CUDA in
forked subprocess"). For each module, a fresh process imports it (with
``PYTORCH_NVML_BASED_CUDA_CHECK=1``, as the server does, so ``torch.cuda.is_available`` asks
NVML instead of initialising the driver), reports ``torch.cuda.is_initialized()``, then forks a
child that points the Inductor and Triton caches at a fresh dir, compiles a small function with
Inductor, runs it on the GPU, and checks that the caches landed where the child said. Prints one
line per module.
"""

from __future__ import annotations

import subprocess
import sys

DEFAULT = [
    "torch",
    "torch._dynamo",
    "triton",
    "torch._inductor.config",
    "torch._inductor.codecache",
    "torch._inductor.compile_fx",
    "torch._inductor.select_algorithm",
    "torch.nn.attention.flex_attention",
    "study.sweep.warm_parent",
]

CHILD = r"""
import importlib, os, sys, tempfile, time
os.environ["PYTORCH_NVML_BASED_CUDA_CHECK"] = "1"
t = time.perf_counter()
importlib.import_module(sys.argv[1])
imp = time.perf_counter() - t
import torch
init = torch.cuda.is_initialized()
avail = torch.cuda.is_available()
r, w = os.pipe()
pid = os.fork()
if pid == 0:
    os.close(r)
    msg = "?"
    try:
        d = tempfile.mkdtemp()
        os.environ["TORCHINDUCTOR_CACHE_DIR"] = d + "/inductor"
        os.environ["TRITON_CACHE_DIR"] = d + "/triton"
        import torch._inductor.config as ic
        ic.compile_threads = 1
        x = torch.randn(64, 64, device="cuda")
        t = time.perf_counter()
        f = torch.compile(lambda a: (a @ a).relu() + 1)
        y = f(x)
        torch.cuda.synchronize()
        ok = torch.allclose(y, (x @ x).relu() + 1, atol=1e-2)
        ind = os.path.isdir(d + "/inductor") and bool(os.listdir(d + "/inductor"))
        tri = os.path.isdir(d + "/triton") and bool(os.listdir(d + "/triton"))
        msg = (f"child ok={ok} compile {time.perf_counter() - t:.1f}s "
               f"caches inductor={ind} triton={tri}")
    except Exception as e:
        msg = f"child FAILED: {type(e).__name__}: {str(e).splitlines()[0][:120]}"
    os.write(w, msg.encode())
    os._exit(0)
os.close(w)
os.waitpid(pid, 0)
msg = os.read(r, 4096).decode()
print(f"{sys.argv[1]:36s} import {imp:5.2f}s parent_cuda_init={init} avail={avail} | {msg}")
"""


def main(mods: list[str]) -> None:
    procs = [  # one process per module, all at once: each is independent of the others
        (
            m,
            subprocess.Popen(
                [sys.executable, "-c", CHILD, m],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            ),
        )
        for m in mods or DEFAULT
    ]
    for m, p in procs:
        out, err = p.communicate()
        tail = err.strip().splitlines()[-1:] if p.returncode else []
        print(out.strip() or f"{m:36s} failed: {tail}", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
