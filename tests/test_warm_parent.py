"""The warm parent: imports once, never touches CUDA, forks cells that share nothing."""

import json
import os
import signal

import pytest

from study.sweep.warm_parent import WarmParent

pytestmark = [
    pytest.mark.slow,
    pytest.mark.xdist_group("warm_parent"),
]  # every test forks cells of one warm parent


@pytest.fixture(scope="module")
def parent():
    s = WarmParent()  # puts the repository first on the parent's PYTHONPATH, keeps the rest
    yield s
    s.close()


def wait(parent, rid, timeout):
    """The child's exit code, or None at ``timeout``."""
    import time

    deadline = time.monotonic() + timeout
    while rid not in parent.exits and time.monotonic() < deadline:
        parent.read(min(0.5, max(0.0, deadline - time.monotonic())))
    return parent.exits.pop(rid, None)


def run(parent, tmp_path, target, timeout=120, cpu_compile=False, **kwargs):
    out = tmp_path / f"{target}.json"
    rid, _ = parent.spawn(
        f"tests.forked:{target}", {"out": str(out), **kwargs}, {}, None,
        tmp_path / f"{target}.log", cpu_compile=cpu_compile,
    )  # fmt: skip
    rc = wait(parent, rid, timeout)
    assert rc == 0, (tmp_path / f"{target}.log").read_text()[-2000:]
    return json.loads(out.read_text())


def test_the_warm_parent_never_initialises_cuda(parent):
    st = parent.query()
    assert st["cuda_initialized"] is False and st["nvml_check"] == "1"
    assert st["imports_s"] > 0 and st["pid"] == parent.status["pid"]
    # asked of the driver itself (None: no driver here); True would have stopped the parent
    assert st["cuda_driver_initialized"] in (False, None)


def test_the_warm_parent_names_each_registered_variant_with_its_shape_keys(parent):
    """What the sweep needs to check and resolve a registered variant without importing torch."""
    from study.workloads import registry

    want = {n: list(registry.get(n).shape_keys) for n in registry.names()}
    assert parent.status["variants"] == want and parent.query()["variants"] == want
    assert "custom" not in want  # a variant of your own is resolved where it is named


def test_a_cell_inherits_the_warm_state_frozen(parent, tmp_path):
    """gc.freeze() after the imports: a cell's gc.collect() walks only what the cell made."""
    got = run(parent, tmp_path, "gc_state")
    assert got["enabled"] is True
    assert got["frozen"] > 10_000  # torch's own objects, imported once by the parent
    assert (
        got["frozen"] > 0.9 * parent.query()["gc_frozen"]
    )  # the parent's, less what the cell freed


def test_an_inductor_setting_of_one_cell_is_not_seen_by_the_next(parent, tmp_path):
    assert run(parent, tmp_path, "inductor_flag", set_to=True)["value"] is True
    assert run(parent, tmp_path, "inductor_flag")["value"] is False


def test_dynamo_state_of_one_cell_is_not_seen_by_the_next(parent, tmp_path):
    a = run(parent, tmp_path, "dynamo_flag", set_to=True)
    assert a["value"] is True and a["compiles"] == 1
    b = run(parent, tmp_path, "dynamo_flag")
    assert b["value"] is False and b["compiles"] == 0


def test_a_cell_runs_on_the_cores_it_was_given(parent, tmp_path):
    core = sorted(os.sched_getaffinity(0))[-1]
    out = tmp_path / "c.json"
    rid, _ = parent.spawn(
        "tests.forked:cuda_state", {"out": str(out)}, {}, [core], tmp_path / "c.log"
    )
    assert wait(parent, rid, 60) == 0
    assert json.loads(out.read_text()) == {"initialized": False, "affinity": [core]}


def test_a_segfault_or_a_hang_costs_only_its_own_cell(parent, tmp_path):
    rid, _ = parent.spawn("tests.forked:segv", {}, {}, None, tmp_path / "segv.log")
    assert wait(parent, rid, 60) == -signal.SIGSEGV
    rid, pid = parent.spawn("tests.forked:hang", {}, {}, None, tmp_path / "hang.log")
    assert wait(parent, rid, 1.0) is None  # still running at the timeout
    os.killpg(pid, signal.SIGKILL)  # the child leads its own process group
    assert wait(parent, rid, 30) == -signal.SIGKILL
    assert parent.alive()
    assert run(parent, tmp_path, "inductor_flag")["value"] is False  # the next cell is fine


def test_the_cpu_isa_probe_runs_once_in_the_parent_for_the_first_compiled_cpu_cell(
    parent, tmp_path, monkeypatch
):
    """Inductor's ISA probe (15 s on 2 cores in a cold cache dir) is the host's: the parent does it
    once, lazily, and every compiled CPU cell forked after inherits the answer."""
    from study.sweep import prewarm

    if "cpu_isa" in parent.query()["prewarm_s"]:
        pytest.skip("another test of this parent asked for the probe first")
    assert run(parent, tmp_path, "cpu_isa_state")["known"] == 0  # eager: nobody probed
    first = run(parent, tmp_path, "cpu_isa_state", cpu_compile=True)
    assert first["known"] == 1  # inherited from the parent, not probed by the cell
    assert first["cache_dir"] != str(prewarm.ISA_DIR)  # the probe's dir is not the cells' to use
    took = parent.query()["prewarm_s"]["cpu_isa"]
    assert isinstance(took, float), took
    run(parent, tmp_path, "cpu_isa_state", cpu_compile=True)
    assert parent.query()["prewarm_s"]["cpu_isa"] == took  # once per parent
    assert any(prewarm.ISA_DIR.rglob("*")), "the probe's programs are kept for the next sweep"


def test_an_eager_sweeps_warm_parent_leaves_inductor_out_and_its_cells_run(tmp_path):
    """No cell of the sweep compiles (study.sweep.sweeper.eager_only): the parent imports what
    an eager cell needs, not Dynamo or Inductor (2.4 s of its start on 2 cores)."""
    s = WarmParent(eager=True)
    try:
        assert s.status["eager_only"] is True and s.status["cuda_initialized"] is False
        got = run(s, tmp_path, "modules")
        assert got["inductor"] is False and got["phases"] is True
    finally:
        s.close()


def test_a_cells_multiprocessing_starts_as_in_a_fresh_process(parent, tmp_path):
    """A parent started as a multiprocessing spawn process (tried once) hands its cells the
    spawn start method: tqdm's lock, made in every compile, then became a named semaphore that
    outlived the cell, one warning each at the sweep's end."""
    import subprocess
    import sys

    fresh = subprocess.run([sys.executable, "-c", "import multiprocessing as m; print(m.get_start_method())"],
                           capture_output=True, text=True, check=True).stdout.strip()  # fmt: skip
    assert run(parent, tmp_path, "start_method")["method"] == fresh


def test_the_sweeps_process_hears_the_parent_without_importing_torch():
    """A message is unpickled in the sweep's process: one holding a torch object (torch.__version__
    is a TorchVersion) imported torch there, 0.7 s of the sweep's start on 2 cores."""
    import subprocess
    import sys

    code = ("import sys; from study.sweep.warm_parent import WarmParent; s = WarmParent(prewarm=False, eager=True); "
            "s.status; s.query(); "
            "s.close(); print(sorted(m for m in sys.modules if m.split('.')[0] == 'torch'))")  # fmt: skip
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]", out.stdout


def test_a_warm_parent_that_died_between_cells_is_replaced():
    from study.sweep.scheduler import Scheduler

    sched = Scheduler(1, prewarm=False, eager=True)  # the lightest parent: two are started
    try:
        first = sched.parent()
        first.status  # noqa: B018 - started
        first.proc.kill()
        first.proc.wait()
        assert sched.parent() is not first and sched.status["pid"] != first.status["pid"]
    finally:
        sched.close()


class _ClosedAfterSpawn:
    """The sweep's end of the pipe as its SIGTERM leaves it: one spawn asked, then closed (a
    send raises BrokenPipeError)."""

    def __init__(self, req):
        self.reqs, self.sent = [req], []

    def poll(self, timeout):
        return bool(self.reqs)

    def recv(self):
        return self.reqs.pop()

    def send(self, msg):
        if "exit" in msg:
            raise BrokenPipeError(32, "Broken pipe")
        self.sent.append(msg)

    def close(self):
        pass


def test_a_sweep_gone_while_its_cell_is_reaped_ends_the_parent_without_a_traceback(
    tmp_path, monkeypatch, capsys
):
    """Issue 68: SIGTERM printed a BrokenPipeError traceback before the resume line: the sweep
    closed the pipe while the warm parent reported a cell it had killed."""
    from study.sweep import warm_parent

    monkeypatch.setattr(warm_parent, "_warm_up", lambda *a: {"prewarm_s": {}})
    monkeypatch.setattr(warm_parent, "die_with_parent", lambda: None)
    conn = _ClosedAfterSpawn({"op": "spawn", "id": 1, "target": "os:getpid",
                              "log": str(tmp_path / "cell.log")})  # fmt: skip
    warm_parent.serve(conn, cores=[], prewarm_on=False)  # returns: the sweep is gone
    assert conn.sent[0] == {"ready": {"prewarm_s": {}}} and conn.sent[1]["spawned"] == 1
    assert "Traceback" not in capsys.readouterr().err
