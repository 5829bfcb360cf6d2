"""A multi-GPU sweep's job processes, started while the sweep is checked.

Under ``hydra/launcher=gpus`` each cell's Hydra job runs in one of joblib's loky worker
processes. Left to Hydra, those start only after ``on_multirun_start`` returns: after the sweep
is checked (every point composed: seconds for a large sweep), and each then spends seconds on
its own start (Python, Hydra, the study's modules) and on importing torch for the workloads
(no longer needed: the server sends the registered variants' shape keys) before its first
cell can be sent. On the H200 x2 VM a two-GPU part3 showed its first row 7 s
after the check, against 4 s with one GPU.

``start(launcher, n)`` asks joblib, with the launcher's own ``Parallel`` arguments, for ``n``
workers now, in a thread, and gives each one task (``ready``): claim its warm cell server and
wait until all ``n`` have checked in (so that no worker takes two of these tasks while another
is still starting); where the sweep has variants of your own, import torch too. loky keeps
its workers for the next ``Parallel`` with the same arguments, so the Hydra jobs run in these
processes; ``join`` waits for them at the end of the check. If joblib starts fresh workers after
all (other arguments, another joblib), the jobs only lose what this saved: every job process
still claims a server or starts its own.

A worker started here is older than the sweep's size and start: job processes read those from
``sweep.yaml`` (study.sweep.clock).
"""

from __future__ import annotations

import functools
import os
import shutil
import tempfile
import threading
import time
from pathlib import Path

_THREAD: threading.Thread | None = None
_RESULT: dict = {}


def ready(d: str, n: int, workloads: bool = False) -> int:
    """In a job process: claim its cell server, ``checkin``; its pid. With ``workloads`` (the
    sweep has variants of your own, which the job process resolves itself, importing torch),
    import the workloads meanwhile, and wait for them.

    The wait matters: loky measures a worker's memory after its first task and restarts any
    worker that grows by 300 MB after that ("memory leak"). Returning before torch is imported
    made each worker restart after its first cell, and import torch again. A registered
    variant needs no torch in the job process (its shape keys come from the server)."""
    from study import sweep

    sweep.server()
    if workloads and not sweep.importing_workloads():
        sweep.import_workloads_in_background()
    pid = checkin(d, n)
    sweep.wait_for_workloads()
    return pid


def checkin(d: str, n: int, limit_s: float = 20.0) -> int:
    """Check in to the dir ``d`` and wait (at most ``limit_s``) until ``n`` processes have; the
    pid."""
    Path(d, str(os.getpid())).touch()
    deadline = time.monotonic() + limit_s
    while len(os.listdir(d)) < n and time.monotonic() < deadline:
        time.sleep(0.02)
    return os.getpid()


def parallel_args(launcher) -> dict:
    """The ``joblib.Parallel`` arguments Hydra's joblib launcher will use: its own launcher,
    built from the same config, and its own processing (``_core.launch``)."""
    from hydra.utils import instantiate
    from hydra_plugins.hydra_joblib_launcher._core import process_joblib_cfg

    args = dict(instantiate(launcher).joblib)
    args["backend"] = "loky"
    process_joblib_cfg(args)
    return args


def _start(args: dict, n: int, task) -> None:
    from joblib import Parallel, delayed

    t = time.perf_counter()
    checkin = tempfile.mkdtemp(prefix="study-jobs-")
    try:
        pids = Parallel(**args)(delayed(task)(checkin, n) for _ in range(n))
        _RESULT.update(pids=pids, s=time.perf_counter() - t)
    except Exception as e:  # noqa: BLE001 - the jobs start their own processes, as without this
        _RESULT.update(error=f"{type(e).__name__}: {e}")
    finally:
        shutil.rmtree(checkin, ignore_errors=True)


def start(launcher, n: int, task=None, workloads: bool = False) -> None:
    """Start ``n`` job processes in a thread (the sweep is checked meanwhile); each runs
    ``task(checkin_dir, n)`` once (default: ``ready``)."""
    global _THREAD
    _RESULT.clear()
    task = task or functools.partial(ready, workloads=workloads)
    _THREAD = threading.Thread(target=_start, args=(parallel_args(launcher), n, task), daemon=True)
    _THREAD.start()


def join(timeout_s: float = 60.0) -> dict:
    """Wait for ``start``'s job processes; what it gave: ``pids`` and ``s``, or ``error``
    (empty when none were started)."""
    global _THREAD
    if _THREAD is None:
        return {}
    _THREAD.join(timeout_s)
    if _THREAD.is_alive():
        _RESULT.setdefault("error", f"job processes not ready after {timeout_s:.0f} s")
    _THREAD = None
    out = dict(_RESULT)
    _RESULT.clear()
    return out


def abandon() -> None:
    """The sweep stops before its first job (a bad point): end ``start``'s job processes now.
    Left alone, loky's exit handler would wait for their tasks (a torch import, seconds)."""
    global _THREAD
    if _THREAD is None:
        return
    _THREAD = None
    from joblib.externals.loky import reusable_executor

    executor = getattr(reusable_executor, "_executor", None)  # loky's one reusable executor
    if executor is not None:
        executor.shutdown(wait=False, kill_workers=True)
