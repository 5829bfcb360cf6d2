"""What resume compares: a cell's identity, a sweep's fixed overrides, and the keys renamed since.

``config_hash``: a finished cell is kept only when the config it ran matches. A renamed key is
hashed under its old name, so a resume of a sweep made before a rename keeps its cells.
``renamed_keys`` reads an old key as its new one, for one release. ``fixed_overrides``: what a
resume may not change about the sweep it adds to (study.sweep.sweepdir checks it).
"""

from __future__ import annotations

import re

# Keys that say how or where a cell runs, not what it measures: left out of its identity.
NOT_IDENTITY = (
    "hydra",
    "resume",
    "out_root",
    "timeout_s",
    "isolation",
    "cores",
    "cpu_mem_limit_gb",
    "repeat",
    "repeats",
    "calibration_file",
    "expect",  # a prediction changes what is checked, never what is measured
)


# old key -> new key, kept for one release
RENAMED = {
    ("timing", "repeat"): ("timing", "calls"),
    ("step", "kind"): ("pass", "kind"),
    ("step", "lr"): ("pass", "lr"),
}
# keys gone after their release of deprecation -> what to give instead
REMOVED = {"gpu_slots": "hydra/launcher=gpus hydra.launcher.n_jobs=N"}


def given(c, node: str, key: str):
    """The value of ``node.key`` as the user gave it: under its old name when that is set."""
    for (old_node, old), (new_node, new) in RENAMED.items():
        if (new_node, new) == (node, key):
            was = c[old_node][old] if old_node in c else None
            if was is not None:
                return was
    return c[node][key]


def given_as(node: str, key: str, c) -> str:
    """How a message names ``node.key``: by the name the user gave it."""
    for (old_node, old), (new_node, new) in RENAMED.items():
        if (new_node, new) == (node, key) and old_node in c and c[old_node][old] is not None:
            return f"{old_node}.{old} (now {node}.{key})"
    return f"{node}.{key}"


def renamed_keys(d: dict) -> list[str]:
    """Move each renamed key's value to its new name, in place, in a plain config; one
    deprecation line for each old key given."""
    said = []
    for (node, old), (node2, new) in RENAMED.items():
        if (d.get(node) or {}).get(old) is not None:
            d.setdefault(node2, {})[new] = d[node].pop(old)
            d[node][old] = None
            said.append(f"{node}.{old} is deprecated: use {node2}.{new} (read as it for now)")
    return said


def config_hash(plain_cfg: dict) -> str:
    """A short hash of what a cell measures: its resolved config without ``NOT_IDENTITY``.
    Repeats of one cell share it; resume skips a cell only when it matches."""
    import hashlib
    import json

    ident = {k: v for k, v in plain_cfg.items() if k not in NOT_IDENTITY}
    for (node, old), (node2, new) in RENAMED.items():  # under the old name: a cell's identity
        if new not in (ident.get(node2) or {}):  # survives the rename (resume)
            continue
        moved = dict(ident[node2])
        value = moved.pop(new)
        kept = moved if node == node2 else dict(ident.get(node) or {})
        if kept.get(old) is None:
            kept[old] = value
        ident[node] = kept
        if node != node2:
            if moved:
                ident[node2] = moved
            else:
                del ident[node2]
    if (ident.get("compile") or {}).get("mode") == "off":  # eager ignores every compile setting
        ident["compile"] = {"mode": "off"}
    comp = ident.get("compile") or {}
    drop = {"trace_log"} | ({"stance"} if comp.get("stance") == "default" else set())
    if not comp.get("regional"):  # the whole model, as every cell made before regions
        drop |= {"regional", "regional_how"}
    if drop & set(comp):  # a log changes no figure; the default stance: cells made before it
        ident["compile"] = {k: v for k, v in comp.items() if k not in drop}
    if ident.get("start") == "cold":  # the default start: cells made before the key
        del ident["start"]
    shape = ident.get("shape") or {}
    if "layers" in shape and shape["layers"] in (None, 1):  # one block: the block before layers
        ident["shape"] = {k: v for k, v in shape.items() if k != "layers"}
    return hashlib.sha256(json.dumps(ident, sort_keys=True, default=str).encode()).hexdigest()[:16]


def eager_hash(plain_cfg: dict) -> str:
    """The config_hash of this cell's eager twin: what a cross-process speedup divides by."""
    return config_hash({**plain_cfg, "compile": {"mode": "off"}})


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
