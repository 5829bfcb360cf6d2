"""The regression gate: B must hold every cell of A, each ok, and be finished; a
crash matches its ok cell; contention excuses what it can cause, not 13x; a change of kernels
or device time is said whatever the host's phase; every matched cell is in one bucket."""

import fcntl
import zlib

import numpy as np
import pandas as pd
import pytest

from analysis.compare import build, main
from study.rows import io as study_io
from study.rows.schema import SHAPE_KEYS, columns
from study.sweep.sweepdir import LOCK
from tests import synth

LATENCY = ("latency_median_us", "latency_p10_us", "latency_p90_us")


def four() -> pd.DataFrame:
    """Four ok CPU cells (naive and linear, eager and default), calls spread ±2%."""
    r = synth.on_cpu("core", name="cpu")["runs"]
    r = r[r["variant"].isin(["naive", "linear"])].reset_index(drop=True)
    r["latency_p10_us"], r["latency_p90_us"] = (
        r["latency_median_us"] * 0.98,
        r["latency_median_us"] * 1.02,
    )
    r["timing_phase"] = "fast"
    return r


def gate(tmp_path, a: pd.DataFrame, b: pd.DataFrame, capsys) -> tuple[int, list[str]]:
    sides = [str(synth.write({"runs": x}, tmp_path / n)) for n, x in (("a", a), ("b", b))]
    rc = main([*sides, "--out", str(tmp_path / "out"), "--fail-on-regression"])
    return rc, capsys.readouterr().out.splitlines()


def test_b_holding_one_of_four_cells_fails_and_names_the_other_three(tmp_path, capsys):
    a = four()
    rc, out = gate(tmp_path, a, a.head(1), capsys)
    assert rc == 1
    missing = [x for x in out if x.startswith("  missing in B: ")]
    assert missing == [f"  missing in B: cpu: {v} · {c} (ok in A)"
                       for v, c in zip(a["variant"][1:], a["compile"][1:], strict=True)]  # fmt: skip


def test_a_renamed_variant_matches_nothing_and_fails(tmp_path, capsys):
    a = four()
    b = a.assign(variant=a["variant"].replace({"naive": "naive2"}))
    rc, out = gate(tmp_path, a, b, capsys)
    assert rc == 1 and out[0].startswith("2 cells matched (2 only in A, 2 only in B)")
    assert sum(x.startswith("  missing in B: cpu: naive · ") for x in out) == 2


def test_a_cell_failing_otherwise_in_b_fails_the_gate_the_same_failure_does_not(tmp_path, capsys):
    a = four()
    a.loc[0, ["status", "reason"]] = ["unsupported", "no backend"]
    b = a.copy()
    b.loc[0, ["status", "reason"]] = ["error", "RuntimeError: boom"]
    rc, out = gate(tmp_path, a, b, capsys)
    cell = f"cpu: {a['variant'][0]} · {a['compile'][0]}"
    assert rc == 1 and f"  not ok in B: {cell} (unsupported in A, error in B)" in out
    assert "1 still not ok, 3 unchanged." in out[0]
    rc, out = gate(tmp_path / "2", a, a, capsys)  # the same failure: the study did not change
    assert rc == 0 and "1 still not ok, 3 unchanged." in out[0]
    assert not [x for x in out if x.startswith("  not ok in B")]


def test_a_crash_sharing_an_ok_cells_configuration_fails_the_gate(tmp_path, capsys):
    """Issue 68: B holds a crash row of the same configuration as an ok row (two points no
    column tells apart: one config_hash, or a +variant.kwargs value no column records). The
    crash is never hidden behind the ok row: the gate fails on it."""
    a = four().assign(config_hash=lambda x: x["run_id"])
    crash = a.iloc[[0]].assign(
        run_id="other", status="crash", reason="killed", latency_median_us=None
    )
    for same_hash in (True, False):  # merged as repeats of one cell / two cells of one key
        b = pd.concat([a, crash.assign(config_hash=a["run_id"][0] if same_hash else "kw")])
        rc, out = gate(tmp_path / str(same_hash), a, b, capsys)
        cell = f"cpu: {a['variant'][0]} · {a['compile'][0]}"
        assert rc == 1, out
        said = [x for x in out if x.startswith(("  regressed: ", "  not ok in B: "))]
        assert len(said) == 1 and cell in said[0] and "crash" in said[0], out


@pytest.mark.parametrize(
    "crash_id, timing, said",
    [
        ("other", None, "config_hash, a setting no column records: this one other, the other {ok}"),
        ("{ok},#1a2b3c4d", None, "config_hash, a setting no column records: this one "
         "{ok},#1a2b3c4d, the other {ok}"),
        ("{ok_false}", None, "variant.kwargs.bias: this one false, the other true"),
        ("other", "block_ms=5", "timing_overrides: this one block_ms=5, the other blank"),
    ],
)  # fmt: skip
def test_the_gate_names_what_tells_apart_cells_it_takes_for_one(
    tmp_path, capsys, crash_id, timing, said
):
    """Issue 68: two cells of B differing only in a value no column records (their config_hash
    differs) gave a gate line that did not say so. It names the items of their run dir names
    that differ, or a column only B records, else their config_hash."""
    a = four()
    a.loc[0, "run_id"] += ",variant.kwargs.bias=true"
    a["config_hash"] = a["run_id"]
    ok = a["run_id"][0]
    crash_id = crash_id.format(ok=ok, ok_false=ok.replace("=true", "=false"))
    crash = a.iloc[[0]].assign(run_id=crash_id, config_hash=crash_id, status="crash")
    b = pd.concat([a, crash.assign(reason="killed")], ignore_index=True)
    if timing:
        b["timing_overrides"] = [""] * len(a) + [timing]
    rc, out = gate(tmp_path, a, b, capsys)
    line = "  regressed: cpu: linear · default (status ok → crash: killed); in B one of 2 cells "
    assert rc == 1 and f"{line}told apart only by {said.format(ok=ok)}" in out, out


def _sweep(d, rows: pd.DataFrame, total: int):
    """A sweep dir as the sweeper leaves it: a run dir per finished cell, sweep.yaml, lock."""
    rows = rows.copy()
    rows["config_hash"] = [f"{zlib.crc32(x.encode()):08x}" for x in rows["run_id"]]
    rows = rows[[c for c in rows.columns if c in set(columns("runs"))]]
    for rec in rows.astype(object).where(rows.notna(), None).to_dict("records"):
        study_io.write_csv(d / rec["run_id"] / "run.csv", [rec], "runs")
    study_io.aggregate(d)
    (d / "sweep.yaml").write_text(f"command: python -m study.run -m\ntotal: {total}\nt0: 0\n")
    (d / LOCK).write_text("pid 4242: python -m study.run -m variant=naive\n")
    return d


def test_an_unfinished_b_is_refused_running_or_not(tmp_path, capsys):
    r = synth.on_cpu("core", name="cpu")["runs"]
    a = _sweep(tmp_path / "a", r.head(8), 8)
    b = _sweep(tmp_path / "b", r.head(3), 8)
    with open(b / LOCK) as held:  # the running sweep's lock
        fcntl.flock(held, fcntl.LOCK_EX)
        rc = main([str(a), str(b), "--out", str(tmp_path / "o"), "--fail-on-regression"])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and err == [
        f"analysis.compare: B = {b} is still running (pid 4242: python -m study.run -m "
        "variant=naive; 3 of its 8 cells finished): compare it when the sweep has ended"
    ]
    rc = main([str(a), str(b), "--out", str(tmp_path / "o"), "--fail-on-regression"])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1
    assert err[0].startswith(f"analysis.compare: B = {b} is unfinished (3 of its 8 cells ")
    assert main([str(a), str(a), "--out", str(tmp_path / "o"), "--fail-on-regression"]) == 0


def test_a_crash_row_with_every_shape_key_matches_its_ok_cell(tmp_path, capsys):
    a = four()
    b = a.copy()
    b.loc[0, ["status", "reason"]] = ["crash", "Fatal Python error: Aborted"]
    b.loc[0, [*LATENCY, "kernels_per_step", "compile_s"]] = np.nan
    blank = [c for c in SHAPE_KEYS if pd.isna(b.loc[0, c])]
    assert blank  # the sweep writes every shape.* of the config, an ok row its variant's own
    b.loc[0, blank] = 7
    rc, out = gate(tmp_path, a, b, capsys)
    assert rc == 1 and out[0].startswith("4 cells matched (0 only in A, 0 only in B)")
    assert f"  regressed: cpu: {a['variant'][0]} · {a['compile'][0]} (status ok → crash: " \
        "Fatal Python error: Aborted)" in out  # fmt: skip


def test_contention_excuses_tens_of_percent_not_thirteen_times(tmp_path, capsys):
    a = four()
    a["timing_phase"] = "contended"
    eager = a["compile"] == "off"
    a.loc[eager, LATENCY] = [27.4, 27.0, 28.3]
    b = a.copy()
    b.loc[eager & (b["variant"] == "naive"), LATENCY] = [364.0, 350.0, 400.0]
    rc, out = gate(tmp_path, a, b, capsys)
    assert rc == 1 and "1 regression, 0 improved, 0 within noise, 3 unchanged." in out[0]
    assert "  regressed: cpu: naive · off (latency; latency +1,228%)" in out
    b = a.copy()
    b.loc[eager & (b["variant"] == "naive"), LATENCY] = [36.0, 35.0, 37.0]  # +31%: the host's
    rc, out = gate(tmp_path / "2", a, b, capsys)
    assert rc == 0 and "0 regressions, 0 improved, 1 within noise, 3 unchanged." in out[0]


@pytest.mark.parametrize(
    "col, by, said", [("kernels_per_step", 1, "kernels"), ("device_time_us", 1.5, "device time")]
)
def test_kernels_and_device_time_are_flagged_whatever_the_host_phase(tmp_path, col, by, said):
    a = four()
    a["timing_phase"], a["device_time_us"], a["gpu_us_per_step"] = "slow", 10.0, 9.0
    b = a.copy()
    if col == "device_time_us":  # the kernels' own time a step moved with it
        b.loc[0, ["device_time_us", "gpu_us_per_step"]] = [10.0 * by, 9.0 * by]
    else:
        b.loc[0, col] += by
    _, m = build(str(synth.write({"runs": a}, tmp_path / "a")),
                 str(synth.write({"runs": b}, tmp_path / "b")), None)  # fmt: skip
    assert list(m["regressed"][m["regressed"] != ""]) == [said]


def test_every_matched_cell_is_counted_in_one_bucket(tmp_path):
    a = four()
    b = a.copy()
    b.loc[0, LATENCY] = b.loc[0, list(LATENCY)] * 0.5  # improved
    b.loc[1, LATENCY] = b.loc[1, list(LATENCY)] * np.array([1.1, 0.9, 1.3])  # within noise
    b.loc[1, ["latency_p10_us"]] = a.loc[1, "latency_median_us"]
    _, m = build(str(synth.write({"runs": a}, tmp_path / "a")),
                 str(synth.write({"runs": b}, tmp_path / "b")), None)  # fmt: skip
    counts = m["verdict"].value_counts().to_dict()
    assert counts == {"improved": 1, "within noise": 1, "unchanged": 2}
    assert sum(counts.values()) == len(m) == 4


def test_a_source_that_is_not_there_exits_2_in_compare_and_in_tables(tmp_path, capsys):
    """Issue 68: a bad source name exited 1 in compare and was ignored by `tables --source`."""
    from analysis.tables import layers

    a = str(synth.write({"runs": four()}, tmp_path / "a"))
    for run in (lambda: main([a, f"{a}:nope", "--out", str(tmp_path / "o")]),
                lambda: layers.main([a, "--source", "nope"])):  # fmt: skip
        with pytest.raises(SystemExit) as e:
            run()
        assert e.value.code == 2
        err = capsys.readouterr().err
        assert "'nope'" in err and "cpu" in err and "Traceback" not in err


def test_two_identical_quickstarts_on_a_busy_host_call_no_compile_improved_nor_cpu_host_bound(
    tmp_path, capsys
):
    """Issue 68: the second of two identical CPU quickstarts on a busy host read '1 improved'
    (the first compile, 6.0 -> 4.2 s) and called a CPU cell host-bound."""
    a = four()
    a["timing_phase"], a["device"] = "contended", "cpu"
    a["gpu_us_per_step"] = a["latency_median_us"] / 2  # latency over busy time: no CPU verdict
    compiled = a["compile"] != "off"
    a.loc[compiled, "compile_s"] = 6.0
    b = a.copy()
    b.loc[compiled, "compile_s"] = 4.2
    rc, out = gate(tmp_path, a, b, capsys)
    assert rc == 0 and "0 improved" in out[0] and "host-bound" not in "\n".join(out)
    quiet = a.assign(timing_phase="fast")
    rc, out = gate(tmp_path / "2", quiet, b.assign(timing_phase="fast"), capsys)
    assert "compile time" in "\n".join(out)  # on a quiet host the same change counts
