"""A sweep is checked whole before any cell starts, resumes only into itself, and ends with a
summary and an exit status that says whether the harness failed."""

import os
import signal
import subprocess
import sys
import time

import pytest

from study.rows import io
from study.run import job_dirname
from tests.conftest import ROOT, TINY, cli, root_env


def no_traceback(r):
    assert "Traceback" not in r.stderr, r.stderr[-1500:]


@pytest.mark.slow
def test_every_bad_point_of_a_sweep_is_listed_before_any_cell_runs(tmp_path):
    r = cli("-m", "shape.seq_len=16,0,32,-4", f"out_root={tmp_path}", *TINY)
    assert r.returncode == 2, r.stderr
    assert "2 of 4 sweep points cannot run" in r.stderr
    assert "shape.seq_len=0 is not allowed" in r.stderr and "shape.seq_len=-4" in r.stderr
    no_traceback(r)
    assert not (tmp_path / "sweeps").exists(), "a config error left a sweep dir behind"


@pytest.mark.slow
def test_a_config_error_of_a_single_run_is_one_message_and_exit_2(tmp_path):
    r = cli("shape.seq_len=0", f"out_root={tmp_path}")
    assert r.returncode == 2 and "config error: shape.seq_len=0 is not allowed" in r.stderr
    no_traceback(r)


@pytest.mark.slow
@pytest.mark.parametrize("multirun", [True, False])
def test_an_unknown_key_is_rejected_at_start(tmp_path, multirun):
    r = cli(*(["-m"] if multirun else []), "+foo=1", f"out_root={tmp_path}", *TINY)
    assert r.returncode == 2, r.stdout[-500:]
    assert "unknown key 'foo'" in r.stderr
    no_traceback(r)
    assert not list(tmp_path.rglob("run.csv"))


@pytest.mark.parametrize(
    "override, words",
    [
        ("repeats=0", "repeats=0 is not allowed"),
        ("repeats=100000000", "repeats=100000000 is not allowed"),  # not a MemoryError
        ("timeout_s=nan", "timeout_s=nan is not allowed"),
        ("timing.pairs=5", "timing.pairs=5 is too few"),
        ("timing.lead_in=-1", "timing.lead_in=-1 is not allowed"),
        ("timing.max_s=0", "timing.max_s=0.0 is not allowed"),
        ("timing.fast_ratio=1", "timing.fast_ratio=1.0 is not allowed"),
        ("timing.fast_ratio=7", "timing.fast_ratio=7.0 is not allowed"),
        ("cores=4096", "core(s) 4096"),
        ("cores=a-b", "is not a core list"),
    ],
)
@pytest.mark.slow
def test_bad_timing_input_stops_at_start_naming_the_key(tmp_path, override, words):
    r = cli("-m", override, f"out_root={tmp_path}", *TINY)
    assert r.returncode == 2 and words in r.stderr, r.stderr[-800:]
    no_traceback(r)


@pytest.mark.slow
def test_a_glob_sweep_is_checked_like_any_other(tmp_path):
    """glob(...) over a config group needs Hydra's config loader to expand."""
    r = cli("-m", "variant=glob(naive_*)", "compile=off,nosuch", f"out_root={tmp_path}", *TINY)
    assert (
        r.returncode == 2
        and "compile=nosuch is not a compile target; known: aot_eager," in r.stderr
    ), r.stderr[-800:]
    assert "variant=naive_inplace compile=nosuch" in r.stderr  # the glob expanded
    no_traceback(r)
    assert not list(tmp_path.rglob("run.csv"))


def test_dir_names_stay_inside_the_sweep_dir():
    name = job_dirname(["calibration_file=a/../../../etc", "variant=naive"])
    assert "/" not in name and name.startswith("variant=naive,#")  # the path is in the hash
    assert job_dirname([]) == "cell"
    assert len(job_dirname(["x=" + "y" * 400])) <= 160


def test_predictions_are_no_part_of_a_run_dirs_name():
    given = ['+expect.compiled.generated_per_step=">=1"', "compile=off", "variant=naive"]
    assert job_dirname(given) == "compile=off,variant=naive"
    given = ["compile=off", "+expect.x=1", "shape_sweep.sizes=[1,2]", "variant=naive"]
    assert job_dirname(given) == "compile=off,shape_sweep.sizes=1+2,variant=naive"
    assert job_dirname(["~expect.kernels_per_step", "variant=naive"]) == "variant=naive"
    assert job_dirname(["expected=3", "variant=naive"]) == "expected=3,variant=naive"


def test_a_run_dir_outside_its_sweep_is_refused(tmp_path):
    from study.sweep.rundir import Unsafe
    from study.sweep.scheduler import run_one
    from tests.test_scheduler import cell_cfg

    cfg = cell_cfg(tmp_path)
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "run.csv").write_text("keep me\n")
    with pytest.raises(Unsafe):
        run_one(cfg, tmp_path / "sweep" / ".." / "victim", tmp_path / "sweep")
    assert (victim / "run.csv").read_text() == "keep me\n"


@pytest.mark.slow
def test_a_value_with_a_path_in_it_keeps_its_cell_inside_the_sweep(tmp_path):
    r = cli(
        "-m", "variant=naive", "calibration_file=x/../../../y.json", f"out_root={tmp_path}", *TINY
    )
    assert r.returncode == 0, r.stderr[-1500:]
    runs = list(tmp_path.rglob("run.csv"))
    assert len(runs) == 1 and runs[0].parent.parent.parent.name == "sweeps", runs


@pytest.mark.slow
def test_resume_refuses_a_sweep_of_another_configuration(tmp_path):
    r = cli("-m", "variant=naive", "compile=off", f"out_root={tmp_path}", *TINY)
    assert r.returncode == 0, r.stderr[-1500:]
    sweep = next((tmp_path / "sweeps").iterdir())
    # Without +experiment=tiny the cell would run at seq_len 128, not 16: refuse, and say so.
    r = cli("-m", "variant=naive", "compile=off", "resume=true", f"out_root={tmp_path}")
    assert r.returncode == 2 and "+experiment=tiny is missing" in r.stderr, r.stderr[-800:]
    r = cli(
        "-m",
        "variant=naive",
        "compile=off",
        "dtype=fp32",
        "resume=true",
        f"out_root={tmp_path}",
        *TINY,
    )
    assert r.returncode == 2 and "dtype=fp32 was not in it" in r.stderr
    no_traceback(r)
    assert [p.name for p in (tmp_path / "sweeps").iterdir()] == [sweep.name]
    assert [x["seq_len"] for x in io.read_csv(sweep / "runs.csv")] == ["16"]


@pytest.mark.slow
def test_resume_reruns_a_cell_whose_config_hash_differs_and_says_why(tmp_path):
    args = ["-m", "variant=naive,flash", "compile=off", f"out_root={tmp_path}", *TINY]
    assert cli(*args).returncode == 0
    sweep = next((tmp_path / "sweeps").iterdir())
    cell = sweep / "compile=off,variant=flash" / "run.csv"
    rows = io.read_csv(cell)
    rows[0]["config_hash"] = "0123456789abcdef"  # as if the cell ran another configuration
    io.write_csv(cell, rows, "runs")
    r = cli(*args, "resume=true")
    assert r.returncode == 0, r.stderr[-1500:]
    assert "compile=off,variant=naive: ok already, skipped (resume=true)" in r.stdout
    assert (
        "compile=off,variant=flash: running again (resume=true): its configuration changed"
        in r.stdout
    )
    assert io.read_csv(cell)[0]["config_hash"] != "0123456789abcdef"


@pytest.mark.slow
def test_a_sweep_says_where_it_is_and_ends_with_a_summary(tmp_path):
    """Progress per cell, then the summary; unsupported is a result: exit 0."""
    r = cli("-m", "variant=naive,efficient", f"out_root={tmp_path}", *TINY)
    assert r.returncode == 0, r.stderr[-1500:]
    out = r.stdout
    assert (
        "[study] [1/2] variant=naive: ok" in out and "[2/2] variant=efficient: unsupported" in out
    )
    assert "[study] done: 2 cells" in out and "1 ok" in out and "1 unsupported" in out
    assert "variant=efficient: unsupported (" in out
    sweep = next((tmp_path / "sweeps").iterdir())
    assert f"report: python -m analysis.report {sweep}" in out
    for cell in sweep.iterdir():
        if cell.is_dir():
            assert not (cell / "run.log").exists(), "Hydra still writes an empty run.log"
            y = (cell / "cell.yaml").read_text()
            assert "device: cpu" in y and "seq_len: 16" in y  # what the cell ran, resolved
    row = io.read_csv(sweep / "variant=naive" / "run.csv")[0]
    assert len(row["config_hash"]) == 16 and float(row["overhead_s"]) > 0


@pytest.mark.slow
def test_ctrl_c_says_what_finished_and_how_to_resume(tmp_path):
    env = root_env()
    args = ["-m", "variant=naive", "fault=none,hang", f"out_root={tmp_path}", *TINY]
    proc = subprocess.Popen(
        [sys.executable, "-m", "study.run", *args],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        # as from a terminal: a child inherits an ignored SIGINT (a pytest-xdist worker's, or
        # one some code left ignored), and Python then leaves Ctrl-C ignored for good
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    deadline = time.time() + 300  # generous: on a loaded 2-core CI box a sweep starts slowly
    while time.time() < deadline and not list(tmp_path.glob("sweeps/*/fault=hang*/.cell.pid")):
        time.sleep(0.2)
    assert list(tmp_path.glob("sweeps/*/fault=hang*/.cell.pid")), "the hang cell never started"
    time.sleep(1)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=180)
    assert proc.returncode == 130, err[-1500:]
    assert "Traceback" not in err, err[-1500:]
    line = [x for x in err.splitlines() if "interrupted" in x]
    assert len(line) == 1 and "1 of 2 cells finished" in line[0]
    assert "resume with: python -m study.run -m variant=naive fault=none,hang" in line[0]
    assert line[0].endswith("resume=true")
    (sd,) = tmp_path.glob("sweeps/*")  # named: with several sweeps the newest may be another's
    assert f"hydra.sweep.dir={sd} resume=true" in line[0]
    pid = int(next(tmp_path.glob("sweeps/*/fault=hang*/.cell.pid")).read_text())
    time.sleep(1)
    assert not os.path.exists(f"/proc/{pid}") or "Z" in open(f"/proc/{pid}/stat").read().split()[2]


@pytest.mark.slow
def test_study_io_help_makes_no_directory(tmp_path):
    r = subprocess.run(
        [sys.executable, "-m", "study.rows.io", "--help"],
        cwd=tmp_path,
        env=root_env(),
        capture_output=True,
        text=True,
    )
    assert r.returncode != 0 and "usage: python -m study.rows.io SWEEP_DIR" in r.stderr
    assert not list(tmp_path.iterdir())


def test_the_readme_installs_the_cpu_build_of_torch():
    text = (ROOT / "README.md").read_text()
    assert "--index-url https://download.pytorch.org/whl/cpu" in text


@pytest.mark.slow
def test_repeats_run_every_cell_again_in_fresh_processes_after_all_others(tmp_path):
    r = cli("-m", "variant=naive,flash", "repeats=2", f"out_root={tmp_path}", *TINY)
    assert r.returncode == 0, r.stderr[-1500:]
    order = [ln.split("] ", 2)[2].split(":")[0] for ln in r.stdout.splitlines() if "] [" in ln]
    assert order == [
        "repeat=0,variant=naive",
        "repeat=0,variant=flash",
        "repeat=1,variant=naive",
        "repeat=1,variant=flash",
    ]
    rows = io.read_csv(next((tmp_path / "sweeps").iterdir()) / "runs.csv")
    by = {}
    for x in rows:
        by.setdefault(x["variant"], []).append(x)
    for v, xs in by.items():
        assert sorted(x["repeat"] for x in xs) == ["0", "1"], v
        assert len({x["config_hash"] for x in xs}) == 1, "repeats of one cell share its hash"
    assert by["naive"][0]["config_hash"] != by["flash"][0]["config_hash"]


def test_a_bad_point_is_said_without_waiting_for_the_warm_parent():
    """The registered variants come from the warm parent (torch imported, seconds); a point
    that is bad anyway is said without asking for them: a typo stops at start at once."""
    from study.workloads.check import point_error
    from tests.conftest import compose

    def never():
        raise AssertionError("the check waited for the warm parent")

    assert "shape.seq_len" in point_error(compose("shape.seq_len=0"), never)
    asked = []

    def known():
        asked.append(1)
        return {"naive": ["batch", "heads", "seq_len", "head_dim"]}

    assert point_error(compose("variant=naive"), known) is None and asked == [1]
    assert "not registered" in point_error(compose("variant=naive", "variant.name=nope"), known)


@pytest.mark.slow
@pytest.mark.parametrize("multirun", [[], ["-m"]], ids=["single", "sweep"])
def test_device_cuda_without_a_gpu_stops_at_start(tmp_path, multirun):
    import torch

    if torch.cuda.is_available():
        pytest.skip("this host has a GPU")
    r = cli(*multirun, "device=cuda", "variant=naive", f"out_root={tmp_path}", *TINY)
    assert r.returncode == 2, r.stdout[-800:] + r.stderr[-800:]
    assert r.stderr.startswith("[study] config error: "), r.stderr[-800:]
    assert "device=cuda requires a CUDA GPU and torch finds none on this host" in r.stderr
    no_traceback(r)
    assert not list(tmp_path.rglob("run.csv"))  # no cell ran
