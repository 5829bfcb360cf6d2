"""The blog table's named rules, each on real H200 kernel rows (fixtures) or minimal rows."""

import csv

from study.observe import trace
from study.observe.classify import classify
from study.rows import revealed
from tests.conftest import FIXTURES


def kernels_from_trace(name):
    rows, summary = trace.parse(trace.load_events(FIXTURES / f"{name}.trace.json.gz"), "cuda")
    return [{k: ("" if v is None else str(v)) for k, v in r.items()} for r in rows], summary


def kernels_csv(name):
    """kernels.csv rows from an H200 run, re-classified with today's rules."""
    rows = list(csv.DictReader(open(FIXTURES / f"{name}.kernels.csv")))
    return [{**r, "kernel_class": classify(r["kernel"])} for r in rows]


RUN = {"run_id": "r", "status": "ok", "dtype": "bf16", "device": "cuda", "family": "attention"}


def test_hidden_copy_fires_for_naive_not_inplace():
    k, _ = kernels_from_trace("h200_naive_eager")
    assert "Memcpy DtoD" in revealed.hidden_copy(RUN, k)
    k, _ = kernels_from_trace("h200_naive_inplace_eager")
    assert revealed.hidden_copy(RUN, k) is None


def test_fp32_gemm_in_bf16_run():
    k, _ = kernels_from_trace("h200_math_eager")
    assert "FP32 GEMM" in revealed.fp32_gemm(RUN, k)
    assert revealed.fp32_gemm({**RUN, "dtype": "fp32"}, k) is None
    k, _ = kernels_from_trace("h200_naive_eager")
    assert revealed.fp32_gemm(RUN, k) is None


def test_mask_rebuilt_each_call():
    k, _ = kernels_from_trace("h200_math_eager")
    assert "triu_tril" in revealed.mask_rebuilt(RUN, k)
    k, _ = kernels_from_trace("h200_naive_eager")  # the mask is built once, outside the call
    assert revealed.mask_rebuilt(RUN, k) is None


def test_single_fused_kernel():
    k, _ = kernels_from_trace("h200_flash_eager")
    assert "flash_fwd_kernel" in revealed.single_fused(RUN, k)
    k, _ = kernels_from_trace("h200_cudnn_eager")
    assert "(+1 memset/copy)" in revealed.single_fused(RUN, k)
    k, _ = kernels_from_trace("h200_naive_eager")
    assert revealed.single_fused(RUN, k) is None


def test_low_occupancy_on_the_fastest_kernel():
    k, _ = kernels_from_trace("h200_flash_eager")
    fast = {**RUN, "run_id": "flash", "latency_median_us": "96"}
    slow = {**RUN, "run_id": "naive", "latency_median_us": "1063"}
    assert "fastest cell" in revealed.low_occupancy_fastest(fast, k, [fast, slow])
    assert (
        revealed.low_occupancy_fastest(fast, k, [fast, {**slow, "latency_median_us": "50"}]) is None
    )
    assert "13% estimated occupancy" in revealed.low_occupancy(
        fast, k, [fast, {**slow, "latency_median_us": "50"}]
    )


def test_cpu_time_above_gpu_time():
    assert "CPU-bound" in revealed.cpu_above_gpu(
        {**RUN, "cpu_us_per_step": "300", "gpu_us_per_step": "96"}, []
    )
    # v3's block, eager: the profiler's CPU above its GPU, the call itself GPU-bound
    block = {**RUN, "cpu_us_per_step": "826", "gpu_us_per_step": "724", "latency_median_us": "639"}
    assert revealed.cpu_above_gpu(block, []) == (
        "CPU above GPU under the profiler, GPU-bound per call: 826 us CPU vs 724 us GPU per "
        "step, 639 us a call"
    )
    host = {**block, "latency_median_us": "900"}  # 900 > 1.1 x 724: host-bound by latency too
    assert revealed.cpu_above_gpu(host, []).startswith("CPU-bound: 826 us CPU")
    assert (
        revealed.cpu_above_gpu({**RUN, "cpu_us_per_step": "30", "gpu_us_per_step": "96"}, [])
        is None
    )
    assert (
        revealed.cpu_above_gpu(
            {**RUN, "device": "cpu", "cpu_us_per_step": "300", "gpu_us_per_step": "9"}, []
        )
        is None
    )


def test_cudagraph_input_copies_are_not_called_hidden_copies():
    for name, n in (("h200_naive_reduce_overhead", 4), ("h200_flash_reduce_overhead", 2)):
        k = kernels_csv(name)
        assert f"CUDA-graph input copies: {n}/step" in revealed.cudagraph_input_copies(RUN, k), name
        assert revealed.hidden_copy(RUN, k) is None, name
    k, _ = kernels_from_trace("h200_naive_eager")
    assert revealed.cudagraph_input_copies(RUN, k) is None


def test_graph_replayed_kernels_are_attributed_to_their_step():
    rows, s = trace.parse(
        trace.load_events(FIXTURES / "h200_naive_reduce_overhead.trace.json.gz"), "cuda"
    )
    assert s["steps_consistent"] and s["graph_launched"]
    replayed = [r for r in rows if r["graph_launched"]]
    assert {r["kernel_class"] for r in replayed} >= {"gemm_cublas", "triton_persistent_reduction"}
    assert all(r["calls_per_step"] == 1 for r in replayed)


def test_pinned_backend_missing():
    bad = {**RUN, "status": "invalid", "backend_expected": "flash", "backend_seen": "math"}
    assert "flash did not run" in revealed.backend_missing(bad, [])
    assert revealed.backend_missing(RUN, []) is None


def test_table_lists_failures_with_reason():
    rows = revealed.table(
        [
            {
                **RUN,
                "variant": "efficient",
                "compile": "off",
                "status": "unsupported",
                "reason": "No viable backend",
            }
        ],
        {},
    )
    assert "unsupported: No viable backend" in rows[0]["revealed"]


def test_split_launches_names_the_op_and_the_2_31_limit():
    k = [
        {
            "kernel": "void at::native::elementwise_kernel<128, 4, masked_fill>(...)",
            "kernel_short": "elementwise_kernel[masked_fill_kernel]",
            "kernel_class": "aten_elementwise",
            "calls_per_step": "32",
            "us_per_step": "95233.6",
            "cpu_op": "aten::masked_fill_",
            "launches_per_op_call": "32",
            "op_max_input_numel": str(8 * 16 * 16384**2),
            "graph_launched": "False",
        }
    ]
    s = revealed.split_launches(RUN, k)
    assert "one aten::masked_fill_ call launches 32 x elementwise_kernel[masked_fill_kernel]" in s
    assert "34,359,738,368 elements, over 2^31-1" in s
    k[0]["op_max_input_numel"] = "1000"
    assert "2^31" not in revealed.split_launches(RUN, k)
    k[0]["launches_per_op_call"] = "1"
    assert revealed.split_launches(RUN, k) is None


def test_split_launches_of_a_foreach_copy_say_multi_tensor_apply():
    """part1 on the H200: reduce-overhead copies two 4096x4096 inputs into the CUDA graph."""
    k = [
        {
            "kernel": "void at::native::(anonymous namespace)::multi_tensor_apply_kernel<...>",
            "kernel_short": "multi_tensor_apply_kernel",
            "kernel_class": "copy",
            "calls_per_step": "2",
            "cpu_op": "aten::_foreach_copy_",
            "launches_per_op_call": "2",
            "op_max_input_numel": str(4096 * 4096),
            "graph_launched": "False",
        }
    ]
    s = revealed.split_launches(RUN, k)
    assert "one aten::_foreach_copy_ call launches 2 x multi_tensor_apply_kernel" in s
    assert "batch of tensor chunks (multi_tensor_apply)" in s and "2^31" not in s
    # the same copies in front of a CUDA-graph replay: cudagraph_input_copies says it, once
    k[0]["cpu_region"] = "CompiledFunction"
    k.append(
        {
            "kernel": "triton_poi_fused_0",
            "kernel_short": "triton_poi_fused_0",
            "kernel_class": "triton",
            "calls_per_step": "1",
            "graph_launched": "True",
        }
    )
    assert revealed.split_launches(RUN, k) is None
    assert "CUDA-graph input copies: 2/step" in revealed.cudagraph_input_copies(RUN, k)


def test_split_launches_stays_silent_on_real_h200_traces():
    for name in ("h200_naive_eager", "h200_math_eager", "h200_naive_default", "h200_cudnn_eager"):
        k, _ = kernels_from_trace(name)
        assert revealed.split_launches(RUN, k) is None, name


def test_the_partitioner_saving_less_than_eager_is_revealed():
    run = {
        "compile": "default",
        "saved_tensors": "3",
        "saved_bytes": str(2**20),
        "eager_saved_tensors": "6",
        "eager_saved_bytes": str(4 * 2**20),
    }
    s = revealed.partitioner_recomputes(run, [])
    assert s.startswith("partitioner saves 3 tensor(s), 1 MiB") and "eager saves 6, 4 MiB" in s
    assert revealed.partitioner_recomputes({**run, "saved_bytes": str(4 * 2**20)}, []) is None
    assert revealed.partitioner_recomputes({**run, "compile": "off"}, []) is None


def test_fp32_gemms_of_the_backward_say_so():
    ks = [
        {
            "kernel": "sm80_xmma_gemm_f32f32_f32f32_f32_tn",
            "kernel_short": "g",
            "kernel_class": "gemm_cublas",
            "phase": "bwd",
            "calls_per_step": "2",
        }
    ]
    assert "(in the bwd)" in revealed.fp32_gemm({"dtype": "bf16"}, ks)
    assert "kernels per step by phase: bwd 2" == revealed.backward_heavier({}, ks)
