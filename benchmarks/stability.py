"""Do the numbers hold up across fresh processes? Prints a table; asserts nothing.

    python benchmarks/stability.py                                  # the issue's cells, 5 repeats
    python benchmarks/stability.py --cells naive/default,flash/default --repeats 2 -- +experiment=tiny
    python benchmarks/stability.py --from outputs/sweeps/<time>     # re-read a finished sweep

Surveys the host first (``python -m study.measure.host_gauge``'s line: it says when the host is mostly slow
or never held its fast phase, so the figures below are read as that host's), then runs one
sweep of the cells with ``repeats=N`` (each repeat of each cell in a fresh process,
every cell once before any cell twice), then prints per cell: the per-call median of each
repeat, how far the worst one sits from the median of the N (the target is +-5% on the H200),
the host probe of each repeat (study.measure.host_load.host_probe_us: did the host itself
slow down?) and its correlation with the cell's latency, the paired speedup of each repeat and
its spread (+-5%), and the widest 95% interval relative
to its speedup (narrower than +-10%); then which host phase each repeat's figures come from
(study.measure.host_gauge: ``fast`` and the share of rounds that ran fast), the gauge's fast and slow levels,
and the speedup over the slow-phase pairs alone (how far the slow phase would have moved it). Eager cells that are GPU-bound are compared with the
same cells in ``--ref`` (reference/h200, source part3/part2; target within 2%). Extra arguments
after ``--`` go to ``python -m study.run``.
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

DEFAULT = (
    "linear/default,cudnn/default,flash/default,sdpa/default,"
    "linear/off,cudnn/off,flash/off,sdpa/off,naive/off"
)


def sweep(cells: list[tuple[str, str]], repeats: int, out: Path, extra: list[str]) -> Path:
    variants = ",".join(dict.fromkeys(v for v, _ in cells))
    modes = ",".join(dict.fromkeys(m for _, m in cells))
    cmd = [sys.executable, "-m", "study.run", "-m", f"variant={variants}", f"compile={modes}"]
    cmd += [f"repeats={repeats}", f"out_root={out}", *extra]
    t = time.perf_counter()
    # the host's fast level first, so that the sweep's first cells know it too (study.measure.host_gauge)
    cal = [x for x in extra if x.startswith("calibration_file=")][-1:]
    subprocess.run([sys.executable, "-m", "study.measure.host_gauge", *cal], cwd=ROOT, check=False)
    subprocess.run(cmd, cwd=ROOT, check=False)
    print(f"sweep: {len(cells)} cells x {repeats} repeats in {time.perf_counter() - t:.0f} s")
    return sorted((out / "sweeps").iterdir())[-1]


def pct(a, b) -> float:
    return 100.0 * (a - b) / b


def report(sweep_dir: Path, cells, ref: Path | None) -> None:
    from study.rows import io

    rows = [r for r in io.read_csv(sweep_dir / "runs.csv") if r["status"] == "ok"]
    want = set(cells) if cells else None
    groups: dict[tuple, list[dict]] = {}
    for r in rows:
        key = (r["variant"], r["compile"])
        if want is None or key in want:
            groups.setdefault(key, []).append(r)
    host = rows[0]["device_name"] if rows else "?"
    print(f"\n{sweep_dir}  ({host}, torch {rows[0]['torch_version'] if rows else '?'})")
    print(
        f"{'cell':22s} {'n':>2s}  {'per-call median of each repeat, us':42s} {'worst':>7s}  "
        f"{'speedup_paired of each repeat':34s} {'worst':>7s} {'CI half':>8s} loaded"
    )
    for (v, m), rs in sorted(groups.items()):
        lat = [float(r["latency_median_us"]) for r in rs]
        med = statistics.median(lat)
        worst = max(abs(pct(x, med)) for x in lat)
        sp = [float(r["speedup_paired"]) for r in rs if r.get("speedup_paired")]
        sp_txt = sp_worst = ci = ""
        if sp:
            sm = statistics.median(sp)
            sp_txt = " ".join(f"{x:.3f}" for x in sp)
            sp_worst = f"{max(abs(pct(x, sm)) for x in sp):5.1f}%"
            half = [
                (float(r["speedup_ci_high"]) - float(r["speedup_ci_low"]))
                / 2
                / float(r["speedup_paired"])
                for r in rs
                if r.get("speedup_paired")
            ]
            ci = f"{100 * max(half):6.1f}%"
        loaded = sum(r.get("host_loaded") == "True" for r in rs)
        phases = " ".join(
            f"{r.get('timing_phase') or '?'}:{float(r['phase_fast_share']):.0%}"
            if r.get("phase_fast_share")
            else (r.get("timing_phase") or "?")
            for r in rs
        )
        gauges = " ".join(
            f"{float(r['gauge_fast_us']):.1f}/{float(r['gauge_slow_us']):.1f}"
            if r.get("gauge_slow_us")
            else f"{float(r['gauge_fast_us']):.1f}/-"
            for r in rs
            if r.get("gauge_fast_us")
        )
        slow = " ".join(
            f"{float(r['speedup_paired_slow']):.3f}" if r.get("speedup_paired_slow") else "-"
            for r in rs
        )
        probe = [float(r["host_probe_us"]) for r in rs if r.get("host_probe_us")]
        print(
            f"{v + '/' + m:22s} {len(rs):2d}  {' '.join(f'{x:.1f}' for x in lat):42s} "
            f"{worst:6.1f}%  {sp_txt:34s} {sp_worst:>7s} {ci:>8s} {loaded}/{len(rs)}"
        )
        print(f"{'':25s} phase:fast share of each repeat: {phases}")
        fast = [r for r in rs if r.get("timing_phase") == "fast"]
        if 1 < len(fast) < len(rs):  # what the analysis uses: a cell's fast-phase repeats
            fl = [float(r["latency_median_us"]) for r in fast]
            fs = [float(r["speedup_paired"]) for r in fast if r.get("speedup_paired")]
            print(
                f"{'':25s} the {len(fast)} fast-phase repeats alone: per-call worst "
                f"{max(abs(pct(x, statistics.median(fl))) for x in fl):.1f}%"
                + (
                    f", speedup_paired worst {max(abs(pct(x, statistics.median(fs))) for x in fs):.1f}%"
                    if fs
                    else ""
                )
            )
        print(f"{'':25s} gauge fast/slow level of each repeat, us: {gauges}")
        if sp:
            print(f"{'':25s} speedup over the slow-phase pairs alone: {slow}")
            story = [
                float(r["eager_latency_paired_us"])
                / float(r["latency_median_us"])
                / float(r["speedup_paired"])
                - 1
                for r in rs
                if r.get("speedup_paired") and r.get("eager_latency_paired_us")
            ]
            print(
                f"{'':25s} one story: eager/compiled per-call latency against speedup_paired, "
                f"each repeat: {' '.join(f'{100 * x:+.1f}%' for x in story)} (target within 20%)"
            )
        if len(probe) == len(lat) > 1:
            flat = len(set(probe)) < 2 or len(set(lat)) < 2
            r_ = 0.0 if flat else statistics.correlation(probe, lat)  # Pearson's r
            print(
                f"{'':25s} host probe of each repeat, us: {' '.join(f'{x:.0f}' for x in probe)}"
                f"  (spread {max(abs(pct(x, statistics.median(probe))) for x in probe):.1f}%,"
                f" correlation with the per-call median {r_:+.2f})"
            )
    if ref is None or not (ref / "runs.csv").exists():
        return
    import csv

    with open(ref / "runs.csv") as f:
        old = [r for r in csv.DictReader(f) if r["status"] == "ok" and r["compile"] == "off"]
    print(f"\nGPU-bound eager cells against {ref} (same variant, shape; source part3/part2/part1):")
    for (v, m), rs in sorted(groups.items()):
        if m != "off" or any(r.get("host_bound") == "True" for r in rs):
            continue
        base = [
            r
            for r in old
            if r["variant"] == v
            and r["source"] in ("part3", "part2", "part1")
            and io.same_values(r, rs[0], ("seq_len", "n", "batch"))
        ]
        if base:
            now = statistics.median(float(r["latency_median_us"]) for r in rs)
            then = float(base[0]["latency_median_us"])
            print(f"  {v}/off: {now:.1f} us now, {then:.1f} us in {ref} ({pct(now, then):+.1f}%)")


def survey(seconds: float, calibration_file: str | None = None) -> str:
    """The host's survey (``python -m study.measure.host_gauge``), recorded beside the ceilings the
    sweep's cells read (``calibration_file``) as the study does: its line says when the host is
    mostly slow or never held its fast phase."""
    from study.measure import host_gauge
    from study.measure.calibrate import cache_path

    where = cache_path(calibration_file).with_name(host_gauge.HOST_LEVEL_FILE)
    ph, why = host_gauge.survey_and_record(where, seconds)
    return host_gauge.describe(ph, seconds) + (f" ({why})" if why else "")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cells", default=DEFAULT, help="variant/mode,... (default: %(default)s)")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--out", default="outputs/stability")
    ap.add_argument("--ref", default="reference/h200")
    ap.add_argument("--from", dest="src", help="report on a finished sweep instead of running one")
    ap.add_argument("--survey-s", type=float, default=5.0, help="the host survey before the sweep")
    argv = sys.argv[1:]
    cut = argv.index("--") if "--" in argv else len(argv)
    a = ap.parse_args(argv[:cut])
    a.extra = argv[cut + 1 :]  # overrides for study.run, after --
    cells = [tuple(c.split("/")) for c in a.cells.split(",") if c]
    if not a.src:  # the host first: a mostly slow one says so, before any figure
        cal = [x.split("=", 1)[1] for x in a.extra if x.startswith("calibration_file=")]
        print(survey(a.survey_s, cal[-1] if cal else None), flush=True)
    d = Path(a.src) if a.src else sweep(cells, a.repeats, ROOT / a.out, a.extra)
    report(d, cells if not a.src else None, ROOT / a.ref if a.ref else None)


if __name__ == "__main__":
    main()
