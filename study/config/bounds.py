"""Every value of a cell's config bounded at start: finite, in range, naming the key.

Types let through what no cell can use: ``timeout_s=nan`` (a hang is never killed),
``cpu_mem_limit_gb=1e30`` (a traceback in the cell's ``setrlimit``) or ``-5`` (read as no cap),
``seed=99999999999999999999`` (past what torch's generator takes), ``timing.block_ms=inf``,
``pass.lr=nan``, ``repeats=100000000`` (a MemoryError naming no key), ``shape.layers=100000000``
(built for 340 s, then a crash). ``bounds`` raises one
ConfigError for the first such value (study.config.rules.validate calls it first).
Open mappings (``variant.kwargs``, ``compile.inductor``, ``expect``) are the user's and
Inductor's to judge.
"""

from __future__ import annotations

import math

from omegaconf import DictConfig, ListConfig, OmegaConf

from study.config.env import proc_kb
from study.errors import ConfigError

OPEN = ("variant.kwargs", "compile.inductor", "expect", "hydra")
MAX_INT = 2**31 - 1  # a count or a size: int32 index arithmetic, and a bound on every loop
MAX_SEED = 2**32 - 1  # what every generator takes (torch's, and numpy's besides)
MAX_REPEATS = 1000  # fresh processes a cell: each repeat is every cell again
MAX_TIMEOUT_S = 7 * 24 * 3600.0  # a week: past it, a hang is not a measurement
# Blocks a variant=block stack holds: 10**8 was accepted and crashed 340 s later; GPT-3 has 96
# and the deepest published transformers a few hundred, each block compiled (or one region).
MAX_LAYERS = 1024


def _walk(node, prefix: str = ""):
    """(key, value) of every leaf outside the open mappings."""
    items = node.items() if isinstance(node, dict) else enumerate(node)
    for k, v in items:
        key = f"{prefix}{k}" if isinstance(node, dict) else f"{prefix[:-1]}[{k}]"
        if key in OPEN:
            continue
        if isinstance(v, dict | list):
            yield from _walk(v, f"{key}.")
        else:
            yield key, v


def _finite_and_bounded(c: DictConfig) -> None:
    tree = OmegaConf.to_container(c, resolve=False) if isinstance(c, DictConfig | ListConfig) else c
    for key, v in _walk(tree):
        if isinstance(v, float) and not math.isfinite(v):
            raise ConfigError(f"{key}={v} is not allowed: it must be a finite number.")
        if isinstance(v, int) and not isinstance(v, bool) and abs(v) > MAX_INT and key != "seed":
            raise ConfigError(f"{key}={v} is too large: at most {MAX_INT} (2**31 - 1).")


def _host_gb() -> float | None:
    kb = proc_kb("/proc/meminfo", "MemTotal")
    return None if kb is None else kb / 2**20


def bounds(c: DictConfig) -> None:
    """Raise ConfigError for the first value no cell can use (module doc)."""
    _finite_and_bounded(c)
    seed = c.seed
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed <= MAX_SEED:
        raise ConfigError(f"seed={seed} is not allowed: it must be an integer from 0 to "
                          f"{MAX_SEED} (2**32 - 1).")  # fmt: skip
    if not 0 < c.timeout_s <= MAX_TIMEOUT_S:
        raise ConfigError(f"timeout_s={c.timeout_s} is not allowed: it must be > 0 and at most "
                          f"{MAX_TIMEOUT_S:g} seconds (a week).")  # fmt: skip
    limit, host = c.cpu_mem_limit_gb, _host_gb()
    if limit is not None and (limit < 0 or (host is not None and limit > host)):
        most = f"at most this host's {host:.0f} GB" if host is not None else "finite"
        raise ConfigError(f"cpu_mem_limit_gb={limit} is not allowed: it must be 0 (no cap), "
                          f"null (80% of the available memory) or a size in GB, {most}.")  # fmt: skip
    if not 1 <= c.repeats <= MAX_REPEATS:
        raise ConfigError(f"repeats={c.repeats} is not allowed: from 1 to {MAX_REPEATS} fresh "
                          "processes a cell.")  # fmt: skip
    layers = OmegaConf.select(c, "shape.layers")
    if layers is not None and not 1 <= layers <= MAX_LAYERS:
        raise ConfigError(f"shape.layers={layers} is not allowed: from 1 to {MAX_LAYERS} blocks "
                          "(each is built, and compiled or traced, in the cell).")  # fmt: skip
    lr = OmegaConf.select(c, "pass.lr")
    if lr is not None and not lr > 0:
        raise ConfigError(f"pass.lr={lr} is not allowed: AdamW's learning rate must be > 0.")
    t = c.timing
    _host_timing(t)
    if t.max_s > c.timeout_s:
        raise ConfigError(f"timing.max_s={t.max_s} is not allowed: it must be under timeout_s="
                          f"{c.timeout_s:g}, or every cell times out.")  # fmt: skip
    if 0 < t.max_s and t.block_ms > 1000 * t.max_s:  # max_s <= 0: config_rules says so
        raise ConfigError(f"timing.block_ms={t.block_ms} is not allowed: one block must fit in "
                          f"timing.max_s={t.max_s:g} s.")  # fmt: skip


def _host_timing(t) -> None:
    """timing.host_*: the blocks that measure host time per call (study.measure.host_cost)."""
    lo, hi = 0.5, 1000.0  # study.measure.host_cost.MIN_SLEEP_MS, MAX_SLEEP_MS (no torch here)
    ms = t.host_sleep_ms
    if not (math.isfinite(ms) and lo <= ms <= hi):
        raise ConfigError(
            f"timing.host_sleep_ms={ms} is not allowed: it must be {lo:g} to {hi:g} ms (the GPU "
            f"work queued ahead of each host-time block; under {lo:g} ms it cannot cover a block "
            "of calls, whose host time a compiled call alone puts at 20-50 us; default 5)."
        )
    if not 0 <= t.host_blocks <= 1000:
        raise ConfigError(
            f"timing.host_blocks={t.host_blocks} is not allowed: 0 (host time not measured) to "
            "1000 blocks per callable (default 20)."
        )
    if not 1 <= t.host_calls <= 1000:
        raise ConfigError(
            f"timing.host_calls={t.host_calls} is not allowed: 1 to 1000 calls per host-time "
            "block (default 20)."
        )
