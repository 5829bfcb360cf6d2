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
  speed G.
"""

from __future__ import annotations

import argparse

import pandas as pd

from analysis.load import cells, expand, load, stop
from analysis.measures import AXES, axis_values, sig
from analysis.pairs import table as md_table
from study.rows.schema import SHAPE_KEYS

START_ORDER = {"cold": 0, "warm": 1, "artifacts": 2}
# what one cell is, in these tables: its workload, shape and mode, in one sweep (source)
CELL = ["variant", "compile", "pass", "dtype", *SHAPE_KEYS, "layers", "causal", "source"]
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


def guard_table(runs: pd.DataFrame) -> pd.DataFrame:
    """Per cell: host units (and µs) a call with guards evaluated and skipped, and what the
    guards cost: the units' difference times the guarded row's host speed G. The two rows are
    two processes, often in different host phases, so their µs alone do not subtract."""
    if "compile_stance" not in runs.columns or "host_units" not in runs.columns:
        return pd.DataFrame()
    r = _ok_compiled(runs)
    out = []
    keys = [k for k in [*CELL, "start", "cache"] if k in r.columns]
    for key, g in r.groupby(keys, dropna=False):  # one cell of one sweep: never across shapes
        v, m = key[0], key[1]
        on = g[g["compile_stance"] == "default"]
        off = g[g["compile_stance"] == "skip_guard_eval_unsafe"]
        if on.empty or off.empty:
            continue
        uu, us = on["host_units"].median(), off["host_units"].median()
        if pd.isna(uu) or pd.isna(us):
            continue
        gauge = on["host_gauge_us"].median()
        out.append(
            {
                "cell": f"{v} {m}",
                "guards evaluated: host units (µs, G)": _units(on),
                "guards skipped: host units (µs, G)": _units(off),
                "guards: host units": f"{uu - us:.2f}",
                "guards µs a call (units x G)": f"{(uu - us) * gauge:.1f}",
                "device µs": sig(on["device_time_us"].median()),
            }
        )
    return pd.DataFrame(out)


def _units(x: pd.DataFrame) -> str:
    return (f"{x['host_units'].median():.2f} ({sig(x['host_us'].median())} µs, "
            f"G {x['host_gauge_us'].median():.1f})")  # fmt: skip


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
