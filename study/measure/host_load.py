"""How busy the host was while a cell was timed, and how fast it ran a fixed piece of work.

A host-bound cell measures the host (study.measure.pinning says how cells are pinned), so every
row records what else ran on its cores and how fast the host itself was:

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

import os
import time
from pathlib import Path

from study.config.cores import fmt_cores

LOADED_OTHER_CORES = 0.25  # others' CPU on the cell's cores, in cores, above which: loaded
# ... and at least this many clock ticks of it: a 50 ms timed phase on the 2-core CPU box read
# 0.38 cores "other" from 2 ticks of rounding (busy and own time are both counted in ticks)
MIN_TICKS = 4
MIN_WATCH_S = 0.1  # the least a cell's cores are watched (HostLoad.at_least)


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
