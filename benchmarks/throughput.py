"""How fast does a sweep go, and where does its time go? Prints figures; asserts nothing.

    python benchmarks/throughput.py quickstart                # variant=naive,flash compile=off,default
    python benchmarks/throughput.py part3 -- hydra/launcher=gpus   # any sweep: an experiment name
    python benchmarks/throughput.py --from outputs/sweeps/<time>   # re-read a finished sweep

Runs the sweep as a user would (``python -m study.run -m ...``) and prints its wall time; then,
from its rows: the measured work (first call with compile, check, measure, profile), the
median ``overhead_s`` of eager and of compiled cells (the sweep's own cost per cell: target
<= 1 s on the H200), ``prepare_s`` (asking for a cell to the forked cell starting), and the
wall time left over (Hydra's own per-job work, the warm parent's start); per GPU, its cells' time
and the gaps between them, and the time outside every cell; and the cells a minute
from the first cell's end to the last's (the steady rate, for one GPU against two). With
``--ref reference/h200`` it also compares kernels per step and the latency of GPU-bound cells
with the reference rows of the same cells (target: equal kernel counts, latency within 2%).
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

SWEEPS = {
    "quickstart": ["variant=naive,flash", "compile=off,default"],
    "part1": ["+experiment=part1"],
    "part2": ["+experiment=part2"],
    "part3": ["+experiment=part3"],
    "scaling": ["+experiment=scaling"],
}


def num(v):
    try:
        return float(v)
    except (TypeError, ValueError):
        return None


def run(name: str, out: Path, extra: list[str]) -> tuple[Path, float]:
    cmd = [sys.executable, "-m", "study.run", "-m", *SWEEPS.get(name, [name]), f"out_root={out}"]
    t = time.perf_counter()
    subprocess.run(cmd + extra, cwd=ROOT, check=False)
    return sorted((out / "sweeps").iterdir())[-1], time.perf_counter() - t


def report(sweep_dir: Path, wall: float | None, ref: Path | None) -> None:
    from study.rows import io
    from study.sweep.rundir import MEASURED

    rows = io.read_csv(sweep_dir / "runs.csv")
    work = sum(sum(num(r.get(k)) or 0.0 for k in MEASURED) for r in rows)
    print(f"\n{sweep_dir}: {len(rows)} cells, {rows[0].get('device_name', '?') if rows else '?'}")
    if wall is not None:
        print(
            f"  wall {wall:.1f} s; measured work {work:.1f} s; the rest {wall - work:.1f} s "
            f"({(wall - work) / max(1, len(rows)):.2f} s per cell above its measured work)"
        )
    for label, sel in (
        ("eager", lambda r: r["compile"] == "off"),
        ("compiled", lambda r: r["compile"] != "off"),
    ):
        oh = [
            num(r.get("overhead_s"))
            for r in rows
            if sel(r) and num(r.get("overhead_s")) is not None
        ]
        pre = [
            num(r.get("prepare_s")) for r in rows if sel(r) and num(r.get("prepare_s")) is not None
        ]
        if oh:
            print(
                f"  {label:8s} cells {len(oh):3d}: overhead_s median {statistics.median(oh):.2f} "
                f"(max {max(oh):.2f}); prepare_s median {statistics.median(pre):.3f}"
                if pre
                else f"  {label:8s} cells {len(oh):3d}: overhead_s median {statistics.median(oh):.2f}"
            )
    for line in lanes(rows, wall):
        print("  " + line)
    rate = steady_rate(rows)
    if rate:
        print(
            f"  {rate:.1f} cells a minute from the first cell's end to the last's (the sweep's "
            "start and its first cells left out: compare one and two GPUs on one machine)"
        )
    statuses = {}
    for r in rows:
        statuses[r["status"]] = statuses.get(r["status"], 0) + 1
    print("  statuses: " + ", ".join(f"{n} {s}" for s, n in sorted(statuses.items())))
    if ref is None or not (ref / "runs.csv").exists():
        return
    import csv

    with open(ref / "runs.csv") as f:
        reader = csv.DictReader(f)
        old = [r for r in reader if r["status"] == "ok"]
    # pass and mask where the reference has them (v1's rows predate both: all forward, causal)
    keys = [k for k in ("variant", "compile", "pass", "mask", "n", "batch", "seq_len", "dim",
                        "hidden", "in_features") if k in reader.fieldnames]  # fmt: skip
    kmiss, lat = [], []
    for r in rows:
        if r["status"] != "ok":
            continue
        match = [o for o in old if io.same_values(o, r, keys)]
        match = sorted(match, key=lambda o: ("part" not in o.get("source", ""), o.get("source")))
        if not match:
            continue
        o = match[0]
        if num(o["kernels_per_step"]) != num(r["kernels_per_step"]):
            kmiss.append(
                f"{r['variant']}/{r['compile']} {o['kernels_per_step']} -> {r['kernels_per_step']}"
            )
        # GPU-bound on both sides (v1's rows say it as cpu_bound)
        if (
            r.get("host_bound") == "False"
            and (o.get("host_bound") or o.get("cpu_bound")) == "False"
        ):
            lat.append(
                (r, o, 100 * (num(r["latency_median_us"]) / num(o["latency_median_us"]) - 1))
            )
    print(
        f"  against {ref}: {len(kmiss)} cells with other kernels per step"
        + (": " + "; ".join(kmiss) if kmiss else "")
    )
    if not lat:
        print("  GPU-bound cells: none GPU-bound in both this sweep and the reference")
    else:
        worst = max(lat, key=lambda x: abs(x[2]))
        within = sum(abs(x[2]) <= 2 for x in lat)
        print(
            f"  GPU-bound cells: {within} of {len(lat)} within 2% of the reference latency; worst "
            f"{worst[0]['variant']}/{worst[0]['compile']} {worst[2]:+.1f}% (source {worst[1]['source']})"
        )
        beyond = sorted((x for x in lat if abs(x[2]) > 2), key=lambda x: -abs(x[2]))
        for r, o, pct in beyond:
            print(
                f"    beyond 2%: {r['variant']}/{r['compile']} {pct:+.1f}% "
                f"({num(o['latency_median_us']):.1f} -> {num(r['latency_median_us']):.1f} us)"
            )


def lanes(rows: list[dict], wall: float | None) -> list[str]:
    """Where each GPU's time went: its cells' wall time, the gaps between them (the sweep's own
    per-cell cost outside the cell: the job, the fork, the row), and the time outside every
    cell (the sweep's start and end). ``started_at`` has whole seconds: about 1 s of error."""
    import datetime as dt

    by: dict[str, list[tuple[float, float]]] = {}
    for r in rows:
        try:
            t0 = dt.datetime.fromisoformat(r["started_at"]).timestamp()
            w = float(r["wall_s"])
        except (KeyError, TypeError, ValueError):
            continue
        by.setdefault(r.get("gpu_index") or "", []).append((t0, w))
    if not by:
        return []
    out = []
    for g, cells in sorted(by.items()):
        busy = sum(w for _, w in cells)
        span = max(t + w for t, w in cells) - min(t for t, _ in cells)
        gaps = max(0.0, span - busy)
        name = f"GPU {g}" if g else "the device" if len(by) == 1 else "no GPU index"
        out.append(
            f"{name}: {len(cells)} cells, busy {busy:.1f} s, gaps between cells {gaps:.1f} s "
            f"({gaps / max(1, len(cells) - 1):.2f} s each)"
        )
    if wall is not None:
        ends = [t + w for cells in by.values() for t, w in cells]
        starts = [t for cells in by.values() for t, _ in cells]
        out.append(
            f"outside every cell (the sweep's start and end): {wall - (max(ends) - min(starts)):.1f} s"
        )
    return out


def steady_rate(rows: list[dict]) -> float | None:
    """Cells a minute between the end of the first cell on each GPU and the end of the last
    (``started_at`` has whole seconds: about 1 s of error)."""
    import datetime as dt

    ends, firsts = [], {}
    for r in rows:
        try:
            end = dt.datetime.fromisoformat(r["started_at"]).timestamp() + float(r["wall_s"])
        except (KeyError, TypeError, ValueError):
            continue
        ends.append(end)
        g = r.get("gpu_index") or ""
        firsts[g] = min(firsts.get(g, end), end)
    if len(ends) <= len(firsts):
        return None
    t0 = max(firsts.values())
    n = sum(e > t0 for e in ends)
    return 60.0 * n / (max(ends) - t0) if n and max(ends) > t0 else None


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "sweep",
        nargs="?",
        default="quickstart",
        help="quickstart, part1..3, scaling, or an override",
    )
    ap.add_argument("--out", default="outputs/throughput")
    ap.add_argument("--ref", default="reference/h200")
    ap.add_argument("--from", dest="src", help="report on a finished sweep instead of running one")
    argv = sys.argv[1:]
    cut = argv.index("--") if "--" in argv else len(argv)
    a = ap.parse_args(argv[:cut])
    a.extra = argv[cut + 1 :]  # overrides for study.run, after --
    if a.src:
        report(Path(a.src), None, ROOT / a.ref)
        return
    d, wall = run(a.sweep, ROOT / a.out / a.sweep, a.extra)
    report(d, wall, ROOT / a.ref)


if __name__ == "__main__":
    main()
