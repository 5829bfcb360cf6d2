"""Host cost across machines: does a cell's host cost in units of the host's speed carry from
one machine to another, and does latency ~ max(device us, units x G) predict its speedup?
Prints tables; asserts nothing.

    python benchmarks/host_model.py reference/h200/host_machines/m1 m2 m3 ...

Each DIR holds one machine's runs.csv (benchmarks/host_machines.sh writes it) and its
machine.md (boot id) and survey.md (python -m study.measure.host_gauge: the host's fast level). Prints,
per machine, its boot id and host speed; per cell, its host units on each machine and their
spread; and per machine and cell, the paired speedup predicted from the other machines (leave
one machine out, analysis.tables.host_model) against the measured one, with the crossover host speed.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from analysis.tables import host_model  # noqa: E402


def machine(d: Path) -> dict:
    txt = (d / "machine.md").read_text() if (d / "machine.md").exists() else ""
    boot = re.search(r"boot_id (\S+)", txt)
    survey = (d / "survey.md").read_text() if (d / "survey.md").exists() else ""
    levels = re.findall(r"fast level ([\d.]+) us.*?(\d+)% of them", survey)
    return {"machine": d.name, "boot_id": boot.group(1)[:8] if boot else "?",
            "fast level us (share fast)": ", ".join(f"{a} ({b}%)" for a, b in levels)}  # fmt: skip


def main(argv: list[str]) -> None:
    if not argv:
        sys.exit("usage: python benchmarks/host_model.py DIR [DIR ...]  (each with a runs.csv)")
    dirs = [Path(a) for a in argv]
    rows = pd.concat([pd.read_csv(d / "runs.csv", low_memory=False).assign(machine=d.name)
                      for d in dirs])  # fmt: skip
    pd.set_option("display.width", 200)
    print(pd.DataFrame([machine(d) for d in dirs]).to_string(index=False), "\n")
    for col in ("host_units", "host_us"):
        t = host_model.units_spread(rows, col)
        print(f"{col} per cell (fast-phase blocks only), and the spread across machines")
        print(t.round(2).to_string(), "\n")
    c = host_model.cells(rows)
    print(f"alpha fitted on all machines: {host_model.fit_alpha(c):.2f}\n")
    for alpha, what in ((1.0, "units x G (alpha = 1)"), (None, "alpha fitted without it")):
        lo = host_model.leave_one_out(c, alpha)
        print(f"paired speedup, measured against predicted from the other machines, host time "
              f"{what}; G: the row's host speed, gauge us")  # fmt: skip
        print(lo.drop(columns=["cell"]).round(3).to_string(index=False))
        print(
            f"within +-15%: {(lo['err'].abs() <= 0.15).sum()} of {len(lo)}; "
            f"worst {lo['err'].abs().max():.1%}\n"
        )


if __name__ == "__main__":
    main(sys.argv[1:])
