"""What compiling costs before the first fast call: ``start=cold|warm|artifacts``.

- ``cold`` (default): the cell's own process compiles from nothing, as every cell always did
  (with ``cache=cold``, its private Inductor/Triton cache starts empty).
- ``warm``: a first process (the primer) compiles the same cell into the cell's own on-disk
  cache dirs and exits; then the cell, a fresh process, compiles again over those caches.
  PyTorch's harness calls this ``--warm-start-latency``: a restart on the same machine.
- ``artifacts``: a service's cold start on a new machine. The primer compiles the cell in a
  cache dir of its own and saves ``torch.compiler.save_cache_artifacts()`` into the run dir
  (``cache_artifacts.bin``); the cell starts with empty caches of its own and loads them
  (``torch.compiler.load_cache_artifacts``) before its first call.

The primer is ``python -m study.cell.prime PRIME_DIR START``: a fresh interpreter (nothing of the
cell's process carries over but its environment: the GPU pin, the cores, the cache key tag)
that builds the cell, compiles it and makes its first call (the cell's own phases,
study.cell.phases) under ``start=cold``, in ``RUN_DIR/.start``. Its first call is the row's
``cold_first_call_s``: the cold start this start is set against, in the same cell.

Proof: a ``warm`` or ``artifacts`` row whose first call compiled Inductor code again (an FX
graph cache miss, or neither an FX graph nor an AOTAutograd cache hit) is ``invalid``: the
start did not give what it names.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from study.config.cell_config import plain

PRIME_DIR = ".start"  # the primer's run dir, inside the cell's; removed when the cell ends
ARTIFACTS = "cache_artifacts.bin"
PRIMED = "primed.json"  # what the primer reports back


def prime(cell) -> None:
    """Run the primer for a ``warm`` or ``artifacts`` cell, before the cell compiles anything;
    for ``artifacts``, load what it saved. Fills the row's start columns."""
    start = plain(cell.cfg.start)
    if start == "cold" or cell.mode == "off":
        return

    here = cell.run_dir / PRIME_DIR
    try:
        _prime(cell, start, here)
    finally:  # its caches and code go with it, whatever happened
        shutil.rmtree(here, ignore_errors=True)


class PrimerFailed(RuntimeError):
    """The primer's cold start failed: its own status and reason (classify_error's, in the
    primer's process), so the cell's row says what a cold cell would have said."""

    def __init__(self, status: str, reason: str):
        super().__init__(reason)
        self.status, self.reason = status, reason


def primer_argv(here: Path, start: str) -> list[str]:
    """The primer's command: it dies with this process (study.lifeline), so a SIGKILL of the
    sweep leaves no primer compiling into a run dir a resume reuses."""
    return [sys.executable, "-m", "study.cell.prime", str(here), start, str(os.getpid())]


def _prime(cell, start: str, here: Path) -> None:
    from omegaconf import OmegaConf

    shutil.rmtree(here, ignore_errors=True)
    here.mkdir(parents=True)
    cfg = OmegaConf.to_container(cell.cfg, resolve=True, enum_to_str=True)
    cfg["start"] = "cold"  # its compile log, if any, goes to .start/compile_log, as the cell's
    cfg["ncu"]["enabled"] = cfg["nsys"]["enabled"] = False
    (here / "cell.yaml").write_text(OmegaConf.to_yaml(cfg))
    env = dict(os.environ)
    if start == "artifacts":  # caches of its own: the cell's stay empty
        env["TORCHINDUCTOR_CACHE_DIR"] = str((here / ".compile_cache" / "inductor").resolve())
        env["TRITON_CACHE_DIR"] = str((here / ".compile_cache" / "triton").resolve())
    root = str(Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH")) if p)
    t = time.perf_counter()
    done = subprocess.run(
        primer_argv(here, start),
        env=env,
        capture_output=True,
        text=True,
        timeout=max(60.0, float(cell.cfg.timeout_s)),
    )
    cell.row["prime_s"] = time.perf_counter() - t
    (cell.run_dir / "start.log").write_text(done.stdout + done.stderr)
    primed = here / PRIMED
    if done.returncode != 0 or not primed.exists():
        tail = " ".join((done.stderr or done.stdout).split())[-240:]
        raise RuntimeError(f"start={start}: the primer process failed (exit "
                           f"{done.returncode}; start.log): {tail}")  # fmt: skip
    got = json.loads(primed.read_text())
    if got.get("status") != "ok":
        raise PrimerFailed(got.get("status") or "error",
                           f"start={start}, the primer's cold start: {got.get('reason')}")  # fmt: skip
    if got.get("cache_hits"):  # a primer that hit a cache started warm: no cold figure
        cell.notes.append(f"start={start}: the primer hit {got['cache_hits']} cache entries, so "
                          "cold_first_call_s is left blank")  # fmt: skip
    else:
        cell.row["cold_first_call_s"] = got.get("first_call_s")
        cell.row["cold_compile_s"] = got.get("compile_s")
    if start == "artifacts":
        _load(cell, here / ARTIFACTS)


def _load(cell, saved: Path) -> None:
    import torch

    data = saved.read_bytes()
    kept = cell.run_dir / ARTIFACTS  # the service's artifact, beside the cell's rows
    shutil.copyfile(saved, kept)
    t = time.perf_counter()
    info = torch.compiler.load_cache_artifacts(data)
    cell.row["artifacts_load_s"] = time.perf_counter() - t
    cell.row["artifacts_bytes"] = len(data)
    cell.row["artifacts_loaded"] = kinds(info)
    if info is None or not getattr(info, "artifacts", None):
        raise RuntimeError(
            f"start=artifacts: load_cache_artifacts loaded nothing from {ARTIFACTS} "
            f"({len(data)} bytes)"
        )


def kinds(info) -> str:
    """'inductor 1, aot_autograd 1': what a CacheInfo holds, by kind."""
    arts = dict(getattr(info, "artifacts", None) or {})
    return ", ".join(f"{k} {len(v)}" for k, v in sorted(arts.items()) if v)


def columns(cell) -> None:
    """After the first call: cache hits by kind, how much of the first call was still Dynamo's,
    and the proof that a warm or artifacts start compiled no Inductor code again."""
    from torch._dynamo.utils import counters

    row, aot, ind = cell.row, counters["aot_autograd"], counters["inductor"]
    row["aot_cache_hits"] = aot.get("autograd_cache_hit", 0)
    row["aot_cache_misses"] = aot.get("autograd_cache_miss", 0)
    row["autotune_cache_hits"] = ind.get("autotune_local_cache_hit", 0) or None
    first, dynamo = row.get("first_call_s"), row.get("dynamo_s")
    if first and dynamo is not None:
        row["first_call_dynamo_share"] = min(1.0, dynamo / first)
    start = plain(cell.cfg.start)
    if start == "cold" or cell.mode == "off":
        return
    misses, hits = row.get("fxgraph_cache_misses") or 0, row.get("cache_hits") or 0
    if misses or not hits:
        cell.start_invalid = (
            f"start={start}: the first call compiled Inductor code again ({misses} FX graph "
            f"cache miss(es), {hits} FX graph or AOTAutograd hit(s)): the "
            f"{'artifacts' if start == 'artifacts' else 'warm cache'} did not cover this cell"
        )
