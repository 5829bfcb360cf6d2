"""The study's sweeper: the whole sweep, checked once, before any cell; summed up after the last.

Hydra calls ``sweep`` in the main process of a multirun (``hydra_plugins/study_plugins``
registers it; conf/hydra/sweeper/study.yaml is the default):

1. Expand the sweep as Hydra's basic sweeper does, each point once (``variant=linear,linear``
   runs one cell); ``repeats=N`` becomes a sweep over ``repeat=0..N-1`` that varies slowest:
   every cell once, then every cell again, each in a fresh process.
2. Compose each point through the app's config loader, as a launcher would, and check it
   (study.sweep.validate). Any bad point stops the run with one message listing every bad
   point, and exit status 2; no dir is made. The study's launcher starts its warm parent
   first, so torch imports while the points are composed, and takes the composed configs.
3. Take the sweep dir (study.sweep.sweepdir): its lock, the resume check, ``sweep.yaml``.
4. Launch, then print the summary and exit: 1 when a cell failed for a reason of the harness.
   Ctrl-C prints what finished and the command that resumes, and exits 130.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from hydra._internal.core_plugins.basic_sweeper import BasicSweeper


class Sweeper(BasicSweeper):
    @staticmethod
    def split_arguments(overrides, max_batch_size):
        """Hydra's batches, each point once."""
        from study.sweep.validate import unique

        batches = BasicSweeper.split_arguments(overrides, None)
        points = unique([p for batch in batches for p in batch])
        if max_batch_size is None:
            return [points]
        return [points[i : i + max_batch_size] for i in range(0, len(points), max_batch_size)]

    def _points(self, arguments: list[str]) -> list[list[str]]:
        from hydra.core.override_parser.overrides_parser import OverridesParser

        from study.sweep.validate import repeated_values

        params = self._parse_config()
        n = int(self.config.get("repeats", 1) or 1)
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

    def _check(self, pts: list[list[str]]) -> list:
        """The composed config of every point; stops the run (exit 2) if any cannot run."""
        from omegaconf import flag_override

        from study.rows.usage import fail
        from study.sweep import validate

        launcher = self.launcher if hasattr(self.launcher, "variants") else None
        if launcher is not None:  # the warm parent imports torch while the points are composed
            launcher.start(eager=validate.eager_only(pts))
        loader = self.hydra_context.config_loader
        configs, whys = [], []
        for p in pts:
            try:
                configs.append(loader.load_sweep_config(self.config, list(p)))
                whys.append(None)
            except Exception as e:  # noqa: BLE001 - Hydra's own message names the bad override
                configs.append(None)
                whys.append(validate.composition_error(e))
        variants = launcher.variants if launcher is not None else None  # waited for when needed
        for i, cfg in enumerate(configs):
            if cfg is not None:
                cell = cfg.copy()
                with flag_override(cell, ["struct", "readonly"], [False, False]):
                    cell.pop("hydra", None)
                whys[i] = validate.point_error(cell, variants)
        validate.say_renamed([c for c in configs if c is not None])
        if launcher is not None and not all(whys) and (why := launcher.slots_error(configs)):
            whys = [w or why for w in whys]
        message = validate.bad_points(pts, whys)
        if message:
            fail(message)
        return configs

    def sweep(self, arguments: list[str]):
        from study.rows.usage import fail
        from study.sweep import sweepdir

        sweep_dir = Path(self.config.hydra.sweep.dir)
        try:
            sweepdir.refuse_if_held(sweep_dir)  # before the check starts anything
            pts = self._points(arguments)
            configs = self._check(pts)
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
        sweepdir.write_sweep_yaml(self.config, sweep_dir, len(pts), t0)
        try:
            failed = self._launch(pts, configs, t0)
        except KeyboardInterrupt:
            self._abandon()
            from study.rows import io

            sweepdir.interrupted(sweep_dir, len(io.run_csvs(sweep_dir)), len(pts))
            sys.exit(130)
        code = sweepdir.summary(sweep_dir)
        sweepdir.release(lock)
        sys.exit(1 if failed else code)

    def _launch(self, pts, configs, t0: float) -> int:
        """Run every point; the number of jobs the harness itself failed (each said)."""
        if hasattr(self.launcher, "variants"):
            self.launcher.plan(pts, configs, t0)
        size = self.max_batch_size or len(pts) or 1
        failed = 0
        try:
            failed = self._batches(pts, size)
        finally:
            self._abandon()  # the study's launcher: kill nothing left, end its warm parent
        return failed

    def _batches(self, pts, size: int) -> int:
        failed = 0
        for i in range(0, len(pts), size):
            for ret in self.launcher.launch(pts[i : i + size], initial_job_idx=i):
                if getattr(ret.status, "name", "") == "FAILED":
                    failed += 1
                    err = ret._return_value
                    print(f"[study] a job failed in the harness: {type(err).__name__}: {err}",
                          file=sys.stderr, flush=True)  # fmt: skip
        return failed

    def _abandon(self) -> None:
        if hasattr(self.launcher, "close"):
            self.launcher.close()
