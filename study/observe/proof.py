"""Proof of which SDPA backend ran, from the trace: the one check that makes a row ``ok``.

A row that claims a backend must show that backend's work in its profiled steps **and no
other backend's**: a flash row whose trace also holds a cuDNN kernel proves nothing about
flash. Evidence, per backend:

- flash, efficient, cuDNN: a kernel of that class (study.observe.classify) in the profiled steps; on
  the CPU, the backend's aten op, which the trace records as the "kernel".
- math, eager: the ``aten::_scaled_dot_product_attention_math`` op in the trace.
- math, compiled: Inductor decomposes the op into generated kernels. Inductor's provenance
  map (``generated[kernels][name][from_sdpa]``) says which generated kernels came from the
  ``scaled_dot_product_attention`` call, and **every one of them must be in the trace**: a
  map alone proves what was compiled, not what ran.

Every failure reason starts with ``PREFIX``, so ``study.reparse`` can tell a proof failure
(which it re-decides) from any other ``invalid`` reason (which it keeps).
"""

from __future__ import annotations

from study.config import compile_targets
from study.observe.classify import BACKEND_CLASS
from study.observe.inductor import match_kernel

PREFIX = "proof: "
LEGACY_PREFIXES = ("pinned backend ",)  # reasons written before PREFIX existed
MATH_OP = "_scaled_dot_product_attention_math"


def _generated_in_trace(kernel_rows: list[dict], generated: dict) -> tuple[list, list]:
    """(decomposed kernels found in the trace, those missing): the generated kernels that
    Inductor's provenance maps to the SDPA call, matched to trace names (CPU: graph_N_...)."""
    gk = generated.get("kernels", {})
    decomposed = sorted(k for k, v in gk.items() if v.get("from_sdpa"))
    ran = {match_kernel(r["kernel"], gk) for r in kernel_rows}
    return [k for k in decomposed if k in ran], [k for k in decomposed if k not in ran]


def is_proof_reason(reason: str) -> bool:
    return bool(reason) and reason.startswith((PREFIX, *LEGACY_PREFIXES))


def prove_backend(
    expected: str | None, kernel_rows: list[dict], op_names: list[str], generated: dict
) -> dict:
    """{ok, reason, backend_seen, backend_proof} for a row pinned to ``expected`` (math,
    efficient, flash, cudnn) or, with None, for the dispatcher's own choice (``sdpa``)."""
    seen, proof = [], []
    for backend, cls in BACKEND_CLASS.items():
        hits = [r["kernel"] for r in kernel_rows if r["kernel_class"] == cls]
        if hits:
            seen.append(backend)
            proof.append(f"{backend}: kernel {hits[0]}")
    math_ops = [n for n in op_names if MATH_OP in n]
    ran, missing = _generated_in_trace(kernel_rows, generated)
    if math_ops:
        seen.append("math")
        proof.append(f"math: op {math_ops[0]}")
    elif not seen and ran and not missing:
        # Decomposed math: no fused backend ran, and every kernel Inductor made from the SDPA
        # call is in the trace. (With a fused backend, kernels made from the call are its
        # layout copies, not math.)
        seen.append("math")
        proof.append(
            f"math: decomposed by Inductor into generated kernels that ran ({', '.join(ran)}; "
            "Inductor provenance: scaled_dot_product_attention -> these kernels)"
        )
    missing = missing if not seen else []  # they only matter where nothing else is proof
    out = {"backend_seen": "+".join(seen), "backend_proof": "; ".join(proof)}
    top = ", ".join(r["kernel_short"] for r in kernel_rows[:8]) or "no kernels"
    if missing:
        why = (
            f"{PREFIX}Inductor's provenance maps the SDPA call to generated kernel(s) "
            f"{', '.join(missing)} that are not in the profiled steps; trace shows: {top}"
        )
    elif expected is None:
        why = (
            f"{PREFIX}no SDPA backend kernel or op found in the trace"
            if not seen
            else f"{PREFIX}more than one SDPA backend ran ({'+'.join(seen)})"
            if len(seen) > 1
            else ""
        )
    elif expected not in seen:
        why = f"{PREFIX}pinned backend {expected!r} did not run; trace shows: {top}"
    elif len(seen) > 1:
        others = [b for b in seen if b != expected]
        why = (
            f"{PREFIX}pinned backend {expected!r} ran, but so did {'+'.join(others)}: "
            f"the trace does not show {expected} alone"
        )
    else:
        why = ""
    out["ok"] = not why
    out["reason"] = why
    return out


def _fused(rows: list[dict]) -> list[str]:
    return [b for b, cls in BACKEND_CLASS.items() if any(r["kernel_class"] == cls for r in rows)]


AOT_NO_INDUCTOR = ("aot_eager", "cudagraphs")  # torch.compile backends: AOTAutograd, no Inductor


def unprovable(backend: str | None, expected: str | None, proof: dict) -> str | None:
    """Why a pin cannot be proven under this compile backend, or None. AOTAutograd without
    Inductor (``aot_eager``, ``cudagraphs``) decomposes SDPA's math backend into aten ops (bmm,
    softmax, ...) that run as eager's kernels: no math op and no generated kernel is left in the
    trace. That is no wrong backend (``invalid``) but a pin this target cannot show
    (``unsupported``)."""
    if proof["ok"] or proof["backend_seen"] or expected != "math":
        return None
    if backend not in AOT_NO_INDUCTOR:
        return None
    return (
        f"compile backend {backend!r} decomposes SDPA's math backend into aten ops before it "
        "runs (AOTAutograd, no Inductor): no backend op or kernel is left in the trace to prove "
        "the pin; use compile=dynamo_eager or an Inductor mode"
    )


def prove_pass(
    expected: str | None, kernel_rows: list[dict], op_names: list[str], generated: dict
) -> dict:
    """``prove_backend`` for the forward's kernels, and for a training pass the backward's too:
    a fused backend's backward kernel (flash bwd, CUTLASS fmha bwd, cuDNN bprop) proves that
    backend and no other may appear; math's backward is the decomposition's own kernels, so
    it is proven when a math forward ran and no fused backward kernel did."""
    fwd = [r for r in kernel_rows if r.get("phase", "fwd") == "fwd"]
    bwd = [r for r in kernel_rows if r.get("phase") == "bwd"]
    out = prove_backend(expected, fwd, op_names, generated)
    if not bwd:
        return out
    want = expected or (out["backend_seen"] if "+" not in out["backend_seen"] else None)
    seen = _fused(bwd)
    if want == "math":
        ok, bseen = not seen, "+".join(seen) or "math"
    else:
        ok, bseen = seen == [want], "+".join(seen) or "none"
    out["backend_seen"] = f"{out['backend_seen']} (fwd), {bseen} (bwd)"
    if ok:
        hit = [r["kernel"] for r in bwd if r["kernel_class"] == BACKEND_CLASS.get(want, "")]
        proof = f"bwd: kernel {hit[0]}" if hit else "bwd: no fused backward kernel (decomposed)"
        out["backend_proof"] += f"; {proof}"
    elif out["ok"]:
        out["ok"] = False
        out["reason"] = (
            f"{PREFIX}the forward ran {want}, but the backward's fused kernels are "
            f"{'+'.join(seen) or 'none'}: the backward does not show {want}"
        )
    return out


def prove_target(mode: str, device: str, kernel_rows: list[dict], generated: dict, row: dict):
    """{ok, reason, proof} for what a compile target claims (study.config.compile_targets), from the trace and
    what the cell harvested: a row that claims a layer must show it, and no other layer's work.

    - dynamo_eager, aot_eager, cudagraphs: Dynamo captured a graph, and no Inductor-generated
      kernel ran (their kernels are eager's). cudagraphs on CUDA: no CUDA-graph skip.
    - cpp_wrapper: the wrapper Inductor wrote is C++.
    - aot_inductor: every generated kernel that ran is in the package's source.
    - freezing: the generated wrapper holds frozen (constant) parameters.
    """
    t = compile_targets.get(mode)
    gk = generated.get("kernels", {})
    ran_generated = sorted({r["kernel"] for r in kernel_rows if r.get("generated")})
    if mode == "off" or (t.inductor and t.dynamo and mode != "cpp_wrapper" and not _frozen(row)):
        return {"ok": True, "reason": "", "proof": ""}
    if t.dynamo and not _num(row.get("graphs")):
        return _bad(f"compile={mode}: Dynamo captured no graph, so the row measured eager")
    if not t.inductor:
        if ran_generated:
            return _bad(
                f"compile={mode} runs no Inductor, yet generated kernel(s) ran: "
                + ", ".join(ran_generated[:3])
            )
        if t.cudagraphs and device == "cuda" and _num(row.get("cudagraph_skips")):
            return _bad(
                f"compile={mode}: CUDA graphs were skipped ({row.get('cudagraph_skip_reasons')})"
            )
        return {
            "ok": True,
            "reason": "",
            "proof": f"{row.get('graphs')} graph(s) captured; no generated kernel in the trace",
        }
    proof = []
    if mode == "cpp_wrapper":
        if not generated.get("cpp_wrapper"):
            return _bad("compile=cpp_wrapper: the wrapper Inductor wrote is not C++")
        proof.append("the wrapper is C++")
    if mode == "aot_inductor":
        unmatched = [k for k in ran_generated if match_kernel(k, gk) is None]
        if unmatched:
            return _bad(
                "compile=aot_inductor: kernel(s) ran that are not in the package's source: "
                + ", ".join(unmatched[:3])
            )
        proof.append(f"{len(ran_generated)} generated kernel(s) ran, each in the package's source")
    if _frozen(row):
        if not generated.get("frozen"):
            return _bad("compile.freezing=true: no frozen parameter in the generated code")
        proof.append("parameters frozen into constants")
    return {"ok": True, "reason": "", "proof": "; ".join(proof)}


def _num(v) -> float:
    """A count from a row (a number, or its text when read back from a CSV); 0 when empty."""
    try:
        return float(v) if v not in (None, "") else 0.0
    except (TypeError, ValueError):
        return 0.0


def _frozen(row: dict) -> bool:
    return str(row.get("freezing")).lower() == "true"


def _bad(reason: str) -> dict:
    return {"ok": False, "reason": PREFIX + reason, "proof": ""}
