"""FlexAttention (``variant=flex``): the attention that exists only under torch.compile.

``flex_attention(q, k, v, score_mod, block_mask, kernel_options)`` with the cell's
``family.mask`` as a block mask and ``family.score_mod``. Compiled, Inductor turns it into one
template kernel (Triton on the GPU, C++ on the CPU) with the mods fused in, and the block mask
skips whole tiles. Under ``compile=off`` it runs flex's unfused eager fallback, which
materialises the scores (torch warns; the row says so).

- The block mask is built once here, outside every timed region, and its build time is the
  row's ``block_mask_s``. ``flops_useful`` counts the mask's kept elements, as for every
  attention variant (so flex and SDPA share one numerator); the block mask's kept tiles, partial
  ones whole (1 - ``block_sparsity``), give ``flops_scheduled``: the work its kernel is given.
- ``family.block_size`` is the block mask's tile; ``+family.kernel_options.<key>=...`` reaches
  ``flex_attention(kernel_options=...)`` as given (its keys differ between torch versions).
- The reference is float64 dense attention with the same mask and score mod
  (study.workloads.attention.reference), FLOPs the full matrix like every attention variant.
- ``prove`` finds the generated kernel that Inductor fused from ``flex_attention`` in the trace,
  with its source and the ops of the mods it fused (study.observe.inductor's provenance).
"""

from __future__ import annotations

import time

import torch

from study.workloads.attention import (
    SHAPE,
    attention_flops,
    qkv,
    ref_index_of,
    reference,
    spec,
)
from study.workloads.registry import Workload, register

EAGER_NOTE = (
    "compile=off: flex_attention ran its unfused eager fallback, which materialises the "
    "B x H x S x S scores; compile it for the fused kernel"
)


def prove(kernel_rows: list[dict], op_names: list[str], generated: dict) -> dict:
    """The flex kernel in the trace: a generated kernel fused from flex_attention (compiled),
    or the eager fallback's ops (compile=off)."""
    kernels = generated.get("kernels", {})
    if not kernels:
        ops = sorted({n for n in op_names if "flex" in n.lower()})
        return {
            "ok": True,
            "backend_seen": "flex_eager",
            "backend_proof": "unfused eager fallback"
            + (f": ops {', '.join(ops)}" if ops else " (no fused kernel)"),
            "reason": "",
            "notes": [EAGER_NOTE],
        }
    flex = {n: k for n, k in kernels.items() if "flex_attention" in f"{n} {k['fused_ops']}"}
    files = {k["source_file"]: n for n, k in flex.items()}
    hits = [r for r in kernel_rows if r.get("source_file") in files]
    if not hits:
        seen = ", ".join(r["kernel_short"] for r in kernel_rows[:8]) or "no kernels"
        return {
            "ok": False,
            "backend_seen": "",
            "backend_proof": "",
            "reason": f"no generated flex_attention kernel in the trace "
            f"(generated: {', '.join(flex) or 'none from flex_attention'}); trace shows: {seen}",
        }
    r = hits[0]
    name = files[r["source_file"]]
    return {
        "ok": True,
        "backend_seen": "flex",
        "backend_proof": (
            f"flex: kernel {name} (trace: {r['kernel'][:80]}, {r.get('inductor_kind') or '?'}), "
            f"source {r['source_file']}, fused: {kernels[name]['fused_ops']}"
        ),
        "reason": "",
    }


@register("flex", family="attention", shape_keys=SHAPE, flops=attention_flops)
def build(shape, dtype, device, gen, causal=True, family=None, **_):
    from torch.nn.attention.flex_attention import create_block_mask, flex_attention

    fam = family or {}
    sp = spec(shape, device, gen, causal, fam)
    q, k, v = qkv(shape, dtype, device, gen)
    row = dict(sp["row"])
    block_mask, density = None, 1.0
    if sp["mask_mod"] is not None:
        s = shape["seq_len"]
        size = min(fam.get("block_size") or 128, s)  # a tile larger than S is one S x S tile
        # the first build in a process pays imports and vmap set-up: pay it on one tile
        create_block_mask(sp["mask_mod"], None, None, size, size, device=device, BLOCK_SIZE=size)
        _sync(device)
        t0 = time.perf_counter()
        block_mask = create_block_mask(
            sp["mask_mod"], None, None, s, s, device=device, BLOCK_SIZE=size
        )
        _sync(device)
        row["block_mask_s"] = time.perf_counter() - t0
        row["block_sparsity"] = sparsity(block_mask)
        density = 1.0 - row["block_sparsity"] / 100.0
    else:
        row["block_sparsity"] = 0.0  # no block mask: every tile
    score_mod = sp["score_mod"]
    options = dict(fam.get("kernel_options") or {}) or None

    def flex(q, k, v):
        return flex_attention(
            q, k, v, score_mod=score_mod, block_mask=block_mask, kernel_options=options
        )

    mask, dense = ~sp["keep"], sp["dense_score"]

    def ref(q, k, v):
        return reference(q, k, v, mask, dense)

    return Workload(
        fn=flex,
        inputs=(q, k, v),
        reference=ref,
        ref_index=ref_index_of(shape),
        notes=sp["notes"] + ([f"kernel_options {options}"] if options else []),
        row=row,
        useful_fraction=sp["density"],  # the mask's kept elements (evaluated once, on S x S)
        scheduled_fraction=density,  # the kept tiles
        prove=prove,
    )


def sparsity(block_mask) -> float:
    """% of score tiles the block mask skips, from its tile counts. BlockMask.sparsity() is
    the same where S is a multiple of the tile, but its formula changed between torch versions
    (2.13 divides tile areas by S x S, and reads negative when S is below one tile)."""
    kept = int(block_mask.kv_num_blocks.sum())
    if block_mask.full_kv_num_blocks is not None:
        kept += int(block_mask.full_kv_num_blocks.sum())
    return 100.0 * (1.0 - kept / block_mask.kv_indices.numel())


def _sync(device: str) -> None:
    if device == "cuda":
        torch.cuda.synchronize()
