"""Targets the tests ask the warm parent to fork (study.sweep.warm_parent), like study.cell.worker's."""

import json
from pathlib import Path


def _write(out: str, **values) -> None:
    Path(out).write_text(json.dumps(values))


def inductor_flag(out: str, set_to: bool | None = None) -> None:
    """Report Inductor's coordinate_descent_tuning, after setting it when asked."""
    import torch._inductor.config as ic

    if set_to is not None:
        ic.coordinate_descent_tuning = set_to
    _write(out, value=ic.coordinate_descent_tuning)


def dynamo_flag(out: str, set_to: bool | None = None) -> None:
    """Report Dynamo's suppress_errors and compile count, after setting / compiling."""
    import torch
    import torch._dynamo

    from study.cell.compiling import compiles

    if set_to is not None:
        torch._dynamo.config.suppress_errors = set_to
        torch.compile(lambda x: x + 1)(torch.ones(2))
    _write(out, value=torch._dynamo.config.suppress_errors, compiles=compiles())


def cuda_state(out: str) -> None:
    import os

    import torch

    _write(out, initialized=torch.cuda.is_initialized(), affinity=sorted(os.sched_getaffinity(0)))


def segv() -> None:
    import ctypes

    ctypes.string_at(0)


def hang(mb: int = 0) -> None:
    """Sleep forever; holding ``mb`` MiB written (its exit then takes a while)."""
    import time

    hold = bytearray(mb << 20)
    hold[::4096] = b"x" * len(hold[::4096])
    time.sleep(10**6)


def gc_state(out: str) -> None:
    """What a cell inherits of the warm parent's garbage collector."""
    import gc

    _write(out, frozen=gc.get_freeze_count(), enabled=gc.isenabled())


def open_fds(out: str) -> None:
    """What this cell holds open: fd -> what it points to."""
    import os

    fds = {}
    for fd in os.listdir("/proc/self/fd"):
        try:
            fds[fd] = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            pass  # the listing's own fd, closed by now
    _write(out, fds=fds)


def cuda_use(out: str, gpu: str | None = None) -> None:
    """Use CUDA in a forked cell (its parent never initialised it); with ``gpu``, prove the pin."""
    import os

    import torch

    from study.cell.worker import check_pinned

    check_pinned(gpu)
    x = torch.ones(1024, device="cuda")
    _write(
        out,
        total=float(x.sum().item()),
        name=torch.cuda.get_device_name(0),
        visible=os.environ.get("CUDA_VISIBLE_DEVICES"),
    )


def cpu_isa_state(out: str) -> None:
    """Whether this cell inherited the CPU ISA probe (functools caches) from its warm parent."""
    from torch._inductor import cpu_vec_isa

    known = cpu_vec_isa.valid_vec_isa_list.cache_info().currsize
    _write(out, known=known, cache_dir=__import__("os").environ.get("TORCHINDUCTOR_CACHE_DIR"))


def modules(out: str) -> None:
    """What this cell inherited imported from its warm parent."""
    import sys

    _write(out, inductor="torch._inductor.compile_fx" in sys.modules,
           phases="study.cell.phases" in sys.modules)  # fmt: skip


def start_method(out: str) -> None:
    """The default start method a cell's own multiprocessing uses (tqdm's lock, a DataLoader)."""
    import multiprocessing

    _write(out, method=multiprocessing.get_start_method())
