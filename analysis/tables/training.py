"""Training and dynamic shapes, in three tables: ``python -m analysis.tables training DIR [DIR ...]``.

Reads only CSVs (runs.csv, and shapes.csv where a cell swept shapes in one process); never torch.

1. Speedup per pass: for each variant and compile mode, the paired speedup (eager / compiled,
   timed in alternation in one process) of ``fwd``, ``fwd_bwd`` and ``train_step``, with its 95%
   interval; an interval that holds 1.0 reads "no measurable difference", one within ±1% of it
   "within ±1%" (the Findings' verdict).
2. Memory: steady-state peak of the compiled step and of eager in the same process, the
   compression ratio (eager / compiled), the first call's peak (compile), and the tensors saved
   for backward, compiled against eager (what AOTAutograd's partitioner chose).
3. Dynamic shapes: per variant and ``compile.dynamic``, the graphs, the recompiles, the seconds
   spent compiling over the sweep, and the latency at each shape; and what symbolic shapes
   give up against specialised ones at the same shape.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pandas as pd

from analysis import load
from analysis.measures import MODES, PASSES
from analysis.pairs import verdict


def _read(dirs: list[Path], name: str) -> pd.DataFrame:
    frames = [pd.read_csv(d / name) for d in dirs if (d / name).exists()]
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


def _sp(r) -> str:
    """'1.20x [1.19–1.20]'; one not timed in the host's fast phase says so ('0.50x [0.49–0.50],
    host slow': v3's cuDNN fwd_bwd under `default`, 0.50x against 0.64x in the fast phase under
    max-autotune-no-cudagraphs); no change reads as the Findings' verdict says."""
    if pd.isna(r.get("speedup_paired")):
        return ""
    sp, lo, hi = r["speedup_paired"], r.get("speedup_ci_low"), r.get("speedup_ci_high")
    phase = r.get("timing_phase")
    note = f", host {phase}" if isinstance(phase, str) and phase != "fast" else ""
    if pd.isna(lo) or pd.isna(hi):  # a paired ratio without its interval: the ratio alone
        return f"{sp:.2f}x{note}"
    said = verdict({"sp": sp, "sp_lo": lo, "sp_hi": hi, "sp_kind": "paired"})
    word = f" ({said})" if said not in ("faster", "slower") else ""
    return f"{sp:.2f}x [{lo:.2f}–{hi:.2f}]{note}{word}"


def cells(runs: pd.DataFrame) -> pd.DataFrame:
    """One row per ok cell (``analysis.load.cells``: medians over repeats, and the paired
    interval that covers processes, as in the Findings)."""
    runs = runs[runs["status"] == "ok"].copy()  # one block: a wide runs.csv arrives fragmented
    if "source" not in runs:  # a sweep dir read directly: one source
        runs = runs.assign(source="")
    return load.cells(runs)


def speedup_by_pass(runs: pd.DataFrame) -> str:
    c = cells(runs)
    c = c[c["compile"] != "off"]
    if c.empty or "speedup_paired" not in c:
        return "_(no compiled cell with a paired speedup)_\n"
    passes = [p for p in PASSES if p in set(c["pass"])]
    lines = [
        "| variant | mode | " + " | ".join(passes) + " |",
        "| --- | --- | " + " | ".join("---" for _ in passes) + " |",
    ]
    for (v, m), g in sorted(
        c.groupby(["variant", "compile"]),
        key=lambda x: (x[0][0], MODES.index(x[0][1]) if x[0][1] in MODES else 9),
    ):
        by = {r["pass"]: _sp(r) for _, r in g.iterrows()}
        lines.append(f"| {v} | {m} | " + " | ".join(by.get(p, "") for p in passes) + " |")
    return "\n".join(lines) + "\n"


def _mib(x) -> str:
    return "" if pd.isna(x) else f"{x / 2**20:,.1f}"


def memory(runs: pd.DataFrame) -> str:
    c = cells(runs)
    if "peak_mem_alloc_bytes" not in c or c["peak_mem_alloc_bytes"].isna().all():
        return "_(no memory columns in these rows)_\n"
    src = ", ".join(sorted(set(c["mem_source"].dropna()))) if "mem_source" in c else "?"
    lines = [
        f"Peak memory in steady state, MiB ({src}); saved = tensors saved for backward "
        "(activation MiB).",
        "",
        "| variant | pass | mode | peak | eager peak | compression | first call peak | saved | eager saved |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for _, r in c.sort_values(["variant", "pass", "compile"]).iterrows():
        comp = "" if pd.isna(r.get("compression_ratio")) else f"{r['compression_ratio']:.2f}x"
        saved = (
            ""
            if pd.isna(r.get("saved_tensors"))
            else f"{r['saved_tensors']:.0f} ({_mib(r.get('saved_bytes'))})"
        )
        esaved = (
            ""
            if pd.isna(r.get("eager_saved_tensors"))
            else f"{r['eager_saved_tensors']:.0f} ({_mib(r.get('eager_saved_bytes'))})"
        )
        lines.append(
            f"| {r['variant']} | {r['pass']} | {r['compile']} | {_mib(r.get('peak_mem_alloc_bytes'))} | "
            f"{_mib(r.get('eager_peak_mem_alloc_bytes'))} | {comp} | {_mib(r.get('compile_peak_mem_bytes'))} | "
            f"{saved} | {esaved} |"
        )
    return "\n".join(lines) + "\n"


def dynamic(shapes: pd.DataFrame) -> str:
    if shapes.empty:
        return "_(no shapes.csv: run a shape_sweep, e.g. +experiment=dynamic)_\n"
    s = shapes.copy()
    s["dynamic"] = s["dynamic"].astype(str)
    sizes = sorted(s["value"].unique())
    lines = [
        "| variant | pass | compile.dynamic | graphs | recompiles | compile s over the sweep | "
        + " | ".join(f"{s['key'].iloc[0]}={v} µs" for v in sizes)
        + " |",
        "| --- | --- | --- | --- | --- | --- | " + " | ".join("---" for _ in sizes) + " |",
    ]
    static = {}
    for (v, p, d), g in s.groupby(["variant", "pass", "dynamic"]):
        lat = dict(zip(g["value"], g["latency_median_us"], strict=True))
        if d == "False":
            static[(v, p)] = lat
        comp = g.loc[g["compiled"].astype(str) == "True", "first_call_s"].sum()
        lines.append(
            f"| {v} | {p} | {d} | {g['graphs'].max():.0f} | {g['recompiles'].max():.0f} | {comp:.1f} | "
            + " | ".join("" if pd.isna(lat.get(x)) else f"{lat[x]:,.1f}" for x in sizes)
            + " |"
        )
    given = []
    for (v, p, d), g in s.groupby(["variant", "pass", "dynamic"]):
        base = static.get((v, p))
        if d == "False" or not base:
            continue
        lat = dict(zip(g["value"], g["latency_median_us"], strict=True))
        ratios = [lat[x] / base[x] for x in sizes if x in lat and x in base and base[x]]
        if ratios:
            given.append(
                f"{v} {p}, dynamic={d}: latency {min(ratios):.2f}–{max(ratios):.2f}x of specialised"
            )
    return "\n".join(lines) + "\n" + ("\n" + "; ".join(given) + ".\n" if given else "")


def report(dirs: list[Path]) -> str:
    runs = _read(dirs, "runs.csv")
    if runs.empty:
        raise SystemExit(f"no runs.csv in {', '.join(map(str, dirs))}")
    return "\n".join(
        [
            "## Speedup per pass (paired, 95% interval)",
            "",
            speedup_by_pass(runs),
            "## Memory",
            "",
            memory(runs),
            "## Dynamic shapes",
            "",
            dynamic(_read(dirs, "shapes.csv")),
        ]
    )


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(
        prog="python -m analysis.tables training", description=__doc__.split("\n\n")[0]
    )
    ap.add_argument("dirs", nargs="+", help="sweep dirs (or committed results dirs)")
    a = ap.parse_args(argv)
    dirs = [Path(d) for d in a.dirs]
    missing = [d for d in dirs if not (d / "runs.csv").exists()]
    if missing:
        sys.exit(f"analysis.tables.training: no runs.csv in {', '.join(map(str, missing))}")
    print(report(dirs))


if __name__ == "__main__":
    from analysis.cli import run  # deferred: a command's end, not the module's

    run(main)
