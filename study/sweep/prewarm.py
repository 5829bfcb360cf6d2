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
# What a cell imports the first time it compiles (sys.modules after a compiled cell against the
# parent's, H200 VM): 0.7 s a compiled cell where the install has no bytecode cache. Optional.
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
