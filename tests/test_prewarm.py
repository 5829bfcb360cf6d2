"""What the warm parent does before it forks (study.sweep.prewarm) and its bytecode cache
(study.sweep.pycache). No GPU here: stand-ins record what the warm parent asks of Triton and the driver."""

import importlib.util
import os
import py_compile
import sys
import types

import pytest

from study.sweep import prewarm as pw
from study.sweep.pycache import bytecode_cache


@pytest.fixture
def triton(monkeypatch):
    """A stand-in Triton: a CUDA build's (HAS_TRITON), recording each call in ``calls``."""
    import torch
    import torch._inductor.runtime.triton_compat as compat

    calls = []

    class Proxy:  # older Triton's driver.active: a lazy proxy, built on first attribute use
        @property
        def utils(self):
            calls.append("driver")
            if Driver.fail:
                raise RuntimeError("0 active drivers")
            return object()

    class Driver:
        fail = False
        active = Proxy()

    runtime = types.ModuleType("triton.runtime")
    runtime.driver = Driver()
    monkeypatch.setitem(sys.modules, "triton", types.ModuleType("triton"))
    monkeypatch.setitem(sys.modules, "triton.runtime", runtime)
    monkeypatch.setattr(compat, "HAS_TRITON", True)
    monkeypatch.setattr(compat, "triton_key", lambda: calls.append("key"))
    monkeypatch.setattr(torch.cuda, "_register_triton_kernels", lambda: calls.append("ops"))
    monkeypatch.setattr(pw, "WARM_COMPILE", ("json", "no_such_module_here"))
    return calls, Driver


def test_prewarm_does_each_per_process_item_once(triton):
    calls, _ = triton
    did = pw.prewarm(gpus=1)
    assert calls == ["ops", "key", "driver"]
    assert did["imports_skipped"] == "no_such_module_here (ModuleNotFoundError)"
    assert all(isinstance(did[k], float) for k in ("triton_ops", "triton_key", "triton_driver"))


def test_an_eager_sweeps_prewarm_only_registers_cudas_ops(triton):
    """No cell compiles: no compile-time imports, no Triton key or driver; CUDA's op definitions
    still, which every eager CUDA cell's first call would make."""
    calls, _ = triton
    did = pw.prewarm(gpus=1, compiled=False)
    assert calls == ["ops"] and set(did) == {"triton_ops"}


@pytest.mark.parametrize(
    "pts, want",
    [([["variant=naive", "compile=off"], ["variant=flash", "compile=off"]], True),
     ([["variant=naive", "compile=off"], ["variant=naive", "compile=default"]], False),
     ([["variant=naive"]], False),  # the default may compile (an experiment's body can set it)
     ([["compile=off", "compile.mode=default"]], False), ([], False)],
)  # fmt: skip
def test_a_sweep_is_eager_only_when_every_point_says_compile_off(pts, want):
    from study.sweep.sweeper import eager_only

    assert eager_only(pts) is want


def test_prewarm_leaves_tritons_driver_alone_without_a_gpu(triton):
    """Triton's driver asks torch.cuda.is_available(): with no GPU counted by NVML, torch would
    ask the driver (cuInit in the warm parent) and Triton would raise; so it is not built."""
    calls, _ = triton
    did = pw.prewarm(gpus=0)
    assert "driver" not in calls and did["triton_driver"].startswith("skipped: no GPU")


def test_a_prewarm_item_that_fails_is_the_cells_to_fail_on(triton):
    calls, driver = triton
    driver.fail = True
    did = pw.prewarm(gpus=1)
    assert did["triton_driver"] == "skipped: RuntimeError: 0 active drivers"
    assert calls == ["ops", "key", "driver"]


@pytest.mark.parametrize("rc, want", [(0, True), (3, False), (34, None)])
def test_the_driver_says_whether_cuinit_ran(monkeypatch, rc, want):
    """0: initialised; 3 (CUDA_ERROR_NOT_INITIALIZED): not; anything else (34, a stub
    library): unknown, which must not stop the warm parent."""

    class Lib:
        def cuDeviceGetCount(self, ptr):
            return rc

    monkeypatch.setattr(pw.ctypes, "CDLL", lambda name: Lib())
    assert pw.driver_initialised() is want


def test_no_driver_is_no_answer(monkeypatch):
    def missing(name):
        raise OSError(f"{name}: cannot open shared object file")

    monkeypatch.setattr(pw.ctypes, "CDLL", missing)
    assert pw.driver_initialised() is None


def test_a_warm_parent_caches_bytecode_where_the_install_has_none(tmp_path):
    """No usable pyc for torch (the H200 image): the warm parent gets a prefix it can write."""
    src = tmp_path / "mod.py"
    src.write_text("x = 1\n")
    pyc = importlib.util.cache_from_source(str(src))
    env = {"XDG_CACHE_HOME": str(tmp_path / "cache"), "PYTHONDONTWRITEBYTECODE": "1"}
    cache = {"PYTHONPYCACHEPREFIX": str(tmp_path / "cache" / "study" / "pycache")}
    want = {**cache, "PYTHONDONTWRITEBYTECODE": ""}  # written, but only under the prefix
    assert bytecode_cache(env, "auto", str(src)) == want  # no pyc at all
    py_compile.compile(
        str(src), cfile=pyc, invalidation_mode=py_compile.PycInvalidationMode.TIMESTAMP
    )
    assert bytecode_cache(env, "auto", str(src)) == {}  # a pyc that matches: nothing to do
    os.utime(src, (1, 1))
    assert bytecode_cache(env, "auto", str(src)) == want  # stale: Python would compile again
    py_compile.compile(
        str(src), cfile=pyc, invalidation_mode=py_compile.PycInvalidationMode.TIMESTAMP
    )
    with open(pyc, "r+b") as f:
        f.write(b"\0\0\0\0")  # another Python's magic number
    assert bytecode_cache(env, "auto", str(src)) == want


def test_the_bytecode_cache_can_be_moved_or_turned_off(tmp_path, monkeypatch):
    src = tmp_path / "mod.py"
    src.write_text("x = 1\n")
    monkeypatch.chdir(tmp_path)
    assert bytecode_cache({}, "OFF", str(src)) == {}
    got = bytecode_cache({}, "rel/dir", str(src))
    assert got["PYTHONPYCACHEPREFIX"] == str(
        tmp_path / "rel" / "dir"
    )  # absolute: every process agrees
    assert bytecode_cache({"PYTHONPYCACHEPREFIX": "/mine"}, "auto", str(src)) == {}
