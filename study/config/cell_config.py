"""Typed config schema for one cell, registered in Hydra's ConfigStore.

Hydra checks types and enum values when it composes (a bad dtype or a string where an int
belongs fails at start, naming the full key). What types cannot say (sizes > 0, a compile
mode spelled with a dash) is checked by study.config.rules; a cell's identity (its hash,
renamed keys) is study.config.identity. No torch import at module level: ``study.run``
validates before any cell process starts.
"""

# Long: every setting a cell has, typed, one dataclass per config group: the one place a key and
# its default are declared (its checks are config_rules').

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from omegaconf import MISSING, DictConfig, OmegaConf, open_dict

from study.config import compile_targets
from study.rows import io

# Every compile target (study.config.compile_targets): the five Inductor modes, the layers of torch.compile
# taken apart and the deployment paths.
COMPILE_MODES = tuple(compile_targets.TARGETS)


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


class Start(Enum):  # what ran before the cell (study.cell.start): nothing (cold), a primer
    cold, warm, artifacts = "cold", "warm", "artifacts"  # filling its caches, or its artifacts


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
    layers: int | None = None  # block: blocks stacked (null: one); models: +variant.kwargs.layers


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
    # A model of the suite (study.workloads.models): what kind it is and its library (row
    # columns model_kind, model_library); null for the ladder and your own workloads.
    kind: str | None = None  # decoder, encoder, encoder-decoder, cnn, vision-transformer
    library: str | None = None  # transformers, timm, torchvision


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
    stance: str = "default"  # set_stance while timed: or skip_guard_eval_unsafe (schema.py)
    trace_log: bool = True  # TORCH_TRACE into compile_log/, tlparse where installed (compile_log)
    regional: bool = False  # compile the repeated block, not the whole model (study.cell.regional)
    regional_how: str = "auto"  # auto (nested for pass=fwd where torch has it), nested, blocks


@dataclass
class TimingConf:
    warmup: int = 10  # calls after the first call, before anything is timed
    calls: int = 100  # timed calls for the per-call latency
    device_time: DeviceTime = DeviceTime.graph
    graph_calls: int = 20  # calls captured in one CUDA graph (device_time=graph)
    graph_replays: int = 10  # replays timed (device_time=graph)
    pairs: int = 30  # compiled cells: eager/compiled block pairs timed in alternation (>= 10)
    block_ms: float = 2.0  # about how long one block of back-to-back calls lasts
    lead_in: int = 1  # untimed calls before each paired block: it is timed from a busy device
    max_s: float = 8.0  # seconds the rounds may go on for fast-phase ones (slow phases: up to 4 s)
    fast_ratio: float = 1.3  # a block is fast when its gauge is at most this x the fast level
    one_core: bool = True  # CUDA: every thread on one core while timed (study.measure.pinning)
    host_blocks: int = 20  # CUDA: host-time blocks per callable (study.measure.host_cost; 0: none)
    host_calls: int = 20  # calls per host-time block, at most
    host_sleep_ms: float = 5.0  # GPU sleep queued ahead of each block, so the host never waits


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
class PassConf:
    """What one call is: pick it with pass=fwd|fwd_bwd|train_step (conf/pass/, study.cell.passes).
    The node is ``pass``, a Python keyword: code reads it as ``cfg["pass"]``."""

    kind: str = "fwd"
    lr: float = 1e-3  # train_step: AdamW's learning rate


REGIMES = ("none", "throughput", "latency")
MODEL_KINDS = ("decoder", "encoder", "encoder-decoder", "cnn", "vision-transformer")


@dataclass
class RegimeConf:
    """The suite's size regime (conf/regime/): ``throughput`` (a model's batch sizes), or
    ``latency`` (one decode-sized call; a decoder LM's decode step against a static KV cache).
    A model's sizes per regime: conf/variant/<model>.yaml and conf/regimes/<model>_latency.yaml.
    ``passes``: the passes a regime plans; a sweep leaves out the other points, said once."""

    name: str = "none"  # none: the variant's own sizes, no regime
    passes: list[str] = field(default_factory=lambda: ["fwd", "fwd_bwd", "train_step"])


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
    shape: ShapeConf = field(default_factory=ShapeConf)
    shape_sweep: ShapeSweepConf = field(default_factory=ShapeSweepConf)
    regime: RegimeConf = field(default_factory=RegimeConf)
    timing: TimingConf = field(default_factory=TimingConf)
    profile: ProfileConf = field(default_factory=ProfileConf)
    ncu: NcuConf = field(default_factory=NcuConf)
    nsys: NsysConf = field(default_factory=NsysConf)
    device: Device = Device.auto
    dtype: Dtype = Dtype.bf16
    cache: Cache = Cache.cold
    start: Start = Start.cold  # what ran before the cell's process (study.cell.start)
    seed: int = 0
    tolerance: float | None = None  # null: the dtype's default (see study.cell.correctness)
    # dtype: max_rel_err within `tolerance`; eager: within max(tolerance, 3 x eager's own error
    # against the same float64 reference, in the same process) - deep bf16 models (study.cell.correctness)
    tolerance_rule: str = "dtype"
    timeout_s: float = 900.0
    # CPU cells: the most a cell may map beyond its start (GB); null: 80% of the host's
    # available memory; 0: no cap. A shape past it is an `oom` row, not the kernel's OOM killer.
    cpu_mem_limit_gb: float | None = None
    resume: bool = False
    # CPU cores the cells may use: auto (all this process may use, one group per slot, the
    # first core kept for the sweep itself, or one per slot with 4+ cores per slot) or a list
    # like 0-7 or 2,3,5 (study.measure.pinning).
    cores: str = "auto"
    # Predictions checked against every row (study.rows.expect): a runs.csv column and a value
    # ('=', '<', '<=', '>', '>=', 'a..b', '~regex'), or a scope (eager, compiled, a mode, a pass)
    # holding such pairs. The attention variants ship the blog's (conf/variant/*.yaml).
    expect: dict[str, Any] = field(default_factory=dict)
    repeats: int = 1  # run every cell this many times, each in a fresh process
    repeat: int = 0  # which repetition this is (set by the sweep when repeats > 1)
    out_root: str = "outputs"
    # ceilings (study.measure.calibrate); null: ~/.cache/study/ceilings.json
    calibration_file: str | None = None
    fault: Fault = Fault.none  # harness self-test only: inject a crash or hang into the cell


def schema() -> DictConfig:
    """The cell's typed schema: ``CellConf`` and its ``pass`` node, which a dataclass cannot
    name (a keyword), added as a typed node of its own."""
    node = OmegaConf.structured(CellConf)
    with open_dict(node):  # then back to CellConf's own rule: no key it does not name
        node["pass"] = OmegaConf.structured(PassConf)
    return node


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
    cs.store(name="cell_schema", node=schema())
    if not OmegaConf.has_resolver("study_custom_name"):
        OmegaConf.register_new_resolver("study_custom_name", custom_name)
    if not OmegaConf.has_resolver("study_by_device"):
        OmegaConf.register_new_resolver("study_by_device", by_device)


def plain(v) -> str:
    """An enum field of the config as its plain value (``Device.cpu`` -> ``"cpu"``)."""
    return v.value if isinstance(v, Enum) else str(v)


def to_plain(cfg: DictConfig) -> dict:
    """The resolved cell config as plain data (enums as their names), without Hydra's key."""
    d = OmegaConf.to_container(cfg, resolve=True, enum_to_str=True)
    d.pop("hydra", None)
    return d


# timing.* keys only a CUDA cell reads (study.measure.host_cost: the CPU measures no host time)
CUDA_ONLY_TIMING = ("host_blocks", "host_calls", "host_sleep_ms")


def timing_as_measured(timing: dict, device: str | None) -> dict:
    """``timing`` with the keys a ``device`` cell does not read at their defaults: on the CPU,
    ``timing.host_sleep_ms=10`` measures what 5 does, and is one cell with it."""
    if device != "cpu":
        return timing
    default = OmegaConf.to_container(OmegaConf.structured(TimingConf), enum_to_str=True)
    return {k: default[k] if k in CUDA_ONLY_TIMING and k in default else v
            for k, v in timing.items()}  # fmt: skip


def timing_overrides(timing: dict, device: str | None = None) -> str:
    """The timing.* settings of a plain config that differ from TimingConf's defaults, as
    ``k=v;...`` sorted by key (empty: every one at its default); ``device``'s unread keys left
    out (``timing_as_measured``)."""
    default = OmegaConf.to_container(OmegaConf.structured(TimingConf), enum_to_str=True)
    timing = timing_as_measured(timing, device)
    return ";".join(f"{k}={v}" for k, v in sorted(timing.items()) if default.get(k, v) != v)


def first_row(cfg: DictConfig, run_id: str) -> dict:
    """A cell's row before it is measured (study.rows.io.base_row: from its config alone, no
    torch), with its ``timing_overrides``."""
    p = to_plain(cfg)
    over = timing_overrides(p.get("timing", {}), p.get("device"))
    return {**io.base_row(p, run_id), "timing_overrides": over}


def load_cell_config(path: str) -> DictConfig:
    """Read a cell.yaml written by the sweep side back into the typed schema."""
    return OmegaConf.merge(schema(), OmegaConf.load(path))
