"""The exceptions that cross the study's folders, in one leaf that imports nothing of the project.

``ConfigError``: a config that cannot run (the config checks and the workloads raise it).
``Unsupported``: a cell this machine cannot run (the workloads and the cell raise it; its row is
``unsupported``). ``WorkloadError``: a workload of the user's own failed by itself (its row is
``error`` with reason ``workload: ...``). study.cell.failures turns each into a row's status.
"""


class ConfigError(ValueError):
    """A config value that cannot run. The message names the key and what is allowed."""


class Unsupported(RuntimeError):
    """The cell cannot run on this machine (e.g. CUDA asked for, none present)."""


class WorkloadError(RuntimeError):
    """A workload of the user's own (variant.target) failed by itself: its factory, its inputs,
    or its eager forward (a compiled cell asks eager again before blaming the compiler). Its
    row is ``error`` with reason ``workload: <its own words>``, the same for the eager and the
    compiled cell, and no failure of the harness (study.rows.summary)."""

    def __init__(self, cause: BaseException):
        super().__init__(f"{type(cause).__name__}: {cause}")
        self.__cause__ = cause
