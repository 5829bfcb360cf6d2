"""The Findings' scope, first in the block: the GPUs, software versions and host phase level the
rows were measured with, read from the rows (never typed in). Claims that name a kernel, a
backend's dispatch or which variant is fastest hold for these versions and this GPU only.
Part of ``python -m reference.findings``.
"""

from __future__ import annotations

import pandas as pd

from analysis.measures import sig

VERSIONS = [("torch_version", "torch"), ("triton_version", "Triton"), ("cuda_version", "CUDA"),
            ("cudnn_version", "cuDNN"), ("driver_version", "driver")]  # fmt: skip


def _values(runs: pd.DataFrame, col: str) -> str:
    if col not in runs:
        return ""
    vals = sorted({str(v) for v in runs[col].dropna() if str(v).strip()})
    return ", ".join(vals)


def section(data: dict) -> list[str]:
    runs = data["runs"]
    if runs.empty:
        return []
    gpu = runs[runs["device"] == "cuda"] if "device" in runs else runs
    rows = gpu if len(gpu) else runs
    where = _values(rows, "device_name") or "an unnamed device"
    soft = "; ".join(f"{name} {v}" for col, name in VERSIONS if (v := _values(rows, col)))
    line = (
        f"Scope: {len(rows)} cells measured on {where} ({soft}). Which kernel a backend "
        "dispatches to, which variant is fastest and how far a host-bound cell moves are facts "
        "of these versions and this machine; a claim that depends on them says so."
    )
    g = pd.to_numeric(rows.get("gauge_fast_us", pd.Series(dtype=float)), errors="coerce")
    if g.notna().any():
        src = rows.loc[g.notna(), "source"] if "source" in rows else pd.Series(dtype=str)
        srcs = ", ".join(f"`{s}`" for s in dict.fromkeys(src)) if len(src) else ""
        line += (
            f" The host's fast-phase gauge level (a 300-iteration Python loop and one CPU tensor "
            f"add; docs/method.md) read {sig(g.min())}–{sig(g.max())} µs in the {int(g.notna().sum())} "
            f"rows that record it{f' ({srcs})' if srcs else ''}" + _without(rows, g)
        )
    return [line, ""]


def _without(rows: pd.DataFrame, g: pd.Series) -> str:
    """The rows with no gauge: not timed (their statuses: oom, unsupported, ...), or ok rows made
    before the gauge, which give no phase."""
    if not g.isna().any():
        return "."
    st = rows.loc[g.isna(), "status"] if "status" in rows else pd.Series("ok", g[g.isna()].index)
    failed = st[st != "ok"].value_counts()
    parts = []
    if len(failed):
        parts.append(
            f"{int(failed.sum())} were not timed ("
            + ", ".join(f"{n} {s}" for s, n in failed.items())
            + ")"
        )
    if (st == "ok").any():
        parts.append(f"{int((st == 'ok').sum())} ok rows predate the gauge and give no phase")
    return "; of the other rows, " + " and ".join(parts) + "."
