"""Attention family (blog part 3): naive from primitives, and SDPA pinned to one backend.

Inputs q, k, v are (B, H, S, D). The boolean mask (S, S) is built once here, outside every
timed call, and passed in: causal by default, or any ``family.mask`` (study.workloads.masks),
with an optional ``family.score_mod``. ``naive`` uses out-of-place ``masked_fill`` (on the GPU
this shows up as a hidden copy kernel); ``naive_inplace`` uses ``masked_fill_``. The SDPA
variants call ``F.scaled_dot_product_attention``: ``is_causal=True`` for the causal mask, an
explicit ``attn_mask`` for any other (a boolean one, or a float bias for alibi; a backend that
refuses it gives an ``unsupported`` row with the library's reason); the cell pins the backend
with ``torch.nn.attention.sdpa_kernel`` around all its calls, and proves from the trace that
the backend really ran. FlexAttention is study.workloads.flex.

Every variant here registers the same analytic FLOPs (``attention_flops``: q@k^T and p@v over the
full S x S matrix, flop_counter's convention); the cell uses it where the float64 reference is
checked on a slice and so cannot be counted whole. The work the mask needs is the unmasked
share of the score matrix (``useful_fraction``, for ``flops_useful``): about half for causal.
"""

from __future__ import annotations

import functools
import math

import torch
import torch.nn.functional as F

from study.config.cell_config import FamilyConf
from study.workloads import masks
from study.workloads.registry import Workload, register

SHAPE = ("batch", "heads", "seq_len", "head_dim")


# Above this many float64 score elements the reference checks batch 0, heads 0-1 only.
FULL_CHECK_LIMIT = 2**28


def attention_flops(s: dict) -> float:
    """4*B*H*S^2*D: q@k^T and p@v, the full score matrix (causal is not halved)."""
    return 4.0 * s["batch"] * s["heads"] * s["seq_len"] ** 2 * s["head_dim"]


def ref_index_of(shape):
    b, h, s = shape["batch"], shape["heads"], shape["seq_len"]
    return None if b * h * s * s <= FULL_CHECK_LIMIT else (slice(0, 1), slice(0, min(h, 2)))


def qkv(shape, dtype, device, gen):
    b, h, s, d = (shape[k] for k in SHAPE)
    return tuple(
        torch.randn(b, h, s, d, generator=gen, device=device, dtype=dtype) for _ in range(3)
    )  # (B, H, S, D) each


def spec(shape, device, gen, causal, family) -> dict:
    """The cell's mask and score mod: the flex mods, the dense (S, S) ``keep`` mask, the
    dense score function, and the row's ``mask``/``score_mod``/``causal`` columns."""
    fam = {k: getattr(FamilyConf, k) for k in ("window", "prefix", "documents", "softcap")}
    fam.update(family or {})  # the cell's family config; FamilyConf's defaults without one
    kind = fam.get("mask") or ("causal" if causal else "none")
    score = fam.get("score_mod") or "none"
    seq_len = shape["seq_len"]
    mask_mod, mask_words = masks.mask_mod(kind, fam, seq_len, gen.initial_seed(), device)
    score_mod, score_words = masks.score_mod(score, fam, shape["heads"], device)
    keep = masks.dense_keep(mask_mod, seq_len, device)  # (S, S): True = the query sees the key
    return {
        "kind": kind,
        "score": score,
        "mask_mod": mask_mod,
        "score_mod": score_mod,
        "keep": keep,
        "dense_score": masks.dense_score(score_mod),
        "density": int(keep.sum()) / keep.numel(),  # no float copy of an (S, S) mask
        "notes": [w for w in (mask_words, score_words) if w],
        "row": {"mask": kind, "score_mod": score, "causal": kind == "causal"},
    }


def reference(q, k, v, mask, score_mod=None):
    """Float64 attention with an explicit mask: the reference for every variant."""
    s = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(q.shape[-1]))  # (B, H, S, S)
    if score_mod is not None:
        s = score_mod(s)
    return torch.softmax(s.masked_fill(mask, float("-inf")), dim=-1) @ v


def naive(q, k, v, mask, score_mod=None):
    s = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(q.shape[-1]))  # (B, H, S, S)
    if score_mod is not None:
        s = score_mod(s)
    s = s.masked_fill(mask, float("-inf"))  # out of place: a full copy of s
    return torch.softmax(s, dim=-1) @ v


def naive_inplace(q, k, v, mask, score_mod=None):
    s = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(q.shape[-1]))  # (B, H, S, S)
    if score_mod is not None:
        s = score_mod(s)
    s.masked_fill_(mask, float("-inf"))  # in place: no copy
    return torch.softmax(s, dim=-1) @ v


def naive_break(q, k, v, mask, score_mod=None):
    s = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(q.shape[-1]))  # (B, H, S, S)
    if score_mod is not None:
        s = score_mod(s)
    torch._dynamo.graph_break()  # deliberate: shows how a break splits the compiled graph
    s = s.masked_fill(mask, float("-inf"))
    return torch.softmax(s, dim=-1) @ v


def _register_primitive(name: str, fn):
    """naive-style attention from primitives: (q, k, v, mask) against the float64 reference."""

    @register(name, family="attention", shape_keys=SHAPE, flops=attention_flops)
    def build(shape, dtype, device, gen, causal=True, family=None, **_):
        sp = spec(shape, device, gen, causal, family)
        dense = sp["dense_score"]
        return Workload(
            fn=fn if dense is None else functools.partial(fn, score_mod=dense),
            inputs=(*qkv(shape, dtype, device, gen), ~sp["keep"]),  # mask: True = masked out
            reference=functools.partial(reference, score_mod=dense),
            ref_index=ref_index_of(shape),
            notes=sp["notes"],
            row=sp["row"],
            useful_fraction=sp["density"],
        )

    build.__name__ = f"build_{name}"
    return build


_register_primitive("naive", naive)
_register_primitive("naive_inplace", naive_inplace)
_register_primitive("naive_break", naive_break)  # a deliberate graph break, for compile diagnostics


def _sdpa_workload(shape, dtype, device, gen, causal, family):
    sp = spec(shape, device, gen, causal, family)
    q, k, v = qkv(shape, dtype, device, gen)
    mask, dense = ~sp["keep"], sp["dense_score"]
    if sp["score"] == "softcap":
        raise NotImplementedError(
            "score_mod=softcap is not supported by SDPA: it has no hook for a function of the "
            "scores (tanh), only an additive attn_mask; use variant=flex or naive"
        )

    def ref(q, k, v, *_):  # the attn_mask input, if any, is the same mask as ``mask``
        return reference(q, k, v, mask, dense)

    common = dict(reference=ref, ref_index=ref_index_of(shape), notes=sp["notes"], row=sp["row"])
    common["useful_fraction"] = sp["density"]
    if sp["kind"] in ("causal", "none") and dense is None:
        is_causal = sp["kind"] == "causal"

        def sdpa(q, k, v):
            return F.scaled_dot_product_attention(q, k, v, is_causal=is_causal)

        return Workload(fn=sdpa, inputs=(q, k, v), **common)
    if dense is None:
        attn_mask = sp["keep"]  # (S, S) bool: True = the query sees the key (SDPA's sense)
    else:  # alibi: an additive float bias (1, H, S, S), -inf where masked
        zeros = torch.zeros(1, shape["heads"], *mask.shape, device=device, dtype=dtype)
        attn_mask = dense(zeros).masked_fill(mask, float("-inf"))

    def sdpa_masked(q, k, v, attn_mask):
        return F.scaled_dot_product_attention(q, k, v, attn_mask=attn_mask)

    return Workload(fn=sdpa_masked, inputs=(q, k, v, attn_mask), train_inputs=(0, 1, 2), **common)


def _register_sdpa(name: str, backend: str | None):
    @register(
        name,
        family="attention",
        shape_keys=SHAPE,
        sdpa_backend=backend,
        flops=attention_flops,
        devices=("cuda",) if backend in ("efficient", "cudnn") else ("cpu", "cuda"),
    )
    def build(shape, dtype, device, gen, causal=True, family=None, **_):
        return _sdpa_workload(shape, dtype, device, gen, causal, family)

    build.__name__ = f"build_{name}"
    return build


for _name in ("math", "efficient", "flash", "cudnn"):
    _register_sdpa(_name, _name)
_register_sdpa("sdpa", None)  # the dispatcher's own choice; the row records what ran
