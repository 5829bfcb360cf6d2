"""Where a compiled call's time goes, layer by layer: ``python -m analysis.tables layers SWEEP...``

Reads the rows of a sweep over compile targets (``+experiment=targets``, study/config/compile_targets.py) and
prints, per cell, the µs per call each layer of torch.compile adds over eager, and whether a
deployment path removes a compiled cell's slowdown. CSV only; no torch.

Every figure comes from one row's own paired rounds: eager and the target timed in alternating
blocks in one process, so in the same host phase. A target's time per call over eager is
``eager_latency_paired_us * (1 / speedup_paired - 1)``, its interval from the speedup's 95%
interval; a cell run in several processes takes the speedup and interval over processes
(``study.observe.stats.across_processes``, the t-interval every table uses) and eager's median.
The layers subtract targets that each add one layer to the one before:

- Dynamo (capture, frame evaluation, guards) = ``dynamo_eager``
- AOTAutograd (its runtime wrapper, functionalisation) = ``aot_eager`` - ``dynamo_eager``
- Inductor (its kernels and its Python wrapper) = ``default`` - ``aot_eager``
- the C++ wrapper instead of Python = ``cpp_wrapper`` - ``default``
- CUDA graphs without Inductor = ``cudagraphs`` - ``aot_eager``

A difference's interval combines the two sides' uncertainties in quadrature, each side of it
from the half-widths that face it: for d = t - b, low = d - sqrt((t - t_low)^2 + (b_high - b)^2)
and high = d + sqrt((t_high - t)^2 + (b - b_low)^2). The two targets are timed in different
processes, so their errors are independent; the envelope (low minus high, high minus low) that
this replaced was 1.27-1.41x wider than that under a "95%" heading. A row timed outside the host's fast phase is marked: its µs are the slow phase's (its
ratio to eager still holds, both were timed in it). Device time per call is beside each, so a
change whose kernels and device time are unchanged reads as what it is: host time.
"""

from __future__ import annotations

import argparse

import pandas as pd

from analysis.load import NotASweep, expand, load, stop
from analysis.measures import column, sig
from analysis.pairs import table as md_table
from study.observe.stats import across_processes
from study.rows.schema import SHAPE_KEYS

CELL = ["variant", "pass", "dtype", "device", *SHAPE_KEYS]
# (layer, target that adds it, target it is measured from; None: from eager)
LAYERS = [
    ("Dynamo", "dynamo_eager", None),
    ("AOTAutograd", "aot_eager", "dynamo_eager"),
    ("Inductor", "default", "aot_eager"),
]
DEPLOY = [
    ("C++ wrapper", "cpp_wrapper", "default"),
    ("CUDA graphs (no Inductor)", "cudagraphs", "aot_eager"),
]
TARGETS = ["dynamo_eager", "aot_eager", "default", "cudagraphs", "cpp_wrapper", "aot_inductor"]


def as_keys(k: pd.DataFrame) -> pd.DataFrame:
    """A cell's key columns as text, a missing value as "" (NaN never equals NaN)."""
    return k.astype(object).where(k.notna(), "").astype(str)


def added(raw: pd.DataFrame) -> pd.DataFrame:
    """One row per (cell, target): µs per call over eager (median over processes) and its
    interval, the speedup and its interval, device time per call, eager's µs, and how many of
    its processes were timed in the host's fast phase."""
    r = raw[(raw["status"] == "ok") & (raw["compile"] != "off")].copy()
    if r.empty:
        return pd.DataFrame()
    eager = column(r, "eager_latency_paired_us")
    sp, lo, hi = (
        column(r, "speedup_paired"),
        column(r, "speedup_ci_low"),
        column(r, "speedup_ci_high"),
    )
    r["added_us"] = eager * (1 / sp - 1)
    r["added_lo"] = eager * (1 / hi - 1)  # the higher speedup adds the least
    r["added_hi"] = eager * (1 / lo - 1)
    r["eager_us"], r["sp"], r["sp_lo"], r["sp_hi"] = eager, sp, lo, hi
    r["device_us"] = column(r, "device_time_us")
    r["fast"] = r.get("timing_phase", pd.Series("", r.index)).astype(str).eq("fast")
    r = r[r["added_us"].notna()]
    keys = [c for c in CELL if c in r] + ["compile"]
    r[keys] = as_keys(r[keys])
    g = r.groupby(keys, sort=False, dropna=False)
    out = g.agg(
        added_us=("added_us", "median"),
        added_lo=("added_lo", "min"),
        added_hi=("added_hi", "max"),
        sp=("sp", "median"),
        sp_lo=("sp_lo", "min"),
        sp_hi=("sp_hi", "max"),
        eager_us=("eager_us", "median"),
        device_us=("device_us", "median"),
        processes=("sp", "size"),
        fast=("fast", "sum"),
    )
    over = g[["sp", "sp_lo", "sp_hi"]].apply(_over_processes)  # one process: its own
    out[["sp", "sp_lo", "sp_hi"]] = over.reindex(out.index).to_numpy()
    e = out["eager_us"]
    out["added_us"] = e * (1 / out["sp"] - 1)
    out["added_lo"] = e * (1 / out["sp_hi"] - 1)  # the higher speedup adds the least
    out["added_hi"] = e * (1 / out["sp_lo"] - 1)
    return out.reset_index()


def _over_processes(p: pd.DataFrame) -> pd.Series:
    """A target's speedup and interval over its processes (the t-interval); the median and no
    interval where a process has none."""
    if len(p) == 1:
        return p.iloc[0]
    ok = p.notna().all(axis=1) & (p > 0).all(axis=1)
    if not ok.all():
        return pd.Series([p["sp"].median(), float("nan"), float("nan")], index=p.columns)
    return pd.Series(across_processes(p["sp"], p["sp_lo"], p["sp_hi"]), index=p.columns)


def minus(t: tuple, b: tuple) -> tuple:
    """(d, low, high) of t - b for two (value, low, high) with independent errors: the
    half-widths that face each side combined in quadrature (module doc)."""
    d = t[0] - b[0]
    down = ((t[0] - t[1]) ** 2 + (b[2] - b[0]) ** 2) ** 0.5
    up = ((t[2] - t[0]) ** 2 + (b[0] - b[1]) ** 2) ** 0.5
    return d, d - down, d + up


def layers(raw: pd.DataFrame) -> pd.DataFrame:
    """Per cell and layer: µs per call the layer adds (negative: saves), with its interval."""
    a = added(raw)
    if a.empty:
        return a
    keys = [c for c in CELL if c in a]
    rows = []
    for cell, g in a.groupby(keys, sort=False):
        by = g.set_index("compile")
        for layer, target, base in LAYERS + DEPLOY:
            if target not in by.index or (base is not None and base not in by.index):
                continue
            t = by.loc[target]
            if base is None:
                us, lo, hi = t["added_us"], t["added_lo"], t["added_hi"]
                fast = t["fast"] == t["processes"]
            else:
                b = by.loc[base]
                us, lo, hi = minus(
                    (t["added_us"], t["added_lo"], t["added_hi"]),
                    (b["added_us"], b["added_lo"], b["added_hi"]),
                )
                fast = t["fast"] == t["processes"] and b["fast"] == b["processes"]
            rows.append(
                {**dict(zip(keys, cell, strict=True)), "layer": layer, "target": target,
                 "from": base or "off", "us": us, "lo": lo, "hi": hi, "fast": bool(fast)}
            )  # fmt: skip
    return pd.DataFrame(rows)


def _interval(us, lo, hi) -> str:
    return f"{us:+.1f} [{lo:+.1f}, {hi:+.1f}]"


def _speedup(t) -> str:
    mark = "" if t["fast"] == t["processes"] else "*"
    return f"{t['sp']:.2f}x [{t['sp_lo']:.2f}-{t['sp_hi']:.2f}]{mark}"


def table(raw: pd.DataFrame) -> pd.DataFrame:
    """The decomposition as a table a person reads: per cell, eager's µs, µs per call each layer
    adds, and every target's paired speedup with its interval (* : not all in the fast phase)."""
    a, lay = added(raw), layers(raw)
    if a.empty:
        return pd.DataFrame()
    keys = [c for c in CELL if c in a]
    out = []
    for cell, g in a.groupby(keys, sort=False):
        by = g.set_index("compile")
        row = {"cell": label(dict(zip(keys, cell, strict=True)), a)}
        row["eager µs"] = sig(by["eager_us"].median())
        mine = lay
        for k, v in zip(keys, cell, strict=True):
            mine = mine[mine[k] == v]
        for _, x in mine.iterrows():
            row[f"{x['layer']} µs"] = _interval(x["us"], x["lo"], x["hi"]) + (
                "" if x["fast"] else "*"
            )
        for t in TARGETS:
            if t in by.index:
                row[t] = _speedup(by.loc[t])
        out.append(row)
    return pd.DataFrame(out).fillna("")


def label(cell: dict, a: pd.DataFrame) -> str:
    """A cell's name: its variant, plus its pass, and the shape keys that tell apart the cells
    of one variant where it has several."""
    same = a[a["variant"] == cell["variant"]]
    vary = [k for k in SHAPE_KEYS if k in same and same[k].nunique() > 1]
    extra = [f"{k}={_int(cell[k])}" for k in vary if cell.get(k) not in (None, "nan", "")]
    if cell.get("pass", "fwd") != "fwd":
        extra.append(str(cell["pass"]))
    return cell["variant"] + (f" ({', '.join(extra)})" if extra else "")


def _int(v) -> str:
    try:
        return f"{float(v):g}"
    except (TypeError, ValueError):
        return str(v)


def verdicts(raw: pd.DataFrame) -> list[str]:
    """One sentence per cell: is default slower than eager, and does a deployment path
    (cpp_wrapper, aot_inductor) remove that, by the intervals."""
    a = added(raw)
    if a.empty:
        return []
    keys = [c for c in CELL if c in a]
    tried = raw[keys + ["compile"]].pipe(as_keys).assign(status=raw["status"])
    # the statuses of a target's rows that gave no paired figure: failed, or ok without pairs
    ran = tried.groupby([*keys, "compile"], dropna=False)["status"]
    ran = ran.agg(lambda s: ", ".join(sorted(set(s)))).to_dict()
    out = []
    for cell, g in a.groupby(keys, sort=False):
        by = g.set_index("compile")
        name = label(dict(zip(keys, cell, strict=True)), a)
        if "default" not in by.index:
            continue
        d = by.loc["default"]
        if d["sp_hi"] >= 1:
            out.append(
                f"{name}: default is not slower than eager ({_speedup(d)}), nothing to remove."
            )
            continue
        deploy = ("cpp_wrapper", "aot_inductor")
        if not any(ran.get((*map(str, cell), t)) for t in deploy):
            out.append(f"{name}: default is slower than eager ({_speedup(d)}); no deployment "
                       "path ran for it.")  # fmt: skip
            continue
        said = []
        for t in deploy:
            if t not in by.index:
                st = ran.get((*map(str, cell), t))
                said.append(
                    f"{t} was not run" if not st
                    else f"{t} has no paired speedup (its rows: {st})" if "ok" in st
                    else f"{t} has no ok row ({st})"
                )  # fmt: skip
                continue
            x = by.loc[t]
            if x["sp_lo"] >= 1:
                said.append(f"{t} removes it ({_speedup(x)})")
            elif x["sp_lo"] > d["sp_hi"]:
                said.append(f"{t} narrows it ({_speedup(x)})")
            else:
                said.append(f"{t} does not ({_speedup(x)})")
        out.append(
            f"{name}: default is slower than eager ({_speedup(d)}); " + "; ".join(said) + "."
        )
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("dirs", nargs="+", help="sweep dirs (or a results dir with runs.csv)")
    p.add_argument("--source", help="only the rows of this source (a results dir's column)")
    a = p.parse_args(argv)
    try:
        raw = load(expand(a.dirs))["repeats"]
        if a.source and a.source not in set(raw["source"]):  # not "no rows": a typo, said
            have = ", ".join(dict.fromkeys(raw["source"].astype(str)))
            raise NotASweep(f"--source {a.source!r} is in none of {' '.join(a.dirs)} "
                            f"(its sources: {have})")  # fmt: skip
    except FileNotFoundError as e:
        stop("tables layers", e)
    if a.source:
        raw = raw[raw["source"] == a.source]
    t = table(raw)
    if t.empty:
        print("no ok compiled rows with a paired speedup: run +experiment=targets first")
        return 1
    print("µs per call each layer adds over eager [95% interval, the two targets' half-widths "
          "in quadrature]; speedups eager/target "
          "(* : not every process timed in the host's fast phase)\n")  # fmt: skip
    print("\n".join(md_table(list(t.columns), t.values.tolist())))
    print()
    for s in verdicts(raw):
        print("- " + s)
    return 0


if __name__ == "__main__":
    from analysis.cli import run  # deferred: a command's end, not the module's

    run(main)
