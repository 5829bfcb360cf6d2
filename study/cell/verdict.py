"""Phase 4 of a cell: its first call's output, and a training step's gradients, judged against
the float64 reference (study.cell.correctness compares; here the cell's row and notes are
filled), with the FLOPs the reference counted."""

from __future__ import annotations

import time

from study.cell import build, correctness, passes
from study.observe import flops


def check(cell) -> None:
    t = time.perf_counter()
    out = correctness.detach(cell.out)
    del cell.out
    tol = cell.cfg.tolerance
    cell.ref = correctness.reference(cell.wl) if cell.trained is None else None  # once a cell
    if cell.cfg.tolerance_rule == "eager":  # judged by eager's own error (study.cell.correctness)
        tol = _eager_tolerance(cell, out)
    if cell.trained is None:
        res = correctness.output(cell.wl, out, cell.row["dtype"], tol, cell.ref)
    else:
        res = _check_training(cell, out, tol)
    cell.row["check_s"] = time.perf_counter() - t
    if res.get("skipped"):
        cell.notes.append(
            "not compared (not tensors): "
            + ", ".join(res["skipped"][:4])
            + " (a library's cache object? switch it off, e.g. +variant.kwargs.use_cache=false)"
        )
    cell.row["bytes_min"] = build.input_bytes(cell.wl) + res["out_bytes"]
    for k in ("max_abs_err", "max_rel_err", "norm_rel_err", "tolerance"):
        cell.row[k] = res[k]
    counted = None if cell.wl.ref_index else res["flops"]
    f = flops.cell_flops(cell.entry, cell.wl, cell.shape, counted)
    factor = passes.flops_factor(cell.kind)
    if f["flops_source"] == "analytic" and factor != 1.0:  # a forward formula, scaled
        f["flops"] *= factor
        for k in ("flops_useful", "flops_scheduled"):
            f[k] = f[k] * factor if f.get(k) else None
        f["flops_source"] = f"analytic x{factor:g} ({cell.kind})"
    cell.row.update(f)
    cell.check_ok, cell.check_reason = res["ok"], res["reason"]
    release(cell)


def release(cell) -> None:
    """Drop what only the check needs (the float64 reference, its inputs, and the first step's
    snapshots) before the cell is timed and its steady-state memory taken: kept, they sat in
    every later peak (flash's forward read 169 MB, 67 of them the float64 output's; a training
    cell's float64 gradients and parameter copies besides). Freed by their reference count here;
    memory.Peak collects the garbage before it measures."""
    cell.ref = None
    cell.reference = None
    if cell.trained is not None:
        cell.trained.before, cell.trained.after = [], []


def _eager_tolerance(cell, out) -> float:
    """tolerance_rule=eager: eager's own error against the same float64 reference, in this
    process, on the first call's inputs and parameters (output and gradients), times
    correctness.EAGER_MULTIPLIER, and never below the dtype's tolerance. An eager row is its own
    baseline (only NaN/Inf, shapes and integer leaves can fail it)."""
    dtype, base = (
        cell.row["dtype"],
        correctness.tolerance(cell.row["dtype"], cell.cfg.tolerance),
    )
    if cell.mode == "off":
        own = out
    elif cell.trained is None:
        own = correctness.detach(cell.eager())
    else:  # eager's first step, on the parameters the compiled first step started from
        own = passes.first_step_again(cell.trained, cell.wl, cell.step.grad_out)
    if cell.trained is None:
        err = correctness.output(cell.wl, own, dtype, base, cell.ref)["max_rel_err"]
    else:
        errs = _check_training(cell, own, base, record=False)
        err = max(errs["max_rel_err"] or 0.0, errs["grad_max_rel_err"] or 0.0)
        if cell.mode != "off":
            passes.restore_first_step(cell.trained)  # the compiled step's grads and params
    cell.row["eager_max_rel_err"] = err
    tol = max(base, correctness.EAGER_MULTIPLIER * (err or 0.0))
    if tol > base:
        cell.notes.append(
            f"tolerance_rule=eager: eager's own error {err:.3g} x {correctness.EAGER_MULTIPLIER:g} "
            f"= tolerance {tol:.3g} (the dtype's: {base:g})"
        )
    return tol


def _check_training(cell, out, tol=None, record=True) -> dict:
    """The first step's output and every gradient, against the float64 reference."""
    if cell.ref is None:  # the float64 step once a cell (tolerance_rule=eager asks twice)
        counter = flops.counter()
        with counter:
            ref_out, ref_grads = cell.reference.run(cell.step.grad_out)
        cell.ref = (ref_out, ref_grads, float(counter.get_total_flops()))
    ref_out, ref_grads, counted = cell.ref
    index = cell.wl.ref_index
    res = correctness.compare_tree(
        out[index] if index is not None else out, ref_out, cell.row["dtype"], tol
    )
    g = passes.check_grads(cell.trained, ref_grads, index, cell.row["dtype"], tol)
    res["grad_max_rel_err"] = g["grad_max_rel_err"]
    if not record:
        return res
    cell.row["grad_max_rel_err"], cell.row["grad_worst"] = (
        g["grad_max_rel_err"],
        g["grad_worst"],
    )
    if g["unused"]:
        cell.notes.append(
            "no gradient (the forward does not use them; None in float64 too): "
            + ", ".join(g["unused"][:4])
            + (f" and {len(g['unused']) - 4} more" if len(g["unused"]) > 4 else "")
        )
    if res["ok"] and not g["ok"]:
        res["ok"], res["reason"] = False, g["reason"]
    res["flops"] = counted
    res["out_bytes"] = correctness.out_bytes(out)
    return res
