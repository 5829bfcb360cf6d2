"""The answer for compiled cells without an eager twin: a compiled-only sweep (``compile=default
start=cold,artifacts``, which ``compile=off`` refuses, or ``compile.regional=false,true``,
``compile.stance=default,skip_guard_eval_unsafe``). Each cell's speedup is still paired (eager
timed in its own process, in alternating blocks); what the sweep asks is what its axes changed,
so each cell is set against the one that differs from it in one axis only, at that axis's
default (start cold, the whole model, guards evaluated). Pure pandas; no torch."""

from __future__ import annotations

import pandas as pd

from analysis.measures import AXES, axis_values, number, order, sig
from analysis.shown import with_shown
from analysis.style import cell_labels
from analysis.tables.causes import interval, per_call, verdict

# the axes a compiled-only answer compares, and how a value reads
NAMES = {"start": "start", "regional": "regional", "compile_stance": "stance", "cache": "cache",
         "freezing": "freezing", "compiled_autograd": "compiled autograd"}  # fmt: skip
SAID = ("No compiled cell here has an eager twin (compile=off), so each is set against the cell "
        "that differs from it in one axis only, at that axis's default (start cold, the whole "
        "model, guards evaluated): first call, compile seconds and speedup. The speedup is still "
        "paired: eager timed in the cell's own process, in alternating blocks.")  # fmt: skip


def _value(c: str, v: str) -> str:
    if c in ("regional", "freezing", "compiled_autograd"):
        return {"1": "on", "0": "off"}.get(v, v)
    return v


def _s(v) -> str:
    return f"{sig(v)} s" if v == v else "?"


def answer(runs: pd.DataFrame, skip=()) -> pd.DataFrame:
    """One row per ok compiled cell with a speedup whose run_id is not in ``skip`` (those the
    eager-twin answer gave): ``cell`` (with the axes the sweep crossed), ``verdict``,
    ``speedup``, ``µs a call`` (paired blocks), ``first call s``, ``compile s`` and
    ``against``: what each axis off its default changed against the cell at the default."""
    cols = ["cell", "verdict", "speedup", "µs a call", "first call s", "compile s", "against"]
    if runs.empty or "compile" not in runs:
        return pd.DataFrame(columns=cols)
    r = with_shown(runs)
    r = r[(r["status"] == "ok") & (r["compile"] != "off") & r["sp"].notna()]
    r = r[~r["run_id"].isin(set(skip))]
    if r.empty:
        return pd.DataFrame(columns=cols)
    if "source" not in r:
        r = r.assign(source="")
    axes = [c for c in NAMES if c in r and axis_values(r, c).nunique() > 1]
    vals = pd.DataFrame({c: axis_values(r, c) for c in axes}, index=r.index)
    base = cell_labels(r) + "|" + r["source"].astype(str)
    first = {b: k for k, b in enumerate(dict.fromkeys(base[order(r).index]))}
    off = (vals != pd.Series(AXES)[axes]).sum(axis=1) if axes else pd.Series(0, index=r.index)
    rank = sorted(r.index, key=lambda i: (first[base[i]], off[i]))  # the baseline first
    out = []
    for i, c in r.loc[rank].iterrows():
        said = [f"{NAMES[a]} {_value(a, vals.at[i, a])}" for a in axes]
        against = []
        for a in axes:
            if vals.at[i, a] == AXES[a]:
                continue
            same = (base == base[i]) & (vals[a] == AXES[a])
            for b in axes:
                if b != a:
                    same &= vals[b] == vals.at[i, b]
            if not same.any():
                continue
            d = r.loc[same[same].index[0]]
            against.append(
                f"{NAMES[a]} {_value(a, vals.at[i, a])} against {_value(a, AXES[a])}: first call "
                f"{_s(number(d.get('first_call_s')))} → {_s(number(c.get('first_call_s')))}, "
                f"compile {_s(number(d.get('compile_s')))} → {_s(number(c.get('compile_s')))}, "
                f"speedup {sig(d['sp'])}x → {sig(c['sp'])}x"
            )
        phase = str(c.get("timing_phase") or "fast")
        v = verdict(c)
        out.append({
            "cell": " · ".join([cell_labels(r.loc[[i]]).iloc[0], *said]),
            "verdict": v if phase in ("fast", "nan") else f"{v} (host {phase})",
            "speedup": interval(c),
            "µs a call": per_call(c, {"latency_median_us": float("nan")}),
            "first call s": sig(number(c.get("first_call_s"))),
            "compile s": sig(number(c.get("compile_s"))),
            "against": "; ".join(against) or ("the baseline: each axis at its default" if axes else ""),
        })  # fmt: skip
    return pd.DataFrame(out, columns=cols)
