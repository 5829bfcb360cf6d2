"""What a sweep on one GPU predicts for another: ``python -m analysis.tables predict SWEEP --to
CEILINGS [--to-device NAME] [--host-g US] [--measured TARGET_SWEEP]``. Each kernel scales by the
ceiling that bounds it (``bound``), host µs = host_units x G, host_model's max(device, host); the
null (the source's own paired speedup) beside each prediction; ``--measured`` judges the two.
The model and its limits: docs/method.md, "Predicting another GPU". No torch."""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import pandas as pd

from analysis.load import expand, load, stop
from analysis.measures import sig
from analysis.pairs import table as md_table
from analysis.tables.host_model import cell_key, predict
from study.measure import calibrate
from study.rows.metrics import device_us

COMPUTE = frozenset({"gemm_cublas", "gemm_cutlass", "triton_template", "cudnn", "flash",
                     "mem_efficient"})  # fmt: skip
MEMORY = frozenset({"triton_pointwise", "aten_elementwise", "triton_reduction", "copy", "softmax",
                    "triton_persistent_reduction", "aten_reduction", "memset"})  # fmt: skip
FLOOR_US = 3.0  # a launch under this (µs a call) is launch- and tail-bound: neither ceiling
WITHIN = 0.10  # an error within ±10% counts as a hit
CEILINGS = ("compute", "memory", "floor", "other")
MISSES = ("err_speedup", "err_dev_c", "err_dev_e")  # the model's own errors: a "why" past ±10%
MEASURED = ["meas_dev_c", "meas_speedup", "meas_dev_e", "err_speedup", "err_null", "err_dev_c",
            "err_dev_e", "null_dev_c", "null_dev_e", "gpu_bound"]  # fmt: skip
# Settings beyond host_model's KEYS that make a compiled cell another cell across two sweeps
SETTINGS = ["compile", "dynamic", "fullgraph", "inductor_patches", "compiled_autograd", "freezing",
            "compile_stance"]  # fmt: skip


class BadInput(ValueError):
    """A user's mistake, said in one line (exit 2)."""


def ceilings(to: str, dtypes, device: str | None) -> dict:
    """dtype -> the target's (TFLOP/s, GB/s, label): from a ``study.measure.calibrate`` file or a
    sweep dir's CUDA rows (their median ``peak_tflops``/``peak_gbps``), the named device's (or
    the only one's) newest entry of each dtype."""
    if Path(to).is_dir():
        r = load(expand([to]))["runs"].fillna({"device_name": "?", "torch_version": "?"})
        r = r[(r["device"] == "cuda") & (r.get("peak_tflops", 0) > 0) & (r.get("peak_gbps", 0) > 0)]
        got = [(*k, {"tflops": x["peak_tflops"].median(), "gbps": x["peak_gbps"].median()})
               for k, x in r.groupby(["device_name", "dtype", "torch_version"])]  # fmt: skip
    elif Path(to).is_file():
        got = calibrate.entries(to)
    else:
        raise BadInput(f"--to {to}: no such file or dir: give a ceilings file or a sweep dir")
    fix = "write one with python -m study.measure.calibrate calibration_file=PATH on the target GPU"  # fmt: skip
    listed = ", ".join(sorted({f"{g[0]} {g[1]}" for g in got})) or "no ceilings"
    if len({g[0] for g in got}) > 1 and not device:
        raise BadInput(f"--to {to} holds {listed}: give --to-device NAME of one")
    out = {}
    for dt in dtypes:
        hits = [g for g in got if g[0] == (device or g[0]) and g[1] == dt]
        if not hits:
            raise BadInput(f"--to {to} has no {dt} ceilings{f' for {device}' * bool(device)} "
                           f"(it holds {listed}): {fix}")  # fmt: skip
        d, _, tv, e = max(hits, key=lambda g: str(g[3].get("measured_at", "")))
        out[dt] = (float(e["tflops"]), float(e["gbps"]), f"{d} {dt} torch {tv}")
    return out


def bound(k: pd.DataFrame, ridge: float, intensity: float | None) -> np.ndarray:
    """The ceiling each kernel follows: its class's (COMPUTE, MEMORY; any other class "other",
    as measured), memory for a compute class where the cell's ``flops / bytes_min`` sits below
    the source's ridge point, and "floor" (as measured) for a launch under FLOOR_US a call."""
    cls, num = k["kernel_class"].fillna("other").astype(str), k.reindex(columns=["calls_per_step", "mean_us"])  # fmt: skip
    calls = pd.to_numeric(num["calls_per_step"], errors="coerce").fillna(1).clip(lower=1)
    per_call = pd.to_numeric(num["mean_us"], errors="coerce").fillna(k["us_per_step"] / calls)
    compute = "memory" if intensity is not None and intensity < ridge else "compute"
    c = np.where(cls.isin(COMPUTE), compute, np.where(cls.isin(MEMORY), "memory", "other"))
    return np.where((c != "other") & (per_call.to_numpy() < FLOOR_US), "floor", c)


def side(row: pd.Series, k: pd.DataFrame, tgt: tuple) -> dict:
    """One side's measured and predicted device µs, and its kernels' measured µs by ceiling."""
    tf, gb, fl, by = (row.get(c) for c in ("peak_tflops", "peak_gbps", "flops", "bytes_min"))
    if k.empty:
        return {"why_not": "no kernels in kernels.csv"}
    if not (pd.notna(tf) and pd.notna(gb) and tf > 0 and gb > 0):
        return {"why_not": "no peak_tflops/peak_gbps on the row (calibrate the source GPU)"}
    intensity = fl / by if pd.notna(fl) and pd.notna(by) and fl > 0 and by > 0 else None
    c = bound(k, tf * 1e12 / (gb * 1e9), intensity)
    ratio = np.select([c == "compute", c == "memory"], [tf / tgt[0], gb / tgt[1]], 1.0)
    us = k["us_per_step"].to_numpy(float)
    dev = device_us(row.to_dict()) or us.sum()
    out = {"dev": dev, "pred": dev * (us * ratio).sum() / us.sum() if us.sum() else dev}
    out |= {f"{b}_us": us[c == b].sum() for b in CEILINGS}
    return out | {"unchanged": " ".join(sorted(set(k["kernel_class"].fillna("?")[c == "other"])))}


def host(c: pd.Series, e: pd.Series | None, g: float | None) -> tuple | None:
    """(G, compiled units, eager units) to predict host µs with, or None where the rows have no
    ``host_units``. G: ``--host-g``, else the row's own (host_model's g_timed)."""
    own = [c.get(x) for x in ("gauge_own_us", "host_gauge_us") if pd.notna(c.get(x))]
    g = g or next((float(x) for x in own if x), None)
    u_c, u_e = c.get("host_units"), c.get("eager_host_units")
    if not pd.notna(u_e) and e is not None:
        u_e = e.get("host_units")  # the eager row's own, where the compiled row lacks its twin's
    return (g, float(u_c), float(u_e)) if g and pd.notna(u_c) and pd.notna(u_e) else None


def cell_table(runs: pd.DataFrame, kern: pd.DataFrame, tgt: dict, g=None) -> pd.DataFrame:
    """One line per ok compiled CUDA cell: device µs measured and predicted on both sides, the
    compiled side's kernel µs by ceiling, host µs, the predicted speedup and the null."""
    r = runs[(runs["status"] == "ok") & (runs["device"] == "cuda")].copy()
    r["cell"] = cell_key(r)
    eager = r[r["compile"] == "off"].drop_duplicates(["source", "cell"]).set_index(["source", "cell"])  # fmt: skip
    by_run = dict(list(kern.groupby(["source", "run_id"]))) if not kern.empty else {}
    out = []
    for _, c in r[r["compile"] != "off"].iterrows():
        e = eager.loc[(c["source"], c["cell"])] if (c["source"], c["cell"]) in eager.index else None
        pc = side(c, by_run.get((c["source"], c["run_id"]), pd.DataFrame()), tgt[c["dtype"]])
        pe = {"why_not": "no eager twin (compile=off) in the sweep"} if e is None else side(
            e, by_run.get((c["source"], e["run_id"]), pd.DataFrame()), tgt[c["dtype"]])  # fmt: skip
        h = host(c, e, g)
        line = {"source": c["source"], "cell": c["cell"], "run_id": c["run_id"],
                "compile": c["compile"], "eager_run_id": None if e is None else e["run_id"],
                "dev_e": pe.get("dev"), "pred_dev_e": pe.get("pred"), "dev_c": pc.get("dev"),
                "pred_dev_c": pc.get("pred"), **{f"{b}_us": pc.get(f"{b}_us") for b in CEILINGS},
                "unchanged": pc.get("unchanged"), "null_speedup": c.get("speedup_paired"),
                "g": h and h[0], "host_c": h and h[1] * h[0], "host_e": h and h[2] * h[0],
                "pred_speedup": None, "note": pc.get("why_not") or pe.get("why_not")}  # fmt: skip
        if line["note"] is None:
            d_e, d_c = pe["pred"], pc["pred"]
            line["pred_speedup"] = float(predict(d_e, h[2], d_c, h[1], h[0])) if h else d_e / d_c
            line["note"] = "" if h else "device only: no host_units on the rows"
        out.append(line)
    return pd.DataFrame(out)


def cause(x: pd.Series, m: pd.Series, e: pd.Series | None, src: dict, tgt: dict) -> str:
    """Why the model missed the cell ``x`` (measured as ``m``, eager ``e``, on the target), from
    what the rows support: both sides' kernels and max-autotune's winning picks on each GPU."""
    runs = {"s": (src, x["source"], {x["run_id"], x["eager_run_id"]}),
            "t": (tgt, m["source"], {m["run_id"], None if e is None else e["run_id"]})}  # fmt: skip
    ks, at = {}, {}
    for n, (d, source, ids) in runs.items():
        k, a = d["kernels"], d["autotune"]
        ks[n] = k[(k["source"] == source) & k["run_id"].isin(ids)] if not k.empty else k
        a = a[(a["source"] == source) & a["run_id"].isin(ids)] if "winner" in a else a.iloc[:0]
        w = a[a["winner"].astype(str).str.lower() == "true"] if len(a) else a
        at[n] = set(zip(w["op"], w["input_shapes"], w["choice"], strict=True)) if len(w) else set()
    sk, tk = ks["s"], ks["t"]
    if sk.empty or tk.empty:
        return "unexplained (a side has no kernels)"
    tmpl = [set(k.loc[k["kernel_class"] == "triton_template", "kernel"]) for k in (sk, tk)]
    if (at["s"] and at["t"] and at["s"] != at["t"]) or tmpl[0] != tmpl[1]:
        return "autotune picked other kernels on the target"
    new = set(tk["kernel"]) - set(sk["kernel"])
    if new:
        return f"{len(new)} kernel(s) on the target not seen on the source, e.g. {min(new)[:40]}"
    launched = pd.concat([sk, tk]).get("graph_launched", pd.Series(dtype=object))
    if launched.astype(str).str.lower().eq("true").any():
        return "CUDA graphs (graph_launched): a graph's replay, not its kernels one by one"
    return "unexplained"


def match_key(r: pd.DataFrame, cols: list[str], prefix: bool) -> pd.Series:
    """A row's cell across two sweeps: host_model's KEYS, the settings ``cols``, its source
    where ``prefix`` (the two sweeps share source names)."""
    key = cell_key(r, cols)
    return (r["source"].astype(str) + ":" if prefix else "") + key


def compare(t: pd.DataFrame, src: dict, tgt: dict) -> pd.DataFrame:
    """``t`` with the target's measured figures (``tgt``: load()'s frames of --measured), each
    prediction's error and the null's and, past ±10%, a ``why``. A cell matches on host_model's
    KEYS and SETTINGS, and on its source where the two sweeps share source names."""
    sr, tr = src["runs"], tgt["runs"]
    err = lambda a, b: a / b - 1 if pd.notna(a) and pd.notna(b) and b else None  # noqa: E731
    failed = tr[(tr["status"] != "ok") & (tr["device"] == "cuda")]
    tr = tr[(tr["status"] == "ok") & (tr["device"] == "cuda")].copy()
    same, cols = bool(set(tr["source"]) & set(sr["source"])), [c for c in SETTINGS if c in tr and c in sr]  # fmt: skip
    te = tr[tr["compile"] == "off"].assign(m=match_key(tr, [], same)).drop_duplicates("m")
    tc = tr[tr["compile"] != "off"].assign(m=match_key(tr, cols, same)).drop_duplicates("m")
    te, tc = te.set_index("m"), tc.set_index("m")
    mine = dict(zip(zip(sr["source"], sr["run_id"], strict=True), match_key(sr, cols, same), strict=True))  # fmt: skip
    lost = dict(zip(match_key(failed, cols, same), failed["status"], strict=True)) if len(failed) else {}  # fmt: skip
    out = []
    for _, x in t.iterrows():
        key, twin = mine[(x["source"], x["run_id"])], (x["source"] + ":") * same + x["cell"]
        if key not in tc.index:  # a cell the target ran and lost is said with its status
            out.append(
                {"why": f"target: {lost[key]}" if key in lost else "not measured on the target"}
            )
            continue
        m, e = tc.loc[key], te.loc[twin] if twin in te.index else None
        y = {"meas_dev_c": device_us(m.to_dict()), "meas_speedup": m.get("speedup_paired"),
             "meas_dev_e": None if e is None else device_us(e.to_dict())}  # fmt: skip
        y |= {"err_speedup": err(x["pred_speedup"], y["meas_speedup"]),
              "err_null": err(x["null_speedup"], y["meas_speedup"]),
              "err_dev_c": err(x["pred_dev_c"], y["meas_dev_c"]),
              "err_dev_e": err(x["pred_dev_e"], y["meas_dev_e"]),
              "null_dev_c": err(x["dev_c"], y["meas_dev_c"]),
              "null_dev_e": err(x["dev_e"], y["meas_dev_e"])}  # fmt: skip
        host_c = m.get("host_us") if pd.notna(m.get("host_us")) else x["host_c"]  # else predicted
        y["gpu_bound"] = pd.notna(host_c) and pd.notna(y["meas_dev_c"]) and y["meas_dev_c"] >= host_c  # fmt: skip
        if any(abs(v) > WITHIN for k, v in y.items() if k in MISSES and pd.notna(v)):
            y["why"] = cause(x, m, e, src, tgt)
        out.append(y)
    got = pd.DataFrame(out).reindex(columns=[*MEASURED, "why"])  # every column, none matched too
    return pd.concat([t.reset_index(drop=True), got], axis=1)


def summary(t: pd.DataFrame) -> list[str]:
    """Model against null on the same cells: paired speedups (all, GPU-bound) and device µs
    within ±10% of the target's. The model is said to win only where it beats the null."""
    share = lambda s: (int((s.dropna().abs() <= WITHIN).sum()), int(s.notna().sum()))  # noqa: E731
    if t["meas_speedup"].isna().all():  # fmt: skip
        return ["no cell of the source was measured ok on the target: check that the two sweeps ran the same variants, shapes and settings (the why column says per cell)"]  # fmt: skip
    out, both = [], t.dropna(subset=["err_speedup", "err_null"])
    for label, x in (("all", both), ("GPU-bound", both[both["gpu_bound"] == True])):  # noqa: E712
        (a, n), (b, _) = share(x["err_speedup"]), share(x["err_null"])
        won = ("the model wins" if a > b else "the null wins: the model adds nothing here"
               if b > a else "a tie: the model does not beat the null")  # fmt: skip
        out.append(f"paired speedup within ±10% of the target's, {label} cells: model {a}/{n}, "
                   f"null (the source's own speedup) {b}/{n}: {won}" if n else
                   f"paired speedup, {label} cells: none to judge")  # fmt: skip
    d = pd.concat([t[[f"err_dev_{s}", f"null_dev_{s}"]].set_axis(["m", "n"], axis=1)
                   for s in "ce"]).dropna()  # fmt: skip
    (a, n), (b, _) = share(d["m"]), share(d["n"])
    out.append(f"device µs within ±10% of the target's ({n} sides): model {a}/{n}, null (the "
               f"source's own device µs) {b}/{n}" if n else "device µs: none to judge")  # fmt: skip
    return out


def render(t: pd.DataFrame) -> list[str]:
    """The per-cell table: device µs measured → predicted, µs by ceiling, host, speedups."""
    head = ["cell", "eager dev µs", "compiled dev µs", "compiled µs by ceiling", "host µs c/e",
            "predicted", "null"]  # fmt: skip
    meas = "meas_speedup" in t
    head += ["measured", "err", "null err", "dev err c/e", "why"] if meas else []
    arrow = lambda a, b: f"{sig(a)} → {sig(b)}" if pd.notna(a) else ""  # noqa: E731
    pct = lambda v: f"{v:+.0%}" if pd.notna(v) else ""  # noqa: E731
    rows = []
    for _, x in t.iterrows():
        by = " · ".join(f"{b} {sig(x[f'{b}_us'])}" for b in CEILINGS if (x[f"{b}_us"] or 0) > 0)
        by += f" ({x['unchanged']})" if isinstance(x["unchanged"], str) and x["unchanged"] else ""
        line = [f"{x['source']}: {x['run_id']}", arrow(x["dev_e"], x["pred_dev_e"]),
                arrow(x["dev_c"], x["pred_dev_c"]), by,
                f"{sig(x['host_c'])}/{sig(x['host_e'])}" if pd.notna(x["host_c"]) else "",
                (f"{sig(x['pred_speedup'])}x " * pd.notna(x["pred_speedup"]) + x["note"]).strip(), f"{sig(x['null_speedup'])}x"]  # fmt: skip
        if meas:
            line += [f"{sig(x['meas_speedup'])}x", pct(x["err_speedup"]), pct(x["err_null"]),
                     f"{pct(x['err_dev_c'])}/{pct(x['err_dev_e'])}",
                     x["why"] if isinstance(x["why"], str) else ""]  # fmt: skip
        rows.append(line)
    return md_table(head, rows)


def run(a: argparse.Namespace) -> int:
    src = load(expand([a.sweep]))
    r = src["runs"]
    ok = r[(r.get("status") == "ok") & (r.get("device") == "cuda") & (r.get("compile") != "off")]
    if ok.empty:
        raise BadInput(f"{a.sweep} has no ok compiled CUDA row: predict reads a sweep run on a GPU")
    if a.host_g is not None and not a.host_g > 0:
        raise BadInput(f"--host-g {a.host_g}: give the target host's gauge µs (> 0)")
    tgt = ceilings(a.to, sorted(set(ok["dtype"])), a.to_device)
    for dt, (tf, gb, label) in tgt.items():
        s = ok[ok["dtype"] == dt].reindex(columns=["peak_tflops", "peak_gbps"]).median()
        print(f"target: {label}: {sig(tf)} TFLOP/s, {sig(gb)} GB/s; source rows: "
              f"{sig(s['peak_tflops']) or '?'} TFLOP/s, {sig(s['peak_gbps']) or '?'} GB/s")  # fmt: skip
    t = cell_table(r, src["kernels"], tgt, a.host_g)
    if a.measured:
        t = compare(t, src, load(expand([a.measured])))
    print("\n".join(render(t)))
    g = f"{a.host_g:g} µs (--host-g)" if a.host_g else "the row's own gauge µs"
    print(f"\nfloor: launches under {FLOOR_US:g} µs a call, as measured; other: classes the model "
          f"does not scale, as measured; host µs = host_units x {g}")  # fmt: skip
    print("\n".join(summary(t)) if a.measured else "", end="\n" * bool(a.measured))
    return 0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m analysis.tables predict", description=__doc__)
    p.add_argument("sweep", help="the sweep measured on the source GPU")
    p.add_argument("--to", required=True, help="the target's ceilings file, or a sweep dir")
    p.add_argument("--to-device", help="the device in a ceilings file of several")
    p.add_argument("--host-g", type=float, help="the target host's gauge µs (default: the rows')")
    p.add_argument("--measured", help="the same cells measured on the target GPU")
    a = p.parse_args(argv)
    try:
        return run(a)
    except (FileNotFoundError, BadInput) as e:
        stop("tables predict", e)


if __name__ == "__main__":
    from analysis.cli import run as end  # deferred: a command's end, not the module's

    end(main)
