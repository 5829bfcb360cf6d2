"""The same cell in two sweeps: where a compiled cell's paired speedup was measured in more than
one source (v3: part3 and targets, part3_bwd and targets_bwd), do the intervals agree, and where
they do not, why. Part of ``python -m reference.findings``.

A cell whose host side is about as long as its GPU work sits at the line: a slower host makes it
host-bound and its speedup follows the host's speed. v3 on the H200: flash fwd_bwd under
`default` read 0.976x in part3_bwd (the host's fast level 11.5 µs) and 0.814x in targets_bwd
(13.2 µs), with the same 438 µs of GPU work a step. Each interval covers its own processes, not
the other sweep's host, so a claim on such a cell names the host it holds on.
"""

from __future__ import annotations

import pandas as pd

from analysis.measures import PAIRED_NOISE, number, sig
from analysis.pairs import SHAPE_COLS, host_bound, with_eager
from analysis.slowdown import DEVICE_NOISE, DEVICE_SHARE
from reference.findings.base.common import sp_text


def _phase(x: dict) -> str:
    """The timing phase, '' where the row predates the gauge."""
    p = x.get("timing_phase")
    return p if isinstance(p, str) else ""


def _lead_in(x: dict) -> bool:
    lead = number(x.get("pair_lead_in"))
    return lead == lead and lead > 0


def _work(a: dict, b: dict, col: str) -> tuple[float, float]:
    """Both rows' GPU work a step by one measure: the trace's busy time where both have it,
    else the device time where both have it, else NaN."""
    pre = "eager_" if col == "eager" else ""
    for name in ("gpu", "dev") if pre else ("gpu_us_per_step", "device_time_us"):
        p, q = number(a.get(pre + name)), number(b.get(pre + name))
        if p == p and q == q:
            return p, q
    return float("nan"), float("nan")


def cause(a: dict, b: dict) -> str:
    """Why ``b`` (the lower speedup) differs from ``a``, first that the rows show: the timing
    (b made before the lead-in fix, GPU-bound), the device (GPU work that lowers b's speedup:
    compiled's up by enough to carry a share of its latency, or eager's down), a slow phase on
    b's side, the host (b's compiled cell host-bound), or nothing."""
    if _lead_in(a) and not _lead_in(b) and not b.get("_hb"):
        return (
            f"the timing: `{b['source']}` predates the lead-in fix (its GPU-bound pairs read low)"
        )
    ga, gb = _work(a, b, "compiled")
    ea, eb = _work(a, b, "eager")
    la, lb = number(a.get("latency_median_us")), number(b.get("latency_median_us"))
    moved = []
    rise = gb - ga
    if rise > DEVICE_NOISE * ga and not (lb - la > 0 and rise < DEVICE_SHARE * (lb - la)):
        moved.append(f"compiled {sig(ga)} → {sig(gb)} µs")
    if ea - eb > DEVICE_NOISE * ea:
        moved.append(f"eager {sig(ea)} → {sig(eb)} µs")
    if moved:
        return "the device: GPU work a step " + ", ".join(moved)
    if _phase(b) not in ("fast", ""):
        both = _phase(a) not in ("fast", "")
        return (
            "a slow phase: both timed outside the host's fast phase, so neither is a full-speed "
            "figure"
            if both
            else f"a slow phase: `{b['source']}` timed outside the host's fast phase"
        )
    work = f"GPU work {sig(ga)} → {sig(gb)} µs" if ga == ga else "GPU work not recorded"
    if b.get("_hb") and la == la and lb == lb:
        fa, fb = number(a.get("gauge_fast_us")), number(b.get("gauge_fast_us"))
        slower = fa == fa and fb == fb and fb > fa
        host = f"its fast level {sig(fa)} → {sig(fb)} µs ({fb / fa:.2f}x), " if slower else ""
        return (
            f"not its device time: {host}the compiled step {lb / la:.2f}x as long ({sig(la)} → "
            f"{sig(lb)} µs), its latency over 1.1x its device time in `{b['source']}` ({work})"
        )
    return f"unexplained by the rows ({work}, no slow phase on its side, latency within 1.1x its device time)"


def _keys(m: pd.DataFrame) -> list[str]:
    keys = ["variant", "pass", "compile", *[c for c in SHAPE_COLS if c in m]]
    return keys + (["mask"] if "mask" in m else [])


def pairs(runs: pd.DataFrame) -> tuple[int, list[tuple[dict, dict]]]:
    """(how many compiled cells have paired speedups in two sources or more, the source pairs
    that disagree: 95% intervals apart and the lower more than PAIRED_NOISE below the higher:
    (higher, lower), each with ``_name`` set)."""
    m = with_eager(runs)
    m = m[(m["sp_kind"] == "paired") & m["sp_lo"].notna() & m["sp_hi"].notna()]
    if m.empty or "source" not in m:
        return 0, []
    m = m.assign(_hb=host_bound(m))
    keys = _keys(m)
    k = m[keys].astype(object).where(m[keys].notna(), "-").astype(str).agg("|".join, axis=1)
    m = m.assign(_k=k)
    n, out = 0, []
    for _, g in m.groupby("_k", sort=True):
        if g["source"].nunique() < 2:
            continue
        n += 1
        xs = sorted(g.to_dict("records"), key=lambda x: -x["sp"])
        for i, a in enumerate(xs):
            for b in xs[i + 1 :]:
                apart = b["sp_hi"] < a["sp_lo"] and b["sp"] < a["sp"] * (1 - PAIRED_NOISE)
                if b["source"] != a["source"] and apart:
                    name = _name(a, m)
                    out.append(({**a, "_name": name}, {**b, "_name": name}))
    return n, out


def _name(x: dict, m: pd.DataFrame) -> str:
    """'flash fwd_bwd default', with the shape keys (and mask) that vary among the variant's
    cells of that pass in these rows."""
    same = m[(m["variant"] == x["variant"]) & (m["pass"] == x["pass"])]
    keys = [c for c in [*SHAPE_COLS, "mask"] if c in same and same[c].nunique() > 1]
    shape = ", ".join(
        f"{c} {x[c]:g}" if isinstance(x[c], float) else f"{c} {x[c]}"
        for c in keys
        if x.get(c) is not None and x[c] == x[c]
    )
    return f"{x['variant']} {x['pass']} {x['compile']}" + (f" ({shape})" if shape else "")


def section(data: dict) -> list[str]:
    n, differ = pairs(data["runs"])
    if not n:
        return []
    head = (
        f"The same cell in two sweeps: {n} compiled cell(s) have a paired speedup in more than "
        f"one source; {n - len({a['_k'] for a, _ in differ})} agree (their 95% intervals "
        f"overlap, or sit within {PAIRED_NOISE:.0%} of each other)"
    )
    apart = len({a["_k"] for a, _ in differ})
    if not differ:
        return ["", head + "."]
    return [
        "",
        head + f", and {apart} do not, in these {len(differ)} pairs of sources: each interval "
        "covers its own processes on its own host, so a claim on such a cell holds for the host "
        "it names:",
        "",
        *(
            f"- {a['_name']}: {sp_text(a)} in `{a['source']}`, {sp_text(b)} in "
            f"`{b['source']}`; {cause(a, b)}."
            for a, b in differ
        ),
    ]
