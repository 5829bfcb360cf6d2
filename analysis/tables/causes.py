"""The answer at a glance: per compiled cell, the verdict, its interval, the one cause the rows
support, and the figure that shows it. The report opens with this (``analysis.report``).

The verdict is ``study.observe.stats.verdict`` on the speedup the report uses (``measures.
speedups``: paired where measured), with the paired noise band of ``measures.PAIRED_NOISE``
read as no measurable difference too. The cause is the first of these the rows support:

- **graphs**: a CUDA-graph mode that did not win, with ``Memcpy DtoD`` kernels in its
  kernels.csv (the graph's input copies);
- **host**: on the GPU, the compiled call's host time (``host_us``) outlasts its device time
  (``study.rows.metrics.device_us``): host-bound, so the kernels cannot carry the speedup
  (rows without ``host_us``: inferred from latency against the profiler's busy time, and said so); a call
  whose kernel time fell by more than ``DEVICE`` yet did not speed up; or a win where eager was
  host-bound and compiling cut the host's work (``eager_host_us`` → ``host_us``);
- **fusion**: fewer kernels per step than eager, or a win with kernels Inductor fused (removed
  and fused, ``analysis.tables.kdiff``), with the kernel time each side;
- **autotune**: a max-autotune mode with ``autotune.csv`` rows: what it picked;
- **kernels**: the same kernels, and what their time did.

On the CPU host and device are one (``host_us`` is blank): the cause reads kernel time against
latency. Kernel time (docs/method.md) comes from profiled steps, which the profiler slows
(``profiler_overhead``): where a side's profile is distorted (``_distorted``) the sentence says
so and draws no conclusion from the kernel times.
Pure pandas; no torch.
"""

from __future__ import annotations

import pandas as pd

from analysis.measures import (
    GRAPHS,
    PAIRED_NOISE,
    host_verdict,
    number,
    order,
    sig,
    xs,
)
from analysis.shown import paired_us, with_shown
from analysis.style import cell_labels
from analysis.tables import kdiff
from study.observe.stats import verdict as stats_verdict
from study.rows.metrics import HOST_OVER_LATENCY, device_us

DEVICE = 0.05  # kernel time moved by more than this: the kernels' own work changed
# a CPU profile whose steps ran this many times a timed call is distorted (docs/method.md)
DISTORTED = 1.5
# the figure (analysis.figures key) that shows each cause
FIGURE = {
    "graphs": "kernel_diff",
    "host": "cpu_vs_gpu",
    "fusion": "kernel_diff",
    "autotune": "speedup",
    "kernels": "kernel_diff",
    "none": "speedup",
}


def verdict(row) -> str:
    """faster, slower, no measurable difference, or 'no interval' (a cross-process ratio of one
    process each: nothing to judge it by)."""
    sp, lo, hi = (number(row.get(k)) for k in ("sp", "sp_lo", "sp_hi"))
    if sp != sp:
        return ""
    if lo != lo or hi != hi:
        return "no interval"
    if lo >= 1 - PAIRED_NOISE and hi <= 1 + PAIRED_NOISE:
        return "no measurable difference"
    return stats_verdict(sp, lo, hi)


def interval(row) -> str:
    """'0.792x (95% CI 0.539–1.04)', or the ratio alone, saying it has no interval."""
    sp, lo, hi = (number(row.get(k)) for k in ("sp", "sp_lo", "sp_hi"))
    if sp != sp:
        return ""
    if lo != lo or hi != hi:
        return f"{xs(sp)} latency ratio, separate processes"
    what = "95% CI" if row.get("sp_kind") == "paired" else "over repeats"
    return f"{xs(sp)} ({what} {sig(lo)}–{sig(hi)})"


def _us(v) -> str:
    return f"{sig(v)} µs" if v == v else "?"


def _dtod(k: pd.DataFrame) -> tuple[float, float]:
    """Memcpy DtoD kernels per step and their µs per step in one cell's kernels."""
    if k.empty or "kernel" not in k:
        return 0.0, 0.0
    d = k[k["kernel"].astype(str).str.contains("Memcpy DtoD", regex=False)]
    calls = pd.to_numeric(d.get("calls_per_step"), errors="coerce").sum() if len(d) else 0.0
    us = pd.to_numeric(d.get("us_per_step"), errors="coerce").sum() if len(d) else 0.0
    return float(calls), float(us)


def _picks(t: pd.DataFrame) -> str:
    """'mm: triton_mm (12.1 µs), addmm: extern_addmm (3.20 µs)', the winners of one cell."""
    if t.empty or "winner" not in t:
        return ""
    w = t[t["winner"].astype(str).str.lower().isin(("true", "1", "1.0"))]
    w = w.drop_duplicates([c for c in ("op_id", "op") if c in w]).to_dict("records")
    said = ", ".join(
        f"{x.get('op')}: {x.get('choice')} ({_us(number(x.get('time_us')))})" for x in w[:3]
    )
    return said + (f" and {len(w) - 3} more ops" if len(w) > 3 else "")


def _host(c, e, hc, he, dc, de, won, tc, te) -> str:
    """The host's part on the GPU, or '': a compiled call that did not win and is host-bound
    (``host_us`` > device time; rows without host_us: ``measures.host_verdict``, latency against
    the profiler's busy time), or whose kernel time fell while the call did not speed up; a win
    where eager was host-bound and compiling cut the host's work."""
    if won:
        if he == he and de == de and he > de and hc == hc and hc < he:
            return (f"the host: eager was host-bound ({_us(he)} host against {_us(de)} device a "
                    f"call); compiled, the host takes {_us(hc)}")  # fmt: skip
        return ""
    lat = number(c.get("latency_median_us"))
    waited = hc == hc and lat == lat and hc > HOST_OVER_LATENCY * lat  # no verdict (metrics)
    if hc == hc and dc == dc and hc > dc and not waited:
        return (f"host-bound: the compiled call's host work ({_us(hc)}) outlasts its device "
                f"time ({_us(dc)}), so faster kernels cannot show")  # fmt: skip
    bound = host_verdict(pd.DataFrame([c])).iloc[0]
    if hc != hc and bound is True and tc == tc:
        return (f"host-bound: {_us(lat)} a call against {_us(tc)} of kernel time (inferred from "
                "latency: these rows have no host_us)")  # fmt: skip
    if tc == tc and te == te and tc < (1 - DEVICE) * te:
        return (f"the host: kernel time fell ({_us(te)} eager → {_us(tc)} compiled), yet the "
                f"call did not speed up ({_us(lat)} a call)")  # fmt: skip
    return ""


def _distorted(e: dict, c: dict, te: float, tc: float) -> str:
    """'' unless a side's profile is distorted (docs/method.md, "Kernel time"): its kernel time
    exceeds its latency, or on the CPU (where kernels are the host's own work) its profiled
    steps ran ``DISTORTED`` times a timed call or more (``profiler_overhead``). Then the words
    that say so, and the cause draws nothing from the kernel times."""
    slowed = []
    for x, t in ((e, te), (c, tc)):
        lat = number(x.get("latency_median_us"))
        over = number(x.get("profiler_overhead"))
        cpu_slowed = str(x.get("device")) == "cpu" and over == over and over >= DISTORTED
        if (t == t and lat == lat and t > lat) or cpu_slowed:
            slowed.append(over if over == over else t / lat)
    if not slowed:
        return ""
    return (f"the profile is distorted (its steps ran {sig(max(slowed))}x a timed call): no "
            "conclusion from its kernel times")  # fmt: skip


def _kernel_time(x, diff: dict | None = None, side: str = "") -> float:
    """Kernel time (docs/method.md): the kernels' durations in a profiled step summed, mean over
    the profiled steps, as the kernel diff adds it up (``diff``: its ``us_eager`` or
    ``us_compiled``, by ``side``); without one, the row's ``kernel_us_per_step`` (the median
    step), else its busy time (older rows)."""
    t = number((diff or {}).get(f"us_{side}"))
    for col in ("kernel_us_per_step", "gpu_us_per_step"):
        t = t if t == t else number(x.get(col))
    return t


def cause(c: dict, e: dict, diff: dict, kern: pd.DataFrame, tune: pd.DataFrame, said: str):
    """(kind, sentence) for compiled cell ``c`` against its eager twin ``e``: ``diff`` is its
    kdiff summary row (empty when kernels.csv lacks it), ``kern`` and ``tune`` its own
    kernels.csv and autotune.csv rows, ``said`` its verdict."""
    cpu = str(c.get("device")) == "cpu"
    won = said == "faster"
    ke, kc = number(e.get("kernels_per_step")), number(c.get("kernels_per_step"))
    te, tc = _kernel_time(e, diff, "eager"), _kernel_time(c, diff, "compiled")
    distorted = _distorted(e, c, te, tc)
    if distorted:  # nothing is read from kernel times the profiler inflated
        te = tc = float("nan")
    hc, he = number(c.get("host_us")), number(c.get("eager_host_us"))
    if he != he:
        he = number(e.get("host_us"))
    dc, de = number(device_us(c)), number(device_us(e))  # free of host time
    dc, de = (tc if dc != dc else dc), (te if de != de else de)
    times = distorted or f"kernel time {_us(te)} eager → {_us(tc)} compiled"
    n, us = _dtod(kern)
    if str(c.get("compile")) in GRAPHS and n > 0 and not won:
        return "graphs", (f"CUDA graphs' copies: {n:g} Memcpy DtoD per step ({_us(us)}) copy the "
                          f"inputs into the graph; {times}")  # fmt: skip
    if not cpu:
        host = _host(c, e, hc, he, dc, de, won, tc, te)
        if host:
            return "host", host
    counts = f"kernels {ke:g} → {kc:g} per step"
    if diff:
        counts += f" ({diff['n_removed']:g} removed, {diff['n_fused']:g} fused)"
    fused = bool(diff) and diff.get("n_fused", 0) > 0
    if ke == ke and kc == kc and (kc < ke or (won and fused)):
        if won:
            return "fusion", f"fusion: {counts}; {times}"
        if distorted:
            return "fusion", f"fusion cut {counts}, yet the call is not faster; {times}"
        if tc > te or tc != tc or te != te:
            return "fusion", f"fusion did not pay: {counts}, yet {times}"
        return "fusion", (f"fusion cut {counts} and {times}, yet the call is not faster: on the "
                          "CPU host and device are one, so the time goes to the compiled call's "
                          "own work around its kernels")  # fmt: skip
    picks = _picks(tune)
    if str(c.get("compile")).startswith("max-autotune") and picks:
        return "autotune", f"autotune's pick: {picks}; {times}"
    if ke != ke or kc != kc:
        return "none", "no kernels profiled: the rows hold no cause"
    same = f"{'same' if kc == ke else 'more'} kernels ({ke:g} → {kc:g} per step)"
    note = f"; {distorted}" if distorted else ""
    if said == "no measurable difference":
        one = "; on the CPU host and device are one" if cpu else ""
        return "kernels", f"nothing to explain: {same} and no measurable difference{one}{note}"
    if cpu:
        return "kernels", (f"{same}, so not fusion; on the CPU host and device are one: the "
                           "difference is the compiled call's own work around the same kernels "
                           f"(Dynamo's guards, the compiled wrapper){note}")  # fmt: skip
    return "kernels", f"{same}; {times}"


def per_call(c, e) -> str:
    """µs a call beside the speedup: from the compiled cell's own paired blocks where it has
    them (the same process and rounds as its speedup, so the two never disagree), else each
    cell's own latency, said to be from separate cells."""
    both = paired_us(c)
    if both:
        apart = f"; {c['apart']}" if c.get("apart") else ""
        return f"{sig(both[0])} eager → {sig(both[1])} compiled (paired blocks{apart})"
    return (f"{sig(e['latency_median_us'])} eager → {sig(c['latency_median_us'])} compiled "
            "(separate cells)")  # fmt: skip


def answer(runs: pd.DataFrame, kernels: pd.DataFrame, autotune: pd.DataFrame) -> pd.DataFrame:
    """One row per ok compiled cell with a speedup, in reading order: ``cell``, ``verdict``,
    ``speedup`` (with its interval), ``µs a call`` (its eager twin's and its own, so each cell of
    a quickstart shows), ``cause_kind``, ``cause``, ``figure`` (a key of
    ``analysis.figures.FIGURES``), ``source``, ``run_id``."""
    cols = ["cell", "verdict", "speedup", "µs a call", "cause", "cause_kind", "figure", "source",
            "run_id"]  # fmt: skip
    if runs.empty or "compile" not in runs:
        return pd.DataFrame(columns=cols)
    r = with_shown(runs)
    if "source" not in r:
        r["source"] = ""
    r = r.assign(cell=cell_labels(r))
    summ, _ = kdiff.diff(r, kernels) if not kernels.empty else (pd.DataFrame(), None)
    diffs = {(x["source"], x["run_id"]): x for x in summ.to_dict("records")} if len(summ) else {}
    out = []
    ok = r[(r["status"] == "ok") & (r["compile"] != "off") & r["sp"].notna()]
    key = kdiff.key(r)  # once: eager_twin's fallback for every cell
    for _, c in order(ok).iterrows():
        e = kdiff.eager_twin(r, c, key)
        if e is None:
            continue
        said = verdict(c)
        mine = (
            kernels[(kernels["source"] == c["source"]) & (kernels["run_id"] == c["run_id"])]
            if len(kernels) and "source" in kernels
            else pd.DataFrame()
        )
        tune = (
            autotune[autotune["run_id"] == c["run_id"]]
            if len(autotune) and "run_id" in autotune
            else pd.DataFrame()
        )
        if len(tune) and "source" in tune:
            tune = tune[tune["source"] == c["source"]]
        kind, text = cause(
            c.to_dict(), e.to_dict(), diffs.get((c["source"], c["run_id"]), {}), mine, tune, said
        )
        phase = str(c.get("timing_phase") or "fast")
        shown = said if phase in ("fast", "nan") else f"{said} (host {phase})"
        out.append({"cell": c["cell"], "verdict": shown, "speedup": interval(c),
                    "µs a call": per_call(c, e), "cause": text,
                    "cause_kind": kind, "figure": FIGURE[kind], "source": c["source"],
                    "run_id": c["run_id"]})  # fmt: skip
    return pd.DataFrame(out, columns=cols)
