"""Two questions about time per call: how long does one call take (``latency``), and how much
faster than eager is each compile mode (``speedup``). Each returns ``(figure, sentence)`` or
raises ``Skip``."""

from __future__ import annotations

import textwrap

import numpy as np
import seaborn as sns

from analysis.measures import (
    PAIRED_NOISE,
    has,
    kinds_text,
    latency_methods,
    order,
    sig,
    speedup_words,
    speedups,
)
from analysis.shown import DRAWN, drawn_us
from analysis.slowdown import host_effects
from analysis.style import (
    MAX_BARS,
    MAX_IN,
    MODE_COLORS,
    Skip,
    bar_labels,
    chunks,
    context,
    figure,
    finish,
    left_out,
    legend_right,
    legend_width,
    log_colorbar,
    log_if_wide,
    mode_handles,
    modes_in,
    need,
    ok,
    per_cell,
    shape_sweeps,
)

MAX_PANELS = 9


def latency(d) -> tuple:
    # Long: one figure, drawn top to bottom (its data, axes, labels and the sentence it says); its
    # parts are used nowhere else.
    r, dropped = per_cell(need(ok(d["runs"]), ["latency_median_us"], "latency"))
    r = r.assign(label=bar_labels(r), shown=drawn_us(r))
    r["_apart"] = r["shown"] == r["latency_median_us"]  # whiskers: p10–p90 of these calls only
    modes = modes_in(r)
    panels = []  # (family, labels): at most MAX_BARS bars each
    for fam in dict.fromkeys(r["family"]):
        labels = list(dict.fromkeys(r[r["family"] == fam]["label"]))
        for part in chunks(labels, max(1, MAX_BARS // len(modes))):
            panels.append((fam, part))
    hidden = sum(len(p) for _, p in panels[MAX_PANELS:])
    panels = panels[:MAX_PANELS]
    bars = [len(p) * len(modes) for _, p in panels]
    widths = [
        max(1.5, 0.16 * b + 0.3 * len(p) + 0.9) for b, (_, p) in zip(bars, panels, strict=True)
    ]
    leg = legend_width(modes)
    one_row = sum(widths) + leg + 0.4 <= MAX_IN[0]  # side by side, each as wide as its bars
    ncols = len(panels) if one_row else min(3, len(panels))
    nrows = int(np.ceil(len(panels) / ncols))
    w = (sum(widths) if one_row else ncols * max(widths)) + leg + 0.4
    fig, axes = figure(
        nrows,
        ncols,
        w=w,
        h=4.3 * nrows + 1.2,
        gridspec_kw={"width_ratios": widths} if one_row else None,
    )
    for ax in axes.flat[len(panels) :]:
        ax.axis("off")
    bw = 0.8 / max(1, len(modes))
    for ax, (fam, labels) in zip(axes.flat, panels, strict=False):
        g = r[(r["family"] == fam) & r["label"].isin(labels)]
        for j, m in enumerate(modes):
            gm = g[g["compile"] == m].drop_duplicates("label").set_index("label").reindex(labels)
            x = np.arange(len(labels)) + (j - (len(modes) - 1) / 2) * bw
            y = gm["shown"].to_numpy(dtype=float)
            own = gm["_apart"].fillna(False).to_numpy(dtype=bool)
            lo = y - gm["latency_p10_us"].to_numpy(dtype=float) if "latency_p10_us" in gm else 0 * y
            hi = gm["latency_p90_us"].to_numpy(dtype=float) - y if "latency_p90_us" in gm else 0 * y
            lo, hi = np.where(own, lo, 0), np.where(own, hi, 0)
            ax.bar(x, y, bw, color=MODE_COLORS.get(m, "black"))
            lo, hi = np.clip(np.nan_to_num(lo), 0, None), np.clip(np.nan_to_num(hi), 0, None)
            ax.errorbar(x, y, yerr=[lo, hi], fmt="none",
                        ecolor="black", elinewidth=0.7, capsize=1.5)  # fmt: skip
        ax.set_xticks(np.arange(len(labels)), labels, rotation=30, ha="right", fontsize=8)
        ax.set_xlim(-0.6, len(labels) - 0.4)
        ax.set_title(fam, fontsize=10)
        ax.set_ylabel("µs per call (median; p10–p90 timed apart)", fontsize=8)
        ax.tick_params(axis="y", labelsize=8)
        log_if_wide(ax, g["shown"])
    legend_right(fig, mode_handles(modes), modes, title="compile")
    finish(fig, "How long does one call take, per variant and compile mode?",
           context(r, w), right_in=leg)  # fmt: skip
    lo, hi = r.loc[r["shown"].idxmin()], r.loc[r["shown"].idxmax()]
    s = (
        f"Per-call latency of {len(r)} ok cells, timed with {latency_methods(r)}; {DRAWN}: "
        f"fastest {lo['label']} · {lo['compile']} at {sig(lo['shown'])} µs, slowest "
        f"{hi['label']} · {hi['compile']} at {sig(hi['shown'])} µs{left_out(dropped)}"
        + (f"; {hidden} more variants are in the table only" if hidden else "")
        + "."
    )
    return fig, s


def speedup(d) -> tuple:
    # Long: one figure, drawn top to bottom (its data, axes, labels and the sentence it says); its
    # parts are used nowhere else.
    r = ok(d["runs"])
    if r.empty or not (r["compile"] != "off").any():
        raise Skip("speedup: no ok compiled cell")
    if not (r["compile"] == "off").any() and not has(r, "speedup_paired"):
        raise Skip("speedup: no ok eager cell (compile=off) to compare with, and no paired speedup")
    if not any(c in r and r[c].notna().any() for c in ("speedup", "speedup_paired")):
        raise Skip("speedup: no data in column(s) speedup, speedup_paired")
    r = speedups(r)
    r = order(r[(r["compile"] != "off") & r["sp"].notna()])
    if r.empty:
        raise Skip("speedup: no compiled cell with an ok eager baseline in the same sweep")
    modes = modes_in(r)
    sweep = shape_sweeps(r)
    if sweep:  # variant x shape, one panel per mode: the sweep reads along a row
        x = sweep[0]
        r = r.assign(label=bar_labels(r.drop(columns=[x])), col=r[x].astype("Int64").astype(str))
        cols = [str(v) for v in sorted(r[x].dropna().unique().astype(int))]
        panels = [(m, rows) for m in modes for rows in chunks(
            list(dict.fromkeys(r[r["compile"] == m]["label"])), MAX_BARS)]  # fmt: skip
        xlabel, sub = x, lambda m: r[r["compile"] == m]
    else:  # variant x mode
        r = r.assign(label=bar_labels(r), col=r["compile"])
        cols = modes
        panels = [("", rows) for rows in chunks(list(dict.fromkeys(r["label"])), MAX_BARS)]
        xlabel, sub = "compile mode", lambda m: r
    lab_w = 0.075 * max(len(x) for x in r["label"]) + 0.4
    panel_w = max(1.0, 0.95 if sweep else 1.25) * len(cols) + lab_w
    h = max(3.6, 0.34 * max(len(p) for _, p in panels) + 2.6)
    fig, axes = figure(1, len(panels), w=panel_w * len(panels) + 1.6, h=h)
    vmax = max(
        1.0,
        float(np.nanmax(np.abs(np.log2(r.loc[~r["sp_same"], "sp"]))))
        if (~r["sp_same"]).any()
        else 1.0,
    )
    for k, (ax, (m, rows)) in enumerate(zip(axes.flat, panels, strict=True)):
        g = sub(m)
        sp = g.pivot_table(index="label", columns="col", values="sp", aggfunc="first")
        same = g.assign(s=g["sp_same"].astype(float)).pivot_table(
            index="label", columns="col", values="s", aggfunc="first")  # fmt: skip
        sp, same = sp.reindex(index=rows, columns=cols), same.reindex(index=rows, columns=cols)
        same = same.fillna(0).astype(bool)
        annot = sp.map(lambda v: "" if v != v else f"{sig(v)}x").where(
            ~same, "≈ " + sp.map(sig) + "x"
        )
        sns.heatmap(np.log2(sp.where(~same, 1.0)), annot=annot, fmt="", center=0, vmin=-vmax,
                    vmax=vmax, cmap="RdBu", ax=ax, cbar=k == len(panels) - 1,
                    cbar_kws={"shrink": 0.8}, annot_kws={"fontsize": 7.5 if sweep else 8},
                    linewidths=0.5, linecolor="white")  # fmt: skip
        log_colorbar(ax, 2, [2.0**k for k in range(-10, 11)], lambda t: f"{t:g}x" if t >= 0.03 else f"{sig(t, 2)}x",
                     "speedup (blue: compiled faster)")  # fmt: skip
        ax.set_yticks(np.arange(len(rows)) + 0.5, rows, rotation=0, fontsize=8)
        ax.set_xticks(np.arange(len(cols)) + 0.5, cols, rotation=20, ha="right", fontsize=8)
        ax.set_xlabel(xlabel, fontsize=9)
        ax.set_ylabel("")
        ax.set_title(m, fontsize=10)
        ax.grid(False)
        if sweep:  # a cell that did not run says why (an oom at the long end)
            bad = d["runs"][(d["runs"]["status"] != "ok") & (d["runs"]["compile"] == m)]
            bad = bad[bad["variant"].isin({v.split(" ")[0] for v in rows})]
            for _, b in bad.iterrows():
                lab = bar_labels(bad.drop(columns=[sweep[0]])).loc[b.name]
                c = str(int(b[sweep[0]])) if b[sweep[0]] == b[sweep[0]] else ""
                if lab in rows and c in cols:
                    ax.text(cols.index(c) + 0.5, rows.index(lab) + 0.5, b["status"],
                            ha="center", va="center", fontsize=7.5, color="#888888")  # fmt: skip
    note = kinds_text(r) + (
        f". ≈: no change: the interval contains 1.0, or a paired one lies within "
        f"±{PAIRED_NOISE:.0%} of it."
    )
    fig.text(0.01, 0.01, "\n".join(textwrap.wrap(note, int(fig.get_figwidth() * 15))),
             fontsize=7.5, color="#444444", ha="left", va="bottom")  # fmt: skip
    q = (
        f"How much faster than eager, over {sweep[0]}?"
        if sweep
        else "How much faster than eager is each compile mode?"
    )
    finish(fig, q, context(r, fig.get_figwidth()), bottom_in=0.45)
    clear = r[~r["sp_same"]]
    n_same = int(r["sp_same"].sum())
    where = (lambda x: f"{x['label']} {sweep[0]}={int(x[sweep[0]])} · {x['compile']}") if sweep else (
        lambda x: f"{x['label']} · {x['compile']}")  # fmt: skip
    s = f"{kinds_text(r)[0].upper()}{kinds_text(r)[1:]} of {len(r)} compiled cell{'s' * (len(r) != 1)}"
    if len(clear):
        best = clear.loc[clear["sp"].idxmax()]
        worst = clear.loc[clear["sp"].idxmin()]
        s += (f": best {where(best)} {speedup_words(best)}, worst {where(worst)} "
              f"{speedup_words(worst)}" if len(clear) > 1
              else f": {where(best)} {speedup_words(best)}")  # fmt: skip
    s += (
        f"; {n_same} {'shows' if n_same == 1 else 'show'} no change (interval contains 1.0, or within ±{PAIRED_NOISE:.0%})."
        if n_same
        else "."
    )
    host = host_effects(d["runs"])
    if host:  # the standard: a slowdown with eager's kernels and device time is the host's
        s += (
            " Slower through the host, not the kernels (as many kernels as eager in eager's "
            f"device time): {', '.join(host)}."
        )
    return fig, s
