"""Regional compilation (``compile.regional=true``): compile the repeated block, not the model.

A model that stacks one block N times (GPT-2's ``h``, BERT's ``encoder.layer``, timm's
``blocks``, the block ladder's ``layers``) need not be traced and compiled N times. Two ways,
``compile.regional_how``:

- ``nested`` (``torch.compiler.nested_compile_region``): the whole model is compiled, and the
  block's forward is a region Dynamo traces once and stamps out at each layer. Everything is
  compiled; the compile is shorter.
- ``blocks`` (per-block ``torch.compile``): each block is its own ``torch.compile``'d module,
  and what lies between them (embeddings, the final norm, the head) runs eager. The blocks share
  their code, so Dynamo compiles one graph and every block reuses it.
- ``auto``: ``nested`` for ``pass=fwd`` where this torch has ``nested_compile_region``, else
  ``blocks``. Training passes take ``blocks``: on torch 2.13 (CPU) the nested region gave GPT-2's
  parameters wrong gradients (max_rel_err ~1e3 against float64 at 2 and 4 layers, in fp32 as in
  bf16, whether the class's forward was patched or a view's), while per-block gradients matched
  and the block ladder's and BERT's matched either way. Under Inductor only (``aot_eager``
  matches) and only where the region is used twice or more; ``benchmarks/nested_region_grads.py``
  checks a torch. ``regional_how=nested`` still runs it,
  and the check says ``mismatch`` where it is wrong.

The repeated block is the class of the largest ``nn.ModuleList`` or ``nn.Sequential`` whose
entries (two or more, a weight-tied ``ModuleList([b, b, b])`` among them) are all of one class; every such list of that class is compiled by
block. A workload with none (a plain function, a module without a stack) is ``unsupported``:
regional compilation is never silently the whole model.

The cell times eager and compiled in one process, from one module: the eager twin must stay
eager. So nothing here changes the module. The compiled callable is a *view*: shallow copies
of the modules on the path to each list (their ``_modules`` copied; parameters, buffers and
hooks shared, so a training pass trains the same parameters through either), whose list
children are replaced by compiled ones (``blocks``) or by copies of a subclass whose forward is
the nested region (``nested``: eager's blocks keep their plain forward, so its time carries no
wrapper).
"""

from __future__ import annotations

import copy

from study.config import compile_targets
from study.errors import Unsupported

HOWS = ("auto", "nested", "blocks")
METHODS = {"nested": "nested_compile_region", "blocks": "per-block torch.compile"}


def find(module) -> tuple[type, list[str], int] | None:
    """(the block's class, the dotted paths of every list of it, blocks in all), or None: the
    class of the largest ``ModuleList``/``Sequential`` of 2+ children all of one class."""
    from torch import nn

    lists = []  # (path, class, length)
    for path, m in module.named_modules():
        if isinstance(m, nn.ModuleList | nn.Sequential) and len(m) >= 2:
            kinds = {type(c) for c in m}  # each entry: children() yields a tied block once
            if len(kinds) == 1:
                lists.append((path, kinds.pop(), len(m)))
    if not lists:
        return None
    cls = max(lists, key=lambda x: x[2])[1]
    mine = [(p, n) for p, c, n in lists if c is cls]
    outer = [p for p, _ in mine
             if not any(p != q and (q == "" or p.startswith(q + ".")) for q, _ in mine)]  # fmt: skip
    return cls, outer, sum(n for p, n in mine if p in outer)


def method(how: str, kind: str = "fwd") -> str:
    """The method ``how`` resolves to on this torch for pass ``kind`` (``auto``: nested for a
    forward where this torch has it, else blocks; the module's docstring says why)."""
    if how != "auto":
        return how
    import torch

    nested = hasattr(torch.compiler, "nested_compile_region") and kind == "fwd"
    return "nested" if nested else "blocks"


def make(fn, mode: str, fullgraph: bool, dynamic, how: str, name: str, kind: str = "fwd"):
    """(the callable to time, its row columns, a note) for ``fn`` compiled by region with the
    target ``mode`` (study.config.compile_targets) for pass ``kind``, or ``Unsupported`` saying why it
    cannot be."""
    import torch
    from torch import nn

    found = find(fn) if isinstance(fn, nn.Module) else None
    if found is None:
        what = "a function" if not isinstance(fn, nn.Module) else type(fn).__name__
        raise Unsupported(
            f"compile.regional=true: {name} ({what}) has no repeated block (an nn.ModuleList or "
            "nn.Sequential of 2 or more modules of one class) to compile by region; compile the "
            "whole of it with compile.regional=false"
        )
    cls, paths, blocks = found
    got = method(how, kind)
    if got == "nested" and not hasattr(torch.compiler, "nested_compile_region"):
        raise Unsupported(
            f"compile.regional_how=nested: torch {torch.__version__} has no "
            "torch.compiler.nested_compile_region (use regional_how=blocks or auto)"
        )
    if dynamic == "mark":  # the marked dims are dynamic; the rest as Dynamo decides
        dynamic = None
    t = compile_targets.get(mode)
    opts = dict(backend=t.backend, mode=t.mode, fullgraph=fullgraph, dynamic=dynamic)
    if got == "nested":
        region = type(cls.__name__, (cls,), {
            "forward": torch.compiler.nested_compile_region(cls.forward),
            "__module__": cls.__module__,
        })  # fmt: skip

        def child(c):
            c = copy.copy(c)
            c.__class__ = region
            return c

        view = torch.compile(_view(fn, paths, child), **opts)
    else:
        view = _view(fn, paths, lambda c: torch.compile(c, **opts))
    where = ", ".join(p or "(the module itself)" for p in paths)
    row = {
        "regional_method": METHODS[got],
        "regional_blocks": blocks,
        "regional_block": f"{cls.__name__} in {where}",
    }
    if got == "nested":
        note = (f"compile.regional: the whole module compiled, each of {blocks} {cls.__name__} "
                "blocks a nested_compile_region (traced once, reused)")  # fmt: skip
    else:
        note = (f"compile.regional: each of {blocks} {cls.__name__} blocks torch.compile'd on "
                "its own (one shared graph); the rest of the module runs eager")  # fmt: skip
    return view, row, note


def _view(module, paths: list[str], child):
    """A shallow copy of ``module`` sharing its parameters, in which every list at ``paths``
    holds ``child(block)`` in place of each block; modules off those paths are shared."""
    top = _shallow(module)
    for path in paths:
        node = top
        for part in path.split(".") if path else []:
            node._modules[part] = _shallow(node._modules[part])
            node = node._modules[part]
        node._modules = {k: child(c) for k, c in node._modules.items()}
    return top


def _shallow(m):
    """A copy of ``m`` whose own ``_modules`` can be replaced; its parameters, buffers and
    hooks are ``m``'s own objects."""
    c = copy.copy(m)
    c._modules = dict(m._modules)
    return c
