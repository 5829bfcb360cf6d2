"""Block family: a pre-norm transformer block, the ladder's last rung (what people compile).

    x = x + proj(attention(ln1(x)))      causal self-attention through SDPA (dispatcher's choice)
    x = x + mlp(ln2(x))                  the ladder's GeGLU MLP

Input x is (batch, seq_len, dim); heads = ``heads``, head_dim = dim / heads. On the GPU the
default shape (conf/family/block.yaml) has the attention rung's B8 H16 S1024 D64 and a 4x MLP.
``shape.layers=N`` (N > 1) stacks N blocks in an ``nn.ModuleList`` (``Stack``), each with its own
weights: the repeated block that ``compile.regional`` compiles by region (study.cell.regional).
One layer (the default) is the single block, as before depths.
No SDPA backend is pinned: inside a block the dispatcher chooses, as in a model. The float64
reference is a float64 copy of the module; FLOPs are counted on it (study.observe.flops).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from study.workloads.dense import GeGLU
from study.workloads.registry import Workload, register


class PreNormBlock(nn.Module):
    """LayerNorm -> causal attention -> residual, LayerNorm -> GeGLU MLP -> residual."""

    def __init__(self, dim: int, heads: int, hidden: int, causal: bool = True):
        super().__init__()
        if dim % heads:
            raise ValueError(f"shape.dim={dim} must be a multiple of shape.heads={heads}")
        self.heads, self.causal = heads, causal
        self.ln1 = nn.LayerNorm(dim)
        self.qkv = nn.Linear(dim, 3 * dim, bias=False)
        self.proj = nn.Linear(dim, dim, bias=False)
        self.ln2 = nn.LayerNorm(dim)
        self.mlp = GeGLU(dim, hidden)

    def forward(self, x):  # (B, S, dim)
        b, s, d = x.shape
        qkv = self.qkv(self.ln1(x)).view(b, s, 3, self.heads, d // self.heads)
        q, k, v = qkv.permute(2, 0, 3, 1, 4)  # (B, H, S, D) each
        a = F.scaled_dot_product_attention(q, k, v, is_causal=self.causal)  # (B, H, S, D)
        x = x + self.proj(a.transpose(1, 2).reshape(b, s, d))
        return x + self.mlp(self.ln2(x))


class Stack(nn.Module):
    """``layers`` pre-norm blocks, one after another (a transformer's body, without embeddings
    or head)."""

    def __init__(self, layers: int, dim: int, heads: int, hidden: int, causal: bool = True):
        super().__init__()
        self.layers = nn.ModuleList(PreNormBlock(dim, heads, hidden, causal) for _ in range(layers))

    def forward(self, x):  # (B, S, dim)
        for layer in self.layers:
            x = layer(x)
        return x


@register("block", family="block", shape_keys=("batch", "seq_len", "dim", "heads", "hidden"))
def block(shape, dtype, device, gen, causal=True, layers=1, **_):
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(gen.initial_seed())
        sizes = (shape["dim"], shape["heads"], shape["hidden"], causal)
        mod = PreNormBlock(*sizes) if layers == 1 else Stack(layers, *sizes)
    mod = mod.to(device=device, dtype=dtype).eval().requires_grad_(False)
    x = torch.randn(
        shape["batch"], shape["seq_len"], shape["dim"], generator=gen, device=device, dtype=dtype
    )  # (B, S, dim)
    return Workload(fn=mod, inputs=(x,), module=mod)  # reference: the module in float64
