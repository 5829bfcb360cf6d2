"""What every Findings section shares: the results it reads, which rows it may compare, and
how a speedup is written. Pure pandas on the committed CSVs; no torch.

A speedup is the paired one where the row has it (eager and compiled timed in alternation in
one process, with a 95% interval), else the cross-process ratio of the two cells' medians in
the same sweep (``analysis.measures.speedups``). A paired interval that holds 1.0 reads "no
measurable difference" (``study.observe.stats.verdict``); one that excludes it within ±1%
(``measures.PAIRED_NOISE``, the pairs' own error) reads "within ±1%". A cell run in several fresh processes is one
row (``analysis.load.cells``: medians, from the repeats timed in the host's fast phase where it
has any), its speedup and interval the ones that cover processes
(``study.observe.stats.across_processes``: a t-interval on the log ratios with each process's
own error added, centred on their geometric mean; the training tables, figures and
``analysis.compare`` too), and its min-max over repeats quoted beside it as a range.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from analysis.load import TEXT, cells
from analysis.measures import PAIRED_NOISE, host_bound_of, number, sig, speedups, xs
from study.observe.stats import verdict as stats_verdict
from study.rows.schema import SHAPE_KEYS

# A cross-process speedup within this of 1 is no change: compiled GPU-bound cells repeat within
# ~1% across processes on the H200 (benchmarks/README.md).
NOISE = 0.02
BLOG_SEQ_LEN = 1024  # the blog's attention shape; other lengths belong to their own sections
SHAPE_COLS = list(SHAPE_KEYS)


def read(d: Path) -> dict:
    """The CSVs of a results dir: ``raw`` (every runs.csv row), ``runs`` (one row per cell),
    ``kernels``, ``ncu``, ``revealed``, ``shapes`` (empty frames where absent), ``dir``."""

    def csv(name):
        return pd.read_csv(d / name, dtype=TEXT) if (d / name).exists() else pd.DataFrame()

    raw = csv("runs.csv")
    if "pass" in raw:
        raw["pass"] = raw["pass"].fillna("fwd")
    elif len(raw):
        raw["pass"] = "fwd"
    return {
        "dir": d,
        "raw": raw,
        "runs": cells(raw),
        "kernels": csv("kernels.csv"),
        "ncu": csv("ncu.csv"),
        "revealed": csv("revealed.csv"),
        "shapes": csv("shapes.csv"),
    }


def needs(what: str, sources: str) -> list[str]:
    """The one line a section prints when its source is not in the results."""
    return ["", f"_{what}: needs source {sources}, not in these results._"]


def of(runs: pd.DataFrame, *sources: str) -> pd.DataFrame:
    return runs[runs["source"].isin(sources)] if "source" in runs else runs.iloc[0:0]


def ok(runs: pd.DataFrame) -> pd.DataFrame:
    return runs[runs["status"] == "ok"]


def blog_shapes(runs: pd.DataFrame) -> pd.DataFrame:
    """The blog's forward at its shapes: attention at seq_len 1024, other families as measured."""
    r = runs[runs["pass"] == "fwd"] if "pass" in runs else runs
    if "seq_len" not in r:
        return r
    return r[(r["family"] != "attention") | (r["seq_len"] == BLOG_SEQ_LEN)]


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


def shape_of(r) -> tuple:
    return tuple(r[c] if c in r and pd.notna(r[c]) else None for c in SHAPE_COLS)


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


def phase_note(row) -> str:
    """' (host slow)', ' (host mixed)', ' (host contended)' for a figure not timed in the host's
    fast phase, '' for a fast one or a row that records no phase: a slow or mixed row's figure
    is never quoted without it (issue 55)."""
    phase = row.get("timing_phase") if hasattr(row, "get") else None
    return f" (host {phase})" if isinstance(phase, str) and phase and phase != "fast" else ""


def is_fast(row) -> bool:
    """A row timed in the host's fast phase (one that records no phase counts as fast: rows
    made before the phase columns)."""
    phase = row.get("timing_phase") if hasattr(row, "get") else None
    return not isinstance(phase, str) or phase in ("", "fast")


def sp_text(row) -> str:
    """'2.96x [2.88–3.00]' (paired, 95% interval), '1.25x' (cross-process, no interval); a
    figure not timed in the host's fast phase says which phase it is ('0.52x [0.50–0.54],
    host contended'), so it is never read as a fast-phase one."""
    sp, lo, hi = row.get("sp"), row.get("sp_lo"), row.get("sp_hi")
    if sp is None or sp != sp:
        return ""
    phase = row.get("timing_phase")
    note = f", host {phase}" if isinstance(phase, str) and phase != "fast" else ""
    if row.get("sp_kind") == "paired" and lo == lo and hi == hi:
        return f"{xs(sp)} [{sig(lo)}–{sig(hi)}]{note}"
    return xs(sp) + note


def spread_text(row) -> str:
    """The spread of a repeated cell's speedup over the fresh processes its figures use:
    '3 runs: 0.54–0.91x', or '2 of 3 runs in the host's fast phase: 0.968–0.994x' where
    ``analysis.load`` left the others out (v3's cuDNN max-autotune-no-cudagraphs: a third
    process timed in the slow phase read 0.452x)."""
    n = row.get("n_repeats", 1)
    if not n or n != n or n <= 1:
        return ""
    n = int(n)
    fast, good = number(row.get("n_repeats_fast")), number(row.get("n_repeats_ok"))
    # the rows load kept: the fast ones where any, else the ok ones, else all
    kept = fast if fast > 0 else good if good > 0 else n
    runs = f"{n} runs"
    if kept < n:  # left out: runs in a slower phase (where an ok one is not fast), or failed
        why = " in the host's fast phase" if fast > 0 and fast < good else " ok"
        runs = f"{int(kept)} of {n} runs{why}"
    col = "speedup_paired" if row.get("sp_kind") == "paired" else "speedup"
    lo, hi = row.get(f"{col}_min"), row.get(f"{col}_max")
    if lo is None or lo != lo:
        return runs
    return f"{runs}: {xs(lo)}" if kept == 1 else f"{runs}: {sig(lo)}–{xs(hi)}"


def lat_text(row, col: str = "latency_median_us") -> str:
    """A per-call latency in µs, with its range over repeats when the cell ran more than once."""
    n = row.get("n_repeats", 1)
    lo, hi = row.get(f"{col}_min"), row.get(f"{col}_max")
    if n and n == n and n > 1 and lo == lo and lo is not None:
        return f"{sig(row[col])} µs ({int(n)} runs, {sig(lo)}–{sig(hi)})"
    return f"{sig(row[col])} µs"


def calibrated_peak(runs: pd.DataFrame, row) -> float | None:
    """The calibrated matmul peak for the row's device, dtype and torch, from any row with it."""
    if row.get("peak_tflops") == row.get("peak_tflops") and row.get("peak_tflops") is not None:
        return float(row["peak_tflops"])
    if "peak_tflops" not in runs:
        return None
    same = runs[
        (runs["device_name"] == row["device_name"])
        & (runs["dtype"] == row["dtype"])
        & (runs["torch_version"].astype(str) == str(row["torch_version"]))
    ]["peak_tflops"].dropna()
    return float(same.median()) if len(same) else None


def table(header: list[str], rows: list[list]) -> list[str]:
    """A Markdown table; cells are text already."""
    return [
        "| " + " | ".join(header) + " |",
        "| " + " | ".join("---" for _ in header) + " |",
        *("| " + " | ".join(str(x) for x in r) + " |" for r in rows),
    ]
