"""The sweep dir as a whole: who holds it, what a resume may add to it, how to resume it.

The study's sweeper (study.sweep.sweeper) takes the dir's lock (one writer per sweep dir, held
to the end), refuses a resume with other fixed overrides than the sweep it would add to, and
writes ``sweep.yaml`` (the command, the fixed overrides, the size and the start). Its summary
at the end is study.rows.summary's.
"""

from __future__ import annotations

import fcntl
import os
import shlex
import sys
from pathlib import Path

from omegaconf import DictConfig, OmegaConf

from study.rows import identity
from study.rows.usage import fail


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


LOCK = ".sweep.lock"  # one writer per sweep dir: held by the sweep's main process to the end


def take(sweep_dir: Path, resume: bool):
    """The sweep dir's lock (an open file under ``flock``), for this process to hold until
    its summary. Another sweep that holds it, or a dir that already holds a sweep when this
    one is no resume, stops the run here, before anything is written in the dir."""
    sweep_dir.mkdir(parents=True, exist_ok=True)
    f = open(sweep_dir / LOCK, "a+")
    try:
        fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        f.seek(0)
        holder = f.read().strip() or "a process that did not say which"
        f.close()
        fail(
            f"{sweep_dir} is in use by another sweep ({holder}): wait for it to end, or start a "
            "new sweep in another dir (drop resume=true, or give another hydra.sweep.dir).",
            what="sweep dir in use",
        )
    if not resume and any(p.name != LOCK for p in sweep_dir.iterdir()):
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


def release(f) -> None:
    if f is not None and not f.closed:
        fcntl.flock(f, fcntl.LOCK_UN)
        f.close()


def command(*extra: str) -> str:
    args = [a for a in sys.argv[1:] if a != "resume=true"]
    return shlex.join(["python", "-m", "study.run", *args, *extra])


def interrupted(sweep_dir: Path, total: int) -> None:
    """Ctrl-C: one line, what finished, where, and the command that resumes."""
    from study.rows import io

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


def write_sweep_yaml(config: DictConfig, sweep_dir: Path, total: int, t0: float) -> None:
    """The sweep's command, fixed overrides, size and start (what a resume is checked against)."""
    fixed = identity.fixed_overrides(overrides(config))
    saved = {"command": command(), "overrides": fixed, "total": total, "t0": t0}
    OmegaConf.save(OmegaConf.create(saved), sweep_dir / "sweep.yaml")


def resume_command(sweep_dir: str) -> str:
    """The command that resumes this sweep, naming its dir: with several sweeps at once the
    newest dir (what resume=true picks) may be another's."""
    named = any(a.startswith("hydra.sweep.dir=") for a in sys.argv[1:])
    return command(*([] if named else [f"hydra.sweep.dir={sweep_dir}"]), "resume=true")
