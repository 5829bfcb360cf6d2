"""Does every core of this host run at the same speed, all the time? Prints; asserts nothing.

    python benchmarks/core_speed.py [ROUNDS] [--cores 0-3]

One process pins itself to each allowed core in turn, ROUNDS times over, and times the study's
host probe there (``study.measure.host_load.host_probe_us``: 50 tiny CPU tensor additions, the kind of
work a host-bound cell does). A row per round, a column per core, then each core's range.
On a quiet machine with dedicated cores every column reads the same and stays put; where a
core's reading moves between rounds (a virtual CPU sharing its physical core with someone
else, frequency changes), host-bound latencies move with it, whatever the pinning: compare
such cells within one process only (``speedup_paired``), with ``repeats`` for their spread.
No GPU needed.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from study.config.cores import parse_cores  # noqa: E402
from study.measure.host_load import host_probe_us  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("rounds", nargs="?", type=int, default=5)
    ap.add_argument("--cores", help="e.g. 0-3 (default: every core this process may use)")
    a = ap.parse_args()
    cores = parse_cores(a.cores) if a.cores else sorted(os.sched_getaffinity(0))
    host_probe_us()  # first use: imports and lazy initialisation out of the figures
    print("host_probe_us per core, one row per round (a few ms per reading)")
    print("round  " + " ".join(f"{'core ' + str(c):>9s}" for c in cores))
    seen: dict[int, list[float]] = {c: [] for c in cores}
    t0 = time.monotonic()
    for r in range(a.rounds):
        row = []
        for c in cores:
            os.sched_setaffinity(0, {c})
            v = host_probe_us()
            seen[c].append(v)
            row.append(f"{v:9.0f}")
        print(f"{r:5d}  " + " ".join(row))
    print(f"\n{a.rounds} rounds in {time.monotonic() - t0:.1f} s")
    allv = [v for vs in seen.values() for v in vs]
    for c, vs in seen.items():
        print(f"core {c}: {min(vs):.0f}-{max(vs):.0f} us ({max(vs) / min(vs):.2f}x)")
    print(f"every reading: {min(allv):.0f}-{max(allv):.0f} us ({max(allv) / min(allv):.2f}x)")


if __name__ == "__main__":
    main()
