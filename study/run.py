"""Hydra entry point: ``python -m study.run -m variant=naive,flash compile=off,default``.

Thin on purpose. A multirun goes through the study's sweeper and launcher (study/sweep), which
check the whole sweep, then run every cell from this process. ``main`` is Hydra's task for the
rest: a single run (no ``-m``), or one job of another launcher (``hydra/launcher=slurm``); it
runs its one cell the same way, with a scheduler of one slot (study.sweep.scheduler).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

# torch.cuda.is_available() asks NVML instead of initialising CUDA, in this process and in the
# warm parent it starts (a forked cell cannot use a CUDA context its parent made).
os.environ.setdefault("PYTORCH_NVML_BASED_CUDA_CHECK", "1")

import hydra  # noqa: E402
from hydra.core.hydra_config import HydraConfig  # noqa: E402
from omegaconf import DictConfig, OmegaConf  # noqa: E402

from study.config.cell_config import register_configs  # noqa: E402
from study.config.check import device_error
from study.config.usage import fail  # noqa: E402
from study.rows import io
from study.rows.summary import summary
from study.sweep.names import name_of
from study.sweep.scheduler import Scheduler
from study.sweep.sweepdir import SWEEP_IDS, clock, sweep_id  # noqa: E402, F401 - the resolver's
from study.workloads.check import check_config


def job_dirname(task, exclude=()) -> str:
    """A job's run dir name from its overrides (study.sweep.names). The study's sweeper names
    every point itself, knowing which keys differ between them; this is for other sweepers."""
    return name_of([str(o) for o in task], [str(k) for k in exclude])


if not OmegaConf.has_resolver("study_job_dirname"):
    OmegaConf.register_new_resolver("study_job_dirname", job_dirname)
if not OmegaConf.has_resolver("study_sweep_id"):
    OmegaConf.register_new_resolver("study_sweep_id", sweep_id, use_cache=True)
register_configs()


def finished_since(sweep_dir: Path, t0: float) -> int:
    """Cells of the sweep finished since it started (their run.csv's age)."""
    return sum(p.stat().st_mtime >= t0 - 1 for p in io.run_csvs(sweep_dir))


@hydra.main(version_base="1.3", config_path="../conf", config_name="config")
def main(cfg: DictConfig) -> None:
    """One cell: a single run, or one job of a launcher other than the study's."""
    hc = HydraConfig.get()
    multirun = hc.mode.name == "MULTIRUN"
    if not multirun:  # a multirun's points were checked by the study's sweeper
        why = check_config(cfg)
        if why:
            fail(why)
    run_dir = Path(hc.runtime.output_dir)
    sweep_dir = Path(hc.sweep.dir) if multirun else run_dir
    launcher = hc.launcher
    total, t0 = clock(sweep_dir) if multirun else (0, 0.0)
    opts = {
        "prewarm": bool(launcher.get("prewarm", True)),
        "pycache": str(launcher.get("pycache", "auto")),
    }
    with Scheduler(1, str(cfg.cores), total=total, t0=t0, **opts) as sched:
        if multirun:  # one job of another launcher (slurm): its [k/N] counts the whole sweep
            sched.sweep_done = finished_since
        else:
            if why := device_error([cfg], bool(sched.status["cuda_available"])):
                fail(why)
            sched.say_device([cfg])
        sched.submit(cfg, run_dir, sweep_dir)
    if not multirun:
        code = summary(run_dir)
        (run_dir / ".runs.lock").unlink(missing_ok=True)  # a clean end: no lock is left
        sys.exit(code)


if __name__ == "__main__":
    from study.config.usage import hydra_errors_are_config_errors

    hydra_errors_are_config_errors()
    try:
        main()
    except KeyboardInterrupt as e:  # before the sweep started (SIGTERM: Terminated)
        print("[study] interrupted.", file=sys.stderr, flush=True)
        sys.exit(143 if type(e).__name__ == "Terminated" else 130)
