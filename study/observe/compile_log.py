"""A structured compile log per compiled cell: torch's TORCH_TRACE log (what tlparse reads:
each graph Dynamo captured, its guards, AOTAutograd's and Inductor's graphs, the generated code,
cache hits and misses, compile times), written into the cell's ``compile_log/``.

TORCH_TRACE is read once, when torch is imported, and a cell's process is forked from a warm
parent that imported torch long before: so ``start`` sets the variable and puts a fresh trace
handler on torch's trace logger itself (``torch._logging._internal``: ``LOG_TRACE_HANDLER``
reset, then ``_init_logs``, which builds the handler from TORCH_TRACE). The log costs little:
about 2–5% of a small CPU compile (0.80–0.81 s plain against 0.82–0.84 s logged, torch 2.13).

``render``: where ``tlparse`` is on PATH (``pip install tlparse``, the ``trace`` extra), its
HTML index goes into ``generated/tlparse/``; without it the row keeps the raw log and a note
says how to render it. A failed render is a note, never the cell's failure.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

LOG_DIR = "compile_log"
INDEX = "generated/tlparse/index.html"
RENDER_S = 120  # tlparse's time limit: a note past it


def start(run_dir: Path) -> Path:
    """Route torch's structured trace log of this process into ``run_dir/compile_log``."""
    import torch._logging._internal as internal

    where = (Path(run_dir) / LOG_DIR).resolve()
    where.mkdir(parents=True, exist_ok=True)
    os.environ["TORCH_TRACE"] = str(where)
    old = internal.LOG_TRACE_HANDLER
    if old is not None:
        internal.trace_log.removeHandler(old)
    internal.LOG_TRACE_HANDLER = None  # _init_logs builds a new one from TORCH_TRACE
    internal._init_logs()
    return where


def render(run_dir: Path) -> tuple[dict, str | None]:
    """({'compile_log', 'tlparse_index'}, a note or None) for a cell whose log is in
    ``run_dir/compile_log``; nothing where it has none."""
    run_dir = Path(run_dir)
    logs = sorted((run_dir / LOG_DIR).glob("*.log"), key=lambda p: p.stat().st_mtime)
    if not logs:
        return {}, None
    log = logs[-1]
    row = {"compile_log": log.relative_to(run_dir).as_posix(), "tlparse_index": ""}
    tool = shutil.which("tlparse")
    how = f"tlparse {row['compile_log']} -o tl_out --no-browser"
    if tool is None:
        return row, f"compile log in {row['compile_log']}: pip install tlparse, then {how}"
    out = run_dir / Path(INDEX).parent
    try:
        done = subprocess.run([tool, str(log), "-o", str(out), "--overwrite", "--no-browser"],
                              capture_output=True, text=True, timeout=RENDER_S)  # fmt: skip
    except (OSError, subprocess.TimeoutExpired) as e:
        return row, f"tlparse did not render the compile log ({type(e).__name__}): {how}"
    if done.returncode != 0 or not (run_dir / INDEX).exists():
        tail = " ".join((done.stderr or done.stdout).split())[-160:]
        return row, f"tlparse did not render the compile log (exit {done.returncode}: {tail})"
    row["tlparse_index"] = INDEX
    return row, None
