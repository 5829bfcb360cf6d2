"""The eager -> compiled kernel diff on real H200 rows."""

import pandas as pd
import pytest

from analysis.load import load
from analysis.tables import kdiff
from tests import synth

pytestmark = pytest.mark.xdist_group("kdiff")  # its module fixture, once


@pytest.fixture(scope="module")
def part3(tmp_path_factory):
    d = load([synth.write(synth.h200("part3"), tmp_path_factory.mktemp("k") / "part3")])
    return kdiff.diff(d["runs"], d["kernels"])


def test_naive_default_removes_four_fuses_one_and_keeps_the_gemms(part3):
    summ, detail = part3
    row = summ[(summ["variant"] == "naive") & (summ["compile"] == "default")].iloc[0]
    assert (row["n_removed"], row["n_fused"], row["n_added"]) == (4, 1, 0)
    assert (row["kernels_eager"], row["kernels_compiled"]) == (7, 4)
    gone = set(
        detail[(detail["run_id"] == row["run_id"]) & (detail["change"] == "removed")]["kernel"]
    )
    assert "Memcpy DtoD" in gone and "softmax_warp_forward" in gone
    fused = detail[(detail["run_id"] == row["run_id"]) & (detail["change"] == "fused")].iloc[0]
    assert fused["kernel"].startswith("triton_per_fused") and "aten.exp" in fused["fused ops"]


def test_reduce_overhead_copies_its_inputs_into_the_cuda_graph(part3):
    summ, detail = part3
    row = summ[(summ["variant"] == "naive") & (summ["compile"] == "reduce-overhead")].iloc[0]
    mine = detail[detail["run_id"] == row["run_id"]]
    copy = mine[mine["kernel"] == "Memcpy DtoD"].iloc[0]  # the hidden copy stays, 4 a step now
    assert copy["change"] == "kept" and (copy["calls eager"], copy["calls compiled"]) == (1, 4)
    assert row["n_added"] == 0 and row["n_kept_delta"] == 3


def test_the_diff_adds_up_for_every_cell(part3):
    summ, _ = part3
    assert len(summ) == 28  # 7 attention variants x 4 compiled modes, each with its eager cell
    calls = summ["kernels_eager"] - summ["n_removed"] + summ["n_fused"] + summ["n_added"]
    assert (calls + summ["n_kept_delta"] - summ["kernels_compiled"]).abs().max() < 1e-9
    us = summ["us_eager"] + summ[[f"us_{c}" for c in kdiff.CHANGES]].sum(axis=1)
    assert (us - summ["us_compiled"]).abs().max() < 1e-6


def test_generated_kernels_are_listed_once_per_variant_and_mask_with_what_they_fused():
    runs = pd.DataFrame(
        [{"source": "flex", "run_id": f"flex,{m},{s}", "mask": m} for m in ("causal", "sliding_window")
         for s in (1024, 4096)]
    )  # fmt: skip
    kernels = pd.DataFrame(
        [{"source": "flex", "run_id": f"flex,{m},{s}", "variant": "flex", "compile": "default",
          "phase": "fwd", "generated": "True", "kernel": "triton_tem_fused_flex_attention_0",
          "source_file": "generated/kernels/triton_tem_fused_flex_attention_0.py",
          "fused_ops": f"higher_order.flex_attention sdpa_mask0({ops})"}
         for m, ops in (("causal", "aten.ge"), ("sliding_window", "aten.sub,aten.lt"))
         for s in (1024, 4096)]
        + [{"source": "flex", "run_id": "flex,causal,1024", "variant": "flex", "compile": "default",
            "phase": "fwd", "generated": "False", "kernel": "Memset"}]
    )  # fmt: skip
    t = kdiff.generated(runs, kernels)
    assert list(t["mask"]) == ["causal", "sliding_window"]  # one row per mask, not per length
    assert list(t["fused_ops"].str.extract(r"\((.*)\)")[0]) == ["aten.ge", "aten.sub,aten.lt"]
    assert set(t["source_file"]) == {"generated/kernels/triton_tem_fused_flex_attention_0.py"}
    assert "Memset" not in set(t["kernel"])
    assert kdiff.generated(runs, kernels[kernels["generated"] == "False"]).empty


@pytest.mark.parametrize("hashes", [True, False])
def test_a_compiled_cell_is_diffed_against_its_own_eager_twin_not_another_depths(hashes):
    """shape.layers=4,12: the x12 compiled cell against the x12 eager cell, by eager_hash where
    the rows have it, else by a key that holds ``layers``."""
    base = {"source": "s", "variant": "block", "pass": "fwd", "status": "ok", "family": "mlp"}
    runs = pd.DataFrame([
        {**base, "run_id": "e4", "compile": "off", "layers": 4, "config_hash": "e4"},
        {**base, "run_id": "e12", "compile": "off", "layers": 12, "config_hash": "e12"},
        {**base, "run_id": "c12", "compile": "default", "layers": 12, "config_hash": "c12",
         "eager_hash": "e12"},
    ])  # fmt: skip
    if not hashes:
        runs = runs.drop(columns=["config_hash", "eager_hash"])
    twin = kdiff.eager_twin(runs, runs.iloc[2])
    assert twin is not None and twin["run_id"] == "e12"
