"""A deep bf16 network for the tolerance rule's test (tests/test_models_cpu.py): correct, yet
further from float64 than bf16's tolerance, eager and compiled alike; and, with
``wrong_when_compiled``, a compile that is wrong (x1.3 only under torch.compile: far past
3x eager's own error, which the tolerance rule allows)."""

import torch
from torch import nn


class Deep(nn.Module):
    def __init__(self, dim: int, layers: int = 24, wrong_when_compiled: bool = False):
        super().__init__()
        self.layers = nn.ModuleList(nn.Linear(dim, dim) for _ in range(layers))
        self.wrong = wrong_when_compiled

    def forward(self, x):
        for layer in self.layers:
            x = torch.tanh(layer(x)) * 1.5
        if self.wrong and torch.compiler.is_compiling():
            x = x * 1.3
        return x


def inputs(batch: int, dim: int, *, dtype, device, gen):
    return torch.randn(batch, dim, dtype=dtype, device=device, generator=gen)


def bad_inputs(batch: int, dim: int, *, dtype, device, gen):
    """Not a tensor, a tuple or a dict: refused at start (tests/test_models.py)."""
    return f"{batch}x{dim} tokens"
