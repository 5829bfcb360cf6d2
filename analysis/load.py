"""Load one or more sweeps' CSVs into tidy DataFrames. CSV only: never imports torch.

A sweep dir holds ``runs.csv`` and run dirs with ``kernels.csv`` (and ``ncu.csv``,
``autotune.csv``). A results dir committed to git (e.g. ``results/h200``) may hold the
combined ``runs.csv``/``kernels.csv`` directly. Each frame gets a ``source`` column that tells
sweeps apart (machines, torch versions).
"""

from __future__ import annotations

import glob
from pathlib import Path

import pandas as pd

from study import io as study_io
from study import revealed
from study.schema import columns

NUMERIC = [
    c
    for c in columns("runs")
    if c
    not in {
        "run_id",
        "variant",
        "family",
        "compile",
        "device",
        "dtype",
        "status",
        "reason",
        "notes",
        "fullgraph",
        "dynamic",
        "inductor_patches",
        "cache",
        "backend_expected",
        "backend_seen",
        "backend_proof",
        "latency_method",
        "device_time_method",
        "kernels_by_class",
        "steps_consistent",
        "cpu_bound",
        "dominant_kernel",
        "graph_launched",
        "graph_break_reasons",
        "recompile_reasons",
        "cudagraph_skip_reasons",
        "generated_dir",
        "flops_source",
        "flops_note",
        "mask",
        "score_mod",
        "bound",
        "sdpa_choice",
        "ncu_status",
        "ncu_note",
        "torch_version",
        "triton_version",
        "cuda_version",
        "cudnn_version",
        "driver_version",
        "device_name",
        "host",
        "python_version",
        "git_rev",
        "started_at",
        "trace_file",
        "causal",
        "gpu_index",
    }
]


def newest_sweep(root: Path = Path("outputs")) -> Path:
    sweeps = sorted((root / "sweeps").glob("*/runs.csv")) if (root / "sweeps").exists() else []
    if not sweeps:
        raise FileNotFoundError(
            f"no sweep with a runs.csv under {root}/sweeps: run "
            "`python -m study.run -m ...` first, or pass SWEEP_DIR"
        )
    return sweeps[-1].parent


def expand(args: list[str]) -> list[Path]:
    out = []
    for a in args:
        hits = sorted(glob.glob(a)) or [a]
        for h in hits:
            p = Path(h)
            if p.is_file() and p.name == "runs.csv":
                p = p.parent
            if not (p / "runs.csv").exists():
                raise FileNotFoundError(
                    f"{p} has no runs.csv: pass a sweep dir (outputs/sweeps/<time>)"
                )
            out.append(p)
    return out


def _labels(dirs: list[Path]) -> list[str]:
    names = [d.resolve().name for d in dirs]
    if len(set(names)) == len(names):
        return names
    return ["/".join(d.resolve().parts[-2:]) for d in dirs]


def _tag(df: pd.DataFrame, label: str) -> None:
    if "source" not in df:  # a combined CSV from an earlier report keeps its own sources
        df.insert(0, "source", label)
    return df


def _read(path: Path) -> pd.DataFrame:
    return pd.read_csv(path, keep_default_na=True).copy()


def load(dirs: list[Path]) -> dict[str, pd.DataFrame]:
    runs, kernels, ncu, autotune = [], [], [], []
    for d, label in zip(dirs, _labels(dirs), strict=True):
        r = _read(d / "runs.csv")
        _tag(r, label)
        runs.append(r)
        run_dirs = sorted(
            p.parent for p in d.glob("*/run.csv")
        )  # not report/, which has its own CSVs
        kfiles = [r / "kernels.csv" for r in run_dirs if (r / "kernels.csv").exists()]
        if not run_dirs and (d / "kernels.csv").exists():  # a committed results dir
            kfiles = [d / "kernels.csv"]
        for kf in kfiles:
            k = _read(kf)
            if len(k):
                _tag(k, label)
                kernels.append(k)
        for name, acc in (("ncu.csv", ncu), ("autotune.csv", autotune)):
            files = [r / name for r in run_dirs if (r / name).exists()]
            if not run_dirs and (d / name).exists():
                files = [d / name]
            for f in files:
                x = _read(f)
                if len(x):
                    _tag(x, label)
                    acc.append(x)
    out = {
        "runs": pd.concat(runs, ignore_index=True) if runs else pd.DataFrame(),
        "kernels": pd.concat(kernels, ignore_index=True) if kernels else pd.DataFrame(),
        "ncu": pd.concat(ncu, ignore_index=True) if ncu else pd.DataFrame(),
        "autotune": pd.concat(autotune, ignore_index=True) if autotune else pd.DataFrame(),
    }
    r = out["runs"]
    for c in NUMERIC:
        if c in r:
            r[c] = pd.to_numeric(r[c], errors="coerce")
    if "speedup" not in r or r["speedup"].isna().all():
        out["runs"] = _speedups(r)
    k = out["kernels"]
    for c in (
        "calls_per_step",
        "us_per_step",
        "mean_us",
        "share",
        "occupancy_pct",
        "registers_per_thread",
    ):
        if c in k:
            k[c] = pd.to_numeric(k[c], errors="coerce")
    out["revealed"] = blog_table(out["runs"], out["kernels"])
    return out


def _speedups(r: pd.DataFrame) -> pd.DataFrame:
    if r.empty:
        return r
    recs = r.astype(object).where(r.notna(), "").to_dict("records")
    recs = study_io.with_speedups(
        [{k: ("" if v is None else str(v)) for k, v in x.items()} for x in recs]
    )
    r["speedup"] = [x["speedup"] for x in recs]
    r["payback_calls"] = [x["payback_calls"] for x in recs]
    r["speedup"] = pd.to_numeric(r["speedup"], errors="coerce")
    r["payback_calls"] = pd.to_numeric(r["payback_calls"], errors="coerce")
    return r


def blog_table(runs: pd.DataFrame, kernels: pd.DataFrame) -> pd.DataFrame:
    """variant | compile | kernels per forward | latency | speedup | what the trace revealed."""
    if runs.empty:
        return pd.DataFrame()
    out = []
    for source, r in runs.groupby("source", sort=False):
        recs = r.astype(object).where(r.notna(), None).to_dict("records")
        recs = [{k: ("" if v is None else v) for k, v in x.items()} for x in recs]
        kr = kernels[kernels["source"] == source] if not kernels.empty else kernels
        by_run = {}
        if not kr.empty:
            for x in kr.astype(object).where(kr.notna(), "").to_dict("records"):
                by_run.setdefault(x["run_id"], []).append({k: str(v) for k, v in x.items()})
        for row in revealed.table(recs, by_run):
            row["source"] = source
            out.append(row)
    return pd.DataFrame(out)
