"""The study's sweeper: Hydra's basic sweeper, without composing every job a second time.

(Hydra takes plugins only from the ``hydra_plugins`` namespace, hence this package.)

Before a batch, Hydra's ``BasicSweeper`` composes each of its jobs to catch composition errors
(``validate_batch_is_legal``). The study's callback (study.callbacks.Sweep, through
study.sweep_check) has by then composed every point of the sweep with the same config loader
and the same overrides, and checked far more (values, unknown keys, Inductor keys): composing
them all again cost 3-4 s on a 35-cell sweep (H200 x2 VM), before the first cell, on one GPU
and on two. It skips it only when the callback says it checked this sweep
(``study.callbacks.CHECKED``), and runs Hydra's check otherwise. ``hydra/sweeper=basic``
(conf/hydra/sweeper/checked.yaml is the default) restores Hydra's own.
"""

from __future__ import annotations

from hydra._internal.core_plugins.basic_sweeper import BasicSweeper


class CheckedSweeper(BasicSweeper):
    @staticmethod
    def split_arguments(overrides, max_batch_size):
        """Hydra's batches, each point once: ``variant=linear,linear`` runs one cell (Hydra
        ran it twice, into one run dir). The sweep's callback says so in one line."""
        from study.sweep_check import unique

        batches = BasicSweeper.split_arguments(overrides, None)
        points = unique([p for batch in batches for p in batch])
        if max_batch_size is None:
            return [points]
        return [points[i : i + max_batch_size] for i in range(0, len(points), max_batch_size)]

    def validate_batch_is_legal(self, batch) -> None:
        """Done for every point by the study's callback at the start of the sweep, if it ran."""
        from study import callbacks

        if callbacks.CHECKED:
            return None
        return super().validate_batch_is_legal(batch)
