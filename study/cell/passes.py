"""What one call of a cell is (``pass=``): the forward, forward and backward, or a training step.

- ``fwd``: ``fn(*inputs)``, the study's default.
- ``fwd_bwd``: gradients set to None (as ``zero_grad(set_to_none=True)``), the forward, then
  ``(out * g).sum().backward()`` with ``g`` a fixed seeded tensor shaped like the output (a
  plain sum would make every upstream gradient 1). Compiled modes compile the module or
  function the way users do; AOTAutograd compiles its backward at the first backward.
- ``train_step``: ``fwd_bwd``, then ``AdamW.step()`` (foreach, eager: users compile the model).

What is trained: the module's parameters and the floating-point inputs (their gradients are
checked too). A workload with no parameters (matmul_add's tensors, attention's q, k, v)
trains its inputs: AdamW updates them in place, which changes values, not shapes, so nothing
recompiles. Each phase runs inside ``record_function("study::fwd|bwd|optim")``, so the trace
says which kernels belong to which (study.observe.trace); backward kernels, launched from autograd's
own thread, are placed by their launch time inside the main thread's range.

Correctness of a training pass: the first call's output and every gradient against float64
copies of the inputs and parameters taken before that call (``Reference``), with the dtype's
tolerance, each gradient scaled by its parameter group (``check_grads``); a wrong gradient
makes the row ``mismatch``, naming the tensor. A parameter the forward never uses has no
gradient on either side: that is equal, and the notes name it.
"""

# Long: a pass is its step, its trained leaves, the first step's snapshots and the float64
# reference its gradients are checked against; split apart, each would import the others.
from __future__ import annotations

import functools
import operator
from dataclasses import dataclass, field

from study.cell import correctness
from study.errors import Unsupported
from study.workloads.registry import reference_of

RANGE = "study::"
# Backward FLOPs per forward FLOP when the count is analytic: 2 (a matmul's dX and dW), the
# convention flop_counter's count of the float64 reference follows too, so a row's FLOPs do not
# change convention with its shape. (FlashAttention's papers count 2.5 for attention, whose
# backward recomputes the scores: flop_counter counts what the math reference runs.)
BWD_FACTOR = 2.0


@dataclass
class Trained:
    """The leaves a training pass differentiates, by name (``param:<name>``, ``input:<i>``)."""

    leaves: list[tuple[str, object]] = field(default_factory=list)
    optimizer: object = None
    notes: list[str] = field(default_factory=list)
    before: list = field(default_factory=list)  # values before the first step (snapshot)
    after: list = field(default_factory=list)  # the compiled first step's (values, grads)

    def zero(self) -> None:
        for _, t in self.leaves:
            t.grad = None


def prepare(kind: str, wl, lr: float = 1e-3) -> Trained | None:
    """Make the workload's parameters and floating-point inputs require grad; None for fwd."""
    import torch

    if kind == "fwd":
        return None
    tr = Trained()
    if wl.module is not None:
        if wl.reference is not None:  # a reference function has no parameters to differentiate
            raise Unsupported(
                f"pass={kind}: the module's reference is a function (variant.reference), so its "
                "parameters have no float64 gradients to check; leave the reference out (a "
                "float64 copy of the module is the default) for a training pass"
            )
        wl.module.requires_grad_(True)
        tr.leaves += [(f"param:{n}", p) for n, p in wl.module.named_parameters()]
    for i, t in enumerate(wl.inputs):
        if wl.train_inputs is not None and i not in wl.train_inputs:
            continue
        if isinstance(t, torch.Tensor) and t.is_floating_point():
            t.requires_grad_(True)
            tr.leaves.append((f"input:{i}", t))
    if not tr.leaves:
        raise Unsupported(f"pass={kind}: the workload has no floating-point input or parameter")
    if kind == "train_step":
        params = [t for n, t in tr.leaves if n.startswith("param:")]
        if not params:
            params = [t for _, t in tr.leaves]
            tr.notes.append("train_step: no parameters, so AdamW trains the inputs")
        tr.optimizer = torch.optim.AdamW(params, lr=lr, foreach=True)
    return tr


def make_step(
    kind: str, fn, inputs: tuple, tr: Trained | None, seed: int, backward_in=None, grad=True
):
    """One call of the pass: ``step() -> output``. ``backward_in``: a context factory the
    backward runs in (compiled autograd, for the compiled step only). ``grad=False``: the
    forward runs under ``torch.no_grad`` (compile.freezing needs it)."""
    from contextlib import nullcontext

    import torch
    from torch.profiler import record_function

    if kind == "fwd" and not grad:

        def step():
            with torch.no_grad():
                return fn(*inputs)

        return step
    if kind == "fwd":
        return lambda: fn(*inputs)
    grad_out = []
    backward_in = backward_in or nullcontext

    def step():
        tr.zero()
        with record_function(RANGE + "fwd"):
            out = fn(*inputs)
        ys = grad_leaves(out)
        if not grad_out:  # the first call (compile): shape the upstream gradients once
            for i, y in enumerate(ys):
                gen = torch.Generator(device=y.device).manual_seed(seed + 1 + i)
                grad_out.append(torch.randn(y.shape, generator=gen, device=y.device, dtype=y.dtype))
        with record_function(RANGE + "bwd"), backward_in():
            loss(ys, grad_out).backward()
        if tr.optimizer is not None:
            with record_function(RANGE + "optim"):
                tr.optimizer.step()
        return out

    step.grad_out = grad_out
    return step


def grad_leaves(out) -> list:
    """The output's floating-point leaves that require grad, in pytree order: what a training
    pass differentiates (``(y * g).sum()`` over each). None of them: ``Unsupported``."""
    import torch

    ys = [
        t
        for t in correctness.leaves(out)
        if isinstance(t, torch.Tensor) and t.is_floating_point() and t.requires_grad
    ]
    if not ys:
        kinds = sorted({type(t).__name__ for t in correctness.leaves(out)}) or ["nothing"]
        raise Unsupported(
            "a training pass needs a floating-point output that requires grad; this output "
            f"holds {', '.join(kinds)}, none of them (use pass=fwd)"
        )
    return ys


def loss(ys: list, grads: list):
    """sum((y * g).sum()) over the output's differentiable leaves and their fixed gradients."""
    if len(ys) != len(grads):
        raise RuntimeError(f"{len(ys)} differentiable outputs against {len(grads)} gradients")
    terms = [(y * g.to(y.dtype)).sum() for y, g in zip(ys, grads, strict=True)]
    if not terms:
        raise RuntimeError("the output has no floating-point tensor to take gradients of")
    # not sum(terms): it starts from 0, and 0 + tensor is one more kernel in every step
    return functools.reduce(operator.add, terms)


def snapshot(tr: Trained) -> None:
    """Keep the trained leaves' values before the first step (tolerance_rule=eager needs
    eager's first step from the same start)."""
    tr.before = [t.detach().to("cpu", copy=True) for _, t in tr.leaves]  # off the device peaks


def first_step_again(tr: Trained, wl, grad_out: list):
    """Eager's forward and backward from the values ``snapshot`` kept (no optimizer step),
    keeping the compiled first step's values and gradients for ``restore_first_step``.
    Returns eager's output; the leaves' ``.grad`` are then eager's."""
    import torch

    tr.after = [(t.detach().clone(), t.grad) for _, t in tr.leaves]
    with torch.no_grad():
        for (_, t), v in zip(tr.leaves, tr.before, strict=True):
            t.copy_(v)
    tr.zero()
    out = wl.fn(*wl.inputs)
    loss(grad_leaves(out), grad_out).backward()
    return correctness.detach(out)


def restore_first_step(tr: Trained) -> None:
    import torch

    with torch.no_grad():
        for (_, t), (v, g) in zip(tr.leaves, tr.after, strict=True):
            t.copy_(v)
            t.grad = g
    tr.after = []


class Reference:
    """Float64 copies of the inputs and parameters, taken before the first call changes them,
    and kept in host memory until ``run`` (so the first call's peak is the workload's own, not
    the study's: GPT-2's float64 parameters alone are 1 GB). ``run`` puts each back on the
    device it came from."""

    def __init__(self, wl):
        import torch

        ins = wl.inputs
        if wl.ref_index is not None:  # the full float64 reference would not fit: a slice
            ins = tuple(t[wl.ref_index] if t.dim() == 4 else t for t in ins)
        self.index = wl.ref_index
        self.inputs = tuple(
            (t.detach().to("cpu", torch.float64), t.requires_grad, t.device)
            if isinstance(t, torch.Tensor) and t.is_floating_point()
            else (t, None, None)
            for t in ins
        )
        ref = reference_of(wl, device="cpu")  # a module's float64 copy, in host memory
        self.device = None  # where ``run`` puts that copy back: the module's device
        if ref is not wl.reference and wl.module is not None:
            self.device = next((p.device for p in wl.module.parameters()), None)
        if hasattr(ref, "named_parameters"):
            ref = ref.double()
            for p in ref.parameters():
                p.grad = None
        self.fn = ref

    def _on_device(self) -> tuple:
        """The float64 inputs back on their devices, as leaves that keep their gradients."""
        return tuple(
            t if grad is None else t.to(dev).requires_grad_(grad) for t, grad, dev in self.inputs
        )

    def run(self, grad_out=None) -> tuple[object, dict]:
        """(output, {leaf name: float64 gradient}); gradients only with ``grad_out``."""
        import torch

        if self.device is not None:
            self.fn = self.fn.to(self.device)
        ins = self._on_device()
        if grad_out is None:
            with torch.no_grad():
                return self.fn(*ins), {}
        out = self.fn(*ins)
        grads = list(grad_out) if isinstance(grad_out, list | tuple) else [grad_out]
        if self.index is not None:
            grads = [g[self.index] for g in grads]
        loss(grad_leaves(out), [g.double() for g in grads]).backward()
        grads = {
            f"input:{i}": t.grad for i, t in enumerate(ins) if getattr(t, "grad", None) is not None
        }
        if hasattr(self.fn, "named_parameters"):
            grads |= {
                f"param:{n}": p.grad for n, p in self.fn.named_parameters() if p.grad is not None
            }
        return correctness.detach(out), grads


def check_grads(tr: Trained, ref_grads: dict, index, dtype: str, tolerance) -> dict:
    """Every leaf's gradient against the float64 one; the worst, and the first that fails.

    A gradient is scaled by its group's largest float64 value (``group``: the parameters of
    one module together, an input alone), and never by less than the tolerance times the
    largest of all (study.cell.correctness). A leaf the forward never reaches (an unused
    ``nn.Linear``) has no gradient in float64 either: None on both sides is equal, and named in
    ``unused``."""
    tol = correctness.tolerance(dtype, tolerance)
    size = {n: _largest(g) for n, g in ref_grads.items()}
    groups: dict[str, float] = {}
    for n, v in size.items():
        groups[group(n)] = max(groups.get(group(n), 0.0), v)
    floor = tol * max(size.values(), default=0.0)
    worst, worst_name, bad, unused = 0.0, None, None, []
    for name, t in tr.leaves:
        want = ref_grads.get(name)
        if t.grad is None and want is None:
            unused.append(name)
            continue
        if t.grad is None or want is None:
            bad = (
                bad
                or f"gradient of {name} is missing ({'ours' if t.grad is None else 'reference'})"
            )
            continue
        got = t.grad[index] if index is not None and t.grad.dim() == 4 else t.grad
        scale = max(groups.get(group(name), 0.0), floor)
        res = correctness.compare(got, want, dtype, tolerance, scale=scale)
        err = res["max_rel_err"]
        if err is not None and err >= worst:
            worst, worst_name = err, name
        if not res["ok"]:
            bad = bad or f"gradient of {name}: {res['reason']}"
    return {
        "grad_max_rel_err": worst,
        "grad_worst": worst_name,
        "ok": bad is None,
        "reason": bad or "",
        "unused": unused,
    }


def group(name: str) -> str:
    """A leaf's parameter group: ``param:k.bias`` -> ``param:k`` (its module's), a top-level
    parameter ``param:``, an input its own."""
    return "param:" + name[6:].rpartition(".")[0] if name.startswith("param:") else name


def _largest(t) -> float:
    """max |t| over its finite values (a NaN is compare's to report, not a scale)."""
    import torch

    finite = t.detach()[torch.isfinite(t.detach())]
    return float(finite.abs().max()) if finite.numel() else 0.0


def saved_for_backward(call, leaves) -> tuple[int, int]:
    """(tensors saved for backward, bytes of those that are activations) in one forward: every
    tensor autograd's pack hook sees, once per storage; inputs and parameters are saved by
    reference, so their bytes do not count. Works for eager and for AOTAutograd's graphs."""
    import torch

    own = {t.untyped_storage().data_ptr() for _, t in leaves}
    seen: dict[tuple, int] = {}
    storages: dict[int, int] = {}

    def pack(t):
        ptr = t.untyped_storage().data_ptr()
        seen[(ptr, t.storage_offset(), tuple(t.shape), t.dtype)] = 1
        if ptr not in own:
            storages[ptr] = t.untyped_storage().nbytes()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        out = call()
    del out
    return len(seen), sum(storages.values())


def flops_factor(kind: str) -> float:
    """FLOPs of the pass per forward FLOP, for an analytic (forward) count."""
    return 1.0 if kind == "fwd" else 1.0 + BWD_FACTOR
