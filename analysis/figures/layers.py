"""Where does a compiled call's time go? Per cell, the µs per call each layer of torch.compile
adds over eager (Dynamo, AOTAutograd, Inductor, and a C++ wrapper instead of Python), from a
sweep over compile targets (analysis/tables/layers.py), with each difference's interval. Returns
``(figure, sentence)`` or raises ``Skip``."""

from __future__ import annotations

import numpy as np
import pandas as pd
import seaborn as sns

from analysis.style import Skip, context, figure, finish, legend_right, legend_width, ok
from analysis.tables import layers

ORDER = ["Dynamo", "AOTAutograd", "Inductor", "C++ wrapper"]
COLOURS = dict(zip(ORDER, sns.color_palette("colorblind", 10)[4:8], strict=True))


def scale(us) -> str:
    """'linear', so that bar lengths compare (+76.6 and +105.6 µs looked equal on symlog), unless
    the layers' sizes span more than ``WIDE``x (then 'symlog', which keeps a few µs visible
    beside hundreds)."""
    m = pd.Series(us, dtype=float).abs()
    m = m[m >= 1]  # under a µs is zero here
    return "symlog" if len(m) and m.max() / m.min() > WIDE else "linear"


WIDE = 100


def where_time_goes(d) -> tuple:
    # Long: one figure, drawn top to bottom (its data, scale, bars, labels and the sentence it
    # says); its parts are used nowhere else.
    raw = d.get("repeats", d["runs"])
    lay = layers.layers(raw)
    if lay.empty or not set(lay["layer"]) & set(ORDER[:3]):
        raise Skip("no cell ran under dynamo_eager, aot_eager and default: +experiment=targets")
    lay = lay[lay["layer"].isin(ORDER)]
    a = layers.added(raw)
    keys = [c for c in layers.CELL if c in lay]
    lay = lay.assign(
        cell=[layers.label(dict(zip(keys, x, strict=True)), a) for x in lay[keys].values]
    )
    cells = list(dict.fromkeys(lay["cell"]))
    shown = [x for x in ORDER if x in set(lay["layer"])]
    leg = legend_width(shown)
    fig, axes = figure(1, 1, w=9.5 + leg, h=1.2 + 0.75 * len(cells))
    ax = axes[0, 0]
    h = 0.8 / len(shown)
    for j, layer in enumerate(shown):
        g = lay[lay["layer"] == layer].set_index("cell").reindex(cells)
        y = np.arange(len(cells)) + (j - (len(shown) - 1) / 2) * h
        err = np.array([g["us"] - g["lo"], g["hi"] - g["us"]]).clip(min=0)
        ax.barh(y, g["us"], height=h * 0.9, color=COLOURS[layer], xerr=err, ecolor="#333333",
                error_kw={"lw": 0.8}, label=layer)  # fmt: skip
        for yy, v, fast in zip(y, g["us"], g["fast"], strict=True):
            if v == v:
                ax.text(v, yy, f" {v:+.1f}{'' if fast else '*'} ", va="center", fontsize=7,
                        ha="left" if v >= 0 else "right")  # fmt: skip
    ax.axvline(0, color="grey", lw=0.8)
    lo, hi = lay["lo"].min(), lay["hi"].max()  # room for the value labels past the bars
    sym = scale(lay["us"]) == "symlog"
    if sym:
        ax.set_xscale("symlog", linthresh=10)
        ax.set_xlim(min(lo * 4, -20), max(hi * 4, 20))
    else:
        pad = 0.18 * (max(hi, 0) - min(lo, 0) or 1)
        ax.set_xlim(min(lo, 0) - (pad if lo < 0 else 0), max(hi, 0) + pad)
    ax.set_yticks(np.arange(len(cells)), cells)
    ax.invert_yaxis()
    star = not lay["fast"].astype(bool).all()  # the figure says what its * means
    ax.set_xlabel(
        "µs per call the layer adds over eager (negative: saves)"
        + ("; symlog" if sym else "")
        + ("\n*: timed outside the host's fast phase (the slow phase's µs)" if star else "")
    )
    handles, names = ax.get_legend_handles_labels()
    legend_right(fig, handles, names, title="layer")
    ctx = context(ok(d["runs"]))
    finish(fig, "Where does a compiled call's time go, layer by layer?", ctx, right_in=leg)
    big = lay.loc[lay["us"].abs().idxmax()]
    host = lay[(lay["layer"] == "Dynamo")].sort_values("us", ascending=False)
    sentence = (
        f"Per call, against eager in the same process: the largest change is {big['layer']} in "
        f"{big['cell']} ({big['us']:+.1f} µs)"
        + (
            f"; Dynamo's capture and guards cost at most {host['us'].iloc[0]:+.1f} µs "
            f"({host['cell'].iloc[0]})"
            if len(host)
            else ""
        )
        + ". * marks a figure timed outside the host's fast phase."
    )
    return fig, sentence
