"""The sweep's own cost, per source: cells, statuses, the summed cell time and the harness
overhead of eager and compiled cells. Part of ``python -m analysis.findings``.

Cell time is the sum over rows (repeats included) of the phases a row records: gpu_wait_s,
first_call_s (compile), check_s, measure_s, profile_s, extra_s and overhead_s (process start,
setup, generated code, rows). That is the serial sweep's wall time minus Hydra's gaps between
jobs; a phase a row lacks counts as 0 and is named.

The first cell of each sweep process waits for the warm cell server's imports (torch, Dynamo,
Inductor: once per sweep, 4-9 s on the H200); its ``prepare_s`` shows it. The medians of
``overhead_s`` leave that wait out (a ``prepare_s`` above ``SERVER_START`` s) and it gets its
own column, so a source with one eager cell does not read as if every eager cell paid it.

GPUs: how many GPUs the sweep ran cells on at once, from ``gpu_index`` (written by the
``gpus`` launcher; empty with one GPU and no launcher). "1; 2": some rows from a one-GPU run,
the rest from a two-GPU resume into the same sweep dir.
"""

from __future__ import annotations

import pandas as pd

from analysis.findings_common import table
from analysis.measures import sig

PHASES = ["overhead_s", "gpu_wait_s", "first_call_s", "check_s", "measure_s", "profile_s",
          "extra_s"]  # fmt: skip
SERVER_START = 1.0  # s: a prepare_s above this waited for the server's imports (else ~0.03 s)


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
        + "; overhead = process start, setup, generated code and rows, per cell, leaving out "
        "the first cell's wait for the warm server's imports, which the last column gives, "
        "once per sweep process):",
        "",
        *table(
            [
                "source",
                "rows",
                "cells",
                "statuses",
                "GPUs",
                "cell time, min",
                "median overhead s, eager",
                "compiled",
                "server start s",
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
    prep = pd.to_numeric(g.get("prepare_s"), errors="coerce") if "prepare_s" in g else None
    start = ""
    if prep is not None:
        wait = prep.where(prep > SERVER_START, 0.0).fillna(0.0)
        over = over - wait
        start = ", ".join(sig(w) for w in wait[wait > 0])
    eager = over[g["compile"] == "off"].median()
    comp = over[g["compile"] != "off"].median()
    gpus = []
    if "gpu_index" not in g or g["gpu_index"].isna().any():
        gpus.append("1")
    if "gpu_index" in g and g["gpu_index"].notna().any():
        gpus.append(str(g["gpu_index"].nunique()))
    return [source, len(g), cells, statuses, "; ".join(gpus), sig(secs / 60), sig(eager),
            sig(comp), start, secs]  # fmt: skip
