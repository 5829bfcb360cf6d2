"""The gradient check judges what a correct computation can get wrong: a gradient that is
exactly zero in float64 (a key projection's bias under softmax) and a parameter the forward
never uses are not mismatches; a NaN anywhere is, and says so."""

import pytest
import torch
from torch import nn

from study.cell import correctness, passes

CUSTOM = ["variant=custom", "variant.target=tests.test_grad_check.Attention"]


class Attention(nn.Module):
    """Self-attention with biased projections, and a Linear that forward never calls. softmax
    does not change when every key moves by the same vector, so k.bias's gradient is exactly
    zero: float64 gives roundoff, about 1e-16."""

    def __init__(self, dim: int, heads: int):
        super().__init__()
        self.heads = heads
        self.q, self.k, self.v = nn.Linear(dim, dim), nn.Linear(dim, dim), nn.Linear(dim, dim)
        self.spare = nn.Linear(dim, dim)  # never called: no gradient, in float64 either

    def forward(self, x):  # (batch, seq_len, dim)
        b, s, d = x.shape
        q, k, v = (
            f(x).view(b, s, self.heads, -1).transpose(1, 2) for f in (self.q, self.k, self.v)
        )
        a = torch.softmax(q @ k.transpose(-1, -2) / (d // self.heads) ** 0.5, dim=-1)
        return (a @ v).transpose(1, 2).reshape(b, s, d)


def inputs(batch: int, seq_len: int, dim: int, *, dtype, device, gen):
    return torch.randn(batch, seq_len, dim, dtype=dtype, device=device, generator=gen)


def _grads(dtype):
    """(the trained leaves after a backward in ``dtype``, the float64 gradients)."""
    torch.manual_seed(0)
    m, x = Attention(16, 2), torch.randn(2, 16, 16)
    g = torch.randn(2, 16, 16)
    ref = Attention(16, 2).double()
    ref.load_state_dict(m.state_dict())
    (ref(x.double()) * g.double()).sum().backward()
    want = {f"param:{n}": p.grad for n, p in ref.named_parameters() if p.grad is not None}
    m = m.to(dtype)
    (m(x.to(dtype)) * g.to(dtype)).sum().backward()
    return passes.Trained(leaves=[(f"param:{n}", p) for n, p in m.named_parameters()]), want


@pytest.mark.parametrize("dtype", ["fp32", "bf16"])
def test_a_zero_gradient_and_an_unused_parameter_are_no_mismatch(dtype):
    tr, want = _grads({"fp32": torch.float32, "bf16": torch.bfloat16}[dtype])
    assert float(want["param:k.bias"].abs().max()) < 1e-12  # exactly zero, but for roundoff
    g = passes.check_grads(tr, want, None, dtype, None)
    assert g["ok"], g["reason"]
    assert g["grad_max_rel_err"] <= correctness.TOLERANCE[dtype]
    assert g["unused"] == ["param:spare.weight", "param:spare.bias"]


def test_a_wrong_small_gradient_is_still_a_mismatch():
    tr, want = _grads(torch.float32)
    want["param:k.bias"] = torch.full_like(want["param:k.bias"], 0.05)  # a twentieth of k.weight
    g = passes.check_grads(tr, want, None, "fp32", None)
    assert not g["ok"] and g["reason"].startswith("gradient of param:k.bias: max_rel_err")


def test_a_gradient_on_one_side_only_is_missing():
    tr, want = _grads(torch.float32)
    want["param:spare.bias"] = torch.zeros(16, dtype=torch.float64)
    g = passes.check_grads(tr, want, None, "fp32", None)
    assert not g["ok"] and g["reason"] == "gradient of param:spare.bias is missing (ours)"


def test_a_zero_reference_is_judged_by_the_scale_it_is_given():
    ref = torch.full((8,), 1e-17, dtype=torch.float64)
    out = torch.full((8,), 2e-7)
    assert not correctness.compare(out, ref, "fp32")["ok"]  # by its own roundoff
    res = correctness.compare(out, ref, "fp32", scale=2.0)
    assert res["ok"] and res["max_rel_err"] == pytest.approx(1e-7)


@pytest.mark.parametrize(
    "out, ref, says",
    [
        ([float("nan")] * 4, [float("nan")] * 4, "4 of 4 elements of the float64 reference"),
        ([1.0, float("nan"), 1.0, 1.0], [1.0] * 4, "1 of 4 elements are NaN/Inf where"),
        ([1.0, float("inf"), 1.0, 1.0], [1.0, float("inf"), 1.0, 1.0], "float64 reference"),
    ],
)
def test_nan_or_inf_on_either_side_is_a_mismatch_that_says_so(out, ref, says):
    res = correctness.compare(torch.tensor(out), torch.tensor(ref, dtype=torch.float64), "fp32")
    assert not res["ok"] and says in res["reason"] and res["max_rel_err"] is None
    tree = correctness.compare_tree({"y": torch.tensor(out)}, {"y": torch.tensor(ref)}, "fp32")
    assert not tree["ok"] and says in tree["reason"]


@pytest.mark.slow
@pytest.mark.parametrize("dtype", ["fp32", "bf16"])
@pytest.mark.parametrize("kind", ["fwd_bwd", "train_step"])
def test_eager_attention_with_a_biased_key_and_a_spare_linear_is_ok(run_inline, kind, dtype):
    row, _, _ = run_inline(*CUSTOM, f"pass={kind}", f"dtype={dtype}", name=f"{kind}_{dtype}")
    assert row["status"] == "ok", row["reason"]
    assert row["grad_max_rel_err"] <= row["tolerance"]
    assert "no gradient (the forward does not use them" in row["notes"]
    assert "param:spare.weight, param:spare.bias" in row["notes"]


@pytest.mark.slow
def test_compiled_attention_with_a_biased_key_and_a_spare_linear_is_ok(run_inline):
    # fp32 only: bf16 is judged by the same rule in the eager cases above, and a second compile
    # cost CI 30 s
    row, _, _ = run_inline(*CUSTOM, "pass=fwd_bwd", "compile=default", "dtype=fp32",
                           name="compiled_fp32")  # fmt: skip
    assert row["status"] == "ok", row["reason"]
    assert row["grad_max_rel_err"] <= row["tolerance"]
