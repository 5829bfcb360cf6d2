"""The sweep's own cost, per source: cells, statuses, the summed cell time and the harness
overhead of eager and compiled cells. Part of ``python -m analysis.findings``.

Cell time is the sum over rows (repeats included) of the phases a row records: gpu_wait_s,
first_call_s (compile), check_s, measure_s, profile_s, extra_s and overhead_s (process start,
setup, generated code, rows). That is the serial sweep's wall time minus Hydra's gaps between
jobs; a phase a row lacks counts as 0 and is named.
"""

from __future__ import annotations

import pandas as pd

from analysis.findings_common import table
from analysis.measures import sig

PHASES = ["overhead_s", "gpu_wait_s", "first_call_s", "check_s", "measure_s", "profile_s",
          "extra_s"]  # fmt: skip


def section(data: dict) -> list[str]:
    raw = data["raw"]
    if raw.empty or "overhead_s" not in raw or raw["overhead_s"].isna().all():
        return ["", "_The sweep's own cost: needs rows with `overhead_s` (v2's harness)._"]
    missing = [c for c in PHASES if c not in raw or raw[c].isna().all()]
    rows = [_row(s, g) for s, g in raw.groupby("source", sort=False)]
    total = sum(x[-1] for x in rows)
    body = [x[:-1] for x in rows]
    return [
        "",
        "The sweep's own cost, per source (cell time = "
        + " + ".join(c for c in PHASES if c not in missing)
        + ", summed over rows, repeats included: the serial sweep's wall time less Hydra's gaps "
        "between jobs"
        + (f"; no {', '.join(missing)} in these rows" if missing else "")
        + "; overhead = process start, setup, generated code and rows, per cell):",
        "",
        *table(
            [
                "source",
                "rows",
                "cells",
                "statuses",
                "cell time, min",
                "median overhead s, eager",
                "compiled",
            ],
            body,
        ),  # fmt: skip
        "",
        f"- Every source together: {sig(total / 60)} min of cell time over {len(raw)} rows.",
    ]


def _row(source: str, g: pd.DataFrame) -> list:
    cells = g["config_hash"].nunique() if "config_hash" in g and g["config_hash"].notna().all() \
        else len(g)  # fmt: skip
    statuses = ", ".join(f"{n} {s}" for s, n in g["status"].value_counts().items())
    secs = sum(pd.to_numeric(g[c], errors="coerce").fillna(0).sum() for c in PHASES if c in g)
    over = pd.to_numeric(g["overhead_s"], errors="coerce")
    eager = over[g["compile"] == "off"].median()
    comp = over[g["compile"] != "off"].median()
    return [source, len(g), cells, statuses, sig(secs / 60), sig(eager), sig(comp), secs]
