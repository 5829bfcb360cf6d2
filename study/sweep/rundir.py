"""A cell's run dir, as the sweep sees it: what goes in before the cell runs, and the row after.

Before: the cell's config as it will run (``device=auto`` and the family's default shape
resolved) goes to ``cell.yaml`` with its ``config_hash``; with ``resume=true`` a cell whose
``run.csv`` is ``ok`` and carries the same ``config_hash`` is kept, and any other runs again,
with a line that says why. After: the run dir always ends with a ``run.csv``, the cell's own
or one written here (status ``timeout`` or ``crash``: exit code or signal, and the tail of the
cell's log), with the sweep's own figures (``overhead_s``, ``gpu_wait_s``). No torch here.
"""

from __future__ import annotations

import shutil
import socket
from dataclasses import dataclass
from pathlib import Path

from omegaconf import OmegaConf

from study.config.cell_config import first_row, to_plain
from study.config.env import boot_id
from study.config.identity import config_hash, eager_hash
from study.rows import io
from study.rows.expect import block_of

STALE = ("run.csv", "kernels.csv", "autotune.csv", "ncu.csv", "error.txt", "trace.json.gz")
# The phases a cell measures; everything else of its wall time is the sweep's overhead.
MEASURED = ("first_call_s", "check_s", "measure_s", "profile_s")


class Unsafe(ValueError):
    """A run dir outside its sweep dir: the sweep refuses to write or delete there."""


def inside(path: Path, root: Path) -> bool:
    path, root = Path(path).resolve(), Path(root).resolve()
    return path == root or root in path.parents


def resolve(cfg, cuda: bool, shape_keys: list[str]) -> dict:
    """The cell's config as it will run: plain data, device and the family's shape resolved."""
    d = to_plain(cfg)
    if d["device"] == "auto":
        d["device"] = "cuda" if cuda else "cpu"
    sw = d.get("shape_sweep") or {}
    if sw.get("key"):  # a shape sweep in one process starts at its first shape
        d["shape"][sw["key"]] = sw["sizes"][0]
    shapes = d["family"].get("shapes", {})
    base = shapes.get(d["device"]) or shapes.get("cpu")
    for k in shape_keys:
        if d["shape"].get(k) is None and base and base.get(k) is not None:
            d["shape"][k] = base[k]
    return d


@dataclass
class Cell:
    """One cell of the sweep: where it runs, its resolved config, and the repeat it is."""

    run_dir: Path
    sweep_dir: Path
    resolved: dict
    repeat: int = 0

    @property
    def name(self) -> str:
        return self.run_dir.name

    @property
    def config_hash(self) -> str:
        return config_hash(self.resolved)


def why_rerun(run_dir: Path, want: str) -> str | None:
    """None when the finished cell in ``run_dir`` can be kept, else why it runs again."""
    p = run_dir / "run.csv"
    if not p.exists():
        return "not finished"
    try:
        row = io.read_row(p)
    except io.Incomplete as e:
        return f"its row was incomplete: {e}"
    if not row.get("config_hash"):
        return "its row was incomplete: it has no config_hash (the sweep stopped as it wrote it)"
    if row["config_hash"] != want:
        return f"its configuration changed (config_hash {row['config_hash']} -> {want})"
    if row["status"] != "ok":
        return f"status {row['status']}"
    try:
        io.read_cell(p)  # its kernels and shapes go into the sweep's tables too
    except io.Incomplete as e:
        return str(e)
    return None


def keep(cell: Cell) -> None:
    """A resumed cell found finished: predictions are no part of a cell's identity, so the ones
    this resume asks for replace those of the run that made it."""
    row = io.read_row(cell.run_dir / "run.csv")
    row["expect"] = block_of(cell.resolved)
    io.write_csv(cell.run_dir / "run.csv", [row], "runs")


def clear(run_dir: Path, sweep_dir: Path) -> None:
    """Everything an earlier run of this cell left: its rows, trace, logs, generated code and
    private compile cache (a resume after Ctrl-C or kill -9 found a half-built cache, and its
    cold cell read 2 cache hits). A run dir that is the sweep dir (a single run) keeps the
    sweep's own files."""
    if run_dir.resolve() == sweep_dir.resolve():
        for stale in STALE:
            (run_dir / stale).unlink(missing_ok=True)
        for d in ("generated", ".compile_cache"):
            shutil.rmtree(run_dir / d, ignore_errors=True)
        return
    for p in run_dir.iterdir():
        if p.is_dir() and not p.is_symlink():
            shutil.rmtree(p)
        else:
            p.unlink(missing_ok=True)


def prepare(cell: Cell) -> None:
    """A clean run dir holding the cell's ``cell.yaml`` (written atomically)."""
    if not inside(cell.run_dir, cell.sweep_dir):
        raise Unsafe(
            f"run dir {cell.run_dir} is outside the sweep dir {cell.sweep_dir}: refusing to use it"
        )
    cell.run_dir.mkdir(parents=True, exist_ok=True)
    clear(cell.run_dir, cell.sweep_dir)
    tmp = cell.run_dir / ".cell.yaml.tmp"
    OmegaConf.save(OmegaConf.create(cell.resolved), tmp)
    tmp.replace(cell.run_dir / "cell.yaml")


def tail(path: Path, n: int = 800) -> str:
    """The last lines of a log, on one line."""
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return ""
    lines = [ln for ln in text.strip().splitlines() if ln.strip()]
    return " | ".join(lines[-6:])[-n:]


def _num(v):
    try:
        return float(v)
    except (TypeError, ValueError):
        return None


def overhead(row: dict, wall: float) -> float:
    """Wall time minus the measured phases: the fork, the cell's setup (CUDA context, inputs),
    the harvest of generated code, the rows. A cell's extra passes (tensors saved for backward,
    a shape sweep: ``extra_s``) are measurements too."""
    return wall - sum(_num(row.get(k)) or 0.0 for k in (*MEASURED, "extra_s"))


def finish(cell: Cell, failed, wall: float, waited: float | None, gpu, report_wait: bool = True):
    """The cell's row, completed and written: its own, or (``failed``: status and reason) one
    made from its config. ``wall``: from asking for the cell to its end; ``waited``: of that,
    for a slot (``gpu_wait_s`` when ``report_wait``: with several slots)."""
    waited = waited or 0.0
    if failed is not None:
        row = first_row(OmegaConf.create(cell.resolved), cell.name)
        row.update(status=failed[0], reason=failed[1], wall_s=wall - waited)
        row["host"] = socket.gethostname()
        row["boot_id"] = boot_id()
        row.update({k: v for k, v in cell.resolved["shape"].items() if v is not None})
        row["gpu_index"] = gpu  # a timeout or crash on a GPU slot still names its GPU
    else:
        row = io.read_csv(cell.run_dir / "run.csv")[0]
    row.update(
        config_hash=cell.config_hash,
        eager_hash=eager_hash(cell.resolved),
        repeat=cell.repeat,
        gpu_wait_s=waited if report_wait else None,
        overhead_s=overhead(row, wall - waited),
    )
    io.write_csv(cell.run_dir / "run.csv", [row], "runs")
    if cell.resolved["cache"] == "cold":
        shutil.rmtree(cell.run_dir / ".compile_cache", ignore_errors=True)
    shutil.rmtree(cell.run_dir / ".start", ignore_errors=True)  # a killed primer's caches
    return row


def summary_line(row: dict, wall: float) -> str:
    """'ok, 60.6 us/call (host 56.2, device 58.5), 2 kernels/step [3.3s]' for an eager cell; a
    compiled cell with paired blocks gives their two figures, the ones its speedup comes from:
    'ok, 560.0 -> 609.0 us/call eager -> compiled (paired), 3 kernels/step, 0.92x paired
    [0.90-0.94]'. The host and device us per call where measured (CUDA), and the host's phase
    when the figures were not timed in its fast phase (``timing_phase`` mixed, slow or
    contended)."""
    lat = _num(row.get("latency_median_us"))
    pe, pc = _num(row.get("eager_latency_paired_us")), _num(row.get("compiled_latency_paired_us"))
    s = row["status"]
    if lat:
        host, dev = _num(row.get("host_us")), _num(row.get("device_time_us"))
        parts = [f"host {host:.1f}" if host else "", f"device {dev:.1f}" if dev else ""]
        inner = ", ".join(p for p in parts if p)
        k = row.get("kernels_per_step")
        if pe and pc:  # the paired blocks' us, never the calls timed apart beside the speedup
            s += f", {pe:.1f} -> {pc:.1f} us/call eager -> compiled (paired)"
            s += f" (compiled: {inner})" if inner else ""
        else:
            s += f", {lat:.1f} us/call" + (f" ({inner})" if inner else "")
        s += f", {k or '?'} {'kernel' if _num(k) == 1 else 'kernels'}/step"
    sp, lo, hi = (_num(row.get(k)) for k in ("speedup_paired", "speedup_ci_low", "speedup_ci_high"))
    if sp:
        s += f", {sp:.2f}x paired [{lo:.2f}-{hi:.2f}]"
    phase = row.get("timing_phase")
    if lat and phase and phase != "fast":
        s += f", host phase {phase}"
    if row.get("reason"):
        s += f" ({row['reason'][:160]})"
    return s + f" [{wall:.1f}s]"
