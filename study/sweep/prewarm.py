"""What the warm cell server does before it forks: imports, and per-process work of no device.

A cell forked from the server inherits all of it, so no cell pays for it again. Every item
here must leave CUDA alone: the server checks with the driver itself before it serves
(``driver_initialised``). Found with ``benchmarks/cell_profile.py`` (cProfile of forked cells
on the H200); benchmarks/README.md gives the figures.

What a cell's ``first_call_s`` (its compile time) no longer holds, as a consequence: Triton's
driver helper and the modules a first compile imports, which a fresh Python process pays once,
before its first compile. Median ``first_call_s`` of part3's compiled cells: 1.90 s in the
``results/h200`` v2 rows, which hold them, 0.83 s without.
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
# What a cell imports the first time it compiles (sys.modules after a compiled cell, against
# the server's, on the H200 VM: 180 modules). Where the installed packages have no bytecode
# caches (the H200 image), each child compiled their sources again: 0.7 s a compiled cell.
# Optional: a name this torch or Triton lacks is skipped.
WARM_COMPILE = (
    "torch._dynamo.backends.*",  # Dynamo lists every backend when it looks one up
    "torch._dynamo.dce_extra_outputs",
    "torch._dynamo.repro.after_dynamo",
    "torch._inductor.bounds",
    "torch._inductor.choices",
    "torch._inductor.codegen.cuda_combined_scheduling",
    "torch._inductor.codegen.cpp_wrapper_cpu_array_ref",
    "torch._inductor.codegen.cpp_wrapper_gpu",
    "torch._inductor.codegen.cpp_wrapper_mps",
    "torch._inductor.codegen.cpu_device_op_overrides",
    "torch._inductor.codegen.cuda.device_op_overrides",
    "torch._inductor.codegen.halide",
    "torch._inductor.codegen.mps",
    "torch._inductor.codegen.mps_device_op_overrides",
    "torch._inductor.codegen.mtia.device_op_overrides",
    "torch._inductor.codegen.pallas",
    "torch._inductor.codegen.python_wrapper_mtia",
    "torch._inductor.codegen.xpu.device_op_overrides",
    "torch._inductor.codegen.memory_planning",
    "torch._inductor.codegen.segmented_tree",
    "torch._inductor.codegen.wrapper_fxir",
    "torch._inductor.compiler_bisector",
    "torch._inductor.extern_node_serializer",
    "torch._functorch._activation_checkpointing.remat_using_tags_for_fwd_loss_bwd_graph_pass",
    "torch._inductor.fx_passes.apply_gumbel_max_trick",
    "torch._inductor.fx_passes.efficient_conv_bn_eval",
    "torch._inductor.fx_passes.freezing_patterns",
    "torch._inductor.fx_passes.fuse_attention",
    "torch._inductor.fx_passes.mkldnn_fusion",
    "torch._inductor.fx_passes.pad_mm",
    "torch._inductor.fx_passes.quantization",
    "torch._inductor.fx_passes.serialized_patterns.*",  # every module of the package
    "torch._inductor.hooks",
    "torch._inductor.runtime.caching",
    "torch._subclasses.schema_check_mode",
    "torch.distributed.tensor.experimental",
    "torch.export._trace",
    "torch.fx.experimental.validator",
    "torch.utils._cpp_embed_headers",
    "multiprocessing.synchronize",
    "sympy.tensor.tensor",
    "triton.compiler.code_generator",
    "triton.experimental.gluon",
    "triton.tools.tensor_descriptor",
    "numpy.ma",
    "sympy.combinatorics",
    "study.cell.calibrate",
    "study.rows.io",
    "study.rows.revealed",
)  # the workloads themselves the server imports always (its status names their variants)


def driver_initialised() -> bool | None:
    """Has this process initialised the CUDA driver (cuInit)? Asks the driver itself, without
    initialising it: before cuInit, ``cuDeviceGetCount`` answers CUDA_ERROR_NOT_INITIALIZED (3),
    after it CUDA_SUCCESS (0). None where there is no driver or it answers anything else (a
    stub library, no device). Stricter than ``torch.cuda.is_initialized()``, which knows only
    torch's own state: a library that called cuInit behind torch's back shows here."""
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
    """Work every cell would repeat that needs no device, done once; returns what it did
    (seconds, or why an item was skipped). ``gpus``: the GPUs NVML counts (0: none, or no NVML);
    ``compiled=False``: no cell compiles, only CUDA's op registration is done.

    - ``WARM_COMPILE``: the modules a cell imports when it first compiles (0.7 s a compiled
      cell on the H200 image, which has no pyc). A module that fails to import is skipped
      and named: it is the cell's to fail on, not the server's.
    - CUDA's lazy init registers Triton's sparse kernels as ops (``torch._TritonLibrary``):
      once per process and idempotent, 0.30 s of every cell's first CUDA call. Op definitions
      only; no device.
    - ``triton_key``: a hash of Triton's own files (libtriton.so included), the root of every
      Inductor cache key, cached per process: 0.50 s of a compiled cell's ``setup_s``.
    - Triton's active driver, with GPUs only: its ``cuda_utils`` helper, which Triton builds
      with the C compiler into the ``TRITON_CACHE_DIR`` and loads. Each cell has its own empty
      cache dir (cache=cold), so each compiled cell ran gcc again (0.31 s). The helper is
      Triton's runtime, the same for every cell, not a compile result; here it lands in the
      server's Triton cache (``~/.triton/cache`` by default).
    """
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
    """Inductor's probe of the CPU's vector ISAs, done once in the warm parent, before it forks
    the sweep's first compiled CPU cell (not at its start: an eager sweep never needs it).

    ``pick_vec_isa`` builds a test program per ISA with the C++ compiler and loads each in a
    fresh Python: 15 s in an empty cache dir, 3.3 s in a kept one (2-core CPU box). Each
    cell has its own empty cache dir (cache=cold), so every compiled CPU cell paid the 15 s,
    inside its ``compile_s`` (naive/default: 16.1 s, of which its own compile about 1 s). The
    answer is the host's and is kept per process (functools caches), so forked cells inherit
    it. Its test programs go to ``ISA_DIR``; the cells' own cache dirs are left alone. The
    parent serves nothing while it probes: with several slots, another cell's exit is heard
    (and its row written) up to that long late, once per sweep.
    """
    saved = os.environ.get("TORCHINDUCTOR_CACHE_DIR")
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = str(ISA_DIR)
    try:
        from torch._inductor.cpu_vec_isa import pick_vec_isa

        return _timed(pick_vec_isa)
    finally:  # Inductor's cache_dir() writes the variable back: the parent's own stays as it was
        if saved is None:
            os.environ.pop("TORCHINDUCTOR_CACHE_DIR", None)
        else:
            os.environ["TORCHINDUCTOR_CACHE_DIR"] = saved


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
