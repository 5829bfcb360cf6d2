"""Real models' building blocks, without compiling: outputs of any structure, inputs by
keyword, a missing or broken library as an unsupported reason, and the tolerance rule that
judges a compiled model by eager's own error. The CLI runs are in tests/test_models_cpu.py."""

import dataclasses
import sys

import pandas as pd
import pytest
import torch

from study.cell import correctness, passes
from study.cell.failures import classify_error
from study.errors import Unsupported
from study.workloads import models


@dataclasses.dataclass
class Out:
    logits: torch.Tensor
    ids: torch.Tensor
    extra: object = None


torch.utils._pytree.register_dataclass(Out)


def test_every_leaf_is_compared_and_integers_exactly():
    x = torch.randn(4, 8, dtype=torch.float64)
    ids = torch.arange(6)
    ref = {"a": x, "b": (x * 2, ids), "c": None}
    out = {"a": x.bfloat16(), "b": ((x * 2).bfloat16(), ids.clone()), "c": None}
    got = correctness.compare_tree(out, ref, "bf16")
    assert got["ok"] and got["max_rel_err"] > 0 and got["skipped"] == []
    bad = {"a": x.bfloat16(), "b": ((x * 2).bfloat16(), ids + 1), "c": None}
    got = correctness.compare_tree(bad, ref, "bf16")
    assert not got["ok"] and "compared exactly" in got["reason"] and "int64" in got["reason"]
    worse = {"a": x.bfloat16() + 1, "b": ((x * 2).bfloat16(), ids), "c": None}
    got = correctness.compare_tree(worse, ref, "bf16")
    assert not got["ok"] and "leaf 0" in got["reason"] and "tolerance" in got["reason"]


def test_a_dataclass_output_and_a_leaf_that_is_not_a_tensor():
    x = torch.randn(3, dtype=torch.float64)
    got = correctness.compare_tree(
        Out(x.float(), torch.ones(2), "cache"), Out(x, torch.ones(2), "c"), "fp32"
    )
    assert got["ok"] and got["skipped"] == ["leaf 2: str"]
    one = correctness.compare_tree(x.float(), x, "fp32")  # a plain tensor: compare's own result
    assert one == {**correctness.compare(x.float(), x, "fp32"), "skipped": []}
    assert (
        correctness.out_bytes({"a": torch.ones(4), "b": [torch.ones(2, dtype=torch.int8), None]})
        == 18
    )


def test_a_training_pass_needs_a_differentiable_output_and_says_so():
    w = torch.ones(3, requires_grad=True)
    out = {"y": w * 2, "ids": torch.arange(3)}
    (y,) = passes.grad_leaves(out)
    assert y is out["y"]
    with pytest.raises(Unsupported) as e:
        passes.grad_leaves({"ids": torch.arange(3)})
    assert "pass=fwd" in str(e.value) and classify_error(e.value, [])[0] == "unsupported"


def test_keyword_inputs_reach_the_module_by_name():
    from study.workloads.custom import Keywords

    class Named(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.w = torch.nn.Parameter(torch.ones(2))

        def forward(self, input_ids, attention_mask):
            return input_ids.float() * self.w + 10 * attention_mask

    m = Keywords(Named(), ["input_ids", "attention_mask"])
    out = m(torch.tensor([1, 2]), torch.tensor([0, 1]))
    assert out.tolist() == [1.0, 12.0]
    assert [n for n, _ in m.named_parameters()] == ["inner.w"]
    assert m.double().inner.w.dtype == torch.float64


def test_a_missing_library_is_unsupported_with_the_install_command():
    with pytest.raises(Unsupported) as e:
        models.need("no_such_library_xyz")
    assert "no_such_library_xyz" in str(e.value) and models.INSTALL in str(e.value)
    status, reason = classify_error(e.value, [])  # the row says the hint, not the import error
    assert status == "unsupported" and models.INSTALL in reason


def test_a_library_that_imports_but_is_broken_is_named(tmp_path, monkeypatch):
    (tmp_path / "brokenlib.py").write_text(
        "raise RuntimeError('operator torchvision::nms does not exist')\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(Unsupported) as e:
        models.need("brokenlib")
    text = str(e.value)
    assert "brokenlib is installed but does not import" in text and "nms" in text
    sys.modules.pop("brokenlib", None)


def test_token_inputs_are_keywords_with_a_padded_mask():
    gen = torch.Generator().manual_seed(0)
    ins = models.tokens(2, 8, device="cpu", gen=gen)
    assert list(ins) == ["input_ids", "attention_mask"]
    assert ins["input_ids"].dtype == torch.long and int(ins["input_ids"].max()) < models.TOKENS
    assert ins["attention_mask"][-1].tolist() == [1] * 6 + [0] * 2


def test_the_models_table_and_pass_rate_read_rows():
    from analysis.tables import models as tables_models

    raw = pd.DataFrame(
        [
            {"variant": "gpt2", "family": "custom", "compile": "off", "pass": "fwd",
             "status": "ok", "kernels_per_step": 40, "run_id": "a"},
            {"variant": "gpt2", "family": "custom", "compile": "default", "pass": "fwd",
             "status": "ok", "kernels_per_step": 20, "speedup_paired": 1.5,
             "speedup_ci_low": 1.4, "speedup_ci_high": 1.6, "compile_s": 12.0,
             "graph_breaks": 0, "run_id": "b", "timing_phase": "fast"},
            {"variant": "gpt2", "family": "custom", "compile": "default", "pass": "train_step",
             "status": "ok", "speedup_paired": 1.2, "speedup_ci_low": 1.1,
             "speedup_ci_high": 1.3, "run_id": "e", "timing_phase": "slow"},
            {"variant": "vit", "family": "custom", "compile": "default", "pass": "fwd",
             "status": "unsupported", "reason": "needs timm", "run_id": "c"},
            {"variant": "naive", "family": "attention", "compile": "off", "pass": "fwd",
             "status": "ok", "run_id": "d"},
        ]
    )  # fmt: skip
    t = tables_models.table(raw).set_index(["model", "mode"])
    fwd = t[t["pass"] == "fwd"]
    assert fwd.loc[("gpt2", "default"), "paired speedup"] == "1.50x [1.40-1.60]"
    step = t[t["pass"] == "train_step"]
    assert step.loc[("gpt2", "default"), "paired speedup"] == "1.20x [1.10-1.30], host slow"
    assert fwd.loc[("gpt2", "default"), "kernels eager → here"] == "40 → 20"
    assert t.loc[("vit", "default"), "why not ok"] == "needs timm"
    assert "naive" not in set(t.index.get_level_values(0))
    pr = tables_models.pass_rate(raw).set_index(["compile", "pass"])
    assert pr.loc[("default", "fwd"), "pass rate"] == "50%"
    assert pr.loc[("off", "fwd"), "pass rate"] == "100%"


def test_inputs_of_the_wrong_type_are_refused_at_start_naming_the_type():
    from study.workloads.check import check_config
    from tests.conftest import compose

    cfg = compose(
        "variant=custom",
        "variant.target=tests.deep_model.Deep",
        "variant.inputs=tests.deep_model.bad_inputs",
        "shape.batch=2",
        "shape.dim=8",
    )
    why = check_config(cfg) or ""
    assert "returned a str" in why and "dict of tensors" in why
