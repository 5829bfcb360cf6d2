"""The sweep's main process runs the cells: one warm parent, N slots, one child per cell.

``submit`` takes one composed cell config: it resolves it (study.sweep.rundir), keeps it if
``resume=true`` finds it done, else writes its ``cell.yaml``, waits for a free slot (hearing
exits meanwhile) and has the warm parent (study.sweep.warm_parent) fork the cell, pinned to the
slot's cores and, on CUDA, its GPU. Each cell's row, ``runs.csv`` and a progress line follow as
soon as it ends. A cell past its ``timeout_s`` (from its fork) is killed with its process
group. Slots are the scheduler's own: no two cells share a GPU or a group of cores.
"""

# Long: one class, the scheduler, and the process-group helpers only it uses.

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from study.cell import compiling
from study.cell.failures import died
from study.config import compile_targets
from study.config.cell_config import plain
from study.config.cores import allowed
from study.measure import pinning
from study.rows import io
from study.sweep import rundir
from study.sweep.warm_parent import WarmParent, WarmParentError
from study.workloads.variants import resolve as entry_of


def gpu_id(slot: int) -> str:
    """The slot-th GPU the sweep can see: its ``CUDA_VISIBLE_DEVICES`` entry, else ``slot``."""
    visible = [
        g.strip() for g in os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",") if g.strip()
    ]
    if visible and slot >= len(visible):
        raise ValueError(
            f"GPU slot {slot} but CUDA_VISIBLE_DEVICES lists {len(visible)} GPU(s): "
            f"run at most {len(visible)} cells at once (hydra.launcher.n_jobs) or widen "
            "CUDA_VISIBLE_DEVICES."
        )
    return visible[slot] if visible else str(slot)


def group_alive(pgid: int) -> bool:
    """Whether a live (not zombie) process of group ``pgid`` is left. Zombies hold no memory,
    and an orphan's zombie may never be reaped in a container whose init does not reap."""
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue  # exited while we looked
        if fields[0] != "Z" and int(fields[2]) == pgid:
            return True
    return False


def kill_groups(pgids: list[int], limit_s: float = 120.0) -> None:
    """SIGKILL what is left of each cell's process group (ncu, nsys), then wait until none of it
    lives (its slot is free only then); say so when a process outlives the wait."""
    for pgid in pgids:
        try:
            os.killpg(pgid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
    deadline = time.monotonic() + limit_s
    left = list(pgids)
    while left and time.monotonic() < deadline:
        left = [g for g in left if group_alive(g)]
        if left:
            time.sleep(0.05)
    for pgid in left:
        print(
            f"[study] warning: process group {pgid} still lives {limit_s:g} s after SIGKILL; "
            "the next cell on its slot may meet its memory",
            file=sys.stderr,
            flush=True,
        )


@dataclass
class Running:
    cell: rundir.Cell
    rid: int
    pid: int
    slot: int
    gpu: str | None
    asked: float  # perf_counter when the cell was submitted
    waited: float  # seconds it waited for its slot
    deadline: float  # perf_counter past which it is killed


def shared_cores(groups: list[list[int]]) -> int:
    """The number of cores when the slots' core groups overlap (fewer cores than slots), else 0."""
    seen = [c for g in groups for c in g]
    return len(set(seen)) if len(seen) != len(set(seen)) else 0


def cpu_shapes(configs) -> str:
    """How the CPU cells get their shapes: the family's small CPU shapes, or those ``shape.*``
    (or an experiment such as ``+experiment=tiny``) set."""
    given = {k for c in configs for k, v in c.shape.items() if v is not None}
    if not given:
        return "with the small CPU shapes (conf/family/*.yaml, key shapes.cpu)"
    keys = sorted(given)
    named = ", ".join(f"shape.{k}" for k in keys) if len(keys) <= 3 else f"{len(keys)} shape.* keys"
    return f"with the shapes given ({named})"


def _hms(s: float) -> str:
    s = int(round(s))
    return f"{s // 60}m{s % 60:02d}s" if s >= 60 else f"{s}s"


def _capped(resolved: dict) -> bool:
    """The cell's memory was capped (study.cell.worker.cap_host_memory): a CPU cell without
    ``cpu_mem_limit_gb=0``."""
    limit = resolved.get("cpu_mem_limit_gb")
    return resolved.get("device") == "cpu" and (limit is None or limit > 0)


class Scheduler:
    """Runs cells on ``slots`` slots from one warm parent. Use as a context manager: leaving it
    waits for the running cells, or (an exception, Ctrl-C) kills them."""

    def __init__(self, slots: int = 1, cores: str = "auto", prewarm: bool = True,
                 pycache: str = "auto", total: int = 0, t0: float = 0.0, make_parent=WarmParent,
                 eager: bool = False):  # fmt: skip
        """``make_parent(cores, prewarm=, pycache=, eager=)``: the warm parent (tests give a
        stand-in); ``eager``: no cell compiles (study.sweep.sweeper.eager_only)."""
        self.slots = max(1, int(slots))
        self._make_parent = make_parent
        self.house, self.groups = pinning.plan(allowed(), self.slots, str(cores))
        self._parent_args = {"prewarm": prewarm, "pycache": pycache, "eager": eager}
        self._parent: WarmParent | None = None
        self.running: dict[int, Running] = {}  # request id -> cell
        self.total, self.t0, self.done = total, t0 or time.time(), 0
        self.sweep_done = None  # a job of another launcher: count the sweep's finished cells
        self.statuses: list[str] = []

    def parent(self) -> WarmParent:
        """The warm parent, started on first use (the launcher asks early, so that it imports
        while the sweep is checked); a dead one is replaced, after its cells' rows."""
        if self._parent is not None and not self._parent.alive():
            self._lost(f"the warm parent died (exit code {self._parent.proc.poll()})")
        if self._parent is None:
            self._parent = self._make_parent(self.house, **self._parent_args)
        return self._parent

    @property
    def status(self) -> dict:
        return self.parent().status

    def say_device(self, configs) -> None:
        """One line when a ``device=auto`` cell will run on the CPU."""
        if shared := shared_cores(self.groups):
            print(f"[study] {self.slots} cells at once (hydra.launcher.n_jobs) on {shared} "
                  "core(s): cells share cores and time each other's load (timing_phase "
                  f"contended); set hydra.launcher.n_jobs<={shared} for clean timing.",
                  flush=True)  # fmt: skip
        auto = [c for c in configs if c is not None and plain(c.device) == "auto"]
        if auto and not self.status["cuda_available"]:
            print(f"[study] no CUDA GPU found: running on the CPU {cpu_shapes(auto)}; pass "
                  "device=cuda to require a GPU.", flush=True)  # fmt: skip

    def shape_keys(self, variant) -> list[str]:
        """A registered variant's shape keys from the warm parent (no torch here); a variant
        of your own (``variant.target``) from the registry, which imports it."""
        known = self.status.get("variants") or {}
        if not variant.get("target") and variant.name in known:
            return list(known[variant.name])
        return list(entry_of(variant).shape_keys)

    def cell(self, cfg, run_dir: Path, sweep_dir: Path) -> rundir.Cell:
        resolved = rundir.resolve(cfg, self.status["cuda_available"], self.shape_keys(cfg.variant))
        return rundir.Cell(Path(run_dir), Path(sweep_dir), resolved, int(cfg.repeat))

    def submit(self, cfg, run_dir: Path, sweep_dir: Path) -> None:
        """Run one cell (returns once it is forked, or kept by a resume)."""
        asked, asked_wall = time.perf_counter(), time.time()
        if not rundir.inside(run_dir, sweep_dir):
            raise rundir.Unsafe(
                f"run dir {run_dir} is outside the sweep dir {sweep_dir}: refusing to use it"
            )
        if any(r.cell.run_dir.resolve() == Path(run_dir).resolve() for r in self.running.values()):
            raise rundir.Unsafe(
                f"run dir {run_dir} is in use by a running cell: refusing to empty it"
            )
        cell = self.cell(cfg, run_dir, sweep_dir)
        if cfg.resume and cell.run_dir.exists():
            why = rundir.why_rerun(cell.run_dir, cell.config_hash)
            if why is None:
                rundir.keep(cell)
                self._ended(cell, "ok", "ok already, skipped (resume=true)")
                return
            if why != "not finished":
                print(f"[study] {cell.name}: running again (resume=true): {why}", flush=True)
        rundir.prepare(cell)
        t = time.perf_counter()
        while len(self.running) >= self.slots:
            self.poll(0.5)
        slot = min(set(range(self.slots)) - {r.slot for r in self.running.values()})
        waited = time.perf_counter() - t
        self._spawn(cell, slot, asked, waited, asked_wall + waited)

    def _env(self, cell: rundir.Cell, gpu: str | None) -> dict:
        r = cell.resolved
        env = compiling.cache_env(r["cache"], cell.run_dir, Path(r["out_root"]), r)
        env["PYTHONUNBUFFERED"] = "1"
        if r["device"] == "cuda" and self.status["cuda_available"]:
            # only its own GPU: CUDA sets up every device it sees (setup_s 0.62 -> 0.41 s, x2)
            env["CUDA_VISIBLE_DEVICES"] = gpu or gpu_id(0)
        return env

    def _spawn(self, cell, slot: int, asked: float, waited: float, asked_at: float) -> None:
        """Fork the cell on ``slot``; ``asked_at``: the wall-clock time it was asked for, after
        its wait for a slot (the child's ``prepare_s`` counts from there)."""
        r = cell.resolved
        gpu = gpu_id(slot) if self.slots > 1 and r["device"] == "cuda" else None
        kwargs = {"run_dir": str(cell.run_dir), "gpu": gpu, "asked_at": asked_at}
        mode = r["compile"]["mode"]  # a compiled CPU cell: the parent probes the ISAs first
        cpu_compile = (
            r["device"] == "cpu"
            and mode in compile_targets.TARGETS
            and compile_targets.get(mode).inductor
        )
        run = Running(
            cell, 0, 0, slot, gpu, asked, waited, time.perf_counter() + float(r["timeout_s"])
        )
        try:
            run.rid, run.pid = self.parent().spawn(
                "study.cell.worker:cell_main", kwargs, self._env(cell, gpu), self.groups[slot],
                cell.run_dir / "cell.log", cpu_compile=cpu_compile,
            )  # fmt: skip
        except (
            WarmParentError
        ) as e:  # gone, or wedged (no fork in 60 s): a new one for the next cell
            self._lost(str(e))
            why = ("crash", f"the warm parent failed to fork the cell: {e}")
            self._end([run], lambda _: why)
            return
        (cell.run_dir / ".cell.pid").write_text(f"{run.pid}\n")  # its process (and group) id
        self.running[run.rid] = run

    def poll(self, timeout: float) -> None:
        """Hear exits for up to ``timeout`` s; end every cell that exited or ran past its limit."""
        if not self.running:
            return
        try:
            self._parent.read(timeout)
        except WarmParentError as e:
            self._lost(str(e))
            return
        for rid in [r for r in self.running if r in self._parent.exits]:
            rc = self._parent.exits.pop(rid)
            how = f"killed by signal {signal.Signals(-rc).name}" if rc < 0 else f"exit code {rc}"
            self._end(
                [self.running.pop(rid)],
                lambda run, how=how: died(
                    how, rundir.tail(run.cell.run_dir / "cell.log"), _capped(run.cell.resolved)
                ),
            )
        now = time.perf_counter()
        for rid in [r for r, run in self.running.items() if now > run.deadline]:
            self._end([self.running.pop(rid)], lambda run: ("timeout", (
                f"cell exceeded timeout_s={run.cell.resolved['timeout_s']:g}s and was killed; "
                "raise timeout_s=... if it needs longer")))  # fmt: skip

    def _lost(self, why: str) -> None:
        """The warm parent died: each running cell gets its row (its own, if it wrote one; else
        a crash row); the next cell starts a new parent."""
        runs = list(self.running.values())
        self.running.clear()
        self._end(runs, lambda _: ("crash", f"the warm parent died while the cell ran: {why}"))
        if self._parent is not None:
            self._parent.close()
        self._parent = None

    def _end(self, runs: list[Running], failed) -> None:
        """Kill what is left of each cell's group, then write its row: its own if it wrote
        run.csv, else ``failed(run)`` (a status and a reason; None: no row, a resume runs it)."""
        kill_groups([run.pid for run in runs if run.pid])
        for run in runs:
            done = (run.cell.run_dir / "run.csv").exists()
            why = None if done else failed(run)
            if done or why:
                self._finish(run.cell, why, time.perf_counter() - run.asked, run.waited, run.gpu)
                (run.cell.run_dir / ".cell.pid").unlink(missing_ok=True)  # it has its row

    def _finish(self, cell, failed, wall: float, waited, gpu) -> None:
        """``wall``: from the cell's submission to its end, its wait for a slot included."""
        row = rundir.finish(cell, failed, wall, waited, gpu, report_wait=self.slots > 1)
        self._ended(cell, row["status"], rundir.summary_line(row, wall - (waited or 0.0)))

    def _ended(self, cell: rundir.Cell, status: str, what: str) -> None:
        """Rebuild ``runs.csv`` and print '[k/N] cell: what  elapsed, ~left'."""
        try:
            io.aggregate(cell.sweep_dir)
        except OSError as e:  # a full disk: the cell's own run.csv is what counts; next time
            print(f"[study] could not rebuild {cell.sweep_dir}/runs.csv ({e}); the next cell, "
                  f"or python -m study.rows.io {cell.sweep_dir}, tries again",
                  file=sys.stderr, flush=True)  # fmt: skip
        self.done += 1
        if self.sweep_done is not None:  # every job of the sweep, not just this one's cell
            self.done = self.sweep_done(cell.sweep_dir, self.t0)
        self.statuses.append(status)
        head = f"[{self.done}/{self.total}] " if self.total else ""
        el = time.time() - self.t0
        tail = f"  {_hms(el)} elapsed"
        if self.total and self.done < self.total:
            tail += f", ~{_hms(el / self.done * (self.total - self.done))} left"
        print(f"[study] {head}{cell.name}: {what}{tail}", flush=True)

    def wait(self) -> None:
        """Until every running cell has ended."""
        while self.running:
            self.poll(0.5)

    def close(self) -> None:
        """Kill what still runs and end the warm parent (Ctrl-C, or the sweep's end). A cell
        that wrote its row before it was killed keeps it, completed; the others have none, and
        a resume runs them again. Ctrl-C waits until this is done."""
        main = threading.current_thread() is threading.main_thread()
        old = signal.signal(signal.SIGINT, signal.SIG_IGN) if main else None
        try:
            runs = list(self.running.values())
            self.running.clear()
            self._end(runs, lambda _: None)
            if self._parent is not None:
                self._parent.close()
                self._parent = None
        finally:
            if old is not None:
                signal.signal(signal.SIGINT, old)

    def __enter__(self) -> Scheduler:
        return self

    def __exit__(self, kind, *_) -> None:
        try:
            if kind is None:
                self.wait()
        finally:
            self.close()


def run_one(cfg, run_dir: Path, sweep_dir: Path, **kwargs) -> str:
    """One cell with a scheduler of its own (a single run, a job of another launcher, tests);
    its status."""
    with Scheduler(**kwargs) as sched:
        sched.submit(cfg, Path(run_dir), Path(sweep_dir))
    return sched.statuses[-1]
