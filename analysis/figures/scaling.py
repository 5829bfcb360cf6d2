"""How does each variant scale with the shape a sweep varies? Small multiples: one column per
variant (slowest first), rows for latency, kernels per forward and TFLOP/s, colour = compile
mode. The rate is the useful one (``tflops_useful``: the work a causal or other mask keeps,
SCHEMA.md) wherever the rows have it, not the full S×S count that a fused causal kernel's
skipped half inflates. A cell that is not ok (an ``oom`` at the long end) is a cross on the
top edge of its latency panel. Returns ``(figure, sentence)`` or raises ``Skip``."""

from __future__ import annotations

import numpy as np
from matplotlib.lines import Line2D
from matplotlib.transforms import blended_transform_factory

from analysis.measures import MODES
from analysis.shown import DRAWN, drawn_us
from analysis.style import (
    MODE_COLORS,
    Skip,
    context,
    figure,
    finish,
    legend_right,
    legend_width,
    log_if_wide,
    modes_in,
)
from study.rows.schema import SHAPE_KEYS

MAX_COLS = 6  # variants per row block; more wrap into a second block


def scaling(d) -> tuple:
    # Long: one figure, drawn top to bottom (its data, axes, labels and the sentence it says); its
    # parts are used nowhere else.
    runs = d["runs"]
    groups = ["source", "variant", "compile"]
    counts = {
        c: runs.groupby(groups)[c].nunique().max() for c in SHAPE_KEYS if c in runs and len(runs)
    }
    varied = [c for c, n in sorted(counts.items(), key=lambda kv: -kv[1]) if n > 1]
    if not varied:
        raise Skip("scaling: the sweep does not vary a shape")
    x = varied[0]
    r = runs[runs.groupby(groups)[x].transform("nunique") > 1].dropna(subset=[x])
    # One sweep: the source with the most cells over x (others would clutter every panel).
    src = r.groupby("source").size().idxmax()
    r = r[r["source"] == src].copy()
    good, bad = r[r["status"] == "ok"].copy(), r[r["status"] != "ok"]
    if len(good):  # the speedup's own µs: paired blocks where a compiled cell has them
        good["shown_us"] = drawn_us(good)
    if good.empty:
        raise Skip(f"scaling: no ok cell in the sweep over {x} ({src})")
    useful = "tflops_useful" in good and good["tflops_useful"].notna().any()
    metrics = [
        (c, lab)
        for c, lab in (
            ("shown_us", "latency, µs"),
            ("kernels_per_step", "kernels per forward"),
            ("tflops_useful", "useful TFLOP/s") if useful else ("tflops", "achieved TFLOP/s"),
        )
        if c in good and good[c].notna().any()
    ]
    # Slowest first, judged at each variant's shortest ok length.
    first = good[good[x] == good.groupby("variant")[x].transform("min")]
    slow = first.groupby("variant")["shown_us"].median().sort_values(ascending=False)
    variants = list(slow.index) + [v for v in dict.fromkeys(bad["variant"]) if v not in slow]
    blocks = int(np.ceil(len(variants) / MAX_COLS))
    ncols = min(MAX_COLS, len(variants))
    modes = modes_in(r)
    leg = legend_width(modes + ["oom"])
    row_h = 2.2 if blocks == 1 else 1.6
    fig, axes = figure(len(metrics) * blocks, ncols, w=2.25 * ncols + 1.0 + leg,
                       h=row_h * len(metrics) * blocks + 1.3, sharex=True, sharey="row")  # fmt: skip
    for a in axes.flat[len(variants) * len(metrics) :]:
        a.axis("off")
    for j, v in enumerate(variants):
        b, col = divmod(j, ncols)
        g = good[good["variant"] == v]
        for i, (metric, lab) in enumerate(metrics):
            ax = axes[b * len(metrics) + i][col]
            for m, gm in g.groupby("compile", sort=False):
                gm = gm.sort_values(x)
                ax.plot(gm[x], gm[metric], marker="o", ms=3.5, color=MODE_COLORS.get(m, "black"))
            ax.set_xscale("log", base=2)
            log_if_wide(ax, good[metric])
            if i == 0:
                ax.set_title(v, fontsize=10)
                top = blended_transform_factory(ax.transData, ax.transAxes)
                for _, row in bad[bad["variant"] == v].iterrows():
                    k = MODES.index(row["compile"]) if row["compile"] in MODES else 0
                    ax.plot(row[x], 0.95 - 0.09 * k, "x", transform=top, ms=7, mew=2,
                            color=MODE_COLORS.get(row["compile"], "black"), clip_on=False)  # fmt: skip
            if col == 0:
                ax.set_ylabel(lab, fontsize=8)
            if i == len(metrics) - 1:
                ax.set_xlabel(x, fontsize=8)
                ax.tick_params(axis="x", labelbottom=True)
            ax.tick_params(labelsize=7)
    handles = [
        Line2D([], [], color=MODE_COLORS[m], marker="o", ms=4) for m in modes if m in MODE_COLORS
    ]
    names = [m for m in modes if m in MODE_COLORS]
    if not bad.empty:
        handles.append(Line2D([], [], color="black", marker="x", ls="", mew=2))
        names.append("/".join(sorted(set(bad["status"]))))
    legend_right(fig, handles, names, title="compile")
    finish(fig, f"How does each variant scale with {x}?", context(r, fig.get_figwidth()),
           right_in=leg)  # fmt: skip
    s = (
        f"Scaling over {x} ({int(r[x].min())} to {int(r[x].max())}) in source {src}: "
        f"{len(good)} ok cells"
    )
    limits = [
        f"{v} {'/'.join(sorted(set(gb['status'])))} from {x}={int(gb[x].min())} "
        f"({', '.join(m for m in modes if m in set(gb['compile']))})"
        for v, gb in bad.groupby("variant", sort=False)
    ]
    s += "; not ok: " + "; ".join(limits) if limits else "; every cell ran"
    s += f". Latency: {DRAWN}."
    return fig, s
