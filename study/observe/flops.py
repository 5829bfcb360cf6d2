"""FLOPs of one call, from the call itself, never borrowed from another variant or family.

Where the number comes from, in this order (``flops_source``):

1. ``flop_counter``: ``torch.utils.flop_counter.FlopCounterMode`` around the cell's float64
   reference call (eager; a compiled call would count only its extern kernels). It counts
   matmuls (a multiply-add is 2), convolutions and attention (4*B*H*S^2*D; causal is not
   halved), and nothing else: no softmax, normalisation or elementwise op. ``counter()`` adds
   the CPU flash SDPA op, which flop_counter leaves at 0, with flop_counter's own SDPA formula,
   so a module that calls SDPA is counted the same on CPU and GPU.
2. ``analytic``: the formula the variant registers for itself (``@register(..., flops=fn)``,
   or ``variant.flops`` for a custom variant), used only when the counter did not see the whole
   call (the reference was checked on a slice) or counted nothing.
3. blank, with ``flops_note`` saying why: then every rate is blank too.

``flops_useful`` is the part of ``flops`` the work needs: ``flops`` times the workload's
``useful_fraction``. For attention that is the elements the mask keeps of the S x S score
matrix (causal: S(S+1)/2 of S^2, about half), the same numerator for naive, SDPA and flex.
Elsewhere it equals ``flops``. ``flops_scheduled`` is what a kernel is given where that is more
(flex: the tiles its block mask keeps, 1 - sparsity, partial tiles whole); blank elsewhere.
``tflops_useful`` over the per-call latency is the rate to hold against the calibrated peak: a
fused kernel that skips masked tiles cannot read above it there.

``cell_flops`` is pure: the counting happens in the cell's check (study.cell.verdict.check).
"""

from __future__ import annotations

import inspect

COUNTED_OPS = "matmul, convolution and attention ops"


def counter():
    """A FlopCounterMode that also counts the CPU flash SDPA op (flop_counter's formula)."""
    import torch
    from torch.utils import flop_counter as fc

    def cpu_flash(query_shape, key_shape, value_shape, *_, out_shape=None, **__):
        return fc.sdpa_flop_count(query_shape, key_shape, value_shape)  # (shapes, not tensors)

    extra = {}
    op = getattr(torch.ops.aten, "_scaled_dot_product_flash_attention_for_cpu", None)
    if op is not None and hasattr(fc, "sdpa_flop_count"):
        extra[op] = cpu_flash
    for op, f in fc.flop_registry.items():  # SDPA's formulas, for grouped-query attention too
        if "scaled_dot_product" in str(op) and hasattr(f, "__wrapped__"):
            extra[op] = _grouped(inspect.unwrap(f))
    for op, f in list(extra.items()):
        if "scaled_dot_product" in str(op) and f is cpu_flash:
            extra[op] = _grouped(cpu_flash)
    return fc.FlopCounterMode(display=False, custom_mapping=extra)


def _grouped(formula):
    """An SDPA flop formula that takes grouped-query shapes: flop_counter asserts that keys and
    values have the query's heads (a Llama's 12 query heads over 3 key/value heads failed the
    float64 reference there). Each key/value head serves heads/kv_heads query heads, so the
    work is the query's heads' (what SDPA's enable_gqa does)."""

    def f(*shapes, **kw):
        q = next((s for s in shapes if isinstance(s, tuple | list) and len(s) == 4), None)
        if q is not None:
            shapes = tuple(
                (s[0], q[1], *s[2:])
                if isinstance(s, tuple | list) and len(s) == 4 and s[1] != q[1] and q[1] % s[1] == 0
                else s
                for s in shapes
            )
        return formula(*shapes, **kw)

    return f


def cell_flops(entry, wl, shape: dict, counted: float | None) -> dict:
    """flops, flops_source, flops_note and flops_useful for one call of ``entry``'s workload.

    ``counted``: what the counter saw on the whole reference call; None when the reference ran
    on a slice only (``wl.ref_index``), so that the count is not the call's. ``flops_useful``
    is the share the work needs (``wl.useful_fraction``: for attention, what the mask keeps).
    """
    out = _flops(entry, shape, counted)
    total = out["flops"]
    out["flops_useful"] = None if total is None else total * wl.useful_fraction
    tiles = wl.scheduled_fraction
    out["flops_scheduled"] = None if total is None or tiles is None else total * tiles
    return out


def _flops(entry, shape: dict, counted: float | None) -> dict:
    formula = entry.flops(shape) if entry.flops is not None else None
    if counted:
        return {"flops": float(counted), "flops_source": "flop_counter", "flops_note": None}
    if counted is None:
        why = "the float64 reference was checked on a slice, so flop_counter saw part of the call"
    else:
        why = f"flop_counter counted 0 FLOPs (it counts {COUNTED_OPS}; this call ran none)"
    if formula is not None:
        return {"flops": float(formula), "flops_source": "analytic", "flops_note": why}
    how = (
        "set variant.flops=pkg.module.fn (fn takes shape keys, returns FLOPs per call)"
        if entry.target
        else f"register one with @register({entry.name!r}, ..., flops=fn)"
    )
    return {
        "flops": None,
        "flops_source": None,
        "flops_note": f"{why}, and variant {entry.name!r} has no analytic formula of its own: {how}",
    }
