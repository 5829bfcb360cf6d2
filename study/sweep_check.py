"""Every point of a sweep, composed as its job will be and checked, before the first cell.

``validate_sweep`` expands the sweep the way Hydra's basic sweeper will, composes each point
through the app's own config loader, and validates it (study.config.validate, unknown keys,
Inductor keys, the variant's registration). Any bad point stops the run with one message that
lists every bad point, and exit status 2.

Composing is pure Python, 0.1-0.2 s a point (Hydra builds each point's defaults tree and loads
and merges its YAML files again): a part3 of 35 points took 6-8 s in one process on the H200 VM,
before its first cell, on one GPU and on two. On a host with cores to spare, a sweep of many
points is composed by forked processes, each a share of the points (``check_workers``;
``STUDY_CHECK_WORKERS=0`` never forks). They are forked before the sweep starts any thread or
process of its own (``meanwhile``: the cell servers, the job processes), so they hold none of
their pipes; they ignore Ctrl-C, which the main process handles. Whether a variant is
registered (study.workloads.registry, which imports torch) is looked up in the main process,
once per variant, while the forked ones compose; a point with ``compile.inductor`` keys or a
variant of your own still imports torch where it is checked. If a forked process dies, the
main process checks every point itself, as it does on a small host.
"""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Callable

from omegaconf import DictConfig, OmegaConf, flag_override

POINTS_PER_WORKER = 6  # points a forked process must have to be worth its start
MAX_WORKERS = 8


def overrides(config: DictConfig):
    from hydra.core.global_hydra import GlobalHydra
    from hydra.core.override_parser.overrides_parser import OverridesParser

    params = config.hydra.sweeper.get("params") or {}
    args = [f"{k}={v}" for k, v in params.items()] + list(config.hydra.overrides.task)
    gh = GlobalHydra.instance()  # its config loader expands glob(...) over a config group
    loader = gh.hydra.config_loader if gh.is_initialized() else None
    return OverridesParser.create(config_loader=loader).parse_overrides(args)


def unique(pts: list[list[str]]) -> list[list[str]]:
    """Each point once, in order (a value given twice in a sweep makes the same point)."""
    seen: set[tuple[str, ...]] = set()
    return [p for p in pts if not (tuple(p) in seen or seen.add(tuple(p)))]


def repeated_values(config: DictConfig) -> list[str]:
    """``key=value`` for each value a sweep override gives more than once."""
    out = []
    for o in overrides(config):
        if o.is_sweep_override() and o.is_discrete_sweep():
            vals = list(o.sweep_string_iterator())
            out += [f"{o.get_key_element()}={v}" for v in dict.fromkeys(vals) if vals.count(v) > 1]
    return out


def points(config: DictConfig) -> list[list[str]]:
    """Every job's overrides, in the order the study's sweeper runs them (Hydra's basic
    sweeper's, each point once)."""
    from hydra._internal.core_plugins.basic_sweeper import BasicSweeper

    pts = [p for batch in BasicSweeper.split_arguments(overrides(config), None) for p in batch]
    return unique(pts)


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
    return _check_point(overrides, config_name, master, registry=True)[0]


def _check_point(
    overrides: list[str], config_name: str, master: DictConfig | None, registry: bool
) -> tuple[str | None, tuple | None, str | None]:
    """(why this point cannot run, or None; the registered variant it asks for,
    ``(variant.name, shape_sweep.key)``, for the caller to look up (``registry=False``), else
    None; with it, why the point cannot run if that variant is registered, or None). The
    order of the reasons is the one ``check_config`` gives."""
    try:
        cfg = _compose(overrides, config_name, master)
    except Exception as e:  # noqa: BLE001 - Hydra's own message names the bad override
        from study.usage import explain

        return explain(e) or " ".join(str(e).split("Config search path")[0].split()), None, None
    why = _config_error(cfg, registry)
    if why or registry or cfg.variant.get("target") or cfg.variant.name == "custom":
        return why or _inductor_error(cfg), None, None
    return None, (str(cfg.variant.name), cfg.shape_sweep.key), _inductor_error(cfg)


@functools.cache
def _schema(conf_class) -> DictConfig:
    """The structured config of ``conf_class``, built once (merge copies it)."""
    return OmegaConf.structured(conf_class)


def check_config(cfg: DictConfig) -> str | None:
    """Why a composed cell config cannot run (unknown keys, bad values, a variant that is not
    registered, Inductor keys), or None."""
    return _config_error(cfg, registry=True) or _inductor_error(cfg)


def _config_error(cfg: DictConfig, registry: bool) -> str | None:
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
    from study.config import unknown_nested_keys
    from study.usage import unknown_key

    stray = unknown_nested_keys(cfg)
    if stray:
        return unknown_key(stray[0])
    try:
        validate(cfg, registry=registry)
    except ConfigError as e:
        return str(e)
    return None


def _inductor_error(cfg: DictConfig) -> str | None:
    """Unknown keys in ``compile.inductor`` (imports torch's Inductor config), or None."""
    if not cfg.compile.inductor:
        return None
    from study.inductor import unknown_keys

    bad = unknown_keys(dict(cfg.compile.inductor))
    if bad:
        return (
            f"compile.inductor: unknown Inductor config key(s) {bad}; "
            "see torch._inductor.config for the names"
        )
    return None


def _usable_cores() -> int:
    """This process's cores: its affinity, capped by a cgroup's CPU quota (a container limited
    to 2 CPUs on a 64-core node sees 64 in its affinity)."""
    from study.pinning import allowed

    n = len(allowed())
    try:
        with open("/sys/fs/cgroup/cpu.max") as f:
            quota, period = f.read().split()[:2]
    except (OSError, ValueError):
        return n
    return n if quota == "max" else max(1, min(n, int(int(quota) // int(period))))


def check_workers(n_points: int, cores: int | None = None) -> int:
    """Forked processes to compose ``n_points`` with (0: this process alone): one per
    ``POINTS_PER_WORKER`` points, at most a quarter of the usable cores (the cell servers
    import torch meanwhile) and ``MAX_WORKERS``; fewer than 2 is none. ``STUDY_CHECK_WORKERS``
    sets it (0: never fork)."""
    forced = os.environ.get("STUDY_CHECK_WORKERS", "").strip()
    if forced:
        if not forced.isdigit():
            raise ValueError(
                f"STUDY_CHECK_WORKERS={forced!r}: give a number of processes (0: never fork)"
            )
        return int(forced)
    cores = _usable_cores() if cores is None else cores
    n = min(MAX_WORKERS, cores // 4, n_points // POINTS_PER_WORKER)
    return n if n >= 2 else 0


# What the forked processes check: set just before they are forked, inherited by them.
_JOB: dict = {}


def _check_share(indices: list[int]) -> list[tuple[int, str | None, tuple | None, str | None]]:
    pts, name, config = _JOB["points"], _JOB["name"], _JOB["config"]
    return [(i, *_check_point(pts[i], name, config, registry=False)) for i in indices]


def _forked(pts: list[list[str]], config: DictConfig, name: str, meanwhile, workers: int):
    """``_check_all`` in ``workers`` forked processes; None if they could not do it (one died:
    the caller checks in this process instead)."""
    import signal
    import threading
    from concurrent.futures import ProcessPoolExecutor
    from concurrent.futures.process import BrokenProcessPool
    from multiprocessing import get_context

    from study.config import CellConf, registered_variant_error

    _schema(CellConf)  # built once, inherited by each forked process
    _JOB.update(points=pts, name=name, config=config)
    sys.stdout.flush()
    sys.stderr.flush()
    # Ctrl-C is the main process's to handle: the forked ones ignore it from their first
    # instruction (no traceback from each). With fork, the first submit starts every process,
    # before the executor's own threads.
    main = threading.current_thread() is threading.main_thread()  # signals: only there
    sigint = signal.signal(signal.SIGINT, signal.SIG_IGN) if main else None
    pool = ProcessPoolExecutor(workers, mp_context=get_context("fork"))
    try:
        shares = [
            pool.submit(_check_share, list(range(w, len(pts), workers))) for w in range(workers)
        ]
    except OSError:  # no fork here (a process limit, memory): this process checks them all
        _JOB.clear()
        _end(pool)
        return None
    finally:
        if main:
            signal.signal(signal.SIGINT, sigint)
    done = False
    try:
        meanwhile(pts)
        from study.workloads import registry

        registry.names()  # torch's import, for the lookups below, while the others compose
        why: list[str | None] = [None] * len(pts)
        variants: dict[tuple, list[tuple[int, str | None]]] = {}
        try:
            for share in shares:
                for i, reason, variant, later in share.result():
                    why[i] = reason
                    if variant is not None:
                        variants.setdefault(variant, []).append((i, later))
        except BrokenProcessPool:  # one died (a variant's import that exits, the OOM killer)
            return None
        for (vname, key), where in variants.items():  # imports torch, once
            reason = registered_variant_error(vname, key)
            for i, later in where:
                why[i] = reason or later
        done = True
        return why
    finally:
        _JOB.clear()
        if done:
            pool.shutdown(wait=True)  # each is idle: it exits at once
        else:  # the check stopped (Ctrl-C, a bad core list, a dead process): end them now
            _end(pool)


def _end(pool) -> None:
    """End a pool's processes now, whatever they are doing."""
    for proc in list((getattr(pool, "_processes", None) or {}).values()):
        proc.terminate()
        proc.join(5)
    # then the executor's own thread sees them gone and ends (left running, its exit handler
    # once wrote to a closed pipe at interpreter exit: a traceback after Ctrl-C, in 1 of 8
    # tries on the CPU box)
    pool.shutdown(wait=True, cancel_futures=True)


def _once(fn: Callable | None) -> Callable:
    ran = []

    def once(pts):
        if fn is not None and not ran:
            ran.append(True)
            fn(pts)

    return once


def _check_all(
    pts: list[list[str]], config: DictConfig, name: str, meanwhile: Callable | None, workers: int
) -> list[str | None]:
    """Why each point cannot run (None: it can). ``meanwhile(points)`` runs once, after any
    forked process is forked and before the points are composed in this process."""
    meanwhile = _once(meanwhile)
    if workers >= 2:
        why = _forked(pts, config, name, meanwhile, workers)
        if why is not None:
            return why
    meanwhile(pts)  # unless it ran already, before a forked process died
    return [check_point(p, name, config) for p in pts]


def validate_sweep(config: DictConfig, config_name: str, meanwhile: Callable | None = None) -> int:
    """Check every point; exit 2 with every bad point listed. Returns the number of points.
    ``meanwhile(points)`` runs while the points are composed (what the sweep starts early)."""
    from study.usage import fail

    pts = points(config)
    twice = repeated_values(config)
    if twice:
        print(f"[study] note: {', '.join(twice)} given more than once: each cell runs once.")
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
