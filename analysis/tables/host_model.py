"""Speedup against host speed: latency ~ max(device us, host units x G), from measured rows.

A call's latency is the larger of its device time and its host time, and its host time is its
host cost in units of the host's speed (``host_units``, study.measure.host_cost) times the host's
speed G (the gauge's us, study.measure.host_gauge). So a compiled cell's paired speedup on a host of speed G
is predicted as

    speedup(G) = max(dev_eager, u_eager x G) / max(dev_compiled, u_compiled x G)

where ``dev`` is the device time free of host time (``study.rows.metrics.device_us``: graph
replay's, else the profiler's GPU busy time a step) and ``u`` the rows' ``host_units`` (the
compiled row's own, and its eager twin's ``eager_host_units`` timed in the same rounds). The
crossover is the host speed where speedup(G) falls through 1: compiling pays on faster hosts
and loses on slower ones (None when it never crosses in 5-100 us). ``leave_one_out`` checks
the model where it counts: each machine's speedups predicted from the other machines' units
and device times, at the host speed the row's paired rounds ran at (``gauge_own_us``, the level
the cell's gauge held while it was timed; ``host_gauge_us`` where a row lacks it: the host-cost
blocks and the paired rounds can fall in different phases, and the speedup is the rounds').
Pure pandas; the rows come from runs.csv. ``python benchmarks/host_model.py DIR...`` prints the tables.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from study.rows.metrics import device_us
from study.rows.schema import SHAPE_KEYS

KEYS = ["variant", "pass", "dtype", *SHAPE_KEYS, "causal", "mask", "score_mod"]  # a cell
GRID = np.linspace(5.0, 100.0, 951)  # host speeds (gauge us) the crossover is sought in


def predict(dev_e, u_e, dev_c, u_c, g):
    """The predicted paired speedup at host speed ``g`` (numbers or arrays)."""
    return np.maximum(dev_e, u_e * g) / np.maximum(dev_c, u_c * g)


REACH = 1.5  # a crossover counts within G_lo / REACH .. G_hi * REACH of the cell's measured G
NOISE = 0.01  # the least half-width of a speedup's interval: the pairs' own error (±1%)


def reach(x: pd.DataFrame, alpha: float) -> dict:
    """One compiled cell's rows (``cells``, one per machine): its measured G range and speedup
    interval, the prediction at the measured G and over G_lo / REACH .. G_hi × REACH, the
    crossover there (None outside it), and ``listed``: the crossover lies in that reach, the
    measured interval excludes 1 on the side the model predicts at the measured G, and the
    prediction there and at both ends lies outside the interval's half-width around 1. Beyond
    the reach a curve is extrapolation; a crossover not listed is noise (audit 2026-12-06)."""
    g_lo, g_hi = float(x["g"].min()), float(x["g"].max())
    lo = pd.to_numeric(x.get("speedup_ci_low"), errors="coerce").min()
    hi = pd.to_numeric(x.get("speedup_ci_high"), errors="coerce").max()
    half = max(NOISE, (hi - lo) / 2 if lo == lo and hi == hi else NOISE)
    grid = np.linspace(g_lo / REACH, g_hi * REACH, 401)
    sp = curve(x, grid, alpha)
    at = float(curve(x, [float(x["g"].median())], alpha)[0])
    g = crossing(grid, sp)
    ends = (float(sp[0]), float(sp[-1]))
    seen = (lo > 1 and at > 1) or (hi < 1 and at < 1)  # the rows show the predicted side
    listed = g is not None and seen and min(abs(e - 1) for e in (*ends, at)) > half
    return {"g_lo": g_lo, "g_hi": g_hi, "lo": lo, "hi": hi, "at": at, "ends": ends,
            "crossing": g, "listed": listed}  # fmt: skip


def crossover(dev_e, u_e, dev_c, u_c) -> float | None:
    """The host speed (gauge us) where the predicted speedup falls through 1, or None."""
    return crossing(GRID, predict(dev_e, u_e, dev_c, u_c, GRID))


def curve(x: pd.DataFrame, g, alpha: float = 1.0):
    """A cell's predicted paired speedup at host speeds ``g`` from its rows ``x`` (``cells``):
    host time at G is a row's ``host_us x (G / its g) ** alpha``, median over the rows (alpha 1:
    units x G); device times the rows' medians."""
    g = np.asarray(g, dtype=float)
    scale = (g[:, None] / x["g"].to_numpy(float)[None, :]) ** alpha
    host_c = np.median(x["host_us"].to_numpy(float)[None, :] * scale, axis=1)
    host_e = np.median(x["eager_host_us"].to_numpy(float)[None, :] * scale, axis=1)
    dev_e, dev_c = x["dev_e"].median(), x["dev_c"].median()
    return np.maximum(dev_e, host_e) / np.maximum(dev_c, host_c)


def crossing(g, sp) -> float | None:
    """The first host speed in ``g`` where the speedups ``sp`` fall through 1, or None."""
    above = np.asarray(sp) >= 1.0
    cross = np.nonzero(above[:-1] & ~above[1:])[0]
    return float(g[cross[0] + 1]) if len(cross) else None


def cell_key(r: pd.DataFrame, extra: tuple | list = ()) -> pd.Series:
    """A row's cell as text: its KEYS (those ``r`` has), then the ``extra`` columns it has."""
    cols = [c for c in (*KEYS, *extra) if c in r]
    txt = r[cols].map(lambda v: "" if pd.isna(v) else str(v))
    return txt.agg("|".join, axis=1)


def cells(rows: pd.DataFrame) -> pd.DataFrame:
    """One row per compiled CUDA cell and machine: its device time, host units and speedup,
    with the eager twin's device time from the same machine's eager cell. Where rows name
    their experiment (``source``), one cell in two experiments is two cells."""
    r = rows[(rows["status"] == "ok") & (rows["device"] == "cuda")].copy()
    r["cell"] = cell_key(r)
    if "source" in r:
        r["cell"] = r["source"].fillna("").astype(str) + ":" + r["cell"]
    # device time free of host time (graph replay, else the profiler's GPU busy time a step)
    r["dev"] = [device_us(x) for x in r.to_dict("records")]
    r["dev"] = pd.to_numeric(r["dev"])
    # the eager cell's device time per machine (its median over repeats and processes)
    eager = r[r["compile"] == "off"].groupby(["machine", "cell"])["dev"].median()
    c = r[r["compile"] != "off"].copy()
    c["dev_e"] = [eager.get((m, k)) for m, k in zip(c["machine"], c["cell"], strict=True)]
    c["cell"] = c["cell"] + "|" + c["compile"].astype(str)  # one mode's rows are one cell
    c = c.rename(columns={"dev": "dev_c", "host_units": "u_c",
                          "eager_host_units": "u_e", "host_gauge_us": "g"})  # fmt: skip
    # the host speed of the paired rounds: the level the cell's own gauge held while timed
    own = pd.to_numeric(c["gauge_own_us"], errors="coerce") if "gauge_own_us" in c else None
    c["g_timed"] = c["g"] if own is None else own.fillna(c["g"])
    keep = ["machine", "cell", "source", "variant", "compile", "dev_e", "u_e", "dev_c", "u_c", "g",
            "g_timed", "host_us", "eager_host_us", "speedup_paired", "speedup_ci_low",
            "speedup_ci_high",
            "timing_phase"]  # fmt: skip
    return c[[k for k in keep if k in c]].dropna(subset=["dev_e", "u_e", "dev_c", "u_c", "g"])


def fit_alpha(c: pd.DataFrame) -> float:
    """How host time scales with the gauge: the slope of log host us on log G within each cell
    and side (a pooled regression with a cell's own intercept), over the rows given; 1.0 where
    the rows hold too little spread in G. 1.0 is the plain units model (host us = units x G); on
    the H200 the host's slow phase slows the gauge more than a call (alpha about 0.7)."""
    dx, dy = [], []
    for _, x in c.groupby("cell"):
        for col in ("host_us", "eager_host_us"):
            ok = x[[col, "g"]].dropna()
            if len(ok) < 2:
                continue
            lx, ly = np.log(ok["g"].to_numpy(float)), np.log(ok[col].to_numpy(float))
            dx += list(lx - lx.mean())
            dy += list(ly - ly.mean())
    dx, dy = np.asarray(dx), np.asarray(dy)
    if len(dx) < 3 or (dx**2).sum() < 0.05:  # under about 1.2x of spread in G: no slope to fit
        return 1.0
    return float((dx * dy).sum() / (dx**2).sum())


def leave_one_out(c: pd.DataFrame, alpha: float | None = None) -> pd.DataFrame:
    """Each machine's paired speedups predicted from the other machines' device times and host
    times, at the host speed its own paired rounds ran at (``g_timed``, else ``g``); ``err`` =
    predicted / measured - 1. The host time at G is a training row's ``host_us x (G / its g) **
    alpha`` (median over the other machines), with ``alpha`` fitted on the other machines (``fit_alpha``) unless given;
    ``alpha=1`` is units x G."""
    out = []
    for (m, k), x in c.groupby(["machine", "cell"]):
        others = c[(c["cell"] == k) & (c["machine"] != m)]
        if others.empty:
            continue
        a = fit_alpha(c[c["machine"] != m]) if alpha is None else alpha
        row, dev = x.iloc[0], others[["dev_e", "dev_c"]].median()
        g = row.g_timed if "g_timed" in x and row.g_timed == row.g_timed else row.g
        scale = (g / others["g"]) ** a
        host_c = float((others["host_us"] * scale).median())
        host_e = float((others["eager_host_us"] * scale).median())
        sp = max(dev.dev_e, host_e) / max(dev.dev_c, host_c)
        u = others[["u_e", "u_c"]].median()
        out.append({"machine": m, "cell": k, "variant": row.variant, "compile": row["compile"],
                    "g": g, "alpha": a, "measured": row.speedup_paired,
                    "low": row.get("speedup_ci_low"), "high": row.get("speedup_ci_high"),
                    "phase": row.get("timing_phase"), "predicted": sp,
                    "err": sp / row.speedup_paired - 1,
                    "crossover_g": crossover(dev.dev_e, u.u_e, dev.dev_c, u.u_c)})  # fmt: skip
    return pd.DataFrame(out)


def units_spread(rows: pd.DataFrame, col: str = "host_units") -> pd.DataFrame:
    """Per cell and side, host units on each machine and their spread (max / min - 1), from the
    rows whose host time came from fast-phase blocks (``host_blocks_fast`` >= 5)."""
    r = rows[(rows["status"] == "ok") & (rows["device"] == "cuda")].copy()
    r["cell"] = cell_key(r) + "|" + r["compile"].astype(str)
    if "host_blocks_fast" in r:
        r = r[pd.to_numeric(r["host_blocks_fast"], errors="coerce") >= 5]
    t = r.pivot_table(index="cell", columns="machine", values=col, aggfunc="median")
    t["spread"] = t.max(axis=1) / t.min(axis=1) - 1
    return t


SKIP_GUARDS = "+skip_guards"  # a target's rows under compile.stance=skip_guard_eval_unsafe
# (layer, the target that adds it, the target it is measured from; None: the eager twin)
LAYERS = [("Dynamo", "dynamo_eager", None), ("AOTAutograd", "aot_eager", "dynamo_eager"),
          ("Inductor's wrapper", "default", "aot_eager")]  # fmt: skip


def layers(rows: pd.DataFrame) -> pd.DataFrame:
    """Host units per call each layer of torch.compile adds, per cell (rows of a sweep over
    compile targets, ``+experiment=targets``): Dynamo = ``dynamo_eager``'s units less its eager
    twin's (same rounds), AOTAutograd = ``aot_eager`` less ``dynamo_eager``, Inductor's wrapper =
    ``default`` less ``aot_eager``; each target's units the median over its rows (processes),
    and µs at the sweep's median host speed beside them. Where a target also ran with
    ``compile.stance=skip_guard_eval_unsafe``, its guards are a layer too: the target's units
    less the same target's with guards skipped ("guards (dynamo_eager)")."""
    r = rows[(rows["status"] == "ok") & rows.get("host_units", pd.Series(index=rows.index)).notna()]
    if r.empty:
        return pd.DataFrame()
    r = r.assign(cell=cell_key(r))
    stance = r["compile_stance"].fillna("") if "compile_stance" in r else ""
    r["target"] = r["compile"].astype(str) + np.where(
        stance == "skip_guard_eval_unsafe", SKIP_GUARDS, "")  # fmt: skip
    g = float(r["host_gauge_us"].median())
    out = []
    for k, x in r.groupby("cell"):
        units = x.groupby("target")["host_units"].median()
        eager = x["eager_host_units"].median() if "eager_host_units" in x else float("nan")
        for name, target, base in LAYERS:
            if target not in units or (base is not None and base not in units):
                continue
            add = units[target] - (eager if base is None else units[base])
            out.append({"cell": k, "layer": name, "host_units": add, "host_us_at_g": add * g,
                        "g": g})  # fmt: skip
        for skipped in [t for t in units.index if t.endswith(SKIP_GUARDS)]:
            target = skipped.removesuffix(SKIP_GUARDS)
            if target in units:
                add = units[target] - units[skipped]
                out.append({"cell": k, "layer": f"guards ({target})", "host_units": add,
                            "host_us_at_g": add * g, "g": g})  # fmt: skip
    return pd.DataFrame(out)


def table(rows: pd.DataFrame) -> pd.DataFrame:
    """One line per CUDA row: host and device µs per call, host units, the bound verdict, the
    eager twin's, the paired speedup and the crossover host speed."""
    r = rows[(rows["status"] == "ok") & (rows["device"] == "cuda")].copy()
    if "host_us" not in r or r.empty:
        return pd.DataFrame()
    r = r.assign(machine=r["boot_id"].astype(str).str[:8] if "boot_id" in r else "")
    c = cells(r)
    cross = {i: crossover(x.dev_e, x.u_e, x.dev_c, x.u_c) for i, x in c.iterrows()}
    cols = ["run_id", "host_us", "host_units", "device_time_us", "host_bound", "eager_host_us",
            "eager_host_units", "host_gauge_us", "speedup_paired", "timing_phase"]  # fmt: skip
    t = r[[k for k in cols if k in r]].copy()
    t["crossover_g"] = pd.Series(cross)
    return t


def main(argv: list[str] | None = None) -> None:
    """python -m analysis.tables host_model SWEEP_DIR...: per row, host and device µs per call, host
    units and the crossover host speed; per cell of a targets sweep, host units per layer."""
    import sys
    from pathlib import Path

    argv = sys.argv[1:] if argv is None else argv
    if not argv:
        sys.exit("usage: python -m analysis.tables host_model SWEEP_DIR [SWEEP_DIR ...]")
    missing = [a for a in argv if not (Path(a) / "runs.csv").is_file()]
    if missing:
        print(f"no runs.csv in {', '.join(missing)}: give sweep dirs", file=sys.stderr)
        sys.exit(2)
    rows = pd.concat([pd.read_csv(Path(a) / "runs.csv", low_memory=False) for a in argv],
                     ignore_index=True)  # fmt: skip
    pd.set_option("display.width", 200)
    t = table(rows)
    if t.empty:
        print("no CUDA row with host_us (the CPU measures none): nothing to say")
        return
    print(t.round(2).to_string(index=False))
    lay = layers(rows)
    if not lay.empty:
        print("\nhost units per call each layer adds (targets):")
        print(lay.round(2).to_string(index=False))


if __name__ == "__main__":
    from analysis.cli import run  # deferred: a command's end, not the module's

    run(main)
