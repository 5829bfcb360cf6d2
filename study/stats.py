"""Intervals for ratios of medians, and what a claim may say. Pure: numbers in, numbers out.

A paired speedup is median(eager blocks) / median(compiled blocks), from blocks timed in
alternation in one process (study.timing.paired). Its 95% interval is a percentile bootstrap
over pairs: resample the pairs with replacement, recompute the ratio of medians, take the
2.5th and 97.5th percentiles (seeded, so a row is reproducible from its samples). A claim
that the interval does not support is not made: an interval that holds 1.0 reads "no
measurable difference".
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
