"""Run dir names: one dir per sweep point, named by the values a person chose.

A point's name is its overrides as ``key=value`` joined by ``,``, sorted as Hydra sorts
``override_dirname`` (so the same point gets the same dir however the command orders its
overrides, and a resume finds it). Left out: the harness's own keys (``hydra.job.config.
override_dirname.exclude_keys``: ``cores``, ``timeout_s``, ...) and predictions (``+expect.*``),
unless their value differs between the sweep's points: then they tell two cells apart and are
named too. A list is written ``16+32+64``. Nothing a shell needs quoted is written: an item that
would need it (a path, a quoted prediction) or that does not fit in ``LIMIT`` characters is left
out whole, never cut, and ``#`` and a short hash of what was left out ends the name. The full
overrides are in the cell's ``cell.yaml``.
"""

from __future__ import annotations

import hashlib
import re

LIMIT = 120  # characters of a name; well under a file system's 255, and readable on a console
SAFE = re.compile(r"[A-Za-z0-9_.,=+\-@:]+")  # nothing bash needs quoted, no "/" out of the dir
QUOTED = re.compile(r"""^(['"])(.*)\1$""")


def key_of(item: str) -> str:
    """The key an override sets, as Hydra's ``exclude_keys`` name it (no ``+``/``~``, no @pkg)."""
    return item.partition("=")[0].lstrip("+~").split("@")[0]


def hidden(key: str, exclude) -> bool:
    """Says how or where a cell runs (or what it predicts), not what it measures."""
    return key in exclude or key.split(".")[0] in ("hydra", "expect")


def render(item: str) -> str | None:
    """``key=value`` as it goes into a name, or None when it cannot go in unquoted."""
    key, eq, value = item.partition("=")
    m = QUOTED.match(value)
    if m:
        value = m.group(2)
    if value.startswith("[") and value.endswith("]"):
        value = "+".join(v.strip() for v in value[1:-1].split(","))
    # Hydra's "+" (append a key) says nothing about the cell, and a name starting with it would
    # read as a formula where runs.csv opens in a spreadsheet (io writes those with a leading ')
    text = key.lstrip("+") + eq + value
    return text if SAFE.fullmatch(text) and not text.startswith(("~", "#", "-")) else None


def varying(points: list[list[str]]) -> set[str]:
    """The keys whose value is not the same in every point (absent counts as a value)."""
    given = [{key_of(i): i for i in p} for p in points]
    keys = {k for g in given for k in g}
    return {k for k in keys if len({g.get(k) for g in given}) > 1}


def name_of(point: list[str], exclude=(), differ=frozenset(), force_hash: bool = False) -> str:
    """The run dir name of one point; ``differ``: the keys that differ between the points."""
    want = sorted(i for i in point if not hidden(key_of(i), exclude) or key_of(i) in differ)
    room = LIMIT - 10  # ",#" and 8 hex digits
    kept: set[str] = set()
    for item in sorted(want, key=lambda i: key_of(i) not in differ):  # swept keys first
        text = render(item)
        if text is not None and sum(len(render(k)) + 1 for k in kept) + len(text) <= room:
            kept.add(item)
    shown = [render(i) for i in want if i in kept]
    rest = [i for i in want if i not in kept]
    if force_hash:
        rest = want
    name = ",".join(shown)
    if rest:
        digest = hashlib.sha1("\n".join(rest).encode()).hexdigest()[:8]
        name = f"{name or 'cell'},#{digest}"
    return name or "cell"


def run_dirs(points: list[list[str]], exclude=()) -> list[str]:
    """One name per point, all different: two points whose readable names meet (a list and a
    string written alike) each get the hash of everything they name."""
    differ = varying(points)
    names = [name_of(p, exclude, differ) for p in points]
    twice = {n for n in names if names.count(n) > 1}
    return [
        name_of(p, exclude, differ, force_hash=n in twice)
        for p, n in zip(points, names, strict=True)
    ]


def shared(dirs: list[str]) -> tuple[int, int] | None:
    """The first two points (by index) that would share one run dir, or None."""
    seen: dict[str, int] = {}
    for i, d in enumerate(dirs):
        if d in seen:
            return seen[d], i
        seen[d] = i
    return None
