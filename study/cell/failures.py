"""Failures become rows: an exception -> (status, reason), with the library's own words.

``oom`` (the allocator said no), ``unsupported`` (the library refused this combination, e.g.
no SDPA backend for fp32 on flash; the warnings that say why are appended), or ``error``
(compile errors say ``compile:``, a workload of the user's own that fails by itself
``workload:``: ``WorkloadError``; a full disk or a file-size limit ``disk:``, which is the
machine's failure, so the sweep exits 1). Pure string work on the exception chain.
"""

from __future__ import annotations

import errno
import os

from study.errors import Unsupported, WorkloadError

OOM_PATTERNS = ("out of memory", "can't allocate memory", "cannot allocate memory", "outofmemory")
DISK_ERRNOS = (errno.EFBIG, errno.ENOSPC, errno.EDQUOT)
DISK_PATTERNS = (
    "file too large",
    "file size limit exceeded",
    "no space left on device",
    "disk quota exceeded",
)
UNSUPPORTED_PATTERNS = (
    "no available kernel",
    "no viable backend",
    "not supported",
    "only supports",
    "not implemented for",
    "not compiled with",
    "is not available",
    "unsupported",
)


# What a process capped by RLIMIT_AS (cpu_mem_limit_gb) says as it dies before its row: the
# allocator's words, Python's, C++'s, and OpenMP's when its threads' stacks cannot be mapped.
DIED_OF_MEMORY = (*OOM_PATTERNS, "memoryerror", "bad_alloc",
                  "thread creation failed: resource temporarily unavailable")  # fmt: skip


def died(how: str, log_tail: str, capped: bool) -> tuple[str, str]:
    """(status, reason) of a cell process that died before writing its row: ``oom`` where its
    memory was capped (``capped``) and its log's last words are an allocation's failure
    (cpu_mem_limit_gb=0.001 read ``crash``), else ``crash``."""
    reason = f"cell process died ({how}) before writing its row; log: {log_tail}"
    if capped and any(p in log_tail.lower() for p in DIED_OF_MEMORY):
        return "oom", (f"out of host memory under its cpu_mem_limit_gb cap (raise it, or 0 for "
                       f"no cap): {reason}")  # fmt: skip
    return "crash", reason


def exited(e: SystemExit) -> RuntimeError:
    """A ``sys.exit()`` inside the cell (a factory, a forward) as an error that says so: the
    process would end with no row, and its crash row with an empty log."""
    return RuntimeError(f"the workload called sys.exit({e.code!r}): a workload must raise an "
                        "exception, not exit the process")  # fmt: skip


def _chain(e: BaseException):
    seen = []
    while e is not None and e not in seen:
        seen.append(e)
        e = getattr(e, "inner_exception", None) or e.__cause__ or e.__context__
    return seen


def _output(x: BaseException) -> str:
    """What a failed subprocess said (``CalledProcessError.output``/``stderr``: a C++ compiler's
    "File too large"), on one line; "" for other exceptions."""
    said = []
    for k in ("stderr", "output"):
        v = getattr(x, k, None)
        if isinstance(v, bytes):
            v = v.decode(errors="replace")
        if isinstance(v, str) and v.strip() and v not in said:
            said.append(v)
    return " ".join(" ".join(said).split())


def _disk(chain: list[BaseException], text: str) -> str | None:
    """What a full disk or file-size limit said, or None: the machine's failure, not the
    compiler's (a ``ulimit -f 100`` compile read ``compile: CalledProcessError`` and exit 0)."""
    for x in chain:
        if isinstance(x, OSError) and x.errno in DISK_ERRNOS:
            return os.strerror(x.errno)
    return next((p for p in DISK_PATTERNS if p in text), None)


def classify_error(e: BaseException, caught_warnings: list[str]) -> tuple[str, str]:
    """(status, reason) for an exception: oom, unsupported or error, with the library's words."""
    import torch

    chain = _chain(e)
    text = " ".join(f"{type(x).__name__}: {x} {_output(x)}" for x in chain).lower()
    first = next((x for x in reversed(chain) if str(x).strip()), e)
    msg = f"{type(first).__name__}: {str(first).strip()}"
    out = next((o for o in map(_output, chain) if o), "")
    msg = " ".join(msg.split())[:600] + (f" | output: ...{out[-300:]}" if out else "")
    if disk := _disk(chain, text):
        return "error", (f"disk: {disk} (a full disk or a file-size limit, ulimit -f): free "
                         f"space or raise the limit, then resume=true | {msg}")  # fmt: skip
    if any(isinstance(x, torch.OutOfMemoryError) for x in chain) or any(
        p in text for p in OOM_PATTERNS
    ):
        return "oom", msg
    if isinstance(e, Unsupported) or any(p in text for p in UNSUPPORTED_PATTERNS):
        extra = "; ".join(dict.fromkeys(w for w in caught_warnings if w))[:600]
        return "unsupported", msg + (f" | warnings: {extra}" if extra else "")
    if isinstance(e, WorkloadError):
        return "error", "workload: " + msg
    where = (
        "compile: "
        if any(type(x).__module__.startswith(("torch._dynamo", "torch._inductor")) for x in chain)
        else ""
    )
    return "error", where + msg
