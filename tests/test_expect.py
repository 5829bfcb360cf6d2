"""Predict, then look (study.rows.expect): predictions parsed at start, checked against every row,
broken ones first in the row, revealed.csv, the console summary and the report."""

import json

import pytest

from study.config.cell_config import COMPILE_MODES
from study.rows import expect, revealed
from tests.conftest import TINY, cli


def row(run_id="r", compile="off", **kw):
    return {"run_id": run_id, "variant": "naive", "family": "attention", "compile": compile,
            "pass": "fwd", "device": "cuda", "dtype": "bf16", "seq_len": "1024",
            "status": "ok", **kw}  # fmt: skip


def with_expect(block, **kw):
    return row(expect=json.dumps(block), **kw)


def test_every_form_of_a_prediction_parses():
    es = expect.parse(
        {"kernels_per_step": 6, "copies_per_step": ">=1", "latency_vs": {"naive": "3..4.5"},
         "dominant_kernel": "~flash_fwd", "host_bound": False, "backend_seen": "flash",
         "compiled": {"fwd": {"kernels_per_step": "<7"}}},
        COMPILE_MODES,
    )  # fmt: skip
    got = {(e.label(), e.op) for e in es}
    assert got == {
        ("kernels_per_step", "="), ("copies_per_step", ">="), ("latency_vs.naive", "range"),
        ("dominant_kernel", "regex"), ("host_bound", "="), ("backend_seen", "="),
        ("compiled.fwd.kernels_per_step", "<"),
    }  # fmt: skip


@pytest.mark.parametrize(
    "block, words",
    [
        ({"kernel_per_step": 1}, "nearest: kernels_per_step"),
        ({"kernels_per_step": "abc"}, "'abc' is not a number"),
        ({"kernels_per_step": "9..3"}, "low end is above its high"),
        ({"host_bound": "maybe"}, "host_bound is true or false"),
        ({"backend_seen": ">3"}, "backend_seen is a text column"),
        ({"dominant_kernel": "~(unclosed"}, "not a regular expression"),
        ({"turbo": {"kernels_per_step": 1}}, "'turbo' is no column and no scope"),
        # issue 68: a column given a mapping read "'kernels_per_step' is no column"
        (
            {"kernels_per_step": {"a": 1}},
            "expect.kernels_per_step={a:1}: kernels_per_step is a "
            "column, and takes a number (e.g. 1",
        ),
        ({"compiled": {"host_bound": {"a": 1}}}, "host_bound is a column, and takes true or false"),
    ],
)
def test_a_prediction_that_cannot_be_checked_is_refused_with_what_to_do(block, words):
    with pytest.raises(expect.ExpectError, match=words.replace("(", r"\(")):
        expect.parse(block, COMPILE_MODES)


def test_scopes_pick_the_rows_a_prediction_is_about():
    (e,) = expect.parse({"cuda": {"eager": {"fwd": {"kernels_per_step": 6}}}}, COMPILE_MODES)
    assert expect.applies(e, row())
    assert not expect.applies(e, row(compile="default"))
    assert not expect.applies(e, row(device="cpu"))
    assert not expect.applies(e, {**row(), "pass": "train_step"})
    (m,) = expect.parse({"max-autotune": {"kernels_per_step": 1}}, COMPILE_MODES)
    assert expect.applies(m, row(compile="max-autotune")) and not expect.applies(m, row())


def test_a_blank_value_is_not_checked_never_broken():
    rows = [with_expect({"dominant_occupancy_pct": "10..16", "kernels_per_step": 6},
                        kernels_per_step="7", dominant_occupancy_pct="")]  # fmt: skip
    kernels = {"r": [{"kernel_class": "gemm", "calls_per_step": "2"},
                     {"kernel_class": "memset", "calls_per_step": "1"},
                     {"kernel_class": "aten_elementwise", "calls_per_step": "4"}]}  # fmt: skip
    (r,) = expect.check(rows, kernels)
    assert r["expectations"] == 1 and r["surprises"] == 1
    # what differs, from the kernel rows: the classes behind the count
    assert r["surprise_detail"] == (
        "kernels_per_step: expected 6, measured 7 (aten_elementwise 4, gemm 2, memset 1)"
    )


def test_predictions_about_other_rows_compare_within_the_sweep():
    block = {"latency_vs": {"naive_inplace": "3.2..4.2"}, "latency_rank": 1}
    rows = [
        with_expect(block, run_id="m", latency_median_us="300"),
        row(run_id="i", variant="naive_inplace", latency_median_us="100"),
        row(run_id="f", variant="flash", latency_median_us="60"),
        row(run_id="x", variant="flash", compile="default", latency_median_us="10"),  # other mode
    ]
    (m,) = [r for r in expect.check(rows, {}) if r["run_id"] == "m"]
    assert m["expectations"] == 2 and m["surprises"] == 2
    assert "latency_vs.naive_inplace: expected 3.2..4.2, measured 3" in m["surprise_detail"]
    assert "latency_rank: expected 1, measured 3" in m["surprise_detail"]


def test_other_rows_are_those_of_the_same_sweep_and_repeat():
    """Three processes of flash at 50, 49 and 51 us, each the fastest of its own repeat, and a
    slower sweep beside them: rank 1 every time (not 2, 1 and 3)."""
    rows = []
    for rep, lat in enumerate((50, 49, 51)):
        rows.append(
            with_expect(
                {"latency_rank": 1},
                run_id=f"f{rep}",
                variant="flash",
                repeat=str(rep),
                source="a",
                latency_median_us=str(lat),
            )
        )
        rows.append(row(run_id=f"c{rep}", variant="cudnn", repeat=str(rep), source="a",
                        latency_median_us="60"))  # fmt: skip
    rows.append(row(run_id="other", variant="cudnn", repeat="0", source="b",
                    latency_median_us="10"))  # fmt: skip
    checked = [r for r in expect.check(rows, {}) if r.get("expectations")]
    assert [(r["expectations"], r["surprises"]) for r in checked] == [(1, 0)] * 3


def test_revealed_puts_broken_predictions_first():
    rows = expect.check(
        [with_expect({"kernels_per_step": 1}, run_id="a", kernels_per_step="1"),
         with_expect({"kernels_per_step": 1}, run_id="b", kernels_per_step="2")], {}
    )  # fmt: skip
    t = revealed.table(rows, {})
    assert [x["run_id"] for x in t] == ["b", "a"]
    assert t[0]["revealed"].startswith("surprise: kernels_per_step: expected 1, measured 2")


def test_the_report_and_findings_open_with_what_broke():
    import pandas as pd

    from analysis.report import surprises
    from reference.findings import predicted

    rows = pd.DataFrame(expect.check(
        [with_expect({"kernels_per_step": 1}, run_id="a", kernels_per_step="1", source="s"),
         with_expect({"kernels_per_step": 1}, run_id="b", kernels_per_step="2", source="s",
                     variant="cudnn")], {}
    ))  # fmt: skip
    said, broke = surprises(rows)
    assert said.startswith("2 predictions checked") and "1 broken in 1 rows" in said
    assert list(broke["variant"]) == ["cudnn"]
    text = "\n".join(predicted.section({"runs": rows}))
    assert text.index("cudnn") < text.index("| naive")  # broken first
    assert "| cudnn | off | fwd | `kernels_per_step 1` | 2 | **broke** |" in text
    # the same predictions in a second sweep: each row names its source, side by side
    twice = pd.concat([rows, rows.assign(source="targets")], ignore_index=True)
    text = "\n".join(predicted.section({"runs": twice}))
    assert "| cudnn | off | fwd | `s` | `kernels_per_step 1` | 2 | **broke** |\n" in text
    assert "| cudnn | off | fwd | `targets` | `kernels_per_step 1` | 2 | **broke** |\n" in text
    long = predicted._measured("void pytorch_flash::flash_fwd_kernel<" + "x" * 300)
    assert len(long) == predicted.MEASURED_CHARS and long.endswith("…")


def test_the_blog_predictions_ship_with_the_attention_variants():
    from omegaconf import OmegaConf

    from tests.conftest import compose

    want = {"naive": {"kernels_per_step": 6, "copies_per_step": 1},
            "naive_inplace": {"kernels_per_step": 5, "copies_per_step": 0},
            "efficient": {"kernels_per_step": 1, "dominant_kernel": "~fmha_cutlassF"},
            "cudnn": {"kernels_per_step": 1, "dominant_kernel": "~cudnn.*sdpa",
                      "cpu_us_per_step": "160..270",
                      "latency_vs": {"flash": ">=1", "efficient": "<=1"}}}  # fmt: skip
    for v, block in want.items():
        got = OmegaConf.to_container(compose(f"variant={v}").expect)
        assert got == {"cuda": {"eager": {"fwd": {"seq_len=1024": block}}}}, v
        es = expect.parse(got, COMPILE_MODES)  # the blog's shape only: other lengths differ
        assert all(expect.applies(e, row()) for e in es)
        assert not any(expect.applies(e, row(seq_len="4096")) for e in es)
    blog = ("cuda", "eager", "fwd", "seq_len=1024")
    flash = OmegaConf.to_container(compose("variant=flash").expect)
    for k in blog:
        flash = flash[k]
    assert flash["latency_rank"] == 1 and flash["dominant_occupancy_pct"] == "10..16"
    math = OmegaConf.to_container(compose("variant=math").expect)
    for k in blog:
        math = math[k]
    assert math["latency_vs"] == {"naive_inplace": "3.2..4.2"}
    assert math["fp32_gemms_per_step"] == ">=1"


def test_a_prediction_is_no_part_of_a_cells_identity():
    from study.config.identity import config_hash

    base = {"variant": {"name": "naive"}, "compile": {"mode": "off"}}
    assert config_hash(base) == config_hash({**base, "expect": {"kernels_per_step": 6}})


@pytest.mark.slow
def test_a_sweep_shows_the_broken_prediction_first_everywhere(tmp_path):
    r = cli("-m", "variant=naive", "compile=off", f"out_root={tmp_path}", *TINY,
            "+expect.status=ok", "+expect.kernels_per_step=999")  # fmt: skip
    assert r.returncode == 0, r.stderr[-2000:]
    from study.rows import io

    (sweep,) = (tmp_path / "sweeps").iterdir()
    assert [p.name for p in sweep.iterdir() if p.is_dir()] == ["compile=off,variant=naive"]
    (x,) = io.read_csv(sweep / "runs.csv")
    assert (x["expectations"], x["surprises"]) == ("2", "1")
    assert x["surprise_detail"].startswith(
        f"kernels_per_step: expected 999, measured {float(x['kernels_per_step']):g} ("
    )
    last = r.stdout.strip().splitlines()[-2:]
    assert last[0] == "[study] predictions: 2 checked, 1 surprise(s) in 1 cell(s):"
    assert "kernels_per_step: expected 999, measured" in last[1]
    (rv,) = io.read_csv(sweep / "revealed.csv")
    assert rv["revealed"].startswith("surprise: kernels_per_step: expected 999")
    rep = cli_report(sweep)
    assert rep.index("## Surprises") < rep.index("## Environment")
    assert "kernels_per_step: expected 999" in rep
    # predict, then look again without measuring again: a resume checks new predictions
    again = ("+expect.status=ok", "+expect.kernels_per_step=998", "+expect.copies_per_step=0")
    r = cli("-m", "variant=naive", "compile=off", f"out_root={tmp_path}", *TINY, "resume=true",
            *again)  # fmt: skip
    assert r.returncode == 0, r.stderr[-2000:]
    assert "ok already, skipped" in r.stdout
    (x,) = io.read_csv(sweep / "runs.csv")
    assert (x["expectations"], x["surprises"]) == ("3", "2") and "expected 998" in x[
        "surprise_detail"
    ]


def cli_report(sweep):
    import subprocess
    import sys

    from tests.conftest import ROOT, root_env

    subprocess.run([sys.executable, "-m", "analysis.report", str(sweep)], cwd=ROOT,
                   env=root_env(), check=True, capture_output=True)  # fmt: skip
    return (sweep / "report" / "report.md").read_text()


@pytest.mark.slow
def test_a_typo_in_a_predictions_column_stops_at_start_naming_the_nearest(tmp_path):
    r = cli("-m", "variant=naive", f"out_root={tmp_path}", *TINY, "+expect.kernel_per_step=1")
    assert r.returncode == 2 and "nearest: kernels_per_step" in r.stderr, r.stderr[-800:]
    assert "Traceback" not in r.stderr and not (tmp_path / "sweeps").exists()


def test_the_surprises_are_one_line_per_cell_and_prediction_with_the_runs_that_broke_it():
    """v3's part3: cuDNN's eager cell in 3 processes broke its kernel count in all 3 and its
    CPU time in 2: two lines, not 3 rows repeating themselves."""
    import pandas as pd

    from analysis.report import surprises

    k = "cuda.eager.fwd.seq_len=1024.kernels_per_step: expected 1, measured 2 (cudnn 1, memset 1)"
    cpu = "cuda.eager.fwd.seq_len=1024.cpu_us_per_step: expected 160..270, measured {}"
    rows = pd.DataFrame(
        [{"source": "part3", "variant": "cudnn", "compile": "off", "pass": "fwd", "repeat": i,
          "expectations": 6, "surprises": 1 + (cpu_ is not None),
          "surprise_detail": "; ".join([cpu.format(cpu_)] if cpu_ else []) + ("; " if cpu_ else "")
          + k}
         for i, cpu_ in enumerate((81.92, None, 115.3))]
        + [{"source": "part3", "variant": "flash", "compile": "off", "pass": "fwd", "repeat": 0,
            "expectations": 6, "surprises": 0, "surprise_detail": None}]
    )  # fmt: skip
    said, t = surprises(rows)
    assert "24 predictions checked" in said and "5 broken in 3 rows" in said
    assert t[["prediction", "measured", "runs"]].values.tolist() == [
        ["cuda.eager.fwd.seq_len=1024.kernels_per_step: 1", "2 (cudnn 1, memset 1)", "3 of 3"],
        ["cuda.eager.fwd.seq_len=1024.cpu_us_per_step: 160..270", "81.92; 115.3", "2 of 3"],
    ]
