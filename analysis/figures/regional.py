"""What does compiling by region trade (compile.regional)? Compile seconds against the paired
speedup, the whole model against its repeated block compiled by region, one workload (model and
depth, pass, mode) a colour, a line from whole to regional. Skipped where a source has no
regional row. Returns ``(figure, sentence)`` or raises ``Skip``."""

from __future__ import annotations

import numpy as np
import pandas as pd
from matplotlib.lines import Line2D

from analysis.measures import AXES, axis_values, sig, speedups, truthy, xs
from analysis.style import (
    Skip,
    context,
    figure,
    finish,
    label_points,
    legend_right,
    legend_width,
    ok,
    readable_log,
)

# marker per way of compiling (regional_method; blank: the whole model)
MARKERS = {"": "o", "nested_compile_region": "D", "per-block torch.compile": "s"}
NAMES = {"": "whole model", "nested_compile_region": "regional: nested_compile_region",
         "per-block torch.compile": "regional: per-block torch.compile"}  # fmt: skip
NAMED = ["work", "how", "variant", "pass", "compile", "axes"]  # a point's text, kept by the median
SAME = ("variant", "pass", "compile", "dtype", "device", "batch", "seq_len", "dim", "n")


def regional(d) -> tuple:
    r = ok(d["runs"])
    if "regional" not in r or not truthy(r["regional"]).any():
        raise Skip("regional: no ok cell compiled by region (compile.regional=true)")
    r = speedups(r[r["compile"] != "off"])
    r["pass"] = r["pass"].fillna("fwd") if "pass" in r else "fwd"
    r = r[r["compile_s"].notna() & r["sp"].notna()].copy()
    r["how"] = r["regional_method"].fillna("").astype(str) if "regional_method" in r else ""
    r["how"] = r["how"].where(truthy(r["regional"]), "")
    r["depth"], r["axes"] = _depths(r), _axes(r)
    keys = [c for c in SAME if c in r] + ["depth", "axes"]
    r["work"] = _joined(r, keys)
    pairs = r.groupby("work").filter(lambda g: (g["how"] == "").any() and (g["how"] != "").any())
    if pairs.empty:
        raise Skip("regional: no workload compiled both whole and by region")
    pairs = (
        pairs.groupby(["work", "how"], as_index=False)
        .median(numeric_only=True)
        .merge(pairs.drop_duplicates(["work", "how"])[NAMED])
    )
    works = list(dict.fromkeys(pairs.sort_values(["variant", "depth"])["work"]))
    colours = dict(zip(works, _palette(len(works)), strict=True))
    hows = [h for h in MARKERS if h in set(pairs["how"])]
    names = [_label(pairs[pairs["work"] == w].iloc[0]) for w in works]
    leg = legend_width(names + [NAMES[h] for h in hows])
    fig, axes = figure(1, 1, w=8.4 + leg, h=6.0)
    ax = axes[0, 0]
    ax.axhline(1.0, color="grey", lw=0.8, ls="--")
    for w in works:
        g = pairs[pairs["work"] == w].set_index("how")
        for h in g.index.drop(""):  # whole -> regional, one line each
            ax.annotate("", xy=(g.at[h, "compile_s"], g.at[h, "sp"]),
                        xytext=(g.at["", "compile_s"], g.at["", "sp"]),
                        arrowprops=dict(arrowstyle="->", color=colours[w], lw=1.1, alpha=0.8))  # fmt: skip
        for h, p in g.iterrows():
            lo, hi = p.get("sp_lo", np.nan), p.get("sp_hi", np.nan)
            if np.isfinite(lo) and np.isfinite(hi):
                ax.plot([p["compile_s"]] * 2, [lo, hi], color=colours[w], lw=0.8, alpha=0.6)
            ax.scatter(p["compile_s"], p["sp"], marker=MARKERS.get(h, "o"), s=60, zorder=3,
                       color=colours[w] if h == "" else "white", edgecolor=colours[w],
                       linewidth=1.6)  # fmt: skip
    ax.set_xscale("log")
    readable_log(ax, "x")
    ax.set_xlabel("compile time, s (Dynamo frames, all of them; log)", fontsize=9)
    ax.set_ylabel("paired speedup over eager, x (95% interval)", fontsize=9)
    ax.tick_params(labelsize=8)
    handles = [Line2D([], [], color=colours[w], marker="o", ls="") for w in works]
    handles += [Line2D([], [], color="black", marker=MARKERS[h], ls="",
                       mfc="black" if h == "" else "white") for h in hows]  # fmt: skip
    legend_right(fig, handles, names + [NAMES[h] for h in hows], title="workload; how")
    whole = pairs[pairs["how"] == ""]
    finish(fig, "What does compiling by region trade: compile seconds against speedup?",
           context(r[r["work"].isin(works)], fig.get_figwidth()) + "\nfilled: the whole model compiled; hollow: "
           "its repeated block compiled by region; arrow: whole -> regional; dashed: eager",
           right_in=leg)  # fmt: skip
    label_points(ax, whole["compile_s"], whole["sp"], [_label(p) for _, p in whole.iterrows()])
    return fig, _sentence(pairs)


def _axes(r: pd.DataFrame) -> pd.Series:
    """The other axes the sweep crossed (start, stance, ...), 'start=cold' per row: a workload
    each value, never a median over cells that differ in one (cold and artifacts read 20.0 and
    11.8 s, once drawn as one point at 15.9)."""
    split = [c for c in AXES if c not in ("regional", "layers") and c in r
             and axis_values(r, c).nunique() > 1]  # fmt: skip
    named = pd.DataFrame({c: c + "=" + axis_values(r, c) for c in split}, index=r.index)
    return _joined(named, split)


def _depths(r: pd.DataFrame) -> pd.Series:
    """A workload's depth: ``layers`` where the config gave one, else the blocks its regional
    row compiled (a model at its own default depth), else blank."""
    depth = pd.to_numeric(r["layers"], errors="coerce") if "layers" in r else np.nan
    depth = pd.Series(depth, index=r.index, dtype=float)
    if "regional_blocks" in r:
        blocks = pd.to_numeric(r["regional_blocks"], errors="coerce")
        by = _joined(r, ["variant", "pass", "compile"])
        fill = blocks.groupby(by).transform("max")
        depth = depth.fillna(fill.where(blocks.groupby(by).transform("nunique") == 1))
    return depth


def _joined(r: pd.DataFrame, cols: list[str]) -> pd.Series:
    """The values of ``cols`` per row as one key (blank for a missing value)."""
    text = r[cols].map(lambda v: "" if pd.isna(v) else str(v))
    return text.agg("|".join, axis=1) if cols else pd.Series("", index=r.index)


def _label(p) -> str:
    d = "" if pd.isna(p["depth"]) else f" x{int(p['depth'])}"
    run = "" if p["pass"] == "fwd" else f" {p['pass']}"
    axes = f" · {p['axes'].replace('|', ' ')}" if p.get("axes") else ""
    return f"{p['variant']}{d}{run} · {p['compile']}{axes}"


def _palette(n: int) -> list:
    import seaborn as sns

    return list(sns.color_palette("colorblind" if n <= 10 else "husl", n))


def _sentence(pairs: pd.DataFrame) -> str:
    out = []
    for _, g in pairs.groupby("work", sort=False):
        g = g.set_index("how")
        for h in g.index.drop(""):
            a, b = g.loc[""], g.loc[h]
            out.append(f"{_label(a)} {NAMES[h].split(': ')[1]}: compile {sig(a['compile_s'])} -> "
                       f"{sig(b['compile_s'])} s, speedup {xs(a['sp'])} -> {xs(b['sp'])}")  # fmt: skip
    return "Compiled whole against by region (paired speedup over eager): " + "; ".join(out) + "."
