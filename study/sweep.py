"""The sweep side of one Hydra job: resolve the cell, run it in a forked child, never lose a row.

For each job: resolve what the cell runs (``device=auto``, the family's default shape) into
``cell.yaml`` with its ``config_hash``; take a slot (one GPU, or one CPU core group); ask the
warm cell server (study.server) to fork the cell pinned to that slot's GPU and cores; wait at
most ``timeout_s``; make sure the run dir ends with a ``run.csv`` (the cell's own, or one
written here with status ``timeout`` or ``crash``: exit code or signal, and the tail of the
cell's log); add the sweep's own figures (``overhead_s``, ``gpu_wait_s``); rebuild ``runs.csv``
and print one progress line.

With ``resume=true`` a cell whose ``run.csv`` is ``ok`` and carries the same ``config_hash`` is
skipped; any other is run again, and the line says why.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from contextlib import contextmanager
from pathlib import Path

from omegaconf import OmegaConf

from study import compiling, io, pinning
from study.client import ServerError
from study.config import config_hash, eager_hash, plain, to_plain
from study.expect import block_of
from study.worker import gpu_id

STALE = ("run.csv", "kernels.csv", "autotune.csv", "ncu.csv", "error.txt", "trace.json.gz")
_SERVER = None
_LOCK = None  # (path, open lock file) of the listening server this process claimed
_OWNED: list = []  # listening servers this process started for its job processes
_IMPORTING = None  # the thread importing the workloads (import_workloads_in_background)
_PLAN: dict = {}


class Unsafe(ValueError):
    """A run dir outside its sweep dir: the sweep refuses to write or delete there."""


def inside(path: Path, root: Path) -> bool:
    path, root = Path(path).resolve(), Path(root).resolve()
    return path == root or root in path.parents


def server(house: list[int] | None = None):
    """This process's warm cell server: one the main process started for it (``prestart``),
    else its own, started on first use; a dead one is replaced. Pinned to ``house``."""
    global _SERVER, _LOCK
    from study.client import Client

    if _SERVER is None or not _SERVER.alive():
        if _SERVER is not None:
            _SERVER.close()
            release_slot(_LOCK)  # a dead listening server: let it go
            _LOCK = None
        _SERVER = _claim() or Client(cores=house)
    if house and _SERVER.pinned != list(house):
        _SERVER.pin(house)
    return _SERVER


def _import_workloads() -> None:
    from study.workloads import registry

    try:
        registry.names()
    except Exception:  # noqa: BLE001 - the cell's own resolve() reports it, in the job's thread
        return


def importing_workloads() -> bool:
    """Whether a background import of the workloads was started in this process."""
    return _IMPORTING is not None


def wait_for_workloads() -> None:
    """Join the background import of the workloads, if one was started."""
    if _IMPORTING is not None:
        _IMPORTING.join()


def import_workloads_in_background() -> None:
    """Import the registered workloads (and torch) in a thread; ``resolve`` joins it first: a
    package half-imported by one thread is no package for another (``import torch.nn`` in a
    custom variant's target failed while the thread was inside ``torch/__init__``)."""
    global _IMPORTING
    _IMPORTING = threading.Thread(target=_import_workloads, daemon=True)
    _IMPORTING.start()


def _claim():
    """A listening server of ``STUDY_SERVERS`` that no other job process holds, or None.
    Only the sweep that started them (or its job processes, its children) may claim one: a
    variable inherited from elsewhere names another sweep's servers."""
    global _LOCK
    from study.client import Client

    owner = os.environ.get("STUDY_SERVERS_OWNER", "")
    if owner not in (str(os.getpid()), str(os.getppid())):
        return None
    for path in filter(None, os.environ.get("STUDY_SERVERS", "").split(os.pathsep)):
        try:
            f = open(path + ".lock", "a")
        except OSError:  # the sweep that made it is gone
            continue
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
            client = Client.attach(path)
        except OSError:  # held by another job process, or nothing listens there any more
            f.close()
            continue
        _LOCK = (path, f)
        return client
    return None


def prestart(n: int) -> list:
    """In a multi-GPU sweep's main process: start ``n`` listening servers now, so that they
    import while the sweep is checked, and name them to the job processes (``STUDY_SERVERS``,
    inherited by loky's workers). Each job process claims one at its first cell; without them
    each started its own then, and the sweep's first cells waited 4-17 s for it (H200 x2 VM)."""
    import atexit
    import tempfile

    from study.client import bound, start_listening
    from study.pycache import bytecode_cache

    # loky's workers, started after this, import torch too (the workloads): the servers'
    # bytecode cache spares them compiling its sources (4 s a worker on the H200 VMs)
    os.environ.update(bytecode_cache(dict(os.environ)))
    d = tempfile.mkdtemp(prefix="study-servers-")  # short: a socket path has at most 107 bytes
    atexit.register(shutil.rmtree, d, True)
    paths = [os.path.join(d, f"s{i}.sock") for i in range(n)]
    procs = [start_listening(p, wait=False) for p in paths]
    _OWNED.extend(procs)
    # Each binds its socket before its imports (a fraction of a second): wait for that, so a
    # job process never finds no socket and starts a server of its own.
    live = bound(list(zip(paths, procs, strict=True)))
    os.environ["STUDY_SERVERS"] = os.pathsep.join(live)
    os.environ["STUDY_SERVERS_OWNER"] = str(os.getpid())
    return live


def stop_prestarted() -> None:
    """End the servers ``prestart`` started (they would also die with this process). One
    still importing reads its stdin only after: it gets 5 s, then is killed (no cells)."""
    for proc in _OWNED:
        try:
            proc.stdin.close()
        except OSError:
            pass
    deadline = time.monotonic() + 5.0
    while _OWNED:
        proc = _OWNED.pop()
        try:
            proc.wait(timeout=max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    os.environ.pop("STUDY_SERVERS", None)
    os.environ.pop("STUDY_SERVERS_OWNER", None)


def gpu_count(isolated: bool = True) -> int:
    """GPUs this job sees. Asked of the cell server, so that a job process does not wait for
    its own import of torch (2-10 s in a loky worker; it imports the workloads in the
    background meanwhile); torch (NVML, no CUDA init) for an inline sweep."""
    if isolated:
        return int(server().status["device_count"])
    import torch

    return torch.cuda.device_count() if torch.cuda.is_available() else 0


def core_plan(slots: int, spec: str) -> tuple[list[int], list[list[int]]]:
    """(housekeeping cores, core group per slot), from this process's cores at first use."""
    key = (slots, spec)
    if key not in _PLAN:
        _PLAN.setdefault("host", pinning.allowed())
        _PLAN[key] = pinning.plan(_PLAN["host"], slots, spec)
    return _PLAN[key]


def try_slot(lock_dir: Path, slots: int):
    """(slot, open lock file) for the first free one of ``slots`` slots, or None."""
    lock_dir.mkdir(parents=True, exist_ok=True)
    for i in range(slots):
        f = open(lock_dir / f".slot{i}.lock", "a")
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
    """(slot, open lock file) for the first of ``slots`` slots to come free."""
    while (held := try_slot(lock_dir, slots)) is None:
        time.sleep(0.05)
    return held


@contextmanager
def slot(lock_dir: Path, slots: int):
    """Hold one of ``slots`` slots (a file lock each) for the duration of a block."""
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


def kill_group(pgid: int, limit_s: float = 120.0) -> None:
    """Kill what is left of a cell's process group and wait until none of it lives (its GPU
    slot is free only then); say so when a process outlives the wait (stuck in the driver)."""
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    deadline = time.monotonic() + limit_s
    while group_alive(pgid) and time.monotonic() < deadline:
        time.sleep(0.05)
    if group_alive(pgid):
        print(
            f"[study] warning: process group {pgid} still lives {limit_s:g} s after SIGKILL; "
            "the next cell on its slot may meet its memory",
            file=sys.stderr,
            flush=True,
        )


def _tail(path: Path, n: int = 800) -> str:
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return ""
    lines = [ln for ln in text.strip().splitlines() if ln.strip()]
    return " | ".join(lines[-6:])[-n:]


def shape_keys(variant, variants: dict | None = None) -> list[str]:
    """The shape keys a variant takes: from ``variants`` (the cell server's registry, sent in
    its status) for a registered variant, so that a job process need not import torch; else
    from the registry here (a variant of your own, ``variant.target``, imports torch)."""
    if not variant.get("target") and variants and variant.name in variants:
        return list(variants[variant.name])
    wait_for_workloads()
    from study.workloads.registry import resolve as entry_of

    return list(entry_of(variant).shape_keys)


def resolve(cfg, cuda: bool, variants: dict | None = None) -> dict:
    """The cell's config as it will run: plain data, device and the family's shape resolved."""
    d = to_plain(cfg)
    if d["device"] == "auto":
        d["device"] = "cuda" if cuda else "cpu"
    keys = shape_keys(cfg.variant, variants)
    sw = d.get("shape_sweep") or {}
    if sw.get("key"):  # a shape sweep in one process starts at its first shape
        d["shape"][sw["key"]] = sw["sizes"][0]
    base = d["family"].get("shapes", {}).get(d["device"]) or d["family"].get("shapes", {}).get(
        "cpu"
    )
    for k in keys:
        if d["shape"].get(k) is None and base and base.get(k) is not None:
            d["shape"][k] = base[k]
    return d


def _fallback_row(resolved: dict, run_dir: Path, status: str, reason: str, wall: float) -> dict:
    """The row of a cell that wrote none: from the config it ran (device and shape resolved)."""
    import socket

    row = io.base_row(OmegaConf.create(resolved), run_dir.name)
    row.update(status=status, reason=reason, wall_s=wall, host=socket.gethostname())
    row.update({k: v for k, v in resolved["shape"].items() if v is not None})
    return row


def _why_rerun(run_dir: Path, want: str) -> str | None:
    """None when the finished cell in ``run_dir`` can be kept, else why it runs again."""
    p = run_dir / "run.csv"
    if not p.exists():
        return "not finished"
    try:
        row = io.read_row(p)
    except io.Incomplete as e:
        return f"its row was incomplete: {e}"
    if not row.get("config_hash"):
        return "its row was incomplete: it has no config_hash (the sweep stopped as it wrote it)"
    if row["config_hash"] != want:
        return f"its configuration changed (config_hash {row['config_hash']} -> {want})"
    return None if row["status"] == "ok" else f"status {row['status']}"


def clear(run_dir: Path, sweep_dir: Path) -> None:
    """Everything an earlier run of this cell left: its rows, trace, logs, generated code and
    private compile cache (a resume after Ctrl-C or kill -9 found a half-built cache, and its
    cold cell read 2 cache hits). A run dir that is the sweep dir (a single run) keeps the
    sweep's own files."""
    if run_dir.resolve() == sweep_dir.resolve():
        for stale in STALE:
            (run_dir / stale).unlink(missing_ok=True)
        for d in ("generated", ".compile_cache"):
            shutil.rmtree(run_dir / d, ignore_errors=True)
        return
    for p in run_dir.iterdir():
        if p.is_dir() and not p.is_symlink():
            shutil.rmtree(p)
        else:
            p.unlink(missing_ok=True)


def run_job(cfg, run_dir: Path, sweep_dir: Path, slots: int = 0, gpus: bool = False) -> str:
    """Run one cell; returns its status. ``slots``: cells that may run at once (file locks in
    the sweep dir); ``gpus``: each slot is also a GPU (``CUDA_VISIBLE_DEVICES``)."""
    asked = time.time()
    t0 = time.perf_counter()
    run_dir, sweep_dir = Path(run_dir), Path(sweep_dir)
    if not inside(run_dir, sweep_dir):
        raise Unsafe(f"run dir {run_dir} is outside the sweep dir {sweep_dir}: refusing to use it")
    name = run_dir.name
    plan_slots = slots if slots > 0 else 1
    house, groups = core_plan(plan_slots, str(cfg.cores))
    isolated = plain(cfg.isolation) == "subprocess"
    srv = server(house) if isolated else None
    cuda = srv.status["cuda_available"] if srv else _cuda_available()
    resolved = resolve(cfg, cuda, srv.status.get("variants") if srv else None)
    want = config_hash(resolved)
    run_dir.mkdir(parents=True, exist_ok=True)
    if cfg.resume:
        why = _why_rerun(run_dir, want)
        if why is None:
            # counted as done in this sweep's progress; predictions are no part of a cell's
            # identity, so the ones this resume asks for replace those of the run that made it
            row = io.read_row(run_dir / "run.csv")
            row["expect"] = block_of(resolved)
            io.write_csv(run_dir / "run.csv", [row], "runs")
            io.aggregate(sweep_dir)
            _progress(sweep_dir, name, "ok already, skipped (resume=true)")
            return "ok"
        if why != "not finished":
            print(f"[study] {name}: running again (resume=true): {why}", flush=True)
    clear(run_dir, sweep_dir)
    tmp = run_dir / ".cell.yaml.tmp"
    OmegaConf.save(OmegaConf.create(resolved), tmp)
    os.replace(tmp, run_dir / "cell.yaml")

    env = compiling.cache_env(resolved["cache"], run_dir, Path(cfg.out_root), resolved)
    env["PYTHONUNBUFFERED"] = "1"
    status = reason = gpu = None
    t_wait = time.perf_counter()
    with slot(sweep_dir, slots) as s:
        waited = time.perf_counter() - t_wait
        cores = groups[s or 0]
        gpu = gpu_id(s) if gpus and s is not None else None
        if gpu is not None:
            env["CUDA_VISIBLE_DEVICES"] = gpu
        elif resolved["device"] == "cuda" and cuda:  # it runs on the first GPU it sees: show it
            env["CUDA_VISIBLE_DEVICES"] = gpu_id(0)  # only that one: CUDA sets up every device
            # it sees (median setup_s 0.62 -> 0.41 s on the two-GPU host)
        try:
            if srv is not None:
                status, reason = _forked(srv, run_dir, env, cores, gpu, cfg.timeout_s, asked)
            else:
                status, reason = _inline(run_dir, env, cores)
        except ServerError as e:  # the next job starts a new server; this cell gets its row
            status, reason = "crash", f"the cell server died while the cell ran: {e}"
    wall = time.perf_counter() - t0
    if status is not None:  # the cell wrote no run.csv: record why
        row = _fallback_row(resolved, run_dir, status, reason, wall)
        row["gpu_index"] = gpu  # a timeout or crash on a GPU slot still names its GPU
    else:
        row = io.read_csv(run_dir / "run.csv")[0]
    row.update(
        config_hash=want,
        eager_hash=eager_hash(resolved),
        repeat=cfg.repeat,
        gpu_wait_s=waited if slots > 0 else None,
        overhead_s=_overhead(row, time.perf_counter() - t0 - waited),
    )
    io.write_csv(run_dir / "run.csv", [row], "runs")
    if resolved["cache"] == "cold":
        shutil.rmtree(run_dir / ".compile_cache", ignore_errors=True)
    io.aggregate(sweep_dir)
    _progress(sweep_dir, name, _summary(row, wall))
    return row["status"]


def _cuda_available() -> bool:
    import torch

    return torch.cuda.is_available()


def _num(v):
    try:
        return float(v)
    except (TypeError, ValueError):
        return None


# The phases a cell measures; everything else of its wall time is the sweep's overhead.
MEASURED = ("first_call_s", "check_s", "measure_s", "profile_s")


def _overhead(row: dict, wall: float) -> float:
    """Wall time minus the measured phases: the server's start (first cell), the fork, the
    cell's setup (CUDA context, inputs), the harvest of generated code, the rows. A cell's
    extra passes (tensors saved for backward, a shape sweep: ``extra_s``) are measurements too."""
    return wall - sum(_num(row.get(k)) or 0.0 for k in (*MEASURED, "extra_s"))


def _summary(row: dict, wall: float) -> str:
    lat = _num(row.get("latency_median_us"))
    s = row["status"]
    if lat:
        s += f", {lat:.1f} us/call, {row.get('kernels_per_step') or '?'} kernels/step"
    sp, lo, hi = (_num(row.get(k)) for k in ("speedup_paired", "speedup_ci_low", "speedup_ci_high"))
    if sp:
        s += f", {sp:.2f}x paired [{lo:.2f}-{hi:.2f}]"
    if row.get("reason"):
        s += f" ({row['reason'][:160]})"
    return s + f" [{wall:.1f}s]"


def _progress(sweep_dir: Path, name: str, what: str) -> None:
    """'[k/N] cell: what  elapsed, ~left' (N and the start from the sweep's callback)."""
    total, t0 = clock(sweep_dir)
    # Cells finished (or found finished by a resume) since this sweep started: a resume into a
    # sweep dir with other cells' rows, e.g. more repeats of some cells, counts only its own.
    done = sum(p.stat().st_mtime >= t0 - 1 for p in io.run_csvs(sweep_dir))
    head = f"[{done}/{total}] " if total else ""
    tail = ""
    if total and t0:
        el = time.time() - t0
        left = el / done * (total - done) if done else 0.0
        tail = f"  {_hms(el)} elapsed" + (f", ~{_hms(left)} left" if done < total else "")
    print(f"[study] {head}{name}: {what}{tail}", flush=True)


def clock(sweep_dir: Path) -> tuple[int, float]:
    """(cells in the sweep, its start), from the ``sweep.yaml`` its callback wrote once the
    sweep was checked: a job process may be older than that (study.jobs). (0, 0.0) if none."""
    try:
        saved = OmegaConf.load(sweep_dir / "sweep.yaml")
        return int(saved.get("total") or 0), float(saved.get("t0") or 0)
    except Exception:  # noqa: BLE001 - unreadable (YAML, OS, types): the line just has no [k/N]
        return 0, 0.0


def _hms(s: float) -> str:
    s = int(round(s))
    return f"{s // 60}m{s % 60:02d}s" if s >= 60 else f"{s}s"


def _forked(srv, run_dir: Path, env: dict, cores, gpu, timeout_s: float, asked: float):
    """Run the cell in a child of the warm server; (status, reason) when it wrote no row."""
    log = run_dir / "cell.log"
    pid = srv.spawn(
        "study.worker:cell_main",
        {"run_dir": str(run_dir), "gpu": gpu, "asked_at": asked},
        env,
        cores,
        log,
    )
    (run_dir / ".cell.pid").write_text(f"{pid}\n")  # the cell's process (and group) id
    try:
        rc = srv.wait(pid, timeout_s)
        if rc is None:
            kill_group(pid)
            srv.wait(pid, 30.0)
            if not (run_dir / "run.csv").exists():
                return (
                    "timeout",
                    f"cell exceeded timeout_s={timeout_s:g}s and was killed; raise timeout_s=... if it needs longer",
                )
            return None, ""
    except BaseException:  # Ctrl-C or a dead server: the cell must not outlive the sweep
        kill_group(pid)
        raise
    kill_group(pid)  # leftovers of its group (ncu, nsys): the slot is free only when all are gone
    if (run_dir / "run.csv").exists():
        return None, ""
    how = f"killed by signal {signal.Signals(-rc).name}" if rc < 0 else f"exit code {rc}"
    return "crash", f"cell process died ({how}) before writing its row; log: {_tail(log)}"


def _inline(run_dir: Path, env: dict, cores):
    """Debug only: the cell in this process. Dynamo/CUDA state is not isolated."""
    saved, aff = dict(os.environ), os.sched_getaffinity(0)
    os.environ.update(env)
    os.sched_setaffinity(0, cores)
    try:
        from study import worker

        worker.main(run_dir)
    finally:
        os.environ.clear()
        os.environ.update(saved)
        os.sched_setaffinity(0, aff)
    return (None, "") if (run_dir / "run.csv").exists() else ("crash", "inline cell wrote no row")
