"""Listening cell servers: a multi-GPU sweep's main process starts them, its job processes
(loky workers) claim one each (study.client, study.sweep)."""

import fcntl
import json
import os
import subprocess
import sys
import threading
import time

import pytest

from study import sweep
from study.client import Client, start_listening
from study.sweep import group_alive

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


pytestmark = pytest.mark.xdist_group("client")  # its module fixture, once


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


@pytest.mark.slow
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


@pytest.mark.slow
def test_a_cell_of_a_client_that_left_is_not_reported_to_the_next(listening, tmp_path):
    """Request ids are each client's own: the exit of a killed cell of client A, id 1, must not
    answer for client B's cell id 1."""
    _, path = listening
    a = Client.attach(path)
    pid = a.spawn("tests.forked:hang", {"mb": 512}, {}, None, tmp_path / "a.log")  # request 1
    assert a.wait(pid, 1.0) is None  # its memory written: its death, after a leaves, is slow
    b = Client.attach(path)  # waits while a is served
    a.close()
    assert b.status["cuda_initialized"] is False
    pid = b.spawn("tests.forked:hang", {}, {}, None, tmp_path / "b.log")  # request 1 of b
    assert b.wait(pid, 1.0) is None  # still running: no stale exit answered for it
    b.close()


@pytest.mark.slow
def test_job_processes_claim_one_prestarted_server_each(monkeypatch):
    # what prestart() exports for the job processes is this test's alone
    for key in (
        "STUDY_SERVERS",
        "STUDY_SERVERS_OWNER",
        "PYTHONPYCACHEPREFIX",
        "PYTHONDONTWRITEBYTECODE",
    ):
        monkeypatch.setenv(key, "")
        monkeypatch.delenv(key)
    monkeypatch.setattr(sweep, "_SERVER", None)
    monkeypatch.setattr(sweep, "_LOCK", None)
    done = threading.Thread(target=lambda: None)  # as if the workloads were imported already
    done.start()
    done.join()
    monkeypatch.setattr(sweep, "_IMPORTING", done)
    paths = sweep.prestart(2)
    try:
        assert len(paths) == 2 and os.environ["STUDY_SERVERS"] == os.pathsep.join(paths)
        assert sweep.server() is sweep._SERVER and sweep._SERVER.path == paths[0]
        # another job process (a child of this one) gets the other, and asks it for the GPUs
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
        # a process whose variable came from elsewhere claims none
        monkeypatch.setenv("STUDY_SERVERS_OWNER", "1")
        assert sweep._claim() is None
        monkeypatch.setenv("STUDY_SERVERS_OWNER", str(os.getpid()))
        # the server this process holds dies: the next cell's server() lets it go and claims
        # the free one (that child process is gone)
        sweep._OWNED[0].kill()
        sweep._OWNED[0].wait()
        assert sweep.server().path == paths[1] and sweep._LOCK[0] == paths[1]
        with open(paths[0] + ".lock", "a") as f:  # released
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        assert sweep._claim() is None  # the dead one listens no more; the other is held
        sweep._SERVER.close()
    finally:
        sweep.stop_prestarted()
    assert "STUDY_SERVERS" not in os.environ
    assert sweep._claim() is None


@pytest.mark.slow
def test_the_owner_leaving_ends_a_listening_server(tmp_path):
    path = str(tmp_path / "s.sock")
    proc = start_listening(path)
    c = Client.attach(path)
    c.status  # noqa: B018 - ready
    proc.stdin.close()
    assert proc.wait(30) == 0
    assert not c.alive() and not os.path.exists(path)


@pytest.mark.slow
def test_a_custom_target_resolves_while_the_workloads_import_in_the_background():
    """A job process imports the workloads (torch) in a thread while its server gets ready;
    resolving a custom variant whose target is in torch must wait for it, not import
    ``torch.nn`` from a half-imported ``torch``."""
    code = """if True:
        import time
        from tests.conftest import compose
        cfg = compose("variant=custom", "variant.target=torch.nn.Softmax",
                      "+variant.kwargs.dim=-1", "family=attention",
                      "variant.inputs=tests.test_custom.scores")
        from study import sweep
        sweep.import_workloads_in_background()
        time.sleep(0.2)  # inside torch's __init__ by now
        d = sweep.resolve(cfg, False)
        from study.workloads import registry
        print(d["variant"]["target"], len(registry.names()) > 10)
    """
    r = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=300
    )
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.split() == ["torch.nn.Softmax", "True"]


@pytest.mark.slow
def test_a_job_process_resolves_a_registered_variant_without_torch():
    """The shape keys of a registered variant come from the server's status: a job process
    (a loky worker, or the main process of a one-GPU sweep) never imports torch for them."""
    code = """if True:
        import sys
        from tests.conftest import compose
        from study import sweep
        cfg = compose("variant=flash")
        d = sweep.resolve(cfg, True, {"flash": ["batch", "heads", "seq_len", "head_dim"]})
        print("torch" in sys.modules, d["device"], d["shape"]["seq_len"] is not None)
    """
    r = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=300
    )
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.split() == ["False", "cuda", "True"]
