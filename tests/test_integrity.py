"""Sweep integrity: the red team's cases on the sweep side, each as it was found.

One writer per sweep dir, nothing stale left for a resumed cell, no half-written row trusted,
exit status 2 and one line for every config mistake. (The analysis side, compare and report,
is in test_integrity_analysis.py.)
"""

from __future__ import annotations

import fcntl
import shutil
from pathlib import Path

import pytest

from study.rows import io
from study.rows.summary import summary
from study.run import SWEEP_IDS, sweep_id
from study.workloads.check import check_config
from tests.conftest import TINY, cli, compose

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("integrity")]  # most start sweeps


def only_sweep(out: Path) -> Path:
    (d,) = sorted((out / "sweeps").iterdir())
    return d


@pytest.fixture(scope="module")
def one_cell(tmp_path_factory):
    """A finished sweep of one tiny eager cell, asked for twice (case 10)."""
    out = tmp_path_factory.mktemp("one")
    r = cli("-m", "variant=linear,linear", "compile=off", f"out_root={out}", *TINY)
    assert r.returncode == 0, r.stderr[-2000:]
    return out, r


def test_a_resumed_cold_cell_reads_no_cache_an_interrupt_left(tmp_path):
    """Case 1: a run dir's private cache outlived a Ctrl-C (the cell never finished), and the
    resumed cell read it and still said cache=cold (2 hits, compile_s 2.9 s against 26)."""
    cell = ("-m", "variant=linear", "compile=default", *TINY)
    cold, warm = tmp_path / "cold", tmp_path / "warm"
    assert cli(*cell, f"out_root={cold}").returncode == 0
    assert cli(*cell, f"out_root={warm}", "cache=warm").returncode == 0  # a full cache
    run_dir = only_sweep(cold) / "compile=default,variant=linear"
    shutil.copytree(warm / ".compile_cache", run_dir / ".compile_cache")  # what Ctrl-C left
    (run_dir / "run.csv").unlink()  # ... before the cell wrote its row
    r = cli(*cell, f"out_root={cold}", "resume=true")
    assert r.returncode == 0, r.stderr[-2000:]
    (row,) = io.read_csv(run_dir / "run.csv")
    assert row["cache"] == "cold" and row["status"] == "ok"
    assert int(float(row["cache_hits"])) == 0 and int(float(row["fxgraph_cache_hits"])) == 0
    assert not (run_dir / ".compile_cache").exists()


def test_a_sweep_dir_another_sweep_holds_is_refused(one_cell):
    """Case 2: resume=true joined a sweep that still ran; cells ran twice at once in one dir."""
    out, _ = one_cell
    sd = only_sweep(out)
    with open(sd / ".sweep.lock", "a+") as f:  # another sweep, running (sweepdir.LOCK)
        fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        f.truncate(0)
        f.write("pid 4242: python -m study.run -m variant=linear\n")
        f.flush()
        r = cli("-m", "variant=linear", "compile=off", f"out_root={out}", "resume=true",
                *TINY)  # fmt: skip
    assert r.returncode == 2, r.stderr[-2000:]
    assert "is in use by another sweep (pid 4242: python -m study.run" in r.stderr
    assert "Traceback" not in r.stderr and "skipped" not in r.stdout


def test_two_sweeps_started_in_one_second_get_two_dirs(tmp_path):
    """Case 2: the dir name was the time to the second: two sweeps could share one."""
    names = set()
    for _ in range(3):
        SWEEP_IDS.clear()
        names.add(sweep_id(str(tmp_path), False))
    SWEEP_IDS.clear()
    assert len(names) == 3


def test_a_new_sweep_into_a_dir_that_holds_one_is_refused(one_cell):
    """Case 6: another sweep given an existing hydra.sweep.dir merged into it silently."""
    out, _ = one_cell
    sd = only_sweep(out)
    before = sorted(p.name for p in sd.iterdir())
    r = cli("-m", "variant=naive", "compile=off", f"out_root={out}",
            f"hydra.sweep.dir={sd}", *TINY)  # fmt: skip
    assert r.returncode == 2, r.stderr[-2000:]
    assert "already holds a sweep: add resume=true to add to it, or give a fresh dir" in r.stderr
    assert sorted(p.name for p in sd.iterdir()) == before


def test_a_cut_row_is_run_again_and_a_cut_header_is_named(tmp_path):
    """Case 4: a row cut after ',ok,' stayed 'ok already, skipped' on every resume; a cut
    header made study.rows.io drop the cell without a word."""
    out = tmp_path / "o"
    sweep = ("-m", "variant=linear,naive", "compile=off", f"out_root={out}", *TINY)
    assert cli(*sweep).returncode == 0
    sd = only_sweep(out)
    cut = sd / "compile=off,variant=linear" / "run.csv"
    text = cut.read_text()
    cut.write_text(text[: text.index(",ok,") + 4])
    header = sd / "compile=off,variant=naive" / "run.csv"
    header.write_text(header.read_text()[:200])
    r = cli(*sweep, "resume=true")
    assert r.returncode == 0, r.stderr[-2000:]
    for cell in ("linear", "naive"):
        assert f"variant={cell}: running again (resume=true): its row was incomplete" in r.stdout
    assert "skipped" not in r.stdout
    assert io.read_row(cut)["latency_median_us"] and io.read_row(header)["latency_median_us"]
    assert len(io.read_csv(sd / "runs.csv")) == 2


def test_study_io_names_a_run_dir_it_skips(tmp_path, capsys):
    """Case 4: a cut header dropped the cell from runs.csv without a word."""
    good = {c: "" for c in ("run_id", "status", "variant", "compile", "config_hash")}
    for name, status in (("a", "ok"), ("b", "ok")):
        row = dict(good, run_id=name, status=status, variant="linear", compile="off",
                   config_hash="h", latency_median_us=1.0)  # fmt: skip
        io.write_csv(tmp_path / name / "run.csv", [row], "runs")
    p = tmp_path / "b" / "run.csv"
    p.write_text(p.read_text()[:120])
    io.aggregate(tmp_path)
    with pytest.raises(io.Incomplete, match="cut short"):
        io.read_row(p)
    err = capsys.readouterr().err
    assert f"skipping {tmp_path / 'b'}: its run.csv is incomplete" in err
    assert [r["run_id"] for r in io.read_csv(tmp_path / "runs.csv")] == ["a"]


def test_a_row_of_an_older_version_is_read_without_its_dropped_columns(tmp_path):
    """Review: a column the schema dropped (``revealed``) made every older row incomplete, and
    a resume ran every cell again. A row the sweep has not yet given its config_hash (a cell
    writes its row first) is read, and a resume runs it again, saying so."""
    from study.sweep.rundir import why_rerun as _why_rerun

    p = tmp_path / "run.csv"
    p.write_text(
        "run_id,status,variant,compile,latency_median_us,revealed\r\n"
        "a,ok,linear,off,12.5,old text\r\n"
    )
    row = io.read_row(p)
    assert row["latency_median_us"] == "12.5" and "revealed" not in row
    assert "it has no config_hash" in _why_rerun(tmp_path, "h")


SAID = {
    "variant=nope": "variant=nope is not a variant; known: bert, block,",
    "compile=turbo": "compile=turbo is not a compile target; known: aot_eager, aot_inductor, cpp_wrapper,",
    "shape.seq_len=abc": "shape.seq_len=abc: not a valid integer.",
    "shape.seqlen=32": "unknown key 'shape.seqlen': shape has no such setting. Did you mean "
    "shape.seq_len?",
}


@pytest.mark.parametrize("override", sorted(SAID))
def test_hydras_composition_errors_are_said_in_one_line(override):
    """Cases 7 and 13, the message: Hydra's text (and its advice +shape.seqlen=32) made one
    line that names the value and what is allowed."""
    from study.config.usage import explain

    with pytest.raises(Exception) as e:
        compose(*TINY, override)
    assert explain(e.value) is not None and SAID[override] in explain(e.value)


@pytest.mark.parametrize(
    "overrides, said",
    [
        (["variant=nope"], SAID["variant=nope"]),  # Hydra finds it composing the sweep
        (["shape.seq_len=16,abc"], SAID["shape.seq_len=abc"]),  # the study's check of points
        (["+shape.seqlen=32"], "unknown key 'shape.seqlen'"),  # Hydra let it through
    ],
)
def test_every_config_mistake_exits_2_with_one_line(tmp_path, overrides, said):
    """Cases 7 and 13: Hydra's own text and exit 1 (the harness-failure code); the list form
    lost the reason; +shape.seqlen=32, as Hydra advised, ran and then crashed the sweep."""
    r = cli("-m", *overrides, f"out_root={tmp_path}", *TINY)
    assert r.returncode == 2, (r.returncode, r.stderr[-2000:])
    assert r.stderr.count("[study] config error") == 1 and said in r.stderr, r.stderr
    assert "HYDRA_FULL_ERROR" not in r.stderr and "Traceback" not in r.stderr
    assert not (tmp_path / "sweeps").exists()  # nothing started, nothing written


@pytest.mark.parametrize(
    "overrides, said",
    [
        (
            ["variant=mlp", "shape.n=100000000000000000000"],
            "shape.n=100000000000000000000 is too large",
        ),  # fmt: skip
        (
            ["variant=linear", "shape.in_features=4000000", "shape.out_features=4000000"],
            "matrix in float64 (the reference) needs",
        ),  # fmt: skip
        (
            ["variant=mlp", "+variant.kwargs.dim=abc"],
            "variant.kwargs apply to a variant of your own",
        ),  # fmt: skip
        (
            [
                "variant=custom",
                "variant.target=examples.norm_mlp.NormMLP",
                "+variant.kwargs.dim=abc",
            ],
            "variant.kwargs.dim='abc' is a str, but the factory's dim takes int",
        ),  # fmt: skip
        (
            ["variant=custom", "variant.target=examples.norm_mlp.NormMLP", "+variant.kwargs.dmi=3"],
            "dmi is no parameter of the factory NormMLP; it takes: dim, hidden",
        ),  # fmt: skip
    ],
)
def test_values_that_pass_types_but_cannot_run_are_config_errors(overrides, said):
    """Case 8: they passed the check and ended as a failure of the harness (exit 1)."""
    why = check_config(compose(*TINY, *overrides))
    assert why and said in why, why


def test_a_custom_module_that_exits_at_import_is_named(tmp_path, monkeypatch):
    """Case 11: sys.exit(3) at import ended the sweep with code 3 and no message."""
    (tmp_path / "exits_at_import.py").write_text("import sys\nsys.exit(3)\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    why = check_config(compose(*TINY, "variant=custom", "variant.target=exits_at_import.Model"))
    assert why and "importing module 'exits_at_import' called sys.exit(3)" in why


def test_resume_without_its_sweep_yaml_or_with_a_bad_one_is_refused(one_cell):
    """Case 9: with sweep.yaml deleted, resume=true started a fresh sweep without a word; a bad
    one was refused without naming the file."""
    out, _ = one_cell
    sd = only_sweep(out)
    saved = sd / "sweep.yaml"
    keep = saved.read_text()
    resume = ("-m", "variant=linear,linear", "compile=off", f"out_root={out}", "resume=true", *TINY)
    try:
        saved.unlink()
        r = cli(*resume)
        assert r.returncode == 2 and "its sweep.yaml is missing" in r.stderr, r.stderr[-2000:]
        saved.write_text("overrides: [1, 2\n")
        r = cli(*resume)
        assert r.returncode == 2 and f"{saved} is unreadable" in r.stderr, r.stderr[-2000:]
        assert len(list((out / "sweeps").iterdir())) == 1  # no new sweep either time
    finally:
        saved.write_text(keep)


def test_a_value_given_twice_runs_once(one_cell):
    """Case 10: variant=linear,linear ran the cell twice into one dir."""
    _, r = one_cell
    assert "variant=linear given more than once: each cell runs once" in r.stdout
    assert r.stdout.count("compile=off,variant=linear: ok") == 1 and "[1/1]" in r.stdout


def test_printed_commands_paste_into_a_shell(tmp_path, capsys):
    """Case 12: the report command was not quoted: a path with a space failed when pasted."""
    sd = tmp_path / "my sweeps" / "s"
    row = {"run_id": "a", "status": "ok", "variant": "linear", "compile": "off"}
    io.write_csv(sd / "runs.csv", [row], "runs")
    summary(sd)
    out = capsys.readouterr().out
    assert f"report: python -m analysis.report '{sd}'" in out
