"""Typed config schema for one cell, registered in Hydra's ConfigStore.

Hydra checks types and enum values when it composes (a bad dtype or a string where an int
belongs fails at start, naming the full key). What types cannot say (sizes > 0, a compile
mode spelled with a dash) is checked by ``validate``, which raises ``ConfigError`` with the
key, the bad value and what is allowed. No torch import at module level: ``study.run``
validates before any cell process starts. A custom variant (``variant.target``) is imported by
``validate`` (study.workloads.custom.check), so a path that does not import, or a shape key its
factories ask for and the config lacks, stops the run there.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from omegaconf import MISSING, DictConfig, OmegaConf

from study.rows import expect, targets
from study.rows.config_error import ConfigError
from study.rows.schema import SHAPE_KEYS

# Every compile target (study.rows.targets): the five Inductor modes, the layers of torch.compile
# taken apart and the deployment paths.
COMPILE_MODES = tuple(targets.TARGETS)


class Device(Enum):
    auto = "auto"
    cuda = "cuda"
    cpu = "cpu"


class Dtype(Enum):
    bf16 = "bf16"
    fp16 = "fp16"
    fp32 = "fp32"


class Cache(Enum):
    cold = "cold"  # a private Inductor/Triton cache dir for the cell (default)
    warm = "warm"  # one shared cache dir; artefacts are still keyed by the cell's config


class Isolation(Enum):
    subprocess = "subprocess"  # each cell in its own process (default; the only safe choice)
    inline = "inline"  # in the Hydra job's process: for debugging only


class Fault(Enum):
    none = "none"
    crash = "crash"  # the cell's process aborts (like a CUDA error that poisons the context)
    segv = "segv"  # the cell's process dies of a segmentation fault (a broken extension)
    hang = "hang"  # the cell's process never returns (exercises timeout_s)


class Mask(Enum):  # attention: study.workloads.masks
    causal = "causal"
    sliding_window = "sliding_window"
    document = "document"
    prefix_lm = "prefix_lm"
    none = "none"


class ScoreMod(Enum):
    none = "none"
    alibi = "alibi"
    softcap = "softcap"


class DeviceTime(Enum):
    graph = "graph"  # events around a CUDA-graph replay of many calls: no launch overhead
    do_bench = "do_bench"  # triton.testing.do_bench: L2 flushed between calls (cold cache)
    none = "none"


@dataclass
class ShapeConf:
    """User overrides of the family's shape; null means the family's default for the device."""

    n: int | None = None
    batch: int | None = None
    in_features: int | None = None
    out_features: int | None = None
    seq_len: int | None = None
    dim: int | None = None
    hidden: int | None = None
    heads: int | None = None
    head_dim: int | None = None


@dataclass
class FamilyConf:
    name: str = MISSING
    causal: bool = True  # attention only
    # Attention only (study.workloads.masks). mask null: causal, or none with causal=false.
    mask: Mask | None = None
    score_mod: ScoreMod = ScoreMod.none
    window: int = 256  # sliding_window: keys a query sees, itself included
    prefix: int = 256  # prefix_lm: leading keys every query sees
    documents: int = 8  # document: packed sequences (random lengths from the seed)
    softcap: float = 30.0  # softcap: cap * tanh(score / cap)
    block_size: int = 128  # flex: the block mask's tile (create_block_mask BLOCK_SIZE)
    kernel_options: dict[str, Any] = field(default_factory=dict)  # flex: passed as given
    shapes: dict[str, ShapeConf] = field(default_factory=dict)  # keyed by device: cuda, cpu


@dataclass
class VariantConf:
    name: str = MISSING
    # Your own workload (study.workloads.custom); all null for a registered variant.
    target: str | None = None  # pkg.module.factory -> nn.Module or callable (Hydra _target_)
    kwargs: dict[str, Any] = field(default_factory=dict)  # the factory's keyword arguments
    inputs: str | None = None  # pkg.module.fn(<shape keys>, dtype, device, gen) -> inputs
    reference: str | None = None  # pkg.module.fn(*inputs in float64); null: target in float64
    flops: str | None = None  # pkg.module.fn(<shape keys>) -> FLOPs per call (analytic)


@dataclass
class CompileConf:
    mode: str = "off"
    fullgraph: bool = False
    # False: specialise every shape; True: symbolic shapes; null: automatic (Dynamo's default,
    # dynamic after the first recompile); mark: torch._dynamo.mark_dynamic on the dims of the
    # inputs that carry shape_sweep.key.
    dynamic: Any = False
    inductor: dict[str, Any] = field(default_factory=dict)  # torch._inductor.config patches
    threads: int = 1  # Inductor compile_threads; 1 = no async-compile process pool (compiling)
    compiled_autograd: bool = False  # training passes: the backward through compiled autograd
    # Inductor targets, pass=fwd: parameters become constants (torch._inductor.config.freezing);
    # the forward then runs under torch.no_grad, eager's too, as freezing needs
    freezing: bool = False


@dataclass
class TimingConf:
    warmup: int = 10  # calls after the first call, before anything is timed
    calls: int = 100  # timed calls for the per-call latency
    repeat: int | None = None  # the old name of calls: still read for one release (DEPRECATED)
    device_time: DeviceTime = DeviceTime.graph
    graph_calls: int = 20  # calls captured in one CUDA graph (device_time=graph)
    graph_replays: int = 10  # replays timed (device_time=graph)
    pairs: int = 30  # compiled cells: eager/compiled block pairs timed in alternation (>= 10)
    block_ms: float = 2.0  # about how long one block of back-to-back calls lasts
    lead_in: int = 1  # untimed calls before each paired block: it is timed from a busy device
    # seconds the timed rounds may go on to collect fast-phase ones (a slow phase of the H200
    # host outlasted 4 s in 6 of 45 cells on one machine)
    max_s: float = 8.0
    fast_ratio: float = 1.3  # a block is fast when its gauge is at most this x the fast level


@dataclass
class ProfileConf:
    enabled: bool = True
    wait: int = 1
    warmup: int = 1
    active: int = 3
    record_shapes: bool = True  # needed for Triton kernel_file/kernel_hash args
    save_trace: bool = True


@dataclass
class NcuConf:
    enabled: bool = False
    top_n: int = 3
    launch_count: int = 1
    binary: str = "ncu"
    timeout_s: float = 300.0  # ncu and nsys, each


@dataclass
class NsysConf:
    enabled: bool = False
    binary: str = "nsys"


PASSES = ("fwd", "fwd_bwd", "train_step")


@dataclass
class StepConf:
    """What one call is: pick it with pass=fwd|fwd_bwd|train_step (conf/pass/, study.cell.passes)."""

    kind: str = "fwd"
    lr: float = 1e-3  # train_step: AdamW's learning rate


@dataclass
class ShapeSweepConf:
    """Several shapes in one process, one compiled function: what dynamic shapes cost."""

    key: str | None = None  # a shape key, e.g. seq_len; null: no sweep
    sizes: list[int] = field(default_factory=list)


@dataclass
class CellConf:
    variant: VariantConf = field(default_factory=VariantConf)
    family: FamilyConf = field(default_factory=FamilyConf)
    compile: CompileConf = field(default_factory=CompileConf)
    step: StepConf = field(default_factory=StepConf)
    shape: ShapeConf = field(default_factory=ShapeConf)
    shape_sweep: ShapeSweepConf = field(default_factory=ShapeSweepConf)
    timing: TimingConf = field(default_factory=TimingConf)
    profile: ProfileConf = field(default_factory=ProfileConf)
    ncu: NcuConf = field(default_factory=NcuConf)
    nsys: NsysConf = field(default_factory=NsysConf)
    device: Device = Device.auto
    dtype: Dtype = Dtype.bf16
    cache: Cache = Cache.cold
    seed: int = 0
    tolerance: float | None = None  # null: the dtype's default (see study.cell.correctness)
    # dtype: max_rel_err within `tolerance`; eager: within max(tolerance, 3 x eager's own error
    # against the same float64 reference, in the same process) - deep bf16 models (study.cell.correctness)
    tolerance_rule: str = "dtype"
    isolation: Isolation = Isolation.subprocess
    timeout_s: float = 900.0
    # CPU cells: the most a cell may map beyond its start (GB); null: 80% of the host's
    # available memory; 0: no cap. A shape past it is an `oom` row, not the kernel's OOM killer.
    cpu_mem_limit_gb: float | None = None
    resume: bool = False
    # CPU cores the cells may use: auto (all this process may use, one group per slot, the
    # first core kept for the sweep itself, or one per slot with 4+ cores per slot) or a list
    # like 0-7 or 2,3,5 (study.cell.pinning).
    cores: str = "auto"
    # Predictions checked against every row (study.rows.expect): a runs.csv column and a value
    # ('=', '<', '<=', '>', '>=', 'a..b', '~regex'), or a scope (eager, compiled, a mode, a pass)
    # holding such pairs. The attention variants ship the blog's (conf/variant/*.yaml).
    expect: dict[str, Any] = field(default_factory=dict)
    repeats: int = 1  # run every cell this many times, each in a fresh process
    repeat: int = 0  # which repetition this is (set by the sweep when repeats > 1)
    out_root: str = "outputs"
    calibration_file: str | None = (
        None  # ceilings (study.cell.calibrate); null: STUDY_CEILINGS or ~/.cache/study/ceilings.json
    )
    gpu_slots: int = 0  # >0: share this many GPUs among the running cells, one cell per GPU
    fault: Fault = Fault.none  # harness self-test only: inject a crash or hang into the cell


def custom_name(target: str | None) -> str:
    """variant=custom's default name: the factory's own name (``pkg.mod.make_block`` ->
    ``make_block``), so two factories swept together never share a row label."""
    return target.rsplit(".", 1)[-1] if target else "custom"


def by_device(device, cuda: str, cpu: str) -> str:
    """``cuda`` or ``cpu``, for the device a sweep runs on (``device=auto``: CUDA when present).
    Lets one experiment sweep GPU lengths on a GPU and its tiny form on a CPU."""
    dev = plain(device)
    if dev == "auto":
        import torch

        dev = "cuda" if torch.cuda.is_available() else "cpu"
    return cuda if dev == "cuda" else cpu


def register_configs() -> None:
    from hydra.core.config_store import ConfigStore

    cs = ConfigStore.instance()
    cs.store(name="cell_schema", node=CellConf)
    if not OmegaConf.has_resolver("study_custom_name"):
        OmegaConf.register_new_resolver("study_custom_name", custom_name)
    if not OmegaConf.has_resolver("study_by_device"):
        OmegaConf.register_new_resolver("study_by_device", by_device)


# The largest size of one shape key: index arithmetic in int32 (many kernels), and a bound
# that turns shape.n=10**20 into a config error instead of a crash in the cell.
MAX_SIZE = 2**31 - 1


def positive(key: str, value: Any) -> None:
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ConfigError(f"{key}={value!r} is not allowed: it must be a positive integer.")
    if value > MAX_SIZE:
        raise ConfigError(f"{key}={value} is too large: at most {MAX_SIZE} (2**31 - 1).")


def _memory_bytes() -> int | None:
    """This host's memory (the float64 reference of a CPU cell lives there, and a CUDA
    cell's inputs are built there first), or None where /proc/meminfo is not."""
    from study.rows.env import proc_kb

    kb = proc_kb("/proc/meminfo", "MemTotal")
    return None if kb is None else int(kb * 1024)


def fits(shape: dict) -> None:
    """Refuse a shape whose smallest possible tensor cannot fit: every workload holds at least
    a matrix of two of its sizes (or one size squared), and its float64 reference needs 8
    bytes an element. A lower bound, so it never refuses a shape that could run; a shape that
    passes and still does not fit is a row with status oom, a result."""
    sizes = sorted(((k, v) for k, v in shape.items() if v), key=lambda kv: kv[1])
    if not sizes:
        return
    (k1, v1), (k2, v2) = sizes[-1], sizes[-2] if len(sizes) > 1 else sizes[-1]
    need, have = 8 * v1 * v2, _memory_bytes()
    if have and need > have:
        raise ConfigError(
            f"shape.{k1}={v1} with shape.{k2}={v2}: one {v1} x {v2} matrix in float64 (the "
            f"reference) needs {need / 2**30:.0f} GiB, more than this host's "
            f"{have / 2**30:.0f} GiB. Pick smaller shapes."
        )


def known_keys(parent: str = "") -> list[str]:
    """The settings under ``parent`` (``""``: the top level), from the schema."""
    node = OmegaConf.structured(CellConf)
    node = OmegaConf.select(node, parent) if parent else node
    return [str(k) for k in node.keys()] if isinstance(node, DictConfig) else []


def unknown_nested_keys(cfg: DictConfig) -> list[str]:
    """Keys below a typed group (``+shape.seqlen=32``) that the schema does not have. Open
    mappings (``variant.kwargs``, ``compile.inductor``, ``family.shapes``) take any key."""
    found: list[str] = []

    def walk(schema: DictConfig, node: DictConfig, prefix: str) -> None:
        known = set(schema.keys())  # ``in`` says False for a MISSING value (variant.name)
        for k in node.keys():
            key = f"{prefix}{k}"
            if k not in known:
                found.append(key)
                continue
            sub = schema._get_node(k)
            if (
                isinstance(sub, DictConfig)
                and OmegaConf.get_type(sub) not in (dict, None)
                and isinstance(node._get_node(k), DictConfig)
            ):
                walk(sub, node._get_node(k), key + ".")

    schema = OmegaConf.structured(CellConf)
    for k in schema.keys():
        sub = schema._get_node(k)
        if (
            k in cfg
            and isinstance(sub, DictConfig)
            and OmegaConf.get_type(sub) not in (dict, None)
            and isinstance(cfg._get_node(k), DictConfig)
        ):
            walk(sub, cfg._get_node(k), f"{k}.")
    return found


def validate(cfg: DictConfig | CellConf, registry: bool = True) -> None:
    """Reject what types cannot: sizes, the compile mode, counts, a variant that is not
    registered (``registry=False``: left to the caller, study.sweep.validate). Raises ConfigError."""
    c = cfg
    if c.compile.mode not in COMPILE_MODES:
        raise ConfigError(
            f"compile.mode={c.compile.mode!r} is not a compile target; allowed: "
            f"{', '.join(COMPILE_MODES)} (pick one with compile=<target>)."
        )
    inductor = c.compile.inductor
    inductor = dict(inductor) if inductor is not None else {}
    clash = targets.conflicts(
        c.compile.mode,
        bool(c.compile.freezing),
        inductor,
        c.step.kind,
        c.compile.dynamic,
        bool(c.compile.compiled_autograd),
    )
    if clash:
        raise ConfigError(clash)
    for key in SHAPE_KEYS:
        positive(
            f"shape.{key}", c.shape[key] if isinstance(c, DictConfig) else getattr(c.shape, key)
        )
    fits({k: c.shape[k] if isinstance(c, DictConfig) else getattr(c.shape, k) for k in SHAPE_KEYS})
    for key in ("window", "prefix", "documents", "block_size"):
        positive(
            f"family.{key}", c.family[key] if isinstance(c, DictConfig) else getattr(c.family, key)
        )
    if c.family.softcap <= 0:
        raise ConfigError(f"family.softcap={c.family.softcap} is not allowed: it must be > 0.")
    attention_only = c.family.mask is not None or plain(c.family.score_mod) != "none"
    if attention_only and c.family.name != "attention":
        raise ConfigError(
            f"family.mask / family.score_mod apply to the attention family only, not "
            f"{c.family.name!r}: drop them, or pick an attention variant."
        )
    for dev, shp in c.family.shapes.items():
        for key in SHAPE_KEYS:
            val = shp[key] if isinstance(shp, DictConfig) else getattr(shp, key)
            positive(f"family.shapes.{dev}.{key}", val)
    for key in ("warmup", "graph_calls", "graph_replays"):
        val = c.timing[key] if isinstance(c, DictConfig) else getattr(c.timing, key)
        if val < 0:
            raise ConfigError(f"timing.{key}={val} is not allowed: it must be >= 0.")
    calls = c.timing.calls if c.timing.repeat is None else c.timing.repeat
    if calls < 3:
        key = "timing.calls" if c.timing.repeat is None else "timing.repeat (now timing.calls)"
        raise ConfigError(f"{key}={calls} is too few: need >= 3 for p10/p90.")
    if c.profile.active < 1 or c.profile.wait < 0 or c.profile.warmup < 0:
        raise ConfigError("profile.active must be >= 1, profile.wait and profile.warmup >= 0.")
    if c.timeout_s <= 0:
        raise ConfigError(f"timeout_s={c.timeout_s} is not allowed: it must be > 0 seconds.")
    for key in ("graph_calls", "graph_replays"):
        val = c.timing[key] if isinstance(c, DictConfig) else getattr(c.timing, key)
        if val < 1:
            raise ConfigError(f"timing.{key}={val} is not allowed: it must be >= 1.")
    if c.tolerance is not None and not c.tolerance > 0:
        raise ConfigError(f"tolerance={c.tolerance} is not allowed: it must be > 0 (or null).")
    if c.tolerance_rule not in ("dtype", "eager"):
        raise ConfigError(
            f"tolerance_rule={c.tolerance_rule!r} is not allowed: dtype (the dtype's tolerance) "
            "or eager (3x eager's own error against float64, at least the dtype's)."
        )
    if c.ncu.top_n < 1:
        raise ConfigError(f"ncu.top_n={c.ncu.top_n} is not allowed: it must be >= 1.")
    if c.timing.pairs < 10:
        raise ConfigError(
            f"timing.pairs={c.timing.pairs} is too few: need >= 10 eager/compiled pairs for a "
            "95% interval (default 30)."
        )
    if c.timing.lead_in < 0:
        raise ConfigError(
            f"timing.lead_in={c.timing.lead_in} is not allowed: it must be >= 0 (untimed calls "
            "before each paired block; default 1)."
        )
    if not c.timing.block_ms > 0:
        raise ConfigError(f"timing.block_ms={c.timing.block_ms} is not allowed: it must be > 0.")
    if not c.timing.max_s > 0:
        raise ConfigError(
            f"timing.max_s={c.timing.max_s} is not allowed: it must be > 0 seconds (how long a "
            "timed phase may go on to collect blocks in the host's fast phase; default 8)."
        )
    if not 1.0 < c.timing.fast_ratio <= 3.0:
        raise ConfigError(
            f"timing.fast_ratio={c.timing.fast_ratio} is not allowed: it must be above 1 and at "
            "most 3 (a block counts as fast when its host gauge is at most this times the fast "
            "level; default 1.3, between the H200 host's fast and slow phases, x1.7 apart)."
        )
    try:
        block = c.expect
        block = (
            OmegaConf.to_container(block, resolve=True) if isinstance(block, DictConfig) else block
        )
        expect.parse(block, COMPILE_MODES)
    except expect.ExpectError as e:
        raise ConfigError(str(e)) from None
    if c.repeats < 1:
        raise ConfigError(
            f"repeats={c.repeats} is not allowed: it must be a positive integer "
            "(the number of fresh processes each cell runs in)."
        )
    if c.step.kind not in PASSES:
        raise ConfigError(
            f"step.kind={c.step.kind!r} is not a pass; allowed: {', '.join(PASSES)} "
            "(pick one with pass=<name>)."
        )
    if c.compile.dynamic not in (False, True, None, "mark"):
        raise ConfigError(
            f"compile.dynamic={c.compile.dynamic!r} is not allowed: false, true, null "
            "(automatic) or mark (mark_dynamic on shape_sweep.key's dims)."
        )
    sw = c.shape_sweep
    if sw.key is not None:
        if sw.key not in SHAPE_KEYS:
            raise ConfigError(
                f"shape_sweep.key={sw.key!r} is not a shape key; allowed: {', '.join(SHAPE_KEYS)}."
            )
        if len(sw.sizes) < 2:
            raise ConfigError(
                "shape_sweep.sizes needs at least two shapes, e.g. shape_sweep.sizes=[512,1024]."
            )
        for v in sw.sizes:
            positive(f"shape_sweep.sizes ({sw.key})", v)
    elif c.compile.dynamic == "mark":
        raise ConfigError(
            "compile.dynamic=mark marks the dims of shape_sweep.key: set shape_sweep.key=<key> "
            "and shape_sweep.sizes=[...]."
        )
    if c.compile.threads < 1:
        raise ConfigError(f"compile.threads={c.compile.threads} is not allowed: it must be >= 1.")
    from study.cell.pinning import check_spec

    bad = check_spec(str(c.cores))
    if bad:
        raise ConfigError(bad)
    if c.variant.target or c.variant.name == "custom":  # the user's own factory: imports it
        from study.workloads import custom

        custom.check(c)
        return
    if c.variant.get("kwargs") if isinstance(c, DictConfig) else c.variant.kwargs:
        raise ConfigError(
            f"variant.kwargs apply to a variant of your own (variant.target), not to "
            f"variant={c.variant.name}: drop them, or use variant=custom variant.target=..."
        )
    if registry:
        why = registered_variant_error(c.variant.name, sw.key)
        if why:
            raise ConfigError(why)


def registered_variant_error(
    name: str, sweep_key: str | None = None, known: dict | None = None
) -> str | None:
    """Why ``variant.name=name`` (with ``shape_sweep.key=sweep_key``) names no registered
    variant, or None. ``known``: {variant: its shape keys}, as the warm parent lists them;
    without it, the workloads are imported, and torch with them."""
    if known is None:
        from study.workloads.registry import get, names

        known = {n: list(get(n).shape_keys) for n in names()}
    if name not in known:
        return f"variant.name={name!r} is not registered; known: {', '.join(known)}."
    keys = known[name]
    if sweep_key is not None and sweep_key not in keys:
        return (
            f"shape_sweep.key={sweep_key!r}: variant {name!r} has no such shape key; "
            f"its keys: {', '.join(keys)}."
        )
    return None


# Keys that say how or where a cell runs, not what it measures: left out of its identity.
NOT_IDENTITY = (
    "hydra",
    "resume",
    "out_root",
    "timeout_s",
    "isolation",
    "gpu_slots",
    "cores",
    "cpu_mem_limit_gb",
    "repeat",
    "repeats",
    "calibration_file",
    "expect",  # a prediction changes what is checked, never what is measured
)


RENAMED = {("timing", "repeat"): ("timing", "calls")}  # old key -> new key, kept for one release


def renamed_keys(d: dict) -> list[str]:
    """Move each renamed key's value to its new name, in place, in a plain config; one
    deprecation line for each old key given."""
    said = []
    for (node, old), (node2, new) in RENAMED.items():
        if (d.get(node) or {}).get(old) is not None:
            d.setdefault(node2, {})[new] = d[node].pop(old)
            d[node][old] = None
            said.append(f"{node}.{old} is deprecated: use {node2}.{new} (read as it for now)")
    return said


def config_hash(plain_cfg: dict) -> str:
    """A short hash of what a cell measures: its resolved config without ``NOT_IDENTITY``.
    Repeats of one cell share it; resume skips a cell only when it matches."""
    import hashlib
    import json

    ident = {k: v for k, v in plain_cfg.items() if k not in NOT_IDENTITY}
    for (node, old), (node2, new) in RENAMED.items():  # under the old name: a cell's identity
        if node == node2 and new in (ident.get(node) or {}):  # survives the rename (resume)
            d = dict(ident[node])
            was = d.pop(old, None)
            d[old] = d.pop(new) if was is None else was
            ident[node] = d
    if (ident.get("compile") or {}).get("mode") == "off":  # eager ignores every compile setting
        ident["compile"] = {"mode": "off"}
    return hashlib.sha256(json.dumps(ident, sort_keys=True, default=str).encode()).hexdigest()[:16]


def eager_hash(plain_cfg: dict) -> str:
    """The config_hash of this cell's eager twin: what a cross-process speedup divides by."""
    return config_hash({**plain_cfg, "compile": {"mode": "off"}})


def plain(v) -> str:
    """An enum field of the config as its plain value (``Device.cpu`` -> ``"cpu"``)."""
    return v.value if isinstance(v, Enum) else str(v)


def to_plain(cfg: DictConfig) -> dict:
    """The resolved cell config as plain data (enums as their names), without Hydra's key."""
    d = OmegaConf.to_container(cfg, resolve=True, enum_to_str=True)
    d.pop("hydra", None)
    return d


def load_cell_config(path: str) -> DictConfig:
    """Read a cell.yaml written by the sweep side back into the typed schema."""
    schema = OmegaConf.structured(CellConf)
    return OmegaConf.merge(schema, OmegaConf.load(path))
