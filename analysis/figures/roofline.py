"""How close to the hardware's ceilings does each cell run? Achieved TFLOP/s against
arithmetic intensity, under the calibrated roofs (``study.measure.calibrate``). Uses the useful FLOPs
(``flops_useful``: what a causal or sparse kernel really computes) where the rows have them,
else the full count, over device time where measured, else per-call latency. Returns
``(figure, sentence)`` or raises ``Skip``."""

from __future__ import annotations

import numpy as np
import pandas as pd

from analysis.measures import has, sig
from analysis.style import (
    FAMILY_MARKERS,
    MODE_COLORS,
    Skip,
    bar_labels,
    context,
    figure,
    finish,
    label_points,
    legend_right,
    legend_width,
    marker_legend,
    modes_in,
    need,
    ok,
    readable_log,
)


def rates(r: pd.DataFrame) -> pd.DataFrame:
    """``achieved`` TFLOP/s and ``ai`` FLOP/byte per row, from useful FLOPs where measured."""
    r = r.copy()
    flops = r["flops_useful"].fillna(r["flops"]) if has(r, "flops_useful") else r["flops"]
    t = r["latency_median_us"]
    if has(r, "device_time_us"):
        t = r["device_time_us"].where(r["device_time_us"] > 0, t)
    r["achieved"] = flops / t * 1e-6
    r["ai"] = flops / r["bytes_min"]
    r["useful"] = r["flops_useful"].notna() if "flops_useful" in r else False
    return r


def roofline(d) -> tuple:
    r = need(ok(d["runs"]), ["flops", "bytes_min", "latency_median_us"], "roofline")
    r = rates(r).dropna(subset=["achieved", "ai"])
    r = r[(r["achieved"] > 0) & (r["ai"] > 0)]
    if r.empty:
        raise Skip("roofline: no achieved rate")
    r = r.assign(label=bar_labels(r))
    modes = modes_in(r)
    fams = [f for f in FAMILY_MARKERS if f in set(r["family"])]
    handles, names = marker_legend(modes, fams)
    leg = legend_width(names)
    fig, axes = figure(1, 1, w=8.6 + leg, h=6.4)
    ax = axes[0, 0]
    xs = np.logspace(np.log10(r["ai"].min() / 4), np.log10(r["ai"].max() * 4), 200)
    ceil = (
        r.dropna(subset=["peak_tflops", "peak_gbps"]).drop_duplicates(["device_name", "dtype"])
        if has(r, "peak_tflops") and has(r, "peak_gbps")
        else pd.DataFrame()
    )
    for _, c in ceil.iterrows():
        roof = np.minimum(c["peak_tflops"], c["peak_gbps"] * 1e9 * xs / 1e12)
        ax.plot(xs, roof, color="black", lw=1.2)
        ax.text(xs[-1], c["peak_tflops"] * 1.05, f"{sig(c['peak_tflops'])} TFLOP/s {c['dtype']}",
                fontsize=7, va="bottom", ha="right")  # fmt: skip
    for (m, fam), g in r.groupby(["compile", "family"]):
        ax.scatter(g["ai"], g["achieved"], s=46, color=MODE_COLORS.get(m, "black"),
                   marker=FAMILY_MARKERS.get(fam, "o"), edgecolor="black", linewidth=0.4,
                   zorder=3)  # fmt: skip
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(r["ai"].min() / 3, r["ai"].max() * 3)  # a 1-2-5 tick in range, however narrow
    readable_log(ax, "x")
    top_y = max(r["achieved"].max(), ceil["peak_tflops"].max() if len(ceil) else 0) * 3
    ax.set_ylim(r["achieved"].min() / 3, top_y)
    ax.set_xlabel(
        "arithmetic intensity, FLOP/byte (every input read once, output written once)", fontsize=9
    )
    flop_word = "useful FLOPs" if r["useful"].any() else "FLOPs"
    ax.set_ylabel(f"achieved TFLOP/s ({flop_word} / device time when measured)", fontsize=9)
    ax.tick_params(labelsize=8)
    legend_right(fig, handles, names, title="compile")
    finish(fig, "How close to the hardware's ceiling does each cell run?",
           context(r, fig.get_figwidth())
           + ("" if len(ceil) else "\nno calibrated ceilings: run python -m study.measure.calibrate"),
           right_in=leg)  # fmt: skip
    label_points(
        ax, r["ai"], r["achieved"], r["label"] + " · " + r["compile"], priority=r["achieved"]
    )
    top = r.loc[r["achieved"].idxmax()]
    s = (
        f"Roofline of {len(r)} ok cells ({flop_word} over device time where measured): the highest "
        f"rate is {top['label']} · {top['compile']} at {sig(top['achieved'])} TFLOP/s"
    )
    if has(r, "peak_tflops") and pd.notna(top.get("peak_tflops")):
        s += f" ({sig(100 * top['achieved'] / top['peak_tflops'], 2)}% of the measured peak)"
    s += "."
    if len(ceil):
        s += _above_the_roof(r, ceil)
    return fig, s


def _above_the_roof(r: pd.DataFrame, ceil: pd.DataFrame) -> str:
    roof = r.merge(ceil[["device_name", "dtype", "peak_tflops"]], on=["device_name", "dtype"],
                   suffixes=("", "_roof"))  # fmt: skip
    above = roof[roof["achieved"] > roof["peak_tflops_roof"]]
    causal = (
        (above["family"] == "attention")
        & ~above["useful"]
        & (
            above["causal"].eq(True) if "causal" in above else False  # CSV: True, or NaN
        )
    )
    att, other = above[causal], above[~causal]
    s = ""
    if len(att):
        s += (
            f" {len(att)} attention cells read above the calibrated matmul peak "
            f"({', '.join(sorted(set(att['variant'])))}): their FLOPs count the full causal "
            "matrix, whose masked half the fused kernels skip (study/rows/metrics.py)."
        )
    if len(other):
        worst = (other["achieved"] / other["peak_tflops_roof"]).max()
        s += (
            f" {len(other)} other cells ({', '.join(sorted(set(other['variant'])))}) read up "
            f"to {sig(100 * (worst - 1), 2)}% above it: the ceiling is one calibration run "
            "(python -m study.measure.calibrate), not the hardware's limit."
        )
    return s
