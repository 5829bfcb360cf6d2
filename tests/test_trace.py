"""Trace reading on real traces captured on the H200 (torch 2.11, B8 H16 S1024 D64 bf16)."""

import pytest

from study.observe import trace
from tests.conftest import FIXTURES


def parse(name):
    return trace.parse(trace.load_events(FIXTURES / f"{name}.trace.json.gz"), "cuda")


def by_class(rows):
    out = {}
    for r in rows:
        out[r["kernel_class"]] = out.get(r["kernel_class"], 0) + r["calls_per_step"]
    return out


def test_naive_shows_the_hidden_memcpy_and_inplace_does_not():
    rows, s = parse("h200_naive_eager")
    assert s["profiled_steps"] == 3 and s["steps_consistent"]
    assert by_class(rows)["copy"] == 1
    assert any(r["kernel"].startswith("Memcpy DtoD") for r in rows)
    rows_i, s_i = parse("h200_naive_inplace_eager")
    assert "copy" not in by_class(rows_i)
    assert s["kernels_per_step"] == s_i["kernels_per_step"] + 1


def test_counts_are_per_step_integers_not_averages():
    for name in ("h200_naive_eager", "h200_math_eager", "h200_naive_default", "h200_cudnn_eager"):
        rows, s = parse(name)
        assert s["steps_consistent"], name
        assert all(isinstance(r["calls_per_step"], int) and r["calls_consistent"] for r in rows), (
            name
        )
        assert sum(r["calls_per_step"] for r in rows) == s["kernels_per_step"]


def test_math_backend_runs_about_twenty_kernels_with_fp32_gemms():
    rows, s = parse("h200_math_eager")
    assert 15 <= s["kernels_per_step"] <= 30
    gemms = [r for r in rows if r["kernel_class"] == "gemm_cublas"]
    assert gemms and all("f32f32" in r["kernel"] for r in gemms)


def test_cudnn_zero_occupancy_is_unknown_not_zero():
    rows, _ = parse("h200_cudnn_eager")
    cudnn = [r for r in rows if r["kernel_class"] == "cudnn"]
    assert len(cudnn) == 1 and cudnn[0]["occupancy_pct"] is None
    flash_rows, _ = parse("h200_flash_eager")
    flash = [r for r in flash_rows if r["kernel_class"] == "flash"][0]
    assert 0 < flash["occupancy_pct"] < 25  # the blog's "low occupancy, yet fastest"
    assert flash["registers_per_thread"] and flash["grid"] and flash["block"]


def test_kernels_link_to_their_cpu_op_and_compiled_region():
    rows, s = parse("h200_naive_default")
    triton = [r for r in rows if r["kernel_class"] == "triton_persistent_reduction"]
    assert triton and triton[0]["cpu_region"].startswith("Torch-Compiled Region")
    gemm = [r for r in rows if r["kernel_class"] == "gemm_cublas"]
    assert gemm and all(r["cpu_op"] == "aten::bmm" for r in gemm)
    eager, _ = parse("h200_naive_eager")
    memcpy = [r for r in eager if r["kernel_class"] == "copy"][0]
    assert memcpy["cpu_op"] in ("aten::copy_", "aten::clone", "aten::masked_fill")


def test_step_summary_fields():
    rows, s = parse("h200_flash_eager")
    assert s["launches_per_step"] == 1
    assert s["gpu_us_per_step"] == pytest.approx(rows[0]["us_per_step"], rel=0.05)
    assert s["idle_us_per_step"] >= 0
    assert s["cpu_bound"] in (True, False)
    assert s["dominant_share"] == pytest.approx(1.0)


def test_csvs_hold_whole_kernel_names():
    """The cuDNN kernel's name is long; the CSV keeps it whole (figures shorten their own)."""
    rows, s = parse("h200_cudnn_eager")
    cudnn = next(r for r in rows if r["kernel_class"] == "cudnn")
    assert s["dominant_kernel"] == cudnn["kernel"] and "…" not in s["dominant_kernel"]
    assert "…" not in cudnn["kernel_short"] and len(cudnn["kernel_short"]) > 48


def _split_masked_fill(events, pieces):
    """The naive trace as if masked_fill_ had been split into ``pieces`` launches of its kernel
    inside the same op call (what TensorIterator does past 2^31 elements)."""
    import copy

    kern = [e for e in events if e.get("cat") == "kernel" and "masked_fill" in e["name"]]
    corr = {e["args"]["correlation"] for e in kern}
    launch = {
        e["args"]["correlation"]: e
        for e in events
        if e.get("cat") in trace.LAUNCH_CATS and e.get("args", {}).get("correlation") in corr
    }
    extra, next_corr = [], max(e.get("args", {}).get("correlation", 0) for e in events) + 1
    for k in kern:
        lk = launch[k["args"]["correlation"]]
        for j in range(1, pieces):
            nl, nk = copy.deepcopy(lk), copy.deepcopy(k)
            nl["args"]["correlation"] = nk["args"]["correlation"] = next_corr
            nl["ts"] = lk["ts"] + 0.001 * j  # the same op call, a moment later
            nk["ts"] = k["ts"] + k["dur"] * j
            extra += [nl, nk]
            next_corr += 1
    return events + extra


def test_one_op_call_launching_a_kernel_several_times_is_counted_per_call():
    events = trace.load_events(FIXTURES / "h200_naive_eager.trace.json.gz")
    rows, s = trace.parse(_split_masked_fill(events, 4), "cuda")
    mf = next(r for r in rows if "masked_fill" in r["kernel"])
    assert mf["calls_per_step"] == 4 and mf["launches_per_op_call"] == 4
    assert mf["cpu_op"] == "aten::masked_fill_" and mf["op_max_input_numel"] == 8 * 16 * 1024**2
    assert all(r["launches_per_op_call"] == 1 for r in rows if r is not mf)


@pytest.mark.parametrize(
    "name", ["h200_naive_eager", "h200_math_eager", "h200_naive_default", "h200_cudnn_eager"]
)
def test_real_traces_launch_each_kernel_once_per_op_call(name):
    rows, _ = parse(name)
    assert all(r["launches_per_op_call"] == 1 for r in rows if r["cpu_op"]), name
