"""What every Findings section shares: the results dir it reads (``read``), the sources a
section takes, and how a speedup, its spread and a latency are written. How cells are paired
with their eager twin and judged is ``analysis.pairs``'s. Pure pandas on the committed CSVs;
no torch.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from analysis.load import TEXT, cells
from analysis.measures import number, sig, xs

BLOG_SEQ_LEN = 1024  # the blog's attention shape; other lengths belong to their own sections


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


def blog_shapes(runs: pd.DataFrame) -> pd.DataFrame:
    """The blog's forward at its shapes: attention at seq_len 1024, other families as measured."""
    r = runs[runs["pass"] == "fwd"] if "pass" in runs else runs
    if "seq_len" not in r:
        return r
    return r[(r["family"] != "attention") | (r["seq_len"] == BLOG_SEQ_LEN)]


def phase_note(row) -> str:
    """' (host slow)', ' (host mixed)', ' (host contended)' for a figure not timed in the host's
    fast phase, '' for a fast one or a row that records no phase: a slow or mixed row's figure
    is never quoted without it."""
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
        return f"{xs(sp)} [{sig(lo)}–{sig(hi)}{_one_process(row)}]{note}"
    return xs(sp) + note


def _one_process(row) -> str:
    """', one process's pairs' where a repeated cell's interval rests on one of its processes
    (the others left out as slower-phase): then it is not an interval over processes."""
    n, fast = number(row.get("n_repeats")), number(row.get("n_repeats_fast"))
    return ", one process's pairs" if n == n and n > 1 and fast == 1 else ""


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


HOST_FREE = "not its device time"  # slow_cause's "the host", said from the rows' own columns


def cause(x: dict) -> str:
    """``analysis.slowdown.slow_cause`` in the Findings' words: a slower cell whose device time
    did not rise enough to carry its added latency is "not its device time". The reference rows
    measure no host time (host_us is the host-cost layer's, ``host/machines``), so a host-bound
    cause is never inferred from latency here."""
    from analysis.slowdown import slow_cause  # deferred: only the speed sections say causes

    c = slow_cause(x)
    return HOST_FREE if c == "the host" else c
