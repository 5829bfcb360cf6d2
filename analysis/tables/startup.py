"""What compiling costs before the first fast call: ``python -m analysis.tables startup SWEEP...``

Prints, from runs.csv alone (no torch):

- **Start-up** (``start=cold|warm|artifacts``, study.cell.start): per cell and start, the first
  call's seconds, the cold start of the same cell in the primer process beside it, the compile
  seconds and how much of the first call was still Dynamo, and the cache hits by kind.
- **Regional compilation** (``compile.regional``): the whole model against its repeated block
  compiled by region, per workload and depth: compile and first-call seconds, the paired
  speedup, graphs, FX nodes traced and kernels a step.
- **Guards** (``compile.stance=default|skip_guard_eval_unsafe``): per cell, the host cost a
  call with Dynamo's guards evaluated and skipped. The two are different processes, often in
  different host phases, so what the guards cost is the difference of host units (host µs over
  the gauge's µs, study.measure.host_cost), which carry across phases, times the guarded row's host
  speed G. The CPU measures no host units: its rows show each side's latency a call and host
  phase alone.
"""
# Long: the three start-up tables (start, regional, guards) read the same compiled ok rows and
# split them by the same axes and machines; one question: what compiling costs before the first
# fast call.

from __future__ import annotations

import argparse

import pandas as pd

from analysis.load import cells, expand, load, stop
from analysis.measures import AXES, axis_values, sig
from analysis.pairs import table as md_table
from study.rows.schema import SHAPE_KEYS

START_ORDER = {"cold": 0, "warm": 1, "artifacts": 2}
# what one cell is, in these tables: its workload, shape and mode, in one sweep (source)
CELL = ["variant", "compile", "pass", "regime", "dtype", *SHAPE_KEYS, "layers", "causal", "source"]
START_NOTE = (
    "start=warm: a primer process compiled the cell into its caches first (a restart); "
    "start=artifacts: the cell loaded a primer's torch.compiler.save_cache_artifacts() into "
    "empty caches (a service's cold start). The primer's own first call is the cold start of the "
    "same cell. The Dynamo share is what caches cannot save: Dynamo traces again in every "
    "new process."
)
GUARD_NOTE = (
    "compile.stance=skip_guard_eval_unsafe skips Dynamo's guards while timed: the difference "
    "is what they cost a call (two processes, so also in host units, which carry across host "
    "phases). Skipping guards is unsafe: a changed input is not caught."
)


def machine(r: pd.DataFrame) -> pd.Series:
    """Each row's machine: its GPU without the vendor and its boot id's first 8 characters
    ("H200 b7d789e0"); a row without a boot id is its GPU alone."""
    gpu = r["device_name"] if "device_name" in r else pd.Series("", index=r.index)
    gpu = gpu.fillna("").astype(str).str.replace("NVIDIA ", "", regex=False).str.split().str[0]
    boot = r["boot_id"] if "boot_id" in r else pd.Series("", index=r.index)
    boot = boot.fillna("").astype(str).str[:8]
    return (gpu.fillna("") + " " + boot).str.strip()


def _with_machine(r: pd.DataFrame, out: list[dict], after: str) -> pd.DataFrame:
    """``out`` as a table, with a ``machine`` column after ``after`` where ``r`` spans more than
    one machine (each dict carries its row's under ``_machine``)."""
    t = pd.DataFrame(out)
    if t.empty:
        return t
    m = t.pop("_machine")
    if r.assign(_m=machine(r))["_m"].nunique() > 1:
        t.insert(list(t.columns).index(after) + 1, "machine", m)
    return t


def one_per_cell(r: pd.DataFrame) -> pd.DataFrame:
    """One row per cell and machine: a cell run in several fresh processes (``repeats``) is the
    median of its repeats (analysis.load.cells), so a compile's seconds are a median and not one
    sample; never a median across machines (a cell's config_hash is the same on every machine),
    and the machines in the order their rows come."""
    if "source" not in r:
        r = r.assign(source="")
    if "repeat" not in r or r.empty:
        return r.copy()
    return pd.concat([cells(g) for _, g in r.groupby(machine(r), sort=False)], ignore_index=True)


def _ok_compiled(runs: pd.DataFrame) -> pd.DataFrame:
    """The ok compiled rows, one per cell and machine (``one_per_cell``)."""
    return one_per_cell(runs[(runs["compile"] != "off") & (runs["status"] == "ok")])


def _split_by(r: pd.DataFrame, shown: tuple[str, ...]) -> list[str]:
    """The axes (``measures.AXES``: start, regional, compile stance, layers, ...) that vary
    among ``r`` and that a table does not show already (``shown``): a column each, so that no
    two of its rows look alike."""
    return [c for c in AXES if c not in shown and c in r and axis_values(r, c).nunique() > 1]


def _axes_cols(t: pd.DataFrame, r: pd.DataFrame, axes: list[str], after: str) -> pd.DataFrame:
    """``t`` (one row per row of ``r``, in its order) with a column per axis in ``axes``."""
    if t.empty:
        return t
    at = list(t.columns).index(after) + 1
    for i, c in enumerate(axes):
        t.insert(at + i, c.replace("_", " "), axis_values(r, c).to_numpy())
    return t


def _num(row, col):
    v = row.get(col)
    return None if v is None or pd.isna(v) or v == "" else float(v)


def _s(v) -> str:
    return "–" if v is None else f"{v:.2f}"


def start_table(runs: pd.DataFrame) -> pd.DataFrame:
    """One line per compiled cell with a ``start`` (cold, warm, artifacts), in that order."""
    if "start" not in runs.columns:
        return pd.DataFrame()
    r = _ok_compiled(runs)
    if "compile_stance" in r:  # guards skipped change the steady state, not the start
        r = r[r["compile_stance"].fillna("default") == "default"]
    r = r[r["start"].isin(list(START_ORDER))]
    keys = [k for k in CELL if k in r.columns]
    if keys and not r.empty:  # only cells that started warm or from artifacts, and their cold
        started = r[r["start"] != "cold"]
        r = r.merge(started[keys].drop_duplicates(), on=keys) if len(started) else started
    if r.empty:
        return pd.DataFrame()
    r = r.assign(_o=r["start"].map(START_ORDER), _m=machine(r))
    r = r.assign(_mo=r["_m"].map({m: i for i, m in enumerate(dict.fromkeys(r["_m"]))}))
    r = r.sort_values(["variant", "compile", "_mo", "_o"], kind="stable")
    out = []
    for _, x in r.iterrows():
        first, dyn = _num(x, "first_call_s"), _num(x, "first_call_dynamo_share")
        hits = ", ".join(
            f"{name} {int(_num(x, col) or 0)}"
            for name, col in (("FX graph", "fxgraph_cache_hits"), ("AOTAutograd", "aot_cache_hits"))
        )
        load = _num(x, "artifacts_load_s")
        out.append(
            {
                "cell": f"{x['variant']} {x['compile']}",
                "_machine": x["_m"],
                "start": x["start"],
                "first call s": _s(first),
                "primer's cold first call s": _s(_num(x, "cold_first_call_s")),
                "compile s": _s(_num(x, "compile_s")),
                "Dynamo share of the first call": "–" if dyn is None else f"{dyn:.0%}",
                "cache hits": hits,
                "artifacts": (
                    f"{sig((_num(x, 'artifacts_bytes') or 0) / 1e6)} MB, loaded in {load:.3f} s"
                    if load is not None
                    else ""
                ),
            }
        )
    return _axes_cols(_with_machine(r, out, "cell"), r, _split_by(r, ("start", "cache")), "start")


def guard_costs(runs: pd.DataFrame) -> pd.DataFrame:
    """Per cell with both stances, as numbers: ``variant``, ``compile``, ``pass`` and ``regime``
    (where the rows have them), each stance's host units, µs, host speed G and latency
    (``_on``: guards evaluated, ``_off``: skipped), the device µs, and what the guards cost a
    call: ``guard_units`` (the units' difference) and ``guard_us`` (times the guarded row's G);
    NaN where the rows have no host units (the CPU). The two rows are two processes, often in
    different host phases, so their µs alone do not subtract."""
    if "compile_stance" not in runs.columns:
        return pd.DataFrame()
    r = _ok_compiled(runs)
    out = []
    keys = [k for k in [*CELL, "start", "cache"] if k in r.columns]
    for _, g in r.groupby(keys, dropna=False):  # one cell of one sweep: never across shapes
        on = g[g["compile_stance"] == "default"]
        off = g[g["compile_stance"] == "skip_guard_eval_unsafe"]
        if on.empty or off.empty:
            continue
        x = {k: g[k].iloc[0] for k in ("variant", "compile", "pass", "regime") if k in g}
        for side, s in (("on", on), ("off", off)):
            for key, col in (("units", "host_units"), ("host_us", "host_us"),
                             ("gauge", "host_gauge_us"), ("latency", "latency_median_us")):  # fmt: skip
                x[f"{key}_{side}"] = _median(s, col)
            x[f"phase_{side}"] = _phase(s.iloc[0])
        x["device_us"] = _median(on, "device_time_us")
        units = x["units_on"] is not None and x["units_off"] is not None
        nan = float("nan")
        x["guard_units"] = x["units_on"] - x["units_off"] if units else nan
        x["guard_us"] = x["guard_units"] * x["gauge_on"] if units and x["gauge_on"] else nan
        out.append(x)
    return pd.DataFrame(out)


def guard_table(runs: pd.DataFrame) -> pd.DataFrame:
    """Per cell: host units (and µs) a call with guards evaluated and skipped, what the guards
    cost (the units' difference times the guarded row's host speed G, ``guard_costs``), and
    each side's latency with its host phase (the CPU has no host units: latency only)."""
    out = []
    for x in guard_costs(runs).to_dict("records"):
        units = not pd.isna(x["guard_units"])
        out.append(
            {
                "cell": f"{x['variant']} {x['compile']}",
                "guards evaluated: host units (µs, G)": _units(x, "on") if units else "–",
                "guards skipped: host units (µs, G)": _units(x, "off") if units else "–",
                "guards: host units": f"{x['guard_units']:.2f}" if units else "–",
                "guards µs a call (units x G)": f"{x['guard_us']:.1f}" if units else "–",
                "latency µs: evaluated, skipped": f"{_lat(x, 'on')}, {_lat(x, 'off')}",
                "device µs": sig(x["device_us"]) if units else "–",
            }
        )
    return pd.DataFrame(out)


def _median(x: pd.DataFrame, col: str) -> float | None:
    v = pd.to_numeric(x[col], errors="coerce").median() if col in x else None
    return None if v is None or pd.isna(v) else float(v)


def _lat(x: dict, side: str) -> str:
    """A side's latency a call, and its host phase where not fast (two processes: the guards'
    cost is their difference only in one phase; the CPU has no host units to carry across)."""
    v = x[f"latency_{side}"]
    return "–" if v is None or pd.isna(v) else f"{sig(v)}" + x[f"phase_{side}"]


def _units(x: dict, side: str) -> str:
    return (f"{x[f'units_{side}']:.2f} ({sig(x[f'host_us_{side}'])} µs, "
            f"G {x[f'gauge_{side}']:.1f})")  # fmt: skip


def regional_table(runs: pd.DataFrame) -> pd.DataFrame:
    """The whole model against its repeated block compiled by region (compile.regional), per
    workload and depth: compile and first-call seconds, the paired speedup with its 95% interval
    over the cell's pairs, graphs, FX nodes traced and kernels a step."""
    if "regional" not in runs.columns:
        return pd.DataFrame()
    r = _ok_compiled(runs)
    reg = r["regional"].astype(str).str.lower().isin(["true", "1", "1.0"])
    if not reg.any():
        return pd.DataFrame()
    r = r.assign(_reg=reg, _depth=r["layers"] if "layers" in r else None, _m=machine(r))
    out, rows = [], []
    keys = [k for k in [*CELL, "_depth"] if k in r.columns and k != "layers"]
    keys += _split_by(r, ("regional", "layers"))  # never one group across starts or stances
    order = {m: i for i, m in enumerate(dict.fromkeys(r["_m"]))}
    groups = sorted(r.groupby(keys, dropna=False), key=lambda kg: (
        str(kg[1]["variant"].iloc[0]), pd.to_numeric(kg[1]["_depth"], errors="coerce").fillna(0).iloc[0],
        order[kg[1]["_m"].iloc[0]]))  # fmt: skip
    for _, g in groups:  # by workload and depth, each machine's rows together
        if not g["_reg"].any():
            continue
        for i, x in g.sort_values("_reg").iterrows():
            rows.append(i)
            lo, hi = _num(x, "speedup_ci_low"), _num(x, "speedup_ci_high")
            sp = _num(x, "speedup_paired")
            out.append(
                {
                    "workload": f"{x['variant']} x{int(x['_depth'])}" if pd.notna(x["_depth"])
                    else str(x["variant"]),
                    "_machine": x["_m"],
                    "compiled": (x.get("regional_method") or "regional") if x["_reg"]
                    else "whole model",
                    "compile s": _s(_num(x, "compile_s")),
                    "first call s": _s(_num(x, "first_call_s")),
                    "paired speedup [95%, pairs]": "–" if sp is None
                    else f"{sp:.2f}x" + ("" if lo is None or hi is None else f" [{lo:.2f}–{hi:.2f}]")
                    + _phase(x),
                    "graphs": int(_num(x, "graphs") or 0),
                    "FX nodes traced": int(_num(x, "graph_ops") or 0),
                    "kernels a step": int(_num(x, "kernels_per_step") or 0),
                }
            )  # fmt: skip
    t = _with_machine(r, out, "workload")
    return _axes_cols(t, r.loc[rows], _split_by(r, ("regional", "layers")), "compiled")


def _phase(x) -> str:
    p = x.get("timing_phase")
    return "" if not isinstance(p, str) or p in ("", "fast") else f" (host {p})"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("dirs", nargs="+", help="sweep dirs (or a results dir with runs.csv)")
    a = p.parse_args(argv)
    try:
        raw = load(expand(a.dirs))["repeats"]
    except FileNotFoundError as e:
        stop("tables startup", e)
    printed = False
    for title, t in (
        ("Start-up: the first call after a cold start, a warm restart and cache artifacts",
         start_table(raw)),
        ("Regional compilation: the whole model against its repeated block",
         regional_table(raw)),
        ("Guards: host cost a call with Dynamo's guards evaluated and skipped", guard_table(raw)),
    ):  # fmt: skip
        if t.empty:
            continue
        print(f"{title}\n")
        print("\n".join(md_table(list(t.columns), t.values.tolist())))
        print()
        printed = True
    if not printed:
        print(
            "no compiled rows with start=warm|artifacts or compile.stance=skip_guard_eval_unsafe: "
            "sweep start=cold,warm,artifacts or compile.stance=default,skip_guard_eval_unsafe"
        )
        return 1
    return 0


if __name__ == "__main__":
    from analysis.cli import run  # deferred: a command's end, not the module's

    run(main)
