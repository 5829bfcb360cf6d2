"""One run dir per sweep point, named readably."""

from __future__ import annotations

import re

import pytest

from study.sweep.names import LIMIT, run_dirs
from tests.conftest import TINY, cli

EXCLUDE = ["resume", "timeout_s", "cpu_mem_limit_gb", "cores", "experiment", "ncu.enabled"]
CD_ABLE = re.compile(r"[A-Za-z0-9_.,=+\-@:#]+")  # '#' only after a ','


@pytest.mark.parametrize("key", ["cores=0,1", "cpu_mem_limit_gb=4,8", "ncu.enabled=false,true"])
def test_points_that_differ_only_in_a_harness_key_get_a_dir_each(key):
    k, values = key.split("=")
    pts = [
        ["variant=naive", "compile=off", "+experiment=tiny", f"{k}={v}"] for v in values.split(",")
    ]
    dirs = run_dirs(pts, EXCLUDE)
    assert len(set(dirs)) == 2 and all(f"{k}=" in d for d in dirs), dirs
    # fixed, a harness key stays out of the name (a resume with another timeout_s finds its dirs)
    assert run_dirs([pts[0], ["variant=flash", *pts[0][1:]]], EXCLUDE) == [
        "compile=off,variant=naive",
        "compile=off,variant=flash",
    ]


def test_a_name_is_readable_cd_able_and_never_cut_in_a_word():
    sizes = ["compile=default", "shape_sweep.key=seq_len", "shape_sweep.sizes=[16,32,64]"]
    assert run_dirs([[*sizes, "variant=naive"]]) == [
        "compile=default,shape_sweep.key=seq_len,shape_sweep.sizes=16+32+64,variant=naive"
    ]
    path = run_dirs([["calibration_file=a/../../../etc", "variant=naive"]])[0]
    assert path.startswith("variant=naive,#") and "/" not in path and "%" not in path
    long = [f"variant.kwargs.option_{i}=value_number_{i}" for i in range(12)]
    (name,) = run_dirs([[*long, "variant=custom"]])
    assert len(name) <= LIMIT and CD_ABLE.fullmatch(name), name
    shown = name.split(",#")[0].split(",")
    assert set(shown) <= {*long, "variant=custom"}, "an item was cut"
    assert ",#" in name  # what did not fit is in the hash (and cell.yaml)
    # the swept key is named first when room is short
    pts = [[*long, f"variant=v{i}"] for i in range(2)]
    assert all(f"variant=v{i}" in d for i, d in enumerate(run_dirs(pts)))


def test_predictions_stay_out_of_a_name_unless_they_tell_points_apart():
    assert run_dirs([['+expect.generated_per_step=">=1"', "compile=off", "variant=naive"]]) == [
        "compile=off,variant=naive"
    ]
    pts = [["+expect.x=1", "variant=naive"], ['+expect.x=">2"', "variant=naive"]]
    a, b = run_dirs(pts)
    assert a != b and CD_ABLE.fullmatch(a) and CD_ABLE.fullmatch(b)


def test_a_cell_is_never_started_into_the_dir_of_a_running_cell(tmp_path):
    """The defect: the second point emptied the dir while the first ran, and the first took the
    second's row."""
    from study.sweep.rundir import Unsafe
    from study.sweep.scheduler import Scheduler
    from tests.test_scheduler import cell_cfg, end_oldest, factory

    make, made = factory(script=end_oldest)  # the old code waited for its cells: let them end
    sweep = tmp_path / "sweep"
    with pytest.raises(Unsafe, match="in use by a running cell"):
        with Scheduler(2, make_parent=make) as sched:
            sched.submit(cell_cfg(tmp_path), sweep / "c", sweep)
            (sweep / "c" / "mine").write_text("the first cell's\n")
            sched.submit(cell_cfg(tmp_path, "cores=0"), sweep / "c", sweep)
    assert (sweep / "c" / "mine").exists() and len(made[0].spawned) == 1


def test_points_that_differ_only_in_what_no_row_records_are_told_apart_or_refused():
    """Issue 68: cpu_mem_limit_gb=4,0.001 made a crash row and an ok row of one config_hash, and
    the report read one ok cell. Such points are refused; repeats of one cell, and points that
    differ in what they measure, are not."""
    from study.sweep.apart import indistinct

    cell = {"variant": {"name": "naive"}, "compile": {"mode": "off"}, "cpu_mem_limit_gb": 4,
            "repeat": 0, "timeout_s": 600}  # fmt: skip
    pts = [["cpu_mem_limit_gb=4"], ["cpu_mem_limit_gb=0.001"]]
    why = indistinct(pts, [cell, {**cell, "cpu_mem_limit_gb": 0.001}])
    assert why and "differ only in cpu_mem_limit_gb" in why
    assert "[cpu_mem_limit_gb=4]" in why and "[cpu_mem_limit_gb=0.001]" in why
    why = indistinct([["timeout_s=1"], ["timeout_s=600"]], [{**cell, "timeout_s": 1}, cell])
    assert why and "timeout_s" in why
    assert indistinct([["repeat=0"], ["repeat=1"]], [cell, {**cell, "repeat": 1}]) is None
    other = {**cell, "variant": {"name": "flash"}, "cpu_mem_limit_gb": 0.001}
    assert indistinct(pts, [cell, other]) is None
    assert indistinct(pts, [cell, None]) is None  # a point that did not compose: said apart


@pytest.mark.slow
def test_two_points_apart_only_in_a_harness_key_are_refused_at_start(tmp_path):
    r = cli("-m", "variant=naive", "compile=off", "cpu_mem_limit_gb=4,0.001",
            f"out_root={tmp_path}", *TINY)  # fmt: skip
    assert r.returncode == 2, r.stderr[-1500:]
    (line,) = [x for x in r.stderr.splitlines() if x.startswith("[study] config error")]
    assert "cpu_mem_limit_gb=4 " in line and "cpu_mem_limit_gb=0.001 " in line
    assert "Traceback" not in r.stderr and not (tmp_path / "sweeps").exists()


@pytest.mark.slow
def test_a_fixed_subdir_that_two_points_would_share_is_refused_at_start(tmp_path):
    r = cli("-m", "variant=naive", "compile=off", "cores=0,1", "hydra.sweep.subdir=same",
            f"out_root={tmp_path}", *TINY)  # fmt: skip
    assert r.returncode == 2, r.stderr[-1500:]
    assert "two sweep points would share the run dir 'same'" in r.stderr
    assert "cores=0" in r.stderr and "cores=1" in r.stderr and "Traceback" not in r.stderr
    assert not (tmp_path / "sweeps").exists()


def test_a_name_never_starts_with_a_plus_so_its_row_keeps_the_same_run_id():
    """`+variant.kwargs.layers=1` made a dir starting with '+': the CSV writer guards such text
    with a leading ' (a spreadsheet formula), so the row's run_id no longer named its dir and
    the summary counted the cell twice, once 'without a row' (exit 1)."""
    from study.sweep.names import run_dirs

    (name,) = run_dirs([["+variant.kwargs.layers=1", "compile=default"]])
    assert not name.startswith("+") and set(name.split(",")) == {
        "compile=default", "variant.kwargs.layers=1"}  # fmt: skip


@pytest.mark.parametrize(
    "subdir, why",
    [("@x", "starts with '@'"), ("-x", "starts with '-'"), (".", "is the sweep dir itself"),
     ("", "is the sweep dir itself"), ("../out", "is outside the sweep dir"),
     ("/elsewhere", "is outside the sweep dir"), ("a/=b", "starts with '='")],
)  # fmt: skip
def test_a_subdir_whose_row_could_not_name_it_is_refused(subdir, why, tmp_path):
    """Issue 68: subdir=@x made an ok cell read "no row" on every run and resume (its run_id
    was written '@x); '.' or '' ran the cell in the sweep dir; one outside was refused only
    after it was made."""
    from study.sweep.apart import bad_subdir

    said = bad_subdir([["variant=naive"]], [subdir], tmp_path / "sweep")
    assert said and f"hydra.sweep.subdir={subdir!r} {why} [variant=naive]" in said
    assert bad_subdir([["variant=naive"]], ["x@-"], tmp_path / "sweep") is None
    assert bad_subdir([["a"]], ["\0" + "0"], tmp_path / "sweep") is None  # said as a bad point


@pytest.mark.slow
def test_a_subdir_outside_the_sweep_is_refused_before_it_is_made(tmp_path):
    r = cli("-m", "variant=naive", "compile=off", f"hydra.sweep.subdir={tmp_path}/outside",
            f"out_root={tmp_path}/o", *TINY)  # fmt: skip
    assert r.returncode == 2 and "is outside the sweep dir" in r.stderr, r.stderr[-1500:]
    assert not (tmp_path / "outside").exists() and not (tmp_path / "o").exists()
