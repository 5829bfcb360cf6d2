"""What max-autotune picked, per cell and op, from ``autotune.csv``: the report's table.

For each op a max-autotune cell tuned: the choice it kept (over its repeats: each pick and how
often), whether that is an extern kernel (ATen: cuBLAS and the like) or a Triton template, the
best time of each kind, and how close the runner-up came. A runner-up within ``NEAR`` is a
near tie: a pick that fresh processes, host load or a cell beside it can flip, and with it the
cell's kernels. Reads only CSVs.
"""

from __future__ import annotations

import pandas as pd

from analysis.load import cell_id
from analysis.measures import order, sig
from study.schema import SHAPE_KEYS

NEAR = 0.02


def _kind(choice: str) -> str:
    return "Triton" if str(choice).startswith("triton_") else "ATen"


def table(repeats: pd.DataFrame, autotune: pd.DataFrame) -> pd.DataFrame:
    """One row per max-autotune cell and op. ``repeats``: every runs.csv row (``load``'s
    ``repeats``), so that a cell's repeats are read together."""
    need = {"source", "run_id", "op_id", "op", "input_shapes", "choice", "time_us", "winner"}
    if autotune is None or autotune.empty or repeats.empty or not need <= set(autotune):
        return pd.DataFrame()
    keys = [c for c in ("variant", "compile", "pass", *SHAPE_KEYS) if c in repeats]
    cells = repeats[["source", "run_id", *keys]].assign(_cell=cell_id(repeats))
    at = autotune.merge(cells, on=["source", "run_id"])
    if at.empty:
        return pd.DataFrame()
    at = at.assign(
        op_id=pd.to_numeric(at["op_id"], errors="coerce").astype("Int64"),
        input_shapes=at["input_shapes"].fillna("").astype(str),
        time_us=pd.to_numeric(at["time_us"], errors="coerce"),
        won=at["winner"].astype(str).str.lower() == "true",
    )
    rows = []
    for (_, _, op_id, op, shapes), g in at.groupby(
        ["source", "_cell", "op_id", "op", "input_shapes"], sort=False, dropna=False
    ):
        n = g["run_id"].nunique()
        picks = g[g["won"]]["choice"].astype(str).value_counts()
        if picks.empty:
            continue
        won_us, margins, runners = [], [], []
        for _, one in g.groupby("run_id", sort=False):  # each repeat: its pick and runner-up
            t = one.dropna(subset=["time_us"]).sort_values("time_us")
            w = t[t["won"]]
            if w.empty or len(t) < 2:
                continue
            won_us.append(float(w["time_us"].iloc[0]))
            rest = t[t["choice"] != w["choice"].iloc[0]]
            margins.append(float(rest["time_us"].iloc[0]) / won_us[-1] - 1)
            runners.append(str(rest["choice"].iloc[0]))
        t = g.groupby("choice", sort=False)["time_us"].median().dropna().sort_values()
        kinds = {k: t[[c for c in t.index if _kind(c) == k]] for k in ("ATen", "Triton")}
        margin = float(pd.Series(margins).median()) if margins else float("nan")
        row = {k: g[k].iloc[0] for k in ("source", *keys)}
        row |= {
            "op": f"op{op_id} {op} {shapes or '?'}",
            "picked": ", ".join(
                f"{c} ({_kind(c)})" + (f" ×{k}" if n > 1 else "") for c, k in picks.items()
            ),
            "held": f"{picks.iloc[0]} of {n}" if n > 1 else "",
            "picked µs": sig(float(pd.Series(won_us).median())) if won_us else "",
            "best ATen µs": sig(kinds["ATen"].iloc[0]) if len(kinds["ATen"]) else "",
            "best Triton µs": sig(kinds["Triton"].iloc[0]) if len(kinds["Triton"]) else "",
            "runner-up": ""
            if margin != margin
            else (
                f"{runners[0]} +{margin:.1%}" + (" (near tie)" if margin <= NEAR else "")
            ),  # fmt: skip
            "choices": len(t),
        }
        rows.append(row)
    if not rows:
        return pd.DataFrame()
    out = order(pd.DataFrame(rows)).reset_index(drop=True)
    # the op's input shapes stand for the cell's shape; a pass only where it varies
    drop = [c for c in SHAPE_KEYS if c in out]
    if "pass" in out and out["pass"].nunique(dropna=False) <= 1:
        drop.append("pass")
    return out.drop(columns=drop).rename(columns={"compile": "mode"})
