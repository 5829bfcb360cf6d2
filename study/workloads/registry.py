"""One registry of workload variants, keyed by the exact name users type (``variant=flash``).

A variant is a builder function registered with ``@register(name, family, shape_keys)``. The
builder gets the resolved shape, dtype and device and returns a ``Workload``: the callable to
compile and time, its seeded inputs, and a reference in float64. Adding a variant = one builder
in a family module + one YAML in ``conf/variant/`` (see docs/workloads.md). A variant's analytic FLOP
formula, if any, is its own (``flops=``): never a family's (study.observe.flops).

A user's own module or function needs no builder: ``variant.target`` names a factory, and
``resolve`` turns that config into an entry (study.workloads.custom).
"""

from __future__ import annotations

import copy
import functools
import importlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

# Family modules that register variants when imported (one per family).
FAMILY_MODULES = (
    "study.workloads.dense",
    "study.workloads.attention",
    "study.workloads.flex",
    "study.workloads.block",
)


@dataclass
class Workload:
    fn: Callable  # what is compiled and timed: fn(*inputs)
    inputs: tuple  # seeded tensors, built once, outside every timed region
    # reference(*inputs_fp64) -> output in float64; None: a float64 deep copy of ``module``
    reference: Callable | None = None
    sdpa_backend: str | None = None  # pinned SDPA backend: math, efficient, flash, cudnn
    module: Any = None  # the nn.Module behind fn, if any (its params are part of bytes_min)
    notes: list[str] = field(default_factory=list)
    ref_index: tuple | None = None  # check only out[ref_index] when the reference is too big
    row: dict = field(default_factory=dict)  # columns the workload knows: mask, block_sparsity...
    # share of the call's FLOPs the work needs (attention: the unmasked part), for flops_useful
    useful_fraction: float = 1.0
    # share the kernel is given where it is not the work's (flex: the block mask's kept tiles,
    # partial ones whole), for flops_scheduled; None: flops_scheduled stays blank
    scheduled_fraction: float | None = None
    # proof of what ran, from the profiled trace: prove(kernel_rows, op_names, generated) ->
    # {ok, backend_seen, backend_proof, reason, notes}; None: the cell's SDPA proof, if any
    prove: Callable | None = None
    # training passes: which inputs are trained (indices); None: every floating-point input.
    # A mask or bias the reference rebuilds itself is data, not a leaf (SDPA's attn_mask).
    train_inputs: tuple | None = None

    def __post_init__(self):
        if self.reference is None and self.module is None:
            raise ValueError("a Workload needs a reference, or a module to copy in float64")


def reference_of(wl: Workload, device=None) -> Callable:
    """The float64 reference: the variant's own, else a float64 deep copy of its module (so its
    parameters keep their names, and their values, in float64), made on ``device`` (default:
    the module's own; "cpu" keeps a training cell's copy out of the device's memory)."""
    if wl.reference is not None:
        return wl.reference
    m = copy.deepcopy(wl.module)
    return (m if device is None else m.to(device)).double()


@dataclass(frozen=True)
class Entry:
    name: str
    family: str
    build: Callable[..., Workload]
    sdpa_backend: str | None = None  # what the variant claims; proven from the trace
    shape_keys: tuple[str, ...] = ()
    # the variant's own analytic FLOPs per call, from its resolved shape (dict); None: none
    flops: Callable[[dict], float] | None = None
    devices: tuple[str, ...] = ("cpu", "cuda")  # where a library kernel exists for it
    target: str | None = None  # a custom variant's factory (variant.target); None: registered


_REGISTRY: dict[str, Entry] = {}


def register(
    name: str,
    family: str,
    shape_keys: tuple[str, ...],
    sdpa_backend: str | None = None,
    flops: Callable[[dict], float] | None = None,
    devices: tuple[str, ...] = ("cpu", "cuda"),
):
    def deco(fn):
        if name in _REGISTRY:
            raise ValueError(f"variant {name!r} is registered twice")

        @functools.wraps(fn)
        def build(**kw):
            wl = fn(**kw)
            wl.sdpa_backend = sdpa_backend
            return wl

        _REGISTRY[name] = Entry(name, family, build, sdpa_backend, shape_keys, flops, devices)
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


def variant_yaml(entry: Entry) -> str:
    """The ``conf/variant/<name>.yaml`` a registered variant needs."""
    return (
        f"# @package _global_\ndefaults:\n  - /family: {entry.family}\n\n"
        f"variant:\n  name: {entry.name}\n"
    )
