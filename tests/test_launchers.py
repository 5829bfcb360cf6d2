"""Scale-out launchers: the configs compose, and submitit's local executor runs a cell."""

import pytest
from hydra import compose as hcompose
from hydra import initialize_config_dir

from study import io
from study.sweep import slot
from tests.conftest import ROOT, TINY, cli


def compose_hydra(*overrides):
    import study.run  # noqa: F401

    with initialize_config_dir(config_dir=str(ROOT / "conf"), version_base="1.3"):
        return hcompose(config_name="config", overrides=list(overrides), return_hydra_config=True)


def test_gpus_launcher_composes_on_joblib():
    cfg = compose_hydra("hydra/launcher=gpus", "hydra.launcher.n_jobs=4")
    assert "JoblibLauncher" in cfg.hydra.launcher._target_ and cfg.hydra.launcher.n_jobs == 4


def test_slurm_launcher_composes_on_submitit():
    cfg = compose_hydra("hydra/launcher=slurm", "hydra.launcher.partition=gpu")
    assert "SlurmLauncher" in cfg.hydra.launcher._target_
    assert cfg.hydra.launcher.gpus_per_node == 1 and cfg.hydra.launcher.partition == "gpu"


def test_slots_are_exclusive(tmp_path):
    with slot(tmp_path, 2) as a, slot(tmp_path, 2) as b:
        assert {a, b} == {0, 1}
    with slot(tmp_path, 0) as none:
        assert none is None


@pytest.mark.slow
def test_joblib_gpus_launcher_runs_cells_in_parallel_slots(tmp_path):
    r = cli(
        "-m", "hydra/launcher=gpus", "variant=naive,naive_inplace", f"out_root={tmp_path}", *TINY
    )
    assert r.returncode == 0, r.stderr[-2000:]
    sweep = next((tmp_path / "sweeps").iterdir())
    rows = io.read_csv(sweep / "runs.csv")
    assert len(rows) == 2 and all(x["status"] == "ok" for x in rows)
    assert {x["host"] for x in rows} and all(x["host"] for x in rows)
    # its job processes started before the sweep's size was known: they read it (sweep.yaml)
    assert "[2/2] " in r.stdout and "not started early" not in r.stdout, r.stdout[-1500:]


def test_job_processes_started_while_checking_run_hydras_jobs():
    """study.jobs starts loky's workers with the launcher's arguments; Hydra's own Parallel
    (its launcher's kwargs, as its _core.launch passes them) then runs in the same processes."""
    import os

    from hydra.utils import instantiate
    from hydra_plugins.hydra_joblib_launcher._core import process_joblib_cfg
    from joblib import Parallel, delayed

    from study import jobs

    launcher = compose_hydra("hydra/launcher=gpus").hydra.launcher
    jobs.start(launcher, 2, task=jobs.checkin)
    warm = jobs.join()
    assert "error" not in warm and len(set(warm["pids"])) == 2, warm
    hydra_args = instantiate(launcher).joblib
    hydra_args["backend"] = "loky"
    process_joblib_cfg(hydra_args)
    pids = Parallel(**hydra_args)(delayed(os.getpid)() for _ in range(6))
    assert set(pids) <= set(warm["pids"]), (pids, warm["pids"])


def test_a_job_process_is_ready_only_once_its_workloads_are_imported(tmp_path, monkeypatch):
    """loky restarts a worker whose memory grows by 300 MB after its first task: the warm-up
    task must end after torch is imported, or each worker restarts after its first cell."""
    import os
    import threading
    import time

    from study import jobs, sweep

    done = threading.Event()

    def slow_import():
        time.sleep(0.3)
        done.set()

    importing = threading.Thread(target=slow_import)
    monkeypatch.setattr(sweep, "server", lambda: None)
    monkeypatch.setattr(sweep, "_IMPORTING", importing)
    importing.start()
    assert jobs.ready(str(tmp_path), 1) == os.getpid()
    assert done.is_set() and (tmp_path / str(os.getpid())).exists()


def test_a_job_process_started_early_reads_the_sweeps_size_from_its_dir(tmp_path):
    from omegaconf import OmegaConf

    from study.sweep import clock

    assert clock(tmp_path) == (0, 0.0)
    (tmp_path / "sweep.yaml").write_text("total: [unclosed\n")  # unreadable: no [k/N], no crash
    assert clock(tmp_path) == (0, 0.0)
    OmegaConf.save(
        OmegaConf.create({"command": "x", "total": 35, "t0": 12.5}), tmp_path / "sweep.yaml"
    )
    assert clock(tmp_path) == (35, 12.5)


@pytest.mark.slow
def test_submitit_local_executor_runs_a_cell(tmp_path):
    r = cli(
        "-m",
        "hydra/launcher=submitit_local",
        "variant=naive",
        f"out_root={tmp_path}",
        *TINY,
        f"hydra.launcher.submitit_folder={tmp_path}/submitit",
    )
    assert r.returncode == 0, r.stderr[-3000:]
    sweep = next((tmp_path / "sweeps").iterdir())
    rows = io.read_csv(sweep / "runs.csv")
    assert [x["status"] for x in rows] == ["ok"]


def test_the_sweeper_leaves_the_check_to_the_study_only_once_it_ran(monkeypatch):
    """Hydra's basic sweeper composes every job again before launching (3-4 s for part3). The
    study's sweeper skips that only when the study's callback checked this sweep."""
    from study import callbacks

    cfg = compose_hydra("+experiment=part3")
    assert cfg.hydra.sweeper._target_ == "hydra_plugins.study_sweeper.CheckedSweeper"
    assert "variant" in cfg.hydra.sweeper.params  # an experiment's params still reach it
    basic = compose_hydra("hydra/sweeper=basic").hydra.sweeper._target_
    assert basic == "hydra._internal.core_plugins.basic_sweeper.BasicSweeper"
    # imported after Hydra's plugin scan, which executes the plugin modules again, as a run does
    from hydra_plugins.study_sweeper import BasicSweeper, CheckedSweeper

    composed = []
    monkeypatch.setattr(BasicSweeper, "validate_batch_is_legal", lambda self, b: composed.append(b))
    sweeper = CheckedSweeper(max_batch_size=None)
    monkeypatch.setattr(callbacks, "CHECKED", True)
    sweeper.validate_batch_is_legal([["variant=naive"]])
    assert composed == []
    monkeypatch.setattr(callbacks, "CHECKED", False)  # the callback did not run, or failed
    sweeper.validate_batch_is_legal([["variant=naive"]])
    assert composed == [[["variant=naive"]]]


def test_a_check_that_breaks_stops_the_sweep_instead_of_a_warning(monkeypatch, capsys):
    """Hydra turns a callback's exception into a warning and sweeps on, unchecked."""
    from study import callbacks

    def broken(self, config, name):
        raise RuntimeError("ConfigLoader is not set")

    monkeypatch.setattr(callbacks.Sweep, "_start", broken)
    with pytest.raises(SystemExit) as e:
        callbacks.Sweep().on_multirun_start(compose_hydra(), config_name="config")
    assert e.value.code == 2 and callbacks.CHECKED is False
    assert "could not be checked (RuntimeError: ConfigLoader is not set)" in capsys.readouterr().err


@pytest.mark.parametrize(
    "n_points, want", [(1, [("servers", 1)]), (3, [("servers", 2), ("jobs", 2)])]
)
def test_job_processes_start_early_only_when_each_has_a_job(tmp_path, monkeypatch, n_points, want):
    """joblib starts n_jobs workers whatever the number of jobs: with fewer points, a job could
    land on a worker that claimed no server, and start a server of its own (slower)."""
    from study import callbacks, jobs, sweep

    started = []
    monkeypatch.setattr(sweep, "prestart", lambda n: started.append(("servers", n)))
    monkeypatch.setattr(jobs, "start", lambda launcher, n, **kw: started.append(("jobs", n)))

    def check(config, name, meanwhile):  # study.sweep_check.validate_sweep, without composing
        meanwhile([["variant=naive"]] * n_points)
        return n_points

    monkeypatch.setattr(callbacks, "validate_sweep", check)
    monkeypatch.setenv("STUDY_SWEEP_DIR", "")  # restored after the test
    cfg = compose_hydra("hydra/launcher=gpus", f"hydra.sweep.dir={tmp_path}/sweep")
    callbacks.Sweep().on_multirun_start(cfg, config_name="config")
    assert started == want and callbacks.CHECKED is True
    assert (tmp_path / "sweep" / "sweep.yaml").exists()


def _hang(pids_dir, d, n):
    import os
    import time
    from pathlib import Path

    Path(pids_dir, str(os.getpid())).touch()
    time.sleep(60)


def test_a_sweep_that_stops_at_its_check_ends_its_job_processes_at_once(tmp_path):
    import functools
    import os
    import time

    from study import jobs

    task = functools.partial(_hang, str(tmp_path))  # workers may be older than this test
    jobs.start(compose_hydra("hydra/launcher=gpus").hydra.launcher, 2, task=task)
    deadline = time.monotonic() + 60
    while len(os.listdir(tmp_path)) < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    pids = [int(p) for p in os.listdir(tmp_path)]
    assert len(pids) == 2
    jobs.abandon()
    deadline = time.monotonic() + 10

    def alive(pid):
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        try:
            with open(f"/proc/{pid}/stat") as f:  # a zombie is gone but for its parent's wait
                return f.read().split(")")[-1].split()[0] != "Z"
        except FileNotFoundError:  # it exited between the two looks
            return False

    while any(alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not any(alive(p) for p in pids), "the job processes outlived the abandoned sweep"
    assert jobs.join() == {}


def test_experiments_pin_whole_studies():
    expect = {
        "part1": {"compile": 5, "shape.n": 2},
        "part2": {"variant": 2, "compile": 5},
        "part3": {"variant": 7, "compile": 5},
        "scaling": {"variant": 6, "compile": 2, "shape.seq_len": 7},
    }
    for name, counts in expect.items():
        cfg = compose_hydra(f"+experiment={name}")
        params = cfg.hydra.sweeper.params
        for key, n in counts.items():
            assert len(str(params[key]).split(",")) == n, (name, key)
    assert compose_hydra("+experiment=part1").variant.name == "matmul_add"


@pytest.mark.parametrize(
    "visible, slot_, want",
    [(None, 1, "1"), ("4,6", 1, "6"), ("GPU-aaa,GPU-bbb", 0, "GPU-aaa")],
)
def test_a_slot_pins_the_slot_th_gpu_the_sweep_could_see(monkeypatch, visible, slot_, want):
    from study.worker import gpu_id

    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", visible or "")  # restored after the test
    if visible is None:
        monkeypatch.delenv("CUDA_VISIBLE_DEVICES")
    assert gpu_id(slot_) == want


def test_a_slot_beyond_the_visible_gpus_says_how_to_fix_it(monkeypatch):
    from study.worker import gpu_id

    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "3")
    with pytest.raises(ValueError, match="gpu_slots<=1"):
        gpu_id(1)


def _cell_cfg(tmp_path, *overrides):
    """One tiny CPU cell's config as run_job gets it (the Hydra key dropped), writing under tmp_path."""
    from omegaconf import OmegaConf

    from study.config import CellConf
    from tests.conftest import compose

    cfg = compose(*TINY, *overrides)
    cfg = OmegaConf.merge(
        OmegaConf.structured(CellConf), {k: v for k, v in cfg.items() if k != "hydra"}
    )
    cfg.out_root = str(tmp_path)
    return cfg


@pytest.mark.slow
def test_waiting_for_a_gpu_slot_does_not_count_against_timeout_s(tmp_path, monkeypatch):
    """The cell waits for the (held) only slot longer than timeout_s, then runs ok."""
    import threading
    import time

    from study.sweep import core_plan, run_job, server

    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    server(core_plan(1, "auto")[0]).status  # noqa: B018 - warm: its start is not the wait
    cfg = _cell_cfg(tmp_path, "timeout_s=12")
    sweep = tmp_path / "sweep"
    held = threading.Event()

    def hold():
        with slot(sweep, 1):
            held.set()
            time.sleep(18)

    t = threading.Thread(target=hold)
    t.start()
    held.wait()
    status = run_job(cfg, sweep / "cell", sweep, slots=1)  # a CPU slot: a core group
    t.join()
    row = io.read_csv(sweep / "cell" / "run.csv")[0]
    assert status == "ok", row["reason"]
    assert float(row["gpu_wait_s"]) > 5
    assert float(row["prepare_s"]) > 0
    assert float(row["overhead_s"]) < 5  # the wait is not the sweep's overhead


@pytest.mark.slow
def test_a_cells_process_group_counts_as_alive_until_its_last_process_exits():
    import subprocess

    from study.sweep import group_alive

    p = subprocess.Popen(["sleep", "30"], start_new_session=True)
    try:
        assert group_alive(p.pid)
    finally:
        p.kill()
        p.wait()
    assert not group_alive(p.pid)


@pytest.mark.slow
def test_the_gpu_slot_is_held_until_the_cell_process_is_gone(tmp_path, monkeypatch):
    """The slot is free again only after run_job returns, and the cell got slot 0."""
    from study.sweep import release_slot, run_job, try_slot

    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    cfg = _cell_cfg(tmp_path)
    sweep = tmp_path / "sweep"
    assert run_job(cfg, sweep / "cell", sweep, slots=1) == "ok"
    held = try_slot(sweep, 1)
    assert held is not None, "run_job returned but the GPU slot is still locked"
    release_slot(held)
    row = io.read_csv(sweep / "cell" / "run.csv")[0]
    assert float(row["gpu_wait_s"]) < 5


def test_a_cell_on_another_gpu_than_its_slot_fails_loudly(monkeypatch):
    """CUDA initialised before the pin: the device's UUID is not the slot's -> SystemExit."""
    import subprocess
    import types

    import torch

    from study import worker

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    monkeypatch.setattr(
        torch.cuda, "get_device_properties", lambda i: types.SimpleNamespace(uuid="aaaa-0000")
    )

    def smi(cmd, **kw):
        assert cmd[-1] == "1"
        return subprocess.CompletedProcess(cmd, 0, stdout="GPU-bbbb-1111\n", stderr="")

    monkeypatch.setattr(subprocess, "run", smi)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "1")  # pinned; nvidia-smi is asked about it
    with pytest.raises(SystemExit, match="GPU pinning failed.*asked for GPU 1"):
        worker.check_pinned("1")
    monkeypatch.setattr(
        torch.cuda, "get_device_properties", lambda i: types.SimpleNamespace(uuid="bbbb-1111")
    )
    worker.check_pinned("1")  # the right GPU: no error
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(SystemExit, match="CUDA sees no GPU"):  # a slot past the host's GPUs
        worker.check_pinned("5")


@pytest.mark.slow
def test_more_gpu_slots_than_visible_gpus_stops_the_sweep_at_start(tmp_path, monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "3")
    r = cli("variant=naive", "gpu_slots=2", f"out_root={tmp_path}", *TINY)
    assert r.returncode != 0
    assert "config error" in r.stderr and "gpu_slots<=1" in r.stderr
    assert not list(tmp_path.rglob("run.csv"))


def test_a_cell_that_wrote_no_row_still_names_its_gpu(tmp_path, monkeypatch):
    """A timeout or crash on a GPU slot: the fallback row keeps gpu_index (the Findings count
    the rows each GPU ran)."""
    from study import sweep as sw

    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    monkeypatch.setattr(sw, "_inline", lambda *a, **k: ("timeout", "no row within timeout_s"))
    cfg = _cell_cfg(tmp_path, "isolation=inline")
    sweep = tmp_path / "sweep"
    assert sw.run_job(cfg, sweep / "cell", sweep, slots=1, gpus=True) == "timeout"
    row = io.read_csv(sweep / "cell" / "run.csv")[0]
    assert row["gpu_index"] == "0" and row["status"] == "timeout"


@pytest.mark.parametrize(
    "device, cuda, want", [("auto", True, "5"), ("cpu", True, None), ("cuda", False, None)]
)
def test_a_one_gpu_cell_sees_only_the_gpu_it_runs_on(tmp_path, monkeypatch, device, cuda, want):
    """Without GPU slots a CUDA cell runs on the first GPU the sweep sees, and sees only that
    one (CUDA sets up every device it can see: 0.2 s a cell on a two-GPU host). With no GPU to
    see (CUDA_VISIBLE_DEVICES="" hides them all), a cell asking for CUDA gets none either."""
    from study import sweep as sw

    seen = {}

    def inline(run_dir, env, cores):
        seen.update(env)
        return "timeout", "the environment is all this test wants"

    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "5,7")
    monkeypatch.setattr(sw, "_cuda_available", lambda: cuda)
    monkeypatch.setattr(sw, "_inline", inline)
    cfg = _cell_cfg(tmp_path, "isolation=inline", f"device={device}")
    sweep = tmp_path / "sweep"
    sw.run_job(cfg, sweep / "cell", sweep)
    assert seen.get("CUDA_VISIBLE_DEVICES") == want
    assert io.read_csv(sweep / "cell" / "run.csv")[0]["gpu_index"] in ("", None)
