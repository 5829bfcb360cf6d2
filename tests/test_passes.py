"""Training passes on the CPU: gradients checked, kernels by phase, memory, saved tensors,
compiled autograd, and dynamic shapes in one process."""

import csv

import pytest

from study.observe import trace
from tests.conftest import cli

pytestmark = pytest.mark.slow


def test_fwd_bwd_checks_every_gradient_and_splits_kernels_by_phase(run_inline):
    row, kernels, _ = run_inline("variant=naive", "pass=fwd_bwd", name="naive_bwd")
    assert row["status"] == "ok", row["reason"]
    assert row["pass"] == "fwd_bwd" and 0 <= row["grad_max_rel_err"] <= row["tolerance"]
    assert row["grad_worst"].startswith("input:")
    phases = {k["phase"] for k in kernels}
    assert phases == {"fwd", "bwd"}, phases
    assert row["kernels_by_phase"].startswith("fwd:") and ";bwd:" in row["kernels_by_phase"]
    fwd, _, _ = run_inline("variant=naive", name="naive_fwd")
    assert row["flops"] == pytest.approx(3 * fwd["flops"])  # backward: two matmuls per matmul
    assert row["saved_tensors"] >= 2
    # the CPU's first-call peak is RSS growth: blank, never 0 or negative, where the call reused
    # pages an earlier test in this worker freed (failed once with `yes` on the other core)
    peak = row["compile_peak_mem_bytes"]
    assert peak is None or peak > 0, peak
    assert row["mem_source"] == "cpu_rss_peak_delta"  # steady peak: blank when RSS did not grow


def test_a_wrong_gradient_is_a_mismatch_that_names_the_tensor(run_inline, monkeypatch):
    from study.cell import passes

    real = passes.Reference.run

    def off_by_a_lot(self, grad_out=None):
        out, grads = real(self, grad_out)
        grads["input:1"] = grads["input:1"] * 1.5
        return out, grads

    monkeypatch.setattr(passes.Reference, "run", off_by_a_lot)
    row, _, _ = run_inline("variant=naive", "pass=fwd_bwd", name="wrong")
    assert row["status"] == "mismatch" and "gradient of input:1" in row["reason"], row["reason"]


def test_the_sdpa_backward_proves_its_backend(run_inline):
    row, kernels, _ = run_inline("variant=flash", "pass=fwd_bwd", "compile=default", name="fb")
    assert row["status"] == "ok", row["reason"]
    assert row["backend_seen"] == "flash (fwd), flash (bwd)", row["backend_proof"]
    assert any(k["phase"] == "bwd" and k["kernel_class"] == "flash" for k in kernels)
    assert row["eager_saved_tensors"] is not None and row["speedup_paired"] > 0


def test_train_step_attributes_the_optimizer_and_compares_memory(run_inline):
    row, kernels, _ = run_inline("variant=mlp", "pass=train_step", "compile=default", name="ts")
    assert row["status"] == "ok", row["reason"]
    assert {k["phase"] for k in kernels} == {"fwd", "bwd", "optim"}
    assert any(k["phase"] == "bwd" and k["generated"] for k in kernels)  # AOTAutograd's backward
    assert row["compile_peak_mem_bytes"] > 0 and row["mem_source"] == "cpu_rss_peak_delta"
    assert row["saved_tensors"] < row["eager_saved_tensors"]  # the partitioner recomputes
    plain, _, _ = run_inline("variant=matmul_add", "pass=train_step", name="inputs")
    assert plain["status"] == "ok" and "AdamW trains the inputs" in plain["notes"]


def test_compiled_autograd_counts_its_captures(run_inline):
    row, _, _ = run_inline(
        "variant=linear",
        "pass=fwd_bwd",
        "compile=default",
        "compile.compiled_autograd=true",
        name="ca",
    )
    assert row["status"] == "ok", row["reason"]
    assert row["autograd_captures"] >= 1 and row["autograd_compiles"] >= 1


def test_an_in_process_cell_forgets_graphs_an_earlier_one_left_counted(run_inline):
    # what CI once left behind: graphs still counted while the frame count read 0
    from torch._dynamo.utils import counters

    counters.clear()
    counters["stats"]["unique_graphs"] = 3
    row, _, _ = run_inline("variant=naive", "compile=default", name="leftover")
    assert row["status"] == "ok", row["reason"]
    assert row["graphs"] == 1


@pytest.mark.parametrize("dynamic, most", [("false", 3), ("true", 2), ("mark", 2)])
def test_a_shape_sweep_in_one_process_counts_its_graphs(run_inline, tmp_path, dynamic, most):
    row, _, _ = run_inline(
        "variant=naive",
        "compile=default",
        f"compile.dynamic={dynamic}",
        "shape_sweep.key=seq_len",
        "shape_sweep.sizes=[16,32,48]",
        name=f"dyn_{dynamic}",
    )
    assert row["status"] == "ok", row["reason"]
    with open(tmp_path / f"dyn_{dynamic}" / "shapes.csv") as f:
        shapes = list(csv.DictReader(f))
    assert [s["value"] for s in shapes] == ["16", "32", "48"]
    assert all(s["status"] == "ok" and float(s["latency_median_us"]) > 0 for s in shapes)
    graphs = int(shapes[-1]["graphs"])
    assert graphs <= most and (dynamic != "false" or graphs == 3)
    if dynamic == "false":
        assert "size mismatch" in shapes[1]["recompile_reason"]


def test_a_pass_that_does_not_exist_lists_the_passes(tmp_path):
    r = cli("-m", "pass=bogus", f"out_root={tmp_path}")
    assert r.returncode != 0 and "fwd_bwd" in r.stderr and "train_step" in r.stderr
    assert "Traceback" not in r.stderr


def test_backward_kernels_launched_from_autograds_thread_belong_to_their_step():
    """The launch happens on autograd's thread (2) while the main thread (1) is inside
    study::bwd: its kernel is this step's, phase bwd. A launch outside the pass's ranges on
    another thread stays unattributed."""
    from tests.conftest import trace_event, training_step

    events = training_step("gemm_fwd", "gemm_bwd") + [
        trace_event("cudaLaunchKernel", "cuda_runtime", 200, 2, 2, correlation=3),
        trace_event("stray", "kernel", 202, 1, 7, correlation=3),
    ]
    rows, s = trace.parse(events, "cuda")
    by = {r["kernel"]: r["phase"] for r in rows}
    assert by == {"gemm_fwd": "fwd", "gemm_bwd": "bwd"}
    assert s["unattributed_events"] == 1 and s["kernels_by_phase"] == "fwd:1;bwd:1"


def test_the_training_tables_read_a_sweep(tmp_path):
    """analysis.tables.training on rows as a sweep writes them (runs.csv, shapes.csv), CSVs alone."""
    from analysis.tables import training
    from study.rows import io

    base = {"status": "ok", "device": "cuda", "dtype": "bf16", "variant": "naive"}
    runs = [
        {
            **base,
            "run_id": f"{m},{p}",
            "config_hash": f"{m}{p}",
            "compile": m,
            "pass": p,
            "speedup_paired": sp,
            "speedup_ci_low": lo,
            "speedup_ci_high": hi,
            "peak_mem_alloc_bytes": 2**20 * mib,
            "eager_peak_mem_alloc_bytes": 2**21,
            "compression_ratio": 2 / mib,
            "mem_source": "cuda_caching_allocator",
            "saved_tensors": 3,
            "saved_bytes": 2**20,
            "eager_saved_tensors": 6,
            "eager_saved_bytes": 2**22,
        }
        for m, p, sp, lo, hi, mib in (
            ("default", "fwd", 3.0, 2.9, 3.1, 1),
            ("default", "fwd_bwd", 1.01, 0.97, 1.05, 2),
            ("off", "fwd", None, None, None, 2),
            ("reduce-overhead", "fwd", 0.999, 0.998, 0.9995, 1),
            ("reduce-overhead", "fwd_bwd", 0.50, 0.49, 0.51, 1),
        )
    ]
    runs[-1]["timing_phase"] = "slow"
    runs.append({**runs[-1], "run_id": "ma", "config_hash": "ma", "compile": "max-autotune",
                 "pass": "fwd", "timing_phase": "fast", "speedup_ci_low": None,
                 "speedup_ci_high": None})  # fmt: skip
    io.write_csv(tmp_path / "runs.csv", runs, "runs")
    shapes = [
        {
            "run_id": f"r{d}",
            "variant": "naive",
            "compile": "default",
            "dynamic": d,
            "pass": "fwd",
            "key": "seq_len",
            "value": v,
            "order": i,
            "first_call_s": 2.0 if c else 0.01,
            "compiled": c,
            "graphs": g,
            "recompiles": g - 1,
            "latency_median_us": lat,
            "status": "ok",
        }
        for d, rows in (
            (False, [(512, True, 1, 100.0), (1024, True, 2, 200.0)]),
            (True, [(512, True, 1, 110.0), (1024, False, 1, 240.0)]),
        )
        for i, (v, c, g, lat) in enumerate(rows)
    ]
    io.write_csv(tmp_path / "shapes.csv", shapes, "shapes")
    text = training.report([tmp_path])
    assert (
        "| naive | default | 3.00x [2.90–3.10] | 1.01x [0.97–1.05] (no measurable difference) |"
        in text
    )
    assert (
        "| naive | reduce-overhead | 1.00x [1.00–1.00] (within ±1%) | 0.50x [0.49–0.51], host slow |"
        in text
    )
    assert "| naive | max-autotune | 0.50x |  |" in text  # no interval: the ratio alone
    assert (
        "| naive | fwd_bwd | default | 2.0 | 2.0 | 1.00x |" in text
        and "3 (1.0) | 6 (4.0) |" in text
    )
    assert "| naive | fwd | False | 2 | 1 | 4.0 | 100.0 | 200.0 |" in text
    assert "| naive | fwd | True | 1 | 0 | 2.0 | 110.0 | 240.0 |" in text
    assert "naive fwd, dynamic=True: latency 1.10–1.20x of specialised" in text


def test_an_additive_bias_is_data_not_a_leaf(run_inline):
    """SDPA with alibi takes its bias as an attn_mask input: a training pass trains q, k, v
    only (the reference rebuilds the bias itself)."""
    row, _, _ = run_inline("variant=math", "family.score_mod=alibi", "pass=fwd_bwd", name="alibi")
    assert row["status"] == "ok", row["reason"]


@pytest.mark.parametrize("pass_", ["fwd", "fwd_bwd"])
def test_the_float64_reference_is_gone_before_the_steady_state_memory(
    run_inline, monkeypatch, pass_
):
    """The check's float64 reference (output, gradients, input and parameter copies) was kept
    on the cell until it ended, so every steady-state peak held it: flash's forward read 169 MB
    on the H200, 67 of them the float64 output's. Measured here on the CPU, by what is alive."""
    import gc

    import torch

    from study.measure import memory

    def float64() -> int:  # alive in this process now (other tests' leave a baseline)
        gc.collect()
        return sum(1 for o in gc.get_objects()
                   if issubclass(type(o), torch.Tensor) and o.dtype == torch.float64)  # fmt: skip

    seen, real = [], memory.steady

    def steady(step, device, calls=3):
        seen.append(float64())
        return real(step, device, calls)

    monkeypatch.setattr(memory, "steady", steady)
    before = float64()
    row, _, _ = run_inline("variant=mlp", f"pass={pass_}", name=f"ref_{pass_}")
    seen = [n - before for n in seen]
    assert row["status"] == "ok" and seen and seen == [0] * len(seen), seen


def test_the_loss_adds_no_kernel_of_its_own():
    """(out * g).sum() and nothing else: sum() over the outputs' terms started from 0, and
    0 + tensor is one more kernel in every training step (v3's first sweeps: 11 → 12 kernels a
    step in part3's fwd_bwd cells, eager and compiled alike)."""
    import torch

    from study.cell.passes import loss

    y, g = torch.randn(4, requires_grad=True), torch.randn(4)
    with torch.profiler.profile() as p:
        loss([y], [g])
    names = {e.name for e in p.events()}
    assert "aten::mul" in names and "aten::sum" in names
    assert "aten::add" not in names
    two = loss([y, y], [g, g])  # two outputs: their terms added, once
    assert torch.allclose(two, 2 * (y * g).sum())


def test_the_steps_own_peak_leaves_out_what_earlier_calls_left_allocated(monkeypatch):
    """v3 on the H200: the compiled matmul+bias n=64 under reduce-overhead read 33,572,352 B
    allocated at its peak against v2's 17,920: eager's 32 MiB cuBLAS workspace, allocated by
    the paired rounds before. The step's own peak leaves it out (a faked CUDA allocator)."""
    import torch

    from study.measure import memory

    live = {"now": 32 * 2**20 + 4096, "peak": 0}  # the workspace and the inputs, already there
    fake = {
        "synchronize": lambda: None,
        "empty_cache": lambda: None,
        "reset_peak_memory_stats": lambda: live.update(peak=live["now"]),
        "memory_allocated": lambda: live["now"],
        "max_memory_allocated": lambda: live["peak"],
        "max_memory_reserved": lambda: 40 * 2**20 + live["peak"],
    }
    for name, f in fake.items():
        monkeypatch.setattr(torch.cuda, name, f)

    def step():  # 17,920 B for the call's own output, freed after
        live["peak"] = max(live["peak"], live["now"] + 17920)

    p = memory.steady(step, "cuda")
    assert p.allocated == 32 * 2**20 + 4096 + 17920 and p.step == 17920
    cpu = memory.steady(lambda: [0.0] * 10**6, "cpu")  # the CPU's figure is a growth already
    assert cpu.step == cpu.allocated
