"""Speedup against host speed (analysis.tables.host_model, analysis.figures.host_speed) on made-up rows
whose host time follows a known law: the model must give back what was put in. No torch."""

import numpy as np
import pandas as pd
import pytest

from analysis.figures.host_speed import host_speed
from analysis.style import Skip
from analysis.tables import host_model


def rows(alpha=1.0, speeds=(13.0, 16.0, 26.0), cell=("cudnn", 58.0, 1.4, 58.0, 4.2)):
    """Three machines: a cuDNN-like cell (eager GPU-bound at 58 us, 1.4 units of host; compiled
    58 us of device, 4.2 units) and a Linear-like one (host-bound on both sides). Host us at G
    are units x 13 x (G / 13) ** alpha; the measured speedup follows max(device, host)."""
    out = []
    for m, g in zip(("m1", "m2", "m3"), speeds, strict=True):
        for v, dev_e, u_e, dev_c, u_c in (cell, ("linear", 3.0, 1.3, 3.0, 4.1)):
            host = lambda u, g=g: u * 13.0 * (g / 13.0) ** alpha  # noqa: E731
            sp = max(dev_e, host(u_e)) / max(dev_c, host(u_c))
            base = {"machine": m, "variant": v, "pass": "fwd", "dtype": "bf16", "status": "ok",
                    "device": "cuda", "boot_id": m, "family": v}  # fmt: skip
            out.append({**base, "compile": "off", "device_time_us": dev_e,
                        "host_us": host(u_e), "host_units": host(u_e) / g, "host_gauge_us": g})  # fmt: skip
            out.append({**base, "compile": "default", "device_time_us": dev_c,
                        "host_us": host(u_c), "host_units": host(u_c) / g, "host_gauge_us": g,
                        "eager_host_us": host(u_e), "eager_host_units": host(u_e) / g,
                        "speedup_paired": sp, "speedup_ci_low": sp * 0.99,
                        "speedup_ci_high": sp * 1.01, "timing_phase": "fast"})  # fmt: skip
    return pd.DataFrame(out)


def test_the_prediction_is_the_larger_of_device_and_host_time_on_each_side():
    assert host_model.predict(58.0, 1.4, 58.0, 4.2, 10.0) == pytest.approx(58.0 / 58.0)
    assert host_model.predict(58.0, 1.4, 58.0, 4.2, 20.0) == pytest.approx(58.0 / 84.0)
    assert host_model.crossover(58.0, 1.4, 58.0, 4.2) == pytest.approx(58.0 / 4.2, abs=0.11)
    assert host_model.crossover(3.0, 1.3, 3.0, 4.1) is None  # host-bound: below 1 throughout


@pytest.mark.parametrize("alpha", [1.0, 0.7])
def test_leaving_one_machine_out_gives_back_the_speedups_and_the_exponent(alpha):
    c = host_model.cells(rows(alpha))
    assert host_model.fit_alpha(c) == pytest.approx(alpha, abs=1e-6)
    lo = host_model.leave_one_out(c)
    assert len(lo) == 6 and lo["err"].abs().max() < 1e-6
    plain = host_model.leave_one_out(c, alpha=1.0)  # units x G where the law is not linear
    assert (plain["err"].abs().max() > 0.05) == (alpha != 1.0)


def test_host_units_carry_across_machines_where_host_us_do_not():
    r = rows().assign(host_blocks_fast=20)
    units = host_model.units_spread(r, "host_units")
    us = host_model.units_spread(r, "host_us")
    assert units["spread"].max() < 1e-9 and us["spread"].min() == pytest.approx(1.0)


def test_the_figure_draws_the_cells_whose_speedup_moves_with_the_host():
    # cuDNN-like: 1.0x where both sides are GPU-bound, below 1 on slower hosts: no gain on
    # either side of the crossing, so it is noise and not drawn (second outside read, MED 3)
    fig, s = host_speed({"runs": rows(0.7).drop(columns=["machine"])})
    assert "1 compiled cell(s)" in s and "falls below 1x above" not in s
    assert "1 crossing(s) not drawn: inside the speedup's noise" in s
    # a compiled cell that gains on fast hosts and loses on slow ones, measured on the gaining
    # side within reach: its crossover (5 units x G = 80 µs at G 16) is drawn
    fig, s = host_speed({"runs": rows(1.0, (13.0, 14.0, 15.0), ("mlp", 80.0, 1.4, 40.0, 5.0))})
    assert "mlp · default falls below 1x above 16.0 µs" in s and "dotted beyond" in s
    assert "linear" in s and "host-bound at every host speed" in s.lower()
    with pytest.raises(Skip, match="no row has host_units"):
        host_speed({"runs": rows().drop(columns=["host_units"])})
    assert np.isfinite(fig.get_figwidth())
    with pytest.raises(Skip, match="a question for CUDA cells") as cpu:  # no host units talk
        host_speed({"runs": rows().assign(device="cpu")})
    assert "host_units" not in str(cpu.value)


def test_host_units_per_layer_subtract_the_targets_that_add_one_layer_each():
    base = {"status": "ok", "device": "cuda", "variant": "linear", "pass": "fwd",
            "dtype": "bf16", "host_gauge_us": 10.0}  # fmt: skip
    r = pd.DataFrame([
        {**base, "compile": "dynamo_eager", "host_units": 3.0, "eager_host_units": 1.5},
        {**base, "compile": "aot_eager", "host_units": 7.0, "eager_host_units": 1.4},
        {**base, "compile": "default", "host_units": 5.0, "eager_host_units": 1.6},
    ])  # fmt: skip
    lay = host_model.layers(r).set_index("layer")
    assert lay.loc["Dynamo", "host_units"] == pytest.approx(1.5)
    assert lay.loc["AOTAutograd", "host_units"] == pytest.approx(4.0)
    assert lay.loc["Inductor's wrapper", "host_units"] == pytest.approx(-2.0)
    assert lay.loc["Dynamo", "host_us_at_g"] == pytest.approx(15.0)


def test_guards_are_a_layer_where_a_target_also_ran_with_guards_skipped():
    """compile.stance=skip_guard_eval_unsafe: the target's units less the same target's with
    guards skipped is what its guards cost; the stance's rows are not the target's own."""
    base = {"status": "ok", "device": "cuda", "variant": "linear", "pass": "fwd",
            "dtype": "bf16", "host_gauge_us": 10.0, "eager_host_units": 1.5}  # fmt: skip
    r = pd.DataFrame([
        {**base, "compile": "dynamo_eager", "host_units": 3.0, "compile_stance": "default"},
        {**base, "compile": "dynamo_eager", "host_units": 2.2,
         "compile_stance": "skip_guard_eval_unsafe"},
    ])  # fmt: skip
    lay = host_model.layers(r).set_index("layer")
    assert lay.loc["guards (dynamo_eager)", "host_units"] == pytest.approx(0.8)
    assert lay.loc["Dynamo", "host_units"] == pytest.approx(1.5)  # 3.0 - 1.5, not the median


def test_the_entry_refuses_a_dir_without_runs_csv_in_one_line(tmp_path, capsys):
    with pytest.raises(SystemExit) as e:
        host_model.main([str(tmp_path)])
    assert e.value.code == 2 and "no runs.csv in" in capsys.readouterr().err


def test_the_analysis_uses_the_measured_host_time_where_a_row_has_it():
    """host_bound_of applied the latency rule wherever latency and busy time were known,
    overwriting the runtime's measured verdict: m3's block under default (host 285 us, device
    568 us) read host-bound from latency 1.1x over the profiler's busy time."""
    from analysis.measures import host_bound_of

    r = pd.DataFrame([
        {"host_us": 285.1, "device_time_us": 568.5, "latency_median_us": 567.6,
         "gpu_us_per_step": 500.0, "host_bound": False},  # measured: GPU-bound
        {"host_us": None, "device_time_us": 58.0, "latency_median_us": 90.0,
         "gpu_us_per_step": 58.0, "host_bound": None},  # no host_us: inferred from latency
        {"host_us": 95.8, "device_time_us": 2.9, "latency_median_us": 55.4,
         "gpu_us_per_step": 2.9, "host_bound": True},  # host blocks in a slower phase: none
    ])  # fmt: skip
    assert host_bound_of(r).tolist() == [False, True, pd.NA]


def test_two_compile_modes_of_a_cell_are_two_cells_and_repeats_are_one():
    """The cell key left out the mode: a reduce-overhead copy of the rows (a quarter of the
    host time, on a 1.3x slower host) made fit_alpha -2.64. And a repeated eager cell (two
    rows) gave a Series where one device time was wanted."""
    r = rows(0.7)
    ro = r[r["compile"] == "default"].assign(compile="reduce-overhead")
    ro = ro.assign(host_us=ro["host_us"] / 4, host_gauge_us=ro["host_gauge_us"] * 1.3)
    again = r[r["compile"] == "off"]
    c = host_model.cells(pd.concat([r, ro, again], ignore_index=True))
    assert host_model.fit_alpha(c[c["compile"] == "default"]) == pytest.approx(0.7, abs=1e-6)
    assert c["dev_e"].map(lambda v: isinstance(v, float)).all()
    assert c["cell"].str.endswith(("|default", "|reduce-overhead")).all()


def test_a_do_bench_device_time_is_not_read_as_host_free():
    """do_bench times a CUDA-graph mode's call as issued, so a host-bound call reads its host
    time there: Linear under reduce-overhead on an H200 read 95.9 us of "device" time for 7.0 us
    of kernels and 92.5 us of host a call, and the verdict said GPU-bound. Graph replay's device
    time stays the figure where the row has it."""
    from analysis.measures import host_bound_of
    from study.rows.metrics import bound_verdict, device_us

    ro = {"host_us": 92.5, "device_time_us": 95.9, "device_time_method": "do_bench_l2_flush",
          "latency_median_us": 87.9, "gpu_us_per_step": 7.0}  # fmt: skip
    replay = {**ro, "device_time_us": 2.9, "device_time_method": "cuda_graph_replay_x20"}
    assert device_us(ro) == 7.0 and device_us(replay) == 2.9
    assert bound_verdict(ro) == (True, None)
    assert device_us({"device_time_us": 58.0, "device_time_method": float("nan")}) == 58.0
    assert host_bound_of(pd.DataFrame([ro, replay])).tolist() == [True, True]
    r = rows()
    r.loc[r["compile"] == "default", "device_time_method"] = "do_bench_l2_flush"
    r["gpu_us_per_step"] = r["device_time_us"]
    r.loc[r["compile"] == "default", "device_time_us"] = 95.9  # host time, not device
    c = host_model.cells(r)
    assert c["dev_c"].tolist() == pytest.approx([58.0, 3.0] * 3)


def test_a_speedup_is_predicted_at_the_host_speed_of_its_paired_rounds():
    """On a mostly slow host the host-cost blocks can run slow (gauge 26 µs around them) while
    the paired rounds ran fast (the cell's gauge held 13 µs): the speedup belongs to the rounds,
    so it is predicted at 13, not at the blocks' 26 (m3's cuDNN: 1.0x, not 0.53x)."""
    r = rows(speeds=(13.0, 16.0, 26.0))
    timed = r["machine"].map({"m1": 13.0, "m2": 16.0, "m3": 13.0})
    sp = [max(58.0, 1.4 * g) / max(58.0, 4.2 * g) if v == "cudnn" else max(3.0, 1.3 * g)
          / max(3.0, 4.1 * g) for v, g in zip(r["variant"], timed, strict=True)]  # fmt: skip
    r = r.assign(gauge_own_us=timed, speedup_paired=r["speedup_paired"].where(
        r["compile"] == "off", pd.Series(sp, r.index)))  # fmt: skip
    lo = host_model.leave_one_out(host_model.cells(r), alpha=1.0).set_index(["machine", "variant"])
    assert lo.loc[("m3", "cudnn"), "g"] == 13.0
    assert abs(lo.loc[("m3", "cudnn"), "err"]) < 1e-6
