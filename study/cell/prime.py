"""The primer of a ``start=warm|artifacts`` cell (study.cell.start), in a fresh interpreter:
``python -m study.cell.prime PRIME_DIR START [PARENT_PID]`` (with a parent, it dies with it). It builds the cell of ``PRIME_DIR/cell.yaml``,
compiles it and makes its first call (the cell's own phases, under ``start=cold``); for
``artifacts`` it saves ``torch.compiler.save_cache_artifacts()`` into
``PRIME_DIR/cache_artifacts.bin``. What it reports (``primed.json``): its status, first call,
compile seconds and cache hits.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from study.cell import compiling
from study.cell import start as start_
from study.cell.failures import classify_error
from study.cell.phases import Cell
from study.config.cell_config import load_cell_config
from study.lifeline import die_with


def main(prime_dir: Path, start: str) -> int:
    """The primer: the cell of ``prime_dir/cell.yaml`` built, compiled and called once; for
    ``artifacts``, the caches it filled saved into ``prime_dir/cache_artifacts.bin``."""
    cfg = load_cell_config(str(prime_dir / "cell.yaml"))
    compiling.configure(cfg.compile.threads)
    import torch

    torch.set_num_threads(len(os.sched_getaffinity(0)))
    cell = Cell(cfg, prime_dir)
    out = {"status": "ok", "reason": ""}
    try:
        cell.build()
        with cell.stack:
            cell.compile()
            cell.first_call()
        if start == "artifacts":
            saved = torch.compiler.save_cache_artifacts()
            if saved is None:
                raise RuntimeError("save_cache_artifacts() returned nothing")
            data, info = saved
            (prime_dir / start_.ARTIFACTS).write_bytes(data)
            out["saved"] = start_.kinds(info)
    except Exception as e:  # noqa: BLE001 - reported to the cell, which fails with it
        e = cell._whose(e, eager_again=cell.mode != "off" and hasattr(cell, "eager"))
        status, reason = classify_error(e, cell.caught)
        out.update(status=status, reason=reason[:400])
    out.update({k: cell.row.get(k) for k in ("first_call_s", "compile_s", "cache_hits")})
    (prime_dir / start_.PRIMED).write_text(json.dumps(out, default=str))
    print(json.dumps(out, default=str), flush=True)
    return 0


if __name__ == "__main__":
    if len(sys.argv) > 3:  # before torch's import: a killed cell takes its primer with it
        die_with(int(sys.argv[3]))
    sys.exit(main(Path(sys.argv[1]), sys.argv[2]))
