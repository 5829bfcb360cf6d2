"""How an analysis command ends: its exit status, and quietly when its reader has gone.

``python -m analysis.compare A B | head -1`` closes the pipe after one line; Python then raises
BrokenPipeError at the next write, a traceback for nothing wrong. ``run`` ends such a command
with its status instead (the pattern of Python's own ``signal`` docs: stdout pointed at
/dev/null, so the interpreter's last flush does not fail again).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable


def run(main: Callable[[], int | None]) -> None:
    """``sys.exit(main())``, and exit 0 where the reader closed the pipe first."""
    try:
        code = main()
        sys.stdout.flush()
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        code = 0
    sys.exit(code if isinstance(code, int) else 0)
