"""The ``cores=`` setting: a core list read and written (``0-3,8``), and checked against the cores
this process may use. The cell's pinning (study.measure.pinning) and the sweep's slots use it."""

from __future__ import annotations

import os


def parse_cores(spec: str) -> list[int]:
    """'0-3,8' -> [0, 1, 2, 3, 8]. Raises ValueError on anything else."""
    out = []
    for part in str(spec).replace(" ", "").split(","):
        if not part:
            continue
        lo, _, hi = part.partition("-")
        a, b = int(lo), int(hi) if hi else int(lo)
        if a < 0 or b < a:
            raise ValueError(f"bad core range {part!r}")
        out.extend(range(a, b + 1))
    if not out:
        raise ValueError("no cores")
    return sorted(set(out))


def fmt_cores(cores) -> str:
    """[0, 1, 2, 3, 8] -> '0-3,8'."""
    cores = sorted(cores)
    runs, start = [], None
    for i, c in enumerate(cores):
        if start is None:
            start = c
        if i + 1 == len(cores) or cores[i + 1] != c + 1:
            runs.append(f"{start}-{c}" if c > start else f"{c}")
            start = None
    return ",".join(runs)


def allowed() -> list[int]:
    return sorted(os.sched_getaffinity(0))


def check_spec(spec: str, host: list[int] | None = None) -> str | None:
    """Why ``cores=spec`` cannot run on this host, or None."""
    if spec == "auto":
        return None
    try:
        want = parse_cores(spec)
    except ValueError as e:
        return f"cores={spec!r} is not a core list ({e}); write e.g. cores=0-7 or cores=2,3,5, or cores=auto"
    host = allowed() if host is None else host
    missing = [c for c in want if c not in host]
    if missing:
        return (
            f"cores={spec!r} names core(s) {fmt_cores(missing)} that this process may not use; "
            f"allowed here: {fmt_cores(host)}"
        )
    return None
