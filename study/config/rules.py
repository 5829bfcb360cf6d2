"""What types cannot say about a cell's config: sizes, the compile target, counts.

``validate`` raises ConfigError with the key, the bad value and what is allowed. No torch
import: study.run validates before any cell process starts. Whether the variant exists (a
registered name, or a factory of your own that imports) is study.workloads.check's.
"""

# Long: one short check per config group (compile, start, sizes, timing, the rest), each the
# messages a user sees at start; they share validate's order and ConfigError.

from __future__ import annotations

from typing import Any

from omegaconf import DictConfig, OmegaConf

from study.config import compile_targets
from study.config.bounds import bounds
from study.config.cell_config import COMPILE_MODES, PASSES, REGIMES, plain, schema
from study.config.cores import check_spec
from study.config.env import proc_kb
from study.errors import ConfigError
from study.rows import expect
from study.rows.schema import SHAPE_KEYS

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


def validate(cfg: DictConfig) -> None:
    """Reject what types cannot: sizes, the compile target, counts. Whether the variant exists
    is study.workloads.check's. Raises ConfigError."""
    for check in (bounds, _compile, _start, _sizes, _timing, _rest, _shape_sweep, _variant,
                  _regime):  # fmt: skip
        check(cfg)


def unplanned(c) -> str | None:
    """Why a point is left out of a sweep rather than run, or None: a pass its regime does not
    plan (the latency regime is a forward call). The sweep drops such points and says so once;
    a single run of one is refused (``_regime``)."""
    reg = c.get("regime")
    if reg is None or c["pass"].kind in reg.passes:
        return None
    return f"regime={reg.name} plans pass={','.join(reg.passes)} only (pass={c['pass'].kind})"


def _regime(c) -> None:
    reg = c.get("regime")
    if reg is None or reg.name == "none":
        return
    if reg.name not in REGIMES:
        raise ConfigError(f"regime={reg.name} is not a regime; choose one of {', '.join(REGIMES)}.")
    if not c.variant.get("kind"):
        raise ConfigError(
            f"regime={reg.name} sizes the suite's models (conf/regimes/), and "
            f"variant={c.variant.name} is not one: drop regime=, or pick a model "
            "(+experiment=suite lists them)."
        )
    if why := unplanned(c):
        raise ConfigError(f"{why}: use regime=throughput for pass={c['pass'].kind}.")


def _compile(c) -> None:
    if c.compile.mode not in COMPILE_MODES:
        raise ConfigError(
            f"compile.mode={c.compile.mode!r} is not a compile target; allowed: "
            f"{', '.join(COMPILE_MODES)} (pick one with compile=<target>)."
        )
    kind = c["pass"].kind
    if kind not in PASSES:
        raise ConfigError(
            f"pass.kind={kind!r} is not a pass; allowed: "
            f"{', '.join(PASSES)} (pick one with pass=<name>)."
        )
    inductor = c.compile.inductor
    inductor = dict(inductor) if inductor is not None else {}
    clash = compile_targets.conflicts(
        c.compile.mode,
        bool(c.compile.freezing),
        inductor,
        kind,
        c.compile.dynamic,
        bool(c.compile.compiled_autograd),
        str(c.compile.get("stance", "default")),
        bool(c.compile.get("regional", False)),
        str(c.compile.get("regional_how", "auto")),
    )
    if clash:
        raise ConfigError(clash)
    if c.compile.dynamic not in (False, True, None, "mark"):
        raise ConfigError(
            f"compile.dynamic={c.compile.dynamic!r} is not allowed: false, true, null "
            "(automatic) or mark (mark_dynamic on shape_sweep.key's dims)."
        )
    if c.compile.threads < 1:
        raise ConfigError(f"compile.threads={c.compile.threads} is not allowed: it must be >= 1.")


def _start(c) -> None:
    """start=warm|artifacts: compiled Inductor cells only, artifacts with a cold cache."""
    t = compile_targets.get(c.compile.mode)
    clash = compile_targets.start_conflict(
        plain(c.start), c.compile.mode, plain(c.cache), t.inductor
    )
    if clash:
        raise ConfigError(clash)


def _sizes(c) -> None:
    for key in SHAPE_KEYS:
        positive(f"shape.{key}", c.shape[key])
    fits({k: c.shape[k] for k in SHAPE_KEYS})
    layers = c.shape.get("layers")
    positive("shape.layers", layers)
    if layers is not None and (c.variant.target or c.variant.name == "custom"):
        raise ConfigError(
            f"shape.layers={layers} stacks the block (variant=block); a model's depth is its "
            "factory's own: give it as +variant.kwargs.layers=N."
        )
    for key in ("window", "prefix", "documents", "block_size"):
        positive(f"family.{key}", c.family[key])
    if c.family.softcap <= 0:
        raise ConfigError(f"family.softcap={c.family.softcap} is not allowed: it must be > 0.")
    attention_only = c.family.mask is not None or plain(c.family.score_mod) != "none"
    if attention_only and c.family.name != "attention":
        raise ConfigError(
            f"family.mask / family.score_mod apply to the attention family only, not "
            f"{c.family.name!r}: drop them, or pick an attention variant."
        )
    for dev, shp in c.family.shapes.items():
        for key in (*SHAPE_KEYS, "layers"):
            positive(f"family.shapes.{dev}.{key}", shp[key])


def _timing(c) -> None:
    t = c.timing
    for key in ("warmup", "graph_calls", "graph_replays"):
        if t[key] < (0 if key == "warmup" else 1):
            need = ">= 0" if key == "warmup" else ">= 1"
            raise ConfigError(f"timing.{key}={t[key]} is not allowed: it must be {need}.")
    if t.calls < 3:
        raise ConfigError(f"timing.calls={t.calls} is too few: need >= 3 for p10/p90.")
    if t.pairs < 10:
        raise ConfigError(
            f"timing.pairs={t.pairs} is too few: need >= 10 eager/compiled pairs for a "
            "95% interval (default 30)."
        )
    if t.lead_in < 0:
        raise ConfigError(
            f"timing.lead_in={t.lead_in} is not allowed: it must be >= 0 (untimed calls "
            "before each paired block; default 1)."
        )
    if not t.block_ms > 0:
        raise ConfigError(f"timing.block_ms={t.block_ms} is not allowed: it must be > 0.")
    if not t.max_s > 0:
        raise ConfigError(
            f"timing.max_s={t.max_s} is not allowed: it must be > 0 seconds (how long a "
            "timed phase may go on to collect blocks in the host's fast phase; default 8)."
        )
    if not 1.0 < t.fast_ratio <= 3.0:
        raise ConfigError(
            f"timing.fast_ratio={t.fast_ratio} is not allowed: it must be above 1 and at "
            "most 3 (a block counts as fast when its host gauge is at most this times the fast "
            "level; default 1.3, between the H200 host's fast and slow phases, x1.7 apart)."
        )


def _rest(c) -> None:
    """The profile, limits, tolerance, predictions, repeats and cores."""
    if c.profile.active < 1 or c.profile.wait < 0 or c.profile.warmup < 0:
        raise ConfigError("profile.active must be >= 1, profile.wait and profile.warmup >= 0.")
    if c.timeout_s <= 0:
        raise ConfigError(f"timeout_s={c.timeout_s} is not allowed: it must be > 0 seconds.")
    if c.tolerance is not None and not c.tolerance > 0:
        raise ConfigError(f"tolerance={c.tolerance} is not allowed: it must be > 0 (or null).")
    if c.tolerance_rule not in ("dtype", "eager"):
        raise ConfigError(
            f"tolerance_rule={c.tolerance_rule!r} is not allowed: dtype (the dtype's tolerance) "
            "or eager (3x eager's own error against float64, at least the dtype's)."
        )
    if c.ncu.top_n < 1:
        raise ConfigError(f"ncu.top_n={c.ncu.top_n} is not allowed: it must be >= 1.")
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
    bad = check_spec(str(c.cores))
    if bad:
        raise ConfigError(bad)


def _shape_sweep(c) -> None:
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


def _variant(c) -> None:
    """What the config alone can say of the variant; whether it exists is the workloads' to say
    (study.workloads.check)."""
    if c.variant.target or c.variant.name == "custom":
        return
    if c.variant.get("kwargs"):
        raise ConfigError(
            f"variant.kwargs apply to a variant of your own (variant.target), not to "
            f"variant={c.variant.name}: drop them, or use variant=custom variant.target=..."
        )


def known_keys(parent: str = "") -> list[str]:
    """The settings under ``parent`` (``""``: the top level), from the schema."""
    node = schema()
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

    top = schema()
    for k in top.keys():
        sub = top._get_node(k)
        if (
            k in cfg
            and isinstance(sub, DictConfig)
            and OmegaConf.get_type(sub) not in (dict, None)
            and isinstance(cfg._get_node(k), DictConfig)
        ):
            walk(sub, cfg._get_node(k), f"{k}.")
    return found
