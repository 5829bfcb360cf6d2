"""What got slower or faster from A to B? Per-call latency B/A per variant (geometric mean,
left) and for the cells that moved most (right), flagged cells in colour, the dashboard's
±5% band shaded. Takes ``analysis.compare.match``'s frame; returns ``(figure, sentence)``."""

from __future__ import annotations

import numpy as np
import pandas as pd
from matplotlib.patches import Patch

from analysis.measures import geomean, sig
from analysis.style import MAX_BARS, figure, finish, legend_right, legend_width

COLORS = {"regressed": "#d62728", "improved": "#2ca02c", "within": "#999999"}


def _state(m: pd.DataFrame) -> pd.Series:
    return np.where(
        m["regressed"] != "", "regressed", np.where(m["improved"] != "", "improved", "within")
    )


def changes(m: pd.DataFrame, a: str, b: str, band: float = 0.05) -> tuple:
    # Long: one figure, drawn top to bottom (its data, axes, labels and the sentence it says); its
    # parts are used nowhere else.
    m = m.dropna(subset=["latency"]).copy()
    m["state"] = _state(m)
    shapes = [
        c
        for c in ("n", "seq_len", "batch", "in_features", "dim", "hidden")
        if c in m and m[c].nunique() > 1
    ]
    m["label"] = (
        m["variant"]
        + m.apply(lambda r: "".join(f" {c}={int(r[c])}" for c in shapes if r[c] == r[c]), axis=1)
        + " · "
        + m["compile"]
        + np.where(m["source_a"].nunique() > 1, " [" + m["source_a"] + "]", "")
    )
    m["move"] = np.abs(np.log(m["latency"]))
    flagged = m[m["state"] != "within"]
    rest = m[m["state"] == "within"].sort_values("move", ascending=False)
    top = pd.concat([flagged.sort_values("move", ascending=False), rest]).head(MAX_BARS)
    top = top.sort_values("latency")
    var = m.groupby("variant")["latency"].apply(geomean).sort_values()
    names = ["regressed", "improved", "within threshold or noise"]
    leg = legend_width(names)
    fig, axes = figure(1, 2, w=12.5 + leg, h=max(4.2, 0.26 * len(top) + 2.2),
                       gridspec_kw={"width_ratios": [1, 1.6]})  # fmt: skip
    a0, a1 = axes[0]
    lo = min(0.8, float(min(var.min(), top["latency"].min())) / 1.1)
    hi = max(1.25, float(max(var.max(), top["latency"].max())) * 1.6)  # room for the flags
    ticks = [t for t in (0.1, 0.2, 0.5, 0.8, 0.9, 1, 1.1, 1.25, 2, 5, 10) if lo <= t <= hi]
    for ax in (a0, a1):
        ax.axvspan(1 - band, 1 + band, color="#eeeeee", lw=0)
        ax.axvline(1, color="black", lw=0.8)
        ax.set_xscale("log")
        ax.set_xlim(lo, hi)
        ax.set_xticks(ticks, [f"{t:g}x" for t in ticks])
        ax.minorticks_off()
        ax.tick_params(labelsize=8)
    yv = np.arange(len(var))
    # a variant's colour is its cells' verdicts (compare.judge: threshold, intervals, host
    # phase), not its geometric mean against the band: a mean past 5% of cells within noise
    # read "regressed" here while compare counted none
    verdict = m.groupby("variant")["state"].agg(
        lambda x: "regressed" if (x == "regressed").any()
        else "improved" if (x == "improved").any() else "within"
    )  # fmt: skip
    vcol = [COLORS[verdict[v]] for v in var.index]
    a0.barh(yv, var.to_numpy() - 1, left=1, color=vcol, height=0.6)
    a0.set_yticks(yv, var.index, fontsize=8)
    a0.set_ylim(-0.6, len(var) - 0.4)
    a0.set_title("per variant (geometric mean)", fontsize=10)
    a0.set_xlabel("latency B / A", fontsize=9)
    yc = np.arange(len(top))
    a1.scatter(top["latency"], yc, c=[COLORS[s] for s in top["state"]], s=30, zorder=3,
               edgecolor="black", linewidth=0.4)  # fmt: skip
    a1.hlines(yc, 1, top["latency"], color="#bbbbbb", lw=1)
    for y, (_, r) in zip(yc, top.iterrows(), strict=True):  # what was flagged, in words
        what = r["regressed"] or r["improved"]
        if what:
            a1.text(hi / 1.02, y, what, ha="right", va="center", fontsize=7,
                    color=COLORS[r["state"]])  # fmt: skip
    a1.set_yticks(yc, top["label"], fontsize=7.5)
    a1.set_ylim(-0.6, len(top) - 0.4)
    more = len(m) - len(top)
    a1.set_title(
        f"the {len(top)} cells that moved most" + (f" ({more} more within)" if more else ""),
        fontsize=10,
    )
    a1.set_xlabel("latency B / A (shaded: ±5%)", fontsize=9)
    legend_right(fig, [Patch(color=COLORS[k]) for k in ("regressed", "improved", "within")], names)
    finish(fig, "What got slower or faster from A to B?", f"A = {a}\nB = {b}", right_in=leg)
    n_reg = int((m["state"] == "regressed").sum())
    s = (
        f"Latency B/A over {len(m)} matched cells: geometric mean {sig(geomean(m['latency']))}x; "
        f"{n_reg} regressed, {int((m['state'] == 'improved').sum())} improved."
    )
    return fig, s
