"""Paired speedups with intervals, and a steady state that never recompiles."""

import pytest

from study.observe import stats


def test_ratio_of_medians_and_its_interval():
    eager = [10.0, 10.2, 9.9, 10.1, 10.0, 10.3, 9.8, 10.0, 10.1, 9.9] * 3
    compiled = [5.0, 5.1, 4.9, 5.0, 5.2, 5.0, 4.9, 5.1, 5.0, 5.0] * 3
    r, lo, hi = stats.ratio_of_medians(eager, compiled)
    assert r == pytest.approx(2.0, rel=0.02) and lo <= r <= hi
    assert 1.9 < lo and hi < 2.1
    assert stats.ratio_of_medians(eager, compiled) == (r, lo, hi)  # seeded: reproducible
    assert stats.verdict(r, lo, hi) == "faster"
    assert stats.verdict(1.01, 0.97, 1.05) == "no measurable difference"
    assert stats.verdict(0.5, 0.45, 0.55) == "slower"
    with pytest.raises(ValueError):
        stats.ratio_of_medians([1.0], [1.0, 2.0])


def test_noise_widens_the_interval_until_it_holds_one():
    import random

    rng = random.Random(0)
    a = [100 + rng.gauss(0, 30) for _ in range(30)]
    b = [100 + rng.gauss(0, 30) for _ in range(30)]
    r, lo, hi = stats.ratio_of_medians(a, b)
    assert lo < 1.0 < hi and stats.verdict(r, lo, hi) == "no measurable difference"


def test_a_block_times_its_calls_after_the_lead_in(monkeypatch):
    """A block's first call pays a start-up (from an idle device: its launch; here a fake clock
    advanced by the step). The lead-in takes that call out of the timed ones."""
    from study.measure import host_gauge, timing

    clock = {"ns": 0, "calls": 0}

    def step():
        clock["calls"] += 1
        clock["ns"] += 1_000_000 if clock["calls"] == 1 else 1_000  # 1 ms start-up, then 1 us

    monkeypatch.setattr(timing.time, "perf_counter_ns", lambda: clock["ns"])
    assert timing.block(step, "cpu", calls=4) == pytest.approx((1_000 + 3) / 4)
    clock.update(ns=0, calls=0)
    assert timing.block(step, "cpu", calls=4, lead_in=1) == pytest.approx(1.0)
    assert clock["calls"] == 5  # the lead-in is a real call, untimed
    clock.update(ns=0, calls=0)
    ph = host_gauge.Phases(host_level=10.0)
    ph.gauge = lambda: 10.0  # always fast: exactly the rounds the latency asks for
    r = timing.rounds(step, "cpu", ph, repeat=10, max_s=60, lead_in=1, eager=step, pairs=2, calls=4)
    assert len(r.gauges) == 10 and r.eager == [1.0] * 10 and r.compiled == [1.0] * 10
    assert r.chunks == [[1.0]] * 10  # the chunk's first call queues behind its own lead-in
    assert clock["calls"] == 10 * (2 * (1 + 4) + (1 + 1))


@pytest.mark.slow
def test_a_compiled_cell_times_eager_beside_itself(run_inline):
    row, _, _ = run_inline("variant=naive", "compile=default", "timing.pairs=12", name="paired")
    assert row["status"] == "ok", row["reason"]
    assert row["pair_calls"] >= 3 and row["pair_lead_in"] == 1  # a block is a steady state
    from study.measure import host_gauge, timing

    # the cell's own rule (study.measure.timing_figures.settle): enough fast rounds for the latency's samples
    enough = min(host_gauge.MIN_FAST_PAIRS, timing.latency_rounds(5))  # +experiment=tiny: repeat=5
    if row["pairs_fast"] >= enough:  # the fast rounds: timing.pairs of them unless max_s came first
        assert row["pairs"] == row["pairs_fast"]
        assert row["pairs"] >= 12 or "pairs ran in the host's fast phase" in row["notes"]
    else:  # too few fast rounds before the cap: every round counts, and the row says so
        assert row["pairs"] == row["pairs_fast"] + row["pairs_slow"] >= 10
        assert row["timing_phase"] in ("mixed", "slow", "contended"), row["timing_phase"]
    assert row["speedup_ci_low"] <= row["speedup_paired"] <= row["speedup_ci_high"]
    assert row["eager_latency_paired_us"] > 0
    assert row["cpu_threads"] >= 1 and row["cpu_cores"] and row["load_avg_1m"] is not None
    # a CPU cell keeps all its cores (torch's threads use them): no timing core
    assert row["timing_core"] in (None, "")
    assert row["host_probe_us"] > 0  # the host's own speed beside the cell's
    eager, _, _ = run_inline("variant=naive", name="eager")
    assert eager.get("speedup_paired") is None and eager.get("pairs") is None


@pytest.mark.slow
def test_a_recompile_while_timing_makes_the_row_invalid(run_inline, monkeypatch):
    import torch

    from study.measure import timing

    real = timing.per_call

    def reset_first(step, *a, **kw):  # Dynamo forgets its graph: the next call compiles again
        torch._dynamo.reset()
        return real(step, *a, **kw)

    monkeypatch.setattr(timing, "per_call", reset_first)
    row, _, _ = run_inline("variant=naive", "compile=default", name="recompile")
    assert row["status"] == "invalid" and "recompiled while timing" in row["reason"]


@pytest.mark.slow
def test_an_eager_baseline_that_fails_costs_the_paired_columns_not_the_row(run_inline, monkeypatch):
    """flex's unfused eager fallback runs out of memory where its compiled kernel does not
    (seen on the H200 at seq_len 16384): the compiled cell stays ok, and says why it has no
    paired speedup."""
    from study.cell import passes

    real = passes.make_step

    def eager_oom(kind, fn, *a, **kw):
        step = real(kind, fn, *a, **kw)
        if a and kw.get("backward_in") is None and not hasattr(fn, "_torchdynamo_orig_callable"):

            def boom():
                raise RuntimeError("CUDA out of memory. Tried to allocate 128.00 GiB")

            return boom
        return step

    monkeypatch.setattr(passes, "make_step", eager_oom)
    row, _, _ = run_inline("variant=naive", "compile=default", name="eager_oom")
    assert row["status"] == "ok", row["reason"]
    assert row.get("speedup_paired") is None and row["latency_median_us"] > 0
    assert "no eager baseline in this process (eager: oom" in row["notes"]


def _failing_after(monkeypatch, which: str, calls: int):
    """make_step whose eager (or compiled) step raises a CUDA OOM after ``calls`` calls."""
    from study.cell import passes

    real = passes.make_step

    def make(kind, fn, *a, **kw):
        step = real(kind, fn, *a, **kw)
        compiled = hasattr(fn, "_torchdynamo_orig_callable")
        if not a or kw.get("backward_in") is not None or compiled != (which == "compiled"):
            return step
        n = [0]

        def flaky():
            n[0] += 1
            if n[0] > calls:
                raise RuntimeError("CUDA out of memory. Tried to allocate 128.00 GiB")
            return step()

        return flaky

    monkeypatch.setattr(passes, "make_step", make)


@pytest.mark.slow
def test_eager_failing_inside_the_rounds_costs_the_paired_columns_only(run_inline, monkeypatch):
    _failing_after(monkeypatch, "eager", 12)  # past its warm-up, inside the timed rounds
    row, _, _ = run_inline("variant=naive", "compile=default", name="eager_late_oom")
    assert row["status"] == "ok", row["reason"]
    assert row.get("speedup_paired") is None and row["latency_median_us"] > 0
    assert "no eager baseline in this process (eager: oom" in row["notes"]
    assert row["timing_phase"] in ("fast", "mixed", "slow", "contended")


@pytest.mark.slow
def test_the_compiled_step_failing_inside_the_rounds_is_the_cells_failure(run_inline, monkeypatch):
    """Not blamed on eager: before, any failure in the paired rounds read 'no eager baseline'
    and the cell was timed again without pairs, an ok row."""
    _failing_after(monkeypatch, "compiled", 30)
    row, _, _ = run_inline("variant=naive", "compile=default", name="compiled_late_oom")
    assert row["status"] == "oom", (row["status"], row["reason"], row["notes"])
    assert "no eager baseline" not in (row.get("notes") or "")
