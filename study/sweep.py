"""The sweep side of one Hydra job: isolate the cell in a subprocess, and never lose a row.

For each job: validate, write ``cell.yaml``, start ``python -m study.worker`` in a new
process group with the cache environment (and a pinned GPU under the multi-GPU launcher),
wait at most ``timeout_s``, and make sure the run dir ends with a ``run.csv``: the worker's
own, or one written here with status ``timeout`` or ``crash`` (exit code or signal, and the
tail of the cell's log). Then ``runs.csv`` is rebuilt from all finished run dirs.

With ``resume=true``, a job whose run dir already holds an ``ok`` row is skipped.
"""

from __future__ import annotations

import ctypes
import fcntl
import os
import shutil
import signal
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path

from omegaconf import OmegaConf

from study import compiling, io
from study.config import to_plain
from study.worker import SLOT_WAIT, gpu_id

PR_SET_PDEATHSIG = 1


def _die_with_parent():  # runs in the child between fork and exec
    os.setsid()
    try:
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    except (OSError, AttributeError):
        pass


def finished_ok(run_dir: Path) -> bool:
    p = run_dir / "run.csv"
    try:
        return p.exists() and all(r.get("status") == "ok" for r in io.read_csv(p))
    except (OSError, ValueError):
        return False


def try_slot(lock_dir: Path, slots: int):
    """(slot, open lock file) for the first free one of ``slots`` GPU slots, or None."""
    lock_dir.mkdir(parents=True, exist_ok=True)
    for i in range(slots):
        f = open(lock_dir / f".gpu{i}.lock", "a")
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            f.close()
            continue
        return i, f
    return None


def release_slot(held) -> None:
    if held is not None:
        fcntl.flock(held[1], fcntl.LOCK_UN)
        held[1].close()


def wait_slot(lock_dir: Path, slots: int):
    """(slot, open lock file) for the first of ``slots`` GPU slots to come free."""
    while (held := try_slot(lock_dir, slots)) is None:
        time.sleep(0.2)
    return held


@contextmanager
def gpu_slot(lock_dir: Path, slots: int):
    """Hold one of ``slots`` GPU slots (a file lock each) for the duration of a block."""
    if slots <= 0:
        yield None
        return
    held = wait_slot(lock_dir, slots)
    try:
        yield held[0]
    finally:
        release_slot(held)


def group_alive(pgid: int) -> bool:
    """Whether a live (not zombie) process of group ``pgid`` is left. Zombies hold no memory,
    and an orphan's zombie may never be reaped in a container whose init does not reap."""
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue  # exited while we looked
        if fields[0] != "Z" and int(fields[2]) == pgid:
            return True
    return False


def _wait_group_gone(pgid: int, limit_s: float = 30.0) -> None:
    """Wait until no live process of the cell's group is left (killed ones may be exiting)."""
    deadline = time.monotonic() + limit_s
    while group_alive(pgid) and time.monotonic() < deadline:
        time.sleep(0.05)


def _tail(path: Path, n: int = 800) -> str:
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return ""
    lines = [ln for ln in text.strip().splitlines() if ln.strip()]
    return " | ".join(lines[-6:])[-n:]


def _fallback_row(cfg, run_dir: Path, status: str, reason: str, wall: float) -> dict:
    from study.cell import base_row

    row = base_row(cfg, run_dir.name)
    row.update(status=status, reason=reason, wall_s=wall)
    for k, v in to_plain(cfg)["shape"].items():
        row[k] = v
    import socket

    row["host"] = socket.gethostname()
    return row


def run_job(cfg, run_dir: Path, sweep_dir: Path, slots: int = 0) -> str:
    run_dir = Path(run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    name = run_dir.name
    if cfg.resume and finished_ok(run_dir):
        print(f"[study] {name}: ok already, skipped (resume=true)")
        io.aggregate(sweep_dir)
        return "ok"
    for stale in (
        "run.csv",
        "kernels.csv",
        "autotune.csv",
        "ncu.csv",
        "error.txt",
        "trace.json.gz",
        SLOT_WAIT,
    ):
        (run_dir / stale).unlink(missing_ok=True)
    shutil.rmtree(run_dir / "generated", ignore_errors=True)
    plain = to_plain(cfg)
    tmp = run_dir / ".cell.yaml.tmp"
    OmegaConf.save(OmegaConf.create(plain), tmp)
    os.replace(tmp, run_dir / "cell.yaml")

    env = dict(os.environ)
    env.update(compiling.cache_env(plain["cache"], run_dir, Path(cfg.out_root), plain))
    env["PYTHONUNBUFFERED"] = "1"
    root = str(Path(__file__).resolve().parent.parent)
    env["PYTHONPATH"] = root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    t0 = time.perf_counter()
    status, reason = None, ""
    if plain["isolation"] == "inline":
        with gpu_slot(sweep_dir, slots) as slot:
            if slot is not None:
                env["CUDA_VISIBLE_DEVICES"] = gpu_id(slot)
            status, reason = _inline(run_dir, env)
    else:  # the worker gets its GPU slot once it has imported torch (study.worker)
        env["STUDY_LAUNCHED_AT"] = f"{time.time():.3f}"
        held = None
        if slots > 0 and not cfg.overlap_startup:  # pin before the process starts
            held = wait_slot(sweep_dir, slots)
            env["CUDA_VISIBLE_DEVICES"] = env["STUDY_GPU_ID"] = gpu_id(held[0])
            slots = 0
        env["STUDY_GPU_SLOTS"] = str(slots)
        status, reason = _subprocess(run_dir, env, cfg.timeout_s, slots, sweep_dir, held)
        (run_dir / SLOT_WAIT).unlink(missing_ok=True)
    wall = time.perf_counter() - t0
    if status is not None:  # the worker wrote no run.csv: record why
        io.write_csv(
            run_dir / "run.csv", [_fallback_row(cfg, run_dir, status, reason, wall)], "runs"
        )
    if plain["cache"] == "cold":
        shutil.rmtree(run_dir / ".compile_cache", ignore_errors=True)
    io.aggregate(sweep_dir)
    row = io.read_csv(run_dir / "run.csv")[0]
    lat = row.get("latency_median_us")
    print(
        f"[study] {name}: {row['status']}"
        + (
            f", {float(lat):.1f} us/call, {row.get('kernels_per_step') or '?'} kernels/step"
            if lat
            else ""
        )
        + (f" ({row['reason'][:160]})" if row.get("reason") else "")
        + f" [{wall:.1f}s]"
    )
    return row["status"]


def _subprocess(run_dir: Path, env: dict, timeout_s: float, slots: int, lock_dir: Path, held=None):
    """Run the worker. With GPU slots, hand it a free one once it has prepared (it says so
    with ``SLOT_WAIT`` and reads the slot from stdin), and hold that slot until the worker's
    whole process group is gone: a GPU is free only when the last cell's memory is. The
    worker is killed once it has spent ``timeout_s`` outside the wait for a slot."""
    log = run_dir / "cell.log"
    with open(log, "w") as f:
        proc = subprocess.Popen(
            [sys.executable, "-m", "study.worker", str(run_dir)],
            env=env,
            stdin=subprocess.PIPE if slots > 0 else subprocess.DEVNULL,
            stdout=f,
            stderr=subprocess.STDOUT,
            preexec_fn=_die_with_parent,
            text=True,
        )
        t0 = time.monotonic()
        wait_began = taken = None
        try:
            while True:
                try:
                    rc = proc.wait(timeout=0.1)
                    break
                except subprocess.TimeoutExpired:
                    now = time.monotonic()
                    if slots > 0 and held is None and (run_dir / SLOT_WAIT).exists():
                        wait_began = wait_began or now
                        held = try_slot(lock_dir, slots)
                        if held is not None:
                            taken = now
                            try:
                                proc.stdin.write(f"{held[0]}\n")
                                proc.stdin.close()
                            except BrokenPipeError:
                                pass  # the worker died meanwhile: its exit is seen next
                    waited = (taken or now) - wait_began if wait_began is not None else 0.0
                    if now - t0 - waited <= timeout_s:
                        continue
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
                if not (run_dir / "run.csv").exists():
                    return (
                        "timeout",
                        f"cell exceeded timeout_s={timeout_s:g}s and was killed; raise timeout_s=... if it needs longer",
                    )
                return None, ""
            try:  # leftover compile workers of the cell's process group
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        finally:
            _wait_group_gone(proc.pid)
            release_slot(held)
    if (run_dir / "run.csv").exists():
        return None, ""
    how = f"killed by signal {signal.Signals(-rc).name}" if rc < 0 else f"exit code {rc}"
    return "crash", f"cell process died ({how}) before writing its row; log: {_tail(log)}"


def _inline(run_dir: Path, env: dict):
    """Debug only: the cell in this process. Dynamo/CUDA state is not isolated."""
    saved = dict(os.environ)
    os.environ.update(env)
    try:
        from study import worker

        worker.main(run_dir)
    finally:
        os.environ.clear()
        os.environ.update(saved)
    return (None, "") if (run_dir / "run.csv").exists() else ("crash", "inline cell wrote no row")
