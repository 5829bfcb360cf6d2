"""A cell's own process: ``python -m study.worker RUN_DIR``.

Reads ``RUN_DIR/cell.yaml`` (written by study.sweep), runs the cell and writes its files:
``kernels.csv`` and ``autotune.csv`` first, ``run.csv`` last, each atomically, so a run dir
with a ``run.csv`` is a finished cell. The parent chose the compile caches through this
process's environment before torch was imported.

Under the multi-GPU launcher the process first does everything that touches no GPU (the
interpreter, torch and Dynamo imports: seconds per cell), then says so (``SLOT_WAIT``
in the run dir) and reads a GPU slot from stdin. The parent (study.sweep) hands out a free slot
(a file lock per GPU in the sweep dir) and holds it until this process and its children are
gone, so the next cell on that GPU never meets this one's memory. ``CUDA_VISIBLE_DEVICES`` is
pinned before CUDA is initialised. With more jobs than GPUs, the next cells' start-up overlaps
the running cells' GPU work, and no two cells ever share a GPU. The wait for a slot does not
count against ``timeout_s``.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

SLOT_WAIT = ".slot_wait"


def prepare(inductor: bool = False) -> None:
    """Imports done before a GPU slot is taken. ``inductor``: Inductor's too (seconds)."""
    import torch  # noqa: F401
    import torch._dynamo  # noqa: F401  - FlopCounterMode imports it on first use, eager too
    import torch.utils.flop_counter  # noqa: F401

    import study.cell  # noqa: F401

    # Inductor only when early_inductor() says so: with it imported here, every compiled cell on
    # the H200 pair ran on GPU 0 whatever its slot, so its imports initialise CUDA (which one
    # was not traced), after which CUDA_VISIBLE_DEVICES is ignored. check_pinned catches that.
    if inductor:
        import torch._inductor.compile_fx  # noqa: F401
        import torch._inductor.select_algorithm  # noqa: F401  - the autotune hook's import


def early_inductor(run_dir: Path, slots: int) -> bool:
    """Whether a cell may import Inductor before its GPU slot: a compiled cell of a sweep with
    one GPU slot. Slot 0 is the first GPU the process sees, which is where CUDA starts whether
    or not an import initialised it before the pin; with two or more slots it is not safe."""
    if slots != 1:
        return False
    from omegaconf import OmegaConf

    return OmegaConf.load(run_dir / "cell.yaml").compile.mode not in ("off", False)  # YAML: off


def gpu_id(slot: int) -> str:
    """The slot-th GPU the sweep can see: its ``CUDA_VISIBLE_DEVICES`` entry, else ``slot``."""
    visible = [
        g.strip() for g in os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",") if g.strip()
    ]
    if visible and slot >= len(visible):
        raise ValueError(
            f"GPU slot {slot} but CUDA_VISIBLE_DEVICES lists {len(visible)} GPU(s): "
            f"set gpu_slots<={len(visible)} or widen CUDA_VISIBLE_DEVICES."
        )
    return visible[slot] if visible else str(slot)


def pin_gpu(slot: int | None) -> str | None:
    """Pin this process to GPU slot ``slot`` (see gpu_id); returns the GPU id."""
    if slot is None:
        return None
    gpu = gpu_id(slot)
    os.environ["CUDA_VISIBLE_DEVICES"] = gpu
    return gpu


def check_pinned(gpu: str | None) -> None:
    """Fail loudly unless CUDA really runs on GPU ``gpu``: an import that initialised CUDA before
    the pin would leave the cell on GPU 0, sharing it with another cell. Compares the device's
    UUID with nvidia-smi's for that GPU (device_count alone is no proof: it reads the variable)."""
    if gpu is None:
        return
    import torch

    if not torch.cuda.is_available():
        return
    from study.env import nvidia_smi

    got = str(torch.cuda.get_device_properties(0).uuid).removeprefix("GPU-")
    want = (nvidia_smi("uuid") or "").removeprefix("GPU-")  # blank without nvidia-smi
    if torch.cuda.device_count() != 1 or (want and got != want):
        raise SystemExit(
            f"GPU pinning failed: the cell asked for GPU {gpu} (uuid {want or '?'}) but CUDA runs "
            f"on {got} and sees {torch.cuda.device_count()} GPU(s): CUDA was initialised before "
            "CUDA_VISIBLE_DEVICES was set. Something in study.worker.prepare touched CUDA; "
            "use overlap_startup=false meanwhile."
        )


def _proc_kb(path: str, key: str) -> float | None:
    try:
        for line in Path(path).read_text().splitlines():
            if line.startswith(key + ":"):
                return float(line.split()[1])
    except OSError:
        return None
    return None


def cap_host_memory(cfg) -> str | None:
    """On the CPU, cap what this cell process may map beyond what it maps now (RLIMIT_AS), so
    a shape too large for the host fails in the allocator, as an ``oom`` row, instead of waking
    the kernel's OOM killer, which may take the sweep or anything else on the host with it.
    Returns the cap, in words, for the row's reason; None when there is none (CUDA, no /proc,
    ``cpu_mem_limit_gb=0``)."""
    import resource

    from study.cell import Unsupported, resolve_device
    from study.config import plain

    try:
        if resolve_device(plain(cfg.device)) != "cpu":
            return None
    except Unsupported:  # device=cuda without CUDA: the cell says so itself
        return None
    limit = cfg.cpu_mem_limit_gb
    if limit is not None and limit <= 0:
        return None
    mapped = _proc_kb("/proc/self/status", "VmSize")
    if mapped is None:
        return None
    if limit is None:
        avail = _proc_kb("/proc/meminfo", "MemAvailable")
        if avail is None:
            return None
        limit = 0.8 * avail / 2**20
    cap = int(mapped * 1024 + limit * 2**30)
    _, hard = resource.getrlimit(resource.RLIMIT_AS)
    if hard != resource.RLIM_INFINITY:
        cap = min(cap, hard)
    resource.setrlimit(resource.RLIMIT_AS, (cap, hard))
    return (
        f"this CPU cell could map {limit:.1f} GB beyond its start "
        "(cpu_mem_limit_gb; default 80% of the host's available memory)"
    )


def main(run_dir: Path, extra: dict | None = None) -> dict:
    from study import io
    from study.cell import run_cell
    from study.config import load_cell_config

    cfg = load_cell_config(str(run_dir / "cell.yaml"))
    capped = cap_host_memory(cfg)
    row, kernels, autotune = run_cell(cfg, run_dir)
    if capped and row.get("status") == "oom":
        row["reason"] = f"{row.get('reason') or ''} | {capped}"
    row.update(extra or {})
    io.write_csv(run_dir / "kernels.csv", kernels, "kernels")
    if autotune:
        io.write_csv(run_dir / "autotune.csv", autotune, "autotune")
    if cfg.ncu.enabled or cfg.nsys.enabled:
        if row["status"] == "ok" and row["device"] == "cuda":
            from study import ncu

            row.update(ncu.run(cfg, run_dir, kernels))
        else:
            why = f"cell status {row['status']}" if row["status"] != "ok" else "needs a CUDA device"
            for tool in ("ncu", "nsys"):
                if cfg[tool].enabled:
                    row[f"{tool}_status"], row[f"{tool}_note"] = "unavailable", f"not run: {why}"
    io.write_csv(run_dir / "run.csv", [row], "runs")
    return row


def _touch(path: Path) -> None:
    path.write_text(f"{time.time():.3f}\n")


def cli(run_dir: Path) -> None:
    launched = float(os.environ.get("STUDY_LAUNCHED_AT") or time.time())
    slots = int(os.environ.get("STUDY_GPU_SLOTS") or 0)
    prepare(inductor=early_inductor(run_dir, slots))
    ready = time.time()
    slot = None
    if slots > 0:
        _touch(run_dir / SLOT_WAIT)  # prepared: the parent answers with a free GPU slot
        line = sys.stdin.readline().strip()
        if not line.isdigit():
            raise SystemExit(f"expected a GPU slot on stdin from study.sweep, got {line!r}")
        slot = int(line)
    taken = time.time()
    gpu = pin_gpu(slot) if slot is not None else os.environ.get("STUDY_GPU_ID")  # parent-pinned
    check_pinned(gpu)
    main(
        run_dir,
        {
            "prepare_s": ready - launched,
            "gpu_wait_s": taken - ready if slot is not None else None,
            "gpu_index": gpu,
        },
    )


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python -m study.worker RUN_DIR   (RUN_DIR holds cell.yaml)")
    cli(Path(sys.argv[1]))
    sys.exit(0)
