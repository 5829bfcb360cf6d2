"""Cores per slot, and the host-load columns a row gets."""

import os
import threading
import time

import pytest

from study.config import cores
from study.measure import host_load, pinning


def test_core_lists_parse_and_print():
    assert cores.parse_cores("0-3,8") == [0, 1, 2, 3, 8]
    assert cores.fmt_cores([8, 0, 1, 2, 3, 10, 11]) == "0-3,8,10-11"
    with pytest.raises(ValueError):
        cores.parse_cores("3-1")


def test_each_slot_gets_its_own_cores_and_the_sweep_keeps_housekeeping_ones(monkeypatch):
    monkeypatch.setattr(pinning, "core_of", lambda c: c)  # no SMT: a CPU is a core
    house, groups = pinning.plan(list(range(16)), 1)
    assert house == [0] and groups == [list(range(1, 16))]
    # Two slots: two job processes, each with a warm server importing torch at the same time,
    # so one housekeeping core each (on one shared core the imports took twice as long).
    house, groups = pinning.plan(list(range(32)), 2)
    assert house == [0, 1] and groups == [list(range(2, 17)), list(range(17, 32))]
    assert not set(groups[0]) & set(groups[1])
    # Too few cores to spare one per slot: the sweep keeps one.
    house, groups = pinning.plan(list(range(6)), 2)
    assert house == [0] and groups == [[1, 2], [3, 4, 5]]
    # Two cores, one slot (a laptop, CI): the cell gets both; the idle sweep shares them.
    assert pinning.plan([0, 1], 1) == ([0], [[0, 1]])
    house, groups = pinning.plan(list(range(16)), 1, "4-7")
    assert groups == [[4, 5, 6, 7]] and 4 not in house


def test_smt_siblings_stay_in_one_group(monkeypatch):
    """32 logical CPUs, 16 cores, siblings i and i + 16 (the usual Linux numbering): two cells
    never share a physical core, nor a cell and the housekeeping."""
    monkeypatch.setattr(pinning, "core_of", lambda c: c % 16)
    house, groups = pinning.plan(list(range(32)), 2)
    assert house == [0, 1, 16, 17]
    assert groups == [[*range(2, 9), *range(18, 25)], [*range(9, 16), *range(25, 32)]]
    phys = [{c % 16 for c in g} for g in (house, *groups)]
    assert not (phys[0] & phys[1] or phys[0] & phys[2] or phys[1] & phys[2])
    house, groups = pinning.plan(list(range(32)), 1)
    assert house == [0, 16] and groups == [sorted({*range(1, 16), *range(17, 32)})]
    # one core with two siblings, two slots: the CPUs are split one by one
    assert pinning.plan([0, 1], 2, "0-1") == ([0], [[0], [1]])


def test_a_core_the_host_lacks_is_named():
    assert "core(s) 99" in cores.check_spec("2,99", host=[0, 1, 2, 3])
    assert cores.check_spec("auto") is None and cores.check_spec("0-1", host=[0, 1]) is None


def test_host_load_says_loaded_when_others_use_the_cells_cores(monkeypatch):
    load = host_load.HostLoad([0, 1])
    load.wall, load.own, load.busy = 1.0, 0.9, 1.8  # others took 0.9 cores-worth
    monkeypatch.setattr(host_load.os, "getloadavg", lambda: (1.0, 1.0, 1.0))
    r = load.row()
    assert r["host_loaded"] is True and r["host_busy_other"] == pytest.approx(0.9)
    assert r["cpu_cores"] == "0-1" and r["load_avg_1m"] == 1.0
    load.busy = 1.0  # only the cell itself
    assert load.row()["host_loaded"] is False
    load.wall, load.own, load.busy = 0.05, 0.0, 0.02  # 2 ticks in 50 ms: rounding, not load
    assert load.row()["host_busy_other"] == pytest.approx(0.4)
    assert load.row()["host_loaded"] is False
    load.wall, load.own, load.busy = 1.0, 0.9, 1.8
    monkeypatch.setattr(host_load.os, "cpu_count", lambda: 2)
    monkeypatch.setattr(host_load.os, "getloadavg", lambda: (3.5, 1.0, 1.0))
    assert load.row()["host_loaded"] is True  # load average above the host's two cores


def test_a_short_timed_phase_is_watched_long_enough_to_see_others(monkeypatch):
    load = host_load.HostLoad([0, 1])
    load.wall = 0.05
    slept, clock = [], [100.0]

    def sleep(s):
        slept.append(s)
        clock[0] += s

    monkeypatch.setattr(host_load.time, "sleep", sleep)
    monkeypatch.setattr(host_load.time, "monotonic", lambda: clock[0])
    load.at_least(0.2)
    assert load.wall == pytest.approx(0.2)
    assert slept == [pytest.approx(0.15)]
    load.at_least(0.1)  # watched long enough already
    assert len(slept) == 1


def test_host_load_reads_proc_stat_around_a_block():
    with host_load.HostLoad(sorted(cores.allowed())) as load:
        # os.times counts in 10 ms ticks: 200,000 squares (~15 ms) read 0 ticks in 2 of 3 runs
        sum(i * i for i in range(2_000_000))
    r = load.row()
    assert r["host_busy_other"] is None or r["host_busy_other"] >= 0
    assert load.own > 0 and load.wall > 0


def test_the_host_probe_reads_the_host_not_a_constant(monkeypatch):
    """A slower host reads slower: the probe times real work (here every op sleeps 20 us)."""
    import time

    import torch

    fast = host_load.host_probe_us(rounds=5, ops=20)
    real_add = torch.Tensor.__add__

    def slow_add(self, other):
        time.sleep(20e-6)
        return real_add(self, other)

    monkeypatch.setattr(torch.Tensor, "__add__", slow_add)
    slow = host_load.host_probe_us(rounds=5, ops=20)
    assert fast > 0 and slow > fast + 20 * 20


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs two cores to narrow")
def test_one_core_puts_every_thread_on_one_core_and_gives_each_its_cores_back():
    """A training step's backward runs on autograd's thread: the gauge's core must be its core."""
    group = os.sched_getaffinity(0)
    own = {max(group)}  # a thread with cores of its own gets those back, not the caller's
    seen, go, done = {}, threading.Event(), threading.Event()

    def worker(name, cores=None):
        if cores:
            os.sched_setaffinity(0, cores)
        seen[name + " tid"] = threading.get_native_id()
        go.wait()
        seen[name] = os.sched_getaffinity(0)
        done.wait()

    before = threading.Thread(target=worker, args=("before", own), daemon=True)
    before.start()
    try:
        while "before tid" not in seen:
            time.sleep(0.001)
        with pinning.OneCore() as one:
            assert one.core in group and one.note is None
            inside = threading.Thread(target=worker, args=("inside",), daemon=True)
            inside.start()  # inherits the one core
            while "inside tid" not in seen:
                time.sleep(0.001)
            go.set()
            while "inside" not in seen or "before" not in seen:
                time.sleep(0.001)
            assert seen["before"] == seen["inside"] == os.sched_getaffinity(0) == {one.core}
        assert os.sched_getaffinity(0) == group
        assert os.sched_getaffinity(seen["before tid"]) == own
        assert os.sched_getaffinity(seen["inside tid"]) == group
    finally:
        go.set()
        done.set()
    with pytest.raises(RuntimeError), pinning.OneCore():  # a failing cell gets its cores back
        assert os.sched_getaffinity(0) != group
        raise RuntimeError("the cell failed while timed")
    assert os.sched_getaffinity(0) == group
    with pinning.OneCore(enabled=False) as off:  # CPU cells: torch's threads keep their cores
        assert off.core is None and os.sched_getaffinity(0) == group


def test_one_core_that_cannot_narrow_the_cell_says_so_and_narrows_nothing(monkeypatch):
    def refuse(pid, cores):
        raise PermissionError(1, "Operation not permitted")

    monkeypatch.setattr(pinning.os, "sched_setaffinity", refuse)
    with pinning.OneCore() as one:
        assert one.core is None and "could not narrow the cell" in one.note
