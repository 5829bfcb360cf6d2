"""What resume compares: a cell's identity, a sweep's fixed overrides, and the keys removed.

``config_hash``: a finished cell is kept only when the config it ran matches. A renamed key is
hashed under its old name, so a resume of a sweep made before a rename keeps its cells.
``fixed_overrides``: what a resume may not change about the sweep it adds to
(study.sweep.sweepdir checks it). ``REMOVED``: keys no longer in the schema, and what replaced
each (study.config.usage says it in one line).
"""

from __future__ import annotations

import hashlib
import json
import re

from study.config.cell_config import timing_as_measured

# Keys that say how or where a cell runs, not what it measures: left out of its identity.
NOT_IDENTITY = (
    "hydra",
    "resume",
    "out_root",
    "timeout_s",
    "cores",
    "cpu_mem_limit_gb",
    "repeat",
    "repeats",
    "calibration_file",
    "expect",  # a prediction changes what is checked, never what is measured
)


# A key's name when cells were first hashed -> its name now: config_hash uses the first, so the
# cells of a sweep made before the rename (reference/h200's among them) keep their identity.
HASHED_AS = {
    ("timing", "repeat"): ("timing", "calls"),
    ("step", "kind"): ("pass", "kind"),
    ("step", "lr"): ("pass", "lr"),
}
# Keys no longer in the schema -> what to give instead (a node's entry covers its keys).
REMOVED = {
    "gpu_slots": "give hydra/launcher=gpus hydra.launcher.n_jobs=N instead",
    "timing.repeat": "give timing.calls instead",
    "step": "give pass.kind and pass.lr instead (step.kind and step.lr were their old names)",
    "isolation": (
        "every cell runs in its own process; to step through one in a debugger, run it by "
        "hand: python -m pdb -m study.cell.worker RUN_DIR (the dir holding its cell.yaml)"
    ),
}


def removed(key: str) -> str | None:
    """What replaced ``key`` (``step.kind``: the ``step`` node's entry), or None."""
    parts = key.split(".")
    for n in range(len(parts), 0, -1):
        if ".".join(parts[:n]) in REMOVED:
            return REMOVED[".".join(parts[:n])]
    return None


def config_hash(plain_cfg: dict) -> str:
    """A short hash of what a cell measures: its resolved config without ``NOT_IDENTITY``.
    Repeats of one cell share it; resume skips a cell only when it matches."""
    ident = {k: v for k, v in plain_cfg.items() if k not in NOT_IDENTITY}
    for (node, old), (node2, new) in HASHED_AS.items():  # under the name it was first hashed by
        if new in (ident.get(node2) or {}):
            moved = dict(ident.pop(node2))
            value = moved.pop(new)
            if moved:
                ident[node2] = moved
            ident[node] = {**(ident.get(node) or {}), old: value}
    if (ident.get("compile") or {}).get("mode") == "off":  # eager ignores every compile setting
        ident["compile"] = {"mode": "off"}
    comp = ident.get("compile") or {}
    drop = {"trace_log"} | ({"stance"} if comp.get("stance") == "default" else set())
    if not comp.get("regional"):  # the whole model, as every cell made before regions
        drop |= {"regional", "regional_how"}
    if drop & set(comp):  # a log changes no figure; the default stance: cells made before it
        ident["compile"] = {k: v for k, v in comp.items() if k not in drop}
    if ident.get("device") == "cpu" and "timing" in ident:  # keys the CPU never reads
        ident["timing"] = timing_as_measured(ident["timing"], "cpu")
    if ident.get("start") == "cold":  # the default start: cells made before the key
        del ident["start"]
    if (ident.get("regime") or {}).get("name", "none") == "none":  # cells made before regimes
        ident.pop("regime", None)
    if "variant" in ident:  # a model's kind and library label it; its target says what runs
        ident["variant"] = {
            k: v for k, v in ident["variant"].items() if k not in ("kind", "library")
        }
    shape = ident.get("shape") or {}
    if "layers" in shape and shape["layers"] in (None, 1):  # one block: the block before layers
        ident["shape"] = {k: v for k, v in shape.items() if k != "layers"}
    return hashlib.sha256(json.dumps(ident, sort_keys=True, default=str).encode()).hexdigest()[:16]


def eager_hash(plain_cfg: dict) -> str:
    """The config_hash of this cell's eager twin: what a cross-process speedup divides by."""
    return config_hash({**plain_cfg, "compile": {"mode": "off"}, "start": "cold"})


def measured(key: str) -> bool:
    """Does an override of ``key`` (``+expect.status``, ``hydra/launcher``, ``variant``...)
    change what a cell measures? Predictions and the harness's own keys do not."""
    return re.split(r"[./]", key.lstrip("+~"))[0] not in NOT_IDENTITY


def fixed_overrides(overrides) -> dict[str, list[str]]:
    """{key: its values} of a sweep's parsed overrides that change what is measured; a swept key
    is ``<swept>``: a resume may give it other values (config_hash guards each cell)."""
    return {
        o.get_key_element(): ["<swept>"]
        if o.is_sweep_override()
        else [o.get_value_element_as_str()]
        for o in overrides
        if measured(o.get_key_element())
    }


def changed_overrides(old: dict, new: dict) -> list[str]:
    """How two sweeps' ``fixed_overrides`` differ, one phrase per key. A key a saved sweep kept
    that no longer changes a measurement is no difference (``calibration_file`` was kept before
    NOT_IDENTITY was the one list)."""
    diffs = []
    for k in sorted(k for k in set(old) | set(new) if measured(k)):
        a, b = old.get(k), new.get(k)
        if a is None:
            diffs.append(f"{k}={','.join(b)} was not in it")
        elif b is None:
            diffs.append(f"{k}={','.join(a)} is missing now")
        elif a != b and "<swept>" not in (a + b):
            diffs.append(f"{k} was {','.join(a)}, is {','.join(b)} now")
    return diffs
