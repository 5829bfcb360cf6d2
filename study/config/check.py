"""Why a composed cell config cannot run, said in one line: the study's own checks of a config.

``check_config`` (a single run) and ``point_error`` (each point of a sweep, study.sweep.sweeper)
merge the config into the typed schema (unknown keys, types), apply the rules types cannot say
(study.config.rules), look the variant up, and check ``compile.inductor`` keys against
torch's Inductor config. A registered variant needs no torch here; a variant of your own and
``compile.inductor`` keys do.
"""

from __future__ import annotations

import functools

from omegaconf import DictConfig, OmegaConf


@functools.cache
def _schema() -> DictConfig:
    """The cell's typed schema, built once (merge copies it)."""
    from study.config.cell_config import schema

    return schema()


def check_config(cfg: DictConfig) -> str | None:
    """Why a composed cell config cannot run (unknown keys, bad values, a variant that is not
    registered, Inductor keys), or None."""
    return _config_error(cfg, registry=True) or _inductor_error(cfg)


def _config_error(cfg: DictConfig, registry: bool) -> str | None:
    from omegaconf.errors import ConfigKeyError, ValidationError

    from study.config.rules import validate
    from study.config.usage import unknown_key
    from study.errors import ConfigError

    try:
        OmegaConf.merge(_schema(), {k: v for k, v in cfg.items() if k != "hydra"})
    except ConfigKeyError as e:  # a key added with +key=...
        return unknown_key(getattr(e, "full_key", None) or str(e).split("'")[1])
    except ValidationError as e:
        return " ".join(str(e).split()[:40])
    from study.config.rules import unknown_nested_keys

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
    from study.observe.inductor import unknown_keys

    bad = unknown_keys(dict(cfg.compile.inductor))
    if bad:
        return (
            f"compile.inductor: unknown Inductor config key(s) {bad}; "
            "see torch._inductor.config for the names"
        )
    return None


def point_error(cfg: DictConfig, variants=None) -> str | None:
    """Why a point of a sweep cannot run, or None. ``variants``: the registered variants and
    their shape keys, as the warm parent knows them, or a function that waits for them (asked
    only for a point with no other error: a sweep of bad points stops before torch is imported);
    None: the registry, which imports torch."""
    from study.config.rules import registered_variant_error

    why = _config_error(cfg, registry=False)
    if why is None and not (cfg.variant.get("target") or cfg.variant.name == "custom"):
        known = variants() if callable(variants) else variants
        why = registered_variant_error(str(cfg.variant.name), cfg.shape_sweep.key, known)
    elif why is None:  # a variant of your own: imported here
        why = _config_error(cfg, registry=True)
    return why or _inductor_error(cfg)


def device_error(configs, cuda_available: bool) -> str | None:
    """Why ``device=cuda`` cannot run here (the warm parent found no CUDA GPU), or None: a
    start-time mistake, not an ``unsupported`` row (the README: device=cuda requires a GPU)."""
    from study.config.cell_config import plain

    if cuda_available or not any(c is not None and plain(c.device) == "cuda" for c in configs):
        return None
    return ("device=cuda requires a CUDA GPU and torch finds none on this host "
            "(torch.cuda.is_available() is False): use device=cpu, or device=auto")  # fmt: skip


def say_renamed(configs) -> None:
    """One line for each renamed key a sweep still gives by its old name, and for a
    deprecated value."""
    from study.config.cell_config import plain, to_plain
    from study.config.identity import renamed_keys

    said = {line for cfg in configs for line in renamed_keys(to_plain(cfg))}
    if any(plain(cfg.get("isolation")) == "inline" for cfg in configs):
        said.add("isolation=inline is deprecated and ignored: every cell runs in its own process. "
                 "To step through one in a debugger, run it by hand: "
                 "python -m pdb -m study.cell.worker RUN_DIR (the dir holding its cell.yaml; "
                 "its rows are rewritten, and a resume runs it again)")  # fmt: skip
    for line in sorted(said):
        print(f"[study] note: {line}", flush=True)


def composition_error(e: Exception) -> str:
    """Hydra's own message, which names the bad override, in one line."""
    from study.config.usage import explain

    return explain(e) or " ".join(str(e).split("Config search path")[0].split())
