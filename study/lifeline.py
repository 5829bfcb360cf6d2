"""A child process that dies with its parent: Linux's ``PR_SET_PDEATHSIG`` through libc's
``prctl``, where there is one (elsewhere nothing, quietly).

The warm parent's cells and a cell's primer (study.cell.prime) call ``die_with`` first thing:
a SIGKILL of the sweep then takes every process below it, and none goes on compiling into a run
dir that a resume reuses (issue 68: a killed sweep left its primer running, 3 of 5 tries).
"""

from __future__ import annotations

import ctypes
import functools
import os
import signal

PR_SET_PDEATHSIG = 1


@functools.cache
def libc_prctl():
    """libc's ``prctl`` (None: not Linux), looked up before any fork: a child forked beside
    other threads then calls it without the loader's lock."""
    try:
        return ctypes.CDLL("libc.so.6", use_errno=True).prctl
    except (OSError, AttributeError):
        return None


def die_with_parent() -> None:
    """SIGKILL this process when the thread that made it ends (nothing where no prctl)."""
    if libc_prctl() is not None:
        libc_prctl()(PR_SET_PDEATHSIG, signal.SIGKILL)


def die_with(parent: int) -> None:
    """``die_with_parent``, and exit at once where ``parent`` died before it took hold (this
    process was then handed to init already)."""
    die_with_parent()
    if libc_prctl() is not None and os.getppid() != parent:
        os._exit(1)
