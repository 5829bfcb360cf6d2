"""Compile targets: what ``compile=<name>`` runs, and what it isolates (no torch).

The five Inductor modes are targets, and so are the layers of torch.compile taken apart and
the paths people deploy with. A target's name is the row's ``compile`` column and the config's
``compile.mode``. Each runs in the cell's own process, checked, timed against eager in the same
rounds, profiled and proven like any compiled cell.

Taking torch.compile apart (each adds one layer to the one before; the analysis subtracts them,
``analysis/tables/layers.py``):

- ``dynamo_eager``: Dynamo captures the graph and guards it, then runs it with eager's kernels
  (``backend="eager"``): the cost of the frame evaluation and guards only.
- ``aot_eager``: adds AOTAutograd (functionalisation, its runtime wrapper), still no codegen.
- ``default``: adds Inductor (its kernels and its Python wrapper).
- ``cudagraphs``: AOTAutograd's graph replayed as a CUDA graph, without Inductor's kernels.

The deployment paths:

- ``cpp_wrapper``: Inductor with its wrapper in C++ (``cpp_wrapper=True``), called via Dynamo.
- ``aot_inductor``: ``torch.export``, ``aoti_compile_and_package`` and ``aoti_load_package``: no
  Dynamo and no Python wrapper at call time. Forward passes only (an exported program has no
  backward to train through).
- ``compile.freezing=true`` (any Inductor target, ``pass=fwd``): parameters become constants.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Target:
    name: str
    isolates: str  # one line: what its row measures (docs/overrides.md says it too)
    backend: str | None = "inductor"  # torch.compile's backend; None: not torch.compile
    mode: str | None = None  # Inductor's mode (torch.compile(mode=...))
    inductor: bool = True  # Inductor generates code: compile.inductor and freezing apply
    cudagraphs: bool = False  # the call replays a CUDA graph (on CUDA)
    dynamo: bool = True  # Dynamo evaluates the frame and its guards at every call
    training: bool = True  # can run pass=fwd_bwd and train_step
    patches: dict = field(default_factory=dict)  # Inductor config the target itself sets


TARGETS: dict[str, Target] = {
    t.name: t
    for t in (
        Target("off", "eager: no compile", backend=None, inductor=False, dynamo=False),
        Target("default", "Inductor: Dynamo + AOTAutograd + generated kernels, Python wrapper"),
        Target(
            "reduce-overhead",
            "Inductor + CUDA graphs (cudagraph trees)",
            mode="reduce-overhead",
            cudagraphs=True,
        ),
        Target(
            "max-autotune",
            "Inductor, GEMM/conv choices benchmarked + CUDA graphs",
            mode="max-autotune",
            cudagraphs=True,
        ),
        Target(
            "max-autotune-no-cudagraphs",
            "Inductor, GEMM/conv choices benchmarked, no CUDA graphs",
            mode="max-autotune-no-cudagraphs",
        ),
        Target(
            "dynamo_eager",
            "Dynamo's capture and guards only: the graph runs with eager's kernels",
            backend="eager",
            inductor=False,
        ),
        Target(
            "aot_eager",
            "Dynamo + AOTAutograd's runtime wrapper, eager's kernels: no codegen",
            backend="aot_eager",
            inductor=False,
        ),
        Target(
            "cudagraphs",
            "Dynamo + AOTAutograd, replayed as a CUDA graph: CUDA graphs without Inductor",
            backend="cudagraphs",
            inductor=False,
            cudagraphs=True,
        ),
        Target(
            "cpp_wrapper",
            "Inductor with a C++ wrapper instead of Python (cpp_wrapper=True)",
            patches={"cpp_wrapper": True},
        ),
        Target(
            "aot_inductor",
            "torch.export + AOTInductor package, loaded and called: no Dynamo, no Python wrapper",
            backend=None,
            dynamo=False,
            training=False,
        ),
    )
}
# The ladder of layers the decomposition subtracts, in order (analysis/tables/layers.py).
LAYERS = ("off", "dynamo_eager", "aot_eager", "default")
DEPLOY = ("cpp_wrapper", "aot_inductor")


def get(name: str) -> Target:
    """The target called ``name``; a KeyError names every valid one."""
    try:
        return TARGETS[name]
    except KeyError:
        raise KeyError(
            f"compile={name!r} is not a compile target; allowed: {', '.join(TARGETS)}"
        ) from None


def uses_cudagraphs(name: str) -> bool:
    t = TARGETS.get(name)
    return bool(t and t.cudagraphs)


STANCES = ("default", "skip_guard_eval_unsafe")  # compile.stance: torch.compiler.set_stance
REGIONAL_HOWS = ("auto", "nested", "blocks")  # compile.regional_how (study.cell.regional)


def conflicts(
    name: str, freezing: bool, inductor: dict, kind: str, dynamic, compiled_autograd,
    stance: str = "default", regional: bool = False, regional_how: str = "auto",
):  # fmt: skip
    """What makes no sense for target ``name`` (a start-time error), or None."""
    t = get(name)
    if stance not in STANCES:
        return f"compile.stance={stance!r} is not a stance; allowed: {', '.join(STANCES)}."
    if regional_how not in REGIONAL_HOWS:
        return (
            f"compile.regional_how={regional_how!r} is not a method; allowed: "
            f"{', '.join(REGIONAL_HOWS)} (auto: nested_compile_region where this torch has it)."
        )
    if name == "off":
        return None  # eager ignores every compile setting
    if regional and t.backend is None:
        return (
            f"compile.regional=true with compile={name}: regions are torch.compile's, and that "
            "target exports the whole program without it; pick a torch.compile target "
            "(default, reduce-overhead, ...) or drop compile.regional."
        )
    if stance != "default" and not t.dynamo:
        return (
            f"compile.stance={stance} with compile={name}: the stance acts on Dynamo's guards, "
            "and that target runs no Dynamo; pick one that does (dynamo_eager, default, ...)."
        )
    if freezing and not t.inductor:
        return (
            f"compile.freezing=true needs Inductor, and compile={name} does not run it: "
            "drop compile.freezing, or pick an Inductor target (default, cpp_wrapper, ...)."
        )
    if freezing and kind != "fwd":
        return (
            f"compile.freezing=true with pass={kind}: freezing turns parameters into constants, "
            "which only a forward pass (pass=fwd) allows."
        )
    if inductor and not t.inductor:
        keys = ", ".join(f"compile.inductor.{k}" for k in inductor)
        return (
            f"{keys} with compile={name}: that target runs no Inductor, so the option would "
            "change nothing. Drop it, or pick an Inductor target (default, cpp_wrapper, ...)."
        )
    if name == "aot_inductor" and dynamic not in (False, None):
        return (
            f"compile.dynamic={dynamic} with compile=aot_inductor: torch.export takes dynamic "
            "shapes as Dim specs, which this study does not build; use compile.dynamic=false."
        )
    if compiled_autograd and not t.dynamo:
        return (
            f"compile.compiled_autograd=true with compile={name}: compiled autograd needs "
            "Dynamo, which that target does not run."
        )
    return None


STARTS = ("cold", "warm", "artifacts")  # start= (study.cell.start)


def start_conflict(start: str, mode: str, cache: str, target_inductor: bool) -> str | None:
    """Why ``start`` makes no sense for this cell (a start-time error), or None."""
    if start not in STARTS:
        return f"start={start!r} is not a start; allowed: {', '.join(STARTS)}."
    if start == "cold":
        return None
    if mode == "off":
        return (
            f"start={start} with compile=off: an eager cell compiles nothing, so there is "
            "nothing to start warm; sweep start over compiled modes only (each compiled cell "
            "times its eager twin in the same process)."
        )
    if not target_inductor:
        return (
            f"start={start} with compile={mode}: that target runs no Inductor, whose caches "
            "are what a warm start or cache artifacts reuse; pick an Inductor target "
            "(default, reduce-overhead, max-autotune, ...)."
        )
    if mode == "aot_inductor":
        return (
            "start with compile=aot_inductor: an AOTInductor package is already a compiled "
            "artifact, loaded without torch.compile's caches; use start=cold."
        )
    if cache == "warm":
        return (
            f"start={start} with cache=warm: a shared cache holds what earlier cells compiled, "
            "so neither the primer's start nor the cell's would be what it names; use "
            f"cache=cold (the default) with start={start}."
        )
    return None
