"""Compile modes and the compile-cache policy.

Modes: ``off`` (eager), ``default``, ``reduce-overhead``, ``max-autotune``,
``max-autotune-no-cudagraphs``; plus ``fullgraph``, ``dynamic`` and free Inductor config
patches (``+compile.inductor.coordinate_descent_tuning=true``).

Isolation between configurations: every cell runs in its own process, so Dynamo state,
Inductor config and the CUDA caching allocator start fresh. On disk:

- ``cache=cold`` (default): private Inductor and Triton cache dirs inside the cell's run dir,
  removed when the cell ends. Nothing compiled for one cell can be seen by another.
- ``cache=warm``: one shared cache under ``<out_root>/.compile_cache``. Every artefact is
  still keyed by the cell's configuration through ``torch.compiler.config.cache_key_tag``
  (env TORCH_COMPILE_CACHE_KEY_TAG), because some torch versions leave the pinned SDPA
  backend out of the cache key (pytorch#185449): without the tag a graph compiled under
  one backend would be reused under another.

In the cell's process (``configure``): the cache key tag, and ``compile.threads`` for
Inductor's compile_threads. The default, 1, keeps Inductor from starting its async-compile
process pool (min(32, cores) workers, each importing torch) at the first compile: on the
H200 host that pool was why a compiled cell took ~21 s of wall time instead of ~11 s, and
its workers shared the host with the timed phases. max-autotune still benchmarks its
choices on threads.

Nothing recompiles while timing (``no_recompile``): the steady state runs under
``torch.compiler.set_stance("fail_on_recompile")``, and Dynamo's compile count is read
before and after; a recompile there makes the row ``invalid``.
"""

from __future__ import annotations

import hashlib
import json
import os
from contextlib import contextmanager
from pathlib import Path

from study.config import compile_targets

CUDAGRAPH_MODES = {n for n, t in compile_targets.TARGETS.items() if t.cudagraphs}
# What identifies a compiled artefact: everything that can change the code Inductor emits.
IDENTITY = ("variant", "family", "compile", "shape", "dtype", "device", "seed")


def uses_cudagraphs(mode: str) -> bool:
    return mode in CUDAGRAPH_MODES


def make(fn, mode: str, fullgraph: bool, dynamic, package: Path | None = None):
    """The callable to time for target ``mode`` (study.config.compile_targets): ``fn`` itself for ``off``,
    an AOTInductor package for ``aot_inductor`` (built at the first call, into ``package``),
    else ``torch.compile(fn, backend=..., mode=...)``."""
    t = compile_targets.get(mode)
    if mode == "off":
        return fn
    if mode == "aot_inductor":
        return AOTInductor(fn, package or Path("generated") / "aot_inductor.pt2")
    import torch

    if dynamic == "mark":  # the marked dims are dynamic; the rest as Dynamo decides
        dynamic = None
    return torch.compile(fn, backend=t.backend, mode=t.mode, fullgraph=fullgraph, dynamic=dynamic)


class AOTInductor:
    """``torch.export`` -> ``aoti_compile_and_package`` -> ``aoti_load_package``, done at the
    first call with that call's inputs (so ``first_call_s`` holds the whole compile, as for
    torch.compile), then the loaded package is called. A function is exported inside a module
    that calls it; a module's parameters become the package's constants."""

    def __init__(self, fn, package: Path):
        self.fn, self.package, self.loaded = fn, Path(package), None
        self.export_s = self.compile_s = None

    def __call__(self, *args):
        if self.loaded is None:
            self._build(args)
        return self.loaded(*args)

    def _build(self, args) -> None:
        import time

        import torch

        mod = self.fn if isinstance(self.fn, torch.nn.Module) else _Calls(self.fn)
        t = time.perf_counter()
        ep = torch.export.export(mod, tuple(args))
        self.export_s = time.perf_counter() - t
        self.package.parent.mkdir(parents=True, exist_ok=True)
        path = torch._inductor.aoti_compile_and_package(ep, package_path=str(self.package))
        self.loaded = torch._inductor.aoti_load_package(path)
        self.compile_s = time.perf_counter() - t


def _calls_module():
    import torch

    class Calls(torch.nn.Module):
        def __init__(self, fn):
            super().__init__()
            self.fn = fn

        def forward(self, *args):
            return self.fn(*args)

    return Calls


def _Calls(fn):  # noqa: N802 - a class made on demand, so that importing this needs no torch
    return _calls_module()(fn)


def cache_key_tag(plain_cfg: dict) -> str:
    ident = {k: plain_cfg.get(k) for k in IDENTITY}
    digest = hashlib.sha256(json.dumps(ident, sort_keys=True, default=str).encode()).hexdigest()
    return f"study-{digest[:16]}"


def cache_env(cache: str, run_dir: Path, out_root: Path, plain_cfg: dict) -> dict[str, str]:
    """Environment for the cell's process: where Inductor and Triton may cache."""
    root = (run_dir / ".compile_cache") if cache == "cold" else (out_root / ".compile_cache")
    return {
        "TORCHINDUCTOR_CACHE_DIR": str((root / "inductor").resolve()),
        "TRITON_CACHE_DIR": str((root / "triton").resolve()),
        "TORCH_COMPILE_CACHE_KEY_TAG": cache_key_tag(plain_cfg),
    }


def configure(threads: int) -> None:
    """Compile settings of this (the cell's own) process, before anything compiles."""
    import torch
    import torch._inductor.config as ic

    tag = os.environ.get("TORCH_COMPILE_CACHE_KEY_TAG")
    if tag:  # read by torch at import; a forked cell must set it itself
        torch.compiler.config.cache_key_tag = tag
    ic.compile_threads = threads


def compiles() -> int:
    """Frames Dynamo has converted in this process so far. (Not the compilation metrics:
    CUDA-graph recording at run time adds a record there without compiling anything.)"""
    from torch._dynamo.utils import counters

    return int(counters["frames"].get("total", 0))


class Recompiled(RuntimeError):
    """Dynamo compiled again during a timed phase: the timing includes a compile."""


def skips_guards(stance: str) -> bool:
    """compile.stance=skip_guard_eval_unsafe: the timed block skips Dynamo's guards."""
    return stance == "skip_guard_eval_unsafe"


def stance_supported() -> str | None:
    """Why this torch cannot skip guard evaluation, or None."""
    import inspect

    import torch

    params = inspect.signature(torch.compiler.set_stance).parameters
    if "skip_guard_eval_unsafe" in params:
        return None
    return (
        f"compile.stance=skip_guard_eval_unsafe: torch {torch.__version__} has no "
        "set_stance(skip_guard_eval_unsafe=...)"
    )


@contextmanager
def no_recompile(mode: str, stance: str = "default"):
    """Fail if anything compiles inside the block (compiled modes only); under
    ``skip_guard_eval_unsafe`` (compile.stance) Dynamo evaluates only the guards that tell its
    graphs apart while the block runs."""
    if mode == "off":
        yield
        return
    import torch

    before = compiles()
    skip = {"skip_guard_eval_unsafe": True} if skips_guards(stance) else {}
    try:
        with torch.compiler.set_stance("fail_on_recompile", **skip):
            yield
    except RuntimeError as e:
        if "fail_on_recompile" in str(e):
            raise Recompiled(f"recompiled while timing: {' '.join(str(e).split())[:400]}") from e
        raise
    after = compiles()
    if after != before:
        raise Recompiled(f"recompiled while timing: {after - before} new compile(s)")


def compiled_autograd(fullgraph: bool):
    """The context that sends a backward through compiled autograd, as PyTorch's dynamo
    benchmark harness does for ``--compiled-autograd``: the captured backward graph is compiled
    by Inductor, and counted (``autograd_compiles``; captures are Dynamo's own count)."""
    import torch
    from torch._dynamo import compiled_autograd as ca

    def compiler_fn(gm):
        def inner(gm_, example_inputs_):
            torch._dynamo.utils.counters["compiled_autograd"]["compiles"] += 1
            return torch._inductor.compile(gm_, example_inputs_)

        return torch.compile(gm, backend=inner, fullgraph=fullgraph, dynamic=True)

    return ca._enable(compiler_fn)


def autograd_counts() -> dict:
    from torch._dynamo.utils import counters

    c = counters["compiled_autograd"]
    return {"autograd_captures": c.get("captures", 0), "autograd_compiles": c.get("compiles", 0)}


def mark_dynamic(inputs, size: int) -> int:
    """``torch._dynamo.mark_dynamic`` on every dim of the inputs that has ``size`` elements
    (the dims that carry the swept shape key: a sequence of 1024 in (B, H, 1024, D) and in the
    (1024, 1024) mask). Returns how many dims were marked."""
    import torch

    n = 0
    for t in inputs:
        if isinstance(t, torch.Tensor):
            for d, s in enumerate(t.shape):
                if s == size:
                    torch._dynamo.mark_dynamic(t, d)
                    n += 1
    return n


def fresh_dynamo() -> None:
    """Forget what an earlier cell of this process compiled, and its counts. Every compiled
    cell calls it: an in-process one (tests) may follow another cell, and in
    a forked cell, which starts fresh, it clears nothing."""
    import torch
    from torch._dynamo.utils import clear_compilation_metrics, counters

    torch._dynamo.reset()
    counters.clear()
    clear_compilation_metrics()
