"""Which of max-autotune's picks changed between two studies, and why, from ``autotune.csv``.

A max-autotune cell benchmarks every choice for each op (cuBLAS and Triton templates) and keeps
the fastest. When the same cell picks differently in B, its kernels and latency can change with
no change in the study's code. The times behind both picks tell why: A's winner read slower in
B (with the same torch: the benchmark moved, from host load, the GPU, a cell beside it), or B's
winner read faster (a new choice, a new torch). A pick counts as changed only when no repeat of
the cell on one side picked what a repeat on the other side picked (picks move between fresh
processes too), and as a tie when, in B's benchmark, A's winner was within ``TIE`` of B's.
Ops are matched by their order of tuning, name and input shapes. Reads only CSVs.
"""

from __future__ import annotations

import pandas as pd

from analysis.load import cell_id
from analysis.measures import sig
from analysis.tables.autotune_picks import NEAR, NEED, normalised

OP_KEY = ["op_id", "op", "input_shapes"]
TIE = NEAR  # one threshold for a tie, here and in the report's table


def _times(at: pd.DataFrame) -> dict[tuple, tuple[list[str], dict[str, float]]]:
    """(op_id, op, shapes) -> (winners over the repeats, in order; median time of each choice,
    NaN where it failed)."""
    out = {}
    for key, g in normalised(at).groupby(OP_KEY, sort=True, dropna=False):
        won = g[g["won"]]["choice"].astype(str)
        times = g.groupby("choice", sort=False)["time_us"].median().to_dict()
        if len(won):
            out[key] = (list(dict.fromkeys(won)), times)
    return out


def _repeats(d: dict) -> dict[tuple[str, str], list[str]]:
    """(source, run_id) -> the run_ids of every repeat of that cell, from ``d["repeats"]``."""
    r = d.get("repeats")
    if r is None or r.empty or not {"source", "run_id"} <= set(r):
        return {}
    r = pd.DataFrame({"source": r["source"], "run_id": r["run_id"], "_cell": cell_id(r)})
    ids = r.groupby(["source", "_cell"], sort=False)["run_id"].agg(list)
    return {(s, rid): runs for (s, _), runs in ids.items() for rid in runs}


def _cell(at: pd.DataFrame, source: str, run_ids: list[str]) -> pd.DataFrame | None:
    x = at[(at["source"] == source) & at["run_id"].isin(run_ids)]
    return x if len(x) else None


def _read(name: str, times: dict[str, float], side: str) -> str:
    if name not in times:
        return f"{name} not benchmarked in {side}"
    t = times[name]
    return f"{name} failed in {side}" if t != t else f"{name} read {sig(t)} µs in {side}"


def _picks(names: list[str], times: dict[str, float]) -> str:
    return ", ".join(f"{n} {sig(times.get(n, float('nan')))} µs" for n in names)


def changes(da: dict, db: dict, m: pd.DataFrame) -> list[tuple[str, bool]]:
    """Per matched cell of ``m`` (``analysis.compare.match``; ``da``/``db`` from
    ``analysis.load.load``): (what changed, whether every change is a tie). What changed is,
    per op whose pick changed, ``op0 bmm [shapes]: A's pick → B's pick (A's winner read t in B,
    +x% on B's pick; B's winner read t in A)``; "" where nothing changed or a side kept no
    ``autotune.csv`` for the cell."""
    at_a, at_b = da.get("autotune"), db.get("autotune")
    if at_a is None or at_b is None or not NEED <= set(at_a) or not NEED <= set(at_b):
        return [("", False)] * len(m)
    rep_a, rep_b = _repeats(da), _repeats(db)
    out = []
    for sa, ra, sb, rb in zip(m["source_a"], m["run_id_a"], m["source_b"], m["run_id_b"],
                              strict=True):  # fmt: skip
        a = _cell(at_a, sa, rep_a.get((sa, ra), [ra]))
        b = _cell(at_b, sb, rep_b.get((sb, rb), [rb]))
        if a is None or b is None:
            out.append(("", False))
            continue
        ta, tb = _times(a), _times(b)
        said, ties = [], []
        for key in sorted(set(ta) & set(tb), key=lambda k: (k[0], str(k[1]), k[2])):
            (wa, times_a), (wb, times_b) = ta[key], tb[key]
            if set(wa) & set(wb):
                continue  # some repeat on each side picked the same
            na = wa[0]
            nb = min(wb, key=lambda n: times_b.get(n, float("inf")))  # B's fastest pick
            margin = times_b.get(na, float("nan")) / times_b[nb] - 1 if nb in times_b else None
            tie = margin is not None and margin == margin and abs(margin) <= TIE
            why = _read(na, times_b, "B")
            if margin is not None and margin == margin:
                why += f", {margin:+.1%} on B's pick"
            why += "; " + _read(nb, times_a, "A")
            shapes = key[2] or "?"
            said.append(f"op{key[0]} {key[1]} {shapes}: {_picks(wa, times_a)} → "
                        f"{_picks(wb, times_b)} ({why})" + (" [a tie]" if tie else ""))  # fmt: skip
            ties.append(tie)
        out.append(("; ".join(said), bool(ties) and all(ties)))
    return out
