"""Listening cell servers: a multi-GPU sweep's main process starts them, its job processes
(loky workers) claim one each (study.client, study.sweep)."""

import json
import os
import subprocess
import sys
import time

import pytest

from study import sweep
from study.client import Client, start_listening
from study.sweep import group_alive

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture(scope="module")
def listening(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("srv") / "s.sock")
    proc = start_listening(path)
    yield proc, path
    proc.stdin.close()
    proc.wait(30)


def spawn(client, tmp_path, target, **kwargs):
    out = tmp_path / f"{target}.json"
    pid = client.spawn(
        f"tests.forked:{target}", {"out": str(out), **kwargs}, {}, None, tmp_path / f"{target}.log"
    )
    return pid, out


def test_a_listening_server_serves_one_client_after_another(listening, tmp_path):
    proc, path = listening
    a = Client.attach(path)
    assert a.status["cuda_initialized"] is False and a.status["pid"] == proc.pid
    pid, out = spawn(a, tmp_path, "open_fds")
    assert a.wait(pid, 120) == 0, (tmp_path / "open_fds.log").read_text()[-2000:]
    held = json.loads(out.read_text())["fds"].values()
    assert not [f for f in held if f.startswith("socket:")]  # neither the listener nor a client's
    hang = a.spawn("tests.forked:hang", {}, {}, None, tmp_path / "hang.log")
    assert a.wait(hang, 0.5) is None
    a.close()  # a client that leaves takes its cells with it
    deadline = time.monotonic() + 30
    while group_alive(hang) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not group_alive(hang)
    b = Client.attach(path)  # and the next client is served, by the same warm server
    assert b.status["pid"] == proc.pid and b.alive()
    pid, out = spawn(b, tmp_path, "inductor_flag")
    assert b.wait(pid, 120) == 0 and json.loads(out.read_text())["value"] is False
    assert b.pin([sorted(os.sched_getaffinity(0))[0]]) == [sorted(os.sched_getaffinity(0))[0]]
    b.close()


def test_job_processes_claim_one_prestarted_server_each(monkeypatch):
    monkeypatch.delenv("STUDY_SERVERS", raising=False)
    monkeypatch.setattr(sweep, "_SERVER", None)
    monkeypatch.setattr(sweep, "_LOCK", None)
    paths = sweep.prestart(2)
    try:
        assert len(paths) == 2 and os.environ["STUDY_SERVERS"] == os.pathsep.join(paths)
        first = sweep._claim()
        held = sweep._LOCK
        assert first.path == paths[0]
        # another job process gets the other one, and asks it for the GPUs
        code = (
            "from study import sweep; n = sweep.gpu_count(); "
            "print(sweep._SERVER.path, n, sweep._SERVER.status['device_count'])"
        )
        r = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=300
        )
        assert r.returncode == 0, r.stderr[-2000:]
        path, n, asked = r.stdout.split()
        assert path == paths[1] and n == asked
        # that process is gone, so its server is free again; with both held, none is left
        second = sweep._claim()
        assert second.path == paths[1] and sweep._claim() is None
        sweep._LOCK = held
        for c in (first, second):
            c.close()
    finally:
        sweep.stop_prestarted()
    assert "STUDY_SERVERS" not in os.environ
    assert sweep._claim() is None


def test_the_owner_leaving_ends_a_listening_server(tmp_path):
    path = str(tmp_path / "s.sock")
    proc = start_listening(path)
    c = Client.attach(path)
    c.status  # noqa: B018 - ready
    proc.stdin.close()
    assert proc.wait(30) == 0
    assert not c.alive() and not os.path.exists(path)
