"""The host's phase around every timed block: a gauge, a fast level, and which blocks count.

Why: the H200 host (a 16-core KVM VM) alternates between a fast and a slow phase, inside one
process, on each core independently: a 1,000-iteration Python loop takes about 44 us in one and
about 75 us in the other (x1.7), a phase lasts from about 70 ms to a few seconds, and
``/proc/stat`` shows no steal time in either phase. A host-bound compiled call
slows with the host while a GPU-bound eager call does not, so a speedup timed partly in a slow
phase moves between processes (cuDNN/default read 0.96x, 0.52x and 0.99x in three sweeps), and
pairing alone cannot cancel it. So every timed block is bracketed by a gauge, and only the
blocks whose gauges on both sides say "fast" count.

The gauge: a fixed, tiny piece of host work, untimed by the study, run right before and right
after each timed block: 300 iterations of a pure-Python loop plus one dispatcher call (a CPU
tensor add), the best of 3 (the best, so a preemption inside one run does not read as a slow
phase). Seen levels (fast / slow, in us):

- H200 VM, torch 2.11: this gauge's fast level 12.3-13.5 in every cell of four sweeps on three
  machines (45 cells each), its slow readings 16.5-33.4 (the median slow reading of a cell);
  the 300-iteration loop alone read 9.3-10.1 fast. The share of rounds that ran fast went
  from 0% to 100% between cells of one sweep; a 10 s survey (``python -m study.measure.host_gauge``)
  read 37% and 46% of its readings fast on two of the machines.
- 2-core CPU box, torch 2.13, Python 3.11: 14.3-15.0 p1-p10, with stretches at 17-18 and
  21-25 lasting 0.1-1 s, in one process over 6 s.

Skip or wait? ``benchmarks/phase_policy.py`` timed both on the H200 (nn.Linear and cuDNN SDPA,
compiled, 4 tries each): 30 fast pairs took 0.05-0.16 s either way, 75-97% of the timed rounds
were kept, and the speedups agreed within their intervals (linear 0.424-0.449x, cuDNN
0.985-0.994x). The study skips: it times every round, so the slow ones are data too
(``speedup_paired_slow``), at no cost in time.

The rule: a round counts as fast when the larger of its two gauges, and of the round's before
it, is at most ``fast_ratio`` (1.3) x the fast level (a fast reading right after a slow round
is often a moment's dip inside a slow phase). The fast level is a level the gauge *held*: the
lowest level that ``SUSTAIN`` (5) consecutive readings all stayed at or under (the minimum over
windows of 5 readings of the window's largest), over the cell's own readings and over every
level recorded on this boot of this machine (same hostname, boot, Python and torch;
``host_gauge.txt`` beside the device ceilings of ``study.measure.calibrate``), the lower of the two.
Held, not a percentile: on an H200 host that was slow nearly all the time (2026-12-04), the 10th
percentile of a 10 s survey was the slow level (22.7-24.0 us, 93% of the readings "within 1.3x"
of it) while a cell's own gauge had read 16.6 us, and 49 of its 50 rows said ``fast``. A single
unusually fast reading is no level either (one made 99% of a run's blocks "slow"): a window of
5 readings is. The gauge's *dip* is the lowest level 3 consecutive readings held (the host's: the
second lowest recorded, a level seen twice); when the held
level sits above ``fast_ratio`` x the dip, the host showed a faster phase it never held for 5
readings, the held level is a slow one, and the dip is judged by instead: no round is called
fast against a slow level, and the row says so (``gauge_held`` false). A host that is slow for
a whole cell and every survey before it, with no dip at all, cannot be told from a slower
machine by its own gauge: ``host_gauge_us`` and ``host_units`` then still say how fast it ran.
1.3 sits between the fast level and the slow one on the H200 (x1.7). On the CPU box its slow
stretches at 21-25 us (x1.5-1.7) are left out, those at 17-18 us (x1.2) count as fast. A
contended cell (others' CPU on its cores) records no level.

On bare metal or a quiet workstation there is no slow phase: every block is fast, nothing is
left out and nothing changes but the new columns.
"""

# Long: one concern, the host's speed and phase: the gauge, the level it held, the record of
# that level per boot, and the survey that fills it; the docstring holds the measured reasons.

from __future__ import annotations

import functools
import os
import statistics
import time
from dataclasses import dataclass, field
from pathlib import Path

from study.config.env import boot_id
from study.measure import calibrate

LOOP = 300  # iterations of the gauge's Python loop (about 10 us on the H200 host, 15 on CPU)
BEST_OF = 3
LEVEL_QUANTILE = 0.10  # quantile() callers' default
SUSTAIN = 5  # readings in a row the gauge must hold a level for it to be the fast level
DIP = 3  # readings in a row that make a dip (held_level over 3 readings)
HOST_LEVEL_FILE = "host_gauge.txt"  # beside the ceilings (study.measure.calibrate): a line per cell
HOST_LEVEL_MAX_AGE_S = 24 * 3600.0
MIN_FAST_PAIRS = 10  # fewer fast pairs than this: the paired figures use every pair
MIN_SLOW_PAIRS = 5  # speedup_paired_slow only from at least this many slow pairs
MIN_LEVEL_READINGS = 30  # a cell records its level for the host only from this many readings
SURVEY_S = 3.0  # a CUDA cell that finds no host level surveys this long first (host_level)


@functools.cache
def _one():
    """The gauge's 1-element CPU tensor, made once per process (never inside a timed block)."""
    import torch

    return torch.ones(1)


def gauge_us() -> float:
    """Microseconds of the gauge's fixed host work: the best of ``BEST_OF`` runs."""
    import torch

    one = _one()
    best = float("inf")
    for _ in range(BEST_OF):
        t = time.perf_counter_ns()
        s = 0
        for i in range(LOOP):
            s += i * i
        torch.add(one, 1.0)
        best = min(best, (time.perf_counter_ns() - t) / 1e3)
    return best


def quantile(xs, q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))]


def held_level(xs, k: int = SUSTAIN) -> float | None:
    """The lowest level ``k`` consecutive readings of ``xs`` all stayed at or under: the minimum
    over windows of ``k`` of the window's largest reading. None for fewer than ``k`` readings."""
    import numpy as np

    xs = np.asarray(xs, dtype=float)
    if len(xs) < k:
        return None
    # a sliding-window maximum in C: the timed rounds ask this after every round (thousands)
    return float(np.lib.stride_tricks.sliding_window_view(xs, k).max(axis=1).min())


@dataclass
class Phases:
    """Gauge readings around the blocks of one cell, and which of them ran in the fast phase.

    ``bracket(fn)`` runs one timed block between two gauges and keeps the larger reading;
    ``fast(i)`` says whether block ``i`` ran fast, against the current level.
    """

    ratio: float = 1.3
    host_level: float | None = None
    readings: list[float] = field(default_factory=list)  # one per block: max(before, after)
    host_dip: float | None = None  # the lowest dip recorded on this boot (read_host_dip)
    gauge = staticmethod(gauge_us)

    def bracket(self, fn):
        g0 = self.gauge()
        out = fn()
        self.readings.append(max(g0, self.gauge()))
        return out

    def held(self) -> float | None:
        """The lowest level the gauge held for ``SUSTAIN`` readings: the cell's own, or the
        host's if lower."""
        own = self.own_level()
        levels = [x for x in (own, self.host_level) if x is not None]
        return min(levels) if levels else None

    def dip(self) -> float | None:
        """The lowest level 3 consecutive readings held, the cell's own or the host's."""
        own = held_level(self.readings, DIP)
        dips = [x for x in (own, self.host_dip) if x is not None]
        return min(dips) if dips else None

    def level_held(self) -> bool:
        """False when the gauge dipped below the held level by more than ``ratio``: the host has
        a faster phase it did not hold here, and the held level is a slow one."""
        held, dip = self.held(), self.dip()
        return held is None or dip is None or held <= self.ratio * dip

    def level(self) -> float | None:
        """The fast level in us (module doc): the held level, or the dip when the held level is
        a slow one (``level_held`` false)."""
        return self.held() if self.level_held() else self.dip()

    def own_level(self) -> float | None:
        """This cell's own held level; with fewer than ``SUSTAIN`` readings, its lowest."""
        if not self.readings:
            return None
        return held_level(self.readings) or min(self.readings)

    def fast(self, i: int, level: float | None = None) -> bool:
        """Round ``i`` ran fast: its gauges on both sides, and the round's before it, read
        within ``ratio`` of ``level`` (the current one when not given; pass it when judging
        many rounds: ``level()`` scans every reading). A round after a slow one does not count:
        deep in a slow phase the gauge reads fast now and then for a moment (on one H200 host
        in a mostly slow phase, sdpa/default's 'fast' rounds read 0.86x where fast ones read
        0.98x), while a fast phase lasts 70 ms and more, many rounds."""
        bar = self.ratio * (self.level() if level is None else level)
        return self.readings[i] <= bar and (i == 0 or self.readings[i - 1] <= bar)

    def fast_mask(self) -> list[bool]:
        """``fast(i)`` for every round at once (the timed rounds ask after every round)."""
        import numpy as np

        if not self.readings:
            return []
        r = np.asarray(self.readings, dtype=float)
        ok = r <= self.ratio * self.level()
        return (ok & np.concatenate(([True], ok[:-1]))).tolist()

    def slow_level(self) -> float | None:
        """The median reading of the blocks that were not fast (None when every one was)."""
        slow = [g for g, f in zip(self.readings, self.fast_mask(), strict=True) if not f]
        return statistics.median(slow) if slow else None

    def count_fast(self, gauges: list[int]) -> int:
        mask = self.fast_mask()
        return sum(mask[i] for i in gauges)


def _key() -> str:
    import platform
    import socket

    import torch

    # The boot: every H200 machine is called "vm", and host_gauge.txt travels with a study's
    # outputs from one machine to the next, whose host may run at another speed.
    return (
        f"{socket.gethostname()}|boot{boot_id()}|py{platform.python_version()}"
        f"|torch{torch.__version__}"
    )


def _records(path: Path, now: float | None, key: str | None) -> list[list[float]]:
    """[level, dip or nan] of each whole line of ``path`` for this host and boot, of the last
    ``HOST_LEVEL_MAX_AGE_S``."""
    now, key = time.time() if now is None else now, key or _key()
    try:
        lines = Path(path).read_text(errors="replace").splitlines()
    except OSError:
        return []
    out = []
    for line in lines:
        parts = line.split("\t")
        try:
            t, k, lvl = float(parts[0]), parts[1], float(parts[2])
            dip = float(parts[3]) if len(parts) > 3 else float("nan")
        except (IndexError, ValueError):
            continue  # a line cut by a killed cell: the others stand
        if k == key and now - t <= HOST_LEVEL_MAX_AGE_S and lvl > 0:
            out.append([lvl, dip])
    return out


def read_host_level(path: Path, now: float | None = None, key: str | None = None) -> float | None:
    """The fast level of this boot of this host (same hostname, boot, Python and torch): the
    lowest held level (``held_level``) that a survey or a cell recorded in ``path`` within the
    last ``HOST_LEVEL_MAX_AGE_S``."""
    levels = [r[0] for r in _records(path, now, key)]
    return min(levels) if levels else None


def read_host_dip(path: Path, now: float | None = None, key: str | None = None) -> float | None:
    """The host's dip on this boot: the second lowest of the dips its surveys and cells recorded
    (a faster level seen at least twice, not one cell's moment), or None with fewer than 2."""
    dips = sorted(r[1] for r in _records(path, now, key) if r[1] == r[1] and r[1] > 0)
    return dips[1] if len(dips) >= 2 else None


def record_host_level(
    path: Path, level: float, key: str | None = None, dip: float | None = None
) -> str | None:
    """Append this cell's own held level (and its dip) for the cells after it: one short
    O_APPEND write, so cells running at once never interleave a line. Returns why it could not,
    or None."""
    path = Path(path)
    tail = "" if dip is None else f"\t{dip:.3f}"
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, f"{time.time():.3f}\t{key or _key()}\t{level:.3f}{tail}\n".encode())
        finally:
            os.close(fd)
    except OSError as e:  # the next cells judge by their own readings; this row stands
        return f"host gauge level not recorded in {path}: {e.strerror or e}"
    return None


def host_level(path: Path, survey_s: float = 0.0) -> tuple[float | None, str | None]:
    """(The host's fast level, a note or None). Where ``path`` holds no level of the last day
    and ``survey_s`` > 0, survey the host that long first and record its level: on a fresh H200
    machine without ``python -m study.measure.host_gauge`` first, the first cells of a sweep timed in a slow
    phase took their own 21.96-27.87 us for the fast level (the survey after: 15.0-16.1) and
    called their rounds fast."""
    level = read_host_level(path)
    if level is not None or not survey_s > 0:
        return level, None
    ph, why = survey_and_record(path, survey_s)
    if len(ph.readings) < MIN_LEVEL_READINGS:  # too few for a level, as for a cell's own
        return None, f"host survey: {why}"
    if why:  # a level, not recorded
        return ph.level(), why
    return ph.level(), (
        f"no host level of the last day: surveyed the host for {survey_s:g} s first "
        f"(fast level {ph.level():.1f} us)"
    )


def survey_and_record(path: Path, seconds: float) -> tuple[Phases, str | None]:
    """Survey the host for ``seconds`` and record its fast level in ``path``: (the readings,
    why it was not recorded or None)."""
    ph = Phases(readings=survey(seconds))
    if len(ph.readings) < MIN_LEVEL_READINGS:
        return ph, (
            f"too few readings to record ({len(ph.readings)} < {MIN_LEVEL_READINGS}): "
            f"survey for longer"
        )
    return ph, record_host_level(path, ph.held(), dip=ph.dip())


def split(gauges: list[int], phases: Phases) -> tuple[list[int], list[int]]:
    """Positions in ``gauges`` (the rounds of one timed phase) that ran fast, and the others."""
    mask = phases.fast_mask()
    fast = [mask[i] for i in gauges]
    return [k for k, f in enumerate(fast) if f], [k for k, f in enumerate(fast) if not f]


def survey(seconds: float, every_s: float = 0.005) -> list[float]:
    """Gauge readings every ``every_s`` for ``seconds``: the host's phases over time."""
    gauge_us()  # the first one imports torch: not a reading
    readings, t0 = [], time.monotonic()
    while time.monotonic() - t0 < seconds:
        readings.append(gauge_us())
        time.sleep(every_s)
    return readings


def main(argv: list[str]) -> None:
    """python -m study.measure.host_gauge [SECONDS] [calibration_file=PATH]: survey the host's gauge
    (10 s by default) and record its fast level for the cells to come, beside the ceilings file
    the cells read (their ``calibration_file``), so that the first cells of a sweep on a new
    machine know it too (alone, a cell that spends all its timing in a slow phase takes that
    for fast)."""
    import sys

    given = [a.split("=", 1)[1] for a in argv if a.startswith("calibration_file=")]
    argv = [a for a in argv if not a.startswith("calibration_file=")]
    try:
        seconds = float(argv[0]) if argv else 10.0
    except ValueError:
        seconds = -1.0
    if len(argv) > 1 or len(given) > 1 or not seconds > 0:
        sys.exit("usage: python -m study.measure.host_gauge [SECONDS] [calibration_file=PATH]   "
                 "(SECONDS a positive number; default 10)")  # fmt: skip
    path = calibrate.cache_path(given[0] if given else None).with_name(HOST_LEVEL_FILE)
    ph, why = survey_and_record(path, seconds)
    print(describe(ph, seconds))
    print(why or f"recorded in {path}")


MOSTLY_SLOW = 0.5  # a survey with fewer of its readings in the fast phase: a mostly slow host


def describe(ph: Phases, seconds: float) -> str:
    """One line on a survey: the fast level, how much of the time the host held it, and what a
    mostly slow host or one that never held its fast phase means for the rows."""
    xs, level, slow = ph.readings, ph.level(), ph.slow_level()
    share = sum(ph.fast_mask()) / len(xs)
    line = (
        f"host gauge over {seconds:g} s: fast level {level:.1f} us (the lowest level "
        f"{SUSTAIN} readings in a row held, of {len(xs)}), {share:.0%} of them within "
        f"{ph.ratio}x of it" + (f", the others' median {slow:.1f} us" if slow else "")
    )
    if not ph.level_held():
        line += (
            f". This host never held its fast phase: the gauge held {ph.held():.1f} us at best "
            f"and dipped to {ph.dip():.1f} us, so rows are judged against the dip, and few "
            "will be fast: a slow host (host_units still carry its calls' costs)"
        )
    elif share < MOSTLY_SLOW:
        line += (
            ". A mostly slow host: expect few rows timed fast (timing_phase mixed or slow); "
            "host_units still carry its calls' costs"
        )
    return line


if __name__ == "__main__":
    import sys

    main(sys.argv[1:])
