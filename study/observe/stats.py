"""Intervals for ratios of medians, and what a claim may say. Pure: numbers in, numbers out.

A paired speedup is median(eager blocks) / median(compiled blocks), from blocks timed in
alternation in one process (study.cell.timing.rounds). Its 95% interval is a percentile bootstrap
over pairs: resample the pairs with replacement, recompute the ratio of medians, take the
2.5th and 97.5th percentiles (seeded, so a row is reproducible from its samples). A claim
that the interval does not support is not made: an interval that holds 1.0 reads "no
measurable difference".

A cell run in several fresh processes (``repeats``) gets one interval that covers processes
(``across_processes``): processes differ by more than their own intervals say (cudnn/default
in three processes of one H200 sweep: [0.652-0.782], [0.506-0.542], [0.410-0.439]), so the
process is resampled first, then the pairs within it. The rows keep each process's ratio and
95% interval, not its pairs, so the second stage draws the process's log-ratio from the normal
its own interval implies (half-width / 1.96 as the standard error). The cell's figure is the
median over processes; the interval the 2.5th and 97.5th percentiles of that median over
2000 two-stage resamples (seeded). With 3 processes it spans about the outer two; it is never
the envelope of the processes' intervals.
"""

from __future__ import annotations

import numpy as np

LEVEL = 0.95
BOOT = 2000


def ratio_of_medians(a, b, level: float = LEVEL, n_boot: int = BOOT, seed: int = 0):
    """(median(a) / median(b), low, high) with a paired percentile-bootstrap interval."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if len(a) != len(b) or len(a) == 0:
        raise ValueError("paired samples must be non-empty and of equal length")
    ratio = float(np.median(a) / np.median(b))
    idx = np.random.default_rng(seed).integers(0, len(a), size=(n_boot, len(a)))
    boot = np.median(a[idx], axis=1) / np.median(b[idx], axis=1)
    tail = 100 * (1 - level) / 2
    lo, hi = np.percentile(boot, [tail, 100 - tail])
    return ratio, float(lo), float(hi)


def verdict(ratio, low, high) -> str:
    """'faster', 'slower' or 'no measurable difference' for a speedup and its interval."""
    if ratio is None or low is None or high is None:
        return "unknown"
    if low <= 1.0 <= high:
        return "no measurable difference"
    return "faster" if low > 1.0 else "slower"


def across_processes(ratios, lows, highs, level: float = LEVEL, n_boot: int = BOOT, seed: int = 0):
    """(median, low, high) over processes of a cell's paired speedups (each with its own 95%
    interval ``lows``/``highs``): a two-stage bootstrap, processes then pairs (module doc).
    One process keeps its own interval."""
    r, lo, hi = (np.asarray(x, dtype=float) for x in (ratios, lows, highs))
    if not (len(r) == len(lo) == len(hi)) or len(r) == 0 or (r <= 0).any():
        raise ValueError("need one positive ratio with its interval per process")
    if len(r) == 1:
        return float(r[0]), float(lo[0]), float(hi[0])
    se = (np.log(hi) - np.log(lo)) / (2 * 1.959964)
    rng = np.random.default_rng(seed)
    pick = rng.integers(0, len(r), size=(n_boot, len(r)))
    draws = np.log(r)[pick] + rng.standard_normal(pick.shape) * se[pick]
    boot = np.exp(np.median(draws, axis=1))
    tail = 100 * (1 - level) / 2
    low, high = np.percentile(boot, [tail, 100 - tail])
    return float(np.median(r)), float(low), float(high)
