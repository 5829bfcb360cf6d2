"""The study's launcher: every cell of the sweep from this process, on ``n_jobs`` slots.

``hydra/launcher=study`` (the default, one slot) and ``hydra/launcher=gpus`` (``n_jobs`` slots,
one GPU each) are this launcher (``hydra_plugins/study_plugins`` registers it). It holds one
study.sweep.scheduler.Scheduler: one warm parent, started while the sweeper checks the sweep,
and a child per cell. For each job it lets Hydra set the job up (``run_job``: its output dir
and ``HydraConfig``) with the config the sweeper composed, and hands the cell to the
scheduler, which returns once the cell is forked; cells end (and their rows are written)
while later jobs are set up. Settings: ``n_jobs`` (cells at once), ``prewarm`` (the warm
parent's per-process work, study.sweep.prewarm), ``pycache`` (auto, a dir, or off:
study.sweep.pycache). Any other launcher (``slurm``, Hydra's ``basic``) runs ``study.run.main``
per job, which runs its one cell the same way, from a warm parent of its own.
"""

from __future__ import annotations

from pathlib import Path

from hydra.plugins.launcher import Launcher as HydraLauncher

from study.config.cell_config import plain
from study.config.check import device_error
from study.config.cores import check_spec
from study.sweep.scheduler import Scheduler, gpu_id


class Launcher(HydraLauncher):
    def __init__(self, n_jobs: int = 1, prewarm: bool = True, pycache: str = "auto") -> None:
        self.n_jobs = max(1, int(n_jobs))
        self.prewarm = bool(prewarm)
        self.pycache = str(pycache)
        self.scheduler = None
        self.composed: dict[tuple, object] = {}

    def setup(self, *, hydra_context, task_function, config) -> None:
        self.hydra_context, self.task_function, self.config = hydra_context, task_function, config

    def start(self, eager: bool = False) -> None:
        """The scheduler and its warm parent, now (it imports while the sweep is checked);
        ``eager``: no cell of the sweep compiles (the parent leaves Inductor out)."""
        if self.scheduler is None:
            cores = str(self.config.cores)  # a bad core list is the check's to report
            cores = cores if check_spec(cores) is None else "auto"
            self.scheduler = Scheduler(self.n_jobs, cores, self.prewarm, self.pycache, eager=eager)
            self.scheduler.parent()  # it imports while the sweep is checked

    def variants(self) -> dict:
        """{registered variant: its shape keys}, from the warm parent (no torch here)."""
        self.start()
        return self.scheduler.status.get("variants") or {}

    def slots_error(self, configs) -> str | None:
        """Why the slots cannot run this sweep's CUDA cells (no GPU, more slots than GPUs), or
        None."""
        self.start()
        if why := device_error(configs, bool(self.scheduler.status["cuda_available"])):
            return why
        slots = self.n_jobs
        if slots <= 1 or not any(c is not None and plain(c.device) != "cpu" for c in configs):
            return None
        gpus = int(self.scheduler.status["device_count"])
        if gpus == 0:
            return None  # CPU cells on core groups
        try:
            gpu_id(slots - 1)
        except ValueError as e:
            return str(e)
        if slots > gpus:
            return (
                f"{slots} cells at once (hydra.launcher.n_jobs) but this host has {gpus} GPU(s): "
                f"set hydra.launcher.n_jobs<={gpus}; no two cells share a GPU"
            )
        return None

    def plan(self, pts, configs, t0: float) -> None:
        """What the sweeper checked: the composed configs, the sweep's size and start."""
        self.composed = {tuple(p): c for p, c in zip(pts, configs, strict=True)}
        self.start()
        self.scheduler.total, self.scheduler.t0 = len(pts), t0
        self.scheduler.say_device(configs)

    def launch(self, job_overrides, initial_job_idx: int):
        from hydra.core.utils import run_job, setup_globals
        from omegaconf import open_dict

        setup_globals()
        self.start()
        Path(str(self.config.hydra.sweep.dir)).mkdir(parents=True, exist_ok=True)
        runs = []
        loader = self.hydra_context.config_loader
        for idx, overrides in enumerate(job_overrides, start=initial_job_idx):
            cfg = self.composed.pop(tuple(overrides), None)
            if cfg is None:
                cfg = loader.load_sweep_config(self.config, list(overrides))
            with open_dict(cfg):
                cfg.hydra.job.id = cfg.hydra.job.num = idx
            runs.append(
                run_job(
                    hydra_context=self.hydra_context,
                    task_function=self._submit,
                    config=cfg,
                    job_dir_key="hydra.sweep.dir",
                    job_subdir_key="hydra.sweep.subdir",
                )
            )
        self.scheduler.wait()  # the sweeper closes the launcher after its last batch
        return runs

    def _submit(self, cfg) -> None:
        from hydra.core.hydra_config import HydraConfig

        hc = HydraConfig.get()
        self.scheduler.submit(cfg, Path(hc.runtime.output_dir), Path(hc.sweep.dir))

    def close(self) -> None:
        """Kill what still runs and end the warm parent (the end of a launch, or Ctrl-C)."""
        if self.scheduler is not None:
            self.scheduler.close()
            self.scheduler = None
