"""What compiling costs before the first fast call: ``python -m analysis.startup SWEEP...``

Prints, from runs.csv alone (no torch):

- **Start-up** (``start=cold|warm|artifacts``, study.cell.start): per cell and start, the first
  call's seconds, the cold start of the same cell in the primer process beside it, the compile
  seconds and how much of the first call was still Dynamo, and the cache hits by kind.
- **Guards** (``compile.stance=default|skip_guard_eval_unsafe``): per cell, the host µs a call
  with Dynamo's guards evaluated and skipped; the difference is what guards cost a call. The
  two are different processes, so the difference is also given in host units (host µs over the
  gauge's µs, study.cell.host_cost), which carry across host phases; its µs are at the guarded
  row's host speed.
"""

from __future__ import annotations

import argparse
import sys

import pandas as pd

from analysis.findings_common import table as md_table
from analysis.measures import sig

START_ORDER = {"cold": 0, "warm": 1, "artifacts": 2}
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


def _ok_compiled(runs: pd.DataFrame) -> pd.DataFrame:
    r = runs[(runs["compile"] != "off") & (runs["status"] == "ok")]
    return r.copy()


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
    r = r[r["start"].isin(list(START_ORDER))]
    if r.empty or set(r["start"]) == {"cold"}:
        return pd.DataFrame()
    r = r.assign(_o=r["start"].map(START_ORDER)).sort_values(["variant", "compile", "_o"])
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
    return pd.DataFrame(out)


def guard_table(runs: pd.DataFrame) -> pd.DataFrame:
    """Per cell: host µs a call with guards evaluated and skipped, and the difference."""
    if "compile_stance" not in runs.columns or "host_us" not in runs.columns:
        return pd.DataFrame()
    r = _ok_compiled(runs)
    keys = ["variant", "compile"]
    out = []
    for (v, m), g in r.groupby(keys):
        on = g[g["compile_stance"] == "default"]
        off = g[g["compile_stance"] == "skip_guard_eval_unsafe"]
        if on.empty or off.empty:
            continue
        hu, hs = on["host_us"].median(), off["host_us"].median()
        uu, us = on["host_units"].median(), off["host_units"].median()
        gauge = on["host_gauge_us"].median() if "host_gauge_us" in on else float("nan")
        if pd.isna(hu) or pd.isna(hs):
            continue
        units = uu - us if not (pd.isna(uu) or pd.isna(us)) else None
        out.append(
            {
                "cell": f"{v} {m}",
                "host µs, guards evaluated": sig(hu),
                "host µs, guards skipped": sig(hs),
                "guards µs a call": sig(hu - hs),
                "guards, host units": "–" if units is None else f"{units:.2f}",
                "guards µs at G (units x G)": "–"
                if units is None or pd.isna(gauge)
                else f"{units * gauge:.1f} (G {gauge:.1f})",
                "device µs": sig(on["device_time_us"].median()) if "device_time_us" in on else "–",
            }
        )
    return pd.DataFrame(out)


def main(argv: list[str] | None = None) -> int:
    from analysis.load import expand, load, stop

    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("dirs", nargs="+", help="sweep dirs (or a results dir with runs.csv)")
    a = p.parse_args(argv)
    try:
        raw = load(expand(a.dirs))["repeats"]
    except FileNotFoundError as e:
        stop("startup", e)
    printed = False
    for title, t in (
        ("Start-up: the first call after a cold start, a warm restart and cache artifacts",
         start_table(raw)),
        ("Guards: host µs a call with Dynamo's guards evaluated and skipped", guard_table(raw)),
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
    sys.exit(main())
