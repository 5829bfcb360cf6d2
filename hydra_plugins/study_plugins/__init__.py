"""The study's Hydra plugins, registered here because Hydra takes plugins only from the
``hydra_plugins`` namespace. The code is in study/sweep: the sweeper (the whole sweep, checked
once, and its summary) and the launcher (every cell from one warm parent, on N slots)."""

from __future__ import annotations

from study.sweep import launcher as _launcher
from study.sweep import sweeper as _sweeper


class StudySweeper(_sweeper.Sweeper):
    """conf/hydra/sweeper/study.yaml."""


class StudyLauncher(_launcher.Launcher):
    """conf/hydra/launcher/study.yaml and gpus.yaml."""
