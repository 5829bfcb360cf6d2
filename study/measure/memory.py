"""Peak memory of a step in steady state, and of the first call (compile included).

CUDA (``mem_source=cuda_caching_allocator``): garbage collected, the allocator's unused cache
released, peak statistics reset, the calls run, then ``torch.cuda.max_memory_allocated`` and
``max_memory_reserved``: the same method as PyTorch's dynamo benchmark harness, measured after
warm-up so that compile's transients do not count (``--use-warm-peak-memory``). Allocated is
what tensors held; reserved is what the caching allocator held from the driver, CUDA graphs'
private memory pools included: a graph replays into its pool's memory without allocating, so
for the CUDA-graph modes only reserved sees it (seen on the H200: every reduce-overhead
training cell read the same 481 MiB allocated, whatever its working set).

CPU (``mem_source=cpu_rss_peak_delta``): there is no caching allocator to ask, so the process's
peak resident memory is reset (``/proc/self/clear_refs``) and read back (``VmHWM``) around the
calls, minus the resident memory before them: how much the calls grew the process, which
includes the allocator's own slack. No reserved figure.
"""

from __future__ import annotations

import gc
from pathlib import Path


def _vm(key: str) -> int | None:
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith(key + ":"):
                return int(line.split()[1]) * 1024
    except OSError:
        return None
    return None


class Peak:
    """``with Peak(device) as p: ...`` then ``p.allocated``, ``p.reserved`` and ``p.step``
    (bytes or None). ``step`` is what the calls added on top of what was allocated when they
    began (CUDA; on the CPU the same as ``allocated``, already a growth): v3's compiled cells
    read an allocated peak exactly 32 MiB above v2's (matmul+bias n=64 under reduce-overhead:
    17,920 B in v2, 33,572,352 in v3), the size of a cuBLAS workspace on Hopper; most likely
    eager's, left allocated by the paired rounds before the compiled step's peak was taken.
    On the H200 (2026-12-03) that cell's ``step`` read 8,192 B under ``default``: the 32 MiB
    was there before the calls began (whose workspace it is stays inferred)."""

    def __init__(self, device: str):
        self.device = device
        self.allocated = self.reserved = self.step = None
        self.source = "cuda_caching_allocator" if device == "cuda" else "cpu_rss_peak_delta"

    def __enter__(self):
        gc.collect()
        if self.device == "cuda":
            import torch

            torch.cuda.synchronize()
            torch.cuda.empty_cache()  # reserved then starts from what is in use (and graph pools)
            torch.cuda.reset_peak_memory_stats()
            self._base = torch.cuda.memory_allocated()
        else:
            self._base = _vm("VmRSS")
            try:
                Path("/proc/self/clear_refs").write_text("5")  # resets VmHWM to VmRSS
            except OSError:
                self._base = None
        return self

    def __exit__(self, *exc):
        if self.device == "cuda":
            import torch

            torch.cuda.synchronize()
            self.allocated = torch.cuda.max_memory_allocated()
            self.reserved = torch.cuda.max_memory_reserved()
            self.step = self.allocated - self._base
        elif self._base is not None:
            hwm = _vm("VmHWM")  # 0: the calls reused freed pages; unknown, not zero
            self.allocated = None if hwm is None or hwm <= self._base else hwm - self._base
            self.step = self.allocated
        return False


def steady(step, device: str, calls: int = 3) -> Peak:
    """The peak of ``calls`` calls of a warmed-up step."""
    with Peak(device) as p:
        for _ in range(calls):
            out = step()
            del out
    return p
