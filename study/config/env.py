"""The environment a row was measured in: versions, device, clocks, host, git revision."""

from __future__ import annotations

import functools
import os
import platform
import socket
import subprocess
from pathlib import Path


def proc_kb(path: str, key: str) -> float | None:
    """A ``key: N kB`` figure of a /proc file (``/proc/meminfo``, ``/proc/self/status``), or
    None where the file or the key is not."""
    try:
        for line in Path(path).read_text().splitlines():
            if line.startswith(key + ":"):
                return float(line.split()[1])
    except (OSError, ValueError, IndexError):
        return None
    return None


def boot_id() -> str:
    """This machine's boot: the first 8 hex of the kernel's boot id ('-' where unreadable). Every
    H200 VM is called "vm" and each device command may get a fresh one, whose host runs at its
    own speed (v3: 9.7 µs against 12.9-13.5 on the others), so the host name says nothing."""
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip()[:8] or "-"
    except OSError:
        return "-"


def git_revision() -> str | None:
    """The study's revision (``-dirty`` when modified), once per process: forked cells inherit
    it from the warm parent (two git calls per cell otherwise)."""
    global _REV
    if _REV is None:
        _REV = (_git_revision(),)
    return _REV[0]


_REV = None

# What decides what a cell measures: the study's code, its config and the Hydra plugins.
CODE = (("study", "*.py"), ("conf", "*.yaml"), ("hydra_plugins", "*.py"))


@functools.cache
def code_hash() -> str | None:
    """sha256 (12 hex) of the measuring code as it is on disk: ``CODE``'s files by relative
    path and content. Rows with one ``code_hash`` ran the same code, whatever git says: a
    study run over several sessions commits results between them (``git_rev`` moves), and a
    copied working tree may carry a stale ``.git``. Once per process; forked cells inherit it."""
    return hash_tree(Path(__file__).resolve().parents[2])


def hash_tree(root: Path) -> str | None:
    """``code_hash`` of the tree at ``root`` (None where it has none of ``CODE``'s files)."""
    import hashlib

    h = hashlib.sha256()
    files = sorted(p for d, pat in CODE if (root / d).is_dir() for p in (root / d).rglob(pat))
    if not files:
        return None
    for p in files:
        h.update(str(p.relative_to(root)).encode() + b"\0" + p.read_bytes() + b"\0")
    return h.hexdigest()[:12]


def _git_revision() -> str | None:
    root = Path(__file__).resolve().parent.parent
    try:
        out = subprocess.run(
            ["git", "-C", str(root), "rev-parse", "--short=12", "HEAD"],
            capture_output=True,
            text=True,
            timeout=5,
        )
        rev = out.stdout.strip() or None
        if rev:
            dirty = subprocess.run(
                ["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
                capture_output=True,
                text=True,
                timeout=5,
            ).stdout.strip()
            rev += "-dirty" if dirty else ""
        return rev
    except (OSError, subprocess.SubprocessError):
        return None


def nvidia_smi(query: str) -> str | None:
    """One ``nvidia-smi --query-gpu`` answer for the GPU this process is pinned to, or None."""
    try:
        out = subprocess.run(
            [
                "nvidia-smi",
                f"--query-gpu={query}",
                "--format=csv,noheader,nounits",
                "-i",
                os.environ.get("CUDA_VISIBLE_DEVICES", "0").split(",")[0],
            ],
            capture_output=True,
            text=True,
            timeout=10,
        )
        return out.stdout.strip() or None if out.returncode == 0 else None
    except (OSError, subprocess.SubprocessError):
        return None


def collect(device: str) -> dict:
    import torch

    env = {
        "torch_version": torch.__version__,
        "triton_version": None,
        "cuda_version": torch.version.cuda,
        "cudnn_version": None,
        "driver_version": None,
        "device_name": platform.processor() or platform.machine(),
        "sm_clock_mhz": None,
        "mem_clock_mhz": None,
        "host": socket.gethostname(),
        "boot_id": boot_id(),
        "python_version": platform.python_version(),
        "git_rev": git_revision(),
        "code_hash": code_hash(),
        "cpu_threads": torch.get_num_threads(),
    }
    try:
        import triton

        env["triton_version"] = triton.__version__
    except ImportError:
        pass
    if device == "cuda":
        env["device_name"] = torch.cuda.get_device_name()
        env["cudnn_version"] = torch.backends.cudnn.version()
        smi = nvidia_smi("driver_version,clocks.sm,clocks.mem")
        if smi:
            parts = [p.strip() for p in smi.split(",")]
            env["driver_version"] = parts[0]
            env["sm_clock_mhz"] = parts[1] if len(parts) > 1 else None
            env["mem_clock_mhz"] = parts[2] if len(parts) > 2 else None
    else:
        try:
            for line in Path("/proc/cpuinfo").read_text().splitlines():
                if line.startswith("model name"):
                    env["device_name"] = line.split(":", 1)[1].strip()
                    break
        except OSError:
            pass
    return env
