"""Which CPU cores a cell runs on, and how busy the host was while it was timed.

A host-bound cell (per-call latency above its device time) measures the host: on the H200
host the same compiled cell moved by up to 2.2x between processes while each process's own
p10-p90 stayed narrow (FIELD-NOTES). So every cell runs pinned:

- ``plan`` splits the cores the sweep may use into one group per slot (cells that run at
  once: one per GPU, or ``n_jobs`` CPU cells), keeping the first core (one per slot when
  there are 4 or more cores per slot) for the sweep's own processes (the Hydra jobs, the cell
  servers): nothing else of the sweep runs on a cell's cores while it is timed. ``cores=0-7``
  narrows the set.
- The warm parent (study.sweep.server) pins each forked cell to its group before it runs anything
  (``os.sched_setaffinity``; the server itself sits on the sweep's cores), and the cell sets
  ``torch.set_num_threads`` to its core count; Inductor's async-compile process pool is off
  (study.cell.compiling), so no compile workers share the cores.
- ``OneCore`` narrows every thread of a CUDA cell to one core of its group while it is timed,
  profiled and shape-swept
  (``timing.one_core``). A training step runs on two threads (the main one, and autograd's
  device thread for the backward), which the scheduler put on two cores; each vCPU of the
  H200 host has its own fast and slow phases, and the phase gauge runs on the main thread's.
  So the autograd thread's core could be slow while the gauge read fast, and each handoff
  between the threads crossed cores. On the H200, flash fwd_bwd eager read 445-448 µs a step in
  every condition with all threads on one core (p10 = median), against medians of 510-660 µs
  and p10s of 443-565 µs with them spread, in the same probe (benchmarks/pair_probe.py,
  2026-12-02); the cells' eager step moved by up to 31% between its own cell and the pairs.
- ``HostLoad`` samples ``/proc/stat`` for the cell's cores around the timed phases: CPU time
  that other processes took on them (busy time minus this process's own), the 1-minute load
  average, the time the hypervisor gave the cell's virtual CPUs to someone else (steal), and
  the frequency governor, where readable. A row says ``host_loaded`` when others or the
  hypervisor took more than a quarter of a core of the cell's, or the load average exceeded
  the host's cores.
- ``host_probe_us`` times a fixed piece of host work (tiny CPU tensor ops: Python, the
  dispatcher and the allocator, what a host-bound cell spends its time in) just before and
  just after the timed phases. It is the same work in every process: when it moves, the host
  ran that work slower or faster. On the H200's VM it read 157-364 us across one session's
  processes, pinned and quiet, and the latency of host-bound cells moved with it; on the 2-core
  CPU machine it is bimodal per process and over time, with or without allocation or address
  randomisation (benchmarks/README.md; ``benchmarks/core_speed.py``).
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from pathlib import Path

LOADED_OTHER_CORES = 0.25  # others' CPU on the cell's cores, in cores, above which: loaded
# ... and at least this many clock ticks of it: a 50 ms timed phase on the 2-core CPU box read
# 0.38 cores "other" from 2 ticks of rounding (busy and own time are both counted in ticks)
MIN_TICKS = 4
MIN_WATCH_S = 0.1  # the least a cell's cores are watched (HostLoad.at_least)


def parse_cores(spec: str) -> list[int]:
    """'0-3,8' -> [0, 1, 2, 3, 8]. Raises ValueError on anything else."""
    out = []
    for part in str(spec).replace(" ", "").split(","):
        if not part:
            continue
        lo, _, hi = part.partition("-")
        a, b = int(lo), int(hi) if hi else int(lo)
        if a < 0 or b < a:
            raise ValueError(f"bad core range {part!r}")
        out.extend(range(a, b + 1))
    if not out:
        raise ValueError("no cores")
    return sorted(set(out))


def fmt_cores(cores) -> str:
    """[0, 1, 2, 3, 8] -> '0-3,8'."""
    cores = sorted(cores)
    runs, start = [], None
    for i, c in enumerate(cores):
        if start is None:
            start = c
        if i + 1 == len(cores) or cores[i + 1] != c + 1:
            runs.append(f"{start}-{c}" if c > start else f"{c}")
            start = None
    return ",".join(runs)


def allowed() -> list[int]:
    return sorted(os.sched_getaffinity(0))


def check_spec(spec: str, host: list[int] | None = None) -> str | None:
    """Why ``cores=spec`` cannot run on this host, or None."""
    if spec == "auto":
        return None
    try:
        want = parse_cores(spec)
    except ValueError as e:
        return f"cores={spec!r} is not a core list ({e}); write e.g. cores=0-7 or cores=2,3,5, or cores=auto"
    host = allowed() if host is None else host
    missing = [c for c in want if c not in host]
    if missing:
        return (
            f"cores={spec!r} names core(s) {fmt_cores(missing)} that this process may not use; "
            f"allowed here: {fmt_cores(host)}"
        )
    return None


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


def governor(core: int) -> str | None:
    try:
        return (
            Path(f"/sys/devices/system/cpu/cpu{core}/cpufreq/scaling_governor").read_text().strip()
        )
    except OSError:
        return None


def _stat(cores: set[int]) -> tuple[float, float] | None:
    """(busy, steal) jiffies summed over ``cores``, from /proc/stat; None where unreadable.
    busy: user, nice, system, irq, softirq (guest time is inside user). steal: time a virtual
    CPU wanted to run while the hypervisor ran something else (another tenant)."""
    try:
        lines = Path("/proc/stat").read_text().splitlines()
    except OSError:
        return None
    busy = steal = 0.0
    for line in lines:
        head, *vals = line.split()
        if not head.startswith("cpu") or head == "cpu" or int(head[3:]) not in cores:
            continue
        v = [float(x) for x in vals] + [0.0] * 8
        busy += v[0] + v[1] + v[2] + v[5] + v[6]
        steal += v[7]
    return busy, steal


class HostLoad:
    """Around the timed phases: others' CPU on the cell's cores, load average, governor."""

    HZ = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100

    def __init__(self, cores: list[int]):
        self.cores = sorted(cores)
        self.wall = self.own = 0.0
        self.busy = self.steal = 0.0
        self.readable = True

    def __enter__(self):
        self._t, self._cpu, self._s = time.monotonic(), _own_cpu(), _stat(set(self.cores))
        return self

    def __exit__(self, *exc):
        s = _stat(set(self.cores))
        self.wall += time.monotonic() - self._t
        self.own += _own_cpu() - self._cpu
        if s is None or self._s is None:
            self.readable = False
        else:
            self.busy += (s[0] - self._s[0]) / self.HZ
            self.steal += (s[1] - self._s[1]) / self.HZ
        return False

    def at_least(self, seconds: float) -> None:
        """Watch the cores, idle, until ``seconds`` were watched in all: /proc/stat counts in
        ticks (10 ms), too coarse for a timed phase of a few ms to show others' CPU (a tiny
        cell's 39 ms under a busy loop on both cores read 1.1 cores, yet under 4 ticks)."""
        if self.wall < seconds:
            with self:
                time.sleep(seconds - self.wall)

    def row(self) -> dict:
        other = steal = None
        if self.readable and self.wall > 0:
            other = max(0.0, self.busy - self.own) / self.wall
            steal = self.steal / self.wall
        try:
            load = os.getloadavg()[0]
        except OSError:
            load = None
        ticks = MIN_TICKS / self.HZ  # /proc/stat counts in ticks: fewer are rounding, not load
        loaded = (
            (other is not None and other > LOADED_OTHER_CORES and self.busy - self.own >= ticks)
            or (steal is not None and steal > LOADED_OTHER_CORES and self.steal >= ticks)
            or (load is not None and load > os.cpu_count())
        )
        return {
            "cpu_cores": fmt_cores(self.cores),
            "load_avg_1m": load,
            "host_busy_other": other,
            "host_steal": steal,
            "host_loaded": loaded,
            "cpu_governor": governor(self.cores[0]) if self.cores else None,
        }


def host_probe_us(rounds: int = 31, ops: int = 50) -> float:
    """Median microseconds of ``ops`` tiny CPU tensor additions, over ``rounds`` rounds."""
    import statistics

    import torch

    a = torch.ones(4)
    times = []
    for _ in range(rounds):
        t = time.perf_counter_ns()
        for _ in range(ops):
            a = a + 1.0
        times.append(time.perf_counter_ns() - t)
    return statistics.median(times) / 1000.0


def _own_cpu() -> float:
    t = os.times()
    return t.user + t.system
