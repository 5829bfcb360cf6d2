"""How much faster is each model of the suite under each mode? (``suite``)

One panel per regime (and pass, where a regime ran more than one): a bar per model and compiled
mode at its paired speedup over eager (log scale, its 95% interval as a whisker, 1x = eager),
models grouped by kind. A cell that did not run ok is drawn as a failure: a red cross at 1x in
its slot with its status ("error", "oom", "eager error" where the eager twin failed), never as
a missing bar. The HUD's published geomeans are dashed lines in the throughput panel of the
forward pass, each labelled with its suite, GPU and date (``analysis.tables.hud``): an anchor
from other models and another machine. Drawn by the report's suite opening
(``analysis.suite_opening``), not for every sweep. CSV only; no torch.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from matplotlib.lines import Line2D

from analysis.measures import MODES, sig
from analysis.style import (
    MODE_COLORS,
    Skip,
    context,
    figure,
    finish,
    legend_right,
    legend_width,
    mode_handles,
    readable_log,
)
from analysis.tables import hud
from analysis.tables.suite_stats import NEEDS, REGIMES, mode_stats, paired, rows

FAIL = "#c0392b"


def _panels(r: pd.DataFrame) -> list[tuple[str, str]]:
    keys = r[["regime", "pass"]].drop_duplicates().itertuples(index=False)
    rank = {x: i for i, x in enumerate(REGIMES)}
    return sorted(keys, key=lambda k: (rank.get(k[0], 9), k[1] != "fwd", k[1]))


def _slot(x: dict) -> tuple[float, str]:
    """(bar length, failure label or '') of one compiled cell."""
    if x["both"]:
        return x["sp"], ""
    if x["status"] != "ok":  # its own status first: 'unsupported (needs timm)', 'error'
        lib = NEEDS.findall(str(x.get("reason") or ""))
        return np.nan, str(x["status"]) + (f" (needs {lib[0]})" if lib else "")
    return np.nan, "eager not ok" if not x["eager_ok"] else "no paired speedup"


def _panel(ax, r, comp, modes: list[str], models: list[str], labels: list[str]) -> int:
    """Bars, whiskers and failures of one panel (``r``: its rows, ``comp``: its compiled
    cells, ``paired``); returns the failures drawn."""
    h = 0.8 / len(modes)
    fails = 0
    for i, v in enumerate(models):
        eager = r[(r["variant"] == v) & (r["compile"] == "off")]
        for j, m in enumerate(modes):
            y = i - 0.4 + h * (j + 0.5)
            c = comp[(comp["variant"] == v) & (comp["compile"] == m)]
            if c.empty:
                if eager.empty or m not in set(r["compile"]):
                    continue
                sp, fail = np.nan, "not run"
            else:
                sp, fail = _slot(c.iloc[0].to_dict())
            if fail:
                ax.plot([1.0], [y], marker="x", color=FAIL, ms=7, mew=2, zorder=4)
                ax.text(1.04, y, fail, color=FAIL, fontsize=7, va="center", zorder=4)
                fails += 1
                continue
            lo, hi = c.iloc[0]["lo"], c.iloc[0]["hi"]
            ax.barh(y, sp - 1, left=1, height=h * 0.9, color=MODE_COLORS.get(m, "grey"))
            if lo == lo and hi == hi:
                ax.plot([lo, hi], [y, y], color="black", lw=0.8, zorder=3)
            ax.text(max(sp, hi if hi == hi else sp) * 1.03, y, f"{sig(sp)}x", fontsize=6.5,
                    va="center")  # fmt: skip
    ax.axvline(1.0, color="#555555", lw=1)
    ax.set_yticks(range(len(models)))
    ax.set_yticklabels(labels, fontsize=8)
    ax.set_ylim(len(models) - 0.5, -0.5)
    return fails


def suite(d) -> tuple:
    """(figure, sentence): speedup by model and mode, one panel per regime."""
    r = rows(d["runs"])
    if r.empty:
        raise Skip("suite: no suite rows (regime or model_kind): run +experiment=suite")
    comp = paired(r)
    if comp.empty:
        raise Skip("suite: no compiled suite rows")
    modes = [m for m in MODES if m in set(comp["compile"])]
    panels = _panels(r)
    kinds = r.drop_duplicates("variant").sort_values(["model_kind", "variant"])
    models = kinds["variant"].tolist()
    labels = [f"{v}\n{k}" if k else v for v, k in zip(models, kinds["model_kind"], strict=True)]
    anchors = hud.anchors()
    names = [*modes, "failed (status)", *(_anchor(a) for a in anchors.to_dict("records"))]
    leg = legend_width([x for n in names for x in n.split("\n")])
    fig, axes = figure(1, len(panels), w=3.9 * len(panels) + leg + 1.2,
                       h=1.6 + 0.16 * len(models) * len(modes) + 0.12 * len(models),
                       sharey=True)  # fmt: skip
    fails, top = 0, 1.0
    for ax, (reg, p) in zip(axes[0], panels, strict=True):
        sel = (comp["regime"] == reg) & (comp["pass"] == p)
        fails += _panel(
            ax, r[(r["regime"] == reg) & (r["pass"] == p)], comp[sel], modes, models, labels
        )
        ax.set_xscale("log")
        readable_log(ax, "x")
        ax.set_title(f"{reg} · {p}", fontsize=10)
        ax.set_xlabel("paired speedup over eager (log)", fontsize=8)
        ax.tick_params(axis="x", labelsize=7)
        ok = comp[sel & comp["both"]]
        top = max(top, float((ok["hi"].fillna(ok["sp"])).max()) if len(ok) else 1.0)
        if reg == "throughput" and p == "fwd":
            for a in anchors.to_dict("records"):
                ax.axvline(a["geomean"], color=MODE_COLORS.get(a["mode"], "grey"), ls="--", lw=1)
    for ax in axes[0]:
        ax.set_xlim(0.5, top * 1.6)
    handles = [*mode_handles(modes), Line2D([], [], marker="x", color=FAIL, ls="", mew=2)]
    handles += [Line2D([], [], color=MODE_COLORS.get(a, "grey"), ls="--") for a in anchors["mode"]]
    legend_right(fig, handles, names, title="compile")
    finish(fig, "How much faster is each model under each mode?",
           context(r, fig.get_figwidth()) + "\nbars: paired speedup with its 95% interval; "
           "crosses: cells that did not run ok; dashed: the HUD's published geomeans (other "
           "models and machine)", right_in=leg)  # fmt: skip
    return fig, _sentence(r, fails)


def _anchor(a: dict) -> str:
    """'HUD Hugging Face default 1.90x\n(H100, bf16 inference, 2026-03)': two lines."""
    return f"HUD {a['suite']} {a['HUD mode']} {a['geomean']:.2f}x\n({a['GPU']}, {a['dtype, pass']}, {a['date']})"


def _sentence(r: pd.DataFrame, fails: int) -> str:
    s = mode_stats(r)
    s = s[(s["mode"] != "off") & s["geomean"].notna()]
    parts = []
    for (reg, p), g in s.groupby(["regime", "pass"], sort=False):
        b = g.loc[g["geomean"].idxmax()]
        parts.append(f"{reg} {p}: {b['mode']} {sig(b['geomean'])}x geomean over "
                     f"{int(b['models'])} models")  # fmt: skip
    said = "; ".join(parts) or "no mode ran on both sides"
    return f"Best mode per regime: {said}. {fails} cell(s) that did not run ok are crossed."
