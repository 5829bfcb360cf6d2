"""Nothing lost, nothing mislabelled: a bad file costs its cell only, every planned
cell is counted, runs.csv follows its run dirs, resume stays in its own sweep."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from study.rows import io
from study.rows.summary import summary
from tests.conftest import TINY, cli


def ok_row(run_id: str, **more) -> dict:
    return {"run_id": run_id, "status": "ok", "variant": "linear", "compile": "off",
            "config_hash": "h", "latency_median_us": 1.0, **more}  # fmt: skip


def write_cell(run_dir, row: dict, kernels: str | None = None) -> None:
    io.write_csv(run_dir / "run.csv", [row], "runs")
    if kernels is not None:
        (run_dir / "kernels.csv").write_text(kernels)


GARBLED = "run_i\x00d,name\r\nx,y\r\n"


def test_a_garbled_kernels_csv_costs_its_cell_only_and_is_named(tmp_path, capsys):
    """The defect: KeyError: 'run_id' for every later cell, and runs.csv never rebuilt."""
    write_cell(tmp_path / "a", ok_row("a"), GARBLED)
    write_cell(tmp_path / "b", ok_row("b"))
    io.aggregate(tmp_path)
    assert [r["run_id"] for r in io.read_csv(tmp_path / "runs.csv")] == ["b"]
    err = capsys.readouterr().err
    assert f"skipping {tmp_path / 'a'}: its kernels.csv is incomplete" in err


def test_the_report_names_a_kernels_csv_garbled_after_runs_csv_and_builds(tmp_path, capsys):
    """Issue 68: a cell's kernels.csv garbled after its sweep ended was dropped from the report
    without a word (or stopped it: a quote left open is a pandas ParserError)."""
    from analysis import report

    kernel = {"kernel": "triton_poi_0", "kernel_class": "pointwise", "calls_per_step": 1}
    for name in "abc":
        write_cell(tmp_path / name, ok_row(name, config_hash=name))
        io.write_csv(tmp_path / name / "kernels.csv", [{"run_id": name, **kernel}], "kernels")
    io.aggregate(tmp_path)
    (tmp_path / "a" / "kernels.csv").write_text(GARBLED)
    (tmp_path / "b" / "kernels.csv").write_text('run_id,kernel\r\nb,"triton\r\n')
    capsys.readouterr()
    report.main([str(tmp_path)])
    err = capsys.readouterr().err.splitlines()
    said = [x for x in err if x.startswith("[analysis] leaving out ")]
    assert len(said) == 2, err
    assert said[0] == (
        f"[analysis] leaving out {tmp_path / 'a' / 'kernels.csv'}: it is incomplete (its rows "
        "have no run_id (a header cut or garbled?)); its cell is reported without its kernels; "
        "resume=true (or running it again) rebuilds it"
    )
    assert said[1].startswith(f"[analysis] leaving out {tmp_path / 'b' / 'kernels.csv'}: it is ")
    assert [r["run_id"] for r in io.read_csv(tmp_path / "report" / "kernels.csv")] == ["c"]
    assert "3 cells (3 ok" in (tmp_path / "report" / "report.md").read_text()


def test_a_kernels_csv_without_a_column_reads_it_blank(tmp_path):
    """A hand-made or older kernels.csv without kernel_short stopped analysis.load with a
    KeyError in the blog table (study.rows.revealed); the column now reads blank."""
    from analysis.load import expand, load

    write_cell(tmp_path / "a", ok_row("a", config_hash="a", compile="default"))
    io.aggregate(tmp_path)
    (tmp_path / "a" / "kernels.csv").write_text(
        "run_id,kernel,kernel_class,calls_per_step,us_per_step,generated\n"
        "a,triton_poi_0,triton_pointwise,1,5.0,True\n"
    )  # one generated kernel a step: the blog table names it by kernel_short
    d = load(expand([str(tmp_path)]))
    assert list(d["kernels"]["kernel"]) == ["triton_poi_0"]
    assert "single fused kernel" in " ".join(d["revealed"].astype(str).to_numpy().ravel())


def test_a_sweep_with_a_bad_kernels_csv_goes_on_and_its_summary_counts_every_cell(tmp_path, capsys):
    """The defect: 'done: 4 cells ... 4 ok' for a 6-cell sweep, exit 0."""
    from study.sweep.scheduler import Scheduler
    from tests.test_scheduler import cell_cfg, factory

    def cells_write_their_rows(fake):  # the first cell's kernels.csv is garbled
        for s in fake.spawned:
            if s["rid"] not in fake.exits and not s.get("ended"):
                s["ended"] = True
                d = Path(s["kwargs"]["run_dir"])
                write_cell(d, ok_row(d.name), GARBLED if d.name == "a" else None)
                fake.exits[s["rid"]] = 0

    make, _ = factory(script=cells_write_their_rows)
    sweep = tmp_path / "sweep"
    with Scheduler(1, make_parent=make) as sched:
        for name in "abc":
            sched.submit(cell_cfg(tmp_path), sweep / name, sweep)
    assert sorted(r["run_id"] for r in io.read_csv(sweep / "runs.csv")) == ["b", "c"]
    capsys.readouterr()
    assert summary(sweep, planned=["a", "b", "c"]) == 1
    out = capsys.readouterr().out
    assert "done: 3 cells: 2 ok, 1 without a row" in out
    assert f"a: no row (see the lines above; its files: {sweep / 'a'})" in out


def test_a_planned_cell_without_a_row_is_counted_and_named(tmp_path, capsys):
    """The defect: a full disk gave 'done: 1 cells ... 1 ok' for an 8-cell sweep."""
    io.write_csv(tmp_path / "runs.csv", [ok_row("a")], "runs")
    assert summary(tmp_path, planned=["a", "b"]) == 1
    out = capsys.readouterr().out
    assert "done: 2 cells: 1 ok, 1 without a row" in out and "b: no row" in out


def a_sweep(d: Path) -> Path:
    for name in "ab":
        write_cell(d / name, ok_row(name))
    io.aggregate(d)
    return d


def test_a_rewritten_run_csv_rebuilds_runs_csv(tmp_path, capsys):
    """The defect: after study.cell.worker rewrote a run.csv, the report showed the old one."""
    import os

    from analysis.load import check_sweep

    d = a_sweep(tmp_path)
    write_cell(d / "a", ok_row("a", latency_median_us=2.5))  # what the worker by hand does
    check_sweep(d)
    assert {r["run_id"]: r["latency_median_us"] for r in io.read_csv(d / "runs.csv")} == {
        "a": "2.5", "b": "1.0"}  # fmt: skip
    assert "listed 1 cell whose run.csv changed since (a)" in capsys.readouterr().err
    earlier = (d / "b" / "run.csv").stat().st_mtime - 5
    os.utime(d / "runs.csv", (earlier, earlier))  # b's row, the same, written after runs.csv
    check_sweep(d)
    assert "2 cells whose run.csv changed since (a, b)" in capsys.readouterr().err
    check_sweep(d)  # rebuilt: now it is read as it is
    assert capsys.readouterr().err == ""


def test_every_run_csv_cut_short_leaves_no_old_rows_to_trust(tmp_path, capsys):
    """The defect: 'no run.csv below DIR', exit 0, the old runs.csv kept, and the report said
    'Built ... from 2 cells (2 ok)'."""
    from analysis.load import check_sweep

    d = a_sweep(tmp_path)
    for name in "ab":
        p = d / name / "run.csv"
        p.write_text(p.read_text()[:150])
    assert io.main([str(d)]) == 1
    err = capsys.readouterr().err
    assert "skipping" in err and "2 cell(s) left out" in err
    assert io.read_csv(d / "runs.csv") == []
    with pytest.raises(SystemExit, match="no run.csv below .* reads whole"):
        check_sweep(d)


@pytest.mark.slow
def test_resume_stays_in_its_own_sweep_and_says_which(tmp_path):
    """The defect: P stopped after 1 cell; Q (same fixed overrides, other variants) ran to
    its end; P's command with resume=true picked Q's dir (the newest) and measured P there."""
    p = ("-m", "variant=naive,linear", "compile=off", f"out_root={tmp_path}", *TINY)
    assert cli(*p).returncode == 0
    (p_dir,) = (tmp_path / "sweeps").iterdir()
    (p_dir / "compile=off,variant=linear" / "run.csv").unlink()  # as if P was killed there
    time.sleep(1.1)  # Q is the newer by its sweep.yaml's time
    assert cli("-m", "variant=flash", "compile=off", f"out_root={tmp_path}", *TINY).returncode == 0
    (q_dir,) = set((tmp_path / "sweeps").iterdir()) - {p_dir}
    r = cli(*p, "resume=true")
    assert r.returncode == 0, r.stderr[-1500:]
    assert f"resume=true: resuming {p_dir} (the newest sweep with these points)" in r.stdout
    assert "variant=naive: ok already, skipped" in r.stdout and "done: 2 cells" in r.stdout
    assert sorted(x.name for x in q_dir.iterdir() if x.is_dir()) == ["compile=off,variant=flash"]
    assert len(io.read_csv(p_dir / "runs.csv")) == 2


def test_an_ok_row_whose_latency_is_no_number_is_run_again(tmp_path):
    """The defect: a non-numeric latency_median_us was trusted on resume."""
    from study.sweep.rundir import why_rerun

    for bad in ("abc", "nan", "-1"):
        write_cell(tmp_path, ok_row("a", latency_median_us=bad))
        assert "is no time" in why_rerun(tmp_path, "h"), bad
    write_cell(tmp_path, ok_row("a", latency_median_us="12.5"))
    assert why_rerun(tmp_path, "h") is None


@pytest.mark.slow
def test_a_clean_sweep_leaves_no_lock_or_pid_file(tmp_path):
    """The defect: .runs.lock, .sweep.lock and .cell.pid stayed after a clean finish."""
    assert cli("-m", "variant=linear", "compile=off", f"out_root={tmp_path}", *TINY).returncode == 0
    left = [p.name for p in tmp_path.rglob(".*") if p.name in (".runs.lock", ".sweep.lock",
                                                               ".cell.pid")]  # fmt: skip
    assert left == [] and len(list(tmp_path.rglob("run.csv"))) == 1


@pytest.mark.slow
def test_sigterm_says_what_finished_and_how_to_resume(tmp_path):
    """The defect: SIGTERM to the sweep gave exit 143 and no resume line."""
    import signal
    import subprocess
    import sys

    from tests.conftest import ROOT, root_env

    args = ["-m", "variant=naive", "fault=none,hang", f"out_root={tmp_path}", *TINY]
    proc = subprocess.Popen([sys.executable, "-m", "study.run", *args], cwd=ROOT, env=root_env(),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)  # fmt: skip
    deadline = time.time() + 300  # a loaded 2-core box starts a sweep slowly
    while time.time() < deadline and not list(tmp_path.glob("sweeps/*/fault=hang*/.cell.pid")):
        time.sleep(0.2)
    assert list(tmp_path.glob("sweeps/*/fault=hang*/.cell.pid")), "the hang cell never started"
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=180)
    assert proc.returncode == 143 and "Traceback" not in err, err[-1500:]
    (line,) = [x for x in err.splitlines() if "interrupted" in x]
    assert "1 of 2 cells finished" in line and line.endswith("resume=true")
    assert "resume with: python -m study.run -m variant=naive fault=none,hang" in line


def test_a_text_cell_a_spreadsheet_would_run_is_written_as_text(tmp_path):
    """The defect: a name beginning '=', '+', '-' or '@' went into CSVs as it is."""
    row = ok_row("a", variant='=HYPERLINK("http://x")', reason="@SUM(1)", host="+h",
                 dtype="-d", latency_median_us="-1.5", seed=-3)  # fmt: skip
    io.write_csv(tmp_path / "run.csv", [row], "runs")
    (back,) = io.read_csv(tmp_path / "run.csv")
    assert back["variant"] == '\'=HYPERLINK("http://x")' and back["reason"] == "'@SUM(1)"
    assert back["host"] == "'+h" and back["dtype"] == "'-d"
    assert back["latency_median_us"] == "-1.5" and back["seed"] == "-3"  # numbers stay numbers
    io.write_csv(tmp_path / "run.csv", [back], "runs")  # written again: no second quote
    assert io.read_csv(tmp_path / "run.csv")[0]["variant"] == back["variant"]


def test_a_name_a_spreadsheet_would_run_reads_as_typed_and_stays_guarded_in_csvs(tmp_path, capsys):
    """Issue 68: a variant named =1+1 showed as '=1+1 (the CSVs' guard) in the report and on
    the console."""
    import shutil

    from analysis import compare, report

    a = tmp_path / "a"
    for name, variant in (("x", "=1+1"), ("y", "<b>lin</b>")):
        write_cell(a / name, ok_row(name, config_hash=name, variant=variant))
    io.aggregate(a)
    report.main([str(a)])
    md, page = ((a / "report" / f"report.{x}").read_text() for x in ("md", "html"))
    assert "| =1+1 |" in md and "'=1+1" not in md
    assert "=1+1" in page and "'=1+1" not in page and "&#x27;=1+1" not in page
    assert "&lt;b&gt;lin&lt;/b&gt;" in page and "<b>lin" not in page
    for runs in (a / "runs.csv", a / "report" / "runs.csv"):  # the CSVs keep their guard
        assert {r["variant"] for r in io.read_csv(runs)} == {"'=1+1", "<b>lin</b>"}
    b = shutil.copytree(a, tmp_path / "b", ignore=shutil.ignore_patterns("report", "x"))
    io.aggregate(b)
    capsys.readouterr()
    assert compare.main([str(a), str(b), "--out", str(tmp_path / "c"), "--fail-on-regression"])
    assert "  missing in B: a: =1+1 · off (ok in A)" in capsys.readouterr().out.splitlines()


@pytest.mark.parametrize(
    "text, said",
    [
        ("", "runs.csv is empty"),
        ("a,b\r\n1,2\r\n", "without a run_id column"),
        ("run_id,x\r\n1,2\r\n", "has no status, variant"),
    ],
)
def test_the_report_on_an_empty_or_foreign_runs_csv_is_one_line_and_exit_2(
    tmp_path, capsys, text, said
):
    """The defect: a traceback."""
    from analysis import report

    (tmp_path / "runs.csv").write_text(text)
    with pytest.raises(SystemExit) as e:
        report.main([str(tmp_path)])
    err = capsys.readouterr().err
    assert e.value.code == 2 and said in err and len(err.splitlines()) == 1, err


def test_the_report_into_a_file_or_a_read_only_dir_is_one_line_and_exit_2(
    tmp_path, capsys, monkeypatch
):
    """The defect: '--out' naming a file, and a read-only sweep dir: tracebacks."""
    import os

    from analysis import report

    d = a_sweep(tmp_path / "s")
    (tmp_path / "f").write_text("a file\n")
    with pytest.raises(SystemExit) as e:
        report.main([str(d), "--out", str(tmp_path / "f" / "r")])
    assert e.value.code == 2 and "is a file, not a dir" in capsys.readouterr().err
    real = os.access  # as root, a read-only mode still writes: the check asks os.access
    monkeypatch.setattr(os, "access", lambda p, m: Path(p) != d and real(p, m))
    with pytest.raises(SystemExit) as e:
        report.main([str(d)])
    assert e.value.code == 2 and f"cannot write in {d} (read-only)" in capsys.readouterr().err
    assert not (d / "report").exists()


def test_a_resume_of_some_points_never_shrinks_the_sweeps_total(tmp_path, monkeypatch):
    """sweep.yaml's total was this run's points only: resuming 1 of 4 points wrote total 1,
    and the compare gate then passed a sweep whose other 3 cells never finished."""
    from omegaconf import OmegaConf

    from study.sweep import sweepdir

    monkeypatch.setattr(sweepdir, "overrides", lambda config: [])
    four = [[f"variant={v}"] for v in ("naive", "flash", "math", "cudnn")]
    sweepdir.write_sweep_yaml(OmegaConf.create({"resume": False}), tmp_path, four, 1.0)
    sweepdir.write_sweep_yaml(OmegaConf.create({"resume": True}), tmp_path, four[:1], 2.0)
    assert sweepdir.clock(tmp_path)[0] == 4
