"""Which of max-autotune's picks changed between two studies, and why, from ``autotune.csv``.

A max-autotune cell benchmarks every choice for each op (cuBLAS and Triton templates) and keeps
the fastest. When the same cell picks differently in B, its kernels and latency change with
no change in the code: the pick, not torch.compile, moved. Telling the two apart needs the times
behind the pick: whether A's winner read slower in B (the benchmark moved: host load, the GPU,
another cell beside it) or B's winner read faster. Reads only CSVs.
"""

from __future__ import annotations

import pandas as pd

OP_KEY = ["op_id", "op", "input_shapes"]


def _us(x) -> str:
    return f"{x:.3g} µs" if x == x else "? µs"


def _winners(at: pd.DataFrame) -> dict[tuple, tuple[str, float, dict[str, float]]]:
    """(op_id, op, input_shapes) -> (winner, its time, every choice's time)."""
    out = {}
    for key, g in at.groupby(OP_KEY, sort=True, dropna=False):
        times = dict(zip(g["choice"], pd.to_numeric(g["time_us"], errors="coerce"), strict=True))
        won = g[g["winner"].astype(str).str.lower() == "true"]
        if len(won):
            w = str(won["choice"].iloc[0])
            out[key] = (w, times.get(w, float("nan")), times)
    return out


def _cells(at: pd.DataFrame) -> dict[tuple[str, str], pd.DataFrame]:
    if at is None or at.empty or not {"source", "run_id", "choice", "winner", *OP_KEY} <= set(at):
        return {}
    return {k: g for k, g in at.groupby(["source", "run_id"], sort=False)}


def changes(at_a: pd.DataFrame, at_b: pd.DataFrame, m: pd.DataFrame) -> list[str]:
    """Per matched cell of ``m`` (``analysis.compare.match``), the ops whose pick changed:
    ``op0 bmm [shapes]: A's winner and time → B's winner and time (A's winner read t in B)``;
    "" where nothing changed or a side has no ``autotune.csv`` for the cell."""
    ca, cb = _cells(at_a), _cells(at_b)
    out = []
    for sa, ra, sb, rb in zip(m["source_a"], m["run_id_a"], m["source_b"], m["run_id_b"],
                              strict=True):  # fmt: skip
        a, b = ca.get((sa, ra)), cb.get((sb, rb))
        if a is None or b is None:
            out.append("")
            continue
        wa, wb = _winners(a), _winners(b)
        said = []
        for key in sorted(set(wa) & set(wb), key=lambda k: (str(k[0]), str(k[1]), str(k[2]))):
            (na, ta, _), (nb, tb, times_b) = wa[key], wb[key]
            if na == nb:
                continue
            was = times_b.get(na)
            why = (f"{na} read {_us(was)} in B" if was is not None and was == was
                   else f"{na} not benchmarked in B")  # fmt: skip
            said.append(f"op{key[0]} {key[1]} {key[2]}: {na} {_us(ta)} → {nb} {_us(tb)} ({why})")
        out.append("; ".join(said))
    return out
