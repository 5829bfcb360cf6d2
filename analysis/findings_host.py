"""Compile effects against host effects (forward, paired): what a compiled call adds to or saves
from the host per call, beside what it changes on the device, and the rule that follows.

For each compiled cell where either side is host-bound (the GPU waits on the call's Python and
launches), from the paired rounds (eager and compiled in one process, in the same host phase):
eager µs a call ``E`` (the paired eager latency), compiled ``C = E / speedup``, and the device
time of each cell (``device_time_us``). The host time a compiled call adds is the latency it
adds less what it adds on the device: ``(C - E) - (dev_c - dev_e)``; negative, it saves host
time (fewer launches). A cell whose kernels and device time are unchanged (within
``SAME_DEVICE``) and that got slower is slower because of the host, and the table says so.

The rule: without CUDA graphs, a compiled call's host side is at least what it took in the
smallest host-bound cell whose device time did not change, so a cell with less GPU work per
call than that cannot get faster by compiling, and gets slower unless its kernels save more.
Figures not timed in the host's fast phase carry a ``*`` (their µs are a slower phase's), and
those of rows that record no phase (before v3) a ``?``. The rule uses fast-phase cells where
there are any.
Part of ``python -m analysis.findings``.
"""

from __future__ import annotations

import pandas as pd

from analysis import findings_compile
from analysis.findings_common import table
from analysis.measures import count, sig

SAME_DEVICE = 0.05  # device time within 5%: the kernels' work did not change
GRAPHS = {"reduce-overhead", "max-autotune", "cudagraphs"}  # modes that replay CUDA graphs
# Inductor without CUDA graphs: the compiled wrapper the rule is about (not Dynamo's or
# AOTAutograd's layers alone, which targets measure apart)
WRAPPERS = {"default", "max-autotune-no-cudagraphs", "cpp_wrapper"}


def frame(runs: pd.DataFrame) -> pd.DataFrame:
    """One row per compiled forward cell with a paired speedup where either side is
    host-bound: E, C, device times, host µs added, and whether the device time is unchanged."""
    rs = pd.DataFrame(findings_compile.rows(runs))
    if rs.empty or "eager_us" not in rs:
        return pd.DataFrame()
    rs = rs[(rs["pass"] == "fwd") & (rs["sp_kind"] == "paired") & rs["eager_us"].notna()].copy()
    ehb = rs["eager_hb"].fillna(False).astype(bool) if "eager_hb" in rs else False
    rs = rs[rs["host_bound"].astype(bool) | ehb]
    if rs.empty:
        return rs
    rs["C"] = rs["eager_us"] / rs["sp"]
    dev_c = pd.to_numeric(rs["device_time_us"], errors="coerce")
    dev_e = pd.to_numeric(rs["eager_dev"], errors="coerce")
    rs["dev_c"], rs["dev_e"] = dev_c, dev_e
    rs["host_us"] = (rs["C"] - rs["eager_us"]) - (dev_c - dev_e)
    rs["same_device"] = ((dev_c / dev_e - 1).abs() <= SAME_DEVICE) & (
        rs["kernels_per_step"] == rs["eager_kernels"]
    )
    rs["phase"] = rs.get("timing_phase", pd.Series("", rs.index)).fillna("").astype(str)
    rs["fast"] = rs["phase"] == "fast"
    return rs


def _star(x) -> str:
    """'' in the fast phase, '*' in another, '?' where the row records no phase (before v3)."""
    return "" if x["fast"] else "?" if x["phase"] in ("", "nan") else "*"


def cause(x) -> str:
    if x["verdict"] == "slower" and x["same_device"]:
        return "slower: the host (same kernels, same device time)"
    if x["verdict"] == "slower" and x["dev_c"] > x["dev_e"] * (1 + SAME_DEVICE):
        return "slower: the device too" + (" (CUDA graphs' copies)" if x["mode"] in GRAPHS else "")
    if x["verdict"] == "slower":  # fewer kernels, less device time, and still slower
        return "slower: the host (its device time fell)"
    if x["verdict"] == "faster" and x["host_us"] < 0:
        return "faster: fewer launches save host time"
    return x["verdict"]


def section(data: dict) -> list[str]:
    rs = frame(data["runs"])
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
            f"{x['host_us']:+.1f}{_star(x)}",
            cause(x),
        ]  # fmt: skip
        for _, x in rs.iterrows()
    ]
    out = [
        "",
        "Compile effects against host effects (forward, cells host-bound on either side; paired "
        "rounds: eager and compiled in one process, same host phase; host µs a call = the "
        "latency compiling adds less what it adds on the device; * = not timed in the host's "
        "fast phase, so its µs are a slower phase's; ? = the row records no phase):",
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
    return out + ["", rule(rs)]


def rule(rs: pd.DataFrame) -> str:
    """'Without CUDA graphs, a compiled call costs the host about X µs more than eager ...'."""
    plain = rs[rs["mode"].isin(WRAPPERS) & rs["same_device"] & rs["host_bound"].astype(bool)]
    if plain.empty:
        return (
            "No cell gives the rule: none is host-bound under Inductor without CUDA graphs with "
            "its kernels and device time unchanged."
        )
    fast = plain[plain["fast"]]
    use = fast if len(fast) else plain
    star = "" if len(fast) else "*"  # not from the fast phase (or no phase recorded)
    # where both sides are host-bound, latency is host time on both: the wrapper's whole cost
    both = use[use["eager_hb"].fillna(False).astype(bool)] if "eager_hb" in use else use[:0]
    added = both["host_us"] if len(both) else use["host_us"]
    small = use.loc[use["dev_c"].idxmin()]  # the least GPU work: its latency is host time
    return (
        f"The rule, Inductor without CUDA graphs ({', '.join(sorted(set(use['mode'])))}): where "
        "compiling leaves the kernels and device time as they were, a compiled call costs the "
        f"host {sig(added.min())}–{sig(added.max())}{star} µs more than eager's dispatch "
        f"(median {sig(added.median())}{star}, {len(added)} cells"
        + (", both sides host-bound" if len(both) else "")
        + f"), and its host side took {sig(small['C'])}{star} µs a call in "
        f"{small['label']} {small['mode']}, whose GPU work is {sig(small['dev_c'])} µs. So a "
        f"cell with under about {sig(small['C'])} µs of GPU work a call is host-bound when "
        "compiled, and gets slower unless its kernels save more than the added host time; CUDA "
        "graphs replace that host side with one graph launch, whose copies then show on the "
        "device."
        + (" (*: from rows not timed in the host's fast phase, or recording none.)" if star else "")
    )
