"""Dense family: matmul+bias, nn.Linear and a GeGLU MLP (blog parts 1 and 2).

Shapes (see conf/family/*.yaml): matmul_add is square N x N; linear is (batch, in) -> out;
mlp is (batch, seq_len, dim) -> hidden -> dim with three bias-free Linear layers.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from study.workloads.registry import Workload, register


@register("matmul_add", family="matmul", shape_keys=("n",))
def matmul_add(shape, dtype, device, gen, **_):
    n = shape["n"]
    x = torch.randn(n, n, generator=gen, device=device, dtype=dtype)  # (N, N)
    w = torch.randn(n, n, generator=gen, device=device, dtype=dtype)  # (N, N)
    b = torch.randn(n, generator=gen, device=device, dtype=dtype)  # (N,)

    def fn(x, w, b):
        return x @ w + b

    return Workload(fn=fn, inputs=(x, w, b), reference=fn)


@register("linear", family="linear", shape_keys=("batch", "in_features", "out_features"))
def linear(shape, dtype, device, gen, **_):
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(gen.initial_seed())
        mod = nn.Linear(shape["in_features"], shape["out_features"]).to(device=device, dtype=dtype)
    mod.eval().requires_grad_(False)
    x = torch.randn(shape["batch"], shape["in_features"], generator=gen, device=device, dtype=dtype)

    def reference(x):
        return F.linear(x, mod.weight.double(), mod.bias.double())

    return Workload(fn=mod, inputs=(x,), reference=reference, module=mod)


class GeGLU(nn.Module):
    """down(gelu_tanh(gate(x)) * up(x)), three bias-free Linear layers (blog part 2)."""

    def __init__(self, dim: int, hidden: int):
        super().__init__()
        self.gate = nn.Linear(dim, hidden, bias=False)
        self.up = nn.Linear(dim, hidden, bias=False)
        self.down = nn.Linear(hidden, dim, bias=False)

    def forward(self, x):
        return self.down(F.gelu(self.gate(x), approximate="tanh") * self.up(x))


@register("mlp", family="mlp", shape_keys=("batch", "seq_len", "dim", "hidden"))
def mlp(shape, dtype, device, gen, **_):
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(gen.initial_seed())
        mod = GeGLU(shape["dim"], shape["hidden"]).to(device=device, dtype=dtype)
    mod.eval().requires_grad_(False)
    x = torch.randn(
        shape["batch"], shape["seq_len"], shape["dim"], generator=gen, device=device, dtype=dtype
    )  # (B, S, dim)

    def reference(x):
        g = F.linear(x, mod.gate.weight.double())
        u = F.linear(x, mod.up.weight.double())
        return F.linear(F.gelu(g, approximate="tanh") * u, mod.down.weight.double())

    return Workload(fn=mod, inputs=(x,), reference=reference, module=mod)
