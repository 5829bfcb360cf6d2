"""Sweep integrity on the analysis side: compare matches every cell whatever its
status (a cell that stopped being ok is a regression), tells noise from change, and a sweep's
runs.csv that disagrees with its run dirs is rebuilt from them before anything reads it."""

import zlib

import numpy as np
import pandas as pd
import pytest

from analysis.compare import build, main
from analysis.load import expand, load
from study.rows import io as study_io
from study.rows.schema import columns
from tests import synth
from tests.conftest import without_torch

LATENCY = ("latency_median_us", "latency_p10_us", "latency_p90_us")


def cpu_rows(spread: float = 0.02) -> pd.DataFrame:
    """18 ok CPU cells whose calls spread ``spread`` either side of their median."""
    r = synth.on_cpu("core", name="cpu")["runs"]
    r["latency_p10_us"] = r["latency_median_us"] * (1 - spread)
    r["latency_p90_us"] = r["latency_median_us"] * (1 + spread)
    return r


def results(runs: pd.DataFrame, where) -> str:
    return str(synth.write({"runs": runs}, where))


def at(runs, variant, mode="default"):
    return (runs["variant"] == variant) & (runs["compile"] == mode)


def fail(runs, where, status="crash", reason="Fatal Python error: Segmentation fault\n  ..."):
    """The cells at ``where`` ended with ``status``: no latency, no speedup, a reason."""
    runs.loc[where, "status"] = status
    runs.loc[where, "reason"] = reason
    for c in (*LATENCY, "speedup", "compile_s", "kernels_per_step"):
        runs.loc[where, c] = np.nan


# Case 3: a cell that stopped being ok is a regression, said first.


@pytest.mark.slow
def test_every_cell_crashed_fails_the_regression_check(tmp_path):
    b = cpu_rows()
    fail(b, b.index == b.index)
    r = without_torch(
        "analysis.compare",
        [results(cpu_rows(), tmp_path / "a"), results(b, tmp_path / "b"),
         "--out", str(tmp_path / "out"), "--fail-on-regression"],
    )  # fmt: skip
    assert r.returncode == 1, r.stdout + r.stderr[-2000:]
    assert "18 cells matched (0 only in A, 0 only in B)" in r.stdout
    assert "18 regressions (18 no longer ok), 0 improved" in r.stdout
    said = [x for x in r.stdout.splitlines() if x.startswith("  regressed: ")]
    assert len(said) == 18
    assert said[0].endswith("(status ok → crash: Fatal Python error: Segmentation fault)")
    md = (tmp_path / "out" / "compare.md").read_text()
    assert md.count("| ok → crash |") == 2 * 18  # in the regressions and in every cell


def test_a_cell_no_longer_ok_is_said_before_a_slower_one(tmp_path, capsys):
    b = cpu_rows()
    fail(b, at(b, "naive"), "timeout", "no run.csv after 600 s")
    for c in LATENCY:
        b.loc[at(b, "flash"), c] *= 1.5
    rc = main([results(cpu_rows(), tmp_path / "a"), results(b, tmp_path / "b"),
               "--out", str(tmp_path / "out"), "--fail-on-regression"])  # fmt: skip
    out = capsys.readouterr().out
    assert rc == 1
    assert "2 regressions (1 no longer ok), 0 improved, 0 within noise, 16 unchanged." in out
    said = [x for x in out.splitlines() if x.startswith("  regressed: ")]
    assert said == [
        "  regressed: cpu: naive · default (status ok → timeout: no run.csv after 600 s)",
        "  regressed: cpu: flash · default (latency; latency +50%)",
    ]


def test_a_cell_now_ok_and_one_only_in_b_are_said_not_counted(tmp_path, capsys):
    a, b = cpu_rows(), cpu_rows()
    fail(a, at(a, "math"), "oom", "CUDA out of memory")
    new = b[at(b, "naive")].assign(compile="max-autotune", run_id="compile=max-autotune,naive")
    fail(new, new.index == new.index, "unsupported", "no template for this bmm")
    b = pd.concat([b, new], ignore_index=True)
    rc = main([results(a, tmp_path / "a"), results(b, tmp_path / "b"),
               "--out", str(tmp_path / "out"), "--fail-on-regression"])  # fmt: skip
    out = capsys.readouterr().out
    assert rc == 0, out
    assert "18 cells matched (0 only in A, 1 only in B)" in out
    assert "0 regressions, 0 improved, 0 within noise, 1 now ok, 17 unchanged." in out
    assert "  now ok: cpu: math · default (oom in A)" in out
    assert "  only in B: cpu: naive · max-autotune (unsupported)" in out
    md = (tmp_path / "out" / "compare.md").read_text()
    assert "| oom → ok |" in md and "| cpu | naive | max-autotune | unsupported |" in md


# Case 14: noise is not change.


@pytest.mark.parametrize(
    "spread, improved, noise",
    [(0.15, 0, 18),  # 10% faster inside both sides' p10–p90 spread: within noise
     (0.02, 18, 0)],  # the intervals clearly apart: improved
    ids=["overlapping", "apart"],
)  # fmt: skip
def test_a_change_counts_only_outside_both_sides_intervals(tmp_path, spread, improved, noise):
    b = cpu_rows(spread)
    for c in LATENCY:
        b[c] *= 0.9
    line, m = build(results(cpu_rows(spread), tmp_path / "a"), results(b, tmp_path / "b"),
                    tmp_path / "out")  # fmt: skip
    assert f"0 regressions, {improved} improved, {noise} within noise." in line
    assert (m["latency"].round(6) == 0.9).all()
    md = (tmp_path / "out" / "compare.md").read_text()  # each side's interval, where noise
    assert md.count(" µs (p10–p90), B ") == noise  # in the table of every cell


def test_a_cells_repeats_give_its_interval(tmp_path):
    """With repeats, a side's interval is the range of its processes' medians, not the calls'
    spread: three processes within 2% of each other make a 10% change count."""

    def repeated(f, spread):
        reps = []
        for i, g in enumerate((0.99, 1.0, 1.01)):
            x = cpu_rows(spread).assign(repeat=i, repeats=3)
            x["config_hash"] = [f"{zlib.crc32(r.encode()):08x}" for r in x["run_id"]]
            for c in LATENCY:
                x[c] *= f * g
            reps.append(x)
        return pd.concat(reps, ignore_index=True)

    line, m = build(results(repeated(1.0, 0.15), tmp_path / "a"),
                    results(repeated(0.9, 0.15), tmp_path / "b"), None)  # fmt: skip
    assert "0 regressions, 18 improved, 0 within noise." in line
    assert set(m["lat_iv_a"]) == {"repeats"}


def test_timing_outside_the_fast_phase_is_not_compared(tmp_path):
    """Two identical CPU quickstarts read 1 regression: flash default +18% latency and 0.72x
    -> 0.61x paired, its B row timed 99% in the host's slow phase (timing_phase mixed)."""
    a, b = cpu_rows(0.15), cpu_rows(0.15)
    a["timing_phase"], b["timing_phase"] = "fast", "fast"
    flash = at(b, "flash")
    for c in LATENCY:
        b.loc[flash, c] *= 1.5  # past both sides' intervals: a regression in the fast phase
    line, m = build(results(a, tmp_path / "a"), results(b, tmp_path / "b"), tmp_path / "o1")
    assert "1 regression, 0 improved, 0 within noise, 17 unchanged." in line
    b.loc[flash, "timing_phase"] = "mixed"
    line, m = build(results(a, tmp_path / "a2"), results(b, tmp_path / "b2"), tmp_path / "o2")
    assert "0 regressions, 0 improved, 1 within noise, 17 unchanged." in line
    assert (m["within_noise"] == "host phase").sum() == 1
    md = (tmp_path / "o2" / "compare.md").read_text()
    assert "host phase: A fast, B mixed (timing outside the fast phase is not compared)" in md


def test_a_compile_time_change_under_a_second_is_not_judged(tmp_path):
    """A 0.67 s compile read 0.76 s in an identical second quickstart: +13%, past 5%."""
    a, b = cpu_rows(), cpu_rows()
    a["compile_s"], b["compile_s"] = 0.67, 0.76
    line, _ = build(results(a, tmp_path / "a"), results(b, tmp_path / "b"), None)
    assert "0 regressions, 0 improved" in line
    a["compile_s"], b["compile_s"] = 10.0, 13.0  # +30% and 3 s: a change
    line, m = build(results(a, tmp_path / "a2"), results(b, tmp_path / "b2"), None)
    assert "regressions" in line and (m["regressed"].str.contains("compile time")).any()


# Case 5: a sweep's runs.csv is checked against its run dirs.


@pytest.fixture
def sweep(tmp_path):
    """A sweep dir of 8 finished cells (run dirs with their run.csv) and its runs.csv."""
    d = tmp_path / "sweep"
    r = cpu_rows().head(8).copy()
    r["config_hash"] = [f"{zlib.crc32(x.encode()):08x}" for x in r["run_id"]]
    r = r[[c for c in r.columns if c in set(columns("runs"))]]
    for rec in r.astype(object).where(r.notna(), None).to_dict("records"):
        study_io.write_csv(d / rec["run_id"] / "run.csv", [rec], "runs")
    study_io.aggregate(d)
    assert len(pd.read_csv(d / "runs.csv")) == 8
    return d


def _keep(d, n_lines: int, cut: int = 0) -> None:
    """Keep the first ``n_lines`` lines of ``d``'s runs.csv, less ``cut`` characters."""
    text = "".join((d / "runs.csv").read_text().splitlines(keepends=True)[:n_lines])
    (d / "runs.csv").write_text(text[: len(text) - cut])


@pytest.mark.slow
def test_the_report_rebuilds_a_runs_csv_that_lists_one_of_eight_cells(sweep):
    _keep(sweep, 2)  # the header and one row
    r = without_torch("analysis.report", [str(sweep)])
    assert r.returncode == 0, r.stderr[-3000:]
    said = f"[analysis] {sweep}/runs.csv listed 1 of 8 finished cells: rebuilt it from the run dirs"
    assert said in r.stderr.splitlines()
    assert "from 8 cells (8 ok, 0 not ok)" in (sweep / "report" / "report.md").read_text()
    assert len(pd.read_csv(sweep / "runs.csv")) == 8


@pytest.mark.parametrize(
    "damage, said",
    [(lambda d: _keep(d, 4, cut=30), "runs.csv is cut short (no line break at its end)"),
     (lambda d: _keep(d, 9, cut=1), "runs.csv is cut short (no line break at its end)"),
     (lambda d: (d / "runs.csv").write_text(""), "runs.csv is empty"),
     (lambda d: (d / "runs.csv").unlink(), " has no runs.csv: built it")],
    ids=["cut-in-a-row", "last-line-break-lost", "empty", "missing"],
)  # fmt: skip
def test_a_runs_csv_cut_short_or_missing_is_rebuilt(sweep, capsys, damage, said):
    damage(sweep)
    d = load(expand([str(sweep)]))
    assert len(d["runs"]) == 8
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and err[0].startswith(f"[analysis] {sweep}") and said in err[0], err


def test_rows_whose_run_dir_is_gone_are_dropped(sweep, capsys):
    gone = sorted(p.parent for p in sweep.glob("*/run.csv"))[0]
    for f in gone.iterdir():
        f.unlink()
    gone.rmdir()
    assert len(load([sweep])["runs"]) == 7
    assert capsys.readouterr().err == (
        f"[analysis] {sweep}/runs.csv listed 1 cell whose run dir is gone ({gone.name}): "
        "rebuilt it from the run dirs\n"
    )


def test_a_row_whose_run_csv_was_cut_short_is_said_as_such(sweep, capsys):
    cut = sorted(sweep.glob("*/run.csv"))[0]
    cut.write_text(cut.read_text()[:-20])  # the cell's own run.csv, after runs.csv listed it
    load([sweep])
    assert capsys.readouterr().err.splitlines()[-1] == (
        f"[analysis] {sweep}/runs.csv listed 1 cell whose run.csv does not read whole "
        f"({cut.parent.name}): rebuilt it from the run dirs"
    )


def test_a_sweep_that_cannot_be_rebuilt_stops_saying_what_is_missing(sweep, monkeypatch):
    _keep(sweep, 2)

    def read_only(d):
        raise PermissionError(13, "Permission denied", str(d / ".runs.lock"))

    monkeypatch.setattr(study_io, "aggregate", read_only)
    with pytest.raises(SystemExit) as e:
        load([sweep])
    msg = str(e.value.code)
    assert "\n" not in msg
    assert msg.startswith(f"analysis: {sweep}/runs.csv listed 1 of 8 finished cells, and it ")
    assert "Permission denied" in msg and "missing: compile=" in msg and " and 2 more." in msg
    assert msg.endswith(f"python -m study.rows.io {sweep}")


def test_an_intact_sweep_and_a_results_dir_are_read_as_they_are(sweep, capsys):
    before = (sweep / "runs.csv").read_bytes()
    stamp = (sweep / "runs.csv").stat().st_mtime_ns
    assert len(load([sweep])["runs"]) == 8
    assert (sweep / "runs.csv").read_bytes() == before
    assert (sweep / "runs.csv").stat().st_mtime_ns == stamp
    assert len(load([synth.H200])["runs"]) == len(pd.read_csv(synth.H200 / "runs.csv"))
    assert capsys.readouterr().err == ""


def test_the_figure_colours_a_variant_by_its_cells_verdicts(tmp_path):
    """Review: a variant's bar was red when its geometric mean passed 5%, though every one of
    its cells was within noise and compare counted no regression."""
    import matplotlib.colors as mcolors
    import matplotlib.pyplot as plt

    from analysis.figures import compare as figures_compare

    a, b = cpu_rows(0.15), cpu_rows(0.15)
    for c in LATENCY:
        b.loc[b["variant"] == "flash", c] *= 1.1  # inside both sides' p10–p90: within noise
    line, m = build(results(a, tmp_path / "a"), results(b, tmp_path / "b"), None)
    assert "0 regressions" in line
    fig, _ = figures_compare.changes(m, "A", "B")
    (bars,) = fig.axes[0].containers  # the per-variant bars
    grey = mcolors.to_rgba(figures_compare.COLORS["within"])
    assert len(bars) > 1 and all(p.get_facecolor() == grey for p in bars)
    plt.close(fig)


@pytest.mark.parametrize(
    "module",
    [
        "reference.findings.audit",
        "analysis.tables.models",
        "analysis.tables.layers",
        "analysis.tables.startup",
        "analysis.report",
        "analysis.compare",
    ],  # fmt: skip
)
def test_every_analysis_command_names_a_dir_without_rows_in_one_line(tmp_path, module, capsys):
    import importlib

    main_of = importlib.import_module(module).main
    args = [str(tmp_path / "nothing")] * (2 if module.endswith("compare") else 1)
    (tmp_path / "empty").mkdir()
    for given, said in (
        ("nothing", "no such dir: {}"),  # it once said "has no runs.csv"
        ("empty", "{} has no runs.csv: pass a sweep dir (outputs/sweeps/<time>)"),
    ):
        with pytest.raises(SystemExit) as e:
            main_of([str(tmp_path / given)] * len(args))
        assert e.value.code == 2  # a user's mistake at start
        command = module.replace("tables.", "tables ")  # python -m analysis.tables TOPIC
        assert capsys.readouterr().err == f"{command}: {said.format(tmp_path / given)}\n"
