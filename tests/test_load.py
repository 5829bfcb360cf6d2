"""Loading: one row per cell over repeats, with the spread and the raw rows kept; the newer
columns are optional (old results lack them)."""

import pandas as pd
import pytest

from analysis.load import cells, load
from analysis.measures import host_verdict, order, sig, speedup_words, speedups
from tests import synth


def test_repeats_collapse_to_one_row_per_cell_with_their_spread(tmp_path):
    d = load([synth.write(synth.with_new_columns(), tmp_path / "new")])
    raw, r = d["repeats"], d["runs"]
    assert len(raw) == 3 * len(r)  # three repeats per cell, kept as read
    assert r["n_repeats"].eq(3).all()
    row = r[(r["variant"] == "flash") & (r["compile"] == "default") & (r["pass"] == "fwd")].iloc[0]
    reps = raw[raw["config_hash"] == row["config_hash"]]["latency_median_us"]
    assert row["latency_median_us"] == pytest.approx(reps.median())
    assert row["latency_median_us_min"] == pytest.approx(reps.min())
    assert row["latency_median_us_spread_pct"] == pytest.approx(
        100 * (reps.max() - reps.min()) / reps.median()
    )
    # the fwd_bwd pass of naive is a cell of its own, and its kernels are not counted 3 times
    assert set(r[r["variant"] == "naive"]["pass"]) == {"fwd", "fwd_bwd"}
    k = d["kernels"]
    assert len(k) == len(k.drop_duplicates(["run_id", "kernel", "phase"]))


def test_old_results_load_unchanged():
    d = load([synth.H200])
    raw = pd.read_csv(synth.H200 / "runs.csv")
    assert len(d["runs"]) == len(d["repeats"]) == len(raw)
    assert d["runs"]["pass"].eq("fwd").all() and d["runs"]["n_repeats"].eq(1).all()


def test_a_cell_with_any_repeat_not_ok_is_not_ok():
    """A crashed repeat never disappears into the ok ones (issue 68): the cell reads crash and
    says which repeat; its ok repeats' numbers stay, counted apart."""
    raw = pd.DataFrame(
        {
            "source": "s",
            "run_id": "compile=off,variant=naive",
            "config_hash": "abc",
            "status": ["ok", "crash", "ok"],
            "reason": [None, "killed by signal 9", None],
            "latency_median_us": [10.0, None, 14.0],
            "repeat": [0, 1, 2],
        }
    )
    (row,) = cells(raw).to_dict("records")
    assert row["status"] == "crash" and row["reason"] == "repeat 1 of 3 crash: killed by signal 9"
    assert row["latency_median_us"] == 12.0
    assert row["n_repeats"] == 3 and row["n_repeats_ok"] == 2
    (row,) = cells(raw.assign(status="ok", reason=None)).to_dict("records")
    assert row["status"] == "ok" and row["reason"] is None


def test_two_points_of_one_configuration_one_crashed_make_one_crashed_cell():
    """The issue's repro: cpu_mem_limit_gb=4,0.001 gives two run dirs of one config_hash, one
    crashed: the cell is not ok, whichever row comes first."""
    raw = pd.DataFrame(
        {
            "source": "s",
            "run_id": ["cpu_mem_limit_gb=4", "cpu_mem_limit_gb=0.001"],
            "config_hash": "abc",
            "status": ["ok", "crash"],
            "latency_median_us": [10.0, None],
        }
    )
    for r in (raw, raw.iloc[::-1]):
        (row,) = cells(r).to_dict("records")
        assert row["status"] == "crash" and row["reason"].startswith("repeat ? of 2 crash")


def test_repeats_from_several_machines_are_said_not_mixed_silently(capsys):
    raw = pd.DataFrame(
        {
            "source": "s",
            "run_id": "compile=off,variant=linear",
            "config_hash": "abc",
            "status": "ok",
            "latency_median_us": [10.0, 11.0, 20.0],
            "repeat": [0, 1, 2],
            "boot_id": ["aaaa-1", "aaaa-1", "bbbb-2"],
        }
    )
    cells(raw)
    err = capsys.readouterr().err
    assert "1 cell(s) have repeats from several machines" in err
    assert "s: compile=off,variant=linear" in err
    cells(raw.assign(boot_id="aaaa-1"))  # one machine: nothing to say
    assert capsys.readouterr().err == ""


def test_paired_speedup_wins_and_an_interval_over_one_is_no_difference():
    r = pd.DataFrame(
        {
            "compile": ["default", "default", "default"],
            "speedup": [1.5, 0.5, 2.0],
            "speedup_paired": [1.02, 0.48, None],
            "speedup_ci_low": [0.97, 0.46, None],
            "speedup_ci_high": [1.06, 0.50, None],
            "latency_median_us": [100.0, 100.0, 100.0],
        }
    )
    s = speedups(r)
    assert list(s["sp_kind"]) == ["paired", "paired", "cross-process"]
    assert list(s["sp_same"]) == [True, False, False]
    words = [speedup_words(x) for x in s.to_dict("records")]
    assert words[0].startswith("no measurable difference (1.02x, 95% CI 0.970–1.06x")
    assert words[1].startswith("0.480x, slower") and words[2] == "2.00x faster"
    assert "faster" not in words[0] and "slower" not in words[0]


def test_a_paired_interval_inside_1pct_is_no_change_in_every_figure():
    """v3's naive under dynamo_eager, the same 7 kernels as eager: 1.002x [1.001-1.004]. The
    figures mark it ≈ and quote no payback; a cross-process range there is not the pairs'."""
    r = pd.DataFrame({"compile": ["dynamo_eager"] * 2, "speedup": [1.002, 1.002],
                      "speedup_paired": [1.002, None], "speedup_ci_low": [1.001, None],
                      "speedup_ci_high": [1.004, None], "n_repeats": [1, 3],
                      "speedup_min": [None, 1.001], "speedup_max": [None, 1.004],
                      "latency_median_us": [1071.0, 1071.0]})  # fmt: skip
    s = speedups(r)
    assert list(s["sp_kind"]) == ["paired", "cross-process"]
    assert list(s["sp_same"]) == [True, False]
    assert speedup_words(s.iloc[0].to_dict()).startswith("within ±1% (1.00x, 95% CI 1.00–1.00x")
    from analysis.pairs import verdict

    assert [verdict(x) for x in s.to_dict("records")] == ["within ±1%", "faster"]


def test_significant_digits_not_fixed_decimals():
    assert [sig(x) for x in (0.0334, 2.081, 96.84, 1062.0, 0.9996, 0.07)] == [
        "0.0334",
        "2.08",
        "96.8",
        "1,062",
        "1.00",
        "0.0700",
    ]


def test_shapes_sort_as_numbers():
    df = pd.DataFrame({"variant": "naive", "seq_len": [128, 32, 64], "compile": "off"})
    assert list(order(df)["seq_len"]) == [32, 64, 128]


def test_no_host_bound_verdict_on_cpu_rows():
    r = pd.DataFrame(
        {
            "device": ["cpu", "cuda", "cuda", "cuda"],
            "cpu_bound": [None, True, False, True],
            "host_bound": [True, None, None, False],
        }
    )
    assert list(host_verdict(r)) == [pd.NA, True, False, False]


def test_the_host_phase_columns_are_read_as_text_and_pick_a_cells_repeats(tmp_path):
    """timing_phase is text: read as a number it became NaN, and a cell's fast repeats were
    lost among the rest."""
    d = synth.with_new_columns()
    r = d["runs"]
    r["timing_phase"] = ["contended" if x == 0 else "fast" for x in r["repeat"]]
    r["gauge_level_source"] = "host"
    r.loc[r["repeat"] == 0, "latency_median_us"] *= 3  # the contended process read slow
    data = load([synth.write(d, tmp_path / "res")])
    raw = data["repeats"]
    assert set(raw["timing_phase"]) == {"fast", "contended"} and set(raw["gauge_level_source"]) == {
        "host"
    }
    c = data["runs"]
    assert (c["timing_phase"] == "fast").all() and (c["n_repeats_fast"] == 2).all()
    one = raw[raw["repeat"] != 0].groupby("config_hash")["latency_median_us"].median()
    got = c.set_index("config_hash")["latency_median_us"]
    assert (got.loc[one.index] == one).all()  # the contended repeat left out
