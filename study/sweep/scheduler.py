"""The sweep's main process runs the cells: one warm parent, N slots, one child per cell.

``Scheduler.submit`` takes one composed cell config: it resolves it (study.sweep.rundir), keeps
it if ``resume=true`` finds it done, else writes its ``cell.yaml``, waits for a free slot and
asks the warm parent (study.sweep.server) to fork the cell, pinned to the slot's CPU cores
and, on CUDA, to the slot's GPU (``CUDA_VISIBLE_DEVICES`` before CUDA starts). While it waits
it hears exits, so each cell's row is finished (study.sweep.rundir.finish), ``runs.csv``
rebuilt and one progress line printed as soon as the cell ends. A cell past its
``timeout_s`` (counted from its fork, not from its wait for a slot) is killed with its whole
process group. Slots are the scheduler's own: nothing is claimed through files or the
environment, and no two cells share a slot (a GPU, or a group of cores).
"""

# Long: one class, the scheduler, and the process-group helpers only it uses.

from __future__ import annotations

import os
import signal
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from study.cell import compiling, pinning
from study.rows import io, targets
from study.rows.config import plain
from study.sweep import rundir
from study.sweep.server import Server, ServerError


def inductor(mode: str) -> bool:
    """Whether a cell of this compile target runs Inductor (on the CPU: its ISA probe first)."""
    return mode in targets.TARGETS and targets.get(mode).inductor


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


def kill_group(pgid: int, limit_s: float = 120.0) -> None:
    """Kill what is left of a cell's process group and wait until none of it lives (its slot
    is free only then)."""
    kill_groups([pgid], limit_s)


def kill_groups(pgids: list[int], limit_s: float = 120.0) -> None:
    """SIGKILL every group first, then wait for them all together; say so when a process
    outlives the wait (stuck in the driver)."""
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


def _main_thread() -> bool:
    import threading

    return threading.current_thread() is threading.main_thread()


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


def _hms(s: float) -> str:
    s = int(round(s))
    return f"{s // 60}m{s % 60:02d}s" if s >= 60 else f"{s}s"


class Scheduler:
    """Runs cells on ``slots`` slots from one warm parent. Use as a context manager: leaving it
    waits for the running cells, or (an exception, Ctrl-C) kills them."""

    def __init__(self, slots: int = 1, cores: str = "auto", prewarm: bool = True,
                 pycache: str = "auto", total: int = 0, t0: float = 0.0, make_server=Server,
                 eager: bool = False):  # fmt: skip
        """``make_server(cores, prewarm=, pycache=, eager=)``: the warm parent (tests give a
        stand-in); ``eager``: no cell compiles (study.sweep.sweeper.eager_only)."""
        self.slots = max(1, int(slots))
        self._make_server = make_server
        self.house, self.groups = pinning.plan(pinning.allowed(), self.slots, str(cores))
        self._server_args = {"prewarm": prewarm, "pycache": pycache, "eager": eager}
        self._server: Server | None = None
        self.running: dict[int, Running] = {}  # request id -> cell
        self.total, self.t0, self.done = total, t0 or time.time(), 0
        self.sweep_done = None  # a job of another launcher: count the sweep's finished cells
        self.statuses: list[str] = []

    # -- the warm parent ------------------------------------------------------------------
    def server(self) -> Server:
        """The warm parent, started on first use; a dead one is replaced (after its cells'
        rows are written)."""
        if self._server is not None and not self._server.alive():
            self._lost(f"the cell server died (exit code {self._server.proc.exitcode})")
        if self._server is None:
            self._server = self._make_server(self.house, **self._server_args)
        return self._server

    def start(self) -> None:
        """Start the warm parent now, so that it imports while the sweep is checked."""
        self.server()

    @property
    def status(self) -> dict:
        return self.server().status

    def gpus(self) -> int:
        return int(self.status["device_count"])

    # -- cells ----------------------------------------------------------------------------
    def shape_keys(self, variant) -> list[str]:
        """The shape keys of a registered variant from the warm parent (no torch here); a
        variant of your own (``variant.target``) from the registry, which imports it."""
        known = self.status.get("variants") or {}
        if not variant.get("target") and variant.name in known:
            return list(known[variant.name])
        from study.workloads.variants import resolve as entry_of

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
        if plain(cfg.isolation) == "inline":
            self._inline(cell, asked)
            return
        t = time.perf_counter()
        slot = self._free_slot()
        waited = time.perf_counter() - t
        self._spawn(cell, slot, asked, waited, asked_wall + waited)

    def _env(self, cell: rundir.Cell, gpu: str | None) -> dict:
        r = cell.resolved
        env = compiling.cache_env(r["cache"], cell.run_dir, Path(r["out_root"]), r)
        env["PYTHONUNBUFFERED"] = "1"
        if r["device"] == "cuda" and self.status["cuda_available"]:
            # only its own GPU: CUDA sets up every device it sees (setup_s 0.62 -> 0.41 s on
            # the two-GPU host)
            env["CUDA_VISIBLE_DEVICES"] = gpu or gpu_id(0)
        return env

    def _spawn(self, cell, slot: int, asked: float, waited: float, asked_at: float) -> None:
        """Fork the cell on ``slot``; ``asked_at``: the wall-clock time it was asked for, after
        its wait for a slot (the child's ``prepare_s`` counts from there)."""
        gpu = gpu_id(slot) if self.slots > 1 and cell.resolved["device"] == "cuda" else None
        kwargs = {"run_dir": str(cell.run_dir), "gpu": gpu, "asked_at": asked_at}
        try:
            r = cell.resolved
            rid, pid = self.server().spawn(
                "study.cell.worker:cell_main", kwargs, self._env(cell, gpu), self.groups[slot],
                cell.run_dir / "cell.log", cpu_compile=r["device"] == "cpu" and inductor(r["compile"]["mode"]),
            )  # fmt: skip
        except ServerError as e:  # gone, or wedged (no fork in 60 s): a new one for the next cell
            self._lost(str(e))
            wall = time.perf_counter() - asked
            self._finish(
                cell, ("crash", f"the cell server failed to fork the cell: {e}"), wall, waited, gpu
            )
            return
        (cell.run_dir / ".cell.pid").write_text(f"{pid}\n")  # the cell's process (and group) id
        limit = float(cell.resolved["timeout_s"])
        self.running[rid] = Running(
            cell, rid, pid, slot, gpu, asked, waited, time.perf_counter() + limit
        )

    def _free_slot(self) -> int:
        while True:
            busy = {r.slot for r in self.running.values()}
            free = [s for s in range(self.slots) if s not in busy]
            if free:
                return free[0]
            self.poll(0.5)

    def poll(self, timeout: float) -> None:
        """Hear exits for up to ``timeout`` s; finish every cell that ended or ran past its limit."""
        if not self.running:
            return
        try:
            self._server.read(timeout)
        except ServerError as e:
            self._lost(str(e))
            return
        for rid in [r for r in self.running if r in self._server.exits]:
            self._ended_process(self.running.pop(rid), self._server.exits.pop(rid))
        now = time.perf_counter()
        for rid in [r for r, run in self.running.items() if now > run.deadline]:
            run = self.running.pop(rid)
            kill_group(run.pid)
            limit = run.cell.resolved["timeout_s"]
            why = None if (run.cell.run_dir / "run.csv").exists() else (
                "timeout",
                f"cell exceeded timeout_s={limit:g}s and was killed; raise timeout_s=... if it needs longer",
            )  # fmt: skip
            self._finish(run.cell, why, now - run.asked, run.waited, run.gpu)

    def _ended_process(self, run: Running, rc: int) -> None:
        kill_group(run.pid)  # leftovers of its group (ncu, nsys): the slot is free only then
        why = None
        if not (run.cell.run_dir / "run.csv").exists():
            how = f"killed by signal {signal.Signals(-rc).name}" if rc < 0 else f"exit code {rc}"
            log = rundir.tail(run.cell.run_dir / "cell.log")
            why = ("crash", f"cell process died ({how}) before writing its row; log: {log}")
        self._finish(run.cell, why, time.perf_counter() - run.asked, run.waited, run.gpu)

    def _lost(self, why: str) -> None:
        """The warm parent died: each running cell gets its row (its own, if it wrote one
        before the parent died; else a crash row); the next cell starts a new parent."""
        runs = list(self.running.values())
        self.running.clear()
        kill_groups([run.pid for run in runs])
        for run in runs:
            done = (run.cell.run_dir / "run.csv").exists()
            failed = None if done else ("crash", f"the cell server died while the cell ran: {why}")
            self._finish(run.cell, failed, time.perf_counter() - run.asked, run.waited, run.gpu)
        if self._server is not None:
            self._server.close()
        self._server = None

    def _inline(self, cell: rundir.Cell, asked: float) -> None:
        """Debug only (``isolation=inline``): the cell in this process. Dynamo/CUDA state is
        not isolated."""
        from study.cell import worker

        saved = dict(os.environ)
        os.environ.update(self._env(cell, None))
        try:
            worker.main(cell.run_dir)
        finally:
            os.environ.clear()
            os.environ.update(saved)
        why = None if (cell.run_dir / "run.csv").exists() else ("crash", "inline cell wrote no row")
        self._finish(cell, why, time.perf_counter() - asked, None, None)

    def _finish(self, cell, failed, wall: float, waited, gpu) -> None:
        """``wall``: from the cell's submission to its end, its wait for a slot included."""
        row = rundir.finish(cell, failed, wall, waited, gpu, report_wait=self.slots > 1)
        self._ended(cell, row["status"], rundir.summary_line(row, wall - (waited or 0.0)))

    def _ended(self, cell: rundir.Cell, status: str, what: str) -> None:
        """Rebuild ``runs.csv`` and print '[k/N] cell: what  elapsed, ~left'."""
        io.aggregate(cell.sweep_dir)
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

    # -- the end --------------------------------------------------------------------------
    def wait(self) -> None:
        """Until every running cell has ended."""
        while self.running:
            self.poll(0.5)

    def close(self) -> None:
        """Kill what still runs and end the warm parent (Ctrl-C, or the sweep's end). A cell
        that wrote its row before it was killed keeps it, completed; the others have none, and
        a resume runs them again. Ctrl-C waits until this is done."""
        old = signal.signal(signal.SIGINT, signal.SIG_IGN) if _main_thread() else None
        try:
            runs = list(self.running.values())
            self.running.clear()
            kill_groups([run.pid for run in runs])
            for run in runs:
                if (run.cell.run_dir / "run.csv").exists():
                    wall = time.perf_counter() - run.asked
                    self._finish(run.cell, None, wall, run.waited, run.gpu)
            if self._server is not None:
                self._server.close()
                self._server = None
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
