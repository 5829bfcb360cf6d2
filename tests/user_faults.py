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


def hangs_in_primer(dim: int):
    """A projection that never builds in a start=warm|artifacts primer (study.cell.prime): it
    holds the primer alive for tests.test_startup to kill the sweep around it."""
    import time

    if sys.argv and sys.argv[0].endswith("prime.py"):
        time.sleep(10**7)
    return nn.Linear(dim, dim)
