"""FlexAttention and the masks: one definition for flex and the dense reference, flex eager and
compiled against float64, the block mask's build time and sparsity, and FLOPs the mask needs."""

import pytest
import torch
from torch.nn.attention.flex_attention import create_block_mask, create_mask

from study.rows import io
from study.workloads import masks
from study.workloads.flex import sparsity
from tests.conftest import cli

FAMILY = {"window": 5, "prefix": 3, "documents": 3, "softcap": 2.0}


@pytest.mark.parametrize("kind", ["causal", "sliding_window", "document", "prefix_lm"])
def test_the_dense_mask_is_flexs_own_mask(kind):
    mod, _ = masks.mask_mod(kind, FAMILY, 24, seed=0, device="cpu")
    want = create_mask(mod, 1, 1, 24, 24, device="cpu")[0, 0]  # flex's dense view of it
    assert torch.equal(masks.dense_keep(mod, 24, "cpu"), want)


def test_masks_mean_what_they_say():
    keep = {
        k: masks.dense_keep(masks.mask_mod(k, FAMILY, 12, 0, "cpu")[0], 12, "cpu")
        for k in masks.MASKS
    }
    causal = torch.ones(12, 12, dtype=torch.bool).tril()
    assert torch.equal(keep["causal"], causal) and keep["none"].all()
    assert keep["sliding_window"].sum(1).tolist() == [1, 2, 3, 4, 5] + [5] * 7  # last 5 keys
    assert torch.equal(keep["prefix_lm"], causal | (torch.arange(12) < 3)[None, :])
    doc = masks.document_ids(12, 3, seed=0, device="cpu")
    assert doc.tolist() == sorted(doc.tolist()) and len(set(doc.tolist())) == 3
    assert torch.equal(doc, masks.document_ids(12, 3, seed=0, device="cpu"))  # from the seed
    packings = {tuple(masks.document_ids(12, 3, seed=i, device="cpu").tolist()) for i in range(5)}
    assert len(packings) > 1  # random lengths: another seed, another packing
    assert torch.equal(keep["document"], causal & (doc[:, None] == doc[None, :]))


def test_sparsity_counts_tiles_where_blockmask_sparsity_reads_negative():
    mod, _ = masks.mask_mod("causal", FAMILY, 128, 0, "cpu")
    bm = create_block_mask(mod, None, None, 128, 128, device="cpu", BLOCK_SIZE=32)
    assert sparsity(bm) == pytest.approx(bm.sparsity()) == 37.5  # 6 of 16 tiles skipped
    bm = create_block_mask(mod, None, None, 100, 100, device="cpu", BLOCK_SIZE=32)
    assert sparsity(bm) == 37.5  # 4 x 4 tiles, the last ones partial


FX_GRAPH = """class <lambda>(torch.nn.Module):
    def forward(self, arg0_1: "bf16[2, 4, 128, 32]", arg1_1: "bf16[2, 4, 128, 32]"):
        sdpa_score0 = self.sdpa_score0
        sdpa_mask0 = self.sdpa_mask0
        flex_attention = torch.ops.higher_order.flex_attention(arg0_1, arg1_1, arg2_1, sdpa_score0)
        getitem: "bf16[2, 4, 128, 32]" = flex_attention[0];  flex_attention = None
        return (getitem,)

    class sdpa_score0(torch.nn.Module):
        def forward(self, arg0_1: "bf16[]", arg1_1: "i32[]", arg2_1: "i32[]", arg3_1: "i32[]"):
            div: "bf16[]" = torch.ops.aten.div.Tensor(arg0_1, 30);  arg0_1 = None
            tanh: "bf16[]" = torch.ops.aten.tanh.default(div);  div = None
            mul: "bf16[]" = torch.ops.aten.mul.Tensor(tanh, 30);  tanh = None
            return mul

    class sdpa_mask0(torch.nn.Module):
        def forward(self, arg0_1: "i32[]", arg1_1: "i32[]", arg2_1: "i32[]", arg3_1: "i32[]"):
            ge: "b8[]" = torch.ops.aten.ge.Tensor(arg2_1, arg3_1);  arg2_1 = arg3_1 = None
            return ge
"""


def test_the_mods_fused_into_flex_are_named_by_their_ops(tmp_path):
    # The post-grad graph (Inductor's debug dir, torch 2.13 CPU) keeps score_mod and mask_mod as
    # subgraphs; provenance names those subgraphs, so fused_ops lists their ops too.
    from study.observe import inductor

    (tmp_path / "g").mkdir()
    (tmp_path / "g" / "fx_graph_transformed.py").write_text(FX_GRAPH)
    ops = inductor._post_grad_ops(tmp_path / "g")  # one graph's own debug dir
    assert ops["flex_attention"] == "higher_order.flex_attention"
    assert ops["sdpa_score0"] == "sdpa_score0(aten.div,aten.tanh,aten.mul)"
    assert ops["sdpa_mask0"] == "sdpa_mask0(aten.ge)"
    # The C++ template's profiler range is graph_<i>_kernel; its source records that name.
    kernels = {"cpp_fused_flex_attention_0": {"trace_name": "graph_0_kernel"}}
    assert inductor.match_kernel("graph_0_kernel", kernels) == "cpp_fused_flex_attention_0"
    assert inductor.match_kernel("graph_1_kernel", kernels) is None


def _useful(row):
    return row["flops_useful"] / row["flops"]


@pytest.mark.parametrize(
    "family",
    [
        ["family.mask=causal"],
        ["family.mask=sliding_window", "family.window=16"],
        ["family.mask=document", "family.documents=3"],
        ["family.mask=prefix_lm", "family.prefix=40", "family.score_mod=alibi"],
        ["family.mask=none", "family.score_mod=softcap", "family.softcap=2"],
    ],
)
@pytest.mark.slow
def test_flex_eager_fallback_matches_float64_and_says_it_is_unfused(run_inline, family):
    row, kernels, _ = run_inline(
        "variant=flex", "shape.seq_len=128", "family.block_size=32", *family, name="flex"
    )
    assert row["status"] == "ok", row["reason"]
    assert row["max_rel_err"] <= row["tolerance"]
    assert row["backend_seen"] == "flex_eager" and "unfused eager fallback" in row["notes"]
    assert row["mask"] == family[0].split("=")[1]
    assert row["flops_source"] == "flop_counter" and row["flops"] == 4 * 2 * 2 * 128**2 * 8
    tiles = 1 - row["block_sparsity"] / 100  # the block mask's kept tiles, partial ones whole
    assert row["flops_scheduled"] == pytest.approx(row["flops"] * tiles)
    assert _useful(row) <= tiles  # the mask's kept elements: never more than its tiles
    if row["mask"] == "causal":
        assert _useful(row) == pytest.approx(129 / 256)  # S(S+1)/2 of S^2, as SDPA's
    assert row["tflops_useful"] == pytest.approx(row["tflops"] * _useful(row))
    if row["mask"] == "none":
        assert row["block_sparsity"] == 0.0 and row.get("block_mask_s") is None
    else:
        assert 0 < row["block_sparsity"] < 100 and 0 < row["block_mask_s"] < 5


@pytest.mark.slow
def test_causal_sdpa_and_naive_need_half_the_matrix(run_inline):
    for variant in ("flash", "naive"):
        row, _, _ = run_inline(f"variant={variant}", "shape.seq_len=64", name=variant)
        assert row["status"] == "ok" and row["mask"] == "causal" and row["causal"] is True
        assert _useful(row) == pytest.approx(65 / 128)  # S(S+1)/2 of S^2
        assert row.get("flops_scheduled") is None  # no block mask: nothing scheduled beyond
    row, _, _ = run_inline("variant=linear", name="linear")
    assert row["flops_useful"] == row["flops"] and row.get("mask") is None


@pytest.mark.slow
def test_sdpa_takes_any_mask_as_attn_mask_or_says_what_it_cannot(run_inline):
    win = ["family.mask=sliding_window", "family.window=8"]
    row, _, _ = run_inline("variant=flash", *win, name="flash_window")  # CPU flash takes masks
    assert row["status"] == "ok" and row["max_rel_err"] <= row["tolerance"], row["reason"]
    assert _useful(row) < 0.5 and row["backend_seen"] == "flash"
    row, _, _ = run_inline("variant=math", "family.score_mod=alibi", name="math_alibi")
    assert row["status"] == "ok" and row["max_rel_err"] <= row["tolerance"], row["reason"]
    row, _, _ = run_inline("variant=flash", "family.score_mod=softcap", name="flash_softcap")
    assert row["status"] == "unsupported" and "softcap" in row["reason"]


def test_mask_keys_are_checked_at_start():
    from study.config.rules import validate
    from study.errors import ConfigError
    from tests.conftest import compose

    with pytest.raises(ConfigError, match="family.window=0"):
        validate(compose("variant=flex", "family.window=0"))
    with pytest.raises(ConfigError, match="attention family only"):
        validate(compose("variant=mlp", "family.mask=causal"))


@pytest.mark.slow
def test_flex_experiment_tiny_form_compiles_flex_and_proves_its_kernel(tmp_path):
    # CI's form of +experiment=flex: the CPU shape at seq_len 512, one mask, flex against a
    # backend the CPU lacks (its row: unsupported, with the library's reason).
    r = cli(
        "-m",
        "+experiment=flex",
        "family.mask=sliding_window",
        "variant=flex,efficient",
        f"out_root={tmp_path}",
    )
    assert r.returncode == 0, r.stderr[-2000:]
    sweep = next((tmp_path / "sweeps").iterdir())
    rows = {x["variant"]: x for x in io.read_csv(sweep / "runs.csv")}
    assert sorted(rows) == ["efficient", "flex"]
    assert rows["efficient"]["status"] == "unsupported" and rows["efficient"]["reason"]
    flex = rows["flex"]
    assert flex["status"] == "ok", flex["reason"]
    assert flex["compile"] == "default" and flex["seq_len"] == "512"
    assert flex["backend_seen"] == "flex" and "fused: " in flex["backend_proof"]
    assert "sdpa_mask0(" in flex["backend_proof"]  # the mask mod's ops, fused into the kernel
    assert float(flex["block_mask_s"]) > 0 and 0 < float(flex["block_sparsity"]) < 100
    density = 1 - float(flex["block_sparsity"]) / 100
    assert float(flex["flops_scheduled"]) == pytest.approx(float(flex["flops"]) * density)
    # useful FLOPs count the window's elements, as SDPA's do: query i sees min(i + 1, 256) keys
    kept = sum(min(i + 1, 256) for i in range(512)) / 512**2
    assert float(flex["flops_useful"]) == pytest.approx(float(flex["flops"]) * kept)
    assert kept < density  # the tiles hold more than the window
    kernels = io.read_csv(sweep / flex["run_id"] / "kernels.csv")
    (k,) = [k for k in kernels if "flex_attention" in k["fused_ops"]]
    assert k["inductor_kind"] == "template" and k["generated"] == "True"
    source = (sweep / flex["run_id"] / k["source_file"]).read_text()
    assert "kv_num_blocks" in source  # the block-sparse template
    assert int(flex["kernels_per_step"]) == 1  # the whole attention: one kernel


@pytest.mark.slow
def test_block_size_and_kernel_options_reach_flex(run_inline):
    row, _, _ = run_inline(
        "variant=flex", "family.block_size=8", "+family.kernel_options.BLOCK_M=16", name="opts"
    )  # +experiment=tiny: S=16, so 2 x 2 tiles of 8, causal keeps 3
    assert row["status"] == "ok", row["reason"]
    assert row["block_sparsity"] == 25.0 and "kernel_options {'BLOCK_M': 16}" in row["notes"]
