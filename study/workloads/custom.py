"""Your own workload, named in one YAML or on one command line: no Python in ``study/``.

    python -m study.run -m variant=custom variant.target=examples.norm_mlp.NormMLP \\
        shape.batch=2 shape.seq_len=32 shape.dim=64 shape.hidden=256 compile=off,default

- ``variant.target``: a factory's dotted path, called once through Hydra's ``instantiate``
  with ``variant.kwargs`` (so ``_partial_`` and nested ``_target_`` work). Its parameters named
  like a shape key (``batch``, ``seq_len``, ``dim``, ``hidden``, ``heads``, ...; see
  study.rows.schema.SHAPE_KEYS) that ``kwargs`` leaves out get the cell's shape. It returns an
  ``nn.Module`` (seeded, then moved to the cell's device and dtype) or any callable.
- ``variant.inputs``: ``fn(<shape keys>, *, dtype, device, gen)`` returning a tensor or a tuple
  of tensors, built once outside every timed region; default: ``inputs`` beside the target.
- ``variant.reference``: ``ref(*inputs)`` on float64 inputs; default: a float64 copy of the
  module, or the same callable on float64 inputs.
- ``variant.flops``: ``fn(<shape keys>) -> FLOPs per call``, used only where flop_counter
  cannot count the call (study.observe.flops).

``check(cfg)`` runs at ``python -m study.run`` start, before any cell: every path imports, and
every shape key the factories ask for has a value; one ConfigError says all that is wrong.
"""

# Long: a workload of your own is checked at the sweep's start (import, signature, shape keys,
# inputs), each check with its fix; the checks are short and many.

from __future__ import annotations

import importlib
import inspect
import types

from study.errors import ConfigError
from study.rows.schema import SHAPE_KEYS
from study.workloads.registry import Entry, Workload, get, names

INPUT_EXTRAS = ("dtype", "device", "gen")  # what an inputs factory may ask for beside shapes


class BadWorkload(ValueError):
    """What the user's factory built cannot be studied; the message says what and how to fix."""


def _submodule(pkg, name: str):
    """``pkg.name`` as a module, if it is one: the attribute exists only once something imported
    it, so without this the answer depended on what ran before."""
    try:
        return importlib.import_module(f"{pkg.__name__}.{name}")
    except ImportError:
        return None


def locate(path: str, key: str):
    """The object at dotted ``path`` (``pkg.module.attr``), or a ConfigError naming the module
    that did not import and its error."""
    parts = path.split(".")
    if len(parts) < 2 or not all(p.isidentifier() for p in parts):
        raise ConfigError(f"{key}={path!r} is not a dotted path: write it as pkg.module.name.")
    not_found = {}  # prefixes that are no module, with the error that says so
    for i in range(len(parts) - 1, 0, -1):  # the longest prefix that is a module
        mod_name = ".".join(parts[:i])
        try:
            obj = importlib.import_module(mod_name)
        except ModuleNotFoundError as e:
            if e.name and (mod_name == e.name or mod_name.startswith(e.name + ".")):
                not_found[mod_name] = e
                continue  # no such module: maybe pkg.module.Class.attr, try a shorter prefix
            raise ConfigError(
                f"{key}={path!r}: importing module {mod_name!r} failed: "
                f"{type(e).__name__}: {e}. Install what it imports."
            ) from None
        except Exception as e:  # noqa: BLE001 - any error while importing the user's module
            raise ConfigError(
                f"{key}={path!r}: importing module {mod_name!r} failed: {type(e).__name__}: {e}"
            ) from None
        except SystemExit as e:  # a script's sys.exit() at import would end the sweep
            raise ConfigError(
                f"{key}={path!r}: importing module {mod_name!r} called sys.exit({e.code!r}): a "
                "workload's module must not exit at import; move that code under "
                "`if __name__ == '__main__':`."
            ) from None
        for j, attr in enumerate(parts[i:]):
            if not hasattr(obj, attr) and isinstance(obj, types.ModuleType):
                sub = _submodule(obj, attr)  # pkg.module named whole: a module either way
                if sub is not None:
                    obj = sub
                    continue
            if not hasattr(obj, attr):
                sub = ".".join(parts[: i + 1])
                if j == 0 and sub in not_found:
                    raise _not_importable(key, path, sub, not_found[sub])
                raise ConfigError(
                    f"{key}={path!r}: {'.'.join(parts[: i + j])!r} imports but has no {attr!r}"
                    f" (it has: {', '.join(n for n in dir(obj) if not n.startswith('_'))[:300]})."
                )
            obj = getattr(obj, attr)
        return obj
    raise _not_importable(key, path, parts[0], not_found.get(parts[0]))


def _not_importable(key: str, path: str, module: str, e) -> ConfigError:
    return ConfigError(
        f"{key}={path!r}: cannot import module {module!r} "
        f"(ModuleNotFoundError: {e or f'No module named {module!r}'}). Check its spelling, and run "
        "from the directory that holds it or put that directory on PYTHONPATH."
    )


def _params(fn, key: str) -> list[inspect.Parameter]:
    try:
        return list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        raise ConfigError(
            f"{key}: cannot read the parameters of {fn!r}; wrap it in a Python function."
        ) from None


def _named(params) -> list[inspect.Parameter]:
    return [
        p for p in params if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD) and p.name != "self"
    ]


def _shape_params(fn, key: str, given=()) -> tuple[str, ...]:
    """Parameters of ``fn`` named like a shape key and not given otherwise: the shape keys it
    asks for. Any other parameter must have a default."""
    keys, stray = [], []
    for p in _named(_params(fn, key)):
        if p.name in given:
            continue
        if p.name in SHAPE_KEYS:
            keys.append(p.name)
        elif p.default is p.empty:
            stray.append(p.name)
    if stray:
        raise ConfigError(
            f"{key}: parameter(s) {', '.join(stray)} are not shape keys "
            f"({', '.join(SHAPE_KEYS)}) and have no default: give them a default"
            + (" or a value in variant.kwargs." if key == "variant.target" else ".")
        )
    return tuple(keys)


SIMPLE = {"int": int, "float": float, "bool": bool, "str": str}


def _simple_types(annotation) -> tuple[type, ...] | None:
    """The plain types an annotation allows (``int``, ``float | None``, ``"int"``), or None
    when it allows more than plain values (or says nothing): then any value passes."""
    import typing

    if isinstance(annotation, str):  # from __future__ import annotations
        parts = [a.strip() for a in annotation.replace("Optional[", "").rstrip("]").split("|")]
        if all(a in SIMPLE or a == "None" for a in parts):
            return tuple(SIMPLE[a] if a != "None" else type(None) for a in parts)
        return None
    if annotation in SIMPLE.values():
        return (annotation,)
    args = typing.get_args(annotation)
    if args and all(a in SIMPLE.values() or a is type(None) for a in args):
        return args
    return None


def _accepts(value, types: tuple[type, ...]) -> bool:
    if float in types and isinstance(value, int) and not isinstance(value, bool):
        return True  # 2 for a float
    if isinstance(value, bool):
        return bool in types
    return isinstance(value, types)


def check_kwargs(factory, kwargs: dict) -> None:
    """``variant.kwargs`` against the factory's signature: names it takes, and values of the
    plain type its annotations say (``dim: int`` refuses ``dim=abc``), before any cell runs."""
    params = _params(factory, "variant.target")
    by_name = {p.name: p for p in _named(params)}
    takes_any = any(p.kind == p.VAR_KEYWORD for p in params)
    unknown = [k for k in kwargs if k not in by_name and not k.startswith("_")]
    if unknown and not takes_any:
        raise ConfigError(
            f"variant.kwargs: {', '.join(unknown)} is no parameter of the factory "
            f"{getattr(factory, '__qualname__', factory)}; it takes: {', '.join(by_name)}."
        )
    for k, v in kwargs.items():
        p = by_name.get(k)
        types = _simple_types(p.annotation) if p is not None else None
        if types and not _accepts(v, types):
            want = " or ".join("None" if t is type(None) else t.__name__ for t in types)
            raise ConfigError(
                f"variant.kwargs.{k}={v!r} is a {type(v).__name__}, but the factory's {k} takes "
                f"{want}."
            )


def _parts(variant) -> dict:
    """The located pieces of a custom variant config, and the shape keys they ask for."""
    target = variant.target
    factory = locate(target, "variant.target")
    if not callable(factory):
        raise ConfigError(
            f"variant.target={target!r} is a {type(factory).__name__}, not a factory: name a "
            "class or a function that returns an nn.Module or a callable."
        )
    kwargs = dict(variant.get("kwargs") or {})
    if variant.get("inputs"):
        inputs_fn = locate(variant.inputs, "variant.inputs")
    else:  # an ``inputs`` function beside the factory
        home = importlib.import_module(getattr(factory, "__module__", None) or "builtins")
        inputs_fn = getattr(home, "inputs", None)
        if not callable(inputs_fn):
            raise ConfigError(
                f"variant.inputs is not set and {home.__name__!r} (where {target} lives) has no "
                "function 'inputs': set variant.inputs=pkg.module.fn, with fn(<shape keys>, *, "
                "dtype, device, gen) returning the input tensors."
            )
    ref = locate(variant.reference, "variant.reference") if variant.get("reference") else None
    flops_fn = locate(variant.flops, "variant.flops") if variant.get("flops") else None
    check_kwargs(factory, kwargs)
    keys = list(_shape_params(factory, "variant.target", given=kwargs))
    keys += _shape_params(inputs_fn, "variant.inputs", given=INPUT_EXTRAS)
    if flops_fn is not None:
        keys += _shape_params(flops_fn, "variant.flops")
    return {
        "factory": factory,
        "kwargs": kwargs,
        "inputs": inputs_fn,
        "reference": ref,
        "flops": flops_fn,
        "shape_keys": tuple(k for k in SHAPE_KEYS if k in keys),
    }


def _call(fn, shape: dict, **extra):
    """fn with the shape keys (and extras) its signature names."""
    params = _params(fn, getattr(fn, "__qualname__", str(fn)))
    takes_all = any(p.kind == p.VAR_KEYWORD for p in params)
    wanted = {p.name for p in _named(params)}
    kw = {k: v for k, v in {**shape, **extra}.items() if takes_all or k in wanted}
    return fn(**kw)


def entry(variant) -> Entry:
    """A registry entry for a custom variant config (``variant.target`` set)."""
    parts = _parts(variant)
    target = variant.target

    def build(shape, dtype, device, gen, **_):
        import torch
        from hydra.utils import instantiate
        from torch import nn

        asked = _shape_params(parts["factory"], "variant.target", parts["kwargs"])
        made = {k: shape[k] for k in asked}
        with torch.random.fork_rng(devices=[]):  # parameters seeded like the built-in modules
            torch.manual_seed(gen.initial_seed())
            obj = instantiate({"_target_": target, **parts["kwargs"], **made})
        module = None
        if isinstance(obj, nn.Module):
            module = obj.to(device=device, dtype=dtype).eval().requires_grad_(False)
        elif not callable(obj):
            raise BadWorkload(
                f"variant.target={target!r} returned {type(obj).__name__} ({str(obj)[:80]}), "
                "which is not callable: it must return an nn.Module or a callable."
            )
        ins = _call(parts["inputs"], shape, dtype=dtype, device=device, gen=gen)
        ins = (ins,) if isinstance(ins, torch.Tensor) else ins
        keys = None
        if isinstance(ins, dict):  # keyword arguments (input_ids=..., attention_mask=...)
            keys, ins = list(ins), tuple(ins.values())
        if not isinstance(ins, tuple | list) or not all(isinstance(t, torch.Tensor) for t in ins):
            got = type(ins).__name__ if not isinstance(ins, tuple | list) else ", ".join(
                type(t).__name__ for t in ins)  # fmt: skip
            raise BadWorkload(
                f"variant.inputs returned {got}: it must return a tensor, a tuple of tensors "
                "(positional arguments) or a dict of tensors (keyword arguments)."
            )
        fn = obj
        if keys is not None:  # one positional call everywhere; the module still gets keywords
            fn = Keywords(obj, keys) if module is not None else _keywords(obj, keys)
            module = fn if module is not None else None
        ref = parts["reference"]
        if ref is not None and keys is not None:
            ref = _keywords(ref, keys)
        ref = ref or (None if module is not None else fn)
        return Workload(fn=fn, inputs=tuple(ins), reference=ref, module=module)

    flops_fn = parts["flops"]
    return Entry(
        name=variant.name,
        family="custom",
        build=build,
        shape_keys=parts["shape_keys"],
        flops=(lambda shape: _call(flops_fn, shape)) if flops_fn is not None else None,
        target=target,
    )


def _inputs_type(variant) -> None:
    """At start: what the inputs function returns, called once at size 2 for every shape key
    on the CPU, must be a tensor, a tuple or list, or a dict. A call that fails at that size
    says nothing (the cell tries it at its own); a wrong type is a ConfigError naming it."""
    import torch

    fn = _parts(variant)["inputs"]
    shape = {k: 2 for k in SHAPE_KEYS}
    try:
        got = _call(fn, shape, dtype=torch.float32, device="cpu", gen=torch.Generator())
    except Exception:  # noqa: BLE001 - sizes of 2 need not suit it; the cell calls it for real
        return
    if not isinstance(got, torch.Tensor | tuple | list | dict):
        raise ConfigError(
            f"variant.inputs ({getattr(fn, '__qualname__', fn)}) returned a "
            f"{type(got).__name__}: return a tensor, a tuple of tensors (positional arguments) "
            "or a dict of tensors (keyword arguments)."
        )


def _keywords(fn, keys: list[str]):
    """``fn`` called with its inputs by name: the harness passes them by position."""

    def call(*values):
        return fn(**dict(zip(keys, values, strict=True)))

    return call


def _keywords_module():
    from torch import nn

    class KeywordCall(nn.Module):
        """A module whose inputs are keyword arguments, called by position: its parameters
        and buffers are the inner module's (``inner.*``), so ``.double()``, the float64 copy,
        gradients and export see them."""

        def __init__(self, inner, keys):
            super().__init__()
            self.inner, self.keys = inner, list(keys)

        def forward(self, *values):
            return self.inner(**dict(zip(self.keys, values, strict=True)))

    return KeywordCall


def Keywords(inner, keys):  # noqa: N802 - a class made on demand (no torch at import)
    return _keywords_module()(inner, keys)


def missing_shape_keys(keys, cfg, device: str) -> list[str]:
    """The shape keys without a value for ``device``: not in ``shape.*`` nor in the family's
    shapes (the same lookup as study.cell.build.resolve_shape)."""
    shapes = cfg.family.shapes
    base = shapes.get(device) or shapes.get("cpu")
    return [k for k in keys if cfg.shape.get(k) is None and (base is None or base.get(k) is None)]


def check(cfg) -> None:
    """At start: a custom variant imports, is not named like a built-in, and every shape key
    its factories ask for has a value. Raises ConfigError listing what is wrong."""
    variant = cfg.variant
    if not variant.get("target"):
        raise ConfigError(
            f"variant={variant.name} needs a factory: variant.target=pkg.module.make "
            "(a class or function returning an nn.Module or a callable); see "
            "docs/workloads.md, 'Add a workload'."
        )
    if variant.name in names():
        raise ConfigError(
            f"variant.name={variant.name!r} is a registered variant ({get(variant.name).family}); "
            "a custom variant needs its own name: variant.name=<label>."
        )
    e = entry(variant)
    _inputs_type(variant)
    device = cfg.device.value if hasattr(cfg.device, "value") else str(cfg.device)
    if device == "auto":
        import torch

        device = "cuda" if torch.cuda.is_available() else "cpu"
    missing = missing_shape_keys(e.shape_keys, cfg, device)
    if missing:
        raise ConfigError(
            f"variant {variant.name!r} asks for shape key(s) {', '.join(missing)} (parameters of "
            f"{variant.target} and its inputs/flops functions) that the config does not set on "
            f"{device}: add {' '.join(f'shape.{k}=<int>' for k in missing)}, or set them under "
            f"family.shapes.{device} in the variant's YAML."
        )
