"""The sweep dir as a whole: who holds it, what a resume may add to it, how to resume it.

The study's sweeper (study.sweep.sweeper) takes the dir's lock (one writer per sweep dir, held
to the end), refuses a resume with other fixed overrides than the sweep it would add to, and
writes ``sweep.yaml`` (the command, the fixed overrides, the size and the start). Its summary
at the end is study.rows.summary's.
"""

from __future__ import annotations

import datetime as dt
import fcntl
import os
import secrets
import shlex
import sys
from pathlib import Path

from omegaconf import DictConfig, OmegaConf

from study.config import identity
from study.config.usage import fail
from study.rows import io
from study.sweep.names import key_of, varying

# (out_root, resume) -> the sweep dir's name; the sweeper sets resume's. Here, not in study.run:
# under ``python -m study.run`` that module is __main__, and a second copy would have its own.
SWEEP_IDS: dict = {}


def sweep_id(out_root: str, resume) -> str:
    """The sweep dir's name: a new one, the time and a random suffix (two sweeps started in
    the same second get two dirs). With resume=true the study's sweeper has set it (the newest
    dir of the same sweep: study.sweep.sweepdir.pick); for another sweeper it is the newest
    sweep dir (the sweep's callback refuses one without its sweep.yaml, or one another sweep
    holds)."""
    key = (out_root, bool(resume))
    if key not in SWEEP_IDS:
        root = Path(out_root) / "sweeps"
        existing = [p for p in root.iterdir() if p.is_dir()] if root.is_dir() else []
        # a dir with nothing but its lock is a start that stopped before its sweep.yaml
        existing = [p for p in existing if any(x.name != ".sweep.lock" for x in p.iterdir())]
        if resume and existing:  # the sweep last started or resumed (its sweep.yaml's age)
            SWEEP_IDS[key] = max(existing, key=age).name
        else:
            SWEEP_IDS[key] = new_sweep_id()
    return SWEEP_IDS[key]


def new_sweep_id() -> str:
    stamp = dt.datetime.now().strftime("%Y-%m-%d_%H-%M-%S")
    return f"{stamp}_{secrets.token_hex(2)}"


def age(d: Path) -> float:
    f = d / "sweep.yaml"
    return (f if f.exists() else d).stat().st_mtime


def overrides(config: DictConfig):
    from hydra.core.global_hydra import GlobalHydra
    from hydra.core.override_parser.overrides_parser import OverridesParser

    params = config.hydra.sweeper.get("params") or {}
    args = [f"{k}={v}" for k, v in params.items()] + list(config.hydra.overrides.task)
    gh = GlobalHydra.instance()  # its config loader expands glob(...) over a config group
    loader = gh.hydra.config_loader if gh.is_initialized() else None
    return OverridesParser.create(config_loader=loader).parse_overrides(args)


def check_resume(config: DictConfig, sweep_dir: Path) -> None:
    """Refuse to add to a sweep made with other fixed overrides, or one whose ``sweep.yaml``
    is gone or unreadable (its overrides cannot be checked then)."""
    saved = sweep_dir / "sweep.yaml"
    if not config.resume:
        return
    if not sweep_dir.exists():
        print(f"[study] resume=true: no sweep to resume; a new one in {sweep_dir}", flush=True)
        return
    if not saved.exists():
        fail(
            f"resume=true picked {sweep_dir}, but its sweep.yaml is missing, so its overrides "
            "cannot be checked against these: restore that file, or drop resume=true for a new "
            "sweep."
        )
    try:
        old = OmegaConf.to_container(OmegaConf.load(saved).get("overrides") or {})
        if not isinstance(old, dict):
            raise ValueError(f"'overrides' is a {type(old).__name__}, not a mapping")
    except Exception as e:  # noqa: BLE001 - YAML, OS or type: the file is what is wrong
        fail(
            f"{saved} is unreadable ({type(e).__name__}: {' '.join(str(e).split())[:200]}): "
            "restore it, or drop resume=true for a new sweep."
        )
    diffs = identity.changed_overrides(old, identity.fixed_overrides(overrides(config)))
    if diffs:
        fail(
            f"resume=true would add to {sweep_dir}, a sweep of another configuration: "
            + "; ".join(diffs)
            + ". Give the same fixed overrides to resume it, or drop resume=true for a new sweep."
        )


def points_of(pts: list[list[str]]) -> list[list[str]]:
    """A sweep's points as ``sweep.yaml`` keeps them, to tell one sweep from another: each
    point's overrides, sorted, without ``resume`` and without a harness key (``timeout_s``,
    ``cores``...) that has one value in every point (a resume may raise ``timeout_s``)."""
    differ = varying(pts)

    def kept(item: str) -> bool:
        k = key_of(item)
        return k != "resume" and (identity.measured(k) or k in differ)

    return sorted(sorted(i for i in p if kept(i)) for p in pts)


def same_sweep(saved_dir: Path, points: list[list[str]]) -> bool:
    """Whether ``saved_dir``'s sweep.yaml is this sweep: each of these points is one of its
    (a sweep.yaml from before points were kept: the same command)."""
    try:
        saved = OmegaConf.to_container(OmegaConf.load(saved_dir / "sweep.yaml"))
    except Exception:  # noqa: BLE001 - unreadable or absent: not a sweep this one can be
        return False
    if not isinstance(saved, dict):
        return False
    if "points" in saved:  # every point a resume into it added too
        return {tuple(p) for p in points} <= {tuple(p) for p in saved["points"] or []}
    return saved.get("command") == command()


def pick(config: DictConfig, pts: list[list[str]]) -> None:
    """The dir ``resume=true`` resumes, said before anything runs: the user's
    ``hydra.sweep.dir``, else the newest sweep dir whose sweep.yaml is this sweep (the newest of
    any sweep was picked, and another sweep's cells measured again there). None while there
    are others: refused (exit 2), saying how the newest differs; no sweep at all: a new one."""
    from omegaconf import read_write

    if named(config):
        if Path(str(config.hydra.sweep.dir)).exists():
            print(f"[study] resume=true: resuming {config.hydra.sweep.dir} (hydra.sweep.dir)",
                  flush=True)  # fmt: skip
        return
    root = Path(str(config.out_root)) / "sweeps"
    found = sorted((d for d in root.iterdir() if d.is_dir()), key=age) if root.is_dir() else []
    found = [d for d in found if any(x.name != LOCK for x in d.iterdir())]  # a start that stopped
    mine = [d for d in found if same_sweep(d, points_of(pts))]
    if found and not mine:  # the newest says how it differs; else it differs in its points
        check_resume(config, found[-1])
        fail(
            f"resume=true: no sweep in {root} has these points; the newest, {found[-1]}, is "
            "another sweep of the same fixed overrides. To add these points to it, name it "
            f"(hydra.sweep.dir={found[-1]} resume=true); for a new sweep, drop resume=true."
        )
    name = mine[-1].name if mine else new_sweep_id()
    SWEEP_IDS[(str(config.out_root), True)] = name
    with read_write(config.hydra):
        config.hydra.sweep.dir = str(root / name)
    if mine:
        print(f"[study] resume=true: resuming {root / name} (the newest sweep with these points)",
              flush=True)  # fmt: skip


def named(config: DictConfig) -> bool:
    """Whether ``hydra.sweep.dir`` is the user's (else the study's timestamped default)."""
    raw = OmegaConf.to_container(config.hydra.sweep, resolve=False).get("dir")
    return "study_sweep_id" not in str(raw)


LOCK = ".sweep.lock"  # one writer per sweep dir: held by the sweep's main process to the end


def take(sweep_dir: Path, resume: bool):
    """The sweep dir's lock (an open file under ``flock``), for this process to hold until
    its summary. Another sweep that holds it, or a dir that already holds a sweep when this
    one is no resume, stops the run here, before anything is written in the dir."""
    had_lock = (sweep_dir / LOCK).exists()  # a refused sweep leaves the dir as it found it
    try:
        sweep_dir.mkdir(parents=True, exist_ok=True)
        f = _lock(sweep_dir / LOCK)
    except BlockingIOError as e:
        holder = str(e.filename2 or "") or "a process that did not say which"
        fail(
            f"{sweep_dir} is in use by another sweep ({holder}): wait for it to end, or start a "
            "new sweep in another dir (drop resume=true, or give another hydra.sweep.dir).",
            what="sweep dir in use",
        )
    except OSError as e:  # read-only, or no space: nothing can be written there
        fail(f"cannot write in {sweep_dir} ({e.strerror}): give a writable hydra.sweep.dir or "
             "out_root", what="sweep dir unusable")  # fmt: skip
    if not resume and any(p.name != LOCK for p in sweep_dir.iterdir()):
        if not had_lock:  # made by this open: removed while held (a waiter opens it again)
            (sweep_dir / LOCK).unlink(missing_ok=True)
        release(f)
        fail(
            f"{sweep_dir} already holds a sweep: add resume=true to add to it, or give a fresh "
            "dir (another hydra.sweep.dir, or none for a new timestamped one).",
            what="sweep dir taken",
        )
    f.seek(0)
    f.truncate()
    f.write(f"pid {os.getpid()}: {command()}\n")
    f.flush()
    return f


def _lock(path: Path):
    """``path`` opened and locked; BlockingIOError (its holder in ``filename2``) when another
    process holds it. A lock file a finished sweep removed as this one opened it is opened
    again: two sweeps would otherwise each hold a lock, one of them on no file."""
    while True:
        f = open(path, "a+")
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            f.seek(0)
            holder = f.read().strip()
            f.close()
            raise BlockingIOError(11, "locked", str(path), None, holder) from None
        if path.exists() and os.fstat(f.fileno()).st_ino == path.stat().st_ino:
            return f
        release(f)


def finish(sweep_dir: Path, f) -> None:
    """A sweep's clean end: its lock files go (a resume needs none of them), then its lock."""
    for name in (".runs.lock", LOCK):
        (sweep_dir / name).unlink(missing_ok=True)
    release(f)


def release(f) -> None:
    if f is not None and not f.closed:
        fcntl.flock(f, fcntl.LOCK_UN)
        f.close()


def command(*extra: str) -> str:
    args = [a for a in sys.argv[1:] if a != "resume=true"]
    return shlex.join(["python", "-m", "study.run", *args, *extra])


def interrupted(sweep_dir: Path, total: int) -> None:
    """Ctrl-C: one line, what finished, where, and the command that resumes."""
    done = len(io.run_csvs(sweep_dir))
    print(
        f"[study] interrupted: {done} of {total or '?'} cells finished, rows in "
        f"{sweep_dir}/runs.csv; resume with: {resume_command(str(sweep_dir))}",
        file=sys.stderr,
        flush=True,
    )


def clock(sweep_dir: Path) -> tuple[int, float]:
    """(cells in the sweep, its start) from its ``sweep.yaml``; (0, 0.0) if none."""
    try:
        saved = OmegaConf.load(sweep_dir / "sweep.yaml")
        return int(saved.get("total") or 0), float(saved.get("t0") or 0)
    except Exception:  # noqa: BLE001 - unreadable (YAML, OS, types): the line just has no [k/N]
        return 0, 0.0


def write_sweep_yaml(config: DictConfig, sweep_dir: Path, pts: list[list[str]], t0: float) -> None:
    """The sweep's command, fixed overrides, size, points and start (what a resume is checked
    against)."""
    total = len(pts)
    fixed = identity.fixed_overrides(overrides(config))
    points = points_of(pts)
    if config.resume and (sweep_dir / "sweep.yaml").exists():  # a resume may add points to it
        saved_before = OmegaConf.to_container(OmegaConf.load(sweep_dir / "sweep.yaml"))
        old = saved_before.get("points")
        points = sorted({tuple(p) for p in [*(old or []), *points]})
        # a resume of some of the points never shrinks the sweep: the compare gate counts the
        # finished cells against this total
        total = max(total, int(saved_before.get("total") or 0))
    saved = {"command": command(), "overrides": fixed, "total": total, "t0": t0,
             "points": [list(p) for p in points]}  # fmt: skip
    OmegaConf.save(OmegaConf.create(saved), sweep_dir / "sweep.yaml")


def resume_command(sweep_dir: str) -> str:
    """The command that resumes this sweep, naming its dir: with several sweeps at once the
    newest dir (what resume=true picks) may be another's."""
    named = any(a.startswith("hydra.sweep.dir=") for a in sys.argv[1:])
    return command(*([] if named else [f"hydra.sweep.dir={sweep_dir}"]), "resume=true")
