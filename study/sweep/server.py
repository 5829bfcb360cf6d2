"""The warm parent: import torch, Dynamo, Inductor and Triton once; fork a fresh child per cell.

    python -m study.sweep.server [--no-prewarm] [--eager]   # started by study.sweep.scheduler

Why: a cell spent 6-10 s of its life importing (H200 host) for < 1 s of measured work. The
server pays the imports once per sweep and forks each cell from that warm state. A forked
child is as isolated as a new process for what the study cares about: the parent never
compiles a workload, never touches CUDA and never runs an op, so every child starts with a
fresh Dynamo state, Inductor config, CUDA context, allocator and compile caches (chosen by the
child's own environment), and a child that crashes or hangs costs only its own row. What a
child inherits is the host's, never a cell's: the imports, Triton's key and driver helper, and
on the CPU the answer of Inductor's ISA probe (study.sweep.prewarm.cpu_isa).

The parent must never initialise CUDA: a child cannot use a CUDA context its parent made.
The server sets ``PYTORCH_NVML_BASED_CUDA_CHECK=1`` before importing torch, so
``torch.cuda.is_available()`` asks NVML instead of the driver, and refuses to serve if CUDA
is initialised after its imports, by torch or by the driver itself (``driver_initialised``;
``benchmarks/fork_probe.py`` checks each import on a GPU).

Beyond imports, the server does once what every cell repeated and needs no device
(``study.sweep.prewarm``; ``hydra.launcher.prewarm=false`` skips it), then freezes its objects
for the garbage collector (``gc.freeze``), so a cell's ``gc.collect()`` walks only the cell's
own objects. Where torch has no bytecode cache, the scheduler gives it one (study.sweep.pycache).

Protocol, one JSON object per line on stdin and stdout (the only transport):

    <- {"ready": {...}}    (once, after the imports)
    -> {"op": "spawn", "id": ID, "target": "pkg.mod:func", "kwargs": {...}, "env": {...},
        "cores": [..] | null, "log": PATH, "cpu_compile": BOOL}
                           (cpu_compile: probe the CPU's ISAs first, once; prewarm.cpu_isa)
    <- {"spawned": ID, "pid": PID}
    <- {"exit": ID, "pid": PID, "rc": RC}          # RC < 0: killed by signal -RC
    -> {"op": "status"}    <- {"status": {...}}

The child: new session (its group is killable as one), dies with the server
(PR_SET_PDEATHSIG), stdin from /dev/null, stdout and stderr to ``log``, ``env`` applied,
pinned to ``cores``, default signal handlers; then ``target(**kwargs)`` and ``os._exit``.
End of stdin ends the server and kills its children.
"""

from __future__ import annotations

import ctypes
import functools
import gc
import importlib
import json
import os
import select
import signal
import subprocess
import sys
import time
import traceback
import warnings

from study.sweep.prewarm import WARM, WARM_EAGER, cpu_isa, driver_initialised, prewarm

PR_SET_PDEATHSIG = 1


@functools.cache
def libc_prctl():
    """libc's ``prctl``, looked up once: a child forked beside other threads (``preexec_fn``)
    then calls it without the loader's lock (dlopen, dlsym). None where there is none."""
    try:
        return ctypes.CDLL("libc.so.6", use_errno=True).prctl
    except (OSError, AttributeError):
        return None  # not Linux: the child still ends when its stdin closes or the group is killed


def die_with_parent() -> None:
    prctl = libc_prctl()
    if prctl is not None:
        prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


def _gpus() -> int:
    """GPUs this host has, without initialising CUDA here: NVML, else a throwaway process (if
    NVML fails, torch falls back to cudaGetDeviceCount, which would initialise the driver in
    the server and leave every forked cell without CUDA)."""
    import torch

    n = torch.cuda._device_count_nvml() if hasattr(torch.cuda, "_device_count_nvml") else -1
    if n >= 0 or not torch.version.cuda:
        return max(n, 0)
    r = subprocess.run(
        [sys.executable, "-c", "import torch; print(torch.cuda.device_count())"],
        capture_output=True,
        text=True,
    )
    return int(r.stdout.strip() or 0) if r.returncode == 0 else 0


_VARIANTS: dict = {}  # registered variant -> its shape keys (the job side's resolve needs no torch)


def _status(imports_s: float, gpus: int, warmed: dict | None = None) -> dict:
    import torch

    return {
        "variants": _VARIANTS,
        "pid": os.getpid(),
        "torch": torch.__version__,
        "cuda_initialized": torch.cuda.is_initialized(),
        "cuda_driver_initialized": driver_initialised(),
        "cuda_available": gpus > 0,
        "device_count": gpus,
        "nvml_check": os.environ.get("PYTORCH_NVML_BASED_CUDA_CHECK"),
        "threads": len(os.listdir("/proc/self/task")) if os.path.isdir("/proc/self/task") else None,
        "imports_s": imports_s,
        "prewarm_s": warmed or {},
        "gc_frozen": gc.get_freeze_count(),
        "eager_only": "torch._inductor.compile_fx" not in sys.modules,
    }


def _child(req: dict, parent: int) -> None:
    """In the forked child: become the cell's own process, run the target, never return."""
    code = 1
    try:
        os.setsid()
        die_with_parent()
        if os.getppid() != parent:  # the server died between fork and prctl: nobody to report to
            os._exit(1)
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGCHLD):
            signal.signal(sig, signal.SIG_DFL)
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        log = os.open(req["log"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.dup2(log, 1)
        os.dup2(log, 2)
        os.environ.update(req.get("env") or {})
        if req.get("cores"):
            os.sched_setaffinity(0, req["cores"])
        mod, _, func = req["target"].partition(":")
        getattr(importlib.import_module(mod), func)(**(req.get("kwargs") or {}))
        code = 0
    except SystemExit as e:
        if isinstance(e.code, int) or e.code is None:
            code = e.code or 0
        else:  # sys.exit("message"): the message is the log's last line
            print(e.code, file=sys.stderr)
    except BaseException:  # noqa: BLE001 - the child reports everything in its log, then exits
        traceback.print_exc()
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


def _warm_up(prewarm_on: bool, eager: bool = False) -> dict:
    """Imports, prewarm, frozen gc; the status to announce. Exits if CUDA got initialised.
    ``eager``: no cell of the sweep compiles: Dynamo and Inductor are left unimported."""
    os.environ["PYTORCH_NVML_BASED_CUDA_CHECK"] = "1"
    # Python 3.12+ warns on fork() with threads running. The one other thread is a native
    # thread torch starts at import; a forked child uses nothing it holds (DataLoader forks its
    # workers from such processes all the time).
    warnings.filterwarnings(
        "ignore", message=r".*multi-threaded, use of fork\(\)", category=DeprecationWarning
    )
    t = time.perf_counter()
    for mod in WARM_EAGER if eager else WARM:
        try:
            importlib.import_module(mod)
        except ImportError as e:
            if mod.startswith("study") or mod == "torch":
                raise
            print(f"[study.server] optional import {mod} failed: {e}", file=sys.stderr)
    import torch

    from study.rows.env import code_hash, git_revision
    from study.workloads import registry

    git_revision()  # once here, inherited by every cell
    code_hash()
    _VARIANTS.update({n: list(registry.get(n).shape_keys) for n in registry.names()})
    imports_s = time.perf_counter() - t
    gpus = _gpus()
    warmed = prewarm(gpus, compiled=not eager) if prewarm_on else {}
    # Every object so far is the warm state, shared by all cells: frozen, a cell's gc.collect()
    # walks only the cell's own objects. Unfrozen, each collection walked all of torch's: 0.19-0.24 s
    # a call, 0.7-1.0 s a cell (memory.Peak and timing.quiet collect before they measure).
    gc.collect()
    gc.freeze()
    status = _status(imports_s, gpus, warmed)
    if torch.cuda.is_initialized() or status["cuda_driver_initialized"]:
        who = "torch" if torch.cuda.is_initialized() else "the driver (cuInit, behind torch's back)"
        sys.exit(
            f"[study.server] CUDA is initialised in the server, by {who}: forked cells could not "
            "use it. An import or the prewarm did it; hydra.launcher.prewarm=false tells which "
            "(benchmarks/fork_probe.py checks each import)."
        )
    return status


def _reap(children: dict, send) -> None:
    """Report every child that has exited (exits are reported as soon as they happen)."""
    while children:
        try:
            pid, st = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        rc = -os.WTERMSIG(st) if os.WIFSIGNALED(st) else os.WEXITSTATUS(st)
        send({"exit": children.pop(pid, None), "pid": pid, "rc": rc})


def serve(prewarm_on: bool = True, eager: bool = False) -> None:
    """Serve the protocol on stdin/stdout until stdin ends; then kill what is left."""
    proto = os.fdopen(os.dup(1), "w")  # fd 1 goes to stderr: a stray print cannot break it
    os.dup2(2, 1)

    def send(msg: dict) -> None:
        proto.write(json.dumps(msg) + "\n")
        proto.flush()

    die_with_parent()
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the sweep's to handle
    status = _warm_up(prewarm_on, eager)
    send({"ready": status})
    children: dict[int, object] = {}  # pid -> request id
    buf = b""
    stdin = sys.stdin.buffer.raw if hasattr(sys.stdin.buffer, "raw") else sys.stdin.buffer
    while True:
        _reap(children, send)
        ready, _, _ = select.select([stdin], [], [], 0.02)
        if not ready:
            continue
        chunk = os.read(stdin.fileno(), 65536)
        if not chunk:  # the sweep is gone: so are its cells
            for pid in list(children):
                try:
                    os.killpg(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            return
        buf += chunk
        while b"\n" in buf:
            line, buf = buf.split(b"\n", 1)
            req = json.loads(line) if line.strip() else {}
            if req.get("op") == "status":
                send(
                    {
                        "status": _status(
                            status["imports_s"], status["device_count"], status["prewarm_s"]
                        )
                    }
                )
            elif req.get("op") == "spawn":
                if req.get("cpu_compile") and prewarm_on and "cpu_isa" not in status["prewarm_s"]:
                    status["prewarm_s"]["cpu_isa"] = cpu_isa()
                sys.stdout.flush()
                me = os.getpid()
                pid = os.fork()
                if pid == 0:
                    _child(req, me)
                children[pid] = req.get("id")
                send({"spawned": req.get("id"), "pid": pid})


if __name__ == "__main__":
    serve(prewarm_on="--no-prewarm" not in sys.argv, eager="--eager" in sys.argv)
