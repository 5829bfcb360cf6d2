"""Graph breaks by their registry code: Dynamo's graph-break registry
(``torch/_dynamo/graph_break_registry.json``, torch 2.8 and later) names every kind of break
with a code (``GB0059``) and its type ("Failed to trace builtin operator"); a break's reason, as
Dynamo counts it (``counters["graph_break"]``), starts with that type. ``codes`` gives each
reason its code, so a sweep can count breaks by kind (``analysis.report``: "Graph breaks by
code"). On a torch without the registry every code is None and the reasons stay as they are.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path


@functools.cache
def registry() -> dict[str, str]:
    """{break type: code} from this torch's registry; {} where it has none."""
    import torch  # deferred: the row code imports this module without torch

    path = Path(torch.__file__).parent / "_dynamo" / "graph_break_registry.json"
    try:
        raw = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    out = {}
    for code, entries in raw.items():
        for e in entries if isinstance(entries, list) else [entries]:
            kind = e.get("Gb_type") if isinstance(e, dict) else None
            if kind:
                out.setdefault(kind.strip(), code)
    return out


def code(reason: str, kinds: dict[str, str] | None = None) -> str | None:
    """The registry code of a break ``reason`` (its first line is the break's type, or starts
    with it), or None."""
    kinds = registry() if kinds is None else kinds
    first = reason.strip().splitlines()[0].strip() if reason.strip() else ""
    if first in kinds:
        return kinds[first]
    hits = [k for k in kinds if first.startswith(k)]
    return kinds[max(hits, key=len)] if hits else None


def columns(breaks: dict[str, int], kinds: dict[str, str] | None = None) -> dict[str, str]:
    """``graph_break_reasons`` (each reason, its code in front where it has one, and its count)
    and ``graph_break_codes`` ('GB0059 (x2) | GB0025 (x1)', counts summed by code; blank
    where no break has a code)."""
    by_code: dict[str, int] = {}
    reasons = []
    for reason, n in breaks.items():
        c = code(reason, kinds)
        reasons.append(f"{c}: {reason} (x{n})" if c else f"{reason} (x{n})")
        if c:
            by_code[c] = by_code.get(c, 0) + n
    return {
        "graph_break_reasons": " | ".join(reasons),
        "graph_break_codes": " | ".join(f"{c} (x{n})" for c, n in sorted(by_code.items())),
    }
