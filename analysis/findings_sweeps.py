"""The same cell in two sweeps: where a compiled cell's paired speedup was measured in more than
one source (v3: part3 and targets, part3_bwd and targets_bwd), do the intervals agree, and where
they do not, why. Part of ``python -m analysis.findings``.

A cell whose host side is about as long as its GPU work sits at the line: a slower host makes it
host-bound and its speedup follows the host's speed. v3 on the H200: flash fwd_bwd under
`default` read 0.976x in part3_bwd (the host's fast level 11.5 µs) and 0.814x in targets_bwd
(13.2 µs), with the same 438 µs of GPU work a step. Each interval covers its own processes, not
the other sweep's host, so a claim on such a cell names the host it holds on.
"""

from __future__ import annotations

import pandas as pd

from analysis.findings_causes import DEVICE_NOISE
from analysis.findings_common import SHAPE_COLS, host_bound, sp_text, with_eager
from analysis.measures import number, sig


def _gpu(x) -> float:
    """The compiled step's GPU work: the trace's busy time a step, else its device time."""
    g = number(x.get("gpu_us_per_step"))
    return g if g == g else number(x.get("device_time_us"))


def _phase(x: dict) -> str:
    """The timing phase, '' where the row predates the gauge."""
    p = x.get("timing_phase")
    return p if isinstance(p, str) else ""


def _lead_in(x: dict) -> bool:
    lead = number(x.get("pair_lead_in"))
    return lead == lead and lead > 0


def cause(a: dict, b: dict) -> str:
    """Why ``b`` (the lower speedup) differs from ``a``, first that the rows show: the timing
    (one row before the lead-in fix), the device (GPU work moved), a slow phase, the host (the
    same GPU work, the lower one host-bound), or nothing."""
    if _lead_in(a) and not _lead_in(b) and not b.get("_hb"):
        return (
            f"the timing: `{b['source']}` predates the lead-in fix (its GPU-bound pairs read low)"
        )
    ga, gb = _gpu(a), _gpu(b)
    ea, eb = number(a.get("eager_gpu")), number(b.get("eager_gpu"))
    moved = [  # only a move that lowers b's speedup: compiled's work up, or eager's down
        f"{who} {sig(p)} → {sig(q)} µs"
        for who, p, q, up in (("compiled", ga, gb, 1), ("eager", ea, eb, -1))
        if p == p and q == q and up * (q / p - 1) > DEVICE_NOISE
    ]
    if moved:
        return "the device: GPU work a step " + ", ".join(moved)
    slow = [x["source"] for x in (a, b) if _phase(x) not in ("fast", "")]
    if slow:
        return f"a slow phase: `{'` and `'.join(slow)}` timed outside the host's fast phase"
    la, lb = number(a.get("latency_median_us")), number(b.get("latency_median_us"))
    fa, fb = number(a.get("gauge_fast_us")), number(b.get("gauge_fast_us"))
    if b.get("_hb") and la == la and lb == lb:
        level = fa == fa and fb == fb
        host = f"its fast level {sig(fa)} → {sig(fb)} µs ({fb / fa:.2f}x), " if level else ""
        return (
            f"the host: {host}the compiled step {lb / la:.2f}x as long ({sig(la)} → {sig(lb)} "
            f"µs), host-bound in `{b['source']}` (GPU work {sig(ga)} → {sig(gb)} µs)"
        )
    return "unexplained by the rows (the same GPU work, no slow phase recorded, not host-bound)"


def pairs(runs: pd.DataFrame) -> tuple[int, list[tuple[dict, dict]]]:
    """(how many compiled cells have paired speedups in two sources or more, the source pairs
    whose 95% intervals do not overlap: (higher, lower))."""
    m = with_eager(runs)
    m = m[(m["sp_kind"] == "paired") & m["sp_lo"].notna() & m["sp_hi"].notna()]
    if m.empty or "source" not in m:
        return 0, []
    m = m.assign(_hb=host_bound(m))
    keys = ["variant", "pass", "compile", *[c for c in SHAPE_COLS if c in m]]
    keys += ["mask"] if "mask" in m else []
    k = m[keys].astype(object).where(m[keys].notna(), "-").astype(str).agg("|".join, axis=1)
    n, out = 0, []
    for _, g in m.groupby(k, sort=True):
        if g["source"].nunique() < 2:
            continue
        n += 1
        xs = sorted(g.to_dict("records"), key=lambda x: -x["sp"])
        out += [
            (a, b)
            for i, a in enumerate(xs)
            for b in xs[i + 1 :]
            if b["source"] != a["source"] and b["sp_hi"] < a["sp_lo"]
        ]
    return n, out


def section(data: dict) -> list[str]:
    n, differ = pairs(data["runs"])
    if not n:
        return []
    head = (
        f"The same cell in two sweeps: {n} compiled cell(s) have a paired speedup in more than "
        f"one source; {n - len({_name(a) for a, _ in differ})} agree (their 95% intervals "
        "overlap)"
    )
    if not differ:
        return ["", head + "."]
    return [
        "",
        head + ", and these do not: each interval covers its own processes on its own host, "
        "so a claim on such a cell holds for the host it names:",
        "",
        *(
            f"- {_name(a)}: {sp_text(a)} in `{a['source']}`, {sp_text(b)} in `{b['source']}`; "
            f"{cause(a, b)}."
            for a, b in differ
        ),
    ]


def _name(x: dict) -> str:
    shape = ", ".join(
        f"{c} {x[c]:g}" if isinstance(x[c], float) else f"{c} {x[c]}"
        for c in ("n", "seq_len")
        if c in x and x[c] is not None and x[c] == x[c] and x["variant"] != "block"
    )
    return f"{x['variant']} {x['pass']} {x['compile']}" + (f" ({shape})" if shape else "")
