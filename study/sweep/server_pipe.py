"""The sweep's end of the warm parent's pipe (study.sweep.server): start it, fork cells, hear exits."""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
import time
from pathlib import Path

from study.sweep.pycache import bytecode_cache
from study.sweep.server import die_with_parent, libc_prctl

ROOT = str(Path(__file__).resolve().parents[2])


class ServerError(RuntimeError):
    """The warm parent could not start or stopped answering."""


class Server:
    """One warm parent, started now (it imports while the sweep goes on), pinned to ``cores``."""

    def __init__(self, cores=None, prewarm: bool = True, pycache: str = "auto", timeout=300.0,
                 eager: bool = False):  # fmt: skip
        libc_prctl()  # looked up here: the child only calls it (this process may have threads)

        def pre():
            die_with_parent()
            if cores:
                os.sched_setaffinity(0, cores)

        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        env.update(bytecode_cache(env, pycache))
        env["PYTHONPATH"] = ROOT + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
        args = ([] if prewarm else ["--no-prewarm"]) + (["--eager"] if eager else [])
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "study.sweep.server", *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=env,
            preexec_fn=pre,
        )
        self._buf = b""
        self._status = None
        self._timeout = timeout
        self._next = 0
        self.exits: dict[int, int] = {}  # request id -> exit code, until taken

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

    def read(self, timeout: float) -> dict | None:
        """The next message, or None at ``timeout``; an exit is also kept in ``exits``."""
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
            self.exits[msg["exit"]] = msg["rc"]
        return msg

    def _read_until(self, want, timeout: float) -> dict | None:
        deadline = time.monotonic() + timeout
        while True:
            msg = self.read(deadline - time.monotonic())
            if msg is not None and want(msg):
                return msg
            if msg is None and time.monotonic() >= deadline:
                return None

    def _send(self, req: dict) -> None:
        try:
            self.proc.stdin.write((json.dumps(req) + "\n").encode())
            self.proc.stdin.flush()
        except OSError:  # BrokenPipeError
            raise ServerError("the cell server is gone") from None

    def spawn(self, target: str, kwargs: dict, env: dict, cores, log: Path,
              cpu_compile: bool = False) -> tuple[int, int]:  # fmt: skip
        """Fork a child running ``target(**kwargs)``: (request id, pid = its process group).
        ``cpu_compile``: the child compiles on the CPU (the server probes the ISAs first, once)."""
        self.status  # noqa: B018 - ready first
        self._next += 1
        rid = self._next
        self._send(
            {
                "op": "spawn",
                "id": rid,
                "target": target,
                "kwargs": kwargs,
                "env": env,
                "cores": list(cores) if cores else None,
                "log": str(log),
                "cpu_compile": cpu_compile,
            }
        )
        limit = 300.0 if cpu_compile else 60.0  # the first ISA probe: 15 s on 2 cores
        msg = self._read_until(lambda m: m.get("spawned") == rid, limit)
        if msg is None:
            raise ServerError(f"the cell server did not fork within {limit:g} s")
        return rid, msg["pid"]

    def query(self) -> dict:
        self.status  # noqa: B018 - ready first
        self._send({"op": "status"})
        return self._read_until(lambda m: "status" in m, 30.0)["status"]

    def close(self) -> None:
        """End the server: it kills the cells it still has."""
        if self._status is None:  # still importing (a bad point, Ctrl-C): it forked nothing
            self.proc.kill()
        try:
            self.proc.stdin.close()
        except OSError:
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
