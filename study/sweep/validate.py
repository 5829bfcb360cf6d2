"""Every point of a sweep checked before its first cell, on the configs Hydra composes anyway.

The study's sweeper (study.sweep.plugins) composes each point through the app's own config
loader, as a launcher would, and asks ``check_config`` why it cannot run: unknown keys, bad
values, a variant that is not registered, Inductor keys. Any bad point stops the run with one
message that lists every bad point (``bad_points``), and exit status 2; the composed configs
go on to the study's launcher, which composes nothing again. Composing is pure Python, 0.1-0.2 s
a point (a part3 of 35 points: 6-8 s on the H200 VM), while the warm parent imports torch.
A registered variant needs no torch here; a variant of your own and ``compile.inductor`` keys do.
"""

from __future__ import annotations

import functools

from omegaconf import DictConfig, OmegaConf


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


def eager_only(pts: list[list[str]]) -> bool:
    """Every point says ``compile=off`` (and no ``compile.mode``): no cell of the sweep compiles,
    so the warm parent can leave Inductor unimported (2.4 s on 2 cores). A point that says
    nothing of compile counts as compiled. A wrong guess (an experiment's body that sets
    ``compile.mode`` under ``compile=off``) costs only speed: the cell imports what it needs."""
    return bool(pts) and all(
        "compile=off" in p and not any(o.startswith("compile.mode=") for o in p) for p in pts
    )


def repeated_values(parsed) -> list[str]:
    """``key=value`` for each value a sweep override (parsed by Hydra) gives more than once."""
    out = []
    for o in parsed:
        if o.is_sweep_override() and o.is_discrete_sweep():
            vals = list(o.sweep_string_iterator())
            out += [f"{o.get_key_element()}={v}" for v in dict.fromkeys(vals) if vals.count(v) > 1]
    return out


@functools.cache
def _schema() -> DictConfig:
    """The cell's typed schema, built once (merge copies it)."""
    from study.rows.config import schema

    return schema()


def check_config(cfg: DictConfig) -> str | None:
    """Why a composed cell config cannot run (unknown keys, bad values, a variant that is not
    registered, Inductor keys), or None."""
    return _config_error(cfg, registry=True) or _inductor_error(cfg)


def _config_error(cfg: DictConfig, registry: bool) -> str | None:
    from omegaconf.errors import ConfigKeyError, ValidationError

    from study.rows.config_error import ConfigError
    from study.rows.config_rules import validate

    try:
        OmegaConf.merge(_schema(), {k: v for k, v in cfg.items() if k != "hydra"})
    except ConfigKeyError as e:
        key = getattr(e, "full_key", None) or str(e).split("'")[1]
        return (
            f"unknown key {key!r}: the study has no such setting (see SCHEMA.md and "
            "`python -m study.run --cfg job` for the keys)"
        )
    except ValidationError as e:
        return " ".join(str(e).split()[:40])
    from study.rows.config_rules import unknown_nested_keys
    from study.rows.usage import unknown_key

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
    from study.rows.config_rules import registered_variant_error

    why = _config_error(cfg, registry=False)
    if why is None and not (cfg.variant.get("target") or cfg.variant.name == "custom"):
        known = variants() if callable(variants) else variants
        why = registered_variant_error(str(cfg.variant.name), cfg.shape_sweep.key, known)
    elif why is None:  # a variant of your own: imported here
        why = _config_error(cfg, registry=True)
    return why or _inductor_error(cfg)


def say_renamed(configs) -> None:
    """One line for each renamed key a sweep still gives by its old name."""
    from study.rows.config import to_plain
    from study.rows.identity import renamed_keys

    said = {line for cfg in configs for line in renamed_keys(to_plain(cfg))}
    for line in sorted(said):
        print(f"[study] note: {line}", flush=True)


def composition_error(e: Exception) -> str:
    """Hydra's own message, which names the bad override, in one line."""
    from study.rows.usage import explain

    return explain(e) or " ".join(str(e).split("Config search path")[0].split())


def bad_points(pts: list[list[str]], whys: list[str | None]) -> str | None:
    """One message listing every bad point of the sweep, or None when every point can run."""
    bad: dict[str, list[str]] = {}
    for p, why in zip(pts, whys, strict=True):
        if why:
            bad.setdefault(why, []).append(" ".join(p) or "(no overrides)")
    if not bad:
        return None
    n = len({w for where in bad.values() for w in where})
    lines = [f"{n} of {len(pts)} sweep points cannot run; no cell was started:"]
    for why, where in bad.items():
        at = "every point" if len(where) == len(pts) and len(pts) > 1 else "; ".join(where)
        lines.append(f"  - {why}  [{at}]")
    return "\n".join(lines)
