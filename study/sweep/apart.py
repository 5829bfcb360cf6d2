"""Each sweep point a cell of its own: its own run dir below the sweep dir, and a row that tells it
apart from every other point's. The sweeper (study.sweep.sweeper) checks these before any cell
runs; a point that breaks one stops the sweep with one line naming it (exit 2)."""

from __future__ import annotations

from pathlib import Path

from study.config.identity import config_hash
from study.rows.io import FORMULA
from study.sweep import names


def subdirs(configs: list) -> list[str]:
    """Each point's run dir, ``hydra.sweep.subdir`` resolved as the launcher will; a point that
    did not compose, or whose dir resolves only inside its job, gets a name no dir has."""
    import copy

    from omegaconf import OmegaConf, open_dict, read_write

    dirs = []
    for i, cfg in enumerate(configs):
        if cfg is None:
            dirs.append(f"\0{i}")  # said as a bad point already
            continue
        job = copy.deepcopy(cfg)
        with read_write(job), open_dict(job):
            job.hydra.job.num = job.hydra.job.id = i
            try:
                dirs.append(str(OmegaConf.select(job, "hydra.sweep.subdir")))
            except Exception:  # noqa: BLE001 - resolvable only inside the job: Hydra's to judge
                dirs.append(f"\0{i}")
    return dirs


def one_dir_each(pts: list[list[str]], dirs: list[str]) -> str | None:
    """Why two points would share a run dir (one would empty it while the other runs, and take
    the other's row), or None."""
    both = names.shared(dirs)
    if both is None:
        return None
    a, b = (" ".join(pts[i]) or "(no overrides)" for i in both)
    return (
        f"two sweep points would share the run dir {dirs[both[0]]!r}: [{a}] and [{b}]; no cell "
        "was started. Give hydra.sweep.subdir a value that differs between them (or drop it)."
    )


def bad_subdir(pts: list[list[str]], dirs: list[str], sweep_dir: Path) -> str | None:
    """Why a point's ``hydra.sweep.subdir`` cannot hold its cell, or None: the sweep dir itself
    (``.``, ``''``: the cell's row then took the sweep's place), a dir outside it (refused
    before anything is made there), or a name a CSV writes with a leading ``'``
    (study.rows.io.FORMULA: the row's run_id no longer named its dir, read "no row")."""
    root = sweep_dir.resolve()
    for p, d in zip(pts, dirs, strict=True):
        if d.startswith("\0"):
            continue
        run_dir = (sweep_dir / d).resolve()
        why = ("is the sweep dir itself" if run_dir == root
               else "is outside the sweep dir" if root not in run_dir.parents
               else f"starts with {run_dir.name[0]!r}" if run_dir.name.startswith(FORMULA)
               else None)  # fmt: skip
        if why:
            return (f"hydra.sweep.subdir={d!r} {why} [{' '.join(p) or '(no overrides)'}]; no "
                    "cell was started. Give a relative name below the sweep dir that starts "
                    "with a letter or digit (or drop hydra.sweep.subdir).")  # fmt: skip
    return None


# Keys left out of a cell's identity (study.config.identity.NOT_IDENTITY) that can change its
# outcome or its row: two points differing only in one would be one cell to the analysis.
UNTOLD = ("cpu_mem_limit_gb", "timeout_s", "cores", "expect", "calibration_file")


def indistinct(pts: list[list[str]], cells: list[dict | None]) -> str | None:
    """Why two points would be one cell to every reader of the rows (the same config_hash and
    repeat, differing only in UNTOLD: ``cpu_mem_limit_gb=4,0.001`` made a crash and an ok row
    of one cell), or None."""
    seen: dict[tuple, int] = {}
    for i, c in enumerate(cells):
        if c is None:
            continue
        at = seen.setdefault((config_hash(c), c.get("repeat", 0)), i)
        keys = [k for k in UNTOLD if c.get(k) != cells[at].get(k)]
        if at != i and keys:
            a, b = (" ".join(pts[j]) or "(no overrides)" for j in (at, i))
            return (f"two sweep points differ only in {', '.join(keys)}, which no row records: "
                    f"[{a}] and [{b}] would read as one cell; no cell was started. Run each "
                    "value as a sweep of its own.")  # fmt: skip
    return None
