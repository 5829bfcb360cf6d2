"""A cell's own process: ``python -m study.worker RUN_DIR``.

Reads ``RUN_DIR/cell.yaml`` (written by study.sweep), runs the cell and writes its files:
``kernels.csv`` and ``autotune.csv`` first, ``run.csv`` last, each atomically, so a run dir
with a ``run.csv`` is a finished cell. The parent chose the compile caches through this
process's environment before torch was imported.
"""

from __future__ import annotations

import sys
from pathlib import Path


def main(run_dir: Path) -> dict:
    from study import io
    from study.cell import run_cell
    from study.config import load_cell_config

    cfg = load_cell_config(str(run_dir / "cell.yaml"))
    row, kernels, autotune = run_cell(cfg, run_dir)
    io.write_csv(run_dir / "kernels.csv", kernels, "kernels")
    if autotune:
        io.write_csv(run_dir / "autotune.csv", autotune, "autotune")
    if cfg.ncu.enabled or cfg.nsys.enabled:
        if row["status"] == "ok" and row["device"] == "cuda":
            from study import ncu

            row.update(ncu.run(cfg, run_dir, kernels))
        else:
            why = f"cell status {row['status']}" if row["status"] != "ok" else "needs a CUDA device"
            for tool in ("ncu", "nsys"):
                if cfg[tool].enabled:
                    row[f"{tool}_status"], row[f"{tool}_note"] = "unavailable", f"not run: {why}"
    io.write_csv(run_dir / "run.csv", [row], "runs")
    return row


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python -m study.worker RUN_DIR   (RUN_DIR holds cell.yaml)")
    r = main(Path(sys.argv[1]))
    sys.exit(0)
