"""Hydra entry point: ``python -m study.run -m variant=naive,flash compile=off,default``.

Thin on purpose: compose, validate, hand the job to ``study.sweep.run_job``, which runs the
cell in its own process and writes its rows. Tests call ``run_job`` without Hydra.
"""

from __future__ import annotations

import datetime as dt
import sys
from pathlib import Path

import hydra
from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig, OmegaConf

from study.config import ConfigError, plain, register_configs, validate

_SWEEP_IDS: dict = {}
_SAID = set()


def sweep_id(out_root: str, resume) -> str:
    """A new timestamped sweep dir name, or with resume=true the newest existing one."""
    key = (out_root, bool(resume))
    if key not in _SWEEP_IDS:
        root = Path(out_root) / "sweeps"
        existing = sorted(p.name for p in root.glob("*") if p.is_dir()) if root.exists() else []
        if resume and existing:
            _SWEEP_IDS[key] = existing[-1]
        else:
            _SWEEP_IDS[key] = dt.datetime.now().strftime("%Y-%m-%d_%H-%M-%S")
    return _SWEEP_IDS[key]


def job_dirname(overrides: str) -> str:
    """Hydra's override dirname, shortened with a hash when it would overflow a file name."""
    if len(overrides) <= 160:
        return overrides
    import hashlib

    return overrides[:140] + ",#" + hashlib.sha1(overrides.encode()).hexdigest()[:10]


if not OmegaConf.has_resolver("study_job_dirname"):
    OmegaConf.register_new_resolver("study_job_dirname", job_dirname)
if not OmegaConf.has_resolver("study_sweep_id"):
    OmegaConf.register_new_resolver("study_sweep_id", sweep_id, use_cache=True)
register_configs()


def _gpu_slots(cfg: DictConfig) -> int:
    """GPUs to share among the cells run at once: gpu_slots, or under the joblib launcher
    every GPU this process sees (n_jobs may exceed it: the extra cells prepare meanwhile)."""
    if cfg.gpu_slots > 0:
        return cfg.gpu_slots
    launcher = HydraConfig.get().launcher
    if "JoblibLauncher" in str(launcher.get("_target_", "")):
        import torch

        return torch.cuda.device_count()
    return 0


def _say_device_once(cfg: DictConfig) -> None:
    if "device" in _SAID:
        return
    _SAID.add("device")
    import torch

    dev = plain(cfg.device)
    if dev == "auto" and not torch.cuda.is_available():
        print(
            "[study] no CUDA GPU found: running on the CPU with the small CPU shapes "
            "(conf/family/*.yaml, key shapes.cpu); pass device=cuda to require a GPU.",
            flush=True,
        )


@hydra.main(version_base="1.3", config_path="../conf", config_name="config")
def main(cfg: DictConfig) -> None:
    try:
        validate(cfg)
        from study.inductor import unknown_keys

        bad = unknown_keys(dict(cfg.compile.inductor))
        if bad:
            raise ConfigError(
                f"compile.inductor: unknown Inductor config key(s) {bad}; "
                "see torch._inductor.config for the names"
            )
        slots = _gpu_slots(cfg)
        if slots > 0:
            from study.worker import gpu_id

            try:
                gpu_id(slots - 1)
            except ValueError as e:
                raise ConfigError(str(e)) from None
    except ConfigError as e:
        print(f"[study] config error: {e}", file=sys.stderr, flush=True)
        raise SystemExit(1) from None  # the user's mistake: the message, not a traceback
    from study.sweep import run_job

    hc = HydraConfig.get()
    run_dir = Path(hc.runtime.output_dir)
    multirun = hc.mode.name == "MULTIRUN"
    sweep_dir = Path(hc.sweep.dir) if multirun else run_dir
    _say_device_once(cfg)
    run_job(cfg, run_dir, sweep_dir, slots=slots)


if __name__ == "__main__":
    main()
