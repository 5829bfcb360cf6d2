"""How fast is FlexAttention against flash and cuDNN, per mask and length? One panel per mask
(``mask`` column), useful TFLOP/s (the score matrix the mask keeps) against seq_len, a line per
variant, each point labelled with its value. Each panel has its own y axis, logarithmic where
its rates span more than 20x (a mask that SDPA computes in full reads tens of times below flex);
a cell that did not run (``unsupported``, ``oom``) is a cross in the panel's top strip (the
axis leaves room above the points). Returns ``(figure, sentence)`` or raises ``Skip``."""

from __future__ import annotations

import seaborn as sns
from matplotlib.lines import Line2D
from matplotlib.transforms import blended_transform_factory

from analysis.measures import sig
from analysis.style import (
    Skip,
    context,
    figure,
    finish,
    legend_right,
    legend_width,
    log_if_wide,
)

MASKS = ["causal", "sliding_window", "document", "prefix_lm"]
VARIANTS = ["flex", "flash", "cudnn", "efficient"]


def flex(d) -> tuple:
    # Long: one figure, drawn top to bottom (its data, axes, labels and the sentence it says); its
    # parts are used nowhere else.
    r = d["runs"]
    if "mask" not in r or "tflops_useful" not in r or "variant" not in r:
        raise Skip("flex: no mask or tflops_useful column (a FlexAttention sweep has both)")
    r = r[r["mask"].notna() & (r["family"] == "attention")]
    if "flex" not in set(r["variant"]) or r["seq_len"].nunique() < 2:
        raise Skip("flex: no flex variant over two lengths or more")
    good = r[(r["status"] == "ok") & r["tflops_useful"].notna()]
    bad = r[r["status"] != "ok"]
    if good.empty:
        raise Skip("flex: no ok cell with tflops_useful")
    masks = [m for m in MASKS if m in set(r["mask"])] + sorted(set(r["mask"]) - set(MASKS))
    variants = [v for v in VARIANTS if v in set(r["variant"])]
    variants += sorted(set(r["variant"]) - set(variants))
    pal = dict(zip(variants, sns.color_palette("colorblind", len(variants)), strict=True))
    leg = legend_width(variants + ["unsupported/oom"])
    fig, axes = figure(1, len(masks), w=3.5 * len(masks) + leg + 0.4, h=4.6, sharex=True)
    lengths = sorted(int(x) for x in r["seq_len"].dropna().unique())
    for ax, m in zip(axes.flat, masks, strict=True):
        gm = good[good["mask"] == m]
        for v in variants:
            g = gm[gm["variant"] == v].sort_values("seq_len")
            if g.empty:
                continue
            ax.plot(g["seq_len"], g["tflops_useful"], marker="o", ms=4, color=pal[v])
            for x, y in zip(g["seq_len"], g["tflops_useful"], strict=True):
                ax.annotate(sig(y, 2), (x, y), xytext=(0, 5), textcoords="offset points",
                            ha="center", fontsize=7, color=pal[v])  # fmt: skip
        edge = blended_transform_factory(ax.transData, ax.transAxes)
        for _, b in bad[bad["mask"] == m].iterrows():
            k = variants.index(b["variant"]) if b["variant"] in variants else 0
            ax.plot(b["seq_len"], 0.96 - 0.05 * k, "x", transform=edge, ms=6, mew=2,
                    color=pal.get(b["variant"], "black"), clip_on=False)  # fmt: skip
        ax.set_xscale("log", base=2)
        ax.set_xticks(lengths, [f"{x:,}" for x in lengths], rotation=30)
        ax.minorticks_off()
        ax.set_title(m, fontsize=10)
        ax.set_xlabel("seq_len", fontsize=9)
        ax.tick_params(labelsize=8)
        if gm.empty:
            continue
        lo, hi = gm["tflops_useful"].min(), gm["tflops_useful"].max()
        if log_if_wide(ax, gm["tflops_useful"], ratio=20):
            ax.set_ylim(lo / 1.6, hi * 4)  # the top strip is for the crosses
        else:
            ax.set_ylim(0, hi * 1.3)
    axes[0][0].set_ylabel("useful TFLOP/s", fontsize=9)
    handles = [Line2D([], [], color=pal[v], marker="o", ms=4) for v in variants]
    names = list(variants)
    if not bad.empty:
        handles.append(Line2D([], [], color="black", marker="x", ls="", mew=2))
        names.append("/".join(sorted(set(bad["status"]))))
    legend_right(fig, handles, names, title="variant")
    finish(fig, "How fast is FlexAttention against flash and cuDNN, per mask and length?",
           context(r, fig.get_figwidth()), right_in=leg)  # fmt: skip
    best = good.loc[good.groupby("mask")["tflops_useful"].idxmax()]
    s = (
        "Useful TFLOP/s (FLOPs of the part of the score matrix the mask keeps, over per-call "
        "latency), best per mask: "
        + "; ".join(
            f"{x['mask']} {x['variant']} {sig(x['tflops_useful'])} at {int(x['seq_len'])}"
            for _, x in best.iterrows()
        )
        + (
            f"; not run: {len(bad)} cells ({', '.join(sorted(set(bad['status'])))})"
            if len(bad)
            else ""
        )
        + "."
    )
    return fig, s
