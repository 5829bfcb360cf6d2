"""A cell's own process: read ``RUN_DIR/cell.yaml``, run the cell, write its files.

Normally the cell is a child the warm parent forked (study.sweep.warm_parent calls ``cell_main``),
already pinned to its CPU cores, with ``CUDA_VISIBLE_DEVICES`` set to its GPU before CUDA starts
and its compile caches chosen by its environment (study.sweep.scheduler). ``python -m study.cell.worker RUN_DIR``
runs one cell in a plain process, by hand.

Files: ``kernels.csv`` and ``autotune.csv`` first, ``run.csv`` last, each atomically, so a run
dir with a ``run.csv`` is a finished cell.
"""

from __future__ import annotations

import os
import shutil
import sys
import time
from pathlib import Path

from study.cell import compiling
from study.cell.build import resolve_device
from study.config.cell_config import load_cell_config, plain
from study.config.env import nvidia_smi, proc_kb
from study.errors import Unsupported
from study.observe import ncu
from study.rows import io


def check_pinned(gpu: str | None) -> None:
    """Fail loudly unless CUDA really runs on GPU ``gpu``: CUDA initialised before the pin
    would leave the cell on GPU 0, sharing it with another cell. Compares the device's UUID
    with nvidia-smi's for that GPU (device_count alone is no proof: it reads the variable)."""
    if gpu is None:
        return
    import torch

    if not torch.cuda.is_available():
        raise SystemExit(
            f"GPU pinning failed: the cell asked for GPU {gpu}, but CUDA sees no GPU with "
            f"CUDA_VISIBLE_DEVICES={gpu}: is there a GPU {gpu} on this host? (hydra.launcher.n_jobs "
            "must not exceed the GPUs the sweep sees)"
        )
    got = str(torch.cuda.get_device_properties(0).uuid).removeprefix("GPU-")
    want = (nvidia_smi("uuid") or "").removeprefix("GPU-")  # blank without nvidia-smi
    if torch.cuda.device_count() != 1 or (want and got != want):
        raise SystemExit(
            f"GPU pinning failed: the cell asked for GPU {gpu} (uuid {want or '?'}) but CUDA runs "
            f"on {got} and sees {torch.cuda.device_count()} GPU(s): CUDA was initialised before "
            "CUDA_VISIBLE_DEVICES was set (in the warm parent: see benchmarks/fork_probe.py)."
        )


def cap_host_memory(cfg) -> str | None:
    """On the CPU, cap what this cell process may map beyond what it maps now (RLIMIT_AS), so
    a shape too large for the host fails in the allocator, as an ``oom`` row, instead of waking
    the kernel's OOM killer, which may take the sweep or anything else on the host with it.
    Returns the cap, in words, for the row's reason; None when there is none (CUDA, no /proc,
    ``cpu_mem_limit_gb=0``)."""
    import resource

    try:
        if resolve_device(plain(cfg.device)) != "cpu":
            return None
    except Unsupported:  # device=cuda without CUDA: the cell says so itself
        return None
    limit = cfg.cpu_mem_limit_gb
    if limit is not None and limit <= 0:
        return None
    mapped = proc_kb("/proc/self/status", "VmSize")
    if mapped is None:
        return None
    if limit is None:
        avail = proc_kb("/proc/meminfo", "MemAvailable")
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
    import torch

    # deferred: torch (by_hand sets the compile caches' environment before torch loads)
    from study.cell.phases import run_cell

    cfg = load_cell_config(str(run_dir / "cell.yaml"))
    if (extra or {}).get("gpu_index") is not None and plain(cfg.device) != "cpu":
        check_pinned(extra["gpu_index"])
    torch.set_num_threads(len(os.sched_getaffinity(0)))  # one thread per core the cell owns
    compiling.configure(cfg.compile.threads)
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
            t = time.time()
            row.update(ncu.run(cfg, run_dir, kernels))
            row["extra_s"] = (row.get("extra_s") or 0.0) + time.time() - t
        else:
            why = f"cell status {row['status']}" if row["status"] != "ok" else "needs a CUDA device"
            for tool in ("ncu", "nsys"):
                if cfg[tool].enabled:
                    row[f"{tool}_status"], row[f"{tool}_note"] = "unavailable", f"not run: {why}"
    io.write_csv(run_dir / "run.csv", [row], "runs")
    return row


def cell_main(run_dir: str, gpu: str | None = None, asked_at: float | None = None) -> None:
    """The forked child's target (study.sweep.warm_parent): pinned already; check the GPU, run the cell."""
    started = time.time()
    main(
        Path(run_dir),
        {"gpu_index": gpu, "prepare_s": started - asked_at if asked_at else None},
    )


def by_hand(run_dir: Path) -> None:
    """One cell in this process (a debugger's), with the compile caches the sweep gives it
    (study.sweep.scheduler). It rewrites the dir's rows: a resume runs the cell again."""
    from omegaconf import OmegaConf

    r = OmegaConf.to_container(OmegaConf.load(run_dir / "cell.yaml"), resolve=True)
    os.environ.update(compiling.cache_env(r["cache"], run_dir, Path(r["out_root"]), r))
    try:
        main(run_dir)
    finally:  # as the sweep does (study.sweep.rundir.finish): a cold cache is the cell's alone
        if r["cache"] == "cold":
            shutil.rmtree(run_dir / ".compile_cache", ignore_errors=True)


if __name__ == "__main__":
    if len(sys.argv) != 2 or not Path(sys.argv[1], "cell.yaml").is_file():
        sys.exit(
            "usage: python -m study.cell.worker RUN_DIR   (a cell's run dir: it holds cell.yaml)"
        )
    by_hand(Path(sys.argv[1]))
    sys.exit(0)
