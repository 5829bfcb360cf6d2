"""Attention masks and score mods (``family.mask``, ``family.score_mod``), each written once.

A mask is a FlexAttention ``mask_mod(b, h, q_idx, kv_idx) -> keep``; a score mod is a
``score_mod(score, b, h, q_idx, kv_idx) -> score``. The same function, called on broadcast index
grids, gives the dense (S, S) mask of the naive variants, SDPA's ``attn_mask`` and the float64
reference, so the reference masks exactly what flex masks. The patterns are the standard ones
of attention-gym, tritonbench's flex_attention and PyTorch's benchmarks/transformer/score_mod.py:

- ``causal``: q >= kv.
- ``sliding_window``: causal, and the query sees its last ``window`` keys (itself included).
- ``document``: causal within a document; ``documents`` packed sequences whose random lengths
  come from the seed (one packing for every batch row).
- ``prefix_lm``: the first ``prefix`` keys are seen by every query; the rest is causal.
- ``none``: every key.
- score mods ``alibi`` (score + slope_h * (kv - q), slope_h = 2^(-8 (h+1) / H)) and ``softcap``
  (cap * tanh(score / cap)).
"""

from __future__ import annotations

import torch

MASKS = ("causal", "sliding_window", "document", "prefix_lm", "none")
SCORE_MODS = ("none", "alibi", "softcap")


def document_ids(seq_len: int, documents: int, seed: int, device) -> torch.Tensor:
    """(S,) int32 document id of each position: ``documents`` packed sequences of random
    lengths (at least 1), from ``seed`` on a CPU generator, so every device packs alike."""
    n = max(1, min(documents, seq_len))
    g = torch.Generator().manual_seed(seed)
    cuts = torch.randperm(seq_len - 1, generator=g)[: n - 1] + 1  # distinct starts in 1..S-1
    starts = torch.zeros(seq_len, dtype=torch.int32)
    starts[cuts] = 1
    return starts.cumsum(0).to(torch.int32).to(device)


def mask_mod(kind: str, family: dict, seq_len: int, seed: int, device):
    """The mask_mod for ``kind`` (None for ``none``), and its parameters in words."""
    if kind == "none":
        return None, ""
    if kind == "causal":

        def causal(b, h, q_idx, kv_idx):
            return q_idx >= kv_idx

        return causal, ""
    if kind == "sliding_window":
        window = family["window"]

        def sliding_window(b, h, q_idx, kv_idx):
            return (q_idx >= kv_idx) & (q_idx - kv_idx < window)

        return sliding_window, f"sliding window of {window} keys"
    if kind == "document":
        doc = document_ids(seq_len, family["documents"], seed, device)  # (S,)

        def document(b, h, q_idx, kv_idx):
            return (doc[q_idx] == doc[kv_idx]) & (q_idx >= kv_idx)

        lengths = torch.bincount(doc.cpu().long()).tolist()
        return document, f"{len(lengths)} packed documents of lengths {lengths} (seed {seed})"
    if kind == "prefix_lm":
        prefix = family["prefix"]

        def prefix_lm(b, h, q_idx, kv_idx):
            return (kv_idx < prefix) | (q_idx >= kv_idx)

        return prefix_lm, f"prefix of {prefix} keys seen by every query"
    raise ValueError(f"family.mask={kind!r} is not a mask; allowed: {', '.join(MASKS)}")


def score_mod(kind: str, family: dict, heads: int, device):
    """The score_mod for ``kind`` (None for ``none``), and its parameters in words."""
    if kind == "none":
        return None, ""
    if kind == "alibi":
        slopes = torch.exp2(-8.0 * torch.arange(1, heads + 1, device=device) / heads)  # (H,)

        def alibi(score, b, h, q_idx, kv_idx):
            return score + slopes[h] * (kv_idx - q_idx)

        return alibi, ""
    if kind == "softcap":
        cap = float(family["softcap"])

        def softcap(score, b, h, q_idx, kv_idx):
            return cap * torch.tanh(score / cap)

        return softcap, f"softcap {cap:g}"
    raise ValueError(f"family.score_mod={kind!r} is not a score mod; allowed: {SCORE_MODS}")


def _grid(seq_len: int, device):
    idx = torch.arange(seq_len, device=device)
    return idx[:, None], idx[None, :]  # q (S, 1), kv (1, S)


def dense_keep(mod, seq_len: int, device) -> torch.Tensor:
    """(S, S) bool, True where a query sees a key: ``mod`` on the index grid (all True for None)."""
    if mod is None:
        return torch.ones(seq_len, seq_len, dtype=torch.bool, device=device)
    q, kv = _grid(seq_len, device)
    zero = torch.zeros((), dtype=torch.int64, device=device)
    return mod(zero, zero, q, kv).expand(seq_len, seq_len).contiguous()


def dense_score(mod):
    """``mod`` applied to a (B, H, S, S) score tensor (its head h, query q, key kv); None stays
    None. Heads are counted from 0, as in a reference checked on heads 0..h-1."""
    if mod is None:
        return None

    def apply(s):
        q, kv = _grid(s.shape[-1], s.device)
        h = torch.arange(s.shape[1], device=s.device)[None, :, None, None]  # (1, H, 1, 1)
        return mod(s, None, h, q, kv).to(s.dtype)

    return apply
