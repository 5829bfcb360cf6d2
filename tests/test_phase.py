"""The host's phase: a gauge around every timed round, a fast level, and only fast rounds
counted (study.measure.host_gauge, study.measure.timing.rounds). Fake gauges and steps: no compile, no subprocess."""

import itertools
from pathlib import Path

import pytest

from study.measure import host_gauge, timing


def fake(readings, ratio=1.3, host_level=None, host_dip=None):
    ph = host_gauge.Phases(ratio, host_level, host_dip=host_dip)
    ph.readings = list(readings)
    return ph


def test_the_fast_level_is_the_level_the_cells_gauge_held_and_slow_blocks_fall_out():
    ph = fake([10.0] * 6 + [17.0] * 4)  # the H200's two levels (x1.7)
    assert ph.level() == 10.0
    assert ph.fast_mask() == [True] * 6 + [False] * 4
    assert ph.slow_level() == 17.0
    fast, slow = host_gauge.split(list(range(10)), ph)
    assert fast == list(range(6)) and slow == list(range(6, 10))


def test_one_unusually_fast_reading_does_not_make_every_block_slow():
    """The minimum as the level classed 99% of one run's blocks slow (seen on the H200)."""
    ph = fake([5.0] + [10.0] * 30 + [17.0] * 9)
    assert ph.level() == 10.0 and sum(ph.fast_mask()) == 31


def test_a_cell_that_only_saw_the_slow_phase_knows_it_from_the_hosts_level():
    ph = fake([17.0] * 10, host_level=10.0)
    assert ph.level() == 10.0 and not any(ph.fast_mask())
    alone = fake([17.0] * 10)  # without the host's, its own level is the slow one
    assert all(alone.fast_mask())


def test_the_host_level_is_the_lowest_recent_whole_line_of_this_host(tmp_path):
    path = tmp_path / host_gauge.HOST_LEVEL_FILE
    assert host_gauge.read_host_level(path) is None
    host_gauge.record_host_level(path, 10.5, key="h|py3|t2")
    host_gauge.record_host_level(path, 9.8, key="h|py3|t2")
    host_gauge.record_host_level(path, 4.0, key="other|py3|t2")  # another machine, same home
    with open(path, "a") as f:
        f.write("1.0\th|py3|t2\t3.0\n")  # a day and more ago
        f.write("17")  # a line cut by a killed cell
    assert host_gauge.read_host_level(path, key="h|py3|t2") == 9.8
    host_gauge.record_host_level(path, 12.0)  # this host's own key
    assert host_gauge.read_host_level(path) == 12.0


class Gauges:
    """A gauge that reads the given levels in turn (two readings per round)."""

    def __init__(self, levels):
        self.it = itertools.cycle(levels)

    def __call__(self):
        return next(self.it)


def test_rounds_go_on_until_enough_fast_rounds_and_keep_pairs_and_chunks_together():
    ph = host_gauge.Phases(1.3, host_level=10.0)
    ph.gauge = Gauges([10.0] * 6 + [17.0] * 2)  # rounds read 10, 10, 10, 17, 10, 10, 10, 17, ...
    calls = {"e": 0, "c": 0}

    def eager():
        calls["e"] += 1

    def compiled():
        calls["c"] += 1

    r = timing.rounds(compiled, "cpu", ph, repeat=20, max_s=60, eager=eager, pairs=10, calls=2)
    fast, slow = host_gauge.split(r.gauges, ph)
    assert len(fast) == 10 and len(slow) == 8  # stopped at the 10th fast round
    # a fast reading right after a slow round is a dip inside a slow phase: not counted
    assert {4, 8, 12, 16} <= set(slow) and ph.readings[4] == 10.0
    assert len(r.chunks) == len(r.eager) == len(r.compiled) == len(r.gauges) == 18
    assert all(len(c) == 2 for c in r.chunks)  # repeat / CHUNKS calls timed one by one
    assert calls["e"] == 18 * 2 and calls["c"] == 18 * (2 + 2)


def test_rounds_stop_at_max_s_but_never_below_the_minimum():
    ph = host_gauge.Phases(1.3, host_level=10.0)
    ph.gauge = Gauges([30.0])  # never fast
    r = timing.rounds(lambda: None, "cpu", ph, repeat=30, max_s=1e-9)
    assert not any(ph.fast(i) for i in r.gauges)
    assert len(r.gauges) == 10 and sum(map(len, r.chunks)) == 30  # repeat samples in all
    r = timing.rounds(lambda: None, "cpu", ph, 30, 1e-9, eager=lambda: None, pairs=10**6)
    assert len(r.gauges) == timing.MIN_ROUNDS  # a pairs max_s cannot hold ends, never hangs


def test_block_calls_time_a_steady_state_even_for_slow_steps():
    assert timing.block_calls(10_000.0, block_ms=2.0) == 3  # a 10 ms training step: 3 calls
    assert timing.block_calls(100.0, block_ms=2.0) == 20
    assert timing.block_calls(None, block_ms=2.0) == 3


def test_a_cuda_pair_block_is_as_long_as_a_per_call_chunk():
    """A 450 µs training step at block_ms=2 would be timed in 4-call pair blocks against
    10-call per-call chunks; on CUDA the pair block gets the chunk's 10 calls."""
    assert timing.pair_calls(450.0, 2.0, calls=100, device="cuda") == 10
    assert timing.pair_calls(450.0, 2.0, calls=100, device="cpu") == 4
    assert timing.pair_calls(20.0, 2.0, calls=100, device="cuda") == 100  # already longer
    assert timing.pair_calls(450.0, 2.0, calls=20, device="cuda") == 4  # chunks of 2: block_ms
    assert timing.pair_calls(50_000.0, 2.0, calls=100, device="cuda") == 3  # GPU-bound, long
    assert timing.pair_calls(2_000.0, 2.0, calls=100, device="cuda") == 5  # up to 10 ms a block
    assert timing.pair_calls(None, 2.0, calls=100, device="cuda") == 3


TIMING = {"pairs": 10, "max_s": 4.0, "lead_in": 1, "calls": 30}  # 10 rounds of 3 calls


def settled(readings, host=None, paired=True, loaded=False, monkeypatch=None):
    """A cell's figures (study.measure.timing_figures.settle) over fake rounds: compiled host-bound
    (100 us fast, 200 slow), eager barely moving (110, 120)."""
    from study.cell.phases import Cell
    from study.measure import timing_figures

    cell = Cell.__new__(Cell)
    cell.row, cell.notes, cell.pair_calls = {"host_loaded": loaded}, [], 4
    cell.cfg = type("C", (), {"timing": type("T", (), TIMING)})
    cell.levels, cell.device = None, "cpu"
    cell.phases = fake(readings, host_level=host)
    slow = [r > 13 for r in readings]
    cell.timed = timing.Rounds(
        "perf_counter_per_call",
        chunks=[[200.0 if s else 100.0] * 3 for s in slow],
        eager=[120.0 if s else 110.0 for s in slow] if paired else [],
        compiled=[200.0 if s else 100.0 for s in slow] if paired else [],
        gauges=list(range(len(readings))),
    )
    recorded = []
    monkeypatch.setattr(host_gauge, "record_host_level", lambda *a, **k: recorded.append(a))
    timing_figures.settle(cell)
    return cell, recorded


def test_an_unpaired_cell_needs_as_many_fast_rounds_as_its_latency_asks(monkeypatch):
    """An eager cell is the denominator of every cross-process speedup: one fast round of
    thirty is no fast-phase latency ."""
    cell, _ = settled([10.0] + [17.0] * 29, host=10.0, paired=False, monkeypatch=monkeypatch)
    assert cell.row["timing_phase"] == "mixed" and cell.row["latency_samples"] == 90
    assert "only 1 of 30 rounds ran in the host's fast phase" in " ".join(cell.notes)
    cell, _ = settled([10.0] * 10 + [17.0] * 20, host=10.0, paired=False, monkeypatch=monkeypatch)
    assert cell.row["timing_phase"] == "fast" and cell.row["latency_median_us"] == 100.0


def test_a_cell_records_its_level_for_the_host_only_from_enough_readings(monkeypatch):
    _, recorded = settled([10.0] * 12 + [17.0] * 8, monkeypatch=monkeypatch)
    assert recorded == []  # 20 readings: its 10th percentile is nearly its minimum
    _, recorded = settled([10.0] * 24 + [17.0] * 8, monkeypatch=monkeypatch)
    assert len(recorded) == 1 and recorded[0][1] == 10.0


@pytest.mark.parametrize(
    "readings, host, state",
    [
        ([10.0] * 12 + [17.0] * 8, None, "fast"),
        ([17.0] * 20, 10.0, "slow"),
        ([10.0] * 3 + [17.0] * 17, 10.0, "mixed"),
    ],
)
def test_a_row_tells_which_phase_its_figures_come_from(monkeypatch, readings, host, state):
    """Fast rows use fast rounds only; with fewer than 10 fast pairs, every round, and the
    row says so. Eager over compiled latency then agrees with the paired speedup: one story."""
    cell, _ = settled(readings, host=host, monkeypatch=monkeypatch)
    row, n = cell.row, len(readings)
    assert row["timing_phase"] == state
    per_call_ratio = row["eager_latency_paired_us"] / row["latency_median_us"]
    assert per_call_ratio == pytest.approx(row["speedup_paired"], rel=0.01)
    if state == "fast":
        assert row["speedup_paired"] == pytest.approx(1.1) and row["pairs"] == 12
        assert row["speedup_paired_slow"] == pytest.approx(0.6) and row["pairs_slow"] == 8
        assert row["gauge_fast_us"] == 10.0 and row["gauge_slow_us"] == 17.0
    else:
        assert row["pairs"] == n and "fast phase" in " ".join(cell.notes)
    assert row["phase_fast_share"] == pytest.approx(readings.count(10.0) / n)
    if state == "slow":  # the host's level judged it; its own says how fast it ran
        assert row["gauge_fast_us"] == 10.0 and row["gauge_own_us"] == 17.0


def test_a_contended_host_is_said_and_not_a_fast_phase_figure(monkeypatch):
    cell, recorded = settled([10.0] * 40, loaded=True, monkeypatch=monkeypatch)
    assert cell.row["timing_phase"] == "contended" and "contended" in cell.notes[-1]
    assert not recorded  # a contended cell's level is no reference for the next cells


def test_a_survey_records_the_hosts_fast_level_for_the_first_cells(monkeypatch, tmp_path, capsys):
    """On a new machine the first cells know no host level: one that times in a slow phase
    alone takes it for fast (seen on the H200: 21.6 us, where the rest read 12.9)."""
    levels = itertools.cycle([10.0] * 7 + [17.0] * 3)
    monkeypatch.setattr(host_gauge, "gauge_us", lambda: next(levels))
    monkeypatch.setattr(host_gauge.time, "sleep", lambda s: None)
    monkeypatch.setattr(host_gauge, "_key", lambda: "h|py|t")
    host_gauge.main(["0.05", f"calibration_file={tmp_path / 'ceilings.json'}"])
    out = capsys.readouterr().out
    # 7 fast readings of 10: the first after a slow stretch is no fast phase yet
    assert "fast level 10.0 us" in out and "60% of them within 1.3x" in out
    assert host_gauge.read_host_level(tmp_path / host_gauge.HOST_LEVEL_FILE) == 10.0
    with pytest.raises(SystemExit, match="usage"):
        host_gauge.main(["-3"])


def test_with_no_host_level_recorded_a_cuda_cell_surveys_the_host_first(tmp_path, monkeypatch):
    """Without a recorded level, a sweep's first cells on a fresh machine took a slow phase's
    readings for the fast level; the survey records one, and later cells read it instead."""
    path = tmp_path / host_gauge.HOST_LEVEL_FILE
    assert host_gauge.host_level(path, 0.0) == (None, None)  # the CPU's cells: no survey
    assert not path.exists()
    monkeypatch.setattr(host_gauge, "survey", lambda s: [10.0] * 5)  # too few readings for a level
    level, why = host_gauge.host_level(path, 1.0)
    assert level is None and "too few readings" in why and not path.exists()
    monkeypatch.setattr(host_gauge, "survey", lambda s: [30.0] * 50 + [10.0] * 50)
    level, why = host_gauge.host_level(path, 1.0)
    assert level == pytest.approx(10.0) and "surveyed the host" in why
    assert host_gauge.read_host_level(path) == pytest.approx(10.0)

    def no_survey(s):
        raise AssertionError("surveyed although a level was recorded")

    monkeypatch.setattr(host_gauge, "survey", no_survey)
    assert host_gauge.host_level(path, 1.0) == (pytest.approx(10.0), None)


@pytest.mark.skipif(not Path("/proc/sys/kernel/random/boot_id").exists(), reason="no boot id")
def test_a_host_level_belongs_to_one_boot_of_one_machine():
    """Every H200 machine is called "vm" and host_gauge.txt travels with the outputs: a level
    recorded on another machine must not be read as this one's."""
    boot = Path("/proc/sys/kernel/random/boot_id").read_text().strip()[:8]
    assert f"|boot{boot}|" in host_gauge._key()


# A host slow nearly all the time (2026-12-04, machine 1 of the host-cost issue): the survey
# read 22.7-24.0 us for 93% of its readings, a cell's own gauge read 16.6 us once, and the
# fast phase showed in 1-24% of phase_paired.py's pairs. Its 10th percentile was the slow
# level, and 49 of 50 rows said "fast".
MOSTLY_SLOW = [23.0, 22.7, 24.0, 23.4, 22.9, 23.8, 23.1, 22.8, 24.0, 23.5] * 9 + [
    16.6, 16.9, 23.2, 23.9, 14.2, 14.0, 14.4, 14.1, 14.3, 23.6,
]  # fmt: skip


def test_a_mostly_slow_hosts_slow_phase_is_never_its_fast_level():
    """The host-cost issue's case: the 10th percentile of a mostly slow survey is the slow
    level. A level the gauge held for 5 readings is the fast one: the slow rounds are slow."""
    survey = fake(MOSTLY_SLOW)
    assert host_gauge.quantile(MOSTLY_SLOW, 0.10) > 22.0  # the old rule's level: the slow one
    assert survey.level() == pytest.approx(14.4)  # the one stretch of 5 fast readings
    assert sum(survey.fast_mask()) < 10  # and most readings are not fast
    assert "A mostly slow host" in host_gauge.describe(survey, 10.0)
    cell = fake([23.0, 22.7, 24.0, 23.4, 22.9] * 6, host_level=survey.held())
    assert not any(cell.fast_mask())


def test_a_host_that_never_held_its_fast_phase_calls_no_slow_round_fast():
    """No stretch of 5 fast readings, only dips of 3: the held level is the slow one. The dip
    is judged by instead, and the survey and the row say the host never held its fast phase."""
    dips = [23.0, 22.7, 24.0, 23.4, 22.9, 23.8, 16.6, 16.2, 16.4, 22.8] * 5
    ph = fake(dips)
    assert ph.held() > 22.0 and ph.dip() == pytest.approx(16.6)
    assert not ph.level_held() and ph.level() == pytest.approx(16.6)
    assert sum(ph.fast_mask()) <= 10  # within the dips alone, never the slow readings
    assert "never held its fast phase" in host_gauge.describe(ph, 10.0)
    cell = fake([23.0, 22.7, 24.0, 23.4, 22.9] * 6, host_level=23.0, host_dip=16.6)
    assert not cell.level_held() and not any(cell.fast_mask())


def test_a_quiet_host_holds_its_level_and_every_round_is_fast():
    """Bare metal or a quiet workstation: no slow phase, nothing left out."""
    ph = fake([14.3, 14.6, 14.4, 15.0, 14.8] * 8)
    assert ph.level_held() and all(ph.fast_mask())
    assert "slow" not in host_gauge.describe(ph, 10.0)


def test_the_host_file_keeps_each_records_dip(tmp_path):
    path = tmp_path / host_gauge.HOST_LEVEL_FILE
    host_gauge.record_host_level(path, 23.0, key="h|b|t", dip=9.9)
    host_gauge.record_host_level(path, 22.0, key="h|b|t")  # a line without a dip (older cells)
    assert host_gauge.read_host_level(path, key="h|b|t") == 22.0
    assert host_gauge.read_host_dip(path, key="h|b|t") is None  # one cell's dip: a moment, no level
    host_gauge.record_host_level(path, 23.0, key="h|b|t", dip=16.6)
    host_gauge.record_host_level(path, 23.0, key="h|b|t", dip=16.8)
    assert host_gauge.read_host_dip(path, key="h|b|t") == 16.6  # a faster level seen twice


def test_a_brief_dip_of_two_readings_does_not_make_a_steady_host_slow():
    """Review: 200 steady readings at 13.0 us with two in a row at 9.9 made the level 9.9 and
    199 of 200 rounds slow. A dip takes 3 readings in a row."""
    ph = fake([13.0] * 100 + [9.9, 9.9] + [13.0] * 98)
    assert ph.level_held() and ph.level() == 13.0 and sum(ph.fast_mask()) >= 198


def test_the_timed_rounds_host_speed_is_their_gauge_readings(monkeypatch):
    """What host_us is checked at (study.cell.phases._host_check): the kept rounds' gauge
    readings in us, not their positions among the readings."""
    cell, _ = settled([10.0] * 12 + [17.0] * 8, monkeypatch=monkeypatch)
    assert cell.timing_gauge_us == 10.0
    assert cell.eager_p90_us == pytest.approx(110.0)
