"""Fixture sweeps for the analysis tests, built from the committed H200 rows (reference/h200):
real GPU numbers, plus the columns the runtime is adding (repeats, paired speedups, host_bound,
pass, peak memory, useful FLOPs, kernel phases) and a CPU-flavoured copy."""

from __future__ import annotations

import zlib
from pathlib import Path

import numpy as np
import pandas as pd

from tests.conftest import ROOT

H200 = ROOT / "reference" / "h200"
if (H200 / "v1" / "runs.csv").exists():  # after the v2 run, v1's rows (these fixtures) move there
    H200 = H200 / "v1"


def h200(*sources: str) -> dict[str, pd.DataFrame]:
    runs = pd.read_csv(H200 / "runs.csv")
    kernels = pd.read_csv(H200 / "kernels.csv")
    ncu = pd.read_csv(H200 / "ncu.csv")
    if sources:
        runs, kernels = runs[runs["source"].isin(sources)], kernels[kernels["source"].isin(sources)]
        ncu = ncu[ncu["source"].isin(sources)]
    return {"runs": runs.copy(), "kernels": kernels.copy(), "ncu": ncu.copy()}


def write(d: dict[str, pd.DataFrame], out: Path) -> Path:
    out.mkdir(parents=True, exist_ok=True)
    for name, df in d.items():
        if len(df):
            df.to_csv(out / f"{name}.csv", index=False)
    return out


def with_new_columns(source: str = "part3", name: str = "new") -> dict[str, pd.DataFrame]:
    """One source as the runtime will write it: 3 repeats per cell (fresh processes), paired
    speedups with a 95% interval (efficient's contains 1.0), host_bound, peak memory, useful
    FLOPs (half the causal count), a fwd_bwd pass of naive, and kernels with a phase."""
    d = h200(source)
    r, k = d["runs"], d["kernels"]
    r["source"], k["source"] = name, name
    bwd = r[r["variant"] == "naive"].copy()
    bwd["pass"], bwd["run_id"] = "fwd_bwd", bwd["run_id"] + ",pass=fwd_bwd"
    for c in ("latency_median_us", "latency_p10_us", "latency_p90_us"):
        bwd[c] *= 3
    r = pd.concat([r.assign(**{"pass": "fwd"}), bwd], ignore_index=True)
    kb = k[k["run_id"].isin(set(bwd["run_id"].str.replace(",pass=fwd_bwd", "")))].copy()
    kb["run_id"] = kb["run_id"] + ",pass=fwd_bwd"
    k = pd.concat([k.assign(phase="fwd"), kb.assign(phase="fwd"), kb.assign(phase="bwd")])
    r["config_hash"] = [f"{zlib.crc32(x.encode()):08x}" for x in r["run_id"]]
    comp = r["compile"] != "off"
    r["speedup_paired"] = (r["speedup"] * 1.01).where(comp)
    r["speedup_ci_low"] = r["speedup_paired"] * 0.97
    r["speedup_ci_high"] = r["speedup_paired"] * 1.03
    r["pairs"] = np.where(comp, 20, np.nan)
    r["eager_latency_paired_us"] = (r["latency_median_us"] * r["speedup_paired"]).where(comp)
    r["host_bound"] = r["latency_median_us"] > 1.1 * r["device_time_us"]
    r["peak_mem_alloc_bytes"] = 1e9 + 1e6 * np.arange(len(r))
    r["peak_mem_reserved_bytes"] = r["peak_mem_alloc_bytes"] * 1.2
    r["flops_useful"] = r["flops"] / 2
    r["tflops_useful"] = r["tflops"] / 2
    reps = []
    for i, f in enumerate((1.0, 1.02, 0.99)):
        x = r.copy()
        x["repeat"], x["repeats"] = i, 3
        x["latency_median_us"] *= f
        reps.append(x)
    return {"runs": pd.concat(reps, ignore_index=True), "kernels": k, "ncu": d["ncu"].iloc[0:0]}


def on_cpu(source: str = "core", name: str = "cpu") -> dict[str, pd.DataFrame]:
    """One source as a CPU sweep writes it: no device time, no calibrated peaks, cpu_bound
    blank ("GPU only"), latency timed with a monotonic clock."""
    d = h200(source)
    r, k = d["runs"], d["kernels"]
    r["source"], k["source"] = name, name
    r["device"], k["device"] = "cpu", "cpu"
    r["device_name"], r["latency_method"] = "Intel(R) Xeon(R)", "perf_counter_per_call"
    for c in ("cpu_bound", "device_time_us", "peak_tflops", "peak_gbps", "pct_peak_compute"):
        r[c] = np.nan
    return {"runs": r, "kernels": k, "ncu": d["ncu"].iloc[0:0]}
