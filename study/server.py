"""The warm cell server: import torch, Dynamo, Inductor and Triton once; fork a fresh child per cell.

    python -m study.server        # started by study.sweep; speaks JSON lines on stdin/stdout

Why: a cell spent 6-10 s of its life importing (H200 host) for < 1 s of measured work. The
server pays the imports once per sweep process and forks each cell from that warm state. A
forked child is as isolated as a new process for what the study cares about: the parent never
compiles, never touches CUDA and never runs an op, so every child starts with a fresh Dynamo
state, Inductor config, CUDA context, allocator and compile caches (chosen by the child's
own environment), and a child that crashes or hangs costs only its own row.

The parent must never initialise CUDA: a child cannot use a CUDA context its parent made.
The server sets ``PYTORCH_NVML_BASED_CUDA_CHECK=1`` before importing torch, so
``torch.cuda.is_available()`` asks NVML instead of the driver, and refuses to serve if CUDA
is initialised after its imports, by torch or by the driver itself (``driver_initialised``;
``benchmarks/fork_probe.py`` checks each import on a GPU).

Beyond imports, the server does once what every cell repeated and needs no device
(``study.prewarm``; ``STUDY_PREWARM=off`` skips it), then freezes its objects for the garbage
collector (``gc.freeze``), so a cell's ``gc.collect()`` walks only the cell's own objects.
Where torch has no bytecode cache, the server keeps one (``study.pycache``).

Protocol, one JSON object per line:

    -> {"op": "spawn", "id": ID, "target": "pkg.mod:func", "kwargs": {...}, "env": {...},
        "cores": [..] | null, "log": PATH}
    <- {"spawned": ID, "pid": PID}
    <- {"exit": ID, "pid": PID, "rc": RC}          # RC < 0: killed by signal -RC
    -> {"op": "status"}    <- {"status": {...}}
    <- {"ready": {...}}    (once, after the imports)

The child: new session (its group is killable as one), dies with the server
(PR_SET_PDEATHSIG), stdin from /dev/null, stdout and stderr to ``log``, ``env`` applied,
pinned to ``cores``, default signal handlers; then ``target(**kwargs)`` and ``os._exit``.
End of stdin ends the server and kills its children.
"""

from __future__ import annotations

import ctypes
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
from pathlib import Path

from study.prewarm import WARM, driver_initialised, prewarm
from study.pycache import bytecode_cache

PR_SET_PDEATHSIG = 1


def die_with_parent() -> None:
    try:
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    except (OSError, AttributeError):
        pass  # not Linux: the child still ends when its stdin closes or the group is killed


_PROTO = None  # the protocol's own stream: fd 1 goes to stderr, so a stray print cannot break it


def _send(msg: dict) -> None:
    _PROTO.write(json.dumps(msg) + "\n")
    _PROTO.flush()


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


def _status(imports_s: float, gpus: int, warmed: dict | None = None) -> dict:
    import torch

    return {
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


def serve() -> None:
    global _PROTO
    _PROTO = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)  # imports and libraries that print do so on stderr
    os.environ["PYTORCH_NVML_BASED_CUDA_CHECK"] = "1"
    die_with_parent()
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the sweep's to handle
    # Python 3.12+ warns on fork() with threads running. The one other thread is a native
    # thread torch starts at import; a forked child uses nothing it holds (DataLoader forks its
    # workers from such processes all the time).
    warnings.filterwarnings(
        "ignore", message=r".*multi-threaded, use of fork\(\)", category=DeprecationWarning
    )
    t = time.perf_counter()
    for mod in WARM:
        try:
            importlib.import_module(mod)
        except ImportError as e:
            if mod.startswith("study") or mod == "torch":
                raise
            print(f"[study.server] optional import {mod} failed: {e}", file=sys.stderr)
    import torch

    from study.env import git_revision

    git_revision()  # once here, inherited by every cell
    imports_s = time.perf_counter() - t
    gpus = _gpus()
    warmed = {} if os.environ.get("STUDY_PREWARM", "").lower() == "off" else prewarm(gpus)
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
            "use it. An import or the prewarm did it; STUDY_PREWARM=off tells which "
            "(benchmarks/fork_probe.py checks each import)."
        )
    _send({"ready": status})
    children: dict[int, object] = {}  # pid -> request id
    buf = b""
    stdin = sys.stdin.buffer.raw if hasattr(sys.stdin.buffer, "raw") else sys.stdin.buffer
    while True:
        while children:  # reap first: exits are reported as soon as they happen
            try:
                pid, st = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                break
            if pid == 0:
                break
            rc = -os.WTERMSIG(st) if os.WIFSIGNALED(st) else os.WEXITSTATUS(st)
            _send({"exit": children.pop(pid, None), "pid": pid, "rc": rc})
        ready, _, _ = select.select([stdin], [], [], 0.02)
        if not ready:
            continue
        chunk = os.read(stdin.fileno(), 65536)
        if not chunk:  # the sweep is gone: so are its cells
            for pid in children:
                try:
                    os.killpg(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            return
        buf += chunk
        while b"\n" in buf:
            line, buf = buf.split(b"\n", 1)
            if not line.strip():
                continue
            req = json.loads(line)
            if req.get("op") == "status":
                _send({"status": _status(status["imports_s"], gpus, warmed)})
            elif req.get("op") == "spawn":
                sys.stdout.flush()
                me = os.getpid()
                pid = os.fork()
                if pid == 0:
                    _child(req, me)
                children[pid] = req.get("id")
                _send({"spawned": req.get("id"), "pid": pid})


class ServerError(RuntimeError):
    """The cell server could not start or stopped answering."""


class Client:
    """The sweep's side of one server process (study.sweep holds one per process)."""

    def __init__(self, env: dict | None = None, cores: list[int] | None = None, timeout=300.0):
        root = str(Path(__file__).resolve().parent.parent)
        env = {**os.environ, **(env or {}), "PYTHONUNBUFFERED": "1"}
        env.update(bytecode_cache(env))
        env["PYTHONPATH"] = root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")

        def pre():
            die_with_parent()
            if cores:
                os.sched_setaffinity(0, cores)

        self.proc = subprocess.Popen(
            [sys.executable, "-m", "study.server"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=env,
            preexec_fn=pre,
        )
        self._buf = b""
        self._exits: dict[int, int] = {}  # request id -> exit code
        self._rid: dict[int, int] = {}  # pid -> request id, while the child lives
        self._next = 0
        self._timeout = timeout
        self._status = None

    @property
    def status(self) -> dict:
        """What the server said once its imports were done (waits for it the first time)."""
        if self._status is None:
            msg = self._read_until(lambda m: "ready" in m, self._timeout)
            if msg is None:
                raise ServerError(f"the cell server did not start within {self._timeout:g} s")
            self._status = msg["ready"]
        return self._status

    def alive(self) -> bool:
        return self.proc.poll() is None

    def _read(self, timeout: float) -> dict | None:
        if b"\n" not in self._buf:
            ready, _, _ = select.select([self.proc.stdout], [], [], max(0.0, timeout))
            if not ready:
                return None
            chunk = os.read(self.proc.stdout.fileno(), 65536)
            if not chunk:
                raise ServerError(
                    f"the cell server exited (code {self.proc.wait()}); see the sweep's stderr"
                )
            self._buf += chunk
            if b"\n" not in self._buf:
                return None
        line, self._buf = self._buf.split(b"\n", 1)
        msg = json.loads(line)
        if "exit" in msg:  # keyed by request: a reused pid cannot answer for an earlier child
            self._exits[msg["exit"]] = msg["rc"]
        return msg

    def _read_until(self, want, timeout: float) -> dict | None:
        deadline = time.monotonic() + timeout
        while True:
            msg = self._read(deadline - time.monotonic())
            if msg is not None and want(msg):
                return msg
            if msg is None and time.monotonic() >= deadline:
                return None

    def _request(self, req: dict) -> None:
        try:
            self.proc.stdin.write((json.dumps(req) + "\n").encode())
            self.proc.stdin.flush()
        except BrokenPipeError:
            raise ServerError("the cell server is gone") from None

    def spawn(self, target: str, kwargs: dict, env: dict, cores, log: Path) -> int:
        """Fork a child running ``target(**kwargs)``; returns its pid (= its process group)."""
        self.status  # noqa: B018 - ready first
        self._next += 1
        rid = self._next
        self._request(
            {
                "op": "spawn",
                "id": rid,
                "target": target,
                "kwargs": kwargs,
                "env": env,
                "cores": list(cores) if cores else None,
                "log": str(log),
            }
        )
        msg = self._read_until(lambda m: m.get("spawned") == rid, 60.0)
        if msg is None:
            raise ServerError("the cell server did not fork within 60 s")
        self._rid[msg["pid"]] = rid
        return msg["pid"]

    def wait(self, pid: int, timeout: float | None) -> int | None:
        """The child's exit code (negative: killed by that signal), or None at ``timeout``."""
        rid = self._rid[pid]
        deadline = None if timeout is None else time.monotonic() + timeout
        while rid not in self._exits:
            left = 1.0 if deadline is None else deadline - time.monotonic()
            if left <= 0:
                return None
            self._read(min(left, 1.0))
        del self._rid[pid]
        return self._exits.pop(rid)

    def query(self) -> dict:
        self.status  # noqa: B018 - ready first
        self._request({"op": "status"})
        return self._read_until(lambda m: "status" in m, 30.0)["status"]

    def close(self) -> None:
        try:
            self.proc.stdin.close()
        except OSError:
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()


if __name__ == "__main__":
    serve()
