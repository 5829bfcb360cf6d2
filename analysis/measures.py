"""Small pure helpers on the loaded frames, shared by the figures, the report and compare.

Which speedup a sentence may use (paired in one process when measured, else the cross-process
ratio, labelled as such), when a speedup is "no measurable difference", which rows may carry a
host-bound verdict, how values are printed (significant digits), how cells sort (shapes as
numbers). No plotting, no torch.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from study.config import compile_targets
from study.rows.metrics import HOST_BOUND, bound_verdict
from study.rows.schema import SHAPE_KEYS

# Every compile target, in reading order (study/config/compile_targets.py, whose table this
# reads): eager, Inductor's modes, the layers of torch.compile taken apart, the deployment paths.
MODES = list(compile_targets.TARGETS)
# The targets that replay CUDA graphs: their allocator peak leaves out the graph pool, so compare
# judges their reserved memory (part3's naive under reduce-overhead read 49 MiB allocated against
# 609 eager; reserved, with the pool, 394).
GRAPHS = tuple(m for m in MODES if compile_targets.uses_cudagraphs(m))
# Inductor through torch.compile without CUDA graphs: the compiled Python (or C++) wrapper runs
# on the host at every call (default, max-autotune-no-cudagraphs, cpp_wrapper).
WRAPPERS = tuple(
    t.name
    for t in compile_targets.TARGETS.values()
    if t.backend == "inductor" and t.inductor and not t.cudagraphs
)
# A paired interval that excludes 1.0 but lies within this of it is no change worth a verdict:
# v3 on the H200 timed the same kernels against themselves (flash under `default`, the naive
# attention under dynamo_eager and aot_eager) at 0.999-1.004x, intervals that exclude 1.0.
PAIRED_NOISE = 0.01
FAMILIES = ["matmul", "linear", "mlp", "attention"]
PASSES = ["fwd", "fwd_bwd", "train_step"]
# What identifies a cell across sweeps, hosts and torch versions (analysis.compare).
CONFIG_KEY = ("variant", "compile", "pass", "dtype", "device", *SHAPE_KEYS, "causal")
# The axes a sweep crosses beyond CONFIG_KEY, each with the value a row without it ran at (an
# older study's rows lack the column, an eager row leaves compile's blank): compare keys cells
# on them wherever either side has the column, so start=cold,warm,artifacts or
# compile.regional=false,true are three and two cells, never one; the report shows the ones
# that vary.
# (regional_method is not one: a result, written once the cell compiled, and torch's choice
# under compile.regional_how=auto.)
# A suite's regime (throughput, latency) is one too: blank and "none" are the variant's own sizes.
AXES = {"layers": "", "cache": "cold", "start": "cold", "compile_stance": "default",
        "compiled_autograd": "0", "freezing": "0", "regional": "0", "compile_threads": "1",
        "seed": "0", "timing_overrides": "", "regime": "none"}  # fmt: skip


def norm_value(v) -> str:
    """One spelling per value: a boolean reads the same as a bool (True), a string ("True") or
    the float a CSV column of bools and blanks becomes (1.0); 4.0 reads "4"; blank for none."""
    if v is None or (isinstance(v, float) and np.isnan(v)) or v is pd.NA:
        return ""
    if isinstance(v, (bool, np.bool_)):
        return str(int(v))
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    s = str(v).strip().lower()
    return {"true": "1", "false": "0", "1.0": "1", "0.0": "0"}.get(s, s)


def axis_values(r: pd.DataFrame, c: str) -> pd.Series:
    """Column ``c`` of AXES as text (``norm_value``), a blank or missing one at its default."""
    v = r[c].map(norm_value) if c in r else pd.Series("", index=r.index, dtype=object)
    return v.where(v != "", AXES[c])


KIND_TEXT = {
    "paired": "paired speedup (eager and compiled timed in alternating blocks in one process, 95% interval)",
    "cross-process": "per-call latency ratio, not the paired speedup (eager latency / compiled "
    "latency, separate processes)",
}
LATENCY_METHOD_TEXT = {
    "cuda_events_per_call": "CUDA events around each call",
    "perf_counter_per_call": "a monotonic clock around each call (perf_counter)",
}


def column(df: pd.DataFrame, col: str) -> pd.Series:
    """``df[col]`` as numbers (anything else NaN), or all NaN where the column is absent."""
    return pd.to_numeric(df[col], errors="coerce") if col in df else pd.Series(np.nan, df.index)


def number(v) -> float:
    """``v`` as a float, NaN where it is none (None, blank, text)."""
    try:
        return float(v)
    except (TypeError, ValueError):
        return float("nan")


def has(df: pd.DataFrame, col: str) -> bool:
    return col in df and df[col].notna().any()


def sig(v, n: int = 3, unit: str = "") -> str:
    """``v`` with ``n`` significant digits, no fixed decimals; whole numbers from 10^(n-1)
    up (thousands separated): 1062.0 -> '1,062', 96.84 -> '96.8', 0.0334 -> '0.0334',
    2.081 -> '2.08', 0.9996 -> '1.00'."""
    if v is None or (isinstance(v, float) and math.isnan(v)) or v is pd.NA:
        return ""
    v = float(v)
    if abs(v) >= 10 ** (n - 1):
        return f"{round(v):,}" + unit
    v = float(f"{v:.{n}g}")  # round first: 0.9996 -> 1.00, not 1.000
    if v == 0:
        return "0" + unit
    mag = math.floor(math.log10(abs(v)))
    if mag < -4:
        return f"{v:.{n - 1}e}" + unit
    if mag >= n - 1:
        return f"{round(v):,}" + unit
    return f"{v:,.{n - 1 - mag}f}" + unit


def count(v) -> str:
    """A count: '7', or '7.5' when the median over steps falls between two."""
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return ""
    return f"{float(v):,.0f}" if float(v).is_integer() else sig(v)


def xs(v, n: int = 3) -> str:
    """A ratio: '2.08x'."""
    return sig(v, n) + "x" if sig(v, n) else ""


def order(df: pd.DataFrame) -> pd.DataFrame:
    """Cells in reading order: family, variant, shapes as numbers (32 < 128), pass, mode."""
    if df.empty:
        return df
    keys = pd.DataFrame(index=df.index)
    keys["_f"] = (
        df["family"].map({f: i for i, f in enumerate(FAMILIES)}).fillna(99) if "family" in df else 0
    )
    keys["_v"] = df["variant"].astype(str) if "variant" in df else ""
    cols = ["_f", "_v"]
    for c in SHAPE_KEYS:
        if c in df:
            keys[f"_{c}"] = pd.to_numeric(df[c], errors="coerce").fillna(-1)
            cols.append(f"_{c}")
    if "pass" in df:
        keys["_p"] = df["pass"].map({p: i for i, p in enumerate(PASSES)}).fillna(9)
        cols.append("_p")
    if "compile" in df:
        keys["_m"] = df["compile"].map({m: i for i, m in enumerate(MODES)}).fillna(99)
        cols.append("_m")
    idx = keys.sort_values(cols, kind="stable").index
    return df.loc[idx]


def speedups(r: pd.DataFrame) -> pd.DataFrame:
    """Add the speedup each figure and sentence uses, per row:

    - ``sp``: ``speedup_paired`` where measured (kind ``paired``, interval from
      ``speedup_ci_low``/``_high``), else ``speedup`` (kind ``cross-process``; its interval is
      the spread over repeats when the cell ran more than once, else none);
    - ``sp_same``: no change: the interval contains 1.0 (no measurable difference), or a paired
      one lies within ±``PAIRED_NOISE`` of it (False without an interval);
    - ``eager_us``, ``gain_us``: eager latency and eager minus compiled, per call, in the same
      terms as ``sp`` (the paired eager latency for a paired speedup).
    """
    r = r.copy()
    nan = pd.Series(np.nan, index=r.index)
    cross = r["speedup"] if "speedup" in r else nan
    paired = r["speedup_paired"] if "speedup_paired" in r else nan
    use_p = paired.notna()
    r["sp"] = paired.where(use_p, cross)
    r["sp_kind"] = np.where(use_p, "paired", np.where(cross.notna(), "cross-process", ""))
    lo_p = r["speedup_ci_low"] if "speedup_ci_low" in r else nan
    hi_p = r["speedup_ci_high"] if "speedup_ci_high" in r else nan
    many = (r["n_repeats"] > 1) if "n_repeats" in r else pd.Series(False, index=r.index)
    lo_x = r["speedup_min"].where(many) if "speedup_min" in r else nan
    hi_x = r["speedup_max"].where(many) if "speedup_max" in r else nan
    r["sp_lo"] = lo_p.where(use_p, lo_x)
    r["sp_hi"] = hi_p.where(use_p, hi_x)
    inside = (
        (r["sp_kind"] == "paired")
        & (r["sp_lo"] >= 1 - PAIRED_NOISE)
        & (r["sp_hi"] <= 1 + PAIRED_NOISE)
    )
    r["sp_same"] = ((r["sp_lo"] <= 1.0) & (r["sp_hi"] >= 1.0)) | inside
    lat = r["latency_median_us"] if "latency_median_us" in r else nan
    eager_p = r["eager_latency_paired_us"] if "eager_latency_paired_us" in r else nan
    r["eager_us"] = eager_p.where(use_p & eager_p.notna(), lat * r["sp"])
    r["gain_us"] = r["eager_us"] * (1 - 1 / r["sp"])
    return r


def kinds_text(r: pd.DataFrame) -> str:
    kinds = [k for k in ("paired", "cross-process") if k in set(r.get("sp_kind", []))]
    if not kinds:
        return "speedup"
    if len(kinds) == 2:
        return "paired speedup where measured, else the per-call latency ratio (separate processes)"
    return KIND_TEXT[kinds[0]]


def speedup_words(row) -> str:
    """'2.08x faster', '0.41x, slower', or 'no measurable difference (0.99x, 95% CI ...)'."""
    sp = row.get("sp")
    if sp is None or sp != sp:
        return ""
    ci = ""
    lo, hi = row.get("sp_lo"), row.get("sp_hi")
    if lo == lo and hi == hi and lo is not None and hi is not None:
        what = "95% CI" if row.get("sp_kind") == "paired" else "over repeats"
        ci = f", {what} {sig(lo)}–{xs(hi)}"
    if bool(row.get("sp_same")):
        lo_, hi_ = row.get("sp_lo"), row.get("sp_hi")
        held = lo_ is not None and hi_ is not None and lo_ <= 1.0 <= hi_
        word = "no measurable difference" if held else f"within ±{PAIRED_NOISE:.0%}"
        return f"{word} ({xs(sp)}{ci})"
    return f"{xs(sp)}{' faster' if sp > 1 else ', slower'}" + (f" ({ci[2:]})" if ci else "")


def latency_methods(r: pd.DataFrame) -> str:
    """How per-call latency was timed, per device: 'CUDA events around each call on cuda'."""
    out = []
    for dev, g in r.groupby("device", sort=True) if "device" in r else []:
        meths = g["latency_method"].dropna().unique() if "latency_method" in g else []
        if len(meths) == 0:
            meths = ["cuda_events_per_call" if dev == "cuda" else "perf_counter_per_call"]
        text = "; ".join(LATENCY_METHOD_TEXT.get(m) or _chunked(m) for m in meths)
        out.append(f"{text} on {dev}")
    return "; ".join(out) or "per-call timing"


def _chunked(method: str) -> str:
    """'cuda_events_per_10_calls' -> 'CUDA events around chunks of 10 back-to-back calls'."""
    n = method.removeprefix("cuda_events_per_").removesuffix("_calls")
    if method.startswith("cuda_events_per_") and n.isdigit():
        return f"CUDA events around chunks of {n} back-to-back calls"
    return method


def truthy(s: pd.Series) -> pd.Series:
    """A CSV's boolean column as bools: True, "True", 1 and "1.0" are true; anything else
    (False, NaN, blank) is false."""
    return s.map(lambda x: str(x).strip().lower() in ("true", "1", "1.0"))


def host_bound_of(r: pd.DataFrame) -> pd.Series:
    """True/False/NA per row, by the one rule (``study.rows.metrics.bound_verdict``): host
    time per call against device time per call (``study.rows.metrics.device_us``); NA where
    ``host_status`` says there is no host figure (serial, above_latency, ...); for rows from
    before ``host_us``, latency over 1.1x the GPU's busy time, else the ``host_bound`` column."""

    lat, busy = column(r, "latency_median_us"), column(r, "gpu_us_per_step")
    out = pd.Series(pd.NA, index=r.index, dtype="object")
    if "host_bound" in r:
        out = out.where(r["host_bound"].isna(), truthy(r["host_bound"]).astype(object))
    known = lat.notna() & busy.notna() & (busy > 0)
    host = column(r, "host_us")
    measured = host.notna() & (host > 0)
    out = out.where(~known | measured, (lat > HOST_BOUND * busy).astype(object))
    if "host_status" in r:  # serial, above_latency, ...: no host figure, so no verdict either
        st = r["host_status"]
        out = out.mask(st.notna() & st.astype(str).ne("measured"), pd.NA)
    cols = ["host_us", "latency_median_us", "device_time_us", "gpu_us_per_step"]
    nums = pd.DataFrame({c: column(r, c) for c in cols}).astype(object)
    nums = nums.where(nums.notna(), None)  # bound_verdict reads a missing figure as None
    if "device_time_method" in r:  # which device time is free of host time (metrics.device_us)
        nums["device_time_method"] = r["device_time_method"].astype(object).to_numpy()
    vals = out.to_numpy(copy=True)
    for i in np.flatnonzero(measured.to_numpy()):  # by position: an index may repeat labels
        hb = bound_verdict(nums.iloc[i].to_dict())[0]
        vals[i] = pd.NA if hb is None else hb
    return pd.Series(vals, index=r.index, dtype="object")


def host_verdict(r: pd.DataFrame) -> pd.Series:
    """True/False where a host-bound verdict means something (CUDA rows), NA elsewhere: the one
    rule (``host_bound_of``) where it applies, else ``cpu_bound`` (profiled CPU time > device
    busy time per step) for older rows without it."""
    out = pd.Series(pd.NA, index=r.index, dtype="object")
    cuda = r["device"].eq("cuda") if "device" in r else pd.Series(False, index=r.index)
    if "cpu_bound" in r:
        v = r["cpu_bound"]
        out = out.where(~(cuda & v.notna()), truthy(v).astype(object))
    hb = host_bound_of(r)
    return out.where(~(cuda & hb.notna()), hb)


def geomean(x) -> float:
    x = pd.Series(x, dtype=float).dropna()
    x = x[x > 0]
    return float(np.exp(np.log(x).mean())) if len(x) else float("nan")
