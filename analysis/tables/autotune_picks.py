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
from analysis.measures import order
from study.rows.schema import SHAPE_KEYS

NEAR = 0.02
TELL = ("dtype", "mask", "score_mod", "causal", *SHAPE_KEYS)  # what tells two cells apart


NEED = {"source", "run_id", "op_id", "op", "input_shapes", "choice", "time_us", "winner"}


def normalised(at: pd.DataFrame) -> pd.DataFrame:
    """``autotune.csv`` rows as numbers and flags: op_id an integer, shapes text ("" where
    symbolic), time_us a float (NaN where the choice failed), ``won`` a bool."""
    return at.assign(
        op_id=pd.to_numeric(at["op_id"], errors="coerce").astype("Int64"),
        input_shapes=at["input_shapes"].fillna("").astype(str),
        time_us=pd.to_numeric(at["time_us"], errors="coerce"),
        won=at["winner"].astype(str).str.lower() == "true",
    )


def _kind(choice: str) -> str:
    return "Triton" if str(choice).startswith("triton_") else "ATen"


def _runner_up(margins: list[tuple[float, str]]) -> str:
    """The runner-up of the repeat with the median margin, with that margin; over several
    repeats, their range; a near tie where any repeat's runner-up came within ``NEAR``."""
    if not margins:
        return ""
    ms = sorted(margins)
    m, name = ms[(len(ms) - 1) // 2]
    out = f"{name} {m:+.1%}"
    if len(ms) > 1:
        out += f" (repeats {ms[0][0]:+.1%} to {ms[-1][0]:+.1%})"
    return out + (" near tie" if ms[0][0] <= NEAR else "")


def table(repeats: pd.DataFrame, autotune: pd.DataFrame) -> pd.DataFrame:
    """One row per max-autotune cell and op. ``repeats``: every runs.csv row (``load``'s
    ``repeats``), so that a cell's repeats are read together. Times are floats (µs); rows of
    ``autotune.csv`` without a runs.csv row are left out."""
    # Long: one table, per op: the pick over repeats, the best ATen and Triton times, the runner-up.
    if autotune is None or autotune.empty or repeats.empty or not NEED <= set(autotune):
        return pd.DataFrame()
    keys = [c for c in ("variant", "compile", "pass", *TELL) if c in repeats]
    cells = repeats[["source", "run_id", *keys]].assign(
        _cell=cell_id(repeats),
        _rep=pd.to_numeric(repeats["repeat"], errors="coerce") if "repeat" in repeats else 0,
    )
    cells = cells.drop_duplicates(["source", "run_id"])
    at = autotune.merge(cells, on=["source", "run_id"])
    if at.empty:
        return pd.DataFrame()
    at = normalised(at).sort_values("_rep", kind="stable")
    rows = []
    for (_, _, op_id, op, shapes), g in at.groupby(
        ["source", "_cell", "op_id", "op", "input_shapes"], sort=False, dropna=False
    ):
        n = g["run_id"].nunique()
        picks = g[g["won"]]["choice"].astype(str).value_counts()
        if picks.empty:
            continue
        won_us, margins = [], []
        for _, one in g.groupby("run_id", sort=False):  # each repeat: its pick and runner-up
            t = one.dropna(subset=["time_us"]).sort_values("time_us")
            w = t[t["won"]]
            if w.empty:
                continue
            won_us.append(float(w["time_us"].iloc[0]))
            rest = t[t["choice"] != w["choice"].iloc[0]]
            if len(rest):
                margins.append((float(rest["time_us"].iloc[0]) / won_us[-1] - 1,
                                str(rest["choice"].iloc[0])))  # fmt: skip
        t = g.groupby("choice", sort=False)["time_us"].median().dropna().sort_values()
        best = {k: t[[c for c in t.index if _kind(c) == k]] for k in ("ATen", "Triton")}
        row = {k: g[k].iloc[0] for k in ("source", *keys)}
        row |= {
            "op": f"op{op_id} {op} {shapes or '?'}",
            "picked": ", ".join(
                f"{c} ({_kind(c)})" + (f" ×{k}" if n > 1 else "") for c, k in picks.items()
            ),
            "held": f"{picks.iloc[0]} of {n}" if n > 1 else "",
            "picked µs": float(pd.Series(won_us).median()) if won_us else float("nan"),
            "best ATen µs": float(best["ATen"].iloc[0]) if len(best["ATen"]) else float("nan"),
            "best Triton µs": float(best["Triton"].iloc[0])
            if len(best["Triton"])
            else float("nan"),
            "runner-up": _runner_up(margins),
            "choices": len(t),
        }
        rows.append(row)
    if not rows:
        return pd.DataFrame()
    out = order(pd.DataFrame(rows)).reset_index(drop=True)
    # the op's input shapes stand for the cell's shape; the rest only where it varies
    drop = [c for c in SHAPE_KEYS if c in out]
    drop += [c for c in ("pass", *TELL) if c in out and c not in drop
             and out[c].astype(str).nunique(dropna=False) <= 1]  # fmt: skip
    return out.drop(columns=drop).rename(columns={"compile": "mode"})
