"""What only a GPU can show: the warm parent never initialises CUDA and its forked cells use it,
a cell proves its GPU pin, and the quickstart proves each backend it claims. Skipped without
CUDA; run them on the GPU machine: ``python -m pytest -m cuda``."""

import json

import pytest

from study.rows import io
from tests.conftest import cli

pytestmark = [pytest.mark.cuda, pytest.mark.xdist_group("cuda")]


@pytest.fixture(scope="module", autouse=True)
def _gpu():
    import torch

    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA GPU")


def test_the_warm_parent_never_initialises_cuda_and_its_cells_use_it(tmp_path):
    from study.sweep.warm_parent import WarmParent
    from tests.test_warm_parent import wait

    parent = WarmParent()
    try:
        st = parent.status
        assert st["device_count"] >= 1 and st["cuda_available"] is True
        assert st["cuda_initialized"] is False and st["cuda_driver_initialized"] is False
        out = tmp_path / "cuda.json"
        env = {"CUDA_VISIBLE_DEVICES": "0"}
        rid, _ = parent.spawn("tests.forked:cuda_use", {"out": str(out), "gpu": "0"}, env, None,
                              tmp_path / "cuda.log")  # fmt: skip
        assert wait(parent, rid, 120) == 0, (tmp_path / "cuda.log").read_text()[-2000:]
        got = json.loads(out.read_text())
        assert got["total"] == 1024.0 and got["visible"] == "0" and got["name"]
        assert parent.query()["cuda_initialized"] is False  # still: the next cell can fork
    finally:
        parent.close()


def test_the_quickstart_on_a_gpu_proves_the_backend_each_row_claims(tmp_path):
    r = cli("-m", "variant=naive,flash", "compile=off,default", f"out_root={tmp_path}")
    assert r.returncode == 0, r.stderr[-3000:]
    sweep = next((tmp_path / "sweeps").iterdir())
    rows = io.read_csv(sweep / "runs.csv")
    assert len(rows) == 4 and all(x["status"] == "ok" for x in rows), rows
    assert all(x["device"] == "cuda" and x["gpu_index"] in ("", None) for x in rows)
    flash = [x for x in rows if x["variant"] == "flash"]
    assert all(x["backend_seen"] == "flash" and x["backend_proof"] for x in flash), flash
    compiled = [x for x in rows if x["compile"] == "default"]
    assert all(float(x["speedup_paired"]) > 0 for x in compiled)


def test_a_cuda_cells_threads_stay_on_one_core_while_timed_profiled_and_swept(run_inline,
                                                                             monkeypatch, tmp_path):  # fmt: skip
    """timing.one_core: from measure through profile and the shape sweep every thread of the
    cell (autograd's device thread included) sits on ``timing_core``; afterwards each thread has
    its cores back."""
    import csv
    import functools
    import os

    from study.cell import phases
    from study.measure import pinning

    seen = {}

    def affinities() -> dict:
        out = {}
        for t in pinning.threads():
            try:
                out[t] = os.sched_getaffinity(t)
            except OSError:  # ended while we looked
                pass
        return out

    def watched(name):
        real = getattr(phases.Cell, name)

        @functools.wraps(real)  # run_cell names a phase by its function
        def run(self, *a, **kw):
            out = real(self, *a, **kw)  # after the phase: autograd's thread exists by then
            seen[name] = affinities()
            return out

        monkeypatch.setattr(phases.Cell, name, run)

    for name in ("measure", "profile", "shapes"):
        watched(name)
    before = os.sched_getaffinity(0)
    had = affinities()
    row, _, _ = run_inline("device=cuda", "variant=flash", "pass=fwd_bwd", "compile=default",
                           "shape_sweep.key=seq_len", "shape_sweep.sizes=[16,32]", name="one")  # fmt: skip
    assert row["status"] == "ok", row["reason"]
    core = row["timing_core"]
    assert core is not None and core in before
    assert set(seen) == {"measure", "profile", "shapes"}
    for name, cores in seen.items():
        assert len(cores) >= 2, name  # the main thread and autograd's device thread at least
        assert all(c == {core} for c in cores.values()), (name, cores)
    with open(tmp_path / "one" / "shapes.csv") as f:  # the sweep's sizes ran, on that core
        assert [s["status"] for s in csv.DictReader(f)] == ["ok", "ok"]
    after = affinities()
    assert all(after[t] == had[t] for t in had.keys() & after.keys())  # each its cores back
    assert os.sched_getaffinity(0) == before
