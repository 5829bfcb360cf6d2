"""One cell on the CPU: every variant against its float64 reference, statuses, CPU kernels."""

import pytest

from study.cell.failures import classify_error
from study.workloads.registry import get, names
from tests.conftest import ROOT

VARIANTS = names()  # every registered variant, from the registry: no list to forget


@pytest.mark.slow
@pytest.mark.parametrize("variant", VARIANTS)
def test_every_variant_matches_its_reference(run_inline, variant):
    row, kernels, _ = run_inline(f"variant={variant}", "device=cpu", name=variant)
    if "cpu" not in get(variant).devices:  # a GPU-only library kernel: the library says so
        assert row["status"] == "unsupported", row["reason"]
        assert "No viable backend" in row["reason"]
        return
    assert row["status"] == "ok", row["reason"]
    assert row["max_rel_err"] <= row["tolerance"]
    assert row["latency_median_us"] > 0 and row["latency_p10_us"] <= row["latency_p90_us"]
    assert row["latency_samples"] >= 5 and row["latency_method"] == "perf_counter_per_call"
    assert row["timing_phase"] in ("fast", "mixed", "slow", "contended")
    assert sum(k["calls_per_step"] for k in kernels) > 0
    if row["steps_consistent"]:  # flex's eager fallback varies a few CPU ops between calls
        assert row["kernels_per_step"] == sum(k["calls_per_step"] for k in kernels)
    assert row["first_call_s"] > 0 and row["bytes_min"] > 0
    # Every built-in variant has FLOPs counted on its own call, never blank and never borrowed.
    assert row["flops"] > 0 and row["flops_source"] == "flop_counter", row.get("flops_note")
    assert row["tflops"] == pytest.approx(row["flops"] / (row["latency_median_us"] * 1e-6) / 1e12)
    assert all(k["kernel_class"] for k in kernels)
    assert (ROOT / "conf").exists()
    from study.config.env import boot_id, code_hash

    assert row["code_hash"] == code_hash()  # the code that ran, whatever git_rev says
    assert row["boot_id"] == boot_id()  # the machine it ran on, whatever its host name


@pytest.mark.slow
@pytest.mark.parametrize("dtype", ["fp32", "fp16"])
def test_other_dtypes(run_inline, dtype):
    row, _, _ = run_inline("variant=naive", f"dtype={dtype}", "device=cpu", name=dtype)
    assert row["status"] == "ok", row["reason"]
    assert row["dtype"] == dtype


@pytest.mark.slow
def test_out_of_place_masked_fill_shows_its_copy_on_cpu(run_inline):
    row, kernels, _ = run_inline("variant=naive", name="naive")
    row_i, kernels_i, _ = run_inline("variant=naive_inplace", name="inplace")
    assert [k["kernel"] for k in kernels if k["kernel_class"] == "copy"] == ["aten::copy_"]
    assert not [k for k in kernels_i if k["kernel_class"] == "copy"]
    assert row["kernels_per_step"] == row_i["kernels_per_step"] + 1 == 6


@pytest.mark.slow
def test_pinned_backend_is_proven_on_cpu(run_inline):
    row, kernels, _ = run_inline("variant=flash", name="flash")
    assert row["backend_seen"] == "flash" and "flash_attention_for_cpu" in row["backend_proof"]
    row, _, _ = run_inline("variant=math", name="math")
    assert (
        row["backend_seen"] == "math"
        and "_scaled_dot_product_attention_math" in row["backend_proof"]
    )
    row, _, _ = run_inline("variant=sdpa", name="sdpa")
    assert row["status"] == "ok" and row["backend_seen"] and row["backend_expected"] == ""


def test_cuda_requested_without_gpu_is_unsupported(run_inline):
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    row, _, _ = run_inline("variant=naive", "device=cuda", name="cuda")
    assert row["status"] == "unsupported" and "device=cuda" in row["reason"]


@pytest.mark.slow
def test_shape_that_cannot_fit_is_an_oom_row(run_inline):
    row, _, _ = run_inline(
        "variant=naive",
        "shape.batch=1",
        "shape.heads=1",
        "shape.seq_len=1048576",
        "shape.head_dim=1",
        name="oom",
    )
    assert row["status"] == "oom", row["reason"]
    assert "allocate" in row["reason"]


def test_flash_refuses_fp32_on_cuda_only_as_a_row():
    # The SDPA "no kernel" message, as CUDA raises it, is classified as unsupported.
    e = RuntimeError("No available kernel. Aborting execution.")
    assert (
        classify_error(e, ["Flash attention only supports dtype in [fp16, bf16]"])[0]
        == "unsupported"
    )
    assert "only supports" in classify_error(e, ["Flash attention only supports fp16"])[1]
    import torch

    assert classify_error(torch.OutOfMemoryError("CUDA out of memory"), [])[0] == "oom"
    assert classify_error(ValueError("boom"), [])[0] == "error"


@pytest.mark.slow
def test_calibration_file_is_the_ceilings_the_row_reads(run_inline, tmp_path):
    import json

    probe, _, _ = run_inline("variant=naive", name="probe")
    f = tmp_path / "ceilings.json"
    key = f"{probe['device_name']}|bf16|{probe['torch_version']}"
    f.write_text(json.dumps({key: {"tflops": 1.5, "gbps": 20.0}}))
    row, _, _ = run_inline("variant=naive", f"calibration_file={f}", name="cal")
    assert row["peak_tflops"] == 1.5 and row["peak_gbps"] == 20.0
    assert row["pct_peak_compute"] == pytest.approx(100 * row["tflops"] / 1.5)
    assert probe["peak_tflops"] != 1.5


@pytest.mark.slow
def test_block_compiles_into_fewer_kernels_around_its_library_calls(run_inline):
    eager, _, _ = run_inline("variant=block", name="block_off")
    row, kernels, _ = run_inline("variant=block", "compile=default", name="block_default")
    assert row["status"] == "ok", row["reason"]
    assert row["flops"] == eager["flops"] and row["flops_source"] == "flop_counter"
    assert row["kernels_per_step"] < eager["kernels_per_step"]
    calls = {k["kernel"]: k["calls_per_step"] for k in kernels}
    assert calls["aten::mm"] == 5  # qkv, proj, gate, up, down: extern GEMMs
    assert calls["aten::_scaled_dot_product_flash_attention_for_cpu"] == 1
    assert any("native_layer_norm" in k["kernel"] and k["fused_ops"] for k in kernels)


def _raised(outer: BaseException, inner: BaseException) -> BaseException:
    try:
        try:
            raise inner
        except BaseException as e:
            raise outer from e
    except BaseException as e:  # noqa: BLE001 - the chain as a cell catches it
        return e


def test_a_full_disk_during_a_compile_is_the_machines_failure_and_says_so():
    """Issue 68: a compile under `ulimit -f 100` read `error (compile: CalledProcessError ...)`
    and the sweep exited 0; "File too large" was only in the cell's log."""
    import errno
    import subprocess

    from study.rows.summary import harness_failure

    gxx = subprocess.CalledProcessError(1, ["g++", "x.cpp"])
    cases = [  # Inductor's C++ error carries the compiler's words, raised from its subprocess
        _raised(RuntimeError("C++ compile error\nOutput:\ng++: internal compiler error: File "
                             "size limit exceeded signal terminated program cc1plus"), gxx),
        OSError(errno.EFBIG, "File too large"),
        _raised(RuntimeError("write failed"), OSError(errno.ENOSPC, "No space left on device")),
        subprocess.CalledProcessError(1, ["g++"], output=b"fatal error: No space left on device"),
    ]  # fmt: skip
    for e in cases:
        status, reason = classify_error(e, [])
        assert status == "error" and reason.startswith("disk: "), reason
        assert harness_failure({"status": status, "reason": reason})  # the sweep exits 1
    status, reason = classify_error(_raised(RuntimeError("C++ compile error"), gxx), [])
    assert not reason.startswith("disk: ")  # a compiler's own error stays a compile result


def test_a_capped_cell_that_dies_for_memory_is_oom_not_crash():
    """Issue 68: cpu_mem_limit_gb=0.001 read `crash` (OpenMP could not map its threads' stacks
    before the cell wrote its row)."""
    from study.cell.failures import died

    omp = "libgomp: Thread creation failed: Resource temporarily unavailable"
    status, reason = died("exit code 1", omp, capped=True)
    assert status == "oom" and "cpu_mem_limit_gb" in reason and omp in reason
    assert died("exit code 1", "MemoryError", capped=True)[0] == "oom"
    assert died("exit code 1", omp, capped=False)[0] == "crash"  # no cap: not ours to say
    assert died("killed by signal SIGSEGV", "Segmentation fault", capped=True)[0] == "crash"


@pytest.mark.slow
def test_a_tiny_memory_cap_gives_an_oom_row(tmp_path):
    from study.rows import io
    from tests.conftest import TINY, cli

    r = cli("-m", "variant=naive", "compile=off", "cpu_mem_limit_gb=0.001",
            f"out_root={tmp_path}", *TINY)  # fmt: skip
    (row,) = io.read_csv(next(tmp_path.glob("sweeps/*/runs.csv")))
    assert row["status"] == "oom", row["reason"]
    assert r.returncode == 0, r.stderr[-1500:]  # an oom is a result, not the harness's failure
