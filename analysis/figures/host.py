"""Does the GPU wait on the host? CPU time per profiled step against device busy time, one
point per cell: above the diagonal the profiled host side takes longer than the device (the
profiler slows the host); a ring marks the cells whose per-call latency is host-bound. CPU cells get no
host-bound verdict (one processor does both): their panel shows how much of a step is kernel
work. Returns ``(figure, sentence)`` or raises ``Skip``."""

from __future__ import annotations

import numpy as np

from analysis.measures import host_bound_of, sig
from analysis.style import (
    FAMILY_MARKERS,
    MODE_COLORS,
    Skip,
    bar_labels,
    context,
    figure,
    finish,
    label_points,
    left_out,
    legend_right,
    legend_width,
    marker_legend,
    modes_in,
    need,
    ok,
    per_cell,
    readable_log,
)

RING = "#b22222"  # the ring around a cell host-bound by its per-call latency
AXES = {
    "cuda": ("device busy per step, µs", "CPU time per step (dispatch + launch), µs"),
    "cpu": ("kernel (self) time per step, µs", "CPU time per step, µs"),
}


def cpu_gpu(d) -> tuple:
    # Long: one figure, drawn top to bottom (its data, axes, labels and the sentence it says); its
    # parts are used nowhere else.
    r = need(ok(d["runs"]), ["cpu_us_per_step", "gpu_us_per_step"], "CPU vs GPU")
    r, dropped = per_cell(r.dropna(subset=["cpu_us_per_step", "gpu_us_per_step"]))
    r = r[(r["cpu_us_per_step"] > 0) & (r["gpu_us_per_step"] > 0)]
    if r.empty:
        raise Skip("CPU vs GPU: no profiled ok cell")
    r = r.assign(label=bar_labels(r))
    devices = sorted(set(r["device"]), key=lambda x: x != "cuda")
    modes = modes_in(r)
    fams = [f for f in FAMILY_MARKERS if f in set(r["family"])]
    handles, names = marker_legend(modes, fams)
    # ringed by the latency rule alone: host_verdict falls back to the profiled CPU time, which
    # is what being above the line already says
    hb = host_bound_of(r).astype("boolean").fillna(False).astype(bool) & (r["device"] == "cuda")
    if hb.any():  # the cells whose GPU does wait, by per-call latency: ringed
        from matplotlib.lines import Line2D

        handles.append(Line2D([], [], marker="o", ls="", ms=10, mfc="none", mec=RING, mew=1.4))
        names.append("host-bound by\nper-call latency")
    leg = legend_width(names)
    fig, axes = figure(1, len(devices), w=6.4 * len(devices) + leg + 0.3, h=6.6)
    for ax, dev in zip(axes.flat, devices, strict=True):
        g = r[r["device"] == dev]
        lo = min(g["gpu_us_per_step"].min(), g["cpu_us_per_step"].min()) / 2
        hi = max(g["gpu_us_per_step"].max(), g["cpu_us_per_step"].max()) * 2
        ax.fill_between([lo, hi], [lo, hi], [hi, hi], color="#fdd9b5", alpha=0.45, lw=0)
        ax.plot([lo, hi], [lo, hi], color="grey", lw=0.8)
        # Above the line the profiled step's host side outlasts its kernels, but the profiler
        # slows the host: flash's eager forward sits there at 130 µs of CPU against 92 of GPU
        # (part3, v3), while its per-call latency is its device time.
        above = (
            "profiled host time above device time:\nthe GPU may wait (ringed: it does)"
            if dev == "cuda"
            else "time outside kernels"
        )
        ax.text(lo * 1.3, hi / 1.3, above, fontsize=8, va="top", color="#a0522d")
        for (m, fam), gm in g.groupby(["compile", "family"]):
            ax.scatter(gm["gpu_us_per_step"], gm["cpu_us_per_step"], s=42,
                       color=MODE_COLORS.get(m, "black"), marker=FAMILY_MARKERS.get(fam, "o"),
                       edgecolor="black", linewidth=0.4, zorder=3)  # fmt: skip
        ring = g[hb[g.index]]
        ax.scatter(ring["gpu_us_per_step"], ring["cpu_us_per_step"], s=130, facecolor="none",
                   edgecolor=RING, linewidth=1.4, zorder=4)  # fmt: skip
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlim(lo, hi)
        ax.set_ylim(lo, hi)
        readable_log(ax, "x")  # under a decade, minor labels ran together ('3×10²4×10²')
        readable_log(ax, "y")
        xl, yl = AXES.get(dev, AXES["cpu"])
        ax.set_xlabel(xl, fontsize=9)
        ax.set_ylabel(yl, fontsize=9)
        ax.set_title(f"{dev} cells", fontsize=10)
        ax.tick_params(labelsize=8)
    legend_right(fig, handles, names, title="compile")
    q = (
        "Does the GPU wait on the host?"
        if "cuda" in devices
        else "How much of a CPU step is kernel work?"
    )
    finish(fig, q, context(r, fig.get_figwidth()), right_in=leg)
    for ax, dev in zip(axes.flat, devices, strict=True):
        g = r[r["device"] == dev]
        far = np.abs(np.log(g["cpu_us_per_step"] / g["gpu_us_per_step"]))
        label_points(ax, g["gpu_us_per_step"], g["cpu_us_per_step"],
                     g["label"] + " · " + g["compile"], priority=far)  # fmt: skip
    parts = []
    cuda = r[r["device"] == "cuda"]
    if len(cuda):
        v = host_bound_of(cuda).dropna().astype(bool)  # the latency rule, as the rings
        parts.append(
            f"{int((cuda['cpu_us_per_step'] > cuda['gpu_us_per_step']).sum())} of {len(cuda)} "
            "GPU cells spend more CPU time per profiled step than the device is busy"
        )
        if len(v):  # from latency and busy time, or the runtime's column where they are not
            parts.append(
                f"{int(v.sum())} are host-bound by per-call latency (over 1.1x device busy time)"
            )
    cpu = r[r["device"] != "cuda"]
    if len(cpu):
        frac = 100 * cpu["gpu_us_per_step"] / cpu["cpu_us_per_step"]
        parts.append(
            f"on the CPU ({len(cpu)} cells), kernels take {sig(frac.min(), 2)}–"
            f"{sig(frac.max(), 2)}% of a profiled step, and no cell gets a host-bound verdict: "
            "one processor does both"
        )
    s = "CPU time against device time per step: " + "; ".join(parts) + f"{left_out(dropped)}."
    return fig, s
