"""Attention family (blog part 3): naive from primitives, and SDPA pinned to one backend.

Inputs q, k, v are (B, H, S, D). The causal boolean mask (S, S) is built once here, outside
every timed call, and passed in. ``naive`` uses out-of-place ``masked_fill`` (on the GPU this
shows up as a hidden copy kernel); ``naive_inplace`` uses ``masked_fill_``. The SDPA variants
call ``F.scaled_dot_product_attention(is_causal=...)``; the cell pins the backend with
``torch.nn.attention.sdpa_kernel`` around all its calls, and proves from the trace that the
backend really ran.

Every variant here registers the same analytic FLOPs (``attention_flops``: q@k^T and p@v over the
full S x S matrix, flop_counter's convention); the cell uses it where the float64 reference is
checked on a slice and so cannot be counted whole.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from study.workloads.registry import Workload, register

SHAPE = ("batch", "heads", "seq_len", "head_dim")


# Above this many float64 score elements the reference checks batch 0, heads 0-1 only.
FULL_CHECK_LIMIT = 2**28


def attention_flops(s: dict) -> float:
    """4*B*H*S^2*D: q@k^T and p@v, the full score matrix (causal is not halved)."""
    return 4.0 * s["batch"] * s["heads"] * s["seq_len"] ** 2 * s["head_dim"]


def _ref_index(shape):
    b, h, s = shape["batch"], shape["heads"], shape["seq_len"]
    return None if b * h * s * s <= FULL_CHECK_LIMIT else (slice(0, 1), slice(0, min(h, 2)))


def _qkv_mask(shape, dtype, device, gen, causal):
    b, h, s, d = (shape[k] for k in SHAPE)
    q, k, v = (
        torch.randn(b, h, s, d, generator=gen, device=device, dtype=dtype) for _ in range(3)
    )  # (B, H, S, D) each
    mask = torch.ones(s, s, dtype=torch.bool, device=device)  # (S, S): True = masked out
    mask = mask.triu(1) if causal else torch.zeros_like(mask)
    return q, k, v, mask


def reference(q, k, v, mask):
    """Float64 attention with an explicit mask: the reference for every variant."""
    s = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(q.shape[-1]))  # (B, H, S, S)
    return torch.softmax(s.masked_fill(mask, float("-inf")), dim=-1) @ v


def naive(q, k, v, mask):
    s = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(q.shape[-1]))  # (B, H, S, S)
    s = s.masked_fill(mask, float("-inf"))  # out of place: a full copy of s
    return torch.softmax(s, dim=-1) @ v


def naive_inplace(q, k, v, mask):
    s = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(q.shape[-1]))  # (B, H, S, S)
    s.masked_fill_(mask, float("-inf"))  # in place: no copy
    return torch.softmax(s, dim=-1) @ v


def naive_break(q, k, v, mask):
    s = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(q.shape[-1]))  # (B, H, S, S)
    torch._dynamo.graph_break()  # deliberate: shows how a break splits the compiled graph
    s = s.masked_fill(mask, float("-inf"))
    return torch.softmax(s, dim=-1) @ v


def _register_primitive(name: str, fn):
    """naive-style attention from primitives: (q, k, v, mask) against the float64 reference."""

    @register(name, family="attention", shape_keys=SHAPE, flops=attention_flops)
    def build(shape, dtype, device, gen, causal=True, **_):
        return Workload(
            fn=fn,
            inputs=_qkv_mask(shape, dtype, device, gen, causal),
            reference=reference,
            ref_index=_ref_index(shape),
        )

    build.__name__ = f"build_{name}"
    return build


_register_primitive("naive", naive)
_register_primitive("naive_inplace", naive_inplace)
_register_primitive("naive_break", naive_break)  # a deliberate graph break, for compile diagnostics


def _sdpa_workload(shape, dtype, device, gen, causal):
    q, k, v, mask = _qkv_mask(shape, dtype, device, gen, causal)

    def sdpa(q, k, v):
        return F.scaled_dot_product_attention(q, k, v, is_causal=causal)

    def ref(q, k, v):
        return reference(q, k, v, mask)

    return Workload(fn=sdpa, inputs=(q, k, v), reference=ref, ref_index=_ref_index(shape))


def _register_sdpa(name: str, backend: str | None):
    @register(
        name,
        family="attention",
        shape_keys=SHAPE,
        sdpa_backend=backend,
        flops=attention_flops,
        devices=("cuda",) if backend in ("efficient", "cudnn") else ("cpu", "cuda"),
    )
    def build(shape, dtype, device, gen, causal=True, **_):
        return _sdpa_workload(shape, dtype, device, gen, causal)

    build.__name__ = f"build_{name}"
    return build


for _name in ("math", "efficient", "flash", "cudnn"):
    _register_sdpa(_name, _name)
_register_sdpa("sdpa", None)  # the dispatcher's own choice; the row records what ran
