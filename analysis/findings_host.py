"""Compile effects against host effects (forward, paired): what a compiled call adds to or saves
from the host per call, beside what it changes on the device, and the rule that follows.

For each compiled cell where either side is host-bound (the GPU waits on the call's Python and
launches), from the paired rounds (eager and compiled in one process, in the same host phase):
eager µs a call ``E`` (the paired eager latency), compiled ``C = E / speedup``, and each cell's
device time. A host-bound call's latency is its host time (the GPU works while the host still
launches, hidden under it), so the host time a compiled call adds is:

- ``C - E`` where both sides are host-bound;
- at least ``C - E`` where only the compiled call is (eager's host time is at most ``E``);
- at most ``C - E`` where only eager is (compiled's host time is at most ``C``): a saving of at
  least ``E - C``.

A slower cell whose device time rose by less than a quarter of the latency it added
(``findings_causes.slow_cause``) is slower because of the host, and the table says so. A CUDA-graph
mode's own host side (its graph's bookkeeping) is set against the wrapper's after the rule.

The rule, from the cells host-bound on both sides under Inductor without CUDA graphs with
eager's kernels: what a compiled call adds to eager's dispatch (``C - E``), and what its host
side takes (``C``, a range over those cells): a cell with less GPU work per call than that is
host-bound when compiled, and gets slower unless its kernels save more than the added host time.
Figures not timed in the host's fast phase carry a ``*`` (their µs are a slower phase's), and
those of rows that record no phase (before v3) a ``?``; the rule uses fast-phase cells where
there are any. Part of ``python -m analysis.findings``.
"""

from __future__ import annotations

import pandas as pd

from analysis import findings_compile
from analysis.findings_causes import kernels_changed, latencies, slow_cause
from analysis.findings_common import device_pair, table
from analysis.measures import GRAPHS, count, sig

# Inductor without CUDA graphs: the compiled wrapper the rule is about (not Dynamo's or
# AOTAutograd's layers alone, which targets measure apart)
WRAPPERS = {"default", "max-autotune-no-cudagraphs", "cpp_wrapper"}


def frame(runs: pd.DataFrame, every: pd.DataFrame | None = None) -> pd.DataFrame:
    """One row per compiled forward cell with a paired speedup where either side is
    host-bound (the chosen row's own verdict, ``_hb``, and its eager twin's): E, C, device
    times, the host µs a call (with ``kind``: =, >= or <=)."""
    rs = every.copy() if every is not None else pd.DataFrame(findings_compile.rows(runs))
    if rs.empty or "eager_us" not in rs:
        return pd.DataFrame()
    rs = rs[(rs["pass"] == "fwd") & (rs["sp_kind"] == "paired") & rs["eager_us"].notna()].copy()
    rs["chb"] = rs["_hb"].fillna(False).astype(bool)
    rs["ehb"] = rs["eager_hb"].fillna(False).astype(bool) if "eager_hb" in rs else False
    rs = rs[rs["chb"] | rs["ehb"]]
    if rs.empty:
        return rs
    rs["C"] = rs["eager_us"] / rs["sp"]
    pairs = [device_pair(x) for _, x in rs.iterrows()]
    rs["dev_c"] = [c for c, _ in pairs]
    rs["dev_e"] = [e for _, e in pairs]
    rs["host_us"] = rs["C"] - rs["eager_us"]
    rs["kind"] = [
        "=" if c and e else ">=" if c else "<=" for c, e in zip(rs["chb"], rs["ehb"], strict=True)
    ]
    rs["same_kernels"] = rs["kernels_per_step"] == rs["eager_kernels"]
    rs["phase"] = rs.get("timing_phase", pd.Series("", rs.index)).fillna("").astype(str)
    rs["fast"] = rs["phase"] == "fast"
    return rs


def _star(x) -> str:
    """'' in the fast phase, '*' in another, '?' where the row records no phase (before v3)."""
    return "" if x["fast"] else "?" if x["phase"] in ("", "nan") else "*"


def host_text(x) -> str:
    """'+55.3', '≥ +55.3' or '≤ -1,137.0' (with the phase mark)."""
    if x["host_us"] != x["host_us"]:
        return ""
    sign = {"=": "", ">=": "≥ ", "<=": "≤ "}[x["kind"]]
    return f"{sign}{x['host_us']:+,.1f}{_star(x)}"


def cause(x) -> str:
    if x["dev_c"] != x["dev_c"] or x["dev_e"] != x["dev_e"]:
        return f"{x['verdict']} (device time not recorded)"
    if x["verdict"] == "slower":  # findings_causes decides, as for the compile table
        why = slow_cause(x)
        if why.startswith("the device"):
            return "slower: the device too" + why.removeprefix("the device")
        changed = kernels_changed(x)  # None: a count is missing, and nothing is said
        return "slower: the host" + (
            "" if changed is None else " (its kernels changed)" if changed else " (same kernels)"
        )
    if x["verdict"] == "faster" and x["host_us"] < 0 and x["ehb"]:
        return "faster: fewer launches save host time"
    return x["verdict"]


def section(data: dict) -> list[str]:
    every = pd.DataFrame(findings_compile.rows(data["runs"]))  # once: the table and near()
    rs = frame(data["runs"], every)
    if rs.empty:
        return []
    body = [
        [
            x["label"],
            x["mode"],
            x["source"],
            f"{count(x['eager_kernels'])} → {count(x['kernels_per_step'])}",
            f"{sig(x['dev_e'])} → {sig(x['dev_c'])}",
            f"{sig(x['eager_us'])} → {sig(x['C'])}{_star(x)}",
            host_text(x),
            cause(x),
        ]  # fmt: skip
        for _, x in rs.iterrows()
    ]
    out = [
        "",
        "Compile effects against host effects (forward, cells host-bound on either side; paired "
        "rounds: eager and compiled in one process, same host phase; a host-bound call's latency "
        "is its host time, so host µs a call = compiled latency − eager's where both are "
        "host-bound, at least that (≥) where only the compiled call is, at most (≤) where only "
        "eager is; device µs = a CUDA-graph replay's where both sides have one, else the trace's GPU busy time a step; * = not timed in the host's fast phase, so its µs are a slower phase's; ? = "
        "the row records no phase):",
        "",
        *table(
            [
                "variant",
                "mode",
                "source",
                "kernels eager → compiled",
                "device µs eager → compiled",
                "latency µs eager → compiled",
                "host µs a call",
                "cause",
            ],
            body,
        ),  # fmt: skip
    ]
    out += ["", rule(rs)]
    edge = near(data["runs"], every)
    return out + (["", edge] if edge else [])


def near(runs: pd.DataFrame, every: pd.DataFrame | None = None) -> str:
    """The slower forward cells under Inductor's wrappers that are not host-bound by the 10%
    rule on either side, yet run eager's kernels in eager's device time (timed with the
    lead-in): their GPU work a call is about the wrapper's host side, so the GPU waits on the
    host part of the time (``findings_causes.host_only``)."""
    rs = every if every is not None else pd.DataFrame(findings_compile.rows(runs))
    if rs.empty or "host_only" not in rs:
        return ""
    hb = rs["_hb"].fillna(False).astype(bool)
    ehb = rs["eager_hb"].fillna(False).astype(bool) if "eager_hb" in rs else False
    edge = rs[
        (rs["pass"] == "fwd")
        & rs["mode"].isin(WRAPPERS)
        & (rs["verdict"] == "slower")
        & rs["host_only"].fillna(False).astype(bool)
        & ~hb
        & ~ehb
    ]
    if edge.empty:
        return ""
    cells = "; ".join(
        f"{x['label']} {x['mode']} {findings_compile.sp_text(x)} "
        f"({sig(device_pair(x)[0])} µs on the device against eager's {sig(device_pair(x)[1])}, "
        f"+{latencies(x)[0] - latencies(x)[1]:.1f} µs a call: {sig(latencies(x)[1])} → "
        f"{sig(latencies(x)[0])})"
        for _, x in edge.iterrows()
    )
    return (
        "At the line, the host costs a little without making a cell host-bound (latency within "
        "10% of its GPU time): as many kernels as eager in the same device time, yet slower a "
        f"call, because the GPU now waits on the host part of the time: {cells}."
    )


def _rule_cells(both: pd.DataFrame) -> tuple[pd.DataFrame, str]:
    """The cells the rule uses (fast-phase ones where there are any) and their mark."""
    fast = both[both["fast"]]
    return (fast, "") if len(fast) else (both, "*")  # * not from the fast phase (or none said)


def rule_figures(rs: pd.DataFrame) -> tuple[str, str, str] | None:
    """(added µs, host side µs, mark) of the rule as ranges, e.g. ('36.3–40.3', '56.3–59.0',
    ''), for the README's summary; None where no cell gives the rule."""
    if rs.empty:
        return None
    both = rs[rs["mode"].isin(WRAPPERS) & (rs["kind"] == "=") & rs["same_kernels"]]
    if both.empty:
        return None
    use, star = _rule_cells(both)
    a, h = use["host_us"], use["C"]
    return _range(a.min(), a.max(), ""), _range(h.min(), h.max(), ""), star


def rule(rs: pd.DataFrame) -> str:
    """What a compiled call's host side costs, from the cells host-bound on both sides under
    Inductor without CUDA graphs with eager's kernels; a range, never one cell's figure."""
    both = rs[rs["mode"].isin(WRAPPERS) & (rs["kind"] == "=") & rs["same_kernels"]]
    if both.empty:
        return (
            "No cell gives the rule: none is host-bound on both sides under Inductor without "
            "CUDA graphs with eager's kernels."
        )
    use, star = _rule_cells(both)
    added, host = use["host_us"], use["C"]
    cells = ", ".join(f"{x['label']} {x['mode']}" for _, x in use.iterrows())
    return (
        f"The rule, Inductor without CUDA graphs, from the {len(use)} cell(s) host-bound on both "
        f"sides with eager's kernels ({cells}): a compiled call costs the host "
        f"{sig(added.min())}–{sig(added.max())}{star} µs more than eager's dispatch (median "
        f"{sig(added.median())}{star}), and its host side took {sig(host.min())}–"
        f"{sig(host.max())}{star} µs a call. So a cell with less GPU work a call than that is "
        "host-bound when compiled, and gets slower unless its kernels save more than the added "
        "host time."
        + graphs_text(rs, use)
        + (" (*: from rows not timed in the host's fast phase, or recording none.)" if star else "")
    )


def graphs_text(rs: pd.DataFrame, wrapper: pd.DataFrame) -> str:
    """What CUDA graphs' host side took, from the graph-mode cells host-bound on both sides,
    against the wrapper's of the same variant (``wrapper``: the cells the rule uses): a replay
    saves launches, but its own bookkeeping (CUDA graph trees: checking and copying inputs into
    the graph's buffers) is host time too."""
    g = rs[rs["mode"].isin(GRAPHS) & (rs["kind"] == "=") & rs["label"].isin(wrapper["label"])]
    if g.empty:
        return ""
    fast = g[g["fast"]]
    use = fast if len(fast) else g
    star = "" if len(fast) else "*"
    w = wrapper[wrapper["label"].isin(use["label"])]["C"]
    lo, hi = use["C"].min(), use["C"].max()
    cells = ", ".join(f"{x['label']} {x['mode']}" for _, x in use.iterrows())
    took = _range(lo, hi, star)
    against = _range(w.min(), w.max(), "")
    return (
        f" Under CUDA graphs ({cells}) a call's host side took {took} µs, against {against} "
        "without them"
        + (
            ": for calls this small the graph's own bookkeeping (checking and copying inputs "
            "into its buffers) costs more host time than the launches it saves."
            if lo > w.max()
            else ": the replay saves launches."
            if hi < w.min()
            else "."
        )
        + (" (*: not timed in the host's fast phase.)" if star else "")
    )


def _range(lo: float, hi: float, star: str) -> str:
    return f"{sig(lo)}{star}" if sig(lo) == sig(hi) else f"{sig(lo)}–{sig(hi)}{star}"
