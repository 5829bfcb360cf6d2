"""Does every CUDA row's host figure hold? Prints the worst host-over-latency ratios; asserts
nothing. Reads runs.csv only (no torch, no GPU):

    python benchmarks/host_check.py SWEEP_OR_RUNS_CSV [...]

A steady loop cannot spend more host time a call than the call's own latency, so a host
figure above its latency is a broken figure (issue "Your model, measured"). For each ``ok``
CUDA row with host units, two ratios to ``latency_median_us``:

- raw: ``host_block_us``, the blocks' own µs at the host speed they ran at (rows from before
  that column: ``host_us``);
- at equal host speed: ``host_units x timing_gauge_us``, the blocks' cost at the speed the
  latency was timed at (what ``host_us`` is since a49a542, before any blanking); rows from
  before ``timing_gauge_us`` take ``gauge_own_us``, the level the cell's gauge held.

The table lists the worst rows with their ``host_status`` (measured, above_latency, serial,
not_covered, queue_full); a row whose ratio at equal speed exceeds its latency p90 must read
``above_latency`` with ``host_us`` blank, and the last line says whether any does not.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pandas as pd

LABEL = ["variant", "compile", "pass", "regime"]


def rows(paths: list[Path]) -> pd.DataFrame:
    """The runs.csv of each sweep dir (or the CSV itself), concatenated, with its source."""
    frames = []
    for p in paths:
        csv = p / "runs.csv" if p.is_dir() else p
        if not csv.is_file():
            sys.exit(f"host_check: no runs.csv at {p}: give a sweep dir or a runs.csv")
        frames.append(pd.read_csv(csv, low_memory=False).assign(source=str(p)))
    return pd.concat(frames, ignore_index=True)


def ratios(r: pd.DataFrame) -> pd.DataFrame:
    """ok CUDA rows with host units: raw and equal-speed ratios to the latency median, and
    whether a ratio above the p90 was blanked as it must be."""

    def num(c):
        return pd.to_numeric(r[c], errors="coerce") if c in r else pd.Series(float("nan"), r.index)

    keep = r["status"].eq("ok") & r["device"].eq("cuda") & num("host_units").gt(0)
    r = r[keep].copy()
    lat, p90 = num("latency_median_us")[keep], num("latency_p90_us")[keep]
    block = num("host_block_us")[keep].fillna(num("host_us")[keep])
    timed = num("timing_gauge_us")[keep].fillna(num("gauge_own_us")[keep])  # older rows
    equal = num("host_units")[keep] * timed
    r["raw"], r["equal_speed"] = block / lat, equal / lat
    status = r["host_status"] if "host_status" in r else pd.Series(pd.NA, index=r.index)
    r["host_status"] = status.fillna("(before host_status)")
    over = equal > p90
    r["unflagged"] = over & r["host_status"].eq("measured")
    return r


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("paths", nargs="+", type=Path)
    ap.add_argument("--worst", type=int, default=12, help="rows listed (default 12)")
    a = ap.parse_args(argv)
    r = ratios(rows(a.paths))
    if r.empty:
        print("no ok CUDA row with host units in these CSVs")
        return 0
    label = [c for c in LABEL if c in r]
    cols = [*label, "latency_median_us", "raw", "equal_speed", "host_status", "source"]
    worst = r.sort_values("equal_speed", ascending=False).head(a.worst)
    print(worst[cols].to_string(index=False, float_format=lambda x: f"{x:.3g}"))
    print(f"\n{len(r)} ok CUDA rows; status: {r['host_status'].value_counts().to_dict()}")
    print(f"worst host/latency: raw {r['raw'].max():.3g}, at equal host speed "
          f"{r['equal_speed'].max():.3g}")  # fmt: skip
    meas = r[r["host_status"].eq("measured")]
    if len(meas):
        print(f"worst among rows reported (measured): raw {meas['raw'].max():.3g}, at equal "
              f"host speed {meas['equal_speed'].max():.3g}")  # fmt: skip
    bad = int(r["unflagged"].sum())
    print(f"rows above their latency p90 still reported: {bad}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
