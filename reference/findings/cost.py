"""The sweep's own cost, per source: cells, statuses, the summed cell time and the harness
overhead of eager and compiled cells. Part of ``python -m reference.findings``.

Cell time is the sum over rows (repeats included) of the phases a row records: gpu_wait_s,
first_call_s (compile), check_s, measure_s, profile_s, extra_s and overhead_s (process start,
setup, generated code, rows). That is the serial sweep's wall time minus Hydra's gaps between
jobs; a phase a row lacks counts as 0 and is named.

The first cell of each sweep process waits for the warm parent's imports (torch, Dynamo,
Inductor: once per sweep, 4-9 s on the H200); its ``prepare_s`` shows it. The medians of
``overhead_s`` leave that wait out (a ``prepare_s`` above ``PARENT_START`` s) and it gets its
own column, so a source with one eager cell does not read as if every eager cell paid it.

GPUs: the GPUs the source's rows ran on, from ``gpu_index`` (written by the ``gpus``
launcher, which runs one cell per GPU at a time; blank with one GPU and no launcher): "1" = no
launcher, one GPU; "2 (0, 1)" = under the launcher, on GPUs 0 and 1; "1; 1 row on the launcher
(0)" = a one-GPU sweep that a launcher's resume finished; "CPU" = no GPU.
"""

from __future__ import annotations

import pandas as pd

from analysis.measures import sig
from analysis.pairs import table

PHASES = ["overhead_s", "gpu_wait_s", "first_call_s", "check_s", "measure_s", "profile_s",
          "extra_s"]  # fmt: skip
PARENT_START = 1.0  # s: a prepare_s above this waited for the warm parent's imports (else ~0.03 s)


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
        "the first cell's wait for the warm parent's imports, which the last column gives, "
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
                "warm parent start s",
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
        wait = prep.where(prep > PARENT_START, 0.0).fillna(0.0)
        over = over - wait
        start = ", ".join(sig(w) for w in wait[wait > 0])
    eager = over[g["compile"] == "off"].median()
    comp = over[g["compile"] != "off"].median()
    gpus = _gpus(g)
    return [source, len(g), cells, statuses, gpus, sig(secs / 60), sig(eager),
            sig(comp), start, secs]  # fmt: skip


def _gpus(g: pd.DataFrame) -> str:
    """Which GPUs the rows ran on (the module's docstring gives the forms)."""
    if "device" in g and (g["device"] == "cpu").all():
        return "CPU"
    idx = g["gpu_index"] if "gpu_index" in g else pd.Series(float("nan"), g.index)
    on = sorted({int(i) for i in idx.dropna()})
    which = f"({', '.join(map(str, on))})"
    if not on:
        return "1"
    if idx.notna().all():
        return f"{len(on)} {which}"
    n = int(idx.notna().sum())
    return f"1; {n} row{'s' if n > 1 else ''} on the launcher {which}"
