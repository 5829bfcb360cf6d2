"""The suite's answer on recorded rows (tests/fixtures/suite/runs.csv, make.py there): the
table's pass rate and geomean over the models that ran on both sides, its interval, the per
model line (payback, guards, serial bound), the report's opening, the figure, and compare's
gate by model. No torch, no subprocess."""

import math

import numpy as np
import pandas as pd
import pytest

from analysis.load import load
from analysis.tables import suite, suite_stats
from study.observe.stats import t_quantile
from tests import synth
from tests.conftest import FIXTURES

SUITE = FIXTURES / "suite"


@pytest.fixture(scope="module")
def fixture() -> dict:
    return load([SUITE])


def raw() -> pd.DataFrame:
    return pd.read_csv(SUITE / "runs.csv")


def _line(t: pd.DataFrame, **at) -> dict:
    hit = t
    for k, v in at.items():
        hit = hit[hit[k] == v]
    assert len(hit) == 1, at
    return hit.iloc[0].to_dict()


def _gm(xs) -> float:
    return float(np.exp(np.mean(np.log(list(xs)))))


def test_pass_rate_counts_the_error_and_the_geomean_leaves_its_model_out(fixture):
    r = raw()
    s = suite_stats.mode_stats(fixture["runs"])
    ro = _line(s, regime="latency", mode="reduce-overhead")
    lat = r[(r["regime"] == "latency") & (r["compile"] == "reduce-overhead")]
    lat = lat[lat["compile_stance"] == "default"]  # the guard-skipping twin is not planned
    assert (ro["ok"], ro["planned"]) == ((lat["status"] == "ok").sum(), len(lat)) == (3, 4)
    ok = lat[lat["status"] == "ok"]
    assert ro["models"] == 3 and "resnet50" not in set(ok["variant"])
    assert ro["geomean"] == pytest.approx(_gm(ok["speedup_paired"]))
    assert mode_text(fixture, "latency", "reduce-overhead")["pass rate"] == "3/4 (75%)"


def mode_text(fixture, regime, mode) -> dict:
    return _line(suite_stats.mode_table(fixture["runs"]), regime=regime, mode=mode)


def test_a_model_whose_eager_failed_is_left_out_of_every_mode_and_counted_as_failed():
    r = raw()
    bad = (r["variant"] == "vit") & (r["regime"] == "throughput") & (r["compile"] == "off")
    r.loc[bad, ["status", "reason"]] = ["error", "RuntimeError: eager broke"]
    s = suite_stats.mode_stats(r)
    off = _line(s, regime="throughput", mode="off")
    assert (off["ok"], off["planned"]) == (3, 4)
    d = _line(s, regime="throughput", mode="default")
    others = r[
        (r["regime"] == "throughput") & (r["compile"] == "default") & (r["variant"] != "vit")
    ]
    assert d["models"] == 3 and d["geomean"] == pytest.approx(_gm(others["speedup_paired"]))


def test_the_interval_is_a_t_interval_over_models_and_a_range_under_three():
    g, lo, hi, over = suite_stats.geomean_interval([2.0, 8.0])
    assert (g, lo, hi) == pytest.approx((4.0, 2.0, 8.0)) and over == "range of 2 models"
    sp = [1.5, 2.0, 3.0, 1.2]
    g, lo, hi, over = suite_stats.geomean_interval(sp)
    x = np.log(sp)
    half = t_quantile(3) * x.std(ddof=1) / math.sqrt(4)
    assert (lo, hi) == pytest.approx((g * math.exp(-half), g * math.exp(half)))
    assert over == "95% t-interval over 4 models" and lo < min(sp) < max(sp) < hi
    assert math.isnan(suite_stats.geomean_interval([])[0])


def test_per_model_best_mode_payback_guards_and_bounds(fixture):
    t = suite.model_stats(fixture["runs"], fixture["kernels"], fixture["autotune"])
    r = raw()
    gpt = _line(t, model="gpt2", regime="latency")
    lat = r[(r["variant"] == "gpt2") & (r["regime"] == "latency")]
    lat = lat[lat["compile_stance"].fillna("default") == "default"]
    best = lat.loc[lat["speedup_paired"].idxmax()]
    assert gpt["best mode"] == best["compile"] == "reduce-overhead"
    eager = best["eager_latency_paired_us"]
    saved = eager - eager / best["speedup_paired"]
    assert gpt["payback_calls"] == pytest.approx(best["compile_s"] * 1e6 / saved)
    skip = r[r["compile_stance"] == "skip_guard_eval_unsafe"].iloc[0]
    guards = (best["host_units"] - skip["host_units"]) * best["host_gauge_us"]
    assert float(gpt["guard µs/call"]) == pytest.approx(guards, rel=0.01)
    assert _line(t, model="bert", regime="throughput")["bound"] == "device (eager: serial)"
    res = _line(t, model="resnet50", regime="latency")
    assert res["best mode"] == "max-autotune-no-cudagraphs" and "error" in res["not ok"]
    assert "reduce-overhead" in res["not ok"] and gpt["cause"]


def test_a_serial_row_is_bound_serial_whatever_its_host_figures():
    x = {"host_status": "serial", "device": "cuda", "host_us": 10.0, "device_time_us": 1.0}
    assert suite_stats.bound(x) == "serial"
    assert suite_stats.bound({**x, "host_status": "measured"}) == "host"


def test_the_cli_prints_every_table_and_the_hud_and_refuses_a_sweep_without_suite_rows(
    tmp_path, capsys
):
    assert suite.main([str(SUITE)]) == 0
    out = capsys.readouterr().out
    assert "per kind of model" in out and "Per model" in out and "| 1.90x | H100 |" in out
    plain = synth.write({"runs": synth.on_cpu("core")["runs"]}, tmp_path / "ladder")
    assert suite.main([str(plain)]) == 1
    assert "no suite rows" in capsys.readouterr().out


def test_the_report_of_a_suite_sweep_opens_with_the_suite_and_others_do_not(tmp_path):
    from analysis import report, suite_opening

    out = report.build([SUITE], tmp_path / "rep")
    md = (out / "report.md").read_text().splitlines()
    heads = [x for x in md if x.startswith("## ")]
    assert heads[0] == f"## {suite_opening.TITLE}" and "## The answer" in heads
    first = md.index(heads[0])
    screen = "\n".join(md[first : first + 16])  # the first screen: the per-kind table
    assert "| decoder | latency | fwd | gpt2 | reduce-overhead | 7.69x" in screen
    assert "compile s (median)" in screen
    page = (out / "report.html").read_text()
    assert page.index("id='suite'") < page.index("id='answer'")
    assert (out / "suite.png").exists()
    d = {"runs": synth.on_cpu("core")["runs"]}
    assert suite_opening.opening(d, tmp_path / "none") == ([], "", [])


def test_the_figure_fits_a_screen_and_crosses_each_failure(fixture):
    from analysis.figures.suite import FAIL
    from analysis.figures.suite import suite as draw
    from analysis.style import DPI, MAX_BARS, MAX_PX

    fig, sentence = draw(fixture)
    w, h = fig.get_size_inches() * DPI
    assert w <= MAX_PX[0] + 0.5 and h <= MAX_PX[1] + 0.5
    panels = [ax for ax in fig.axes if ax.get_title()]
    assert [ax.get_title() for ax in panels] == ["latency · fwd", "throughput · fwd"]
    crosses = [ln for ax in panels for ln in ax.lines if ln.get_marker() == "x"]
    assert len(crosses) == 1 and crosses[0].get_color() == FAIL
    labels = [t.get_text() for t in panels[0].texts]
    assert "error" in labels and "1 cell(s) that did not run ok" in sentence
    assert all(len(ax.patches) <= MAX_BARS for ax in panels)
    assert len(panels[0].patches) == 4 * 3 - 1  # 4 models x 3 modes, less the failure


def _gate(tmp_path, b: pd.DataFrame, capsys) -> tuple[int, list[str]]:
    from analysis.compare import main

    side = synth.write({"runs": b}, tmp_path / "b")
    rc = main([str(SUITE), str(side), "--out", str(tmp_path / "out"), "--fail-on-regression"])
    return rc, capsys.readouterr().out.splitlines()


def test_compare_fails_the_gate_for_a_model_that_stopped_running_or_regressed(tmp_path, capsys):
    b = raw()
    b = b[b["variant"] != "vit"].copy()
    gpt = (
        (b["variant"] == "gpt2") & (b["regime"] == "latency") & (b["compile"] == "reduce-overhead")
    )
    b.loc[gpt & (b["compile_stance"] == "default"), ["status", "speedup_paired"]] = ["error", None]
    bert = (b["variant"] == "bert") & (b["regime"] == "throughput") & (b["compile"] == "default")
    b.loc[bert, ["speedup_paired", "speedup_ci_low", "speedup_ci_high"]] = [1.8, 1.78, 1.82]
    rc, out = _gate(tmp_path, b, capsys)
    said = [x.strip() for x in out if x.strip().startswith("suite: ")]
    assert rc == 1 and said == [
        "suite: gpt2 (latency fwd) stopped running: ran in A, not in B: reduce-overhead",
        "suite: vit (latency fwd) stopped running: missing in B",
        "suite: bert (throughput fwd) regressed: default (speedup: 2.51x → 1.80x)",
        "suite: vit (throughput fwd) stopped running: missing in B",
    ]
    md = (tmp_path / "out" / "compare.md").read_text()
    assert "| throughput | fwd | default | 3 |" in md  # vit, in A only, is not averaged in


def test_compare_of_a_suite_with_itself_passes_and_a_new_model_is_named_not_failed(
    tmp_path, capsys
):
    from analysis.compare_suite import geomeans

    a = raw()
    rc, out = _gate(tmp_path, a, capsys)
    assert rc == 0 and not [x for x in out if x.strip().startswith("suite: ")]
    new = a[a["variant"] == "vit"].assign(variant="deit", model_library="timm")
    b = pd.concat([a, new], ignore_index=True)
    rc, _ = _gate(tmp_path / "2", b, capsys)
    g = geomeans(a, b)
    d = _line(g, regime="throughput", mode="default")
    assert rc == 0 and d["ran in B only"] == "deit" and d["models both ran"] == 4
    assert d["geomean A"] == d["geomean B"]  # deit, in B only, moves nothing


def test_a_kind_whose_best_mode_is_no_measurable_difference_says_stay_eager():
    r = raw()
    vit = (r["variant"] == "vit") & (r["regime"] == "throughput") & (r["compile"] != "off")
    r.loc[vit, ["speedup_paired", "speedup_ci_low", "speedup_ci_high"]] = [1.01, 0.98, 1.04]
    t = suite_stats.kind_table(r)
    said = _line(t, kind="vision-transformer", regime="throughput")["mode"]
    assert said.endswith("(no mode clearly faster: eager)")
    assert "clearly" not in _line(t, kind="decoder", regime="throughput")["mode"]
