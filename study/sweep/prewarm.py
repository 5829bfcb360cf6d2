"""What the warm parent does once before it forks: imports, and per-process work of no device.

Every forked cell inherits it, so no cell pays for it again, and nothing here may touch CUDA
(the parent asks the driver itself before it serves: ``driver_initialised``). Found with
``benchmarks/cell_profile.py``; what each item saves a cell: docs/method.md ("Isolation").
"""

from __future__ import annotations

import ctypes
import importlib
import os
import time
from pathlib import Path

# What an eager cell imports: all a sweep whose cells never compile needs (study.sweep.sweeper.eager_only).
WARM_EAGER = ("torch", "torch.utils.flop_counter", "torch.profiler", "study.cell.phases",
              "study.cell.worker")  # fmt: skip
# And for a sweep that compiles: Dynamo, Inductor and FlexAttention too.
WARM = WARM_EAGER + (
    "torch._dynamo",
    "torch._inductor.compile_fx",
    "torch._inductor.select_algorithm",
    "torch._inductor.codecache",
    "torch.nn.attention.flex_attention",
)
# What a cell imports the first time it compiles: measured data, in warm_compile.txt (it says how).
WARM_COMPILE = tuple(
    m for ln in (Path(__file__).parent / "warm_compile.txt").read_text().splitlines()
    if (m := ln.split("#")[0].strip())
)  # fmt: skip


def driver_initialised() -> bool | None:
    """Has this process initialised the CUDA driver (cuInit), torch or any library behind its
    back? ``cuDeviceGetCount`` answers CUDA_ERROR_NOT_INITIALIZED (3) before cuInit, 0 after,
    without initialising it. None where there is no driver, or it answers anything else."""
    try:
        cuda = ctypes.CDLL("libcuda.so.1")
    except OSError:
        return None
    rc = cuda.cuDeviceGetCount(ctypes.byref(ctypes.c_int()))
    return {0: True, 3: False}.get(rc)


def _import(mod: str) -> None:
    if mod.endswith(".*"):  # the package and every module in it
        import pkgutil

        pkg = importlib.import_module(mod[:-2])
        for info in pkgutil.iter_modules(pkg.__path__, pkg.__name__ + "."):
            importlib.import_module(info.name)
    else:
        importlib.import_module(mod)


def prewarm(gpus: int, compiled: bool = True) -> dict:
    """Work every cell would repeat that needs no device, done once: the modules a first compile
    imports (``WARM_COMPILE``; one that fails is named, and left to the cell), the op definitions
    of CUDA's lazy init, Triton's key (the root of every Inductor cache key) and, with GPUs,
    Triton's driver helper (built with gcc into the parent's Triton cache, not each cell's empty
    one). Returns what it did: seconds, or why an item was skipped. ``gpus``: what NVML counts;
    ``compiled=False``: no cell compiles, only the op definitions are done."""
    import torch

    did: dict = {}
    if compiled:
        t = time.perf_counter()
        failed = []
        for mod in WARM_COMPILE:
            try:
                _import(mod)
            except Exception as e:  # noqa: BLE001 - an optional import; named in the status
                failed.append(f"{mod} ({type(e).__name__})")
        did["imports"] = time.perf_counter() - t
        if failed:
            did["imports_skipped"] = "; ".join(failed)
    register = getattr(torch.cuda, "_register_triton_kernels", None)
    if register is not None:
        did["triton_ops"] = _timed(register)
    if not compiled:
        return did
    try:
        from torch._inductor.runtime.triton_compat import HAS_TRITON, triton_key
    except ImportError:
        return did
    if not HAS_TRITON:  # a CPU build: nothing more to warm
        return did
    did["triton_key"] = _timed(triton_key)
    if gpus > 0:  # Triton asks torch.cuda.is_available(): NVML says yes without the driver
        did["triton_driver"] = _timed(_triton_driver)
    else:
        did["triton_driver"] = "skipped: no GPU counted by NVML"
    return did


# Where the CPU ISA probe keeps its test programs between sweeps: a host property, not a cell's.
ISA_DIR = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "study" / "cpu-isa"


def cpu_isa() -> float | str:
    """Inductor's probe of the CPU's vector ISAs, once, before the sweep's first compiled CPU
    cell: a C++ test program per ISA, each loaded in a fresh Python (15 s on 2 cores in a cell's
    empty cache dir, 3.3 s with its programs kept in ``ISA_DIR``). The answer is the host's, kept
    per process, so forked cells inherit it; the parent hears no exit while it probes."""
    from unittest import mock

    from torch._inductor.cpu_vec_isa import pick_vec_isa

    # Inductor's cache_dir() writes the variable back: patch.dict restores the parent's own
    with mock.patch.dict(os.environ, {"TORCHINDUCTOR_CACHE_DIR": str(ISA_DIR)}):
        return _timed(pick_vec_isa)


def _triton_driver() -> None:
    from triton.runtime import driver

    getattr(driver.active, "utils", None)  # the helper itself (older Triton: a lazy proxy)


def _timed(fn) -> float | str:
    t = time.perf_counter()
    try:
        fn()
    except Exception as e:  # noqa: BLE001 - the cell does this again, and fails there if it must
        return f"skipped: {type(e).__name__}: {str(e)[:120]}"
    return time.perf_counter() - t
