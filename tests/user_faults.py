"""Workloads of a user's own that are wrong (tests.test_user_faults names them by dotted path):
a factory that raises, inputs of the wrong shape for the module, a factory that exits."""

import sys

import torch
from torch import nn


def broken(dim: int):
    raise ValueError(f"my factory cannot build dim={dim}")


def projection(dim: int):
    return nn.Linear(dim, dim)


def wrong_inputs(batch: int, dim: int, *, dtype, device, gen):
    return torch.randn(batch, dim + 1, dtype=dtype, device=device, generator=gen)  # not dim


def inputs(batch: int, dim: int, *, dtype, device, gen):
    return torch.randn(batch, dim, dtype=dtype, device=device, generator=gen)


def exits(dim: int):
    sys.exit(0)
