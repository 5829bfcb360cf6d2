"""The sweep's side of a warm cell server (study.server): start one and talk to it.

``Client()`` starts a server process and speaks to it on its stdin/stdout. A multi-GPU sweep's
main process starts listening servers while the sweep is checked (``start_listening``), and each
job process (a loky worker) attaches to one (``Client.attach``): see study.sweep.
"""

from __future__ import annotations

import json
import os
import select
import socket
import subprocess
import sys
import time
from pathlib import Path

from study.pycache import bytecode_cache
from study.server import die_with_parent, libc_prctl


class ServerError(RuntimeError):
    """The cell server could not start or stopped answering."""


def _server_env(env: dict | None) -> dict:
    root = str(Path(__file__).resolve().parent.parent)
    env = {**os.environ, **(env or {}), "PYTHONUNBUFFERED": "1"}
    for key in ("STUDY_SERVERS", "STUDY_SERVERS_OWNER"):  # the sweep's, not its cells'
        env.pop(key, None)
    env.update(bytecode_cache(env))
    env["PYTHONPATH"] = root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return env


def _start(args: list[str], env: dict | None, cores, stdout) -> subprocess.Popen:
    libc_prctl()  # looked up here: the child only calls it (the sweep's check may have threads)

    def pre():
        die_with_parent()
        if cores:
            os.sched_setaffinity(0, cores)

    return subprocess.Popen(
        [sys.executable, "-m", "study.server", *args],
        stdin=subprocess.PIPE,
        stdout=stdout,
        env=_server_env(env),
        preexec_fn=pre,
    )


def start_listening(
    path: str, env: dict | None = None, cores=None, wait: bool = True
) -> subprocess.Popen:
    """Start a server that serves clients on the Unix socket ``path`` (``Client.attach``);
    ``wait``: until it listens (it binds before its imports: a fraction of a second).
    It lives while the returned process's stdin is open: close it to end the server."""
    proc = _start(["--listen", path], env, cores, subprocess.DEVNULL)
    if wait:
        bound([(path, proc)])
    return proc


def bound(servers, timeout: float = 30.0) -> list[str]:
    """The paths of ``[(path, process)]`` that listen, once each listens or has died."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and not all(
        os.path.exists(p) or proc.poll() is not None for p, proc in servers
    ):
        time.sleep(0.01)
    return [p for p, proc in servers if os.path.exists(p) and proc.poll() is None]


class Client:
    """The sweep's side of one server: a process it started (stdin/stdout), or a listening
    server it attached to (``Client.attach``). study.sweep holds one per process."""

    def __init__(self, env: dict | None = None, cores: list[int] | None = None, timeout=300.0):
        self.proc = _start([], env, cores, subprocess.PIPE)
        self.sock = None
        self.path = None
        self._rfd = self.proc.stdout.fileno()
        self._init(timeout)
        self.pinned = list(cores) if cores else None

    @classmethod
    def attach(cls, path: str, timeout=300.0) -> Client:
        """A client of the listening server at ``path`` (raises OSError if none listens)."""
        self = cls.__new__(cls)
        self.proc = None
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            self.sock.connect(path)
        except OSError:
            self.sock.close()
            raise
        self.path = path
        self._rfd = self.sock.fileno()
        self._init(timeout)
        return self

    def _init(self, timeout: float) -> None:
        self._buf = b""
        self._exits: dict[int, int] = {}  # request id -> exit code
        self._rid: dict[int, int] = {}  # pid -> request id, while the child lives
        self._next = 0
        self._timeout = timeout
        self._status = None
        self._closed = False
        self.pinned = None  # the cores the server's threads are pinned to, where known

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
        if self._closed:
            return False
        if self.proc is not None:
            return self.proc.poll() is None
        while True:  # read what waits (kept for _read): the end of it tells a dead server
            try:
                chunk = self.sock.recv(65536, socket.MSG_DONTWAIT)
            except BlockingIOError:
                return True
            except OSError:
                return False
            if not chunk:
                return False
            self._buf += chunk

    def _gone(self) -> str:
        if self.proc is not None:
            return f"the cell server exited (code {self.proc.wait()}); see the sweep's stderr"
        return f"the cell server at {self.path} closed the connection (it died, or its sweep ended)"

    def _read(self, timeout: float) -> dict | None:
        if b"\n" not in self._buf:
            ready, _, _ = select.select([self._rfd], [], [], max(0.0, timeout))
            if not ready:
                return None
            try:
                chunk = os.read(self._rfd, 65536)
            except OSError:
                chunk = b""
            if not chunk:
                self._closed = self.proc is None
                raise ServerError(self._gone())
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
        data = (json.dumps(req) + "\n").encode()
        try:
            if self.proc is not None:
                self.proc.stdin.write(data)
                self.proc.stdin.flush()
            else:
                self.sock.sendall(data)
        except OSError:  # BrokenPipeError, ConnectionResetError
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

    def pin(self, cores) -> list[int]:
        """Pin the server's own threads to ``cores`` (its cells get theirs at spawn)."""
        self.status  # noqa: B018 - ready first
        self._request({"op": "pin", "cores": list(cores)})
        msg = self._read_until(lambda m: "pinned" in m, 30.0)
        if msg is None:
            raise ServerError("the cell server did not answer a pin request within 30 s")
        self.pinned = list(cores)
        return msg["pinned"]

    def close(self) -> None:
        """End the server (a process this client started), or leave it (an attached one: its
        cells from this client are killed, and it serves the next client)."""
        self._closed = True
        if self.sock is not None:
            self.sock.close()
            return
        try:
            self.proc.stdin.close()
        except OSError:
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
