"""The experiments a results dir holds, by the name its rows carry in ``source``: one table,
name → the experiment and pass it ran and the role it plays, and the few accessors the figures
and the Findings pick their sources with. Every other module reads these names from here.

A source is one sweep of a results dir: ``analysis.load`` writes the name of the sweep's dir
into each row's ``source`` when it reads several sweeps, and the reference sweeps were named
after their experiment and pass (``+experiment=part3 pass=fwd_bwd`` ran into ``part3_bwd``).
``DIRS`` names what a results dir keeps beside its rows. Pure Python: no pandas, no torch.
"""

from __future__ import annotations

from typing import NamedTuple


class Source(NamedTuple):
    name: str  # the `source` column's value
    experiment: str  # conf/experiment/<experiment>.yaml ("" for v1's, which predate them)
    pass_: str  # what one timed call runs: fwd, fwd_bwd, train_step
    role: str  # the group the figures and Findings select by (ROLES)
    what: str


# What each role means, in the order of the table below.
ROLES = {
    "blog": "the blog's three parts at its shapes, forward and in a training pass",
    "block": "the pre-norm transformer block, the ladder's last rung",
    "targets": "compile targets: torch.compile taken apart and the deployment paths",
    "seq_len": "attention over sequence length, until the naive variants run out of memory",
    "masks": "FlexAttention against the fused SDPA backends, mask by mask",
    "dynamic": "dynamic shapes: one compiled function over several sequence lengths",
    "models": "real models (GPT-2, BERT, ViT, ResNet-50), forward and training step",
    "v1": "v1's sweeps at the blog's shapes (kept in v1/, beside v1's part1-3 and scaling)",
    "oom": "v1's naive attention out to the length that runs out of memory",
}

# One row per source. Order matters: forward sweeps before their training-pass twins, and the
# twins in the order the Findings list them (attention's backward first).
TABLE = (
    Source("part1", "part1", "fwd", "blog", "blog part 1: x @ w + b at N=64 and N=4096"),
    Source("part2", "part2", "fwd", "blog", "blog part 2: nn.Linear and the GeGLU MLP"),
    Source("part3", "part3", "fwd", "blog", "blog part 3: attention, every variant, causal"),
    Source("block", "block", "fwd", "block", "the transformer block's forward"),
    Source("targets", "targets", "fwd", "targets", "every compile target, forward"),
    Source("part3_bwd", "part3", "fwd_bwd", "blog", "part 3's attention, forward and backward"),
    Source("part2_train", "part2", "train_step", "blog", "part 2's layers, a whole training step"),
    Source("block_bwd", "block", "fwd_bwd", "block", "the transformer block, forward and backward"),
    Source("targets_bwd", "targets", "fwd_bwd", "targets", "the compile targets, fwd and backward"),
    Source("scaling", "scaling", "fwd", "seq_len", "attention at seq_len 512-32768"),
    Source("flex", "flex", "fwd", "masks", "4 masks over seq_len 1024-16384, compiled"),
    Source(
        "dynamic", "dynamic", "fwd", "dynamic", "compile.dynamic false, true, mark (shapes.csv)"
    ),
    Source("models", "models", "fwd, train_step", "models", "each model's forward and step"),
    Source("core", "", "fwd", "v1", "v1: every family at the blog's shapes, eager and default"),
    Source("attention_modes", "", "fwd", "v1", "v1: attention, eager, default, reduce-overhead"),
    Source("autotune", "", "fwd", "v1", "v1: max-autotune-no-cudagraphs against default"),
    Source("ncu", "", "fwd", "v1", "v1: the cells Nsight Compute profiled (ncu.csv)"),
    Source("oom", "", "fwd", "oom", "v1: naive attention, eager, up to seq_len 131072"),
)
BY_NAME = {s.name: s for s in TABLE}

# What a results dir keeps beside its sources' rows, by folder name.
DIRS = {
    "v1": "v1's CSVs (runs, kernels, revealed, ncu, autotune)",
    "v2": "v2's CSVs (runs, kernels, revealed, autotune, shapes)",
    "startup": "start-up and guards: the compile's stages, guard checks, regional compile",
    "host_machines": "the host-cost layer: one folder of runs.csv per machine",
}
V1, V2, STARTUP, HOST_MACHINES = DIRS


def names(*roles: str, pass_: str | None = None) -> tuple[str, ...]:
    """The sources of ``roles`` (every role when none), in table order; with ``pass_``, only
    those whose timed call is that pass."""
    for r in roles:
        if r not in ROLES:
            raise KeyError(f"no source role {r!r}: one of {', '.join(ROLES)}")
    return tuple(s.name for s in TABLE
                 if (not roles or s.role in roles) and (pass_ is None or s.pass_ == pass_))  # fmt: skip


def one(role: str, pass_: str | None = None) -> str:
    """The one source of ``role`` (and ``pass_``)."""
    (name,) = names(role, pass_=pass_)
    return name


def training(*roles: str) -> tuple[str, ...]:
    """Each forward sweep of ``roles`` that has a training-pass twin, followed by its twin: the
    twins in table order ('part3', 'part3_bwd', 'part2', 'part2_train', ...)."""
    out: list[str] = []
    for t in TABLE:
        if t.role in roles and t.pass_ in ("fwd_bwd", "train_step"):
            fwd = [s.name for s in TABLE if s.experiment == t.experiment and s.pass_ == "fwd"]
            out += [*fwd, t.name]
    return tuple(out)


def blog_forward() -> tuple[str, ...]:
    """The blog's forward cells, best first: this study's parts 1-3, then v1's sweeps."""
    return names("blog", "v1", pass_="fwd")


def quoted(sources, last: str = "or") -> str:
    """'`a`, `b` or `c`': source names as a sentence writes them."""
    q = [f"`{s}`" for s in sources]
    return q[0] if len(q) == 1 else f"{', '.join(q[:-1])} {last} {q[-1]}"
