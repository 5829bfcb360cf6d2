"""Compile targets (sources ``targets`` and ``targets_bwd``, a training step): where a compiled
call's time goes, layer by layer, and
whether a deployment path removes a compiled cell's slowdown. Part of
``python -m reference.findings``; the arithmetic is ``analysis.tables.layers``'s.
"""

from __future__ import annotations

from analysis.pairs import table
from analysis.tables import layers
from reference import sources
from reference.findings.base.common import needs, of

# the forward, and a training step taken apart (reference_study.sh's targets_bwd)
SOURCES = sources.names("targets")


def section(data: dict) -> list[str]:
    raw = of(data["raw"], *SOURCES)
    t = layers.table(raw)
    if t.empty:
        return needs(
            "Compile targets",
            f"`{SOURCES[0]}` (`+experiment={SOURCES[0]}`) or `{SOURCES[1]}` (with pass=fwd_bwd)",
        )
    failed = raw[raw["status"] != "ok"]
    have = [f"`{s}`" for s in SOURCES if s in set(raw["source"])]
    out = [
        "",
        "Compile targets: µs per call each layer of torch.compile adds over eager, from each "
        "target's own paired rounds (same process, same host phase) [95% interval; a layer's is "
        "the two targets' half-widths combined in quadrature, as their errors are independent], "
        "and each "
        "target's paired speedup (* : a row timed outside the host's fast phase, so its µs are "
        f"the slow phase's; source{'s' if len(have) > 1 else ''} {', '.join(have)}, "
        "`python -m analysis.tables layers`):",
        "",
        *table(list(t.columns), t.values.tolist()),
        "",
        *("- " + s for s in layers.verdicts(raw)),
    ]
    if len(failed):
        by = failed.groupby(["compile", "status"]).size()
        out += [
            "- Not ok: "
            + "; ".join(f"{c} {s} in {n} cell(s)" for (c, s), n in by.items())
            + " (`reason` in runs.csv)."
        ]
    return out
