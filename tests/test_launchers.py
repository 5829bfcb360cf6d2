"""Launchers: the study's own (one warm parent, N slots), and submitit's, through Hydra."""

import pytest
from hydra import compose as hcompose
from hydra import initialize_config_dir

from study.rows import io
from tests.conftest import ROOT, TINY, cli


def compose_hydra(*overrides):
    import study.run  # noqa: F401

    with initialize_config_dir(config_dir=str(ROOT / "conf"), version_base="1.3"):
        return hcompose(config_name="config", overrides=list(overrides), return_hydra_config=True)


def test_the_study_launcher_is_the_default_and_gpus_is_it_with_more_slots():
    cfg = compose_hydra()
    assert cfg.hydra.launcher._target_.endswith("StudyLauncher") and cfg.hydra.launcher.n_jobs == 1
    cfg = compose_hydra("hydra/launcher=gpus", "hydra.launcher.n_jobs=4")
    assert cfg.hydra.launcher._target_.endswith("StudyLauncher") and cfg.hydra.launcher.n_jobs == 4
    assert cfg.hydra.sweeper._target_.endswith("StudySweeper")


def test_slurm_launcher_composes_on_submitit():
    cfg = compose_hydra("hydra/launcher=slurm", "hydra.launcher.partition=gpu")
    assert "SlurmLauncher" in cfg.hydra.launcher._target_
    assert cfg.hydra.launcher.gpus_per_node == 1 and cfg.hydra.launcher.partition == "gpu"


@pytest.mark.slow
def test_the_gpus_launcher_runs_cells_on_two_slots_at_once(tmp_path):
    """On a host without GPUs the slots are CPU core groups: two cells overlap in time."""
    r = cli(
        "-m", "hydra/launcher=gpus", "variant=naive,naive_inplace", f"out_root={tmp_path}", *TINY
    )
    assert r.returncode == 0, r.stderr[-2000:]
    sweep = next((tmp_path / "sweeps").iterdir())
    rows = io.read_csv(sweep / "runs.csv")
    assert len(rows) == 2 and all(x["status"] == "ok" for x in rows)
    assert all(x["host"] for x in rows) and all(x["gpu_wait_s"] not in ("", None) for x in rows)
    assert "[2/2] " in r.stdout, r.stdout[-1500:]


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
    from study.sweep.scheduler import gpu_id

    if visible is None:
        monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    else:
        monkeypatch.setenv("CUDA_VISIBLE_DEVICES", visible)
    assert gpu_id(slot_) == want


def test_a_slot_beyond_the_visible_gpus_says_how_to_fix_it(monkeypatch):
    from study.sweep.scheduler import gpu_id

    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "3")
    with pytest.raises(ValueError, match="hydra.launcher.n_jobs"):
        gpu_id(1)


@pytest.mark.parametrize(
    "n_jobs, gpus, visible, device, said",
    [
        (2, 1, None, "auto", "has 1 GPU"),
        (2, 4, "3", "auto", "CUDA_VISIBLE_DEVICES lists 1"),
        (2, 2, None, "auto", None),
        (2, 1, None, "cpu", None),  # CPU cells run on core groups
        (3, 0, None, "auto", None),  # no GPU: CPU cells
    ],
)
def test_more_cells_at_once_than_gpus_stops_the_sweep_at_start(
    monkeypatch, n_jobs, gpus, visible, device, said
):
    from types import SimpleNamespace

    from hydra_plugins.study_plugins import StudyLauncher

    if visible is None:
        monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    else:
        monkeypatch.setenv("CUDA_VISIBLE_DEVICES", visible)
    launcher = StudyLauncher(n_jobs=n_jobs)
    launcher.config = compose_hydra()
    launcher.scheduler = SimpleNamespace(status={"device_count": gpus, "cuda_available": gpus > 0})
    why = launcher.slots_error([compose_hydra(f"device={device}")])
    assert (why is None) if said is None else (said in why), why


def test_gpu_slots_is_refused_with_the_launcher_setting_that_replaced_it():
    """Deprecated in v3 (one release), removed after: Hydra's 'not in struct' said as what to give."""
    from study.config.check import composition_error

    with pytest.raises(Exception) as e:
        compose_hydra("gpu_slots=3")
    said = composition_error(e.value)
    assert "gpu_slots was removed" in said and "hydra.launcher.n_jobs=N" in said, said
    from study.workloads.check import check_config

    said = check_config(compose_hydra("+gpu_slots=3"))  # added, not overridden: the schema says
    assert "gpu_slots was removed" in said and "hydra.launcher.n_jobs=N" in said, said


@pytest.mark.slow
def test_a_cells_process_group_counts_as_alive_until_its_last_process_exits():
    import subprocess

    from study.sweep.scheduler import group_alive

    p = subprocess.Popen(["sleep", "30"], start_new_session=True)
    try:
        assert group_alive(p.pid)
    finally:
        p.kill()
        p.wait()
    assert not group_alive(p.pid)


def test_a_cell_on_another_gpu_than_its_slot_fails_loudly(monkeypatch):
    """CUDA initialised before the pin: the device's UUID is not the slot's -> SystemExit."""
    import subprocess
    import types

    import torch

    from study.cell import worker

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
def test_batches_of_a_sweep_share_one_warm_parent_and_one_count(tmp_path):
    """hydra.sweeper.max_batch_size=1: each batch is a launch; the scheduler (its warm parent,
    its [k/N]) lives from the first to the last."""
    r = cli("-m", "variant=naive,naive_inplace", "hydra.sweeper.max_batch_size=1",
            f"out_root={tmp_path}", *TINY)  # fmt: skip
    assert r.returncode == 0, r.stderr[-2000:]
    sweep = next((tmp_path / "sweeps").iterdir())
    assert [x["status"] for x in io.read_csv(sweep / "runs.csv")] == ["ok", "ok"]
    assert "[1/2] " in r.stdout and "[2/2] " in r.stdout, r.stdout[-1500:]


def test_a_job_of_another_launcher_counts_the_whole_sweeps_cells(tmp_path):
    """Under slurm each job runs one cell: its [k/N] counts the sweep's finished cells."""
    import os
    import time

    from study.run import finished_since

    t0 = time.time()
    for i, age in enumerate((t0 - 3600, t0 + 1, t0 + 2)):  # one from an earlier run of the dir
        d = tmp_path / f"c{i}"
        d.mkdir()
        (d / "run.csv").write_text("run_id\n")
        os.utime(d / "run.csv", (age, age))
    assert finished_since(tmp_path, t0) == 2


def test_a_cell_run_by_hand_gets_the_sweeps_compile_caches_and_leaves_no_cold_one(
    tmp_path, monkeypatch
):
    """The way to step through a cell (what isolation's removal note says): python -m
    study.cell.worker RUN_DIR, with the cell's own cold cache as in a sweep, removed after as the sweep does."""
    import os

    from omegaconf import OmegaConf

    from study.cell import worker
    from study.config.cell_config import to_plain

    run_dir = tmp_path / "cell"
    run_dir.mkdir()
    OmegaConf.save(OmegaConf.create(to_plain(compose_hydra(f"out_root={tmp_path}"))),
                   run_dir / "cell.yaml")  # fmt: skip
    seen = {}

    def fake_main(d):
        seen["dir"] = os.environ["TORCHINDUCTOR_CACHE_DIR"]
        (d / ".compile_cache" / "inductor").mkdir(parents=True)

    monkeypatch.setattr(worker, "main", fake_main)
    for k in ("TORCHINDUCTOR_CACHE_DIR", "TRITON_CACHE_DIR", "TORCH_COMPILE_CACHE_KEY_TAG"):
        monkeypatch.setenv(k, "before")  # by_hand sets them; monkeypatch puts them back after
    worker.by_hand(run_dir)
    assert seen["dir"] == str((run_dir / ".compile_cache" / "inductor").resolve())
    assert not (run_dir / ".compile_cache").exists()
