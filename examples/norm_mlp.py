"""Your own workload for `study`, with no Python in study/: a pre-norm residual MLP.

One command line names it (parameters named like shape keys get the cell's shape):

    python -m study.run -m variant=custom variant.target=examples.norm_mlp.NormMLP \
        shape.batch=2 shape.seq_len=32 shape.dim=64 shape.hidden=256 compile=off,default

or one YAML does (examples/conf/variant/norm_mlp.yaml), on Hydra's search path:

    python -m study.run -m hydra.searchpath=[file://examples/conf] variant=norm_mlp \
        compile=off,default
"""

import torch
import torch.nn.functional as F
from torch import nn


class NormMLP(nn.Module):
    """x + down(gelu(up(layer_norm(x))))."""

    def __init__(self, dim: int, hidden: int):
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        self.up = nn.Linear(dim, hidden)
        self.down = nn.Linear(hidden, dim)

    def forward(self, x):  # (batch, seq_len, dim)
        return x + self.down(F.gelu(self.up(self.norm(x))))


def inputs(batch: int, seq_len: int, dim: int, *, dtype, device, gen):
    """One call's inputs, built once from the shape keys this function names."""
    return torch.randn(batch, seq_len, dim, dtype=dtype, device=device, generator=gen)
