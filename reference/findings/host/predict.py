"""What the host model predicts, beside what no model predicts: the measured layer's speedups
(``host_machines``) predicted from the other machines, and where compiling stops paying. Part of
``python -m reference.findings`` (its "Host cost measured" section).

The model (``analysis.tables.host_model``): latency ≈ max(device µs, host µs at G) each side.
The null predictor is what a reader would guess without it: a machine's speedup is the median
of the other machines' measured speedups of the same cell. Every model figure is printed beside
the null's, and the text says plainly when the model does not beat it (audit 2026-12-06: 64 of 66
for the null against 62 of 66 for the model).

A crossover (the host speed at which the predicted speedup falls through 1) is listed only where
the model's predicted gain or loss on each side of it lies outside the cell's measured speedup
interval around 1 (``NOISE``, at least) and the crossover lies within ``REACH`` times the G the
cell was measured at: anything else is noise or an extrapolation (audit: 8 of 14 crossovers had
a predicted best of at most 1.016x; math's 80 µs was 5x the measured G).
"""

from __future__ import annotations

import pandas as pd

from analysis.measures import sig
from analysis.tables import host_model

REACH, NOISE = host_model.REACH, host_model.NOISE  # the crossover rule is host_model.reach's


def null(c: pd.DataFrame) -> pd.DataFrame:
    """Per machine and cell: the median of the other machines' measured paired speedups of the
    cell (``null``) and how many machines it rests on (``n_other``)."""
    out = []
    for (m, k), _ in c.groupby(["machine", "cell"]):
        o = c[(c["cell"] == k) & (c["machine"] != m)]["speedup_paired"].dropna()
        out.append({"machine": m, "cell": k, "null": o.median() if len(o) else float("nan"),
                    "n_other": len(o)})  # fmt: skip
    return pd.DataFrame(out, columns=["machine", "cell", "null", "n_other"])


def loo(c: pd.DataFrame) -> pd.DataFrame:
    """``host_model.leave_one_out`` with the null predictor beside each prediction: ``null``,
    ``null_err`` (null / measured - 1), ``n_other``, and ``plain_err`` (alpha 1: units × G)."""
    lo = host_model.leave_one_out(c) if len(c) else pd.DataFrame()
    if lo.empty:
        return lo
    lo = lo.merge(null(c), on=["machine", "cell"], how="left")
    plain = host_model.leave_one_out(c, alpha=1.0)[["machine", "cell", "err"]]
    lo = lo.merge(plain.rename(columns={"err": "plain_err"}), on=["machine", "cell"], how="left")
    lo["null_err"] = lo["null"] / lo["measured"] - 1
    return lo[lo["measured"].notna()].reset_index(drop=True)


def _within(e: pd.Series, tol: float) -> int:
    return int((e.abs() <= tol).sum())


def loo_text(c: pd.DataFrame) -> list[str]:
    """The leave-one-machine-out paragraph: model, plain units × G and the null, side by side."""
    lo = loo(c)
    if lo.empty:
        return []
    err, nerr, perr = lo["err"], lo["null_err"], lo["plain_err"]
    worst = lo.loc[err.abs().idxmax()]
    one = int((lo["n_other"] == 1).sum())
    g = lo["g"]
    off = lo[err.abs() > 0.10].sort_values("err")
    named = "; ".join(f"{x.machine} {x.variant} {x.compile} {x.measured:.3f}x predicted "
                      f"{x.predicted:.3f} ({x.err:+.1%}), null {x.null:.3f} ({x.null_err:+.1%})"
                      for x in off.itertuples())  # fmt: skip
    m10, n10, p10 = _within(err, 0.10), _within(nerr, 0.10), _within(perr, 0.10)
    beats = m10 > n10 and _within(err, 0.15) >= _within(nerr, 0.15)
    verdict = (
        "The model beats the null."
        if beats
        else f"**The model does not beat the null predictor**: {m10} of {len(lo)} within ±10% "
        f"against the null's {n10}, and the fitted exponent adds nothing over plain units × G "
        f"({p10} of {len(lo)}). At these rows' G ({_span(g.min(), g.max())} µs) the "
        "machines' speedups already agree; the model is not shown to carry to another host speed."
    )  # fmt: skip
    return [
        "Each machine's paired speedup, predicted from the other machines at the host speed of "
        "the row's paired rounds (latency ≈ max(device µs, host µs at G), host µs scaled as "
        f"G ** alpha, alpha fitted on the others, {lo['alpha'].min():.2f}–"
        f"{lo['alpha'].max():.2f}; rows with host figures only; {one} of the {len(lo)} "
        f"predictions rest on one other machine, {len(lo) - one} on two), against the null "
        "predictor (the median of the other machines' measured speedups, no model): model "
        f"{m10} of {len(lo)} within ±10%, {_within(err, 0.15)} within ±15%, the worst "
        f"{worst.err:+.1%} ({worst.machine} {worst.variant} {worst['compile']}); null {n10} "
        f"within ±10%, {_within(nerr, 0.15)} within ±15%, the worst {nerr.abs().max():.1%} off; "
        f"plain units × G (alpha 1) {p10} within ±10%, the worst {perr.abs().max():.1%} off"
        + (f". Beyond ±10% for the model: {named}" if len(off) else "")
        + f". {verdict}"
    ]


def _span(lo, hi) -> str:
    return sig(lo) if sig(lo) == sig(hi) else f"{sig(lo)}–{sig(hi)}"


def _name(x: pd.DataFrame, label) -> str:
    name = label(x["cell"].iloc[0].split(":", 1)[-1].rsplit("|", 1)[0], x["compile"].iloc[0])
    return name + (f" `{x['source'].iloc[0]}`" if "source" in x else "")


def crossings(c: pd.DataFrame, label) -> pd.DataFrame:
    """Per compiled cell of ``host_model.cells`` rows: its measured G range and speedup interval,
    the null and the model's prediction at the measured G, the model's over G_lo / REACH ..
    G_hi × REACH, the crossover there (None outside it), and ``listed``: the crossover lies in
    that reach, the measured interval excludes 1 on the side the model predicts at the measured
    G, and the predicted speedup there and at both ends lies outside the interval's half-width
    around 1 (a measured effect where it was measured, and a measurable gain on one side and
    loss on the other)."""
    if c.empty:
        return pd.DataFrame()
    alpha, out = host_model.fit_alpha(c), []
    for _, x in c.groupby("cell", sort=True):
        m = float(x["speedup_paired"].median())
        out.append({"name": _name(x, label), "measured": m, "null": m, "alpha": alpha,
                    **host_model.reach(x, alpha)})  # fmt: skip
    return pd.DataFrame(out)


def crossings_text(t: pd.DataFrame) -> list[str]:
    """Where compiling stops paying: the listed crossovers, the ones within noise, and a table
    of every cell's prediction beside the null's (``table`` rows, for a linked file)."""
    if t.empty:
        return []
    alpha = t["alpha"].iloc[0]
    cross = [f"{x.name} {sig(x.crossing)} µs (predicted {x.ends[0]:.3f}x at "
             f"{sig(x.g_lo / REACH)} µs, {x.ends[1]:.3f}x at {sig(x.g_hi * REACH)} µs)"
             for x in t[t["listed"]].itertuples()]  # fmt: skip
    noise = t[t["crossing"].notna() & ~t["listed"]]
    said = (
        "Where compiling stops paying (the host speed G at which the predicted speedup falls "
        "through 1: latency ≈ max(device µs, host µs at G) each side, host µs scaled as G ** "
        f"{alpha:.2f}, fitted over these rows; sought only within {REACH}x the G each cell was "
        f"measured at, and listed only where the measured interval excludes 1 on the side the model "
        "predicts at the measured G, and the prediction there and on both sides lies outside the "
        "interval's half-width around 1): "
        + ("; ".join(cross) if cross else "**no cell**")
        + "."
        + (f" {len(noise)} cell(s) cross 1 within that reach, but the predicted gain or loss on one "
           "side or at the measured G stays inside the speedup's interval, or the rows do not show "
           "the side it predicts there, so the crossover is noise: "
           + ", ".join(noise["name"]) + "." if len(noise) else "")
        + " Every cell's prediction at its measured G, beside the null (the measured speedup, "
        "which a reader without the model expects at any G: the model's only claim over it is "
        "how far the speedup moves across that reach), and that move: the table below."
    )  # fmt: skip
    return [said]


def table_rows(t: pd.DataFrame) -> list[list[str]]:
    """One line per cell: measured G, measured speedup [interval], null, model at the measured
    G, the model at both ends of the reach, crossover (or why none is listed)."""
    rows = []
    for x in t.itertuples():
        if x.crossing != x.crossing or x.crossing is None:
            cross = "none in reach"
        else:
            cross = f"{sig(x.crossing)} µs" + ("" if x.listed else " (noise: not listed)")
        rows.append([x.name, _span(x.g_lo, x.g_hi), f"{x.measured:.3f}x [{x.lo:.3f}–{x.hi:.3f}]",
                     f"{x.null:.3f}x", f"{x.at:.3f}x", f"{x.ends[0]:.3f}x → {x.ends[1]:.3f}x",
                     cross])  # fmt: skip
    return rows


HEAD = ["cell", "G measured, µs", "measured speedup [lowest to highest of the machines' pair "
        "intervals]", "null predictor (the measured speedup, unchanged by G)",
        "model at the measured G", f"model at G / {REACH} → G × {REACH}", "crossover"]  # fmt: skip
