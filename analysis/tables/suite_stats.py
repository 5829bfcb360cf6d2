"""The suite's figures across models (``analysis.tables.suite`` prints them; the report's
opening, its figure and compare read them too). CSV only; no torch.

The suite's rows are those with a ``regime`` (throughput, latency) or a ``model_kind``
(``+experiment=suite`` or ``suite_cpu``). A model counts in a mode's geomean only where it ran
ok on both sides, eager and that mode, with a paired speedup: a model that failed on one side
never skews the mean (test-infra #6969). The interval is a 95% t-interval on the log speedups
over those models (``geomean_interval``): their spread, not each model's own noise, so it says
what another model of the kind might read; with fewer than ``FEW`` models, their range.
"""

from __future__ import annotations

import math
import re

import numpy as np
import pandas as pd

from analysis.measures import (
    AXES,
    MODES,
    PASSES,
    axis_values,
    column,
    host_bound_of,
    sig,
    xs,
)
from study.config import cell_config
from study.observe.stats import t_quantile

# the suite's regimes (study.config.cell_config.REGIMES, less "none"), the decode-sized first
REGIMES = sorted((r for r in cell_config.REGIMES if r != "none"), key=lambda r: r != "latency")
# a suite cell: its model, where it ran and at which size; compile is the other side
CELL = ["source", "variant", "regime", "pass", "device", "dtype"]
FEW = 3  # fewer models than this: their range, not an interval
# axes whose other values ask another question than the suite's (analysis.tables.startup)
ASIDE = ("compile_stance", "start", "cache", "regional", "freezing", "compiled_autograd")


def is_suite(runs: pd.DataFrame) -> pd.Series:
    """The suite's rows: a regime (throughput, latency) or a model kind."""
    regime = runs["regime"].fillna("").astype(str) if "regime" in runs else ""
    kind = runs["model_kind"].fillna("").astype(str) if "model_kind" in runs else ""
    reg = pd.Series(regime, index=runs.index).isin(REGIMES)
    return reg | pd.Series(kind, index=runs.index).ne("")


def rows(runs: pd.DataFrame) -> pd.DataFrame:
    """The suite's rows at the default of every axis in ``ASIDE`` (a guard-skipping stance or a
    warm start of a model is another question, ``startup``), each with its ``regime`` ('none'
    where blank), ``pass`` ('fwd' where blank), ``model_kind`` ('' where blank) and ``source``
    filled."""
    if runs.empty:
        return runs
    r = runs[is_suite(runs)]
    for c in ASIDE:
        r = r[axis_values(r, c) == AXES[c]]
    r = r.copy()
    fill = {"regime": "none", "pass": "fwd", "model_kind": "", "source": "", "device": "",
            "dtype": ""}  # fmt: skip
    for c, v in fill.items():
        r[c] = r[c].fillna(v).astype(str).replace("", v) if c in r else v
    return r


def paired(r: pd.DataFrame) -> pd.DataFrame:
    """The compiled rows of ``rows(...)``, each with ``eager_ok`` (its eager twin, the same
    model, regime, pass and device with compile=off, ran ok), ``both`` (ok on both sides with a
    paired speedup: what a geomean may take) and ``sp``, ``lo``, ``hi``."""
    comp = r[r["compile"] != "off"].copy()
    eager = r[(r["compile"] == "off") & (r["status"] == "ok")][CELL].drop_duplicates()
    comp = comp.merge(eager.assign(eager_ok=True), on=CELL, how="left")
    comp["eager_ok"] = comp["eager_ok"].fillna(False).astype(bool)
    comp["sp"] = column(comp, "speedup_paired")
    comp["lo"], comp["hi"] = column(comp, "speedup_ci_low"), column(comp, "speedup_ci_high")
    comp["both"] = comp["eager_ok"] & comp["status"].eq("ok") & comp["sp"].gt(0)
    return comp


def geomean_interval(sp) -> tuple[float, float, float, str]:
    """(geomean, low, high, what the interval is) of speedups over models: a 95% t-interval
    on their logs from FEW models up, else their range."""
    x = np.log(pd.Series(sp, dtype=float).dropna().loc[lambda s: s > 0].to_numpy())
    n = len(x)
    if n == 0:
        return math.nan, math.nan, math.nan, "no model ran on both sides"
    g = float(np.exp(x.mean()))
    if n < FEW:
        return (
            g,
            float(np.exp(x.min())),
            float(np.exp(x.max())),
            f"range of {n} model{'s' * (n > 1)}",
        )
    half = t_quantile(n - 1) * float(x.std(ddof=1)) / math.sqrt(n)
    return g, g * math.exp(-half), g * math.exp(half), f"95% t-interval over {n} models"


def in_order(t: pd.DataFrame, *cols: str) -> pd.DataFrame:
    keys = {"regime": {r: i for i, r in enumerate(REGIMES)},
            "pass": {p: i for i, p in enumerate(PASSES)},
            "mode": {m: i for i, m in enumerate(MODES)}}  # fmt: skip
    sort = t.assign(**{f"_{c}": t[c].map(keys[c]).fillna(99) if c in keys else t[c]
                       for c in cols})  # fmt: skip
    return sort.sort_values([f"_{c}" for c in cols], kind="stable").drop(
        columns=[f"_{c}" for c in cols]
    )


def mode_stats(runs: pd.DataFrame) -> pd.DataFrame:
    """One line per regime, pass and mode (eager included, for its pass rate), as numbers:
    ``ok``, ``planned``, ``models`` (in the geomean), ``geomean``, ``low``, ``high``, ``over``
    (what the interval is), ``compile_s``, ``first_call_s``, ``compression``,
    ``graph_share`` (medians over the rows that ran ok on both sides)."""
    r = rows(runs)
    if r.empty:
        return pd.DataFrame()
    both = paired(r)
    out = []
    for (reg, p, m), g in r.groupby(["regime", "pass", "compile"], sort=False):
        x = {"regime": reg, "pass": p, "mode": m, "ok": int(g["status"].eq("ok").sum()),
             "planned": len(g)}  # fmt: skip
        if m != "off":
            b = both[(both["regime"] == reg) & (both["pass"] == p) & (both["compile"] == m)]
            b = b[b["both"]]
            x["models"] = b["variant"].nunique()
            per_model = b.groupby("variant")["sp"].median()
            x["geomean"], x["low"], x["high"], x["over"] = geomean_interval(per_model)
            for k, c in (("compile_s", "compile_s"), ("first_call_s", "first_call_s"),
                         ("compression", "compression_ratio"),
                         ("graph_share", "cudagraph_kernel_share")):  # fmt: skip
                x[k] = column(b, c).median()
            if not b["device"].eq("cuda").any():
                x["graph_share"] = math.nan  # no device trace on the CPU
        out.append(x)
    return in_order(pd.DataFrame(out), "regime", "pass", "mode").reset_index(drop=True)


def _rate(x) -> str:
    return f"{x['ok']}/{x['planned']} ({x['ok'] / x['planned']:.0%})"


def _ci(g, lo, hi, over) -> str:
    """'1.91x [1.06–3.44x, 95% t-interval over 4 models]', '2.19x [range of 2 models
    1.62–2.96x]', '1.70x [1 model]'."""
    if g != g:
        return "—"
    if over.startswith("range of 1 "):
        return f"{xs(g)} [1 model]"
    if over.startswith("range"):
        return f"{xs(g)} [{over} {sig(lo)}–{xs(hi)}]"
    return f"{xs(g)} [{sig(lo)}–{xs(hi)}, {over}]"


def mode_table(runs: pd.DataFrame) -> pd.DataFrame:
    """``mode_stats`` as text, one line per regime, pass and mode."""
    s = mode_stats(runs)
    if s.empty:
        return s
    out = []
    for x in s.to_dict("records"):
        comp = x["mode"] != "off"
        out.append({
            "regime": x["regime"], "pass": x["pass"], "mode": x["mode"], "pass rate": _rate(x),
            "geomean speedup [95%]": _ci(x["geomean"], x["low"], x["high"], x["over"]) if comp
            else "1x (eager)",
            "compile s (median)": sig(x.get("compile_s")) if comp else "",
            "first call s (median)": sig(x.get("first_call_s")) if comp else "",
            "memory compression (median)": xs(x.get("compression")) if comp else "",
            "CUDA-graph share (median)": _share(x.get("graph_share")) if comp else "",
        })  # fmt: skip
    return pd.DataFrame(out)


def _share(v) -> str:
    return "" if v is None or v != v else f"{v:.0%}"


def kind_table(runs: pd.DataFrame) -> pd.DataFrame:
    """Per kind of model, regime and pass: the mode with the highest geomean over that kind's
    models (each ok on both sides), how much faster, and what it costs to compile."""
    r = rows(runs)
    if r.empty:
        return pd.DataFrame()
    both = paired(r)
    both = both[both["both"]]
    out = []
    for (kind, reg, p), g in r.groupby(["model_kind", "regime", "pass"], sort=False):
        b = both[(both["model_kind"] == kind) & (both["regime"] == reg) & (both["pass"] == p)]
        best = None
        for m, bm in b.groupby("compile"):
            gm = geomean_interval(bm.groupby("variant")["sp"].median())
            if best is None or gm[0] > best[1][0]:
                best = (m, gm, bm)
        x = {"kind": kind or "?", "regime": reg, "pass": p,
             "models": ", ".join(sorted(g["variant"].unique())),
             "not ok (left out of that mode)": not_ok(g)}  # fmt: skip
        if best is None:
            x.update({"mode": "none ran on both sides", "speedup": "—"})
        else:
            m, gm, bm = best
            low = bm["lo"].iloc[0] if gm[3].startswith("range of 1 ") else gm[1]  # its own
            x.update({
                "mode": m if low > 1 else f"{m} (no mode clearly faster: eager)",
                "speedup": _ci(*gm),
                "compile s (median)": sig(column(bm, "compile_s").median()),
                "first call s (median)": sig(column(bm, "first_call_s").median()),
            })  # fmt: skip
        out.append(x)
    t = pd.DataFrame(out)
    t = t[
        [c for c in t.columns if not c.startswith("not ok")]
        + [c for c in t if c.startswith("not ok")]
    ]
    return in_order(t, "kind", "regime", "pass").reset_index(drop=True).fillna("")


NEEDS = re.compile(r"needs (\w[\w.-]*)")


def not_ok(g: pd.DataFrame) -> str:
    """The cells of ``g`` that did not run ok, by status: 'unsupported (needs timm):
    deit, vit (every mode); error: resnet50 reduce-overhead'. A model none of whose modes ran
    ok is said once, with '(every mode)'; a missing library is named from its reason."""
    bad = g[g["status"] != "ok"]
    out = []
    for st, gs in bad.groupby("status", sort=True):
        said = []
        for v, gv in gs.groupby("variant", sort=True):
            every = len(gv) == len(g[g["variant"] == v])
            said.append(f"{v} (every mode)" if every else f"{v} {', '.join(gv['compile'])}")
        why = sorted({m for x in gs.get("reason", pd.Series(dtype=str)).dropna().astype(str)
                      for m in NEEDS.findall(x)})  # fmt: skip
        head = f"{st} (needs {', '.join(why)})" if why else st
        out.append(f"{head}: {', '.join(said)}")
    return "; ".join(out)


def payback(x) -> float:
    """Calls until compiling pays back: compile s over the time a call saves, eager's paired
    latency less the mode's; NaN where the mode is not faster (its interval reaches 1x)."""
    sp, lo = x.get("sp"), x.get("lo")
    eager, comp_s = x.get("eager_latency_paired_us"), x.get("compile_s")
    nums = [pd.to_numeric(v, errors="coerce") for v in (sp, lo, eager, comp_s)]
    if any(v != v or v is None for v in nums) or nums[1] <= 1:
        return math.nan
    sp, _, eager, comp_s = nums
    return comp_s * 1e6 / (eager - eager / sp)


def bound(x) -> str:
    """What bounds the row's call: serial (it waits for the GPU inside: host and device in
    series), host or device (study.rows.metrics.host_bound), none on the CPU (one processor),
    or why there is no host figure (host_status)."""
    status = str(x.get("host_status") or "")
    if status == "serial":
        return "serial"
    if str(x.get("device")) == "cpu":
        return "— (CPU: host and device are one)"
    hb = host_bound_of(pd.DataFrame([x])).iloc[0]
    if hb is True or hb is False:
        return "host" if hb else "device"
    return f"no host figure ({status})" if status and status != "nan" else ""
