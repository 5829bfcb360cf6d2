"""A private bytecode cache for the warm parent, where the installed torch has none."""

from __future__ import annotations

import importlib.util
import os


def _fresh_bytecode(source: str) -> bool:
    """Does ``source`` have a bytecode cache Python would use: this Python's pyc, matching the
    source's stat (a hash-based pyc is taken as fresh: Python checks it by hash, if at all)?"""
    try:
        with open(importlib.util.cache_from_source(source), "rb") as f:
            head = f.read(16)
        st = os.stat(source)
    except (OSError, ValueError, NotImplementedError):
        return False
    if len(head) < 16 or head[:4] != importlib.util.MAGIC_NUMBER:
        return False
    if int.from_bytes(head[4:8], "little") & 1:  # hash-based pyc: checked by hash, not stat
        return True
    mtime, size = int.from_bytes(head[8:12], "little"), int.from_bytes(head[12:16], "little")
    return mtime == int(st.st_mtime) & 0xFFFFFFFF and size == st.st_size & 0xFFFFFFFF


def bytecode_cache(env: dict, setting: str = "auto", source: str | None = None) -> dict:
    """The warm parent's environment for a private bytecode cache (``PYTHONPYCACHEPREFIX``, by
    default ``~/.cache/study/pycache``) where the installed torch has no usable one (``source``:
    a module of it; default torch's ``__init__``), else nothing. Without one every process
    compiles torch's sources again (the H200 image ships no pyc and sets
    PYTHONDONTWRITEBYTECODE: 10-17 s of imports). ``setting`` (the launcher's ``pycache``):
    ``auto``, a dir, or ``off``; a PYTHONPYCACHEPREFIX of your own is kept."""
    want = "" if setting in ("auto", None) else str(setting).strip()
    if want.lower() == "off" or env.get("PYTHONPYCACHEPREFIX"):
        return {}
    if source is None:
        spec = importlib.util.find_spec("torch")
        if spec is None or not spec.origin:
            return {}
        source = spec.origin
    if _fresh_bytecode(source):
        return {}
    home = env.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    prefix = os.path.abspath(want) if want else os.path.join(home, "study", "pycache")
    return {"PYTHONPYCACHEPREFIX": prefix, "PYTHONDONTWRITEBYTECODE": ""}  # "": not set
