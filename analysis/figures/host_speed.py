"""At what host speed does compiling stop paying? One curve per compiled CUDA cell: the paired
speedup predicted at host speed G (the gauge's µs, study.measure.host_gauge) by latency ~ max(device µs,
host µs at G) (analysis.tables.host_model.curve: host units x G, or host µs scaled as G ** alpha where
the rows span enough host speeds to fit alpha), each machine's measured speedup as a point at
the host speed its paired rounds ran at (``g_timed``), and the crossover where the curve falls
through 1, drawn only where ``host_model.reach`` lists it (within 1.5x the measured G and outside
the speedup's noise); each curve is solid within that reach and dotted beyond it. Cells whose curve is flat over the range (GPU-bound on both sides at every host
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
        # the crossover within reach of the measured G and outside noise (host_model.reach),
        # as the Findings list it; none drawn from an extrapolated curve or inside the noise
        got = host_model.reach(x, alpha)
        curves.append((f"{label} · {mode}", x, sp, got))
    if not curves:
        raise Skip("host speed: every compiled cell is GPU-bound on both sides at 5-60 µs")
    curves = sorted(curves, key=lambda t: -(t[2].max() - t[2].min()))[:MOST]
    leg = legend_width([n for n, *_ in curves])
    fig, axes = figure(1, 1, w=7.5 + leg, h=6.0)
    ax = axes.flat[0]
    colors = [f"C{i}" for i in range(len(curves))]
    for i, ((name, x, sp, got), col) in enumerate(zip(curves, colors, strict=True)):
        near = (G >= got["g_lo"] / host_model.REACH) & (G <= got["g_hi"] * host_model.REACH)
        ax.plot(G, np.where(near, sp, np.nan), color=col, lw=1.6, label=name)
        ax.plot(G, np.where(near, np.nan, sp), color=col, lw=0.9, ls=":")  # extrapolated
        g = x["g_timed"] if "g_timed" in x else x["g"]  # the paired rounds' host speed
        ax.scatter(g, x["speedup_paired"], color=col, edgecolor="black", s=40, zorder=3)
        cross = got["crossing"] if got["listed"] else None
        if cross is not None:
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
    return fig, _sentence(curves, flat, alpha)


def _sentence(curves: list, flat: list[str], alpha: float) -> str:
    """What the figure says: the crossovers it draws, how many it leaves out as noise, and the
    cells host-bound at every host speed."""
    crossing = [(n, c["crossing"]) for n, _, _, c in curves if c["listed"]]
    noise = sum(1 for *_, c in curves if c["crossing"] is not None and not c["listed"])
    said = "; ".join(f"{n} falls below 1x above {sig(c, 3)} µs" for n, c in crossing)
    bound = f". Host-bound at every host speed, so the ratio of their host units at any: {', '.join(flat)}"
    return (
        f"Predicted paired speedup against host speed for {len(curves)} compiled cell(s), "
        "latency ~ max(device µs, host µs at G), host µs scaling as G ** "
        f"{sig(alpha, 2)} (1: host units x G; fitted where the rows span host speeds), "
        f"with the measured rows as points; solid within {host_model.REACH}x the G each cell "
        "was measured at, dotted beyond (extrapolation)"
        + (f": {said}" if said else ": no crossover outside noise within that reach")
        + (
            f" ({noise} crossing(s) not drawn: inside the speedup's noise, or on a side the "
            "measured rows do not show)"
            if noise
            else ""
        )
        + (bound if flat else "")
        + "."
    )
