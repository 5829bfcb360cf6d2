"""Dense family: matmul+bias, nn.Linear and a GeGLU MLP (blog parts 1 and 2).

Shapes (see conf/family/*.yaml): matmul_add is square N x N; linear is (batch, in) -> out;
mlp is (batch, seq_len, dim) -> hidden -> dim with three bias-free Linear layers.

Each variant registers its own analytic FLOPs (a multiply-add is 2, bias adds not counted, as
torch.utils.flop_counter counts them); the cell uses them only where the counter cannot count.
The modules' float64 reference is a float64 copy of the module (registry.reference_of).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from study.workloads.registry import Workload, register


def matmul_add_flops(s: dict) -> float:
    return 2.0 * s["n"] ** 3  # x @ w; the bias add is not counted


@register("matmul_add", family="matmul", shape_keys=("n",), flops=matmul_add_flops)
def matmul_add(shape, dtype, device, gen, **_):
    n = shape["n"]
    x = torch.randn(n, n, generator=gen, device=device, dtype=dtype)  # (N, N)
    w = torch.randn(n, n, generator=gen, device=device, dtype=dtype)  # (N, N)
    b = torch.randn(n, generator=gen, device=device, dtype=dtype)  # (N,)

    def fn(x, w, b):
        return x @ w + b

    return Workload(fn=fn, inputs=(x, w, b), reference=fn)


def linear_flops(s: dict) -> float:
    return 2.0 * s["batch"] * s["in_features"] * s["out_features"]


@register(
    "linear",
    family="linear",
    shape_keys=("batch", "in_features", "out_features"),
    flops=linear_flops,
)
def linear(shape, dtype, device, gen, **_):
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(gen.initial_seed())
        mod = nn.Linear(shape["in_features"], shape["out_features"]).to(device=device, dtype=dtype)
    mod.eval().requires_grad_(False)
    x = torch.randn(shape["batch"], shape["in_features"], generator=gen, device=device, dtype=dtype)
    return Workload(fn=mod, inputs=(x,), module=mod)  # reference: the module in float64


class GeGLU(nn.Module):
    """down(gelu_tanh(gate(x)) * up(x)), three bias-free Linear layers (blog part 2)."""

    def __init__(self, dim: int, hidden: int):
        super().__init__()
        self.gate = nn.Linear(dim, hidden, bias=False)
        self.up = nn.Linear(dim, hidden, bias=False)
        self.down = nn.Linear(hidden, dim, bias=False)

    def forward(self, x):
        return self.down(F.gelu(self.gate(x), approximate="tanh") * self.up(x))


def mlp_flops(s: dict) -> float:
    return 3 * 2.0 * s["batch"] * s["seq_len"] * s["dim"] * s["hidden"]  # gate, up, down


@register("mlp", family="mlp", shape_keys=("batch", "seq_len", "dim", "hidden"), flops=mlp_flops)
def mlp(shape, dtype, device, gen, **_):
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(gen.initial_seed())
        mod = GeGLU(shape["dim"], shape["hidden"]).to(device=device, dtype=dtype)
    mod.eval().requires_grad_(False)
    x = torch.randn(
        shape["batch"], shape["seq_len"], shape["dim"], generator=gen, device=device, dtype=dtype
    )  # (B, S, dim)
    return Workload(fn=mod, inputs=(x,), module=mod)  # reference: the module in float64
