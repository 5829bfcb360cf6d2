"""Which CPU cores a cell runs on: one group per slot, and one core while a CUDA cell is timed.

A host-bound cell (per-call latency above its device time) measures the host: on the H200
host the same compiled cell moved by up to 2.2x between processes while each process's own
p10-p90 stayed narrow: the spread is between processes, not calls. So every cell runs pinned:

- ``plan`` splits the cores the sweep may use into one group per slot (cells that run at
  once: one per GPU, or ``n_jobs`` CPU cells), keeping the first core (one per slot when
  there are 4 or more cores per slot) for the sweep's own processes (the Hydra jobs, the cell
  servers): nothing else of the sweep runs on a cell's cores while it is timed. ``cores=0-7``
  narrows the set.
- The warm parent (study.sweep.warm_parent) pins each forked cell to its group before it runs anything
  (``os.sched_setaffinity``; the server itself sits on the sweep's cores), and the cell sets
  ``torch.set_num_threads`` to its core count; Inductor's async-compile process pool is off
  (study.cell.compiling), so no compile workers share the cores.
- ``OneCore`` narrows every thread of a CUDA cell to one core of its group while it is timed,
  profiled and shape-swept (``timing.one_core``). A training step runs on two threads (the main
  one, and autograd's device thread for the backward), which the scheduler put on two cores;
  each vCPU of the H200 host has its own fast and slow phases, and the phase gauge runs on the
  main thread's. So the autograd thread's core could be slow while the gauge read fast, and each
  handoff between the threads crossed cores. On the H200, flash fwd_bwd eager read 445-448 µs a
  step in every condition with all threads on one core (p10 = median), against medians of
  510-660 µs and p10s of 443-565 µs with them spread, in the same probe
  (benchmarks/pair_probe.py, 2026-12-02); the cells' eager step moved by up to 31% between its
  own cell and the pairs.

How busy the host was meanwhile: study.measure.host_load.
"""

from __future__ import annotations

import contextlib
import os
import threading
from pathlib import Path

from study.config.cores import parse_cores


def core_of(cpu: int):
    """The physical core a logical CPU belongs to, as the list of its SMT siblings (the same
    for each of them); the CPU alone where the topology is unreadable."""
    try:
        return (
            Path(f"/sys/devices/system/cpu/cpu{cpu}/topology/thread_siblings_list")
            .read_text()
            .strip()
        )
    except OSError:
        return f"cpu{cpu}"


def units(cores: list[int]) -> list[list[int]]:
    """``cores`` grouped by physical core (SMT siblings together), in order of their lowest CPU."""
    by: dict[str, list[int]] = {}
    for c in sorted(cores):
        by.setdefault(core_of(c), []).append(c)
    return sorted(by.values())


def plan(host: list[int], slots: int, spec: str = "auto") -> tuple[list[int], list[list[int]]]:
    """(housekeeping cores, one core group per slot). Groups are disjoint (contiguous physical
    cores) unless there are fewer cores than slots, when slots share them.

    The housekeeping cores run the sweep's own processes: the main process and the warm
    parent, pinned there from its start. With cores to spare (4 or more per slot,
    counting the housekeeping one) there is one housekeeping core per slot.

    Cores are handed out in whole physical cores: SMT siblings (two logical CPUs of one core)
    go to the same group, so two cells never share a physical core, and with ``cores=auto``
    nor do a cell and the housekeeping (with a core list of your own, the housekeeping gets
    the cores you left out). With fewer physical cores than slots, logical CPUs are split one
    by one."""
    slots = max(1, slots)
    cores = sorted(host) if spec == "auto" else parse_cores(spec)
    us = units(cores)
    if len(us) < slots:  # fewer physical cores than slots: split the logical CPUs
        us = [[c] for c in cores]
    if spec == "auto" and len(us) >= slots + 2:
        n_house = slots if len(us) >= 4 * slots else 1
        house, us = sorted(c for u in us[:n_house] for c in u), us[n_house:]
    else:
        house = sorted(set(host) - set(cores)) or cores[:1]
    if len(us) < slots:
        flat = [c for u in us for c in u]
        return house, [flat] * slots
    n = len(us)
    return house, [
        sorted(c for u in us[i * n // slots : (i + 1) * n // slots] for c in u)
        for i in range(slots)
    ]


def current_core() -> int | None:
    """The core the calling thread last ran on (/proc/thread-self/stat, field 39), or None."""
    try:
        stat = Path("/proc/thread-self/stat").read_text()
        return int(stat.rsplit(")", 1)[1].split()[36])
    except (OSError, IndexError, ValueError):
        return None


def threads() -> list[int]:
    """This process's thread ids (/proc/self/task); [] where unreadable."""
    try:
        return sorted(int(t) for t in os.listdir("/proc/self/task"))
    except OSError:
        return []


class OneCore:
    """Within: every thread of this process on one core (the one the calling thread is on, if
    it may run there), threads started inside inheriting it; on leaving, each thread back on
    the cores it had (one started inside: the caller's). The calling thread is narrowed first:
    where it cannot be, nothing is, ``core`` stays None and ``note`` says why (``core`` is None
    too when disabled). Never raises on leaving."""

    def __init__(self, enabled: bool = True):
        self.enabled, self.core, self.note = enabled, None, None
        self._had, self._group = {}, None

    def __enter__(self):
        if not self.enabled:
            return self
        self._group = os.sched_getaffinity(0)
        core = current_core()
        core = core if core in self._group else min(self._group)
        try:
            os.sched_setaffinity(0, {core})  # the caller first: without it, nothing
        except OSError as e:
            self.note = f"timing.one_core: could not narrow the cell to core {core}: {e}"
            self._group = None
            return self
        for tid in threads():
            with contextlib.suppress(OSError):  # ended meanwhile, or not ours to move
                had = self._group if tid == threading.get_native_id() else None
                self._had[tid] = had or os.sched_getaffinity(tid)
                os.sched_setaffinity(tid, {core})
        self.core = core
        return self

    def __exit__(self, *exc):
        if self._group is not None:
            for tid in threads():
                with contextlib.suppress(OSError):  # ended meanwhile: nothing to give back
                    os.sched_setaffinity(tid, self._had.get(tid, self._group))
        self._had, self._group = {}, None
        return False
