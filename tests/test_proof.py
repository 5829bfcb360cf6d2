"""Proof of backend on real H200 traces: the pinned backend, alone, or the row is invalid."""

from functools import cache

import pytest

from study import reparse
from study.observe import proof, trace
from study.rows import io
from tests.conftest import FIXTURES


@cache
def parsed(name: str):
    rows, summary = trace.parse(trace.load_events(FIXTURES / f"h200_{name}.trace.json.gz"), "cuda")
    return rows, summary["op_names"]


def prove(expected, *fixtures, generated=None):
    rows = [r for f in fixtures for r in parsed(f)[0]]
    ops = [o for f in fixtures for o in parsed(f)[1]]
    return proof.prove_backend(expected, rows, ops, generated or {})


@pytest.mark.parametrize("backend", ["flash", "cudnn", "math"])
def test_each_eager_backend_proves_itself_and_no_other(backend):
    p = prove(backend, f"{backend}_eager")
    assert p["ok"] and p["backend_seen"] == backend, p
    for other in {"flash", "cudnn", "math", "efficient"} - {backend}:
        q = prove(other, f"{backend}_eager")
        assert not q["ok"] and q["reason"].startswith(proof.PREFIX)
        assert f"pinned backend {other!r} did not run" in q["reason"]


def test_the_pinned_backend_beside_another_backend_is_invalid():
    """A flash row whose trace also shows cuDNN's kernel does not prove flash."""
    p = prove("flash", "flash_eager", "cudnn_eager")
    assert not p["ok"], p
    assert "so did cudnn" in p["reason"] and p["backend_seen"] == "flash+cudnn"
    q = prove("cudnn", "cudnn_eager", "math_eager")
    assert not q["ok"] and "so did math" in q["reason"]


def test_the_dispatchers_own_choice_must_be_one_backend():
    assert prove(None, "cudnn_eager")["ok"]
    p = prove(None, "cudnn_eager", "flash_eager")
    assert not p["ok"] and "more than one SDPA backend" in p["reason"]
    assert not prove(None, "naive_eager")["ok"]


def _decomposed(names, extra=()):
    return {"kernels": {n: {"from_sdpa": True} for n in [*names, *extra]}}


def test_decomposed_math_is_proven_only_by_generated_kernels_that_ran():
    """The compiled attention trace (Triton softmax + cuBLAS) stands in for decomposed math:
    Inductor's provenance names the generated kernel; it must be in the trace."""
    rows, _ = parsed("naive_default")
    gen = [r["kernel"] for r in rows if r["generated"]]
    assert gen, "fixture has no generated kernel"
    p = prove("math", "naive_default", generated=_decomposed(gen))
    assert p["ok"] and "decomposed by Inductor" in p["backend_proof"], p
    # The same provenance map with an empty trace, or a mapped kernel that never ran: invalid.
    empty = proof.prove_backend("math", [], [], _decomposed(gen))
    assert not empty["ok"] and "not in the profiled steps" in empty["reason"]
    missing = prove("math", "naive_default", generated=_decomposed(gen, ["triton_poi_fused_9"]))
    assert not missing["ok"] and "triton_poi_fused_9" in missing["reason"]


def test_layout_kernels_made_from_the_sdpa_call_do_not_count_as_math_beside_flash():
    """Inductor may generate a copy from the SDPA call around a fused flash kernel."""
    rows, _ = parsed("naive_default")
    gen = [r["kernel"] for r in rows if r["generated"]]
    p = prove("flash", "flash_eager", "naive_default", generated=_decomposed(gen))
    assert p["ok"] and p["backend_seen"] == "flash", p


def _run_dir(tmp_path, fixture, variant, status="ok", reason=""):
    """A finished cell dir holding a real H200 trace, as a GPU sweep leaves it."""
    import shutil

    d = tmp_path / "sweep" / f"compile=off,variant={variant}"
    d.mkdir(parents=True)
    shutil.copy(FIXTURES / f"h200_{fixture}.trace.json.gz", d / "trace.json.gz")
    row = {
        "run_id": d.name,
        "variant": variant,
        "family": "attention",
        "compile": "off",
        "device": "cuda",
        "dtype": "bf16",
        "status": status,
        "reason": reason,
        "backend_expected": variant,
    }
    io.write_csv(d / "run.csv", [row], "runs")
    return d


def test_reparse_proves_the_backend_again(tmp_path):
    """A row that says ok for cudnn while its trace shows flash becomes invalid; a row that
    was invalid for its proof becomes ok once the trace proves it; a mismatch stays."""
    wrong = _run_dir(tmp_path, "flash_eager", "cudnn")
    fixed = _run_dir(tmp_path, "cudnn_eager", "flash", status="ok")  # claims flash: invalid
    right = _run_dir(tmp_path, "math_eager", "math", "invalid", "proof: pinned backend ...")
    mism = _run_dir(tmp_path, "flash_eager", "efficient", "mismatch", "max_rel_err 1 > 0.03")
    assert reparse.main(tmp_path / "sweep") == 4
    row = io.read_csv(wrong / "run.csv")[0]
    assert row["status"] == "invalid" and "pinned backend 'cudnn' did not run" in row["reason"]
    assert io.read_csv(fixed / "run.csv")[0]["status"] == "invalid"
    row = io.read_csv(right / "run.csv")[0]
    assert row["status"] == "ok" and row["backend_seen"] == "math", row["reason"]
    assert io.read_csv(mism / "run.csv")[0]["status"] == "mismatch"


def test_reparse_proves_a_training_row_phase_by_phase(tmp_path):
    """The cell proves the backward apart from the forward; reparse must too: a flash fwd_bwd
    row whose backward shows no flash kernel stays invalid."""
    import gzip
    import json

    from tests.conftest import training_step

    events = training_step("void pytorch_flash::flash_fwd_kernel<>", "nvjet_sm90_tst_64x512")
    d = _run_dir(tmp_path, "flash_eager", "flash")
    with gzip.open(d / "trace.json.gz", "wt") as f:
        json.dump({"traceEvents": events}, f)
    reparse.main(tmp_path / "sweep")
    row = io.read_csv(d / "run.csv")[0]
    assert row["status"] == "invalid" and "backward does not show flash" in row["reason"], row


def test_math_under_aotautograd_without_inductor_is_unsupported_not_invalid():
    """compile=aot_eager,variant=math read `invalid` in an ordinary cross of modes: AOTAutograd
    decomposes SDPA's math op into aten ops, so nothing is left to prove the pin."""
    from study.observe import proof

    failed = {"ok": False, "backend_seen": "", "reason": "proof: pinned backend 'math' did not run"}
    assert "decomposes SDPA's math backend" in proof.unprovable("aot_eager", "math", failed)
    assert proof.unprovable("cudagraphs", "math", failed)
    assert proof.unprovable("inductor", "math", failed) is None  # Inductor's own kernels prove it
    assert proof.unprovable("aot_eager", "flash", failed) is None  # a fused kernel would show
    assert proof.unprovable("aot_eager", "math", {**failed, "backend_seen": "flash"}) is None
