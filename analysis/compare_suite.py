"""``analysis.compare`` on two suite sweeps (rows with a regime or a model kind, one suite a
side): what the suite's answer did, model by model.

- ``geomeans``: per regime, pass and mode, the geomean of the paired speedups on each side over
  the models that ran on both sides of the comparison (each ok under eager and the mode, in A
  and in B: ``suite_stats.paired``), B over A, and the models only one side ran, named: a
  model that ran in A alone never moves B's mean (test-infra #6969);
- ``models``: per model, regime and pass, its verdict: ``stopped running`` (a mode that ran in
  A did not run in B, or the model is missing in B), ``regressed`` (a matched cell of it
  regressed by compare's rules: status, latency, speedup, compile time, memory, host cost),
  ``now runs`` / ``new in B`` (said, not a failure) or ``held``;
- ``failures``: the gate's lines, one per model that stopped running or regressed
  (``--fail-on-regression`` exits 1 on any).

CSV only; no torch.
"""

from __future__ import annotations

import pandas as pd

from analysis.measures import MODES, geomean, xs
from analysis.tables.suite_stats import REGIMES, is_suite, paired, rows

FAILING = ("stopped running", "regressed")


def has_suite(runs: pd.DataFrame) -> bool:
    return not runs.empty and bool(is_suite(runs).any())


def _ran(runs: pd.DataFrame) -> pd.DataFrame:
    """Per regime, pass, mode and model that ran on both sides of its pair: its speedup."""
    r = rows(runs)
    if r.empty:
        return pd.DataFrame(columns=["regime", "pass", "compile", "variant", "sp"])
    p = paired(r)
    p = p[p["both"]]
    return p.groupby(["regime", "pass", "compile", "variant"], as_index=False)["sp"].median()


def _key(x) -> tuple:
    reg = {r: i for i, r in enumerate(REGIMES)}
    mode = {m: i for i, m in enumerate(MODES)}
    return reg.get(x[0], 9), x[1] != "fwd", x[1], mode.get(x[2], 99)


def geomeans(ra: pd.DataFrame, rb: pd.DataFrame) -> pd.DataFrame:
    """One line per regime, pass and mode either side ran (see the module doc)."""
    a, b = _ran(ra), _ran(rb)
    keys = sorted({*map(tuple, a[["regime", "pass", "compile"]].values),
                   *map(tuple, b[["regime", "pass", "compile"]].values)}, key=_key)  # fmt: skip
    out = []
    for reg, p, m in keys:
        sa = a[(a["regime"] == reg) & (a["pass"] == p) & (a["compile"] == m)].set_index("variant")
        sb = b[(b["regime"] == reg) & (b["pass"] == p) & (b["compile"] == m)].set_index("variant")
        both = sorted(set(sa.index) & set(sb.index))
        ga, gb = geomean(sa.loc[both, "sp"]), geomean(sb.loc[both, "sp"])
        out.append({"regime": reg, "pass": p, "mode": m, "models both ran": len(both),
                    "geomean A": xs(ga), "geomean B": xs(gb),
                    "B/A": xs(gb / ga) if ga == ga and gb == gb else "",
                    "ran in A only": ", ".join(sorted(set(sa.index) - set(sb.index))),
                    "ran in B only": ", ".join(sorted(set(sb.index) - set(sa.index)))})  # fmt: skip
    return pd.DataFrame(out)


def _moved(g: pd.DataFrame) -> str:
    """'reduce-overhead (status ok → error)', 'default (speedup: 2.20x → 1.50x)'."""
    out = []
    for _, x in g.iterrows():
        sp = ""
        if x.get("sp_a") == x.get("sp_a") and x.get("sp_b") == x.get("sp_b"):
            sp = f": {xs(x['sp_a'])} → {xs(x['sp_b'])}"
        out.append(f"{x['compile']} ({x['regressed']}{sp})")
    return "; ".join(out)


def models(ra: pd.DataFrame, rb: pd.DataFrame, m: pd.DataFrame) -> pd.DataFrame:
    """One line per model, regime and pass of either side's suite: ``verdict`` and ``detail``
    (see the module doc); ``m`` is compare's matched cells, judged."""
    a, b = _ran(ra), _ran(rb)
    sa, sb = rows(ra), rows(rb)
    cells = pd.concat([x[["variant", "regime", "pass"]] for x in (sa, sb) if len(x)])
    reg = m[m["verdict"] == "regressed"] if len(m) and "verdict" in m else pd.DataFrame()
    out = []
    for v, r, p in sorted(set(map(tuple, cells.values)), key=lambda k: (_key(k[1:] + ("",)), k[0])):

        def mine(x, v=v, r=r, p=p):
            return x[(x["variant"] == v) & (x["regime"] == r) & (x["pass"] == p)]

        in_a, in_b = len(mine(sa)) > 0, len(mine(sb)) > 0
        ran_a, ran_b = set(mine(a)["compile"]), set(mine(b)["compile"])
        line = {"model": v, "regime": r, "pass": p}
        bad = pd.DataFrame()
        if len(reg):
            rg = reg.assign(regime=reg.get("regime", pd.Series("none", index=reg.index)))
            rg["regime"] = rg["regime"].fillna("none").astype(str).replace("", "none")
            rg["pass"] = rg["pass"].fillna("fwd").astype(str)
            bad = mine(rg)
        if not in_b:
            line.update(verdict="stopped running", detail="missing in B")
        elif not in_a:
            line.update(verdict="new in B", detail=", ".join(sorted(ran_b)) or "ran nothing ok")
        elif ran_a - ran_b:
            gone = ", ".join(
                sorted(ran_a - ran_b, key=lambda x: MODES.index(x) if x in MODES else 99)
            )
            line.update(verdict="stopped running", detail=f"ran in A, not in B: {gone}")
        elif len(bad):
            line.update(verdict="regressed", detail=_moved(bad))
        elif ran_b - ran_a:
            line.update(verdict="now runs", detail=", ".join(sorted(ran_b - ran_a)))
        else:
            line.update(verdict="held", detail="")
        out.append(line)
    return pd.DataFrame(out, columns=["model", "regime", "pass", "verdict", "detail"])


def failures(t: pd.DataFrame) -> list[str]:
    """The gate's lines: each model that stopped running or regressed."""
    bad = t[t["verdict"].isin(FAILING)] if len(t) else t
    return [f"suite: {x['model']} ({x['regime']} {x['pass']}) {x['verdict']}: {x['detail']}"
            for _, x in bad.iterrows()]  # fmt: skip


def section(ra: pd.DataFrame, rb: pd.DataFrame, m: pd.DataFrame, md) -> tuple[list[str], list]:
    """(compare.md's lines for the suite, the gate's failures); nothing where neither side has
    suite rows. ``md`` renders a DataFrame as Markdown."""
    if not (has_suite(ra) or has_suite(rb)):
        return [], []
    g, t = geomeans(ra, rb), models(ra, rb, m)
    n = t["verdict"].value_counts() if len(t) else pd.Series(dtype=int)
    said = ", ".join(f"{int(n[k])} {k}" for k in (*FAILING, "now runs", "new in B", "held")
                     if k in n)  # fmt: skip
    lines = ["## The suite", "",
             "Geomeans of the paired speedups over the models that ran on both sides of the "
             "comparison (each ok under eager and the mode in A and in B); the models only one "
             "side ran are named, never averaged in.", "", md(g),
             f"Per model: {said or 'none'}. A model that stopped running (a mode that ran in A "
             "did not in B, or the model is missing) or regressed fails the gate.", "",
             md(t)]  # fmt: skip
    return lines, failures(t)


def line(ra: pd.DataFrame, rb: pd.DataFrame) -> str:
    """One sentence for the terminal: each regime and pass's geomean A → B per mode."""
    g = geomeans(ra, rb)
    if g.empty:
        return ""
    parts = [f"{x['regime']} {x['pass']} {x['mode']} {x['geomean A']} → {x['geomean B']} "
             f"({x['models both ran']} model{'s' * (x['models both ran'] != 1)})"
             for _, x in g.iterrows()]  # fmt: skip
    return "suite geomean A → B over the models both ran: " + "; ".join(parts) + "."
