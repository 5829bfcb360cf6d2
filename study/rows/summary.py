"""The end of a sweep, said from its rows: statuses, the cells that are not ok, broken predictions,
where the rows are, the report command, and the exit status.

Exit status 1 when a cell failed for a reason of the harness (``crash``, or ``error`` outside
compile and outside the user's own workload); ``unsupported``, ``oom``, ``mismatch``, ``timeout``, ``invalid`` and compile errors
are results, not failures of the command.
"""

from __future__ import annotations

import os
import shlex
import sys
import time
from collections import Counter
from pathlib import Path

from study.rows import io, metrics


def harness_failure(row: dict) -> bool:
    """A crash, or an error that is neither the compiler's (``compile:``) nor the user's own
    workload's (``workload:``, study.cell.failures.WorkloadError)."""
    return row["status"] == "crash" or (
        row["status"] == "error" and not row.get("reason", "").startswith(("compile:", "workload:"))
    )


SHOW_SURPRISES = 5  # broken predictions printed at the end of a sweep (the rest: revealed.csv)


def summary(sweep_dir: Path, t0: float = 0.0, planned: list[str] | None = None) -> int:
    """Print what the sweep (or a single run's dir) gave; 1 when a cell failed for a reason of
    the harness, or a planned cell (``planned``: its run dir names) has no row in runs.csv,
    else 0. ``t0``: when it started (its time is said)."""
    path = sweep_dir / "runs.csv"
    try:
        rows = io.read_whole(path) if path.exists() else []
    except io.Incomplete as e:
        print(f"[study] {path} is unreadable ({e}): python -m study.rows.io {sweep_dir} "
              "rebuilds it", file=sys.stderr, flush=True)  # fmt: skip
        rows = []
    listed = {r.get("run_id") for r in rows}
    lost = [d for d in dict.fromkeys(planned or []) if d not in listed]
    took = f" in {time.time() - t0:.0f} s" if t0 else ""
    counts = Counter(r.get("status") or "?" for r in rows) + Counter({"without a row": len(lost)})
    print(
        f"[study] done: {len(rows) + len(lost)} cells{took}: "
        + ", ".join(f"{n} {s}" for s, n in counts.most_common()),
        flush=True,
    )
    for r in rows:
        if r.get("status") != "ok":
            why = (r.get("reason") or "")[:200]
            print(f"[study]   {r.get('run_id')}: {r.get('status')} ({why})", flush=True)
    for d in lost:
        print(
            f"[study]   {d}: no row (see the lines above; its files: {sweep_dir / d})", flush=True
        )
    for line in phase_lines(rows) + apart_lines(rows):
        print(f"[study] {line}", flush=True)
    print(
        f"[study] rows: {path}\n[study] report: "
        + shlex.join(["python", "-m", "analysis.report", str(sweep_dir)]),
        flush=True,
    )
    checked = sum(int(float(r.get("expectations") or 0)) for r in rows)
    broke = [r for r in rows if float(r.get("surprises") or 0) > 0]
    if checked:
        n = sum(int(float(r["surprises"])) for r in broke)
        print(
            f"[study] predictions: {checked} checked, {n} surprise(s) in {len(broke)} cell(s)"
            + (":" if broke else ""),
            flush=True,
        )
        for r in broke[:SHOW_SURPRISES]:
            print(f"[study]   {r['run_id']}: {r['surprise_detail'][:300]}", flush=True)
        if len(broke) > SHOW_SURPRISES:
            print(f"[study]   ... and {len(broke) - SHOW_SURPRISES} more: revealed.csv", flush=True)
    failed = [r for r in rows if harness_failure(r)]
    if failed or lost:
        print(
            f"[study] {len(failed) + len(lost)} cell(s) failed for a reason of the harness "
            "(crash, error outside compile, or no row): exit status 1. Their logs: "
            "<run dir>/cell.log, error.txt",
            file=sys.stderr,
            flush=True,
        )
        return 1
    return 0


def spare_cores(rows: list[dict], allowed: list[int] | None = None) -> list[int]:
    """Cores this process may use that no cell ran on and the sweep does not keep (the first
    one, ``cores=auto``): those ``cores=`` could give a contended cell. None on a 2-core
    machine whose second core ran the cells."""
    have = sorted(allowed if allowed is not None else os.sched_getaffinity(0))
    used = set(have[:1])
    for r in rows:  # cpu_cores reads '1' or '0-3,8' (study.config.cores, not imported: rows
        for part in str(r.get("cpu_cores") or "").split(","):  # come before the config)
            lo, _, hi = part.strip().partition("-")
            if lo.isdigit() and (hi or lo).isdigit():
                used.update(range(int(lo), int(hi or lo) + 1))
    return [c for c in have if c not in used]


def _spelled(cores: list[int]) -> str:
    """[2, 3, 4, 5] -> '2-5'; [2, 5] -> '2,5'."""
    if cores == list(range(cores[0], cores[-1] + 1)) and len(cores) > 1:
        return f"{cores[0]}-{cores[-1]}"
    return ",".join(map(str, cores))


def phase_lines(rows: list[dict], allowed: list[int] | None = None) -> list[str]:
    """What the sweep says about the host's phase (study.measure.host_gauge): how many rows were not timed in
    its fast phase, and what to do (``cores=`` only where a core is spare: ``spare_cores``);
    and when the host never held its fast phase at all (host units only where CUDA rows
    measured them)."""
    timed = [r for r in rows if r.get("timing_phase")]
    off = Counter(r["timing_phase"] for r in timed if r["timing_phase"] != "fast")
    out = []
    if off:
        what = ", ".join(f"{n} {p}" for p, n in off.most_common())
        todo = []
        if off.keys() & {"slow", "mixed"}:
            todo.append("run those cells again (resume=true keeps the rest) or raise timing.max_s")
        spare = spare_cores(rows, allowed)
        if "contended" in off and spare:
            todo.append(f"give the cells cores nothing else uses (cores={_spelled(spare)})")
        elif "contended" in off:
            todo.append("other programs took CPU from the cells' cores and no core is spare: "
                        "run again with the machine quieter")  # fmt: skip
        out.append(
            f"{sum(off.values())} of {len(timed)} rows were not timed in the host's fast phase "
            f"({what}): their figures are that phase's; " + "; ".join(todo)
        )
    unheld = [r for r in timed if str(r.get("gauge_held")).lower() in ("false", "0", "0.0")]
    if unheld:
        cuda = any(r.get("device") == "cuda" for r in unheld)
        out.append(
            f"this host never held its fast phase ({len(unheld)} rows, gauge_held false): no "
            "row is called fast against its slow level"
            + ("; host_units still carry each call's cost to a faster host" if cuda else "")
        )
    return out


def apart_lines(rows: list[dict]) -> list[str]:
    """Compiled cells whose latencies timed apart (the eager cell's over this one's, two
    processes: ``speedup``) disagree with the paired speedup beyond its interval
    (``metrics.apart_note``): one line each, saying why, and which one is the speedup."""
    phase = {r.get("config_hash"): r.get("timing_phase") for r in rows if r.get("compile") == "off"}
    out = []
    for r in rows:
        if r.get("status") != "ok" or r.get("compile") in (None, "", "off"):
            continue
        sides = (r.get("timing_phase"), phase.get(r.get("eager_hash")))
        busy = any(p not in (None, "", "fast") for p in sides)
        note = metrics.apart_note(r.get("speedup"), r.get("speedup_paired"),
                                  r.get("speedup_ci_low"), r.get("speedup_ci_high"), busy)  # fmt: skip
        if note:
            out.append(f"{r.get('run_id')}: {note}; its speedup is the paired "
                       f"{float(r['speedup_paired']):.2f}x (eager and compiled timed in "
                       "alternating blocks in one process)")  # fmt: skip
    return out
