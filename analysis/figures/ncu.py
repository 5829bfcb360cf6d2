"""How busy do the top kernels keep the GPU, measured by Nsight Compute? Occupancy (the
trace's static estimate against ncu's achieved) and SM/DRAM throughput per profiled kernel.
Needs ``ncu.csv``, i.e. a sweep run with ``ncu.enabled=true`` on a GPU. Returns
``(figure, sentence)`` or raises ``Skip``."""

from __future__ import annotations

import numpy as np
import pandas as pd

from analysis.measures import sig
from analysis.style import MAX_BARS, Skip, context, figure, finish, legend_right, legend_width, ok

WANT = {"achieved_occupancy", "sm_throughput_pct", "dram_throughput_pct"}
HOW = "run the sweep on a GPU with `ncu.enabled=true`"


def ncu_occupancy(d) -> tuple:
    # Long: one figure, drawn top to bottom (its data, axes, labels and the sentence it says); its
    # parts are used nowhere else.
    n = d.get("ncu", pd.DataFrame())
    if n.empty or "metric" not in n or "value" not in n:
        raise Skip(f"Nsight Compute: no ncu.csv rows; {HOW}")
    n = n[n["metric"].isin(WANT)].assign(value=lambda x: pd.to_numeric(x["value"], errors="coerce"))
    if n.empty or n["value"].isna().all():
        raise Skip(f"Nsight Compute: no achieved occupancy or throughput metrics; {HOW}")
    piv = n.pivot_table(index=["source", "run_id", "kernel_match"], columns="metric",
                        values="value", aggfunc="first").reset_index()  # fmt: skip
    k = d["kernels"]
    if not k.empty:
        k = k[["source", "run_id", "kernel", "occupancy_pct", "kernel_short"]]
        piv = piv.merge(k, left_on=["source", "run_id", "kernel_match"],
                        right_on=["source", "run_id", "kernel"], how="left")  # fmt: skip
    if "kernel_short" not in piv:
        piv["kernel_short"], piv["occupancy_pct"] = np.nan, np.nan
    runs = d["runs"]
    cell = runs.set_index(["source", "run_id"])
    piv["cell"] = [
        f"{cell.loc[(s, r), 'variant']} · {cell.loc[(s, r), 'compile']}"
        if (s, r) in cell.index
        else str(r)[:30]
        for s, r in zip(piv["source"], piv["run_id"], strict=True)
    ]
    piv["label"] = (
        piv["kernel_short"].fillna(piv["kernel_match"]).astype(str).str.slice(0, 32)
        + " ("
        + piv["cell"]
        + ")"
    )
    hidden = max(0, len(piv) - MAX_BARS // 2)
    piv = piv.head(MAX_BARS // 2)  # two bars per kernel and panel
    names = ["trace estimate", "ncu achieved", "SM throughput", "DRAM throughput"]
    leg = legend_width(names)
    fig, axes = figure(1, 2, w=13.0 + leg, h=0.42 * len(piv) + 2.4, sharey=True)
    y = np.arange(len(piv))[::-1]
    a0, a1 = axes[0]
    bars = [
        (a0, "occupancy_pct", -0.2, "#7570b3"),
        (a0, "achieved_occupancy", 0.2, "#e7298a"),
        (a1, "sm_throughput_pct", -0.2, "#1b9e77"),
        (a1, "dram_throughput_pct", 0.2, "#d95f02"),
    ]
    handles = []
    for ax, col, off, color in bars:
        vals = piv[col] if col in piv else pd.Series(np.nan, index=piv.index)
        handles.append(ax.barh(y + off, vals.fillna(0), 0.4, color=color))
    a0.set_yticks(y, piv["label"], fontsize=7)
    a0.set_xlabel("occupancy, %", fontsize=9)
    a1.set_xlabel("% of peak (ncu)", fontsize=9)
    for ax in (a0, a1):
        ax.set_xlim(0, 100)
        ax.set_ylim(-0.6, len(piv) - 0.4)
    legend_right(fig, handles, names)
    finish(fig, "How busy do the top kernels keep the GPU (Nsight Compute)?",
           context(ok(runs), fig.get_figwidth()), right_in=leg)  # fmt: skip
    ach = piv["achieved_occupancy"] if "achieved_occupancy" in piv else pd.Series(dtype=float)
    s = f"Nsight Compute for {len(piv)} kernels"
    if ach.notna().any():
        s += f": achieved occupancy {sig(ach.min(), 2)}–{sig(ach.max(), 2)}%"
    s += (f"; {hidden} more kernels are in ncu.csv only" if hidden else "") + "."
    return fig, s
