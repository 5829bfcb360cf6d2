"""What changed between two studies: ``python -m analysis.compare A B [--out DIR]``.

A and B are sweep dirs or committed results dirs (several ``source``s), e.g. the same sweep
under two torch versions; ``DIR:SOURCE`` picks one source of a results dir. Cells are matched
by their configuration (variant, compile, pass, dtype, device, shape, causal; the Inductor
patches, fullgraph, dynamic, the attention mask and score_mod, and the timing settings changed
(``timing_overrides``) where both sides record them; and the axes a sweep crosses, ``AXES``:
layers, cache, start, compile stance, compiled autograd, freezing, regional, compile threads
and seed, a side without one at its default), never by run id, and within the
same source name when both sides have it; every cell, whatever its status. Cells of one source
that no column tells apart (they differ only in a check.* or profile.* setting, or in timing
against a side that does not record it) are said, and one of each such set is compared (a not
ok one first); a gate line about one names what tells it apart (``compare_gate.apart_lines``). A
cell ok in A and not ok in B (crash, error, timeout, oom, mismatch, invalid,
unsupported, ...) is a regression, said first; one not ok in A and ok in B is said "now ok"
(not counted as an improvement); cells only in A or B are listed with their status. A crash
row is matched on its variant's own shape keys (``compare_gate.own_shape_keys``). Every matched
cell is counted in exactly one bucket: regressed, improved, within noise, now ok, still not ok,
unchanged.

``--fail-on-regression`` (``analysis.compare_gate``) exits 1 for a regression, a cell of A
missing in B (a renamed variant matches nothing) or one not ok in B with another status than
A's, each printed; and exits 2, comparing nothing, for a side that is unfinished: its sweep
still holds the dir's lock, or has fewer finished cells than its ``sweep.yaml`` planned.

Per cell and per variant it reports the change in latency, speedup (paired when measured),
compile time, kernels per forward and peak memory (reserved memory for the modes that replay
CUDA graphs, whose pool the allocator's peak leaves out; else the step's own peak where both
sides have it; a change under 1 MiB is not judged), and flags regressions with the thresholds
of PyTorch's compiler dashboard (torchci ``components/benchmark/compilers/common.ts``): 5%
relative change in latency and compile time, a speedup below 0.95x of the base, peak memory up
20%. A cell's own interval widens its threshold: the spread over repeats (fresh processes),
and the 95% interval of a paired speedup.

Noise is not change. A latency change past its threshold counts (regressed or improved) only
when the two sides' latency intervals do not overlap: B's entirely above A's, or entirely
below. A side's interval is the range of its repeats' medians (one per fresh process) when the
cell has 2 or more usable repeats there, else the row's per-call spread ``latency_p10_us`` to
``latency_p90_us`` (conservative: a one-process cell must move by more than its calls spread),
else its median alone (old rows). A change past the threshold whose intervals overlap is
"within noise": neither regressed nor improved, counted apart in the summary. So is a latency
or speedup change of a cell timed outside the host's fast phase on either side (its
``timing_phase`` is mixed, slow or contended: study.measure.host_gauge), within what a phase can cause
(``HOST_PHASE``: x2 either way; further, it is judged as in the fast phase), and a compile time
change under ``COMPILE_FLOOR_S``. A change of kernels per step or of device time is flagged
whatever the host's phase: the host changes neither. A call's host cost (``host_us``, CUDA rows)
is compared in µs where both sides' hosts ran at the same speed (``host_gauge_us`` within 10%),
else in host units (``host_units``), which carry between hosts where µs do not; past 20% it is
flagged ``host cost``; hosts more than 1.5x apart (a slow phase on one side) are said, not judged.

Two suite sweeps (rows with a regime or a model kind, ``analysis.compare_suite``) get the
suite's own section: per regime, pass and mode the geomean of the paired speedups over the
models both sides ran (each ok under eager and the mode in A and in B), the models only one
side ran named; and per model a verdict. A model that stopped running (a mode that ran in A
did not in B, or the model is missing in B) or regressed fails the gate, one line each.

Each cell that moved (past a threshold, or with speedup intervals that no longer overlap) says
why in ``why`` (``analysis.compare_causes``): its kernels or its device time changed (real), the
speedup's method changed, A's paired speedup predates the lead-in fix, the host (kernels and
device time unchanged, a side slow or host-bound), or the eager side moved.

Where a cell's sides ran on different GPUs (``device_name``), ``compare_causes.gpus`` splits its
change into its kernels' by the ceiling that bounds them (``analysis.tables.predict``'s model,
each side against its own ceilings) and its host's (units x G), and says which decided its
latency: an "Across GPUs" section, ``gpu_`` columns and one console line, only then.

Writes ``compare.md``, ``compare.csv`` and ``compare.png``/``.svg``; prints the summary, then
the regressions (cells no longer ok first), the cells now ok and those only in B. Where both
sides have ``autotune.csv``, a max-autotune cell that picked another choice for an op is named
with the times behind both picks (``analysis.autotune_diff``): with the same torch, a change
of kernels that is the benchmark's, not the code's. Reads only CSVs; never imports torch.
"""

# Long: one concern end to end: match the cells of two studies, judge each change against both
# sides' noise, say it; each part is used only here.

from __future__ import annotations

import argparse
import datetime as dt
import sys
from pathlib import Path

import numpy as np
import pandas as pd

from analysis import autotune_diff, compare_causes, compare_gate, compare_suite
from analysis.load import NotASweep, check_out, expand, guarded, load, stop
from analysis.measures import (
    AXES,
    CONFIG_KEY,
    GRAPHS,
    axis_values,
    column,
    geomean,
    has,
    host_bound_of,
    norm_value,
    order,
    sig,
    speedups,
)
from study.rows.schema import SHAPE_KEYS

LATENCY = 0.05  # RELATIVE_THRESHOLD
SPEEDUP = 0.95  # SPEEDUP_THRESHOLD: B's speedup below 0.95x of A's
COMPILE = 0.05  # compilation latency uses RELATIVE_THRESHOLD too
MEMORY = 0.20  # PEAK_MEMORY_USAGE_RELATIVE_THRESHOLD
# Compile time changes under this many seconds are not judged: a 0.67 s compile read 0.76 s
# in a second identical CPU quickstart (+13%), past the 5% threshold.
COMPILE_FLOOR_S = 1.0
# A step's own peak can be a few KiB (matmul+bias n=64: 8-18 KiB): a rounding of the allocator
# reads +25% there. Peak memory changes under MEMORY_FLOOR_BYTES are not judged.
MEMORY_FLOOR_BYTES = 1 << 20
# What timing outside the host's fast phase can explain: the H200 host's slow phase ran Python
# x1.7 and tiny tensor ops x2.0 slower (docs/method.md, the host's two phases), so a latency or speedup
# that moved further than x2 either way is judged as in the fast phase (an eager cell 27.4 ->
# 364 µs, both sides contended, read "within noise" before).
HOST_PHASE = 2.0
# A call's host cost (host_us, CUDA rows) is judged in µs where both sides' hosts ran at the same
# speed (host_gauge_us within HOST_SPEED), else in host units; a change past HOST_COST is flagged
# (host units of one cell were 3-14% apart across four H200 machines, host µs up to 40%).
HOST_SPEED = 0.10
HOST_COST = 0.20
HOST_SLOWER = 1.5  # host speeds further apart: a slow phase on one side, the change not judged
# Keys only where both sides record them: an older study lacks the column, and an experiment's
# own timing (flex, scaling, tiny) would otherwise read as a change against it.
EXTRA_KEY = ("inductor_patches", "fullgraph", "dynamic", "mask", "score_mod", "timing_overrides")
RULE = (
    "Regression: a cell ok in A and not in B (crash, error, timeout, oom, ...), said first; "
    f"latency or compile time up more than {LATENCY:.0%}, speedup below {SPEEDUP}x of A's, "
    f"peak memory up more than {MEMORY:.0%} (PyTorch's compiler dashboard; reserved memory "
    "under the modes that replay CUDA graphs, whose pool the allocator's peak leaves out; "
    "else the step's own peak where both sides have it), "
    "each widened by "
    "the cell's own spread over repeats and a paired speedup's 95% interval. A latency change "
    "past that counts only when the two sides' intervals do not overlap (B's entirely above "
    "A's: regressed; entirely below: improved); else it is within noise, counted apart. A "
    "side's interval: the range of its repeats' medians with 2 or more repeats, else the "
    "calls' p10–p90 spread. Latency and speedup timed outside the host's fast phase on either "
    "side (timing_phase mixed, slow or contended) are not compared while within "
    f"x{HOST_PHASE:g} either way: within noise, host phase. A change of kernels per step, or of "
    "device time past the latency threshold, is flagged whatever the phase. "
    f"Compile time changes under {COMPILE_FLOOR_S:g} s and peak memory changes under "
    f"{MEMORY_FLOOR_BYTES >> 20} MiB are not judged."
)


def side(arg: str) -> tuple[dict, str]:
    """Load one side: a dir (sweep or results), or DIR:SOURCE for one source of it."""
    path, src = arg, None
    if not Path(arg).exists() and ":" in arg:
        path, src = arg.rsplit(":", 1)
    d = load(expand([path]))
    if src is not None:
        if src not in set(d["runs"]["source"]):
            have = ", ".join(dict.fromkeys(d["runs"]["source"]))
            raise NotASweep(f"{path} has no source {src!r} (it has: {have}): give DIR:SOURCE "
                            "with one of them")  # fmt: skip
        d = {k: (v[v["source"] == src] if isinstance(v, pd.DataFrame) and "source" in v else v)
             for k, v in d.items()}  # fmt: skip
    return d, arg


def keyed(runs: pd.DataFrame, extra: tuple[str, ...], axes: tuple[str, ...] = ()) -> pd.DataFrame:
    """Cells with a configuration key ``_key`` (and the columns the comparison needs): the
    CONFIG_KEY and ``extra`` columns the rows have, and every one of ``axes`` (AXES), a blank
    or missing one at its default."""
    r = speedups(runs)
    cols = [c for c in (*CONFIG_KEY, *extra) if c in r]
    key = r[cols].apply(lambda row: "|".join(f"{c}={norm_value(row[c])}" for c in cols), axis=1)
    for c in axes:
        key = key + f"|{c}=" + axis_values(r, c)
    r["_key"] = key if len(r) else pd.Series(dtype=object)
    return r


def keyed_sides(ra: pd.DataFrame, rb: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Both sides keyed alike: EXTRA_KEY where both have it, AXES where either has it."""
    extra = tuple(c for c in EXTRA_KEY if has(ra, c) and has(rb, c))
    # timing_overrides blank is the defaults where a side writes the column at all
    extra += tuple(c for c in ("timing_overrides",) if c in ra and c in rb and c not in extra)
    axes = tuple(c for c in AXES if c not in EXTRA_KEY and (has(ra, c) or has(rb, c)))
    return keyed(ra, extra, axes), keyed(rb, extra, axes)


def untold(k: pd.DataFrame) -> pd.DataFrame:
    """Cells of one side that share a source and a key with another cell of other config_hash:
    they differ only in what no column records (check.*, profile.*, variant.kwargs), so only one
    of them is compared (the first not ok, else the first)."""
    if "config_hash" not in k or k.empty:
        return k.iloc[0:0]
    n = k.groupby(["source", "_key"])["config_hash"].transform("nunique")
    return k[n > 1]


def pairs(a: pd.DataFrame, b: pd.DataFrame) -> list[tuple[str, str]]:
    """Which source of A is compared with which of B: same names, else every unmatched pair."""
    sa, sb = list(dict.fromkeys(a["source"])), list(dict.fromkeys(b["source"]))
    same = [(s, s) for s in sa if s in sb]
    rest_a, rest_b = [s for s in sa if s not in sb], [s for s in sb if s not in sa]
    return same + [(x, y) for x in rest_a for y in rest_b]


def _spread(r: pd.DataFrame, col: str) -> pd.Series:
    """A cell's own relative interval half-width for ``col`` (0 without repeats)."""
    c = f"{col}_spread_pct"
    return (r[c].fillna(0) / 200) if c in r else pd.Series(0.0, index=r.index)


def latency_interval(r: pd.DataFrame) -> tuple[pd.Series, pd.Series, pd.Series]:
    """(low, high, what it is) of each cell's latency median (module doc): the range over its
    usable repeats when it has 2 or more, else its calls' p10–p90, else the median alone."""
    med = column(r, "latency_median_us")
    fast = column(r, "n_repeats_fast")
    used = fast.where(fast > 0, column(r, "n_repeats_ok"))
    lo_r, hi_r = column(r, "latency_median_us_min"), column(r, "latency_median_us_max")
    many = (used >= 2) & lo_r.notna() & hi_r.notna()
    p10, p90 = column(r, "latency_p10_us"), column(r, "latency_p90_us")
    calls = ~many & p10.notna() & p90.notna()
    lo = lo_r.where(many, p10.where(calls, med))
    hi = hi_r.where(many, p90.where(calls, med))
    what = pd.Series(np.where(many, "repeats", np.where(calls, "p10–p90", "")), index=r.index)
    return lo, hi, what


def _status(r: pd.DataFrame) -> pd.Series:
    return r["status"].fillna("").astype(str) if "status" in r else pd.Series("ok", index=r.index)


def _one_per_key(x: pd.DataFrame) -> pd.DataFrame:
    """One row per configuration, a not-ok one where there is one: cells no column tells apart
    (``untold``) are one cell to the comparison, and a crash among them is never hidden behind
    an ok one (issue 68: two points differing only in a ``+variant.kwargs`` value)."""
    ok = (x["status"] == "ok").to_numpy()
    return x.iloc[np.argsort(ok, kind="stable")].drop_duplicates("_key").sort_index()


def match(
    da: dict, db: dict, every_status: bool = False
) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """(matched cells, only in A, only in B): every cell whatever its status with
    ``every_status`` (what this module reports), else ok cells only (the speedups
    ``reference.findings.changes.since_unpaired`` sets side by side)."""
    ra, rb = da["runs"], db["runs"]
    if not every_status:
        ra, rb = ra[ra["status"] == "ok"], rb[rb["status"] == "ok"]
    ra, rb = compare_gate.own_shape_keys(ra, rb)
    ka, kb = keyed_sides(ra, rb)
    for k in (ka, kb):
        k["status"] = _status(k)
        k["lat_w"], k["cmp_w"] = _spread(k, "latency_median_us"), _spread(k, "compile_s")
        k["mem_w"] = _spread(k, "peak_mem_alloc_bytes")
        k["res_w"] = _spread(k, "peak_mem_reserved_bytes")
        k["step_w"] = _spread(k, "peak_mem_step_bytes")
        k["lat_lo"], k["lat_hi"], k["lat_iv"] = latency_interval(k)
        cuda = k["device"].eq("cuda") if "device" in k else True  # the CPU: host and device are one
        k["hbound"] = host_bound_of(k).fillna(False).astype(bool) & cuda
    keep = ["source", "run_id", "variant", "compile", "family", "status", "reason", "_key",
            "latency_median_us", "lat_lo", "lat_hi", "lat_iv", "sp", "sp_lo", "sp_hi",
            "sp_kind", "compile_s", "kernels_per_step", "peak_mem_alloc_bytes",
            "peak_mem_step_bytes", "peak_mem_reserved_bytes", "res_w", "step_w", "lat_w",
            "cmp_w", "mem_w", "timing_phase", "device_time_us", "gpu_us_per_step", "pair_lead_in",
            "hbound", "host_us", "host_units", "host_gauge_us",
            *[c for c in CONFIG_KEY if c not in ("variant", "compile")], *AXES]  # fmt: skip
    out, seen_a, seen_b = [], set(), set()
    for sa, sb in pairs(ka, kb):
        xa = _one_per_key(ka[ka["source"] == sa])
        xb = _one_per_key(kb[kb["source"] == sb])
        # both sides with the same columns: one a side lacks (an older study) reads blank,
        # never unsuffixed from the other side
        cols = [c for c in keep if c in xa or c in xb]
        m = xa.reindex(columns=cols).merge(
            xb.reindex(columns=cols), on="_key", suffixes=("_a", "_b")
        )
        seen_a |= {(sa, k) for k in m["_key"]}
        seen_b |= {(sb, k) for k in m["_key"]}
        out.append(m)
    m = pd.concat(out, ignore_index=True) if out else pd.DataFrame()
    only_a = ka[[(s, k) not in seen_a for s, k in zip(ka["source"], ka["_key"], strict=True)]]
    only_b = kb[[(s, k) not in seen_b for s, k in zip(kb["source"], kb["_key"], strict=True)]]
    return judge(m), only_a, only_b


def _statuses(m: pd.DataFrame) -> None:
    """``lost``: ok in A, not in B (a regression); ``now_ok``: the other way round."""
    a = m["status_a"].fillna("").astype(str) if "status_a" in m else pd.Series("ok", m.index)
    b = m["status_b"].fillna("").astype(str) if "status_b" in m else pd.Series("ok", m.index)
    m["lost"] = (a == "ok") & (b != "ok")
    m["now_ok"] = (a != "ok") & (b == "ok")
    m["status_change"] = np.where(a != b, a + " → " + b, "")


def _off_phase(m: pd.DataFrame, side: str) -> pd.Series:
    """Cells whose timing on ``side`` comes from no fast host phase (mixed, slow, contended);
    rows without the column (older studies) are taken as they are."""
    col = f"timing_phase_{side}"
    if col not in m:
        return pd.Series(False, index=m.index)
    ph = m[col].astype(str).where(m[col].notna(), "")
    return (ph != "") & ~ph.str.split("/").apply(lambda xs: "fast" in xs)


def _contended(m: pd.DataFrame, side: str) -> pd.Series:
    """Cells whose ``side`` was timed while others ran on its cores (``timing_phase``)."""
    col = f"timing_phase_{side}"
    if col not in m:
        return pd.Series(False, index=m.index)
    ph = m[col].astype(str).where(m[col].notna(), "")
    return ph.str.split("/").apply(lambda xs: "contended" in xs)


def _memory(m: pd.DataFrame) -> tuple[pd.Series, pd.Series]:
    """Peak memory B/A (``memory``) and each side's spread (``mem_w_*``): the allocator's peak,
    or for a mode that replays CUDA graphs its reserved memory, where both sides have it (the
    allocator's peak leaves out the graph pool: v2 -> v3 read naive's reduce-overhead 49 -> 81
    MiB allocated, +65%, while reserved, pool and all, went 426 -> 459). Else the step's own
    peak (``peak_mem_step_bytes``) where both sides have it: the allocator's peak counts what
    earlier calls left allocated (v3's compiled cells: eager's 32 MiB cuBLAS workspace).
    Returns (up, down): past the threshold widened by both spreads, and by MEMORY_FLOOR_BYTES."""
    res_a, res_b = column(m, "peak_mem_reserved_bytes_a"), column(m, "peak_mem_reserved_bytes_b")
    reserved = m["compile"].astype(str).isin(GRAPHS) & res_a.notna() & res_b.notna()
    al_a, al_b = column(m, "peak_mem_alloc_bytes_a"), column(m, "peak_mem_alloc_bytes_b")
    step_a, step_b = column(m, "peak_mem_step_bytes_a"), column(m, "peak_mem_step_bytes_b")
    step = ~reserved & step_a.notna() & step_b.notna() & (step_a > 0)
    m["memory"] = (al_b / al_a).where(~step, step_b / step_a).where(~reserved, res_b / res_a)
    m["memory_bytes"] = (al_b - al_a).where(~step, step_b - step_a).where(~reserved, res_b - res_a)
    for side in ("a", "b"):
        w = m[f"mem_w_{side}"].where(~step, m[f"step_w_{side}"])
        m[f"mem_w_{side}"] = w.where(~reserved, m[f"res_w_{side}"])
    mem_t = MEMORY + m["mem_w_a"] + m["mem_w_b"]
    big = m["memory_bytes"].abs().fillna(np.inf) >= MEMORY_FLOOR_BYTES
    return big & (m["memory"] > 1 + mem_t), big & (m["memory"] < 1 - mem_t)


def judge(m: pd.DataFrame) -> pd.DataFrame:
    """Ratios B/A and the flags: regression (no longer ok; or worse beyond threshold + own
    interval, and for latency beyond the noise of both sides), improved, within noise."""
    if m.empty:
        return m
    _statuses(m)
    for c in ("variant", "compile", "family"):
        m[c] = m[f"{c}_a"]
    for c in (*CONFIG_KEY, *AXES):
        if f"{c}_a" in m and c not in m:
            m[c] = m[f"{c}_a"]
    m["latency"] = column(m, "latency_median_us_b") / column(m, "latency_median_us_a")
    m["speedup"] = column(m, "sp_b") / column(m, "sp_a")
    m["compile_time"] = column(m, "compile_s_b") / column(m, "compile_s_a")
    mem_flags = _memory(m)  # (up, down): past the threshold, and by 1 MiB or more
    m["kernels"] = column(m, "kernels_per_step_b") - column(m, "kernels_per_step_a")
    lat_t = LATENCY + m["lat_w_a"] + m["lat_w_b"]
    cmp_t = COMPILE + m["cmp_w_a"] + m["cmp_w_b"]
    # A speedup with an interval is judged by its ends: B's top under 0.95x A's bottom.
    sp_a_lo = column(m, "sp_lo_a").fillna(column(m, "sp_a"))
    sp_b_hi = column(m, "sp_hi_b").fillna(column(m, "sp_b"))
    sp_a_hi = column(m, "sp_hi_a").fillna(column(m, "sp_a"))
    sp_b_lo = column(m, "sp_lo_b").fillna(column(m, "sp_b"))
    # Latency past its threshold counts only where the sides' intervals do not overlap.
    up, down = m["latency"] > 1 + lat_t, m["latency"] < 1 - lat_t
    above = column(m, "lat_lo_b") > column(m, "lat_hi_a")
    below = column(m, "lat_hi_b") < column(m, "lat_lo_a")
    # Timing from a slow or mixed host phase on either side is not compared: two
    # identical CPU quickstarts read +18% latency, 0.72x -> 0.61x, with B 99% slow-phase.
    host = (_off_phase(m, "a") | _off_phase(m, "b")) & _excusable(m)
    sp_worse, sp_better = sp_b_hi < SPEEDUP * sp_a_lo, sp_b_lo > sp_a_hi / SPEEDUP
    moved = up | down | sp_worse | sp_better
    m["within_noise"] = np.where(
        host & moved, "host phase", np.where((up & ~above) | (down & ~below), "latency", "")
    )
    flags = {
        "latency": (up & above & ~host, down & below & ~host),
        "speedup": (sp_worse & ~host, sp_better & ~host),
        "compile time": _compile_time(m, cmp_t),
        "peak memory": mem_flags, "host cost": _host_cost(m), **_host_proof(m, lat_t),
    }  # fmt: skip
    worse, better = [], []
    for i in range(len(m)):
        lost = [f"status ok → {m['status_b'].iloc[i] or '?'}"] if m["lost"].iloc[i] else []
        worse.append(", ".join(lost + [k for k, (w, _) in flags.items() if bool(w.iloc[i])]))
        better.append(", ".join(k for k, (_, b) in flags.items() if bool(b.iloc[i])))
    m["regressed"], m["improved"] = worse, better
    m["verdict"] = compare_gate.verdicts(m)
    # why: for every cell that moved past a threshold, or whose speedup intervals do not
    # overlap (flash 0.958x [0.95-0.96] -> 1.00x [1.00-1.00] is under 5%, and a verdict change)
    m["why"] = compare_causes.causes(
        m, moved | (sp_b_lo > sp_a_hi) | (sp_b_hi < sp_a_lo), (up & above) | (down & below)
    )
    return order(m).reset_index(drop=True)


def _compile_time(m: pd.DataFrame, cmp_t: pd.Series) -> tuple[pd.Series, pd.Series]:
    """(up, down) of compile time past its threshold. Compile time moves between processes
    too: under COMPILE_FLOOR_S it is not judged, nor where either side was contended (others
    ran on the cell's cores), by no more than HOST_PHASE: compiling is host work, and two
    identical CPU quickstarts on a busy host read the first's compile as "improved" in the
    second. Such a move is within noise, 'host phase'. A slow or mixed phase is the timed
    rounds', not the compile's, so it excuses no compile time."""
    big = (column(m, "compile_s_b") - column(m, "compile_s_a")).abs() > COMPILE_FLOOR_S
    up, down = big & (m["compile_time"] > 1 + cmp_t), big & (m["compile_time"] < 1 - cmp_t)
    r = m["compile_time"]  # what a busy host can cause: within HOST_PHASE either way
    busy = (_contended(m, "a") | _contended(m, "b")) & (r <= HOST_PHASE) & (r >= 1 / HOST_PHASE)
    quiet = m["within_noise"] == ""
    m["within_noise"] = m["within_noise"].where(~(quiet & busy & (up | down)), "host phase")
    return up & ~busy, down & ~busy


def _host_cost(m: pd.DataFrame) -> tuple[pd.Series, pd.Series]:
    """(up, down) of a call's host cost: host µs per call B/A where both sides ran at the same
    host speed (their ``host_gauge_us`` within ``HOST_SPEED``), else host units (host µs over the
    gauge's), which carry from one host to another better than µs do (benchmarks/README.md:
    a median 7% apart across three H200 machines, 8 of 38 cells beyond 15%). Sets ``host_cost`` (the ratio) and
    ``host_cost_by`` ("µs", "units", or "" where a side has none)."""
    speed = column(m, "host_gauge_us_b") / column(m, "host_gauge_us_a")
    same = (speed - 1).abs() <= HOST_SPEED
    us = column(m, "host_us_b") / column(m, "host_us_a")
    units = column(m, "host_units_b") / column(m, "host_units_a")
    m["host_cost"] = us.where(same, units)
    # hosts further apart than HOST_SLOWER: one side timed in a slow phase, where host time
    # scales slower than the gauge (G**0.6-0.8): said, not judged
    judged = (speed <= HOST_SLOWER) & (speed >= 1 / HOST_SLOWER)
    m["host_cost_by"] = np.where(
        m["host_cost"].isna(), "", np.where(same, "µs", np.where(judged, "units", "not judged"))
    )
    m["host_speed"] = speed
    return judged & (m["host_cost"] > 1 + HOST_COST), judged & (m["host_cost"] < 1 - HOST_COST)


def _host_proof(m: pd.DataFrame, lat_t: pd.Series) -> dict:
    """The flags judged whatever the host's phase: the host changes neither the kernels nor
    their own time (device time past the latency threshold, ``compare_causes.device_ratio``)."""
    dev = compare_causes.device_ratio(m)
    return {"kernels": (m["kernels"] > 0, m["kernels"] < 0),
            "device time": (dev > 1 + lat_t, dev < 1 - lat_t)}  # fmt: skip


def _excusable(m: pd.DataFrame) -> pd.Series:
    """Latency and speedup B/A within what a host phase can cause (HOST_PHASE), or unknown."""
    ok = pd.Series(True, index=m.index)
    for c in ("latency", "speedup"):
        x = m[c]
        ok &= x.isna() | ((x <= HOST_PHASE) & (x >= 1 / HOST_PHASE))
    return ok


def per_variant(m: pd.DataFrame) -> pd.DataFrame:
    if m.empty:
        return pd.DataFrame()
    rows = []
    for v, g in m.groupby("variant", sort=True):
        rows.append(
            {
                "variant": v,
                "cells": len(g),
                "latency B/A": geomean(g["latency"]),
                "speedup B/A": geomean(g["speedup"]),
                "compile time B/A": geomean(g["compile_time"]),
                "kernels B−A": g["kernels"].sum(),
                "peak memory B/A": geomean(g["memory"]),
                "regressions": int((g["verdict"] == "regressed").sum()),
                "improvements": int((g["verdict"] == "improved").sum()),
                "within noise": int((g["verdict"] == "within noise").sum()),
            }
        )
    return pd.DataFrame(rows)


def _pct(x) -> str:
    return "" if x != x else f"{'+' if x >= 1 else '−'}{sig(abs(x - 1) * 100, 2)}%"


def _arrows(a: pd.Series, b: pd.Series, unit: str = "") -> list[str]:
    """'A → B' per cell, '—' for a side without the number (a cell not ok there)."""

    def one(x) -> str:
        return "—" if x != x else f"{sig(x)}{unit}"

    return ["" if x != x and y != y else f"{one(x)} → {one(y)}"
            for x, y in zip(a.astype(float), b.astype(float), strict=True)]  # fmt: skip


def cell_table(m: pd.DataFrame) -> pd.DataFrame:
    if m.empty:
        return pd.DataFrame()
    srcs = m["source_a"] + np.where(m["source_a"] == m["source_b"], "", " → " + m["source_b"])
    out = pd.DataFrame({"source": srcs, "variant": m["variant"], "mode": m["compile"]})
    for c in SHAPE_KEYS:
        if c in m and m[c].nunique() > 1:
            out[c] = m[c].astype("Int64")
    for c in AXES:  # the axes the sweep crossed (start, compile_stance, regional, ...)
        if c in m and axis_values(m, c).nunique() > 1:
            out[c] = axis_values(m, c)
    out["latency µs A → B"] = _arrows(m["latency_median_us_a"], m["latency_median_us_b"])
    out["latency"] = m["latency"].map(_pct)
    out["speedup A → B"] = _arrows(m["sp_a"], m["sp_b"], "x")
    out["compile time"] = m["compile_time"].map(_pct)
    out["kernels"] = m["kernels"].map(lambda x: "" if x != x or x == 0 else f"{x:+g}")
    out["peak memory"] = m["memory"].map(_pct)
    if "host_cost" in m and m["host_cost"].notna().any():
        out["host cost"] = [
            "" if c != c else f"{_pct(c)} ({by}" + (f", host gauge {_pct(g)})" if by != "µs" else ")")
            for c, by, g in zip(m["host_cost"], m["host_cost_by"], m["host_speed"], strict=True)
        ]  # fmt: skip
    if "status_change" in m and (m["status_change"] != "").any():
        out["status A → B"] = m["status_change"]
    out["regressed"], out["improved"] = m["regressed"], m["improved"]
    if "within_noise" in m and (m["within_noise"] != "").any():
        out["within noise"] = [_noise(r) for _, r in m.iterrows()]
    if "why" in m and (m["why"] != "").any():
        out["why"] = m["why"]
    return out


def _noise(r) -> str:
    """'latency: A 85.0–120 µs (p10–p90), B 76.5–108 µs (p10–p90)' for a cell within noise."""
    if not r["within_noise"]:
        return ""
    if r["within_noise"] == "host phase":
        ph = [f"{x} {r.get(f'timing_phase_{k}') or 'fast'}" for x, k in (("A", "a"), ("B", "b"))]
        return f"host phase: {', '.join(ph)} (timing outside the fast phase is not compared)"
    side = [f"{x} {sig(r[f'lat_lo_{k}'])}–{sig(r[f'lat_hi_{k}'])} µs"
            + (f" ({r[f'lat_iv_{k}']})" if r[f"lat_iv_{k}"] else "")
            for x, k in (("A", "a"), ("B", "b"))]  # fmt: skip
    return f"latency: {', '.join(side)}"


def regressions(m: pd.DataFrame) -> pd.DataFrame:
    """The regressed cells, those no longer ok first."""
    if m.empty:
        return m
    reg = m[m["regressed"] != ""]
    return pd.concat([reg[reg["lost"]], reg[~reg["lost"]]])


def _count(m: pd.DataFrame, col: str) -> int:
    if not len(m) or col not in m:
        return 0
    return int(m[col].sum()) if m[col].dtype == bool else int((m[col] != "").sum())


def summary_line(m: pd.DataFrame, only_a, only_b) -> str:
    n = {k: int((m["verdict"] == k).sum()) if len(m) else 0 for k in compare_gate.BUCKETS}
    n_reg, n_imp, n_noise, n_now = n["regressed"], n["improved"], n["within noise"], n["now ok"]
    n_lost = _count(m, "lost")
    parts = [f"{len(m)} cells matched ({len(only_a)} only in A, {len(only_b)} only in B)"]
    if len(m):
        names = (("latency", "latency"), ("speedup", "speedup"),
                 ("compile_time", "compile time"), ("memory", "peak memory"))  # fmt: skip
        gm = [(name, geomean(m[col])) for col, name in names]
        parts.append("geomean B/A: " + ", ".join(
            f"{name} {sig(v)}x" if v == v else f"{name} n/a" for name, v in gm))  # fmt: skip
    parts.append(
        f"{n_reg} regression{'s' if n_reg != 1 else ''}"
        + (f" ({n_lost} no longer ok)" if n_lost else "")
        + f", {n_imp} improved, {n_noise} within noise"
        + (f", {n_now} now ok" if n_now else "")
        + "".join(f", {n[k]} {k}" for k in ("still not ok", "unchanged") if n[k])
    )
    if "autotune" in m:
        n_at = int(((m["autotune"] != "") & ~m["autotune_tie"]).sum())
        n_tie = int(((m["autotune"] != "") & m["autotune_tie"]).sum())
        if n_at or n_tie:
            parts.append(f"{n_at} cell{'s' if n_at != 1 else ''} with another autotune pick"
                         + (f", {n_tie} with a tie" if n_tie else ""))  # fmt: skip
    return "; ".join(parts) + "."


def _untold_line(a: pd.DataFrame, b: pd.DataFrame) -> str:
    """What the summary line adds for cells no column tells apart (``untold``), or nothing."""
    if not len(a) and not len(b):
        return ""
    return (f" {len(a)} cells of A and {len(b)} of B share their source and configuration with "
            "another cell, differing in no column both sides record: one of each such set "
            "compared (compare.md lists them).")  # fmt: skip


def _say_apart(m, only_a, only_b, same) -> tuple[pd.DataFrame, pd.DataFrame]:
    """``_apart`` on every row the gate may print (in place on ``m``; the cells only in A and
    only in B returned): for a cell that stands for several no column tells apart (``untold``,
    one of each set in ``same``), which side holds how many and what tells them apart."""
    a, b = (compare_gate.apart_lines(x, EXTRA_KEY, n) for x, n in zip(same, "AB", strict=True))
    if len(m):
        cols = ("source_a", "source_b", "_key", "run_id_a", "run_id_b")
        m["_apart"] = [a.get((sa, k, ra), "") + b.get((sb, k, rb), "")
                       for sa, sb, k, ra, rb in zip(*(m[c] for c in cols), strict=True)]  # fmt: skip

    def said(x: pd.DataFrame, by: dict) -> pd.DataFrame:
        keys = zip(x["source"], x["_key"], x["run_id"], strict=True)
        return x.assign(_apart=[by.get(k, "") for k in keys])

    return said(only_a, a), said(only_b, b)


def _md(df: pd.DataFrame) -> str:
    # deferred: matplotlib (report imports it; compare's text needs none)
    from analysis.report import md_table

    return md_table(df)


def build(a: str, b: str, out: Path | None) -> tuple[str, pd.DataFrame]:
    """(the summary line, the matched cells); writes the files into ``out`` unless None."""
    line, m, _, _, _ = compare(a, b, out)
    return line, m


def compare(
    a: str, b: str, out: Path | None
) -> tuple[str, pd.DataFrame, pd.DataFrame, pd.DataFrame, list[str]]:
    """``build``, with the cells only in A and only in B, and the suite's gate lines
    (``compare_suite``: each model that stopped running or regressed; none without suite
    rows)."""
    da, la = side(a)
    db, lb = side(b)
    m, only_a, only_b = match(da, db, every_status=True)
    if len(m):
        at = autotune_diff.changes(da, db, m)
        m["autotune"] = [x for x, _ in at]
        m["autotune_tie"] = [t for _, t in at]
        m = m.join(compare_causes.gpus(m, da, db))  # gpu_ columns where the sides' GPUs differ
    line = summary_line(m, only_a, only_b)
    same = [untold(k) for k in keyed_sides(*compare_gate.own_shape_keys(da["runs"], db["runs"]))]
    line += _untold_line(*same)
    only_a, only_b = _say_apart(m, only_a, only_b, same)
    env = []
    for lab, d in ((la, da), (lb, db)):
        r = d["runs"]
        tv = ", ".join(sorted({str(x) for x in r.get("torch_version", pd.Series()).dropna()}))
        dev = ", ".join(sorted({str(x) for x in r.get("device_name", pd.Series()).dropna()}))
        env.append(f"{lab}: {len(r)} cells, torch {tv or '?'}, {dev or '?'}")
    thresholds = RULE
    suite_md, suite_failed = compare_suite.section(da["runs"], db["runs"], m, _md)
    line += (" " + compare_suite.line(da["runs"], db["runs"])) if suite_md else ""
    md = ["# What changed: A → B", "", f"A = {env[0]}  ", f"B = {env[1]}", "", f"**{line}**", "",
          thresholds, "", *suite_md, "## Per variant (geometric means)", "", _md(per_variant(m)),
          "## Regressions", "", _md(cell_table(regressions(m)) if len(m) else m),
          "## Every matched cell", "", _md(cell_table(m))]  # fmt: skip
    md += _across(m)
    picks = m[m["autotune"] != ""] if "autotune" in m else m.iloc[0:0]
    if len(picks):
        t = cell_table(picks)[["source", "variant", "mode", "latency µs A → B", "kernels"]]
        t["what the benchmark read"] = picks["autotune"].to_numpy()
        md += ["## Autotune picks that changed", "",
               "Max-autotune kept another choice in B than in any repeat of the cell in A. If A's "
               "winner read slower in B and the torch is the same, the benchmark moved (host "
               "load, the GPU, a cell beside it), not the study's code. A tie: within "
               f"{autotune_diff.TIE:.0%} in B's benchmark.", "", _md(t)]  # fmt: skip
    for name, x in (("Only in A", only_a), ("Only in B", only_b),
                    ("Not told apart in A: one of each configuration compared", same[0]),
                    ("Not told apart in B: one of each configuration compared", same[1])):  # fmt: skip
        if len(x):
            md += [f"## {name}", "", _md(x[["source", "variant", "compile", "status", "run_id"]])]
    text = "\n".join(md) + "\n"
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
        (out / "compare.md").write_text(text)
        drop = [c for c in m.columns if c.startswith("_")]
        guarded(m.drop(columns=drop)).to_csv(out / "compare.csv", index=False)
        if len(m) and m["latency"].notna().any():  # a cell ok on both sides
            # deferred: matplotlib, only when there is a figure to draw
            from analysis.figures.compare import changes
            from analysis.style import save

            save(changes(m, la, lb)[0], out / "compare")
    return line, m, only_a, only_b, suite_failed


def _across(m: pd.DataFrame) -> list[str]:
    """compare.md's section on the cells whose sides ran on different GPUs; none without."""
    x = m[m["gpu_decided"].notna()] if "gpu_decided" in m else m.iloc[0:0]
    if not len(x):
        return []
    t = compare_causes.gpus_table(x, [_cell(r, m) for _, r in x.iterrows()])
    return ["## Across GPUs", "", compare_causes.GPUS_ABOUT, "", _md(t)]


def _cell(r, m: pd.DataFrame | None = None) -> str:
    """'part1: matmul_add (n=4096) · default': the pass, mask and shape keys that vary between
    the source's cells of that variant in ``m``, so v3's two matmul+bias sizes are told apart."""
    shape = ""
    if m is not None:
        same = m[(m["source_a"] == r["source_a"]) & (m["variant"] == r["variant"])]
        keys = [c for c in SHAPE_KEYS if c in m and same[c].nunique() > 1 and pd.notna(r[c])]
        shape = ", ".join(f"{c}={int(r[c])}" for c in keys)
        other = [c for c in ("pass", "mask") if c in m and same[c].nunique() > 1 and pd.notna(r[c])]
        other += [c for c in AXES if c in m and norm_value(r[c])
                  and axis_values(same, c).nunique() > 1]  # fmt: skip
        said = (f"{c}={norm_value(r[c]) if c in AXES else r[c]}" for c in other)
        shape = ", ".join([*said, *([shape] if shape else [])])
    return f"{r['source_a']}: {r['variant']}{f' ({shape})' if shape else ''} · {r['compile']}"


def first_words(reason, n: int = 100) -> str:
    """A reason's own words: its first line, without the advice CUDA appends to an error ('Search
    for `cudaError...' in https://... CUDA kernel errors might ...'), cut to ``n`` characters; or
    'no reason given'."""
    if not isinstance(reason, str) or not reason.strip():
        return "no reason given"
    first = reason.strip().splitlines()[0].split(" Search for `")[0]
    return first if len(first) <= n else first[: n - 1] + "…"


def _print_only(x: pd.DataFrame, where: str, n: int = 10) -> None:
    for _, r in x.head(n).iterrows():
        print(f"  {where}: {r['source']}: {r['variant']} · {r['compile']} ({r['status'] or '?'})"
              + r.get("_apart", ""))  # fmt: skip
    if len(x) > n:
        print(f"  {where}: {len(x) - n} more in compare.md")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m analysis.compare", description=__doc__.split("\n\n")[0], epilog=RULE
    )
    ap.add_argument("a", help="base: a sweep dir or results dir (DIR:SOURCE for one source)")
    ap.add_argument("b", help="new: the same")
    ap.add_argument("--out", help="where compare.md/.csv/.png go (default outputs/compare/<time>)")
    ap.add_argument("--fail-on-regression", action="store_true",
                    help="exit 1 if any regression, or any cell of A missing or not ok in B; "
                         "an unfinished sweep on either side exits 2")  # fmt: skip
    args = ap.parse_args(argv)
    out = Path(args.out) if args.out else (
        Path("outputs") / "compare" / dt.datetime.now().strftime("%Y-%m-%d_%H-%M-%S"))  # fmt: skip
    for arg, name in ((args.a, "A"), (args.b, "B")):
        if why := compare_gate.unfinished(arg):
            print(f"analysis.compare: {name} = {why}", file=sys.stderr)
            return 2
    try:
        check_out(out)
        line, m, only_a, only_b, suite_failed = compare(args.a, args.b, out)
    except FileNotFoundError as e:  # a path given that is no sweep (load.NotASweep), or none
        stop("compare", e)
    print(line)
    if "gpu_decided" in m:  # the sides ran on different GPUs
        print(compare_causes.gpus_line(m[m["gpu_decided"].notna()]))
    reg = regressions(m)
    for _, r in reg.iterrows():
        print(f"  regressed: {_cell(r, m)} ({r['regressed']}" + (
            f": {first_words(r.get('reason_b'))})" if r["lost"] else
            f"; latency {_pct(r['latency'])})") + r.get("_apart", "")
            + (f"; other GPU, decided by {r['gpu_decided']}" if pd.notna(r.get("gpu_decided"))
               else ""))  # fmt: skip
    for _, r in (m[m["now_ok"]] if len(m) else m).iterrows():
        print(f"  now ok: {_cell(r, m)} ({r['status_a'] or '?'} in A){r.get('_apart', '')}")
    failed = compare_gate.failures(m, only_a)  # every one said: each fails the gate
    failed += suite_failed  # by model: one that stopped running or regressed
    for f in failed:
        print(f"  {f}")
    _print_only(only_b, "only in B")
    picks = m[(m["autotune"] != "") & ~m["autotune_tie"]] if "autotune" in m else m.iloc[0:0]
    for _, r in picks.iterrows():
        print(f"  autotune: {_cell(r, m)}: {r['autotune']}")
    print(f"details: {out / 'compare.md'}")
    return 1 if args.fail_on_regression and (len(reg) or failed) else 0


if __name__ == "__main__":
    from analysis.cli import run  # deferred: a command's end, not the module's

    run(main)
