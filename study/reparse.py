"""Re-read a sweep's traces with the current parser: ``python -m study.reparse SWEEP_DIR``.

After a change to the trace reading or the kernel classes, the kernels.csv files and the
trace-derived columns of each run.csv are derived again from the saved ``trace.json.gz``
(the Inductor join columns are kept), and runs.csv/revealed.csv are rebuilt. No GPU needed:
a GPU sweep can be re-read on a laptop. Cells without a trace are left as they are.
"""

from __future__ import annotations

import sys
from pathlib import Path

from study import io, trace

KEEP = ("source_file", "fused_ops", "inductor_kind")


def reparse_run(run_dir: Path) -> bool:
    path = run_dir / "trace.json.gz"
    if not path.exists() or not (run_dir / "run.csv").exists():
        return False
    row = io.read_csv(run_dir / "run.csv")[0]
    rows, summary = trace.parse(trace.load_events(path), row["device"])
    summary.pop("op_names", None)
    summary.pop("profile_note", None)
    old = (
        {k["kernel"]: k for k in io.read_csv(run_dir / "kernels.csv")}
        if (run_dir / "kernels.csv").exists()
        else {}
    )
    for k in rows:
        for c in KEEP:
            if old.get(k["kernel"], {}).get(c):
                k[c] = old[k["kernel"]][c]
    meta = {c: row[c] for c in ("run_id", "variant", "compile", "device", "dtype")}
    io.write_csv(run_dir / "kernels.csv", [{**meta, **k} for k in rows], "kernels")
    row.update({k: v for k, v in summary.items() if k in row})
    io.write_csv(run_dir / "run.csv", [row], "runs")
    return True


def main(sweep: Path) -> int:
    n = sum(reparse_run(p.parent) for p in io.run_csvs(sweep))
    io.aggregate(sweep)
    return n


if __name__ == "__main__":
    if len(sys.argv) != 2 or not (Path(sys.argv[1]) / "runs.csv").exists():
        sys.exit(
            "usage: python -m study.reparse SWEEP_DIR  (a sweep dir holds runs.csv, e.g. "
            "outputs/sweeps/<time>)"
        )
    print(f"re-read {main(Path(sys.argv[1]))} traces under {sys.argv[1]}")
