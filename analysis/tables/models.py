"""Real models, per model and mode: ``python -m analysis.tables models SWEEP...``

What PyTorch's benchmark dashboard reports per model (speedup, compile time, memory
compression, graph breaks, pass rate), from the study's own rows, and what it also knows: the
kernels per step eager -> compiled and the fused kernels that take the most device time. Rows
of the ``custom`` family (the model zoo, study/workloads/models.py, and your own workloads).
CSV only; no torch.
"""

from __future__ import annotations

import argparse

import pandas as pd

from analysis.load import expand, load, stop
from analysis.measures import MODES, column, count, sig
from analysis.pairs import table as md_table

FAMILY = "custom"


def rows(raw: pd.DataFrame) -> pd.DataFrame:
    r = raw[raw["family"] == FAMILY] if "family" in raw else raw.iloc[0:0]
    if "pass" in r:
        r = r.assign(**{"pass": r["pass"].fillna("fwd")})
    return r


def pass_rate(raw: pd.DataFrame) -> pd.DataFrame:
    """Share of ok rows per mode and pass (the dashboard's pass rate), over the models."""
    r = rows(raw)
    if r.empty:
        return pd.DataFrame()
    g = r.copy().assign(ok=r["status"].eq("ok")).groupby(["compile", "pass"], sort=False)
    out = g.agg(ok=("ok", "sum"), rows=("ok", "size")).reset_index()
    out["pass rate"] = (out["ok"] / out["rows"]).map(lambda x: f"{x:.0%}")
    key = out["compile"].map({m: i for i, m in enumerate(MODES)}).fillna(99)
    return out.assign(_k=key).sort_values(["pass", "_k"]).drop(columns="_k")


def top_fused(kernels: pd.DataFrame, run_id: str, n: int = 2) -> str:
    if kernels.empty or "run_id" not in kernels:
        return ""
    k = kernels[(kernels["run_id"] == run_id) & kernels.get("fused_ops", pd.Series()).notna()]
    if k.empty or "us_per_step" not in k:
        return ""
    k = k.assign(t=column(k, "us_per_step")).sort_values("t", ascending=False).head(n)
    return "; ".join(f"{x['kernel'][:40]} ({x['fused_ops'][:50]})" for _, x in k.iterrows())


def _phase_note(ok: pd.DataFrame) -> str:
    """', host slow' when a row was not timed in the host's fast phase (study.measure.host_gauge), as the
    Findings' other tables say it: eager beside it ran in the same phase, so the ratio holds,
    but its latencies are the slow phase's."""
    phases = set(ok.get("timing_phase", pd.Series(dtype=str)).dropna().astype(str)) - {"fast", ""}
    return f", host {'/'.join(sorted(phases))}" if phases else ""


def table(raw: pd.DataFrame, kernels: pd.DataFrame | None = None) -> pd.DataFrame:
    """One line per model, pass and mode (its processes' median where repeated)."""
    r = rows(raw)
    if r.empty:
        return pd.DataFrame()
    kernels = kernels if kernels is not None else pd.DataFrame()
    eager = r[(r["compile"] == "off") & (r["status"] == "ok")]
    kps_eager = eager.groupby(["variant", "pass"])["kernels_per_step"].first()
    out = []
    for (v, p, m), g in r.groupby(["variant", "pass", "compile"], sort=False):
        x = g.iloc[0]
        okg = g[g["status"] == "ok"]
        line = {"model": v, "pass": p, "mode": m, "status": ", ".join(sorted(set(g["status"])))}
        if okg.empty:
            line["why not ok"] = str(x.get("reason", ""))[:120]
            out.append(line)
            continue
        sp, lo, hi = (
            column(okg, c) for c in ("speedup_paired", "speedup_ci_low", "speedup_ci_high")
        )
        line["paired speedup"] = (
            f"{sp.median():.2f}x [{lo.min():.2f}-{hi.max():.2f}]{_phase_note(okg)}"
            if sp.notna().any()
            else ""
        )
        line["compile s"] = sig(column(okg, "compile_s").median())
        line["graph breaks"] = count(column(okg, "graph_breaks").median()) if m != "off" else ""
        e = kps_eager.get((v, p))
        c = column(okg, "kernels_per_step").median()
        e = pd.to_numeric(pd.Series([e]), errors="coerce").iloc[0]
        line["kernels eager → here"] = f"{count(e)} → {count(c)}" if e == e else count(c)
        line["peak MB"] = sig(column(okg, "peak_mem_alloc_bytes").median() / 2**20)
        line["compression"] = sig(column(okg, "compression_ratio").median())
        line["top fused kernels"] = top_fused(kernels, okg.iloc[0]["run_id"]) if m != "off" else ""
        out.append(line)
    t = pd.DataFrame(out).fillna("")
    key = t["mode"].map({m: i for i, m in enumerate(MODES)}).fillna(99)
    return t.assign(_k=key).sort_values(["model", "pass", "_k"]).drop(columns="_k")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("dirs", nargs="+", help="sweep dirs (or a results dir with runs.csv)")
    a = p.parse_args(argv)
    try:
        d = load(expand(a.dirs))
    except FileNotFoundError as e:
        stop("tables models", e)
    t = table(d["repeats"], d["kernels"])
    if t.empty:
        print("no model rows (family custom): run +experiment=models first")
        return 1
    print("\n".join(md_table(list(t.columns), t.values.tolist())))
    pr = pass_rate(d["repeats"])
    print()
    print("\n".join(md_table(list(pr.columns), pr.values.tolist())))
    return 0


if __name__ == "__main__":
    from analysis.cli import run  # deferred: a command's end, not the module's

    run(main)
