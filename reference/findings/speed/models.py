"""Real models (source ``models``): per model, pass and mode, the paired speedup, compile
time, graph breaks, kernels eager -> compiled, memory and the top fused kernels; and the share
of ok rows per mode. Part of ``python -m reference.findings``; the table is
``analysis.tables.models``'s.
"""

from __future__ import annotations

from analysis.pairs import table
from analysis.tables import models
from reference import sources
from reference.findings.base.common import needs, of

SOURCE = sources.one("models")


def section(data: dict) -> list[str]:
    raw = of(data["raw"], SOURCE)
    t = models.table(raw, of(data["kernels"], SOURCE) if len(data["kernels"]) else None)
    if t.empty:
        return needs("Real models", f"`{SOURCE}` (`+experiment=models`)")
    pr = models.pass_rate(raw)
    return [
        "",
        f"Real models (source `{SOURCE}`, `python -m analysis.tables models`): random weights from "
        'their config classes; paired speedup [95% interval] ("host slow" or "mixed": timed '
        "outside the host's fast phase, with eager beside it in the same phase), compile "
        "seconds, graph breaks, kernels per step eager → compiled, peak memory and compression "
        "ratio:",
        "",
        *table(list(t.columns), t.values.tolist()),
        "",
        "Share of ok rows per mode and pass (the dashboard's pass rate):",
        "",
        *table(list(pr.columns), pr.values.tolist()),
    ]
