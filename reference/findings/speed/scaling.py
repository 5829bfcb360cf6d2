"""Attention over sequence length (source ``scaling``): how far each variant goes before it runs
out of memory, its kernels, what compiling does at the two ends, and the best rate. Part of
``python -m reference.findings``.
"""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd

from reference import sources
from reference.findings.base.common import calibrated_peak, read, sp_text
from study.rows import metrics

SOURCE = sources.one("seq_len")


def _scaling_rows(runs: pd.DataFrame) -> pd.DataFrame:
    if "source" not in runs:
        return runs
    fwd = runs["pass"] == "fwd" if "pass" in runs else True
    return runs[(runs["source"] == SOURCE) & fwd]


def section(data: dict) -> list[str]:
    runs, rv = data["runs"], data["revealed"]
    sc, label = _scaling_rows(runs), f"`{SOURCE}`"
    v1 = Path(data["dir"]) / sources.V1
    if sc.empty and (v1 / "runs.csv").exists():
        # Not re-run yet: the previous study's sweep, labelled as such (same H200 host kind).
        old = read(v1)
        sc, runs, rv = _scaling_rows(old["runs"]), old["runs"], old["revealed"]
        label = f"`{sources.V1}/{SOURCE}`: v1's sweep, not re-run with this harness"
    if sc.empty:
        return [
            "",
            f"_Attention over sequence length: needs source `{SOURCE}`, not in these results._",
        ]
    return scaling(sc, rv if len(rv) else None, runs, label)


def scaling(
    sc: pd.DataFrame, revealed, runs: pd.DataFrame, label: str = f"`{SOURCE}`"
) -> list[str]:
    """Attention over seq_len (source `scaling`): how far each variant goes, its kernels, and
    what compiling does at the two ends."""
    out = [
        "",
        f"Attention over sequence length (source {label}, seq_len {int(sc['seq_len'].min())}–"
        f"{int(sc['seq_len'].max())}, B{int(sc['batch'].iloc[0])} H{int(sc['heads'].iloc[0])} "
        f"D{int(sc['head_dim'].iloc[0])}):",
        "",
        "| variant | mode | longest that ran | latency there, ms | kernels per forward, shortest → longest | first out of memory |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for (variant, mode), g in sc.groupby(["variant", "compile"], sort=False):
        g = g.sort_values("seq_len")
        okr = g[g["status"] == "ok"]
        oom = g[g["status"] == "oom"]
        first_oom = ""
        if len(oom):
            o = oom.iloc[0]
            asked = re.search(r"Tried to allocate ([\d.]+ [GMK]iB)", str(o["reason"]))
            first_oom = f"{int(o['seq_len'])}" + (f" (asked for {asked.group(1)})" if asked else "")
        if okr.empty:
            out.append(f"| {variant} | {mode} | none | | | {first_oom} |")
            continue
        lo, hi = okr.iloc[0], okr.iloc[-1]
        out.append(
            f"| {variant} | {mode} | {int(hi['seq_len'])} | {hi['latency_median_us'] / 1e3:.2f} | "
            f"{int(lo['kernels_per_step'])} → {int(hi['kernels_per_step'])} | {first_oom} |"
        )
    return out + [""] + _scaling_notes(sc, revealed, runs)


def _scaling_notes(sc: pd.DataFrame, revealed, all_runs: pd.DataFrame) -> list[str]:
    """Bullets read off the scaling rows: eager kernel growth (and the trace's reason), the
    compiled/eager ratio at the shortest and the longest length both ran, the best TFLOP/s."""
    ok_ = sc[sc["status"] == "ok"]
    eager, comp = ok_[ok_["compile"] == "off"], ok_[ok_["compile"] != "off"]
    notes = []
    grow = []
    for v, g in eager.groupby("variant", sort=False):
        g = g.sort_values("seq_len")
        lo, hi = g.iloc[0], g.iloc[-1]
        if hi["kernels_per_step"] <= lo["kernels_per_step"]:
            continue
        c = comp[(comp["variant"] == v) & (comp["seq_len"] == hi["seq_len"])]
        why = ""
        if revealed is not None:
            rv = revealed[(revealed["source"] == SOURCE) & (revealed["run_id"] == hi["run_id"])]
            m = re.search(
                r"split launches: (one [^;]*? launches \d+ x [^\s;]+); its largest input has "
                r"([\d,]+) elements",
                str(rv["revealed"].iloc[0]) if len(rv) else "",
            )
            if m:
                why = f" ({m.group(1)}: {m.group(2)} elements, over 2^31-1, split for 32-bit indexing)"
        grow.append(
            f"{v} {int(lo['kernels_per_step'])} → {int(hi['kernels_per_step'])} at seq_len "
            f"{int(hi['seq_len'])}{why}"
            + (f", compiled {int(c['kernels_per_step'].iloc[0])}" if len(c) else "")
        )
    if grow:
        notes.append("- Eager kernels per forward grow with length: " + "; ".join(grow) + ".")
    ends = []
    for (v, _mode), g in comp.groupby(["variant", "compile"], sort=False):
        both = g.merge(eager[eager["variant"] == v], on="seq_len", suffixes=("", "_eager"))
        if both.empty:
            continue
        both = both.sort_values("seq_len")
        a, b = both.iloc[0], both.iloc[-1]
        ends.append(
            f"{v} {_speedup(a)} at {int(a['seq_len'])} → {_speedup(b)} at {int(b['seq_len'])}"
        )
    if ends:
        modes = ", ".join(sorted(set(comp["compile"])))
        notes.append(
            f"- Speedup of torch.compile ({modes}) over eager, shortest → longest length both ran "
            "(paired, with its 95% interval, where measured; else the cross-process ratio of "
            "per-call medians, said so): " + "; ".join(ends) + "."
        )
    if "tflops" in ok_ and ok_["tflops"].notna().any():
        notes.append(best_rates(ok_, all_runs))
    return notes


def _speedup(x) -> str:
    """The paired speedup with its interval where the row has one (eager and compiled in one
    process), else the cross-process ratio of the two cells' medians, named as such."""
    sp = pd.to_numeric(pd.Series([x.get("speedup_paired")]), errors="coerce").iloc[0]
    if sp == sp:
        return sp_text({"sp": sp, "sp_lo": x.get("speedup_ci_low"), "sp_hi": x.get("speedup_ci_high"),
                        "sp_kind": "paired", "timing_phase": x.get("timing_phase")})  # fmt: skip
    ratio = metrics.speedup(x["latency_median_us_eager"], x["latency_median_us"])
    return f"{ratio:.2f}x cross-process"


def best_rates(ok_: pd.DataFrame, all_runs: pd.DataFrame) -> str:
    """The best rate per variant: the useful one (the work the mask keeps, SCHEMA.md) where the
    rows have it; v1's rows have only the full S×S count, which a fused causal kernel's skipped
    half inflates. Either count is checked against the calibrated peak, and the line says which
    rows read above it."""
    useful = "tflops_useful" in ok_ and ok_["tflops_useful"].notna().any()
    col = "tflops_useful" if useful else "tflops"
    best = _best(ok_, col).sort_values(col, ascending=False)
    causal = "causal" in best and bool(best["causal"].eq(True).all())  # CSV: True, or NaN
    kept = (
        "the half of the S×S matrix the causal mask keeps" if causal else "the work the mask keeps"
    )
    what = (
        f"Best useful rate per variant (FLOPs of {kept}, counted alike for every variant, over "
        "per-call latency)"
        if useful
        else "Best rate per variant (FLOPs of the full S×S matrix over per-call latency)"
    )
    line = (
        f"- {what}: "
        + "; ".join(
            f"{r['variant']} {r[col]:.0f} TFLOP/s ({r['compile']}, seq_len {int(r['seq_len'])})"
            for _, r in best.iterrows()
        )
        + "."
    )
    peak = calibrated_peak(all_runs, best.iloc[0])
    if peak is None:
        return line
    where = (
        f"the calibrated {best['dtype'].iloc[0]} matmul peak ({peak:.0f} TFLOP/s, `peak_tflops`)"
    )
    above = list(best[best[col] > peak]["variant"])
    if useful and above:
        return line + f" {' and '.join(above)} read above {where} even in useful FLOPs."
    full = _best(ok_, "tflops")
    over = list(full[full["tflops"] > peak]["variant"])
    if over and causal:
        line += (
            f" Counting the full S×S matrix, {' and '.join(over)} "
            + ("would read" if useful else "read")
            + f" above {where}: the count includes the masked half of the causal matrix, which "
            "the fused kernels skip"
            + (
                "; the useful rate stays below it."
                if useful
                else ", so their real rate is about half of what they read; naive and math "
                "compute the full matrix."
            )
        )
    return line


def _best(ok_: pd.DataFrame, col: str) -> pd.DataFrame:
    """Each variant's row with the highest ``col`` (variants with no value left out)."""
    have = ok_[ok_[col].notna()] if col in ok_ else ok_[:0]
    return have.loc[have.groupby("variant")[col].idxmax()] if len(have) else have
