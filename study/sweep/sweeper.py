"""The study's sweeper: the whole sweep, checked once, before any cell; summed up after the last.

Hydra calls ``sweep`` in the main process of a multirun (``hydra_plugins/study_plugins``
registers it; conf/hydra/sweeper/study.yaml is the default):

1. Expand the sweep as Hydra's basic sweeper does, each point once (``variant=linear,linear``
   runs one cell); ``repeats=N`` becomes a sweep over ``repeat=0..N-1`` that varies slowest:
   every cell once, then every cell again, each in a fresh process.
2. Compose each point through the app's config loader, as a launcher would, and check it
   (study.config.check), while the study's launcher starts its warm parent (torch imports
   meanwhile). Any bad point stops the run with one message listing every bad point, and exit
   status 2; no dir is made. The launcher takes the composed configs and composes nothing again.
3. Take the sweep dir (study.sweep.sweepdir): its lock, the resume check, ``sweep.yaml``.
4. Launch, then print the summary (study.rows.summary) and exit: 1 when a cell failed for a
   reason of the harness. Ctrl-C prints what finished and the command that resumes, and exits
   130; SIGTERM does the same, and exits 143.
"""

from __future__ import annotations

import signal
import sys
import time
from pathlib import Path

from hydra._internal.core_plugins.basic_sweeper import BasicSweeper

from study.config import check, rules
from study.config.bounds import MAX_REPEATS
from study.config.cell_config import to_plain
from study.config.usage import fail
from study.rows.summary import summary
from study.sweep import names, sweepdir
from study.sweep.apart import bad_subdir, indistinct, one_dir_each, subdirs
from study.workloads.check import point_error


def unique(pts: list[list[str]]) -> list[list[str]]:
    """Each point once, in order (a value given twice in a sweep makes the same point)."""
    seen: set[tuple[str, ...]] = set()
    return [p for p in pts if not (tuple(p) in seen or seen.add(tuple(p)))]


def eager_only(pts: list[list[str]]) -> bool:
    """Every point says ``compile=off`` (and no ``compile.mode``): no cell of the sweep compiles,
    so the warm parent leaves Inductor unimported (2.4 s on 2 cores). A wrong guess (an
    experiment that sets ``compile.mode`` under ``compile=off``) costs only speed."""
    return bool(pts) and all(
        "compile=off" in p and not any(o.startswith("compile.mode=") for o in p) for p in pts
    )


def repeated_values(parsed) -> list[str]:
    """``key=value`` for each value a sweep override (parsed by Hydra) gives more than once."""
    out = []
    for o in parsed:
        if o.is_sweep_override() and o.is_discrete_sweep():
            vals = list(o.sweep_string_iterator())
            out += [f"{o.get_key_element()}={v}" for v in dict.fromkeys(vals) if vals.count(v) > 1]
    return out


def bad_points(pts: list[list[str]], whys: list[str | None]) -> str | None:
    """One message listing every bad point of the sweep, or None when every point can run."""
    bad: dict[str, list[str]] = {}
    for p, why in zip(pts, whys, strict=True):
        if why:
            bad.setdefault(why, []).append(" ".join(p) or "(no overrides)")
    if not bad:
        return None
    n = len({w for where in bad.values() for w in where})
    lines = [f"{n} of {len(pts)} sweep points cannot run; no cell was started:"]
    for why, where in bad.items():
        at = "every point" if len(where) == len(pts) and len(pts) > 1 else "; ".join(where)
        lines.append(f"  - {why}  [{at}]")
    return "\n".join(lines)


class Terminated(KeyboardInterrupt):
    """SIGTERM (a scheduler's, ``kill``): ended as Ctrl-C is, with exit status 143."""


def on_sigterm(signum, frame) -> None:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)  # once: the cleanup runs to its end
    raise Terminated()


class Sweeper(BasicSweeper):
    @staticmethod
    def split_arguments(overrides, max_batch_size):
        """Hydra's batches, each point once."""
        batches = BasicSweeper.split_arguments(overrides, None)
        points = unique([p for batch in batches for p in batch])
        if max_batch_size is None:
            return [points]
        return [points[i : i + max_batch_size] for i in range(0, len(points), max_batch_size)]

    def _points(self, arguments: list[str]) -> list[list[str]]:
        from hydra.core.override_parser.overrides_parser import OverridesParser

        params = self._parse_config()
        n = int(self.config.get("repeats", 1) or 1)
        if n > MAX_REPEATS:  # before the points are spelled out: 10**8 of them fill memory
            fail(f"repeats={n} is not allowed: from 1 to {MAX_REPEATS} fresh processes a cell.")
        if n > 1:  # the slowest-varying key: Hydra varies the first one slowest
            params = [f"repeat={','.join(map(str, range(n)))}"] + [
                p for p in params if not p.startswith("repeat=")
            ]
        parser = OverridesParser.create(config_loader=self.hydra_context.config_loader)
        parsed = parser.parse_overrides(params + list(arguments))
        twice = repeated_values(parsed)
        if twice:
            print(f"[study] note: {', '.join(twice)} given more than once: each cell runs once.")
        return [p for batch in self.split_arguments(parsed, None) for p in batch]

    def _check(self, pts: list[list[str]], jobs: list[list[str]]) -> list:
        """The composed config of every point (``jobs``: as launched, with its run dir); stops
        the run (exit 2) if any cannot run, or two would share a run dir."""
        from omegaconf import flag_override

        launcher = self.launcher if hasattr(self.launcher, "variants") else None
        if launcher is not None:  # the warm parent imports torch while the points are composed
            launcher.start(eager=eager_only(pts))
        loader = self.hydra_context.config_loader
        configs, whys = [], []
        for p in jobs:
            try:
                configs.append(loader.load_sweep_config(self.config, list(p)))
                whys.append(None)
            except Exception as e:  # noqa: BLE001 - Hydra's own message names the bad override
                configs.append(None)
                whys.append(check.composition_error(e))
        self._leave_out_unplanned(pts, jobs, configs, whys)
        variants = launcher.variants if launcher is not None else None  # waited for when needed
        plain: list[dict | None] = [None] * len(configs)
        for i, cfg in enumerate(configs):
            if cfg is not None:
                cell = cfg.copy()
                with flag_override(cell, ["struct", "readonly"], [False, False]):
                    cell.pop("hydra", None)
                whys[i] = point_error(cell, variants)
                if not whys[i]:
                    plain[i] = to_plain(cell)
        if launcher is not None and not all(whys) and (why := launcher.slots_error(configs)):
            whys = [w or why for w in whys]
        dirs = subdirs(configs)
        self.dirs = [Path(d).name for d in dirs if not d.startswith("\0")]  # the summary's plan
        sweep_dir = Path(self.config.hydra.sweep.dir)
        message = (bad_points(pts, whys) or one_dir_each(pts, dirs)
                   or bad_subdir(pts, dirs, sweep_dir) or indistinct(pts, plain))  # fmt: skip
        if message:
            fail(message)
        return configs

    @staticmethod
    def _leave_out_unplanned(pts, jobs, configs, whys) -> None:
        """Drop, in place, the points a regime does not plan (rules.unplanned), said once."""
        out = [rules.unplanned(c) if c is not None else None for c in configs]
        if not any(out):
            return
        keep = [i for i, why in enumerate(out) if not why]
        print(f"[study] not planned: {sum(map(bool, out))} points, "
              f"{'; '.join(sorted({w for w in out if w}))}.", flush=True)  # fmt: skip
        for seq in {id(s): s for s in (pts, jobs, configs, whys)}.values():  # jobs may be pts
            seq[:] = [seq[i] for i in keep]

    def _jobs(self, pts: list[list[str]]) -> list[list[str]]:
        """Each point as it is launched: with its own run dir (study.sweep.names), unless
        ``hydra.sweep.subdir`` is the user's (then ``one_dir_each`` checks what it gives)."""
        from omegaconf import OmegaConf

        sweep = OmegaConf.to_container(self.config.hydra.sweep, resolve=False)
        if "study_job_dirname" not in str(sweep.get("subdir")):
            return pts
        exclude = list(self.config.hydra.job.config.override_dirname.exclude_keys)
        dirs = names.run_dirs(pts, exclude)
        return [[*p, f"hydra.sweep.subdir='{d}'"] for p, d in zip(pts, dirs, strict=True)]

    def sweep(self, arguments: list[str]):
        signal.signal(signal.SIGTERM, on_sigterm)
        try:
            pts = self._points(arguments)
            if self.config.resume:
                sweepdir.pick(self.config, pts)  # the dir named, or the newest of this sweep
            sweep_dir = Path(self.config.hydra.sweep.dir)
            jobs = self._jobs(pts)
            configs = self._check(pts, jobs)
        except (SystemExit, KeyboardInterrupt):
            self._abandon()
            raise
        except Exception as e:  # noqa: BLE001 - said in one line, and the sweep does not start
            self._abandon()
            fail(f"the sweep could not be checked ({type(e).__name__}: {e}); no cell was started")
        sweepdir.check_resume(self.config, sweep_dir)
        lock = sweepdir.take(sweep_dir, bool(self.config.resume))
        t0 = time.time()
        # written at once: a dir with a lock and no sweep.yaml cannot be resumed
        sweepdir.write_sweep_yaml(self.config, sweep_dir, pts, t0)
        try:
            failed = self._launch(jobs, configs, t0)
        except KeyboardInterrupt as e:
            self._abandon()
            sweepdir.interrupted(sweep_dir, len(pts))
            sys.exit(143 if isinstance(e, Terminated) else 130)
        code = summary(sweep_dir, t0, planned=self.dirs)
        sweepdir.finish(sweep_dir, lock)
        sys.exit(1 if failed else code)

    def _launch(self, pts, configs, t0: float) -> int:
        """Run every point; the number of jobs the harness itself failed (each said)."""
        if hasattr(self.launcher, "variants"):
            self.launcher.plan(pts, configs, t0)
        size = self.max_batch_size or len(pts) or 1
        failed = 0
        try:
            for i in range(0, len(pts), size):
                for ret in self.launcher.launch(pts[i : i + size], initial_job_idx=i):
                    if getattr(ret.status, "name", "") == "FAILED":
                        failed += 1
                        err = ret._return_value
                        print(f"[study] a job failed in the harness: {type(err).__name__}: {err}",
                              file=sys.stderr, flush=True)  # fmt: skip
        finally:
            self._abandon()  # the study's launcher: kill nothing left, end its warm parent
        return failed

    def _abandon(self) -> None:
        if hasattr(self.launcher, "close"):
            self.launcher.close()
