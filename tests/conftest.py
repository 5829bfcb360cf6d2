"""Shared fixtures: tiny CPU cells, run in-process or through the real CLI."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = Path(__file__).resolve().parent / "fixtures"
# Tiny shapes: every variant runs in well under a second on 2 CPU cores.
TINY = ["+experiment=tiny"]  # conf/experiment/tiny.yaml


def root_env() -> dict:
    """This environment with the checkout first on ``PYTHONPATH``, before what the path had
    (Hydra installed with ``pip --target`` on the GPU machine: replacing the path lost it)."""
    path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)
    return {**os.environ, "PYTHONPATH": path}


def cli(*args: str, cwd: Path | None = None, timeout: int = 600) -> subprocess.CompletedProcess:
    """Run ``python -m study.run ARGS`` as a user would; returns the completed process."""
    env = {**root_env(), "HYDRA_FULL_ERROR": "0"}
    return subprocess.run(
        [sys.executable, "-m", "study.run", *args],
        cwd=cwd or ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def compose(*overrides: str):
    from hydra import compose as hcompose
    from hydra import initialize_config_dir

    import study.run  # noqa: F401 - registers the schema and the sweep-id resolver

    with initialize_config_dir(config_dir=str(ROOT / "conf"), version_base="1.3"):
        return hcompose(config_name="config", overrides=list(overrides))


def without_torch(module: str, args: list[str], timeout: int = 300) -> subprocess.CompletedProcess:
    """``module.main(args)`` in a fresh interpreter whose import system refuses torch: the
    analysis must read CSVs only. Exits with main's int return (0 for None)."""
    code = (
        "import sys\n"
        "class NoTorch:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name == 'torch' or name.startswith('torch.'):\n"
        "            raise ImportError('analysis must not import torch')\n"
        "sys.meta_path.insert(0, NoTorch())\n"
        f"from {module} import main\n"
        f"rc = main({args!r})\n"
        "assert 'torch' not in sys.modules\n"
        "sys.exit(rc if isinstance(rc, int) else 0)\n"
    )
    return subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=timeout
    )


@pytest.fixture
def run_inline(tmp_path, monkeypatch):
    """Run one cell in this process (no subprocess) and return (row, kernels, autotune)."""
    from omegaconf import OmegaConf

    from study.cell.phases import run_cell
    from study.config.cell_config import schema

    def _run(*overrides: str, name: str = "cell"):
        cfg = compose(*TINY, *overrides)
        cfg = OmegaConf.merge(schema(), {k: v for k, v in cfg.items() if k != "hydra"})
        run_dir = tmp_path / name
        run_dir.mkdir(parents=True, exist_ok=True)
        if cfg.compile.mode != "off":  # once per test process, as the warm parent does it
            from study.sweep.prewarm import cpu_isa

            cpu_isa()
        # each test its own cache dir, as each forked cell has (cache=cold): Dynamo's and
        # Inductor's file caches (FX graphs, automatic-dynamic state) are not the next test's
        monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path / "inductor_cache"))
        return run_cell(cfg, run_dir)

    return _run


def trace_event(name, cat, ts, dur, tid, **args):
    """One complete ('X') profiler event, as torch.profiler exports it."""
    return {"ph": "X", "name": name, "cat": cat, "ts": ts, "dur": dur, "tid": tid, "args": args}


def training_step(fwd_kernel: str, bwd_kernel: str) -> list[dict]:
    """A profiled training step: main thread 1 runs study::fwd then study::bwd; the forward's
    kernel is launched from thread 1, the backward's from autograd's thread 2."""
    ev = trace_event
    return [
        ev("ProfilerStep#1", "user_annotation", 0, 100, 1),
        ev("study::fwd", "user_annotation", 5, 30, 1),
        ev("study::bwd", "user_annotation", 40, 50, 1),
        ev("cudaLaunchKernel", "cuda_runtime", 10, 2, 1, correlation=1),
        ev("cudaLaunchKernel", "cuda_runtime", 60, 2, 2, correlation=2),
        ev(fwd_kernel, "kernel", 12, 5, 7, correlation=1),
        ev(bwd_kernel, "kernel", 62, 9, 7, correlation=2),
    ]


class SlowInTheFastLane(RuntimeError):
    """A test outside the slow lane started a process or compiled."""


def _slow(item) -> bool:
    return bool(item.get_closest_marker("slow") or item.get_closest_marker("cuda"))


_REAL = {"popen": subprocess.Popen.__init__, "fork": os.fork}


def _refuse(where: str, what: str):
    def _raise(*args, **kwargs):
        raise SlowInTheFastLane(f"{where} {what}: mark it @pytest.mark.slow")

    return _raise


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    """The fast lane (``pytest -m "not slow"``) stays fast by rule: a test not marked
    ``slow`` (or ``cuda``) that starts or forks a process, its fixtures' included, fails
    saying to mark it."""
    if not _slow(item):
        subprocess.Popen.__init__ = _refuse(item.nodeid, "starts a process")
        os.fork = _refuse(item.nodeid, "forks a process")
    try:
        yield
    finally:
        subprocess.Popen.__init__, os.fork = _REAL["popen"], _REAL["fork"]


def _compiled_frames() -> int:
    if "torch" not in sys.modules:
        return 0
    from torch._dynamo.utils import counters

    return int(counters["frames"].get("total", 0))


@pytest.fixture(autouse=True)
def _no_compile_in_the_fast_lane(request, monkeypatch):
    """...nor one that compiles with torch.compile."""
    if _slow(request.node):
        yield
        return
    from study.cell import compiling

    cleared, real = [0], compiling.fresh_dynamo

    def counting_fresh_dynamo():  # a compiled cell clears the count first: keep what it had
        cleared[0] += _compiled_frames()
        real()

    monkeypatch.setattr(compiling, "fresh_dynamo", counting_fresh_dynamo)
    before = _compiled_frames()
    yield
    if cleared[0] + _compiled_frames() > before:
        raise SlowInTheFastLane(
            f"{request.node.nodeid} compiles with torch.compile: mark it @pytest.mark.slow"
        )
