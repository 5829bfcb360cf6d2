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
(``analysis.slowdown.slow_cause``) is slower because of the host, and the table says so. A CUDA-graph
mode's own host side (its graph's bookkeeping) is set against the wrapper's after the rule.

The rule, over every cell host-bound on both sides under Inductor without CUDA graphs (those
that kept eager's kernels said apart, each a cell named, never one cell for all): what a
compiled call adds to eager's dispatch (``C - E``, a range, its median and how many cells), and
the host time a call over every forward cell host-bound when compiled, of any source
(``host_side``: flex too, which has no eager twin): a cell with less GPU work per call than that is
host-bound when compiled, and gets slower unless its kernels save more than the added host time.
Figures not timed in the host's fast phase carry a ``*`` (their µs are a slower phase's), and
those of rows that record no phase (before v3) a ``?``; the rule uses fast-phase cells where
there are any. Part of ``python -m reference.findings``.
"""

# Long: the table, the rule over every host-bound cell and the CUDA-graph comparison share
# frame() and its marks; apart they would pass the same frame around three modules.
from __future__ import annotations

import pandas as pd

from analysis.measures import GRAPHS, WRAPPERS, column, count, sig
from analysis.pairs import device_pair, host_bound, table
from analysis.slowdown import kernels_changed, latencies, slow_cause
from reference.findings.speed import forward

# WRAPPERS (analysis.measures): Inductor without CUDA graphs, the compiled wrapper the rule is
# about (not Dynamo's or AOTAutograd's layers alone, which targets measure apart)


def frame(runs: pd.DataFrame, every: pd.DataFrame | None = None) -> pd.DataFrame:
    """One row per compiled forward cell with a paired speedup where either side is
    host-bound (the chosen row's own verdict, ``_hb``, and its eager twin's): E, C, device
    times, the host µs a call (with ``kind``: =, >= or <=)."""
    rs = every.copy() if every is not None else pd.DataFrame(forward.rows(runs))
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
    if x["verdict"] == "slower":  # analysis.slowdown decides, as for the compile table
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
    every = pd.DataFrame(forward.rows(data["runs"]))  # once: the table and near()
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
        "Compile effects against host effects, inferred from latency (the reference rows "
        "measured no host time: the measured figures are under Host cost measured; forward, "
        "cells host-bound on either side; paired "
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
                "host µs a call, inferred",
                "cause",
            ],
            body,
        ),  # fmt: skip
    ]
    out += ["", rule(rs, data["runs"])]
    edge = near(data["runs"], every)
    return out + (["", edge] if edge else [])


def near(runs: pd.DataFrame, every: pd.DataFrame | None = None) -> str:
    """The slower forward cells under Inductor's wrappers that are not host-bound by the 10%
    rule on either side, yet run eager's kernels in eager's device time (timed with the
    lead-in): their GPU work a call is about the wrapper's host side, so the GPU waits on the
    host part of the time (``analysis.slowdown.host_only``)."""
    rs = every if every is not None else pd.DataFrame(forward.rows(runs))
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
        f"{x['label']} {x['mode']} {forward.sp_text(x)} "
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


def host_side(runs: pd.DataFrame) -> pd.DataFrame:
    """Every forward cell host-bound when compiled under Inductor without CUDA graphs, of any
    source (flex included, which has no eager twin): its latency is its host time a call. The
    fast-phase cells where there are any; ``star`` marks the others."""
    r = runs[(runs["status"] == "ok") & runs["compile"].isin(WRAPPERS)]
    r = r[(r["pass"] == "fwd") if "pass" in r else r.index == r.index]
    if "device" in r:
        r = r[r["device"] == "cuda"]
    r = r[host_bound(r)].copy()
    if r.empty:
        return r
    r["C"] = column(r, "latency_median_us")
    r["dev"] = column(r, "device_time_us")
    phase = r.get("timing_phase", pd.Series("", r.index)).fillna("").astype(str)
    fast = r[phase == "fast"]
    return fast.assign(star="") if len(fast) else r.assign(star="*")


def rule_figures(rs: pd.DataFrame, runs: pd.DataFrame | None = None) -> dict | None:
    """The rule's figures for the README's summary: ``n``/``added`` (range of C - E and its
    median over the cells host-bound on both sides), ``m``/``host`` (range of the host time a
    call over every host-bound compiled cell), ``star``; None where no cell gives it."""
    if rs.empty:
        return None
    both = rs[rs["mode"].isin(WRAPPERS) & (rs["kind"] == "=")]
    if both.empty:
        return None
    use, star = _rule_cells(both)
    a = use["host_us"]
    side = host_side(runs) if runs is not None else pd.DataFrame()
    h = side["C"] if len(side) else use["C"]
    return {"n": len(use), "added": _signed(a.min(), a.max(), ""), "median": f"{a.median():+.1f}",
            "m": len(h), "host": _range(h.min(), h.max(), ""), "star": star}  # fmt: skip


def rule(rs: pd.DataFrame, runs: pd.DataFrame | None = None) -> str:
    """What a compiled call's host side costs under Inductor without CUDA graphs: over every
    cell host-bound on both sides (C - E, a range and its median, with the ones that kept
    eager's kernels apart), and the host time a call over every cell host-bound compiled; a
    range over named cells, never one cell's figure."""
    both = rs[rs["mode"].isin(WRAPPERS) & (rs["kind"] == "=")]
    if both.empty:
        return (
            "No cell gives the rule: none is host-bound on both sides under Inductor without "
            "CUDA graphs."
        )
    use, star = _rule_cells(both)
    added = use["host_us"]
    cells = ", ".join(f"{x['label']} {x['mode']} {x['host_us']:+,.1f}" for _, x in use.iterrows())
    same = use[use["same_kernels"]]
    kept = (
        f"; the {len(same)} that kept eager's kernel count "
        f"({', '.join(x['label'] + ' ' + x['mode'] for _, x in same.iterrows())}): "
        f"{_signed(same['host_us'].min(), same['host_us'].max(), star)} µs"
        if len(same) and len(same) < len(use)
        else ""
    )
    side = host_side(runs) if runs is not None else pd.DataFrame()
    took = ""
    if len(side):
        s = side["star"].iloc[0]
        h, d = side["C"], side["dev"]
        took = (
            f" Over all {len(side)} forward cells host-bound when compiled this way (every "
            f"source; flex included), a call's host time (its latency) was "
            f"{_range(h.min(), h.max(), s)} µs (median {sig(h.median())}{s}) for "
            f"{_range(d.min(), d.max(), s)} µs of device time: "
            + ", ".join(f"{_name(x)} {sig(x['C'])}/{sig(x['dev'])}" for _, x in side.iterrows())
            + " (host/device µs)."
        )
    return (
        f"Inferred from latency, Inductor without CUDA graphs, over the {len(use)} cell(s) "
        "host-bound on both "
        f"sides ({cells}): a compiled call's host time against eager's dispatch ranged "
        f"{_signed(added.min(), added.max(), star)} µs (median {added.median():+.1f}{star})"
        f"{kept}. It grows with the launches a call makes and shrinks with the ones compile "
        "fuses away, so it is no constant: a cell with less GPU work a call than its compiled "
        "host time is host-bound when compiled, and gets slower unless its kernels save more "
        "than the added host time."
        + took
        + graphs_text(rs, use[use["same_kernels"]] if len(same) else use)
        + (" (*: from rows not timed in the host's fast phase, or recording none.)" if star else "")
    )


def _name(x) -> str:
    """'linear default', 'flex default (sliding_window, 1024)': a cell in the host-side list."""
    extra = [str(x[k]) for k in ("mask",) if k in x and isinstance(x[k], str) and x[k]]
    seq = x.get("seq_len")
    if x.get("family") == "attention" and seq == seq and seq is not None:
        extra.append(f"{int(float(seq))}")
    src = f" `{x['source']}`" if isinstance(x.get("source"), str) else ""
    return f"{x['variant']} {x['compile']}" + (f" ({', '.join(extra)})" if extra else "") + src


def _signed(lo: float, hi: float, star: str) -> str:
    """'-657 to +41.0' (a range whose ends may differ in sign), '+20.5' for one figure."""
    a, b = f"{'+' if lo >= 0 else '-'}{sig(abs(lo))}", f"{'+' if hi >= 0 else '-'}{sig(abs(hi))}"
    return f"{a}{star}" if a == b else f"{a} to {b}{star}"


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
