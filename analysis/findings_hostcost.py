"""Host cost across machines: a call's host µs and host units on each H200 machine, and the
paired speedup predicted from the other machines. Part of ``python -m analysis.findings``.

Reads ``DIR/host_machines/<machine>/runs.csv`` (``benchmarks/host_machines.sh`` writes one per
machine; ``machine.md`` names its boot). Every figure comes from rows that measured host time
directly (``host_us``: blocks of calls issued behind queued GPU sleep, study.cell.host_cost):
per cell, host µs and host units (host µs over the host gauge's µs around the same blocks) on
each machine, from fast-phase blocks only, with the machine's host speed G beside them; then,
per machine and compiled cell, the measured paired speedup against the one
``analysis.host_model.leave_one_out`` predicts from the other machines (host µs scaled as
G ** alpha, alpha fitted on the others). A section without such rows says so in one line.
"""

from __future__ import annotations

import re

import pandas as pd

from analysis import host_model
from analysis.findings_common import table
from analysis.measures import sig

MIN_FAST = 5  # a row's host figures count here when this many of its blocks ran fast


def _machines(d) -> dict:
    """{machine dir name: (its rows, its boot id)} under ``d/host_machines``."""
    out = {}
    for m in sorted((d / "host_machines").glob("*/runs.csv")) if d else []:
        boot = re.search(r"boot_id (\w{8})", (m.parent / "machine.md").read_text()) if (
            m.parent / "machine.md").exists() else None  # fmt: skip
        out[m.parent.name] = (pd.read_csv(m, low_memory=False), boot.group(1) if boot else "?")
    return out


def _label(cell: str) -> str:
    """'cudnn|fwd|bf16|…|default' -> 'cudnn default' (n=64 where given)."""
    parts = cell.split("|")
    n = dict(zip(["variant", "pass", "dtype", *host_model.SHAPE_KEYS], parts, strict=False)).get("n")
    size = f" n={n.split('.')[0]}" if n else ""
    return f"{parts[0]}{size} {parts[-1]}"


def _measured(x) -> str:
    """'0.985x [0.98–0.99] (host slow)': the paired speedup, its 95% interval over the row's
    pairs, and its host phase where it was not the fast one."""
    iv = f" [{x.low:.2f}–{x.high:.2f}]" if pd.notna(x.low) and pd.notna(x.high) else ""
    mark = "" if str(x.phase) in ("fast", "nan", "None") else f" (host {x.phase})"
    return f"{x.measured:.3f}x{iv}{mark}"


def section(data: dict) -> list[str]:
    machines = _machines(data.get("dir"))
    if len(machines) < 2:
        return ["", "_Host cost across machines: needs `host_machines/<machine>/runs.csv` of two "
                "machines or more (benchmarks/host_machines.sh), not in these results._"]  # fmt: skip
    rows = pd.concat([r.assign(machine=m) for m, (r, _) in machines.items()],
                     ignore_index=True).copy()  # fmt: skip
    rows = rows[rows["status"] == "ok"]
    fast = rows[pd.to_numeric(rows["host_blocks_fast"], errors="coerce") >= MIN_FAST].copy()
    fast["cell"] = host_model.cell_key(fast) + "|" + fast["compile"].astype(str)
    names = list(machines)
    body = []
    for cell, x in fast.groupby("cell", sort=True):
        by = x.groupby("machine").median(numeric_only=True)
        cells = [
            f"{sig(by.loc[m, 'host_us'], 3)} µs, {sig(by.loc[m, 'host_units'], 3)} u at G "
            f"{sig(by.loc[m, 'host_gauge_us'], 3)}" if m in by.index else "–"
            for m in names
        ]
        u = by["host_units"]
        spread = f"{u.max() / u.min() - 1:.0%}" if len(u) > 1 else "–"
        body.append([_label(cell), *cells, spread])
    lo = host_model.leave_one_out(host_model.cells(rows))
    pred = [[x.machine, x.variant, sig(x.g, 3), _measured(x), f"{x.predicted:.3f}",
             f"{x.alpha:.2f}", f"{x.err:+.1%}"] for x in lo.itertuples()]  # fmt: skip
    boots = ", ".join(f"{m} boot {b}" for m, (_, b) in machines.items())
    worst = lo["err"].abs().max() if len(lo) else float("nan")
    within = int((lo["err"].abs() <= 0.15).sum())
    return [
        "",
        "## Host cost across machines",
        "",
        f"{len(machines)} H200 machines ({boots}), the host-bound ladder eager and under "
        "`default` (`results/h200/host_machines`). Each cell's host µs per call and host units "
        "(u: host µs over the gauge's µs around the same blocks) on each machine, from "
        f"fast-phase blocks only (at least {MIN_FAST}), with the host speed G (gauge µs) they "
        "ran at; the spread is the largest over the smallest units, less 1.",
        "",
        *table(["cell", *names, "spread of units"], body),
        "",
        "The paired speedup under `default` on each machine, against the one predicted from the "
        "other machines at the row's own G: latency ≈ max(device µs, host µs at G), host µs "
        "scaled as G ** alpha (alpha fitted on the other machines). "
        f"{within} of {len(lo)} lie within ±15%, the worst {worst:.1%} off.",
        "",
        *table(["machine", "cell", "G µs", "measured (paired, 95% over pairs)", "predicted",
                "alpha", "error"], pred),
    ]
