"""Three questions about what ran: how many kernels one forward launches and at what latency
(``blog_grid``, the blog's table as a picture), of which kinds (``kernel_classes``), and where
the device time goes (``top_kernels``). Each returns ``(figure, sentence)`` or raises ``Skip``."""

from __future__ import annotations

import numpy as np
import pandas as pd
import seaborn as sns
from matplotlib.patches import Patch

from analysis.measures import count, sig
from analysis.style import (
    CLASS_COLORS,
    CLASS_ORDER,
    MAX_BARS,
    Skip,
    bar_labels,
    chunks,
    context,
    figure,
    finish,
    fit_text,
    label_kernels,
    left_out,
    legend_right,
    legend_width,
    log_colorbar,
    modes_in,
    need,
    ok,
    per_cell,
)


def _per(r: pd.DataFrame) -> str:
    """'forward' unless some rows time a backward or a training step too."""
    return "step" if "pass" in r and set(r["pass"].dropna()) - {"fwd"} else "forward"


def blog_grid(d) -> tuple:
    r, dropped = per_cell(need(ok(d["runs"]), ["kernels_per_step"], "kernels per forward"))
    r = r.dropna(subset=["kernels_per_step"])
    r = r.assign(label=bar_labels(r))
    rows, modes = list(dict.fromkeys(r["label"])), modes_in(r)

    def grid(col):
        return r.pivot_table(index="label", columns="compile", values=col, aggfunc="first").reindex(
            index=rows, columns=modes
        )

    kp, lat = grid("kernels_per_step"), grid("latency_median_us")
    annot = kp.copy().astype(object)
    for i in kp.index:
        for m in kp.columns:
            k, t = kp.loc[i, m], lat.loc[i, m]
            annot.loc[i, m] = (
                "" if k != k else f"{count(k)} kernel{'' if k == 1 else 's'}\n{sig(t)} µs"
            )
    parts = chunks(rows, MAX_BARS)
    lab_w = 0.075 * max(len(x) for x in rows) + 0.4
    w = (1.3 * len(modes) + lab_w) * len(parts) + 1.4
    h = max(3.4, 0.5 * max(len(p) for p in parts) + 2.2)
    fig, axes = figure(1, len(parts), w=w, h=h)
    per = _per(r)
    for k, (ax, part) in enumerate(zip(axes.flat, parts, strict=True)):
        sns.heatmap(np.log10(kp.loc[part].astype(float)), annot=annot.loc[part], fmt="",
                    cmap="Purples", vmin=0, vmax=max(1.0, np.log10(float(np.nanmax(kp)) * 1.6)),
                    ax=ax, cbar=k == len(parts) - 1, annot_kws={"fontsize": 7.5},
                    cbar_kws={"shrink": 0.8}, linewidths=0.5, linecolor="white")  # fmt: skip
        log_colorbar(ax, 10, [1, 2, 5, 10, 20, 50, 100, 200, 500], lambda t: f"{t:g}",
                     f"kernels per {per}")  # fmt: skip
        ax.set_yticks(np.arange(len(part)) + 0.5, part, rotation=0, fontsize=8)
        ax.set_xticks(np.arange(len(modes)) + 0.5, modes, rotation=20, ha="right", fontsize=8)
        ax.set_xlabel("compile mode", fontsize=9)
        ax.set_ylabel("")
        ax.grid(False)
    finish(fig, f"How many kernels does one {per} launch, and how long does a call take?",
           context(r, w))  # fmt: skip
    most = r.loc[r["kernels_per_step"].idxmax()]
    least = r.loc[r["kernels_per_step"].idxmin()]
    s = (
        f"Kernels per {per} and per-call latency of {len(r)} ok cells (the blog's table): from "
        f"{count(least['kernels_per_step'])} ({least['label']} · {least['compile']}) to "
        f"{count(most['kernels_per_step'])} ({most['label']} · {most['compile']}){left_out(dropped)}."
    )
    return fig, s


def _mode_panels(k: pd.DataFrame, r: pd.DataFrame):
    """(mode, labels) panels of at most MAX_BARS cells, modes in their usual order."""
    panels = []
    for m in modes_in(r):
        labels = [x for x in dict.fromkeys(r[r["compile"] == m]["label"]) if x in set(k["label"])]
        for part in chunks(labels, MAX_BARS):
            panels.append((m, part))
    return panels


def _grid(panels, row_h=0.3, panel_w=4.2, extra_w=0.0):
    ncols = min(3, len(panels))
    nrows = int(np.ceil(len(panels) / ncols))
    tallest = max(len(p) for _, p in panels)
    fig, axes = figure(nrows, ncols, w=panel_w * ncols + extra_w,
                       h=(row_h * tallest + 0.9) * nrows + 1.1)  # fmt: skip
    for ax in axes.flat[len(panels) :]:
        ax.axis("off")
    return fig, axes


def _stacked(ax, table: pd.DataFrame, mode: str, labels, classes, height: float):
    """One panel's horizontal bars, one segment per kernel class, for the cells '<label> · <mode>'
    of ``table`` (cells x classes). Returns the cells, the bars' y and their right ends."""
    cells = [f"{lab} · {mode}" for lab in labels]
    p = table.reindex(cells).fillna(0)
    y = np.arange(len(labels))[::-1]
    left = np.zeros(len(labels))
    for c in classes:
        if c in p:
            ax.barh(y, p[c], left=left, color=CLASS_COLORS.get(c, "grey"), height=height)
            left += p[c].to_numpy()
    return cells, y, left


def kernel_classes(d) -> tuple:
    k = need(d["kernels"], ["kernel_class", "calls_per_step"], "kernels per forward")
    r, dropped = per_cell(ok(d["runs"]))
    r = r.assign(label=bar_labels(r))
    k = label_kernels(k, r)
    if k.empty:
        raise Skip("kernel classes: no kernels for ok cells")
    panels = _mode_panels(k, r)
    classes = [c for c in CLASS_ORDER if c in set(k["kernel_class"])]
    leg = legend_width(classes)
    fig, axes = _grid(panels, extra_w=leg + 1.2)
    piv = k.pivot_table(index="cell", columns="kernel_class", values="calls_per_step",
                        aggfunc="sum").fillna(0)  # fmt: skip
    xmax = piv.sum(axis=1).max() * 1.15
    for ax, (m, labels) in zip(axes.flat, panels, strict=False):
        cells, y, left = _stacked(ax, piv, m, labels, classes, height=0.7)
        for yy, tot in zip(y, left, strict=True):
            ax.text(tot + xmax * 0.01, yy, count(tot), va="center", fontsize=7)
        ax.set_yticks(y, labels, fontsize=8)
        ax.set_ylim(-0.6, len(labels) - 0.4)
        ax.set_xlim(0, xmax)
        ax.set_title(m, fontsize=10)
        ax.set_xlabel(f"kernels per {_per(r)}", fontsize=8)
        ax.tick_params(axis="x", labelsize=7)
    handles = [Patch(color=CLASS_COLORS[c]) for c in classes]
    legend_right(fig, handles, classes, title="kernel class", fontsize=7)
    finish(fig, f"Which kinds of kernels does one {_per(r)} launch?",
           context(r, fig.get_figwidth()), right_in=leg)  # fmt: skip
    tot = piv.sum(axis=1)
    s = (
        f"Kernels per {_per(r)} by kind, one panel per compile mode: from {count(tot.min())} "
        f"({tot.idxmin()}) to {count(tot.max())} ({tot.idxmax()}){left_out(dropped)}."
    )
    return fig, s


def top_kernels(d) -> tuple:
    k = need(d["kernels"], ["us_per_step", "kernel_short"], "top kernels")
    r, dropped = per_cell(ok(d["runs"]))
    r = r.assign(label=bar_labels(r))
    k = label_kernels(k, r)
    k = k[k["us_per_step"].notna()]
    if k.empty:
        raise Skip("top kernels: no kernels for ok cells")
    panels = _mode_panels(k, r)
    classes = [c for c in CLASS_ORDER if c in set(k["kernel_class"])]
    leg = legend_width(classes)
    fig, axes = _grid(panels, row_h=0.34, panel_w=4.6, extra_w=leg + 1.2)
    share = k.pivot_table(index="cell", columns="kernel_class", values="us_per_step",
                          aggfunc="sum").fillna(0)  # fmt: skip
    total = share.sum(axis=1)
    share = share.div(total.where(total > 0), axis=0) * 100
    top = k.loc[k.groupby("cell")["us_per_step"].idxmax()].set_index("cell")
    names = []  # (ax, x, y, kernel, share, ha): placed once the layout is final
    for ax, (m, labels) in zip(axes.flat, panels, strict=False):
        cells, y, left = _stacked(ax, share, m, labels, classes, height=0.75)
        for yy, cell in zip(y, cells, strict=True):
            if cell not in top.index:
                continue
            t = top.loc[cell]  # named on its own class's segment, so the colour agrees
            pct = 100 * t["us_per_step"] / total[cell] if total[cell] else 0
            row = share.loc[cell].fillna(0)
            start = sum(row.get(c, 0) for c in classes[: classes.index(t["kernel_class"])])
            end = start + row.get(t["kernel_class"], 0)
            left = start < 55
            names.append((ax, start + 1 if left else end - 1, yy, str(t["kernel_short"]),
                          f" {pct:.0f}%", "left" if left else "right"))  # fmt: skip
        ax.set_yticks(y, labels, fontsize=8)
        ax.set_ylim(-0.6, len(labels) - 0.4)
        ax.set_xlim(0, 100)
        ax.set_title(m, fontsize=10)
        ax.set_xlabel("% of the step's kernel time", fontsize=8)
        ax.tick_params(axis="x", labelsize=7)
    handles = [Patch(color=CLASS_COLORS[c]) for c in classes]
    legend_right(fig, handles, classes, title="kernel class", fontsize=7)
    finish(fig, "Where does each cell's device time go?",
           context(r, fig.get_figwidth()) + "\nlargest kernel named on each bar",
           right_in=leg)  # fmt: skip
    fig.canvas.draw()
    for ax, x, y, name, share, ha in names:
        fit_text(ax, x, y, name, share, ha=ha, va="center", fontsize=6.5,
                 bbox={"boxstyle": "square,pad=0.1", "fc": "white", "alpha": 0.8, "lw": 0})  # fmt: skip
    dom = top["us_per_step"] / total.reindex(top.index)
    s = (
        f"Kernel time per step by kind for {len(top)} cells, the largest kernel named; it takes "
        f"a median {sig(100 * dom.median(), 2)}% of a step{left_out(dropped)}."
    )
    return fig, s
