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
    def validate_batch_is_legal(self, batch) -> None:
        """Done for every point by the study's callback at the start of the sweep, if it ran."""
        from study import callbacks

        if callbacks.CHECKED:
            return None
        return super().validate_batch_is_legal(batch)
