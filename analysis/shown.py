"""Which µs a call a table or figure shows beside the speedup: the paired blocks' (eager and
compiled timed in alternation in one process, the two the speedup comes from), never the
cells' calls timed apart, whose ratio is not the speedup (docs/method.md, "One speedup").
CSV only; no torch."""

from __future__ import annotations

import numpy as np
import pandas as pd

from analysis.measures import number, speedups
from study.rows.metrics import apart_note


def drawn_us(r: pd.DataFrame) -> pd.Series:
    """The µs a call a figure draws beside the speedup, so that eager and compiled bars (or
    lines) give the speedup's ratio: a paired compiled cell's compiled blocks (``compiled_us``);
    an eager cell's eager blocks timed beside its compiled twins (median of their
    ``eager_us``, twins found by ``eager_hash``); else the cell's own latency, timed apart."""
    r = with_shown(r)
    lat = pd.to_numeric(r.get("latency_median_us", pd.Series(index=r.index)), errors="coerce")
    out = r["compiled_us"].where(r["sp_kind"] == "paired", lat)
    if "eager_hash" in r and "config_hash" in r:
        src = r["source"] if "source" in r else pd.Series("", index=r.index)
        ep = pd.to_numeric(r.get("eager_latency_paired_us", lat * np.nan), errors="coerce")
        paired = r[(r["sp_kind"] == "paired") & ep.notna()]
        beside = ep[paired.index].groupby([src[paired.index], paired["eager_hash"]]).median()
        for i in r.index[r.get("compile", pd.Series("", index=r.index)) == "off"]:
            v = beside.get((src[i], r.at[i, "config_hash"]))
            if v is not None and v == v:
                out[i] = v
    return out


def with_shown(r: pd.DataFrame) -> pd.DataFrame:
    """``measures.speedups``, and per row ``compiled_us``: the compiled µs a call in the terms
    of ``sp`` (the paired compiled blocks'; the row's own per-call latency for an eager cell or
    an unpaired one); ``apart``: where the ratio of the two cells' latencies timed apart
    (``speedup``) disagrees with the paired speedup beyond its interval, a few words saying so
    and why (``study.rows.metrics.apart_note``), else ''."""
    r = speedups(r)
    nan = pd.Series(np.nan, index=r.index)
    lat, cross = r.get("latency_median_us", nan), r.get("speedup", nan)
    eager_p, paired = r.get("eager_latency_paired_us", nan), r.get("speedup_paired", nan)
    lo_p, hi_p = r.get("speedup_ci_low", nan), r.get("speedup_ci_high", nan)
    use_p = r["sp_kind"] == "paired"
    comp_p = r["compiled_latency_paired_us"] if "compiled_latency_paired_us" in r else nan
    comp_p = comp_p.where(comp_p.notna(), eager_p / paired)  # rows before the column
    r["compiled_us"] = comp_p.where(use_p & comp_p.notna(), lat)  # as paired_us, per row
    phase = r["timing_phase"] if "timing_phase" in r else pd.Series("", index=r.index)
    twin = r["eager_phase"] if "eager_phase" in r else pd.Series("", index=r.index)
    busy = [
        any(str(p) not in ("", "nan", "None", "fast") for p in pair)
        for pair in zip(phase.fillna(""), twin.fillna(""), strict=True)
    ]
    r["apart"] = [
        apart_note(a, p, lo, hi, b) if k == "paired" else ""
        for a, p, lo, hi, b, k in zip(cross, paired, lo_p, hi_p, busy, r["sp_kind"], strict=True)
    ]
    return r


def paired_us(row) -> tuple[float, float] | None:
    """(eager, compiled) µs a call of a paired row's own blocks, the two its speedup comes from
    (``compiled_latency_paired_us``, else eager's over the speedup in rows before that
    column); None for a row without paired blocks."""
    e, sp = number(row.get("eager_latency_paired_us")), number(row.get("sp"))
    if row.get("sp_kind") != "paired" or e != e or sp != sp or sp <= 0:
        return None
    c = number(row.get("compiled_latency_paired_us"))
    return e, c if c == c else e / sp


DRAWN = ("eager and compiled µs from the paired blocks where a compiled cell has them (their "
         "ratio is the speedup; an eager bar is its blocks timed beside its compiled twins), "
         "else each cell's own calls timed apart")  # fmt: skip
