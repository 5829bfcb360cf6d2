"""Host time per call behind a GPU sleep (study.measure.host_cost), with a fake CUDA: the blocks'
order, the check that the sleep covered each block, and the figures from the fast ones.
No compile, no subprocess; the real thing runs on the H200 (benchmarks/host_machines.sh)."""

import types

import pytest

from study.errors import ConfigError
from study.measure import host_cost
from tests.test_config import compose, validate


class FakeCuda:
    """A GPU whose sleep ends after ``cover`` host calls (None: never within a block)."""

    def __init__(self, cover=None):
        self.cover, self.calls_since_sleep, self.log = cover, 0, []

    def _sleep(self, cycles):
        self.log.append(("sleep", cycles))
        self.calls_since_sleep = 0

    def synchronize(self):
        self.log.append(("sync",))

    def Event(self):  # noqa: N802 - torch.cuda.Event
        cuda = self

        class E:
            def record(self):
                pass

            def query(self):
                return cuda.cover is not None and cuda.calls_since_sleep >= cuda.cover

        return E()


def fake_torch(monkeypatch, cuda, slots=10, syncs=None):
    """A fake CUDA, with a launch queue of 1,021 of which each call takes ``slots``, and a
    ``syncs`` {name: op} of the callables that synchronise inside."""
    monkeypatch.setattr(host_cost, "torch", types.SimpleNamespace(cuda=cuda))
    monkeypatch.setattr(host_cost, "cycles_per_ms", lambda: 2e6)
    monkeypatch.setattr(host_cost, "queue_depth", lambda: 1021)
    monkeypatch.setattr(host_cost, "queue_slots", lambda fn, depth, cycles: slots)
    monkeypatch.setattr(host_cost, "syncs", lambda fn: (syncs or {}).get(getattr(fn, "name", "")))


def step(cuda, name, order):
    def fn():
        cuda.calls_since_sleep += 1
        order.append(name)

    fn.name = name
    return fn


def test_eager_and_compiled_blocks_alternate_and_each_follows_a_sleep(monkeypatch):
    cuda, order = FakeCuda(), []
    fake_torch(monkeypatch, cuda)
    fns = {"": step(cuda, "c", order), "eager_": step(cuda, "e", order)}
    got, depth = host_cost.measure(fns, {"": 50.0, "eager_": 20.0}, 4, 5.0, 20, lambda: 10.0)
    assert got[""].calls == 20 and got["eager_"].calls == 20  # 22 x 50 us < half of 5 ms
    assert got[""].lead_in == 2 and depth == 1021 and got[""].slots == 10
    blocks = [order[i] for i in range(2, len(order), 22)]  # after one call each, first
    assert blocks == ["c", "e", "e", "c", "c", "e", "e", "c"]  # ABBA, each 2 + 20 calls
    assert [x[0] for x in cuda.log].count("sleep") == 8
    assert all(got[k].covered == [True] * 4 for k in got)
    assert got[""].sleep_ms == 5.0 and cuda.log[1] == ("sleep", 10_000_000)


def test_a_block_the_sleep_did_not_cover_is_left_out_and_said(monkeypatch):
    """A call that waits for the GPU (a sync inside it) ends the sleep before the block does:
    that block's time is not host time alone."""
    cuda, order = FakeCuda(cover=3), []
    fake_torch(monkeypatch, cuda)
    got, _ = host_cost.measure({"": step(cuda, "c", order)}, {"": 10.0}, 3, 5.0, 20, lambda: 10.0)
    assert got[""].covered == [False] * 3
    figs, note = host_cost.figures(got[""], bar=13.0)
    assert "host_us" not in figs and "did not cover any block" in note
    assert figs["host_status"] == "not_covered"


def test_a_call_that_syncs_inside_gets_no_block_and_is_named_serial(monkeypatch):
    """BERT's eager forward reads a value back each call: host and device run in series, no
    sleep can cover a block, and the row says so instead of a host figure."""
    cuda, order = FakeCuda(), []
    op = "called a synchronizing CUDA operation"
    fake_torch(monkeypatch, cuda, syncs={"e": op})
    fns = {"": step(cuda, "c", order), "eager_": step(cuda, "e", order)}
    got, _ = host_cost.measure(fns, {"": 50.0, "eager_": 900.0}, 4, 5.0, 20, lambda: 10.0)
    assert got["eager_"].calls == 0 and got["eager_"].covered == []
    assert order.count("e") == 1 and order.count("c") == 1 + 4 * 22  # only its first call
    figs, note = host_cost.figures(got["eager_"], bar=13.0)
    assert figs["host_status"] == "serial" and "host_us" not in figs
    assert "in series" in note and op in note
    figs, _ = host_cost.figures(got[""], bar=13.0)
    assert figs["host_status"] == "measured" and figs["host_us"] is not None


def test_a_block_holds_at_most_half_the_launch_queue():
    """ResNet-18 eager queues 172 launches a call on an H100 whose queue holds 1,021: 13 calls
    of it never fit behind any sleep. One untimed call then one timed call fit; a call that
    takes more than half the queue is timed alone; one that fills it is not timed at all."""
    assert host_cost.plan(50.0, 5.0, 20, 10, 1021) == (20, 5.0, 2, None)
    assert host_cost.plan(1900.0, 5.0, 20, 172, 1021)[:3] == (1, pytest.approx(7.6), 1)
    assert host_cost.plan(50.0, 5.0, 20, 100, 1021)[:3] == (3, 5.0, 2)  # 5 x 100 <= 510
    assert host_cost.plan(50.0, 5.0, 20, 600, 1021)[:3] == (1, 5.0, 0)
    n, _, _, why = host_cost.plan(50.0, 5.0, 20, 1500, 1021)
    assert n == 0 and "queues 1500 launches" in why
    assert host_cost.plan(None, 5.0, 20, None, None) == (20, 5.0, 2, None)


def test_a_host_figure_above_its_calls_latency_is_broken_not_a_finding():
    """host units at the timed calls' gauge against the call's latency: 4.0 units x 10 us is
    40 us, under a 45 us call; at a 13 us gauge it is 52 us, above the call's p90 of 48 us."""
    assert host_cost.check(4.0, 45.0, 48.0, 10.0) == (True, None)
    ok, why = host_cost.check(4.0, 45.0, 48.0, 13.0)
    assert not ok and "52 us" in why and "above the call's own latency 45 us" in why
    assert not host_cost.check(4.0, 45.0, None, 11.5)[0]  # no p90: the median is the bar
    assert host_cost.check(None, 45.0, 48.0, 13.0) == (True, None)
    assert host_cost.check(4.0, 45.0, 48.0, None) == (True, None)


def test_the_cell_blanks_a_broken_host_figure_and_draws_no_verdict_from_it():
    from study.cell import phases
    from study.rows.metrics import bound_verdict

    cell = phases.Cell.__new__(phases.Cell)
    cell.notes, cell.timing_gauge_us, cell.eager_p90_us = [], 13.7, 1300.0
    cell.row = {
        "host_us": 2979.0, "host_units": 216.0, "host_status": "measured",
        "latency_median_us": 2529.0, "latency_p90_us": 2560.0, "device_time_us": 2394.0,
        "eager_host_us": 900.0, "eager_host_units": 60.0, "eager_host_status": "measured",
        "eager_latency_paired_us": 1257.0,
    }  # fmt: skip
    cell._host_check()
    row = cell.row
    assert row["host_us"] is None and row["host_units"] is None
    assert row["host_block_us"] == 2979.0 and row["timing_gauge_us"] == 13.7
    assert row["host_status"] == "above_latency" and "not reported" in cell.notes[0]
    assert row["eager_host_us"] == pytest.approx(60.0 * 13.7)  # at the timed calls' speed
    assert row["eager_host_status"] == "measured"
    assert bound_verdict(row) == (None, None)


def test_host_us_is_taken_at_the_timed_calls_host_speed():
    """deit under default on an H100: its host blocks all ran in a slow phase (gauge 30.6 us,
    3,962 us a call) while its calls were timed at 16.3 us: the row's host_us is 129.8 units at
    16.3 us, 2,116 us, which compares with its 2,196 us latency; the blocks' own stays apart."""
    from study.cell import phases

    cell = phases.Cell.__new__(phases.Cell)
    cell.notes, cell.timing_gauge_us, cell.eager_p90_us = [], 16.3, None
    cell.row = {"host_us": 3961.7, "host_units": 129.8, "host_status": "measured",
                "latency_median_us": 2195.8, "latency_p90_us": 2262.6}  # fmt: skip
    cell._host_check()
    assert cell.row["host_us"] == pytest.approx(129.8 * 16.3) and cell.notes == []
    assert cell.row["host_block_us"] == 3961.7 and cell.row["host_status"] == "measured"


def test_the_figures_are_the_fast_covered_blocks_medians():
    b = host_cost.Blocks(calls=20, sleep_ms=5.0)
    b.host_us = [40.0, 41.0, 39.0, 42.0, 40.5, 70.0, 68.0, 99.0]
    b.gauge_us = [10.0, 10.2, 9.9, 10.1, 10.0, 17.0, 17.2, 10.0]
    b.covered = [True] * 7 + [False]
    figs, note = host_cost.figures(b, bar=13.0)
    assert figs["host_us"] == 40.5 and figs["host_blocks_fast"] == 5
    assert figs["host_units"] == pytest.approx(40.5 / 10.0, rel=0.02)
    assert figs["host_gauge_us"] == 10.0
    assert "1 of 8 blocks not covered" in note
    slow = host_cost.Blocks(calls=20, sleep_ms=5.0, host_us=b.host_us[:7],
                            gauge_us=b.gauge_us[:7], covered=[True] * 7)  # fmt: skip
    figs, note = host_cost.figures(slow, bar=9.0)  # no block fast: every covered one, said
    assert figs["host_us"] == 41.0 and "only 0 ran in the host's fast phase" in note


def test_a_block_is_sized_to_half_the_sleep_and_a_long_call_stretches_the_sleep():
    assert host_cost.block_calls(50.0, 5.0, 20) == (20, 5.0)
    assert host_cost.block_calls(500.0, 5.0, 20) == (5, 5.0)
    n, ms = host_cost.block_calls(8_000.0, 5.0, 20)  # a GPT-2 training step: one call
    assert n == 1 and ms == pytest.approx(16.0)
    assert host_cost.block_calls(None, 5.0, 20) == (20, 5.0)


def test_the_cpu_and_a_torch_without_sleep_leave_the_columns_blank_with_a_note(monkeypatch):
    assert "not measured on the CPU" in host_cost.available("cpu")
    monkeypatch.setattr(host_cost, "torch", types.SimpleNamespace(cuda=types.SimpleNamespace()))
    assert "no torch.cuda._sleep" in host_cost.available("cuda")


@pytest.mark.parametrize(
    "override, key",
    [
        ("timing.host_sleep_ms=0", "timing.host_sleep_ms"),
        ("timing.host_sleep_ms=-3", "timing.host_sleep_ms"),
        ("timing.host_sleep_ms=0.1", "timing.host_sleep_ms"),
        ("timing.host_sleep_ms=nan", "timing.host_sleep_ms"),
        ("timing.host_sleep_ms=inf", "timing.host_sleep_ms"),
        ("timing.host_blocks=-1", "timing.host_blocks"),
        ("timing.host_calls=0", "timing.host_calls"),
    ],
)
def test_host_timing_out_of_range_is_refused_at_start_naming_the_key(override, key):
    with pytest.raises(ConfigError, match=key.replace(".", r"\.")):
        validate(compose(override))


def test_a_host_time_far_above_the_calls_latency_gives_no_verdict():
    """A steady loop's host time per call is at most its latency: compiled Linear on m4 read
    95.8 us of host time (its blocks in the slow phase) for 55.4 us a call, so that row gets no
    host_bound; within the phase band (1.3x: Linear eager 20.2 us against 17.5 us) it does."""
    from study.rows.metrics import bound_verdict

    hb, why = bound_verdict({"host_us": 95.8, "latency_median_us": 55.4, "device_time_us": 2.9})
    assert hb is None and "slower host phase" in why
    assert bound_verdict({"host_us": 20.2, "latency_median_us": 17.5, "device_time_us": 2.9}) == (
        True, None)  # fmt: skip
    assert bound_verdict({"host_us": 56.2, "latency_median_us": 60.6, "device_time_us": 58.5}) == (
        False, None)  # fmt: skip


def test_a_failure_of_the_host_time_blocks_costs_their_columns_only(monkeypatch):
    """Failures are rows, not crashes: the host-time blocks are an extra measurement, and a
    cell whose blocks fail keeps every other figure, with a note."""
    from study.cell import phases
    from study.measure import timing

    cell = phases.Cell.__new__(phases.Cell)
    cell.cfg = types.SimpleNamespace(timing=types.SimpleNamespace(
        host_blocks=20, host_sleep_ms=5.0, host_calls=20))  # fmt: skip
    cell.device, cell.notes, cell.row = "cuda", [], {}
    cell.step = cell.eager = lambda: None
    cell.timed = timing.Rounds("m", chunks=[[50.0]], eager=[], compiled=[], gauges=[0])
    cell.phases = types.SimpleNamespace(level=lambda: 10.0, ratio=1.3, gauge=lambda: 10.0)
    monkeypatch.setattr(host_cost, "available", lambda device: None)
    monkeypatch.setattr(phases.timing, "sync", lambda device: None)

    def broken(*a, **k):
        raise RuntimeError("CUDA error: an illegal memory access")

    monkeypatch.setattr(host_cost, "measure", broken)
    cell._host_cost()
    assert "host_us" not in cell.row and "host time per call not measured" in cell.notes[-1]


def test_a_sync_is_the_ops_own_warning_not_the_debug_modes_prototype_notice(monkeypatch):
    """torch warns that the sync debug mode is a prototype when it is switched on: that is no
    sync (on the H100 it made every model row read serial)."""
    import warnings

    modes = []
    cuda = types.SimpleNamespace(
        synchronize=lambda: None,
        get_sync_debug_mode=lambda: 0,
        set_sync_debug_mode=lambda m: (modes.append(m), m == "warn" and warnings.warn(
            "Synchronization debug mode is a prototype feature and does not yet detect all "
            "synchronizing operations (Triggered internally at CUDAFunctions.cpp:162.)", stacklevel=2)),
    )  # fmt: skip
    monkeypatch.setattr(host_cost, "torch", types.SimpleNamespace(cuda=cuda))
    assert host_cost.syncs(lambda: None) is None and modes == ["warn", 0]

    def reads_back():
        warnings.warn("called a synchronizing CUDA operation (Triggered at x.cpp:1.)", stacklevel=2)

    assert host_cost.syncs(reads_back) == "called a synchronizing CUDA operation"
