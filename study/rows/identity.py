"""A cell's identity: what it measures, hashed, and the config keys renamed since.

``config_hash`` is what resume compares: a finished cell is kept only when the config it ran
matches. A renamed key is hashed under its old name, so a resume of a sweep made before a
rename keeps its cells. ``renamed_keys`` reads an old key as its new one, for one release.
"""

from __future__ import annotations

# Keys that say how or where a cell runs, not what it measures: left out of its identity.
NOT_IDENTITY = (
    "hydra",
    "resume",
    "out_root",
    "timeout_s",
    "isolation",
    "gpu_slots",
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
    return hashlib.sha256(json.dumps(ident, sort_keys=True, default=str).encode()).hexdigest()[:16]


def eager_hash(plain_cfg: dict) -> str:
    """The config_hash of this cell's eager twin: what a cross-process speedup divides by."""
    return config_hash({**plain_cfg, "compile": {"mode": "off"}})
