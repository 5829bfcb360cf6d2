"""Why a composed cell config cannot run, in one line: the config's own checks (study.config.check),
then whether its variant exists, then Inductor's keys.

``check_config`` (a single run) and ``point_error`` (each point of a sweep, study.sweep.sweeper).
A registered variant is looked up in a table of names and shape keys (the warm parent's, or the
registry's, which imports torch); a variant of your own (``variant.target``) is imported
(study.workloads.custom.check), so a path that does not import, or a shape key its factories
ask for and the config lacks, stops the run there.
"""

from __future__ import annotations

from omegaconf import DictConfig

from study.config.check import config_error, inductor_error
from study.errors import ConfigError
from study.workloads import custom
from study.workloads.registry import get, names


def registered_variant_error(
    name: str, sweep_key: str | None = None, known: dict | None = None
) -> str | None:
    """Why ``variant.name=name`` (with ``shape_sweep.key=sweep_key``) names no registered
    variant, or None. ``known``: {variant: its shape keys}, as the warm parent lists them;
    without it, the registry's, which imports the workloads and torch with them."""
    if known is None:
        known = {n: list(get(n).shape_keys) for n in names()}
    if name not in known:
        return f"variant.name={name!r} is not registered; known: {', '.join(known)}."
    keys = known[name]
    if sweep_key is not None and sweep_key not in keys:
        return (
            f"shape_sweep.key={sweep_key!r}: variant {name!r} has no such shape key; "
            f"its keys: {', '.join(keys)}."
        )
    return None


def _own(cfg: DictConfig) -> bool:
    return bool(cfg.variant.get("target")) or cfg.variant.name == "custom"


def variant_error(cfg: DictConfig, known=None) -> str | None:
    """Why the config's variant cannot run, or None: a factory of your own is imported and
    checked; a registered name is looked up in ``known`` (or a function that returns it;
    None: the registry)."""
    if _own(cfg):
        try:
            custom.check(cfg)
        except ConfigError as e:
            return str(e)
        return None
    known = known() if callable(known) else known
    return registered_variant_error(str(cfg.variant.name), cfg.shape_sweep.key, known)


def check_config(cfg: DictConfig) -> str | None:
    """Why a composed cell config cannot run (unknown keys, bad values, a variant that is not
    registered, Inductor keys), or None."""
    return config_error(cfg) or variant_error(cfg) or inductor_error(cfg)


def point_error(cfg: DictConfig, variants=None) -> str | None:
    """Why a point of a sweep cannot run, or None. ``variants``: the registered variants and
    their shape keys, as the warm parent knows them, or a function that waits for them (asked
    only for a point with no other error: a sweep of bad points stops before torch is imported);
    None: the registry, which imports torch."""
    return config_error(cfg) or variant_error(cfg, variants) or inductor_error(cfg)
