"""Correctness: the output against a float64 reference, with a dtype-appropriate tolerance.

The reference runs on the same device on inputs upcast to float64. Errors are scaled by the
reference's largest magnitude, so a bf16 sum of thousands of products is judged by its
precision, not by elements that happen to be near zero:

    max_abs_err  = max |out - ref|
    max_rel_err  = max_abs_err / max |ref|
    norm_rel_err = ||out - ref||_2 / ||ref||_2

A cell is ``mismatch`` when max_rel_err exceeds the tolerance or the output has a NaN/Inf
the reference does not have.
"""

from __future__ import annotations

import torch

# bf16 keeps 8 mantissa bits (2^-8 ~ 4e-3 per rounding); softmax and long reductions in bf16
# compound a few roundings. fp32 allows for TF32-like paths Inductor may pick.
TOLERANCE = {"bf16": 3e-2, "fp16": 5e-3, "fp32": 1e-3}


def compare(
    out: torch.Tensor, ref: torch.Tensor, dtype: str, tolerance: float | None = None
) -> dict:
    tol = TOLERANCE[dtype] if tolerance is None else tolerance
    o = out.detach().double()
    r = ref.detach().double()
    if o.shape != r.shape:
        return {
            "ok": False,
            "reason": f"shape {tuple(o.shape)} != reference {tuple(r.shape)}",
            "max_abs_err": None,
            "max_rel_err": None,
            "norm_rel_err": None,
            "tolerance": tol,
        }
    finite_o, finite_r = torch.isfinite(o), torch.isfinite(r)
    if not torch.equal(finite_o, finite_r):
        bad = int((finite_o != finite_r).sum())
        return {
            "ok": False,
            "reason": f"{bad} elements are NaN/Inf where the reference is not",
            "max_abs_err": None,
            "max_rel_err": None,
            "norm_rel_err": None,
            "tolerance": tol,
        }
    d = (o - r)[finite_r]
    rf = r[finite_r]
    max_abs = float(d.abs().max()) if d.numel() else 0.0
    scale = float(rf.abs().max()) if rf.numel() else 0.0
    max_rel = max_abs / scale if scale > 0 else max_abs
    norm = float(rf.norm())
    norm_rel = float(d.norm()) / norm if norm > 0 else float(d.norm())
    ok = max_rel <= tol
    reason = "" if ok else f"max_rel_err {max_rel:.3g} > tolerance {tol:g} for {dtype}"
    return {
        "ok": ok,
        "reason": reason,
        "max_abs_err": max_abs,
        "max_rel_err": max_rel,
        "norm_rel_err": norm_rel,
        "tolerance": tol,
    }


def output(wl, out, dtype: str, tolerance) -> dict:
    """A forward's output against the workload's float64 reference (on a slice where the full
    reference would not fit), with the FLOPs flop_counter counts on that reference."""
    from study import flops
    from study.workloads import registry

    out_bytes = out.numel() * out.element_size()
    ins = wl.inputs
    if wl.ref_index is not None:  # check a slice: the full float64 reference would not fit
        ins = tuple(t[wl.ref_index] if t.dim() == 4 else t for t in ins)
        out = out[wl.ref_index]
    ins = tuple(t.double() if t.is_floating_point() else t for t in ins)
    counter = flops.counter()
    with counter, torch.no_grad():
        ref = registry.reference_of(wl)(*ins)
    res = compare(out, ref, dtype, tolerance)
    res["flops"] = float(counter.get_total_flops())
    res["out_bytes"] = out_bytes
    return res
