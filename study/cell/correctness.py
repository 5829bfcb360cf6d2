"""Correctness: the output against a float64 reference, with a dtype-appropriate tolerance.

The reference runs on the same device on inputs upcast to float64. Errors are scaled by the
reference's largest magnitude, so a bf16 sum of thousands of products is judged by its
precision, not by elements that happen to be near zero:

    max_abs_err  = max |out - ref|
    max_rel_err  = max_abs_err / max(max |ref|, scale)
    norm_rel_err = ||out - ref||_2 / ||ref||_2

``scale`` is the size of what the tensor is judged against when its own values are not: a
gradient is scaled by its parameter group (study.cell.passes.check_grads: the module that holds
it, k.weight with k.bias), and never by less than the dtype's tolerance times the largest
gradient of the step. A gradient that is exactly zero in float64 (a key projection's bias under
softmax: about 1e-17, roundoff) is then judged by the error a correct computation makes on the
values it cancelled, not divided by its own roundoff. PyTorch's dynamo harness does the same
with an absolute tolerance (torch._dynamo.utils.same: allclose with atol=tol before its float64
comparison).

A cell is ``mismatch`` when max_rel_err exceeds the tolerance, or when the output or the
reference has a NaN/Inf anywhere: a NaN compares with nothing, so an all-NaN output is never
``ok`` with nothing compared.
"""

from __future__ import annotations

import torch

from study.observe import flops
from study.workloads import registry

# bf16 keeps 8 mantissa bits (2^-8 ~ 4e-3 per rounding); softmax and long reductions in bf16
# compound a few roundings. fp32 allows for TF32-like paths Inductor may pick.
TOLERANCE = {"bf16": 3e-2, "fp16": 5e-3, "fp32": 1e-3}


# tolerance_rule=eager: a compiled result may be this many times further from float64 than
# eager's own (PyTorch's benchmark harness: torch._dynamo.utils.same(..., fp64_ref=...)
# allows 2x, 3x for some models).
EAGER_MULTIPLIER = 3.0


def tolerance(dtype: str, given: float | None) -> float:
    return TOLERANCE[dtype] if given is None else given


def compare(
    out: torch.Tensor,
    ref: torch.Tensor,
    dtype: str,
    tolerance: float | None = None,
    scale: float = 0.0,
) -> dict:
    """``out`` against its float64 ``ref``, scaled by max |ref| and at least ``scale``."""
    tol = TOLERANCE[dtype] if tolerance is None else tolerance
    o = out.detach().double()
    r = ref.detach().double()
    failed = {"ok": False, "max_abs_err": None, "max_rel_err": None, "norm_rel_err": None,
              "tolerance": tol}  # fmt: skip
    if o.shape != r.shape:
        return {**failed, "reason": f"shape {tuple(o.shape)} != reference {tuple(r.shape)}"}
    bad_r, bad_o = int((~torch.isfinite(r)).sum()), int((~torch.isfinite(o)).sum())
    if bad_r:  # what the reference cannot say, nothing can be compared with
        return {**failed, "reason": f"{bad_r} of {r.numel()} elements of the float64 reference "
                "are NaN/Inf: nothing to compare them with (check the inputs and the workload)"}  # fmt: skip
    if bad_o:
        return {**failed, "reason": f"{bad_o} of {o.numel()} elements are NaN/Inf where the "
                "float64 reference is finite"}  # fmt: skip
    d = o - r
    max_abs = float(d.abs().max()) if d.numel() else 0.0
    scale = max(float(r.abs().max()) if r.numel() else 0.0, scale)
    max_rel = max_abs / scale if scale > 0 else max_abs
    norm = float(r.norm())
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


def leaves(tree) -> list:
    """The leaves of an output of any structure: a tensor, a tuple or list, a dict, a
    dataclass, or what a library registers as a pytree node (Hugging Face's ModelOutput)."""
    from torch.utils._pytree import tree_leaves

    return tree_leaves(tree)


def out_bytes(tree) -> int:
    return sum(t.numel() * t.element_size() for t in leaves(tree) if isinstance(t, torch.Tensor))


def detach(tree):
    from torch.utils._pytree import tree_map

    return tree_map(lambda t: t.detach() if isinstance(t, torch.Tensor) else t, tree)


def compare_tree(out, ref, dtype: str, tolerance: float | None = None) -> dict:
    """Every leaf of ``out`` against the same leaf of ``ref``: floating-point leaves by
    ``compare`` (the worst error is the row's), integer and boolean leaves exactly (never cast
    to float64); ``None`` and leaves that are not tensors (a library's cache object) are skipped
    and named in ``skipped``. A single tensor gives exactly ``compare``'s result."""
    if isinstance(out, torch.Tensor) and isinstance(ref, torch.Tensor):
        return {**compare(out, ref, dtype, tolerance), "skipped": []}
    got, want = leaves(out), leaves(ref)
    tol = TOLERANCE[dtype] if tolerance is None else tolerance
    worst = {"ok": True, "reason": "", "max_abs_err": 0.0, "max_rel_err": 0.0,
             "norm_rel_err": 0.0, "tolerance": tol, "skipped": []}  # fmt: skip
    if len(got) != len(want):
        return {**worst, "ok": False, "max_abs_err": None, "max_rel_err": None,
                "norm_rel_err": None,
                "reason": f"the output has {len(got)} leaves, the reference {len(want)}"}  # fmt: skip
    compared = 0
    for i, (o, r) in enumerate(zip(got, want, strict=True)):
        if not (isinstance(o, torch.Tensor) and isinstance(r, torch.Tensor)):
            if o is not None:
                worst["skipped"].append(f"leaf {i}: {type(o).__name__}")
            continue
        compared += 1
        if not o.is_floating_point() and not o.is_complex():
            if not torch.equal(o.cpu(), r.cpu()):
                n = int((o.cpu() != r.cpu()).sum()) if o.shape == r.shape else o.numel()
                worst.update(ok=False, reason=worst["reason"] or f"leaf {i} ({o.dtype}): {n} "
                             "elements differ from the reference (compared exactly)")  # fmt: skip
            continue
        res = compare(o, r, dtype, tolerance)
        for k in ("max_abs_err", "max_rel_err", "norm_rel_err"):
            if res[k] is None or worst[k] is None:
                worst[k] = None
            else:
                worst[k] = max(worst[k], res[k])
        if not res["ok"] and worst["ok"]:
            worst.update(ok=False, reason=f"leaf {i}: {res['reason']}")
    if not compared:
        worst.update(ok=False, reason="the output holds no tensor to compare")
    return worst


def reference(wl) -> tuple:
    """The workload's float64 forward (on a slice where the full reference would not fit), and
    the FLOPs flop_counter counts on it: computed once a cell, whatever it is compared with."""
    ins = wl.inputs
    if wl.ref_index is not None:  # check a slice: the full float64 reference would not fit
        ins = tuple(t[wl.ref_index] if t.dim() == 4 else t for t in ins)
    ins = tuple(t.double() if t.is_floating_point() else t for t in ins)
    counter = flops.counter()
    with counter, torch.no_grad():
        ref = registry.reference_of(wl)(*ins)
    return ref, float(counter.get_total_flops())


def output(wl, out, dtype: str, tolerance, ref: tuple | None = None) -> dict:
    """A forward's output against the workload's float64 reference (``reference``; pass it
    when it is at hand), with the FLOPs counted on that reference."""
    nbytes = out_bytes(out)
    if wl.ref_index is not None:
        out = out[wl.ref_index]
    ref_out, counted = ref if ref is not None else reference(wl)
    res = compare_tree(out, ref_out, dtype, tolerance)
    res["flops"] = counted
    res["out_bytes"] = nbytes
    return res
