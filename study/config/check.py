"""Why a composed cell config cannot run, as far as the config alone can say, in one line.

``config_error`` merges the config into the typed schema (unknown keys, types) and applies the
rules types cannot say (study.config.rules); ``inductor_error`` checks ``compile.inductor`` keys
against torch's Inductor config (it imports torch). Whether the variant exists is
study.workloads.check's, which runs these first.
"""

from __future__ import annotations

import functools

from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import ConfigKeyError, ValidationError

from study.config.cell_config import plain, schema
from study.config.rules import unknown_nested_keys, validate
from study.config.usage import explain, unknown_key
from study.errors import ConfigError


@functools.cache
def _schema() -> DictConfig:
    """The cell's typed schema, built once (merge copies it)."""
    return schema()


def config_error(cfg: DictConfig) -> str | None:
    """Why a composed cell config cannot run (unknown keys, bad values), or None: no torch."""
    try:
        OmegaConf.merge(_schema(), {k: v for k, v in cfg.items() if k != "hydra"})
    except ConfigKeyError as e:  # a key added with +key=...
        return unknown_key(getattr(e, "full_key", None) or str(e).split("'")[1])
    except ValidationError as e:
        return " ".join(str(e).split()[:40])
    stray = unknown_nested_keys(cfg)
    if stray:
        return unknown_key(stray[0])
    try:
        validate(cfg)
    except ConfigError as e:
        return str(e)
    return None


def unknown_inductor_keys(patches: dict) -> list[str]:
    """Keys of ``patches`` that this torch's Inductor config does not have."""
    if not patches:
        return []
    import torch._inductor.config as ic  # deferred: torch

    known = set(ic.get_config_copy())
    return sorted(k for k in patches if k not in known)


def inductor_error(cfg: DictConfig) -> str | None:
    """Unknown keys in ``compile.inductor`` (imports torch's Inductor config), or None."""
    if not cfg.compile.inductor:
        return None
    bad = unknown_inductor_keys(dict(cfg.compile.inductor))
    if bad:
        return (
            f"compile.inductor: unknown Inductor config key(s) {bad}; "
            "see torch._inductor.config for the names"
        )
    return None


def device_error(configs, cuda_available: bool) -> str | None:
    """Why ``device=cuda`` cannot run here (the warm parent found no CUDA GPU), or None: a
    start-time mistake, not an ``unsupported`` row (the README: device=cuda requires a GPU)."""
    if cuda_available or not any(c is not None and plain(c.device) == "cuda" for c in configs):
        return None
    return ("device=cuda requires a CUDA GPU and torch finds none on this host "
            "(torch.cuda.is_available() is False): use device=cpu, or device=auto")  # fmt: skip


def composition_error(e: Exception) -> str:
    """Hydra's own message, which names the bad override, in one line."""
    return explain(e) or " ".join(str(e).split("Config search path")[0].split())
