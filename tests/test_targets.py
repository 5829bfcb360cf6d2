"""Compile targets (study/config/compile_targets.py): what makes no sense is refused at start, each target's
claim is proven from its trace, C++ sources are harvested, and the analysis subtracts layers.
No compile, no process: the CPU runs are in tests/test_targets_cpu.py (slow)."""

import pandas as pd
import pytest

from analysis.tables import layers as tables_layers
from study.config import compile_targets
from study.config.rules import validate
from study.errors import ConfigError
from study.observe import inductor, proof
from tests.conftest import compose


@pytest.mark.parametrize(
    "overrides, words",
    [
        (["compile=default", "compile.freezing=true", "pass=train_step"], "pass=train_step"),
        (["compile=aot_eager", "compile.freezing=true"], "needs Inductor"),
        (["compile=aot_eager", "+compile.inductor.max_autotune=true"], "runs no Inductor"),
        (["compile=dynamo_eager", "+compile.inductor.max_autotune=true"], "runs no Inductor"),
        (["compile=aot_inductor", "compile.dynamic=true"], "Dim specs"),
        (["compile=aot_inductor", "compile.compiled_autograd=true"], "needs Dynamo"),
        (["compile=aot_inductor", "compile.stance=skip_guard_eval_unsafe"], "runs no Dynamo"),
        (["compile=default", "compile.stance=skip_guards"], "is not a stance"),
    ],
)
def test_an_option_that_makes_no_sense_for_a_target_is_refused_naming_both(overrides, words):
    with pytest.raises(ConfigError) as e:
        validate(compose("variant=linear", *overrides))
    assert words in str(e.value)
    target = [o.split("=", 1)[1] for o in overrides if o.startswith("compile=")][0]
    assert target in str(e.value) or "compile.freezing" in str(e.value) or "stance" in str(e.value)


@pytest.mark.parametrize(
    "overrides",
    [
        ["compile=default", "compile.freezing=true"],
        ["compile=cpp_wrapper", "compile.freezing=true"],
        ["compile=aot_inductor", "compile.freezing=true"],
        ["compile=cudagraphs", "pass=train_step"],
        ["compile=off", "+compile.inductor.max_autotune=true"],  # eager ignores compile settings
        ["compile=dynamo_eager", "compile.stance=skip_guard_eval_unsafe"],
        ["compile=default", "compile.stance=skip_guard_eval_unsafe"],
    ],
)
def test_what_makes_sense_is_accepted(overrides):
    validate(compose("variant=linear", *overrides))


def test_an_unknown_target_lists_every_valid_one():
    with pytest.raises(ConfigError) as e:
        validate(compose("variant=linear", "compile.mode=aot_eagr"))
    for name in compile_targets.TARGETS:
        assert name in str(e.value)


def _k(name, generated=True):
    return {"kernel": name, "generated": generated}


ROW = {"graphs": 1, "cudagraph_skips": 0}


@pytest.mark.parametrize(
    "mode, device, kernels, generated, row, ok, words",
    [
        ("dynamo_eager", "cuda", [_k("ampere_gemm", False)], {}, ROW, True, "no generated"),
        ("dynamo_eager", "cuda", [_k("triton_poi_fused_add_0")], {}, ROW, False, "yet generated"),
        ("aot_eager", "cpu", [], {}, {"graphs": 0}, False, "captured no graph"),
        ("aot_eager", "cpu", [], {}, {"graphs": "0.0"}, False, "captured no graph"),  # CSV text
        ("cudagraphs", "cuda", [], {}, {"graphs": 1, "cudagraph_skips": 1}, False, "skipped"),
        ("cudagraphs", "cpu", [], {}, {"graphs": 1, "cudagraph_skips": 1}, True, "no generated"),
        ("cpp_wrapper", "cpu", [], {"cpp_wrapper": False}, ROW, False, "not C++"),
        ("cpp_wrapper", "cpu", [], {"cpp_wrapper": True}, ROW, True, "C++"),
        (
            "aot_inductor",
            "cuda",
            [_k("triton_poi_fused_x_0")],
            {"kernels": {"triton_poi_fused_x_0": {}}},
            ROW,
            True,
            "each in the package",
        ),
        (
            "aot_inductor",
            "cuda",
            [_k("triton_poi_fused_y_1")],
            {"kernels": {"triton_poi_fused_x_0": {}}},
            ROW,
            False,
            "not in the package",
        ),
        ("default", "cuda", [], {"frozen": False}, {**ROW, "freezing": True}, False, "frozen"),
        ("default", "cuda", [], {"frozen": True}, {**ROW, "freezing": "True"}, True, "frozen"),
        ("default", "cuda", [_k("triton_poi_fused_add_0")], {}, ROW, True, ""),
    ],
)
def test_a_target_is_proven_from_the_trace(mode, device, kernels, generated, row, ok, words):
    got = proof.prove_target(mode, device, kernels, generated, row)
    assert got["ok"] is ok
    text = got["proof"] if ok else got["reason"]
    assert words in text
    if not ok:
        assert proof.is_proof_reason(got["reason"])  # reparse re-decides it, never keeps it


CPP = """
extern "C"  void  cpp_fused_gelu_0(float* in_out_ptr0);
void inductor_entry_impl() {
    cpp_fused_gelu_0((float*)(buf1.data_ptr()));
    loadKernel("triton_poi_fused_add_1", "abc.cubin");
}
extern "C"  void  cpp_fused_gelu_0(float* in_out_ptr0)
{
    torch::aot_inductor::RAIIAtenRecordFunctionHandle record_graph_0_cpp_fused_gelu_0_("graph_0_cpp_fused_gelu_0", nullptr);
    auto x = _frozen_param0;
}
"""
TRITON = "import triton\n\n@triton.jit\ndef triton_poi_fused_add_1(in_ptr0, xnumel):\n    pass\n"


def test_cpp_sources_are_harvested_kernel_by_kernel(tmp_path):
    gen = tmp_path / "generated"
    (gen / "kernel_modules").mkdir(parents=True)
    (gen / "output_code_0.cpp").write_text(CPP)
    (gen / "kernel_modules" / "k.py").write_text(TRITON)
    got = inductor.analyse(tmp_path)
    k = got["kernels"]
    assert set(k) == {"cpp_fused_gelu_0", "triton_poi_fused_add_1"}  # the definition, not the
    assert k["cpp_fused_gelu_0"]["trace_name"] == "graph_0_cpp_fused_gelu_0"  # declaration
    assert (tmp_path / k["triton_poi_fused_add_1"]["source_file"]).read_text() == TRITON
    assert inductor.match_kernel("graph_0_cpp_fused_gelu_0", k) == "cpp_fused_gelu_0"
    assert got["cpp_wrapper"] and got["frozen"]


def test_a_python_wrapper_is_neither_cpp_nor_frozen(tmp_path):
    gen = tmp_path / "generated"
    gen.mkdir()
    (gen / "output_code_0.py").write_text(
        "triton_poi_fused_add_0 = async_compile.triton('triton_poi_fused_add_0', '''x''')\n"
        "def call(args):\n    pass\n"
    )
    got = inductor.analyse(tmp_path)
    assert set(got["kernels"]) == {"triton_poi_fused_add_0"}
    assert not got["cpp_wrapper"] and not got["frozen"]


def _row(compile_, sp, lo, hi, eager=10.0, phase="fast", variant="linear"):
    return {
        "variant": variant,
        "pass": "fwd",
        "dtype": "bf16",
        "device": "cuda",
        "compile": compile_,
        "status": "ok",
        "eager_latency_paired_us": eager,
        "speedup_paired": sp,
        "speedup_ci_low": lo,
        "speedup_ci_high": hi,
        "device_time_us": 3.0,
        "timing_phase": phase,
    }


RAW = pd.DataFrame(
    [
        _row("dynamo_eager", 0.5, 0.5, 0.5),  # 20 µs a call: +10
        _row("aot_eager", 0.25, 0.25, 0.25),  # 40 µs: +30, so AOTAutograd +20
        _row("default", 1 / 3, 0.25, 0.5),  # 30 µs [20, 40]: Inductor -10 [-20, 0]
        _row("cpp_wrapper", 1.25, 1.1, 1.4, phase="slow"),  # 8 µs: removes the slowdown
    ]
)


def test_layers_subtract_targets_within_their_intervals():
    lay = tables_layers.layers(RAW).set_index("layer")
    assert lay.loc["Dynamo", "us"] == pytest.approx(10)
    assert lay.loc["AOTAutograd", "us"] == pytest.approx(20)
    assert lay.loc["Inductor", "us"] == pytest.approx(-10)
    assert (lay.loc["Inductor", "lo"], lay.loc["Inductor", "hi"]) == pytest.approx((-20, 0))
    assert lay.loc["C++ wrapper", "us"] == pytest.approx(-22)
    assert not lay.loc["C++ wrapper", "fast"] and lay.loc["Dynamo", "fast"]


def test_processes_give_the_interval_over_processes_every_table_uses():
    """The defect: the t-interval of study.observe.stats, not the envelope of the processes'."""
    from study.observe.stats import across_processes

    raw = pd.concat([RAW, pd.DataFrame([_row("dynamo_eager", 0.4, 0.3, 0.45)])])
    a = tables_layers.added(raw).set_index("compile")
    sp, lo, hi = across_processes([0.5, 0.4], [0.5, 0.3], [0.5, 0.45])
    assert a.loc["dynamo_eager", "processes"] == 2
    assert a.loc["dynamo_eager", "added_us"] == pytest.approx(10 * (1 / sp - 1))
    assert a.loc["dynamo_eager", "added_hi"] == pytest.approx(10 * (1 / lo - 1))
    assert a.loc["dynamo_eager", "added_lo"] == pytest.approx(10 * (1 / hi - 1))


def test_the_verdict_says_whether_a_deployment_path_removes_the_slowdown():
    (v,) = tables_layers.verdicts(RAW)
    assert "default is slower than eager" in v
    assert "cpp_wrapper removes it" in v and "aot_inductor was not run" in v
    failed = {**_row("aot_inductor", 1.0, 1.0, 1.0), "status": "error"}
    (v,) = tables_layers.verdicts(pd.concat([RAW, pd.DataFrame([failed])]).assign(n=float("nan")))
    assert "aot_inductor has no ok row (error)" in v  # a shape key no row has (NaN) too
    unpaired = {**_row("aot_inductor", float("nan"), float("nan"), float("nan"))}
    (v,) = tables_layers.verdicts(pd.concat([RAW, pd.DataFrame([unpaired])]))
    assert "aot_inductor has no paired speedup (its rows: ok)" in v
    (v,) = tables_layers.verdicts(
        RAW[RAW["compile"] != "cpp_wrapper"].assign(**{"pass": "fwd_bwd"})
    )
    assert v.startswith("linear (fwd_bwd): default is slower") and "no deployment path ran" in v
    fine = RAW.assign(speedup_ci_high=1.2, speedup_ci_low=0.9, speedup_paired=1.0)
    (v,) = tables_layers.verdicts(fine)
    assert "nothing to remove" in v


def test_the_table_marks_a_slow_phase_figure():
    t = tables_layers.table(RAW)
    assert t.loc[0, "cpp_wrapper"].endswith("*")
    assert not t.loc[0, "default"].endswith("*")


def test_a_cpp_wrappers_aten_shim_reads_as_the_aten_op_it_runs():
    from study.observe.classify import classify
    from study.observe.trace import aten_name

    e = aten_name({"name": "aoti_torch_cpu__scaled_dot_product_flash_attention_for_cpu"})
    assert e["name"] == "aten::_scaled_dot_product_flash_attention_for_cpu"
    assert classify(e["name"]) == "flash"  # so the CPU proof sees flash under cpp_wrapper/AOTI
    assert aten_name({"name": "aten::mm"}) == {"name": "aten::mm"}


def test_the_figure_says_what_its_star_means():
    """v3's targets_bwd: cuDNN's Inductor layer, +217.2*, timed in the slow phase; the figure
    alone (without the report's sentence) says what * is."""
    import matplotlib.pyplot as plt

    from analysis.figures.layers import where_time_goes

    raw = RAW.assign(family="linear", device_name="NVIDIA H200", torch_version="2.11")
    fig, _ = where_time_goes({"runs": raw})
    try:
        assert "*: timed outside the host's fast phase" in fig.axes[0].get_xlabel()
    finally:
        plt.close(fig)
    fig, _ = where_time_goes({"runs": raw[raw["compile"] != "cpp_wrapper"]})
    try:
        assert "*" not in fig.axes[0].get_xlabel()
    finally:
        plt.close(fig)


def test_the_figure_draws_bars_to_scale_unless_they_span_two_decades():
    """+76.6 and +105.6 µs looked equal on the symlog axis: bars of one order of magnitude are
    drawn linear, so their lengths compare; symlog only where a few µs sit beside hundreds."""
    import matplotlib.pyplot as plt

    from analysis.figures.layers import scale, where_time_goes

    assert scale([76.6, 105.6, -3.0]) == "linear"
    assert scale([2.0, 500.0]) == "symlog"
    raw = RAW.assign(family="linear", device_name="NVIDIA H200", torch_version="2.11")
    fig, _ = where_time_goes({"runs": raw})
    try:
        ax = fig.axes[0]
        bars = [p for p in ax.patches if abs(p.get_width()) >= 1]
        want = scale([p.get_width() for p in bars])
        assert ax.get_xscale() == want and ("symlog" in ax.get_xlabel()) == (want == "symlog")
    finally:
        plt.close(fig)


def test_the_default_stance_leaves_a_cells_identity_as_it_was():
    """A sweep made before compile.stance existed resumes: its cells' config_hash is
    unchanged under the default stance, and the other stance is another cell."""
    from study.config import identity
    from study.config.cell_config import to_plain

    plain = to_plain(compose("variant=linear", "compile=default"))
    before = {**plain, "compile": {k: v for k, v in plain["compile"].items() if k != "stance"}}
    skip = {**plain, "compile": {**plain["compile"], "stance": "skip_guard_eval_unsafe"}}
    assert identity.config_hash(plain) == identity.config_hash(before)
    assert identity.config_hash(skip) != identity.config_hash(plain)
