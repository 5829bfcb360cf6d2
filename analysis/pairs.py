"""Compiled cells set against their eager twin: the pairing (``with_eager``), which side is
host-bound, the device time that tells device from host, and the verdict a speedup reads.
Shared by the report's figures, the tables and the reference study's Findings. Pure pandas on
the CSVs; no torch.

A speedup is the paired one where the row has it (eager and compiled timed in alternation in
one process, with a 95% interval), else the cross-process ratio of the two cells' medians in
the same sweep (``analysis.measures.speedups``). A paired interval that holds 1.0 reads "no
measurable difference" (``study.observe.stats.verdict``); one that excludes it within ±1%
(``measures.PAIRED_NOISE``, the pairs' own error) reads "within ±1%". A cell run in several
fresh processes is one row (``analysis.load.cells``: medians, from the repeats timed in the
host's fast phase where it has any), its speedup and interval the ones that cover processes
(``study.observe.stats.across_processes``: a t-interval on the log ratios with each process's
own error added, centred on their geometric mean).
"""

from __future__ import annotations

import pandas as pd

from analysis.measures import PAIRED_NOISE, host_bound_of, number, speedups
from study.observe.stats import verdict as stats_verdict
from study.rows.schema import SHAPE_KEYS

# A cross-process speedup within this of 1 is no change: compiled GPU-bound cells repeat within
# ~1% across processes on the H200 (benchmarks/README.md).
NOISE = 0.02
SHAPE_COLS = list(SHAPE_KEYS)


def ok(runs: pd.DataFrame) -> pd.DataFrame:
    return runs[runs["status"] == "ok"]


def host_bound(r: pd.DataFrame) -> pd.Series:
    """The GPU waits on the host, by the one rule (``study.rows.metrics.host_bound``, SCHEMA.md):
    per-call latency more than 10% over the profiler's GPU busy time per step, applied to the
    cell's own figures (its medians, for a repeated cell), else the ``host_bound`` column the
    runtime wrote by that rule; False where neither is known."""
    return host_bound_of(r).fillna(False).astype(bool)


def one_core(runs: pd.DataFrame) -> pd.Series:
    """Rows timed with all the cell's threads on one core (``timing_core`` recorded, since
    timing.one_core): only they give a training step's host time. With the threads spread, the
    backward's thread ran on other cores in other host phases (docs/method.md)."""
    core = runs["timing_core"] if "timing_core" in runs else pd.Series(index=runs.index)
    return pd.to_numeric(core, errors="coerce").notna()


def with_eager(runs: pd.DataFrame) -> pd.DataFrame:
    """Compiled ok cells with their eager twin of the same source, pass and shape (never across
    sweeps: processes differ): ``eager_lat``, ``eager_kernels``, ``eager_run_id``, the twin's
    device time, host-boundness and timing phase (``eager_dev``, ``eager_hb``,
    ``eager_phase``), and the cross-process
    ``speedup`` recomputed from the two medians. Then ``measures.speedups``."""
    o = ok(runs)
    keys = ["source", "variant", "pass", *[c for c in SHAPE_COLS if c in o]]
    if "mask" in o:
        keys.append("mask")
    e = o[o["compile"] == "off"].copy()
    c = o[o["compile"] != "off"].copy()
    for x in (e, c):  # NaN never equals NaN in a merge key
        for k in keys:
            x[k] = x[k].astype(object).where(x[k].notna(), "-")
    e["eager_hb"] = host_bound(e)  # by its own figures, before they are renamed
    e["eager_dev"] = pd.to_numeric(
        e.get("device_time_us", pd.Series(index=e.index)), errors="coerce"
    )
    e["eager_dev_method"] = e.get("device_time_method", pd.Series("", index=e.index)).fillna("")
    e["eager_gpu"] = pd.to_numeric(
        e.get("gpu_us_per_step", pd.Series(index=e.index)), errors="coerce"
    )
    e["eager_phase"] = e.get("timing_phase", pd.Series("", index=e.index)).fillna("").astype(str)
    e = e.drop_duplicates(keys)[
        [
            *keys,
            "latency_median_us",
            "kernels_per_step",
            "run_id",
            "eager_hb",
            "eager_dev",
            "eager_dev_method",
            "eager_gpu",
            "eager_phase",
        ]
    ].rename(
        columns={
            "latency_median_us": "eager_lat",
            "kernels_per_step": "eager_kernels",
            "run_id": "eager_run_id",
        }
    )
    m = c.merge(e, on=keys, how="inner")
    for k in keys:
        m[k] = m[k].where(m[k] != "-", None)
    m["speedup"] = m["eager_lat"] / m["latency_median_us"]
    return speedups(m)


def device_pair(x) -> tuple[float, float]:
    """(compiled, eager) device µs a call for telling device from host: ``device_time_us``
    where both sides took it from a CUDA-graph replay (the device alone, the most precise),
    else the trace's GPU busy time a step (``gpu_us_per_step``, the same profiler on both
    sides) where both have it, else ``device_time_us``. A CUDA-graph mode's device_time_us is
    do_bench around whole calls (its graphs cannot be captured again), which on a host-bound
    call times the host: compiled nn.Linear under reduce-overhead reads 46.7 µs there and 7.0
    µs busy in its trace."""
    d, ed = number(x.get("device_time_us")), number(x.get("eager_dev"))
    replay = all(
        str(x.get(k) or "").startswith("cuda_graph_replay")
        for k in ("device_time_method", "eager_dev_method")
    )
    if replay and d == d and ed == ed:
        return d, ed
    g, eg = number(x.get("gpu_us_per_step")), number(x.get("eager_gpu"))
    if g == g and eg == eg:
        return g, eg
    return d, ed


def verdict(row) -> str:
    """faster, slower or no measurable difference: the 95% interval where there is one (a
    paired one that excludes 1.0 inside ±PAIRED_NOISE is 'within ±1%'), else the cross-process
    ratio against ±NOISE."""
    sp, lo, hi = row.get("sp"), row.get("sp_lo"), row.get("sp_hi")
    if sp is None or sp != sp:
        return ""
    if lo == lo and hi == hi and lo is not None and hi is not None:
        said = stats_verdict(sp, lo, hi)
        paired = row.get("sp_kind") == "paired"
        inside = paired and 1 - PAIRED_NOISE <= lo and hi <= 1 + PAIRED_NOISE
        return (
            f"within ±{PAIRED_NOISE:.0%}" if said != "no measurable difference" and inside else said
        )
    if abs(sp - 1) <= NOISE:
        return f"within ±{NOISE:.0%}"
    return "faster" if sp > 1 else "slower"


def table(header: list[str], rows: list[list]) -> list[str]:
    """A Markdown table; cells are text already."""
    return [
        "| " + " | ".join(header) + " |",
        "| " + " | ".join("---" for _ in header) + " |",
        *("| " + " | ".join(str(x) for x in r) + " |" for r in rows),
    ]
