"""One registry of workload variants, keyed by the exact name users type (``variant=flash``).

A variant is a builder function registered with ``@register(name, family)``. The builder gets
the resolved shape, dtype and device and returns a ``Workload``: the callable to compile and
time, its seeded inputs, and a reference in float64. Adding a variant = one builder here in a
family module + one YAML in ``conf/variant/`` (see the README).
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

# Family modules that register variants when imported (one per family).
FAMILY_MODULES = ("study.workloads.dense", "study.workloads.attention")


@dataclass
class Workload:
    fn: Callable  # what is compiled and timed: fn(*inputs)
    inputs: tuple  # seeded tensors, built once, outside every timed region
    reference: Callable  # reference(*inputs_fp64) -> output in float64
    sdpa_backend: str | None = None  # pinned SDPA backend: math, efficient, flash, cudnn
    module: Any = None  # the nn.Module behind fn, if any (its params are part of bytes_min)
    notes: list[str] = field(default_factory=list)
    ref_index: tuple | None = None  # check only out[ref_index] when the reference is too big


@dataclass(frozen=True)
class Entry:
    name: str
    family: str
    build: Callable[..., Workload]
    sdpa_backend: str | None = None  # what the variant claims; proven from the trace
    shape_keys: tuple[str, ...] = ()


_REGISTRY: dict[str, Entry] = {}


def register(name: str, family: str, shape_keys: tuple[str, ...], sdpa_backend: str | None = None):
    def deco(fn):
        if name in _REGISTRY:
            raise ValueError(f"variant {name!r} is registered twice")

        @functools.wraps(fn)
        def build(**kw):
            wl = fn(**kw)
            wl.sdpa_backend = sdpa_backend
            return wl

        _REGISTRY[name] = Entry(name, family, build, sdpa_backend, shape_keys)
        return fn

    return deco


def _load() -> None:
    for mod in FAMILY_MODULES:
        importlib.import_module(mod)


def names() -> list[str]:
    _load()
    return sorted(_REGISTRY)


def get(name: str) -> Entry:
    _load()
    try:
        return _REGISTRY[name]
    except KeyError:
        raise KeyError(f"unknown variant {name!r}; known: {', '.join(sorted(_REGISTRY))}") from None
