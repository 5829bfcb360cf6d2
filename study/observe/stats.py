"""Intervals for ratios of medians, and what a claim may say. Pure: numbers in, numbers out.

A paired speedup is median(eager blocks) / median(compiled blocks), from blocks timed in
alternation in one process (study.measure.timing.rounds). Its 95% interval is a percentile bootstrap
over pairs: resample the pairs with replacement, recompute the ratio of medians, take the
2.5th and 97.5th percentiles (seeded, so a row is reproducible from its samples). A claim
that the interval does not support is not made: an interval that holds 1.0 reads "no
measurable difference".

A cell run in several fresh processes (``repeats``) gets one interval that covers processes
(``across_processes``): processes differ by more than their own intervals say (cudnn/default
in three processes of one H200 sweep: [0.652-0.782], [0.506-0.542], [0.410-0.439]), so the
between-process spread must be in it, and with 2-3 processes a bootstrap over processes cannot
give 95%: it spans about the outer two (their min-max range), which covers the median with
probability about 0.75 for 3 processes and 0.5 for 2. So it is a t-interval on the log
ratios. With x_i = log(ratio_i) for n processes and se_i = (log high_i - log low_i) / (2 *
1.96) each process's own standard error (from its 95% interval),

    centre = mean(x),   se^2 = s^2 / n + sum(se_i^2) / n^2,   s = sd(x) (n - 1 in the divisor),
    interval = exp(centre -/+ t_{n-1, 0.975} * se)

and the cell's figure is exp(centre), the geometric mean of the processes' ratios. The s^2/n
term carries the processes' disagreement, the second their own pairs' noise (it keeps two
processes that read alike from a zero-width interval). t_{1} = 12.7 and t_{2} = 4.30: with 2
processes the interval is honest and wide. One process keeps its own interval. A process
ratio's min-max over processes is a range (``reference.findings.base.common.spread_text``: "3 runs:
a-b"), never called 95%.
"""

from __future__ import annotations

import numpy as np

LEVEL = 0.95
BOOT = 2000  # ratio_of_medians' resamples


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


# t_{df, 0.975} for df = 1..30; beyond, the normal's 1.96 with Cornish-Fisher's first terms.
_T975 = (12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179,
         2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064,
         2.060, 2.056, 2.052, 2.048, 2.045, 2.042)  # fmt: skip


def t_quantile(df: int, level: float = LEVEL) -> float:
    """Student's t two-sided ``level`` quantile, t_{df, 1 - (1 - level) / 2}."""
    if df < 1:
        raise ValueError("a t quantile needs df >= 1")
    if abs(level - 0.95) < 1e-12:
        if df <= len(_T975):
            return _T975[df - 1]
        z = 1.959964
        return z + (z**3 + z) / (4 * df) + (5 * z**5 + 16 * z**3 + 3 * z) / (96 * df**2)
    from scipy.stats import t  # other levels: scipy, where it is installed

    return float(t.ppf(1 - (1 - level) / 2, df))


def across_processes(ratios, lows, highs, level: float = LEVEL):
    """(centre, low, high) over processes of a cell's paired speedups (each with its own 95%
    interval ``lows``/``highs``): a t-interval on the log ratios that adds each process's own
    standard error to the between-process spread (module doc); the centre is the geometric
    mean of the ratios. One process keeps its own interval."""
    r, lo, hi = (np.asarray(x, dtype=float) for x in (ratios, lows, highs))
    if not (len(r) == len(lo) == len(hi)) or len(r) == 0 or (r <= 0).any():
        raise ValueError("need one positive ratio with its interval per process")
    if (lo <= 0).any() or (hi < lo).any():
        raise ValueError("each process's interval must be positive, low <= high")
    if len(r) == 1:
        return float(r[0]), float(lo[0]), float(hi[0])
    n = len(r)
    x = np.log(r)
    se_i = (np.log(hi) - np.log(lo)) / (2 * 1.959964)
    se = np.sqrt(x.var(ddof=1) / n + (se_i**2).sum() / n**2)
    half = t_quantile(n - 1, level) * se
    centre = x.mean()
    return float(np.exp(centre)), float(np.exp(centre - half)), float(np.exp(centre + half))
