"""Below the profiler: Nsight Compute (and optionally Nsight Systems) for a cell's top kernels.

Opt-in (``ncu.enabled=true``, ``nsys.enabled=true``). After the cell's own timing and
profiling, the worker starts a separate process under ncu, so ncu's kernel replays never
touch the cell's numbers:

    ncu --clock-control none --nvtx --nvtx-include study_ncu/ -k regex:<top-N kernels> ...
        python -m study.cell.ncu_target RUN_DIR

The target (study.cell.ncu_target) rebuilds the cell's workload (same seed, same compile mode, same SDPA pin and the
cell's still-present compile cache), warms up outside the NVTX range, then calls it
``ncu.launch_count`` times inside it. ``ncu.csv`` is tidy: one row per kernel x launch x metric,
canonical metric names (``achieved_occupancy``, ``sm_throughput_pct``...), each mapped to its
kernel in ``kernels.csv``. Where ncu is missing or cannot read the counters, the run row says
``ncu_status=unavailable`` with ncu's own message, and the rest of the cell is unaffected.
"""

from __future__ import annotations

import csv
import io as _io
import os
import re
import subprocess
import sys
from pathlib import Path

from study.observe.classify import short_name
from study.rows import io

SECTIONS = ["SpeedOfLight", "LaunchStats", "Occupancy", "MemoryWorkloadAnalysis"]
EXTRA_METRICS = ["dram__bytes_read.sum", "dram__bytes_write.sum"]
CANONICAL = {
    "Duration": "duration",
    "Achieved Occupancy": "achieved_occupancy",
    "Theoretical Occupancy": "theoretical_occupancy",
    "Block Limit Registers": "block_limit_registers",
    "Block Limit Shared Mem": "block_limit_shared_mem",
    "Block Limit Warps": "block_limit_warps",
    "Block Limit SM": "block_limit_sm",
    "Block Limit Barriers": "block_limit_barriers",
    "Registers Per Thread": "registers_per_thread",
    "Static Shared Memory Per Block": "static_smem_per_block",
    "Dynamic Shared Memory Per Block": "dynamic_smem_per_block",
    "Compute (SM) Throughput": "sm_throughput_pct",
    "Memory Throughput": "memory_throughput_pct",
    "DRAM Throughput": "dram_throughput_pct",
    "L1/TEX Hit Rate": "l1_hit_rate_pct",
    "L2 Hit Rate": "l2_hit_rate_pct",
    "L1/TEX Cache Throughput": "l1_throughput_pct",
    "L2 Cache Throughput": "l2_throughput_pct",
    "Grid Size": "grid_size",
    "Block Size": "block_size",
    "Waves Per SM": "waves_per_sm",
    "dram__bytes_read.sum": "dram_bytes_read",
    "dram__bytes_write.sum": "dram_bytes_write",
}
LIMITS = {
    "block_limit_registers": "registers",
    "block_limit_shared_mem": "shared memory",
    "block_limit_warps": "warps",
    "block_limit_sm": "blocks per SM",
    "block_limit_barriers": "barriers",
}
NVTX_RANGE = "study_ncu"


def _number(text: str):
    t = text.replace(",", "").strip()
    try:
        return float(t)
    except ValueError:
        return text.strip()


def base_name(name: str) -> str:
    """A kernel's function name without namespaces, templates or parameters."""
    s = short_name(name, width=10_000).split("[", 1)[0]
    return s.rsplit("::", 1)[-1]


def parse_csv(text: str) -> list[dict]:
    """ncu ``--csv`` output (details page) -> tidy rows. ncu's own log lines are skipped."""
    lines = text.splitlines()
    start = next((i for i, ln in enumerate(lines) if ln.startswith('"ID"')), None)
    if start is None:
        return []
    rows = []
    for r in csv.DictReader(_io.StringIO("\n".join(lines[start:]))):
        raw = (r.get("Metric Name") or "").strip()
        if not raw:
            continue
        rows.append(
            {
                "kernel": r.get("Kernel Name", ""),
                "launch": int(r["ID"]) if str(r.get("ID", "")).isdigit() else r.get("ID"),
                "section": r.get("Section Name", ""),
                "metric": CANONICAL.get(raw, raw),
                "unit": r.get("Metric Unit", ""),
                "value": _number(r.get("Metric Value", "")),
            }
        )
    rows += _limiters(rows)
    return rows


def _limiters(rows: list[dict]) -> list[dict]:
    """Per launch: what limits occupancy (the smallest block limit), as its own row."""
    out = []
    by_launch = {}
    for r in rows:
        if r["metric"] in LIMITS and isinstance(r["value"], float):
            by_launch.setdefault((r["kernel"], r["launch"]), []).append(r)
    for (kernel, launch), lim in by_launch.items():
        low = min(x["value"] for x in lim)
        names = sorted(LIMITS[x["metric"]] for x in lim if x["value"] == low)
        out.append(
            {
                "kernel": kernel,
                "launch": launch,
                "section": "Occupancy",
                "metric": "occupancy_limiter",
                "unit": "",
                "value": " + ".join(names),
            }
        )
    return out


def match(ncu_kernel: str, kernel_rows: list[dict]) -> str | None:
    """The kernels.csv kernel an ncu kernel is: same function name, most device time first."""
    want = base_name(ncu_kernel)
    hits = [k for k in kernel_rows if base_name(k["kernel"]) == want]
    if not hits:
        return None
    return max(hits, key=lambda k: float(k.get("us_per_step") or 0))["kernel"]


def top_kernels(kernel_rows: list[dict], n: int) -> list[str]:
    ks = [k for k in kernel_rows if not k["kernel"].startswith(("Memcpy", "Memset"))]
    ks.sort(key=lambda k: -float(k.get("us_per_step") or 0))
    return list(dict.fromkeys(base_name(k["kernel"]) for k in ks))[:n]


def _env() -> dict:
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    env.pop(
        "TORCH_TRACE", None
    )  # the cell's compile log is the cell's; the profilers' run adds none
    return env


def _message(text: str) -> str:
    errs = [
        ln.strip()
        for ln in text.splitlines()
        if "==ERROR==" in ln or "==WARNING==" in ln and "clock" not in ln
    ]
    return " | ".join(errs)[:600] or text.strip()[-600:]


def run(cfg, run_dir: Path, kernel_rows: list[dict]) -> dict:
    """The ncu pass (and the nsys pass) for a finished cell. Returns run-row columns."""
    # Long: one Nsight Compute run in order: its command, its limit, each way it fails as a row, the
    # CSV it writes.
    out = {"ncu_status": None, "ncu_note": None}
    if cfg.ncu.enabled:
        names = top_kernels(kernel_rows, cfg.ncu.top_n)
        if not names:
            out.update(
                ncu_status="unavailable", ncu_note="no device kernels in the trace to profile"
            )
        else:
            regex = "regex:^(" + "|".join(re.escape(n) for n in names) + ")$"
            cmd = [
                cfg.ncu.binary,
                "--clock-control",
                "none",
                "--csv",
                "--target-processes",
                "all",
                "--nvtx",
                "--nvtx-include",
                f"{NVTX_RANGE}/",
                "-k",
                regex,
                "--launch-count",
                str(cfg.ncu.top_n * cfg.ncu.launch_count * 4),
                *sum((["--section", s] for s in SECTIONS), []),
                "--metrics",
                ",".join(EXTRA_METRICS),
                sys.executable,
                "-m",
                "study.cell.ncu_target",
                str(run_dir),
            ]
            status, note, text = _call(cmd, cfg.ncu.timeout_s)
            rows = parse_csv(text) if status == "ok" else []
            if status == "ok" and not rows:
                status, note = "unavailable", f"ncu wrote no metrics: {_message(text)}"
            if rows:
                meta = {
                    "run_id": run_dir.name,
                    "variant": cfg.variant.name,
                    "compile": cfg.compile.mode,
                }
                for r in rows:
                    r.update(meta, kernel_match=match(r["kernel"], kernel_rows))
                io.write_csv(run_dir / "ncu.csv", rows, "ncu")
                note = f"{len({r['kernel'] for r in rows})} kernel(s): {', '.join(names)}"
            out.update(ncu_status=status, ncu_note=note)
    if cfg.nsys.enabled:
        cmd = [
            cfg.nsys.binary,
            "profile",
            "--force-overwrite",
            "true",
            "-o",
            str(run_dir / "nsys"),
            sys.executable,
            "-m",
            "study.cell.ncu_target",
            str(run_dir),
        ]
        status, note, _ = _call(cmd, cfg.ncu.timeout_s)
        reports = list(run_dir.glob("nsys.nsys-rep"))
        if status == "ok" and not reports:
            status, note = "unavailable", f"nsys made no report: {note}"
        out.update(nsys_status=status, nsys_note=note if status != "ok" else str(reports[0].name))
    return out


def _call(cmd: list[str], timeout_s: float) -> tuple[str, str, str]:
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s, env=_env())
    except FileNotFoundError:
        return (
            "unavailable",
            f"{cmd[0]} not found on PATH (install Nsight, or set its binary= path)",
            "",
        )
    except subprocess.TimeoutExpired:
        return "unavailable", f"{cmd[0]} did not finish within {timeout_s:g}s", ""
    text = p.stdout + "\n" + p.stderr
    if p.returncode != 0 or "==ERROR==" in text:
        return (
            "unavailable",
            f"{Path(cmd[0]).name} failed (exit {p.returncode}): {_message(text)}",
            text,
        )
    return "ok", "", p.stdout
