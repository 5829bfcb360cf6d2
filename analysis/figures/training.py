"""Does compile pay less once the backward runs? One panel per variant measured in a training
pass: the paired speedup (eager / compiled, timed in alternation in one process) per pass (fwd,
fwd_bwd, train_step) with its 95% interval as a bar (a cell run in several processes: the
interval that covers processes, study.observe.stats.across_processes), a point per Inductor
mode, the default's labelled with its value, a hollow one for a cell timed outside the host's
fast phase; each panel shows the passes its variant ran. Drawn over ALL sources at once (a pass
is usually a sweep of its own: part3 and part3_bwd), the ladder's sweeps before the compile
targets'. Returns ``(figure, sentence)`` or raises ``Skip``."""

from __future__ import annotations

import numpy as np
import pandas as pd
from matplotlib.lines import Line2D
from matplotlib.ticker import FuncFormatter

from analysis.measures import MODES, PASSES, sig
from analysis.style import MODE_COLORS, Skip, figure, finish, legend_right, legend_width

TRAINING = ("fwd_bwd", "train_step")
INDUCTOR = ("default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs")
# A sweep that runs a compile target beyond Inductor's modes takes torch.compile apart
# (figures.layers draws it): its rows come after the ladder's own
TAKEN_APART = ("dynamo_eager", "aot_eager", "cudagraphs", "cpp_wrapper", "aot_inductor")
MAX_PANELS = 12


def _other_shapes(r: pd.DataFrame) -> pd.Series:
    """The rows of a sweep over shapes, not at the ladder's one shape, by the rows' own columns:
    a sweep (source) in which one variant takes several values of ``seq_len`` (attention over length),
    ``mask`` (FlexAttention mask by mask) or ``dynamic`` (dynamic shapes)."""
    out = pd.Series(False, index=r.index)
    if "source" not in r:
        return out
    for col in ("seq_len", "mask", "dynamic"):
        if col in r:
            out |= r.groupby(["source", "variant"])[col].transform("nunique") > 1
    return out


def training(d) -> tuple:
    # Long: one figure, drawn top to bottom (its data, axes, labels and the sentence it says); its
    # parts are used nowhere else.
    r = d["runs"]
    if "pass" not in r or "speedup_paired" not in r:
        raise Skip("training: no pass or speedup_paired column")
    r = r[(r["status"] == "ok") & r["speedup_paired"].notna() & (r["compile"] != "off")]
    for col in ("speedup_ci_low", "speedup_ci_high"):  # no interval: the point alone
        r[col] = (
            r[col].where(r[col].notna(), r["speedup_paired"]) if col in r else r["speedup_paired"]
        )
    r = r[~_other_shapes(r)]
    # one row per variant, pass and mode: at the blog's attention length where a sweep has more
    if "seq_len" in r and r["seq_len"].nunique() > 1:
        r = r[(r["family"] != "attention") | (r["seq_len"] == 1024)]
    if "source" in r:
        # the ladder's own sweep before the compile targets' (their modes have a figure of
        # their own): v3's flash fwd_bwd default read 0.976x in part3_bwd, 0.814x in
        # targets_bwd on a slower host, and either could have been drawn
        apart = set(r.loc[r["compile"].isin(TAKEN_APART), "source"])
        r = r.copy().assign(_t=r["source"].isin(apart)).sort_values("_t", kind="stable")
    r = r[r["compile"].isin(INDUCTOR)].drop_duplicates(["variant", "pass", "compile"])
    trained = sorted(set(r.loc[r["pass"].isin(TRAINING), "variant"]))
    if not trained:
        raise Skip(
            "training: no compiled cell with a paired speedup in pass fwd_bwd or train_step "
            "under Inductor's modes"
        )
    r = r[r["variant"].isin(trained)]
    shown = trained[:MAX_PANELS]
    modes = [m for m in MODES if m in set(r["compile"])]
    ncols = min(4, len(shown))
    nrows = int(np.ceil(len(shown) / ncols))
    leg = legend_width(modes)
    fig, axes = figure(nrows, ncols, w=2.9 * ncols + leg + 0.3, h=2.4 * nrows + 1.3, sharey=True)
    for a in axes.flat[len(shown) :]:
        a.axis("off")
    width = 0.7 / max(1, len(modes))
    # any phase but fast, the combined ones ('mixed/slow', analysis.load.cells) included
    slow = (
        (r["timing_phase"].notna() & (r["timing_phase"] != "fast")) if "timing_phase" in r else None
    )
    for ax, v in zip(axes.flat, shown, strict=False):
        g = r[r["variant"] == v]
        passes = [p for p in PASSES if p in set(g["pass"])]  # the passes this variant ran
        for k, m in enumerate(modes):
            gm = g[g["compile"] == m].set_index("pass").reindex(passes)
            x = np.arange(len(passes)) - 0.35 + width * (k + 0.5)
            sp, lo, hi = gm["speedup_paired"], gm["speedup_ci_low"], gm["speedup_ci_high"]
            c = MODE_COLORS.get(m, "black")
            hollow = slow[g.index[g["compile"] == m]].set_axis(
                g.loc[g["compile"] == m, "pass"]).reindex(passes).fillna(False).astype(bool) \
                if slow is not None else pd.Series(False, index=passes)  # fmt: skip
            for fill, pick in (("full", ~hollow.to_numpy()), ("none", hollow.to_numpy())):
                if pick.any():
                    ax.errorbar(x[pick], sp[pick], fmt="o", ms=3.5, color=c, capsize=2, lw=1,
                                mfc=c if fill == "full" else "white",
                                yerr=[(sp - lo).clip(lower=0)[pick],
                                      (hi - sp).clip(lower=0)[pick]])  # fmt: skip
            if m == "default":  # the mode the tables lead with: its value, on the point
                for xi, y in zip(x, sp, strict=True):
                    if y == y:
                        ax.annotate(f"{sig(y)}x", (xi, y), xytext=(-4, 0), ha="right",
                                    va="center", textcoords="offset points", fontsize=7)  # fmt: skip
        ax.axhline(1.0, color="#888888", lw=0.8, ls="--")
        ax.set_xlim(-0.6, len(passes) - 0.4)
        ax.set_xticks(np.arange(len(passes)), passes, fontsize=8)
        ax.set_title(v, fontsize=10)
        ax.set_yscale("log", base=2)
        ax.yaxis.set_major_formatter(FuncFormatter(lambda t, _: f"{t:g}x"))
        ax.tick_params(labelsize=8)
    # Shared y: a margin so no point or bar (the same ends as drawn) sits on the frame, and 1x
    # (the dashed line) always in view.
    g = r[r["variant"].isin(shown)]
    ends = pd.concat([g["speedup_paired"], g["speedup_ci_low"], g["speedup_ci_high"],
                      pd.Series([1.0])])  # fmt: skip
    ends = ends[ends > 0]
    axes.flat[0].set_ylim(ends.min() / 1.25, ends.max() * 1.25)
    for row in axes:
        row[0].set_ylabel("paired speedup", fontsize=8)
    handles = [Line2D([], [], color=MODE_COLORS.get(m, "black"), marker="o", ls="") for m in modes]
    names = list(modes)
    if slow is not None and slow.any():
        handles.append(Line2D([], [], color="#444444", marker="o", mfc="white", ls=""))
        names.append("hollow: timed outside\nthe host's fast phase")
    legend_right(fig, handles, names, title="compile")
    finish(fig, "Does compile pay less once the backward runs?",
           "paired speedup, 95% interval as a bar (a cell in several processes: the t-interval over them); "
           "above the dashed line: compiled faster"
           + (f"; {len(trained) - len(shown)} more variants in the tables" if len(trained) > len(shown) else ""),
           right_in=leg)  # fmt: skip
    passes = [p for p in PASSES if p in set(r["pass"])]
    d_ = r[r["compile"] == "default"].pivot_table(index="variant", columns="pass",
                                                  values="speedup_paired", aggfunc="first")  # fmt: skip
    parts = []
    for v in shown:
        if v in d_.index and "fwd" in d_ and d_.loc[v].notna().sum() > 1:
            rest = [
                f"{sig(d_.loc[v, p])}x {p}"
                for p in passes[1:]
                if p in d_ and d_.loc[v, p] == d_.loc[v, p]
            ]
            parts.append(f"{v} {sig(d_.loc[v, 'fwd'])}x fwd → " + ", ".join(rest))
    s = (
        f"Paired speedup per pass of {len(shown)} variants measured in a training pass"
        + (": default mode " + "; ".join(parts) if parts else "")
        + "."
    )
    return fig, s
