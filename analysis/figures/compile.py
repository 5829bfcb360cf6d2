"""Two questions about what compiling buys: after how many calls does it pay for itself
(``payback``), and what did it change in each variant's kernels (``kernel_diff``: removed,
fused, added, with their time). Each returns ``(figure, sentence)`` or raises ``Skip``."""

from __future__ import annotations

import numpy as np
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

from analysis.measures import PAIRED_NOISE, count, kinds_text, order, sig, speedups
from analysis.style import (
    FAMILY_MARKERS,
    MAX_BARS,
    MODE_COLORS,
    Skip,
    bar_labels,
    chunks,
    context,
    figure,
    finish,
    label_points,
    left_out,
    legend_right,
    legend_width,
    marker_legend,
    modes_in,
    ok,
    per_cell,
)
from analysis.tables import kdiff

CALLS = [1e2, 1e3, 1e4, 1e5, 1e6, 1e7]


def payback(d) -> tuple:
    # Long: one figure, drawn top to bottom (its data, axes, labels and the sentence it says); its
    # parts are used nowhere else.
    r = ok(d["runs"])
    if r.empty or not (r["compile"] != "off").any():
        raise Skip("payback: no ok compiled cell")
    if "compile_s" not in r or r["compile_s"].isna().all():
        raise Skip("payback: no data in column(s) compile_s")
    r = speedups(r)
    r = r[(r["compile"] != "off") & r["compile_s"].notna() & r["gain_us"].notna()]
    r = r[r["compile_s"] > 0]
    if r.empty:
        raise Skip("payback: no compiled cell with compile time and an eager baseline")
    r = order(r).assign(label=bar_labels(r))
    r["pays"] = (r["gain_us"] > 0) & ~r["sp_same"]
    r["calls"] = (r["compile_s"] * 1e6 / r["gain_us"]).where(r["pays"])
    modes = modes_in(r)
    fams = [f for f in FAMILY_MARKERS if f in set(r["family"])]
    handles, names = marker_legend(modes, fams)
    if r["sp_same"].any():
        handles += [Line2D([], [], color="grey", marker="o", mfc="white", ls="")]
        names += [f"no change (≈ 1.0x, ±{PAIRED_NOISE:.0%})"]
    leg = legend_width(names)
    fig, axes = figure(1, 1, w=8.6 + leg, h=6.4)
    ax = axes[0, 0]
    g = r["gain_us"].abs()
    lin = 10 ** np.floor(np.log10(max(1e-3, float(g[g > 0].min()) if (g > 0).any() else 1.0)))
    xmax = float(g.max()) * 3 if g.max() > 0 else 10.0
    ylo, yhi = r["compile_s"].min() / 3, r["compile_s"].max() * 3
    ax.axvspan(-xmax, 0, color="#f4cccc", alpha=0.4, lw=0)
    ax.text(-lin * 1.2, yhi / 1.4, "compiled slower:\nnever pays back", fontsize=8,
            ha="right", va="top", color="#993333")  # fmt: skip
    xs = np.geomspace(lin, xmax, 100)
    iso = []
    for n in CALLS:
        ys = n * xs * 1e-6
        inside = (ys >= ylo) & (ys <= yhi)
        if inside.sum() > 5:
            ax.plot(xs[inside], ys[inside], ls=":", color="grey", lw=0.8)
            iso.append((n, xs[inside], ys[inside]))
    # a no-change cell's gain is within its interval of 0: drawn on 0, never inside "never pays"
    r["x"] = r["gain_us"].where(~r["sp_same"].astype(bool), 0.0)
    for (m, fam), gm in r.groupby(["compile", "family"]):
        for same, gs in gm.groupby("sp_same"):
            c = MODE_COLORS.get(m, "black")
            ax.scatter(gs["x"], gs["compile_s"], s=46, marker=FAMILY_MARKERS.get(fam, "o"),
                       facecolor="white" if same else c, edgecolor=c if same else "black",
                       linewidth=1.2 if same else 0.4, zorder=3)  # fmt: skip
    ax.set_xscale("symlog", linthresh=lin)
    dec = [lin * 10**k for k in range(1, int(np.ceil(np.log10(xmax / lin))) + 1)]
    ax.set_xticks([-x for x in dec[::-1]] + [0] + dec)  # no labels at ±linthresh beside 0
    ax.set_yscale("log")
    ax.set_xlim(-xmax, xmax)
    ax.set_ylim(ylo, yhi)
    ax.set_xlabel("gain per call, µs (eager − compiled; left of 0: compiled is slower)", fontsize=9)
    ax.set_ylabel("compile time, s", fontsize=9)
    ax.tick_params(labelsize=8)
    legend_right(fig, handles, names, title="compile")
    finish(fig, "After how many calls does compiling pay for itself?",
           context(r, fig.get_figwidth()) + f"\n{kinds_text(r)}; dotted: payback after N calls",
           right_in=leg)  # fmt: skip
    for n, lx, ly in iso:  # along its line, so neighbouring labels do not collide
        (x0, y0), (x1, y1) = ax.transData.transform([(lx[-6], ly[-6]), (lx[-1], ly[-1])])
        ax.text(lx[-3], ly[-3], f"{n:,.0f} calls", fontsize=7, color="grey", ha="center",
                va="bottom", rotation=np.degrees(np.arctan2(y1 - y0, x1 - x0)),
                rotation_mode="anchor")  # fmt: skip
    prio = np.where(r["pays"], 10 + 1e9 / r["calls"].fillna(np.inf), (1 - r["sp"]).abs())
    label_points(ax, r["x"], r["compile_s"], r["label"] + " · " + r["compile"], priority=prio)
    pays = r[r["pays"]]
    slower = r[(r["gain_us"] < 0) & ~r["sp_same"]]
    s = f"Compile time against the per-call gain ({kinds_text(r)}): {len(pays)} of {len(r)} compiled cells pay back"
    if len(pays):
        b = pays.loc[pays["calls"].idxmin()]
        s += f", the quickest after {sig(b['calls'])} calls ({b['label']} · {b['compile']})"
    one = len(slower) == 1
    s += f"; {len(slower)} {'is' if one else 'are'} slower than eager and never {'pays' if one else 'pay'} back"
    n_same = int(r["sp_same"].sum())
    s += (
        f"; {n_same} {'shows' if n_same == 1 else 'show'} no change (interval holds 1.0, or "
        f"within ±{PAIRED_NOISE:.0%}), drawn at a gain of 0."
        if n_same
        else "."
    )
    return fig, s


KD_COLORS = {"removed": "#d62728", "fused": "#1f77b4", "added": "#ff7f0e", "kept": "#999999"}


def kernel_diff(d) -> tuple:
    # Long: one figure, drawn top to bottom (its data, axes, labels and the sentence it says); its
    # parts are used nowhere else.
    runs, dropped = per_cell(ok(d["runs"]))
    summ, _ = kdiff.diff(runs, d["kernels"])
    if summ.empty:
        raise Skip("kernel diff: no compiled cell with an ok eager cell and kernels for both")
    modes = modes_in(summ)
    panels = []
    for m in modes:
        for part in chunks(list(summ[summ["compile"] == m]["label"]), MAX_BARS):
            panels.append((m, part))
    ncols = min(2, len(panels))
    nrows = int(np.ceil(len(panels) / ncols))
    tallest = max(len(p) for _, p in panels)
    names = ["removed (eager only)", "fused (Inductor-generated)", "added (not generated)",
             "kept (change)", "net change"]  # fmt: skip
    leg = legend_width(names)
    fig, axes = figure(nrows, ncols, w=6.6 * ncols + leg + 0.8,
                       h=(0.36 * tallest + 1.0) * nrows + 1.2)  # fmt: skip
    for ax in axes.flat[len(panels) :]:
        ax.axis("off")
    for ax, (m, labels) in zip(axes.flat, panels, strict=False):
        g = summ[summ["compile"] == m].set_index("label").loc[labels]
        y = np.arange(len(labels))[::-1]
        neg = np.zeros(len(labels))
        pos = np.zeros(len(labels))
        for ch in kdiff.CHANGES:
            v = g[f"us_{ch}"].to_numpy(dtype=float)
            left = np.where(v < 0, neg + v, pos)
            ax.barh(y, np.abs(v), left=left, color=KD_COLORS[ch], height=0.7)
            neg, pos = np.where(v < 0, neg + v, neg), np.where(v >= 0, pos + v, pos)
        net = (g["us_compiled"] - g["us_eager"]).to_numpy(dtype=float)
        ax.scatter(net, y, marker="D", color="black", s=18, zorder=3)
        ax.axvline(0, color="black", lw=0.8)
        span = max(float(np.abs(neg).max()), float(pos.max()), 1e-9)
        ax.set_xlim(-span * 1.05, span * 1.9)
        for yy, (_, row) in zip(y, g.iterrows(), strict=True):
            ax.text(span * 1.88, yy, f"{count(row['n_removed'])} removed · {count(row['n_fused'])} fused · "
                    f"{count(row['n_added'])} added\n{sig(row['us_eager'])} → {sig(row['us_compiled'])} µs",
                    fontsize=6.5, ha="right", va="center", color="#333333")  # fmt: skip
        ax.set_yticks(y, labels, fontsize=8)
        ax.set_ylim(-0.6, len(labels) - 0.4)
        ax.set_title(m, fontsize=10)
        ax.set_xlabel("change in kernel time per step, µs (compiled − eager)", fontsize=8)
        ax.tick_params(axis="x", labelsize=7)
    handles = [Patch(color=KD_COLORS[c]) for c in kdiff.CHANGES]
    handles += [Line2D([], [], marker="D", color="black", ls="")]
    legend_right(fig, handles, names, title="eager → compiled", fontsize=7)
    finish(fig, "What did compiling change in each variant's kernels?",
           context(runs[runs["status"] == "ok"], fig.get_figwidth()), right_in=leg)  # fmt: skip
    summ = summ.assign(net=summ["us_compiled"] - summ["us_eager"])
    first = summ[
        (summ["compile"] == modes[0]) & (summ["net"] < -0.02 * summ["us_eager"])
    ].sort_values("net")
    bits = []
    for _, x in first.head(2).iterrows():
        bits.append(
            f"{x['label']}: {count(x['n_removed'])} kernels removed ({sig(x['us_removed'])} µs), "
            f"{count(x['n_fused'])} fused ({'+' if x['us_fused'] >= 0 else ''}{sig(x['us_fused'])} µs), "
            f"{count(x['n_added'])} added; kernel time {sig(x['us_eager'])} → {sig(x['us_compiled'])} µs"
        )
    s = f"Eager → compiled kernels for {len(summ)} compiled cells; under {modes[0]}, " + (
        "the largest savings: " + "; ".join(bits) if bits else "no cell spends less kernel time"
    )
    s += f"{left_out(dropped)}."
    return fig, s
