"""The warm parent, both ends: it imports torch once and forks a fresh child per cell.

The sweep starts it (``WarmParent``: ``python -m study.sweep.warm_parent``) on the sweep's
cores and talks to it over one ``multiprocessing`` connection (a socket pair, the only
transport). It imports and prewarms (study.sweep.prewarm), freezes its objects for the garbage
collector, and never compiles, runs an op or initialises CUDA, so each forked child starts with a
fresh Dynamo state, Inductor config, CUDA context, allocator and compile caches; it refuses to
serve if an import initialised CUDA. Why, and what it buys: docs/method.md ("Isolation").

Messages (dicts): ``{"ready": status}`` once; ``{"op": "spawn", "id", "target": "mod:func",
"kwargs", "env", "cores", "log", "cpu_compile"}`` answered by ``{"spawned": id, "pid"}``;
``{"exit": id, "pid", "rc"}`` as each child ends (rc < 0: killed by signal -rc); ``{"op":
"status"}`` answered by ``{"status": ...}``. The pipe's end ends the parent and its children.
"""

from __future__ import annotations

import contextlib
import gc
import importlib
import json
import os
import signal
import subprocess
import sys
import time
import traceback
import warnings
from multiprocessing.connection import Connection, Pipe
from pathlib import Path

from study.config.env import code_hash, git_revision
from study.lifeline import die_with_parent
from study.sweep.prewarm import WARM, WARM_EAGER, cpu_isa, driver_initialised, prewarm
from study.sweep.pycache import bytecode_cache
from study.workloads import registry

ROOT = str(Path(__file__).resolve().parents[2])  # first on the parent's PYTHONPATH


class WarmParentError(RuntimeError):
    """The warm parent could not start or stopped answering."""


class WarmParent:
    """The sweep's end: the warm parent, started now (it imports while the sweep goes on)."""

    def __init__(self, cores=None, prewarm: bool = True, pycache: str = "auto", timeout=300.0,
                 eager: bool = False):  # fmt: skip
        self.conn, theirs = Pipe()  # a socket pair; the parent gets its end's fd
        env = {**os.environ, "PYTHONUNBUFFERED": "1", **bytecode_cache(dict(os.environ), pycache)}
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [ROOT, env.get("PYTHONPATH")]))
        opts = json.dumps({"cores": list(cores or []), "prewarm_on": prewarm, "eager": eager})
        self.proc = subprocess.Popen([sys.executable, "-m", "study.sweep.warm_parent", str(theirs.fileno()),
                                      opts], pass_fds=[theirs.fileno()], env=env)  # fmt: skip
        theirs.close()
        self._status, self._timeout, self._next = None, timeout, 0
        self.exits: dict[int, int] = {}  # request id -> exit code, until taken

    @property
    def status(self) -> dict:
        """What the parent said once its imports were done (waits for it the first time)."""
        if self._status is None:
            msg = self._read_until(lambda m: "ready" in m, self._timeout)
            if msg is None:
                raise WarmParentError(f"the warm parent did not start within {self._timeout:g} s")
            self._status = msg["ready"]
        return self._status

    def alive(self) -> bool:
        return self.proc.poll() is None

    def read(self, timeout: float) -> dict | None:
        """The next message, or None at ``timeout``; an exit is also kept in ``exits``."""
        try:
            if not self.conn.poll(max(0.0, timeout)):
                return None
            msg = self.conn.recv()
        except (EOFError, OSError):
            raise WarmParentError(
                f"the warm parent exited (code {self.proc.wait()}); see the sweep's stderr"
            ) from None
        if "exit" in msg:  # keyed by request: a reused pid cannot answer for an earlier child
            self.exits[msg["exit"]] = msg["rc"]
        return msg

    def _read_until(self, want, timeout: float) -> dict | None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            msg = self.read(deadline - time.monotonic())
            if msg is not None and want(msg):
                return msg
        return None

    def _send(self, req: dict) -> None:
        self.status  # noqa: B018 - ready first
        try:
            self.conn.send(req)
        except OSError:  # BrokenPipeError
            raise WarmParentError("the warm parent is gone") from None

    def spawn(self, target: str, kwargs: dict, env: dict, cores, log,
              cpu_compile: bool = False) -> tuple[int, int]:  # fmt: skip
        """Fork a child running ``target(**kwargs)``: (request id, pid = its process group).
        ``cpu_compile``: the child compiles on the CPU (the parent probes the ISAs first, once)."""
        self._next += 1
        req = {"op": "spawn", "id": self._next, "target": target, "kwargs": kwargs, "env": env,
               "cores": list(cores) if cores else None, "log": str(log), "cpu_compile": cpu_compile}  # fmt: skip
        self._send(req)
        limit = 300.0 if cpu_compile else 60.0  # the first ISA probe: 15 s on 2 cores
        msg = self._read_until(lambda m: m.get("spawned") == req["id"], limit)
        if msg is None:
            raise WarmParentError(f"the warm parent did not fork within {limit:g} s")
        return req["id"], msg["pid"]

    def query(self) -> dict:
        self._send({"op": "status"})
        return self._read_until(lambda m: "status" in m, 30.0)["status"]

    def close(self) -> None:
        """End the parent: it kills the cells it still has."""
        if self._status is None:  # still importing (a bad point, Ctrl-C): it forked nothing
            self.proc.kill()
        self.conn.close()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


# -- the parent's end ---------------------------------------------------------------------------
def _gpus() -> int:
    """GPUs this host has, asked of NVML, else of a throwaway process: never of the driver here."""
    import torch

    n = torch.cuda._device_count_nvml() if hasattr(torch.cuda, "_device_count_nvml") else -1
    if n >= 0 or not torch.version.cuda:
        return max(n, 0)
    r = subprocess.run([sys.executable, "-c", "import torch; print(torch.cuda.device_count())"],
                       capture_output=True, text=True)  # fmt: skip
    return int(r.stdout.strip() or 0) if r.returncode == 0 else 0


def _status(base: dict) -> dict:
    import torch

    return {
        **base,
        "pid": os.getpid(),
        "torch": str(torch.__version__),  # a TorchVersion would import torch where unpickled
        "cuda_initialized": torch.cuda.is_initialized(),
        "cuda_driver_initialized": driver_initialised(),
        "nvml_check": os.environ.get("PYTORCH_NVML_BASED_CUDA_CHECK"),
        "threads": len(os.listdir("/proc/self/task")) if os.path.isdir("/proc/self/task") else None,
        "gc_frozen": gc.get_freeze_count(),
        "eager_only": "torch._inductor.compile_fx" not in sys.modules,
    }


def _warm_up(prewarm_on: bool, eager: bool) -> dict:
    """Imports, prewarm, frozen gc; the status to announce. Exits if CUDA got initialised.
    ``eager``: no cell of the sweep compiles: Dynamo and Inductor are left unimported."""
    os.environ["PYTORCH_NVML_BASED_CUDA_CHECK"] = "1"
    # Python 3.12+ warns on fork() beside threads: torch's one native thread holds nothing a cell uses
    warnings.filterwarnings("ignore", message=r".*multi-threaded, use of fork\(\)",
                            category=DeprecationWarning)  # fmt: skip
    t = time.perf_counter()
    for mod in WARM_EAGER if eager else WARM:
        try:
            importlib.import_module(mod)
        except ImportError as e:
            if mod.startswith("study") or mod == "torch":
                raise
            print(f"[study.warm_parent] optional import {mod} failed: {e}", file=sys.stderr)
    import torch

    git_revision()  # once here, inherited by every cell
    code_hash()
    base = {"variants": {n: list(registry.get(n).shape_keys) for n in registry.names()},
            "imports_s": time.perf_counter() - t, "device_count": _gpus()}  # fmt: skip
    base["cuda_available"] = base["device_count"] > 0
    base["prewarm_s"] = prewarm(base["device_count"], compiled=not eager) if prewarm_on else {}
    # Frozen, a cell's gc.collect() walks only the cell's own objects (0.7-1.0 s a cell before).
    gc.collect()
    gc.freeze()
    status = _status(base)
    if torch.cuda.is_initialized() or status["cuda_driver_initialized"]:
        who = "torch" if torch.cuda.is_initialized() else "the driver (cuInit, behind torch's back)"
        sys.exit(
            f"[study.warm_parent] CUDA is initialised in the warm parent, by {who}: forked cells could not "
            "use it. An import or the prewarm did it; hydra.launcher.prewarm=false tells which "
            "(benchmarks/fork_probe.py checks each import)."
        )
    return status


def _child(req: dict, parent: int, conn) -> None:
    """In the forked child: become the cell's own process (its own session, dies with the
    parent, no pipe to the sweep, stdin from /dev/null, output to its log, env applied,
    pinned), run, never return."""
    code = 1
    try:
        conn.close()  # held here, it would hide the parent's death from the sweep
        os.setsid()
        die_with_parent()
        if os.getppid() != parent:  # the parent died between fork and prctl
            os._exit(1)
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGCHLD):
            signal.signal(sig, signal.SIG_DFL)
        os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
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


def _reap(children: dict, send) -> None:
    """Report every child that has exited."""
    while children:
        try:
            pid, st = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        rc = -os.WTERMSIG(st) if os.WIFSIGNALED(st) else os.WEXITSTATUS(st)
        send({"exit": children.pop(pid, None), "pid": pid, "rc": rc})


def serve(conn, cores: list, prewarm_on: bool = True, eager: bool = False) -> None:
    """The parent: warm up, announce, then fork on request until the pipe ends."""
    die_with_parent()
    if cores:
        os.sched_setaffinity(0, cores)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the sweep's to handle
    status = _warm_up(prewarm_on, eager)
    conn.send({"ready": status})
    children: dict[int, object] = {}  # pid -> request id
    try:
        while True:
            _reap(children, conn.send)
            if not conn.poll(0.02):
                continue
            _answer(conn.recv(), conn, children, status, prewarm_on)
    except (EOFError, OSError):  # the sweep is gone (a send to its closed end: BrokenPipeError;
        # its SIGTERM's cleanup closes the pipe as the cells it killed are reaped): so are its cells
        for pid in children:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(pid, signal.SIGKILL)


def _answer(req: dict, conn, children: dict, status: dict, prewarm_on: bool) -> None:
    """One request of the sweep: its status, or a cell forked (never returns in the child)."""
    if req.get("op") == "status":
        conn.send({"status": _status(status)})  # the live fields asked again
    elif req.get("op") == "spawn":
        if req.get("cpu_compile") and prewarm_on and "cpu_isa" not in status["prewarm_s"]:
            status["prewarm_s"]["cpu_isa"] = cpu_isa()
        sys.stdout.flush()
        me = os.getpid()
        pid = os.fork()
        if pid == 0:
            _child(req, me, conn)
        children[pid] = req.get("id")
        conn.send({"spawned": req.get("id"), "pid": pid})


if __name__ == "__main__":  # started by WarmParent: its end's fd, then serve's options as JSON
    serve(Connection(int(sys.argv[1])), **json.loads(sys.argv[2]))
