"""Every point of a sweep, composed as its job will be and checked, before the first cell.

``validate_sweep`` expands the sweep the way Hydra's basic sweeper will, composes each point
through the app's own config loader, and validates it (study.config.validate, unknown keys,
Inductor keys, the variant's registration). Any bad point stops the run with one message that
lists every bad point, and exit status 2.

Composing is pure Python, 0.1-0.2 s a point (Hydra builds each point's defaults tree and loads
and merges its YAML files again): a part3 of 35 points took 6-8 s in one process on the H200 VM,
before its first cell, on one GPU and on two. On a host with cores to spare, a sweep of many
points is composed by forked processes, each a share of the points (``check_workers``). They
are forked before the sweep starts any thread or process of its own (``meanwhile``: the cell
servers, the job processes), so they hold none of their pipes or locks; they ignore Ctrl-C,
which the main process handles. The one check that imports torch, whether a variant is
registered (study.workloads.registry), is left to the main process, once per variant, while
the forked ones compose.
"""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Callable

from omegaconf import DictConfig, OmegaConf, flag_override

POINTS_PER_WORKER = 6  # fewer points than this a forked process are not worth its start
MAX_WORKERS = 8


def _overrides(config: DictConfig):
    from hydra.core.global_hydra import GlobalHydra
    from hydra.core.override_parser.overrides_parser import OverridesParser

    params = config.hydra.sweeper.get("params") or {}
    args = [f"{k}={v}" for k, v in params.items()] + list(config.hydra.overrides.task)
    gh = GlobalHydra.instance()  # its config loader expands glob(...) over a config group
    loader = gh.hydra.config_loader if gh.is_initialized() else None
    return OverridesParser.create(config_loader=loader).parse_overrides(args)


def points(config: DictConfig) -> list[list[str]]:
    """Every job's overrides, in the order Hydra's basic sweeper runs them."""
    from hydra._internal.core_plugins.basic_sweeper import BasicSweeper

    return [p for batch in BasicSweeper.split_arguments(_overrides(config), None) for p in batch]


def _compose(overrides: list[str], config_name: str, master: DictConfig | None) -> DictConfig:
    """A point's config, composed as Hydra's sweeper will compose its job: through the app's
    own config loader, with the run's hydra overrides (``hydra.searchpath`` among them)."""
    from hydra.core.global_hydra import GlobalHydra

    if master is not None:
        cfg = GlobalHydra.instance().hydra.config_loader.load_sweep_config(master, list(overrides))
        with flag_override(cfg, ["struct", "readonly"], [False, False]):
            cfg.pop("hydra", None)
        return cfg
    from hydra import compose

    return compose(config_name=config_name, overrides=overrides)


def check_point(
    overrides: list[str], config_name: str, master: DictConfig | None = None
) -> str | None:
    """Why this point of the sweep cannot run, or None."""
    return _check_point(overrides, config_name, master)[0]


def _check_point(
    overrides: list[str], config_name: str, master: DictConfig | None, registry: bool = True
) -> tuple[str | None, tuple | None]:
    """(why this point cannot run, or None; with ``registry=False``, the registered variant it
    asks for, ``(variant.name, shape_sweep.key)``, for the caller to look up, else None)."""
    try:
        cfg = _compose(overrides, config_name, master)
    except Exception as e:  # noqa: BLE001 - Hydra's own message names the bad override
        return " ".join(str(e).split("Config search path")[0].split()), None
    why = check_config(cfg, registry=registry)
    if why or registry or cfg.variant.get("target") or cfg.variant.name == "custom":
        return why, None
    return None, (str(cfg.variant.name), cfg.shape_sweep.key)


@functools.cache
def _schema(conf_class) -> DictConfig:
    """The structured config of ``conf_class``, built once (merge copies it)."""
    return OmegaConf.structured(conf_class)


def check_config(cfg: DictConfig, registry: bool = True) -> str | None:
    """Why a composed cell config cannot run (unknown keys, bad values), or None. With
    ``registry=False``, whether its variant is registered is left to the caller."""
    from omegaconf.errors import ConfigKeyError, ValidationError

    from study.config import CellConf, ConfigError, validate

    try:
        OmegaConf.merge(_schema(CellConf), {k: v for k, v in cfg.items() if k != "hydra"})
    except ConfigKeyError as e:
        key = getattr(e, "full_key", None) or str(e).split("'")[1]
        return (
            f"unknown key {key!r}: the study has no such setting (see SCHEMA.md and "
            "`python -m study.run --cfg job` for the keys)"
        )
    except ValidationError as e:
        return " ".join(str(e).split()[:40])
    try:
        validate(cfg, registry=registry)
        if cfg.compile.inductor:
            from study.inductor import unknown_keys

            bad = unknown_keys(dict(cfg.compile.inductor))
            if bad:
                raise ConfigError(
                    f"compile.inductor: unknown Inductor config key(s) {bad}; "
                    "see torch._inductor.config for the names"
                )
    except ConfigError as e:
        return str(e)
    return None


def check_workers(n_points: int, cores: int | None = None) -> int:
    """Forked processes to compose ``n_points`` with (0: this process alone): one per
    ``POINTS_PER_WORKER`` points, at most a quarter of this process's cores (the cell servers
    import torch meanwhile) and ``MAX_WORKERS``."""
    if cores is None:
        cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else 1
    n = min(MAX_WORKERS, cores // 4, n_points // POINTS_PER_WORKER)
    return n if n >= 2 else 0


# What the forked processes check: set just before they are forked, inherited by them.
_JOB: dict = {}


def _quiet() -> None:
    """A forked checker: Ctrl-C is the main process's to handle (no traceback from each)."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _check_share(indices: list[int]) -> list[tuple[int, str | None, tuple | None]]:
    pts, name, config = _JOB["points"], _JOB["name"], _JOB["config"]
    return [(i, *_check_point(pts[i], name, config, registry=False)) for i in indices]


def _check_all(
    pts: list[list[str]], config: DictConfig, name: str, meanwhile: Callable | None, workers: int
) -> list[str | None]:
    """Why each point cannot run (None: it can)."""
    if workers < 2:
        if meanwhile:
            meanwhile(pts)
        return [check_point(p, name, config) for p in pts]
    import multiprocessing

    from study.config import CellConf, registered_variant_error

    _schema(CellConf)  # built once, inherited by each forked process
    _JOB.update(points=pts, name=name, config=config)
    sys.stdout.flush()
    sys.stderr.flush()
    pool = multiprocessing.get_context("fork").Pool(workers, initializer=_quiet)
    try:
        pending = pool.map_async(
            _check_share, [list(range(w, len(pts), workers)) for w in range(workers)]
        )
        if meanwhile:
            meanwhile(pts)
        from study.workloads import registry

        registry.names()  # torch's import, for the lookups below, while the others compose
        variants = {}
        why: list[str | None] = [None] * len(pts)
        for share in pending.get():
            for i, reason, variant in share:
                why[i] = reason
                if variant is not None:
                    variants.setdefault(variant, []).append(i)
        for (vname, key), where in variants.items():  # imports torch, once
            reason = registered_variant_error(vname, key)
            for i in where:
                why[i] = reason
        return why
    finally:
        pool.terminate()
        pool.join()
        _JOB.clear()


def validate_sweep(config: DictConfig, config_name: str, meanwhile: Callable | None = None) -> int:
    """Check every point; exit 2 with every bad point listed. Returns the number of points.
    ``meanwhile(points)`` runs while the points are composed (what the sweep starts early)."""
    from study.callbacks import fail

    pts = points(config)
    bad: dict[str, list[str]] = {}
    for p, why in zip(
        pts, _check_all(pts, config, config_name, meanwhile, check_workers(len(pts))), strict=True
    ):
        if why:
            bad.setdefault(why, []).append(" ".join(p) or "(no overrides)")
    if config.gpu_slots > 0:
        import torch

        from study.worker import gpu_id

        try:
            gpu_id(config.gpu_slots - 1)
            have = torch.cuda.device_count()  # NVML (study.run): CUDA stays uninitialised
            if not os.environ.get("CUDA_VISIBLE_DEVICES") and config.gpu_slots > have:
                raise ValueError(f"gpu_slots={config.gpu_slots} but this host has {have} GPU(s)")
        except ValueError as e:
            bad.setdefault(str(e), []).extend(" ".join(p) for p in pts)
    if bad:
        n = len({w for where in bad.values() for w in where})
        lines = [f"{n} of {len(pts)} sweep points cannot run; no cell was started:"]
        for why, where in bad.items():
            at = "every point" if len(where) == len(pts) and len(pts) > 1 else "; ".join(where)
            lines.append(f"  - {why}  [{at}]")
        fail("\n".join(lines))
    return len(pts)
