"""Build a cell's workload: the device, the shape, seeded inputs, and the SDPA pin.

The one way to build it, shared by the cell, the Nsight pass that must replay exactly the
same work (study.observe.ncu) and the harness benchmark. The sweep resolves ``device=auto`` and the
family's default shape before the cell starts (``cell.yaml`` holds what the cell ran); the
resolvers here also serve cells built in-process (tests, benchmarks).
"""

from __future__ import annotations

from omegaconf import DictConfig

from study.config.cell_config import plain, to_plain
from study.errors import Unsupported
from study.workloads import variants

DTYPES = {"bf16": "bfloat16", "fp16": "float16", "fp32": "float32"}
SDPA_BACKENDS = {
    "math": "MATH",
    "efficient": "EFFICIENT_ATTENTION",
    "flash": "FLASH_ATTENTION",
    "cudnn": "CUDNN_ATTENTION",
}


def resolve_device(requested: str) -> str:
    import torch

    if requested == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if requested == "cuda" and not torch.cuda.is_available():
        raise Unsupported(
            "device=cuda but torch.cuda.is_available() is False; use device=cpu or auto"
        )
    return requested


def resolve_shape(entry, cfg: DictConfig, device: str) -> dict:
    """The family's default shape for the device, overridden by non-null ``shape.*`` keys."""
    base = cfg.family.shapes.get(device) or cfg.family.shapes.get("cpu")
    shape = {}
    for k in entry.shape_keys:
        v = cfg.shape.get(k)
        v = base.get(k) if v is None and base is not None else v
        if v is None:
            raise ValueError(
                f"shape.{k} has no value for {entry.name} on {device}: set shape.{k}=<int>"
            )
        shape[k] = int(v)
    return shape


def sdpa_pin(backend: str | None):
    """The context that pins SDPA to ``backend`` (math, efficient, flash, cudnn); a no-op for None."""
    from contextlib import nullcontext

    if backend is None:
        return nullcontext()
    from torch.nn.attention import SDPBackend, sdpa_kernel

    return sdpa_kernel([getattr(SDPBackend, SDPA_BACKENDS[backend])])


def build_workload(cfg: DictConfig, device: str):
    """(registry entry, resolved shape, seeded workload) for a cell."""
    import torch

    entry = variants.resolve(cfg.variant)
    shape = resolve_shape(entry, cfg, device)
    dtype = plain(cfg.dtype)
    torch.manual_seed(cfg.seed)
    gen = torch.Generator(device=device).manual_seed(cfg.seed)
    wl = entry.build(
        shape=shape,
        dtype=getattr(torch, DTYPES[dtype]),
        device=device,
        gen=gen,
        causal=cfg.family.causal,
        family=to_plain(cfg)["family"],
        layers=cfg.shape.get("layers") or 1,  # the block's depth; other workloads ignore it
    )
    return entry, shape, wl


def input_bytes(wl) -> int:
    """Bytes of every input and parameter, each read once."""
    nbytes = sum(t.numel() * t.element_size() for t in wl.inputs)
    if wl.module is not None:
        nbytes += sum(p.numel() * p.element_size() for p in wl.module.parameters())
    return nbytes
