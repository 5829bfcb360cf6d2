"""At what host speed does compiling stop paying? One curve per compiled CUDA cell: the paired
speedup predicted at host speed G (the gauge's µs, study.measure.host_gauge) by latency ~ max(device µs,
host µs at G) (analysis.tables.host_model.curve: host units x G, or host µs scaled as G ** alpha where
the rows span enough host speeds to fit alpha), each machine's measured speedup as a point at
the host speed its paired rounds ran at (``g_timed``), and the crossover where the curve falls
through 1. Cells whose curve is flat over the range (GPU-bound on both sides at every host
speed drawn) are left out. Returns ``(figure, sentence)`` or raises ``Skip``."""

from __future__ import annotations

import numpy as np

from analysis.measures import sig
from analysis.style import (
    Skip,
    bar_labels,
    context,
    figure,
    finish,
    legend_right,
    legend_width,
    ok,
)
from analysis.tables import host_model

G = np.linspace(5.0, 60.0, 221)
FLAT = 0.02  # a curve that moves less than this over G is not drawn (GPU-bound throughout)
MOST = 8


def host_speed(d) -> tuple:
    r = ok(d["runs"])
    if "device" in r and len(r) and not (r["device"] == "cuda").any():
        raise Skip("host speed: a question for CUDA cells (on the CPU host and device are one)")
    if "host_units" not in r or r["host_units"].isna().all():
        raise Skip("host speed: no row has host_units (CUDA cells measure them; the CPU does not)")
    r = r.assign(machine=r["boot_id"].astype(str).str[:8] if "boot_id" in r else "this sweep")
    c = host_model.cells(r)
    if c.empty:
        raise Skip("host speed: no compiled CUDA cell with its eager twin and host units")
    c = c.assign(label=bar_labels(r.loc[r["compile"] != "off"]).reindex(c.index).fillna(c["cell"]))
    alpha = host_model.fit_alpha(c)  # 1.0 unless the rows span enough host speeds to fit it
    curves, flat = [], []
    for (label, mode), x in c.groupby(["label", "compile"], sort=False):
        sp = host_model.curve(x, G, alpha)
        if sp.max() - sp.min() < FLAT:
            fit = x[["dev_e", "u_e", "dev_c", "u_c"]].median()
            if fit.u_c * G[0] > fit.dev_c and fit.u_e * G[0] > fit.dev_e:  # host-bound at all G
                flat.append(f"{label} · {mode} {sig(fit.u_e / fit.u_c, 2)}x")
            continue
        # the crossover on host_model's grid, as FINDINGS states it (G only draws)
        cross = host_model.crossing(host_model.GRID, host_model.curve(x, host_model.GRID, alpha))
        curves.append((f"{label} · {mode}", x, sp, cross))
    if not curves:
        raise Skip("host speed: every compiled cell is GPU-bound on both sides at 5-60 µs")
    curves = sorted(curves, key=lambda t: -(t[2].max() - t[2].min()))[:MOST]
    leg = legend_width([n for n, *_ in curves])
    fig, axes = figure(1, 1, w=7.5 + leg, h=6.0)
    ax = axes.flat[0]
    colors = [f"C{i}" for i in range(len(curves))]
    for i, ((name, x, sp, cross), col) in enumerate(zip(curves, colors, strict=True)):
        ax.plot(G, sp, color=col, lw=1.6, label=name)
        g = x["g_timed"] if "g_timed" in x else x["g"]  # the paired rounds' host speed
        ax.scatter(g, x["speedup_paired"], color=col, edgecolor="black", s=40, zorder=3)
        if cross is not None and cross <= G[-1]:
            ax.axvline(cross, color=col, lw=0.8, ls=":")
            ax.annotate(f"{sig(cross, 3)} µs", (cross, 1.0), fontsize=7, color=col,
                        xytext=(3, 4 + 10 * i), textcoords="offset points")  # fmt: skip
    ax.axhline(1.0, color="grey", lw=0.8)
    ax.set_xlabel("host speed G: the gauge's µs (larger = slower host)", fontsize=9)
    ax.set_ylabel("paired speedup over eager (predicted line, measured points)", fontsize=9)
    ax.tick_params(labelsize=8)
    handles, names = ax.get_legend_handles_labels()
    legend_right(fig, handles, names, title="cell · compile")
    finish(fig, "At what host speed does compiling stop paying?", context(r, 7.5 + leg),
           right_in=leg)  # fmt: skip
    crossing = [(n, c) for n, _, _, c in curves if c is not None]
    said = "; ".join(f"{n} falls below 1x above {sig(c, 3)} µs" for n, c in crossing)
    bound = f". Host-bound at every host speed, so the ratio of their host units at any: {', '.join(flat)}"
    s = (
        f"Predicted paired speedup against host speed for {len(curves)} compiled cell(s), "
        "latency ~ max(device µs, host µs at G), host µs scaling as G ** "
        f"{sig(alpha, 2)} (1: host units x G; fitted where the rows span host speeds), "
        "with the measured rows as points"
        + (f": {said}" if said else ": none crosses 1 between 5 and 100 µs")
        + (bound if flat else "")
        + "."
    )
    return fig, s
