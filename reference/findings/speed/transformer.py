"""The transformer block (the sources of role ``block``: ``block``, ``block_bwd``): what compile fused across a whole
pre-norm block, and its paired speedup for each pass in all five modes. Part of
``python -m reference.findings``; the kernel diff is ``analysis.tables.kdiff``'s.
"""

from __future__ import annotations

import pandas as pd

from analysis.measures import MODES, count, sig
from analysis.pairs import ok, table, verdict, with_eager
from reference import sources
from reference.findings.base.common import needs, of, sp_text, spread_text

PASSES = {s: sources.BY_NAME[s].pass_ for s in sources.names("block")}  # block: fwd, ...
FORWARD = sources.one("block", pass_="fwd")


def section(data: dict) -> list[str]:
    runs = ok(of(data["runs"], *PASSES))
    if runs.empty:
        fwd, *bwd = PASSES
        return needs("The transformer block", f"`{fwd}` (and {sources.quoted(bwd, 'and')})")
    x = runs.iloc[0]
    dims = ", ".join(f"{k} {int(x[k])}" for k in ("batch", "seq_len", "dim", "hidden", "heads")
                     if k in x and pd.notna(x[k]))  # fmt: skip
    out = [
        "",
        f"The transformer block (pre-norm: LayerNorm, attention, LayerNorm, MLP; {dims}), "
        "kernels per step and paired speedup [95% interval] per pass "
        f"(sources {', '.join(f'`{s}`' for s in PASSES if s in set(runs['source']))}):",
        "",
    ]
    comp = with_eager(runs)
    head, rows = ["mode"], []
    srcs = [s for s in PASSES if s in set(runs["source"])]
    for s in srcs:
        p = PASSES[s]
        head += [f"{p} kernels", f"{p} latency µs", f"{p} speedup", f"{p} verdict"]
    for m in MODES:
        row, seen = [m], False
        for s in srcs:
            e = runs[(runs["source"] == s) & (runs["compile"] == m)]
            c = comp[(comp["source"] == s) & (comp["compile"] == m)]
            if e.empty:
                row += ["", "", "", ""]
                continue
            seen = True
            x = e.iloc[0]
            sp = c.iloc[0].to_dict() if len(c) else {}
            spread = spread_text(sp) if sp else ""
            row += [count(x["kernels_per_step"]), sig(x["latency_median_us"]),
                    (sp_text(sp) + (f" ({spread})" if spread else "")) if sp else "",
                    verdict(sp) if sp else ("eager" if m == "off" else "")]  # fmt: skip
        if seen:
            rows.append(row)
    out += table(head, rows)
    return out + fused(runs, data["kernels"])


def fused(runs: pd.DataFrame, kernels: pd.DataFrame) -> list[str]:
    """Eager → compiled (default, forward): the kernels removed, and the generated ones with the
    aten ops each fuses."""
    r = runs[runs["source"] == FORWARD]
    k = of(kernels, FORWARD)
    if r.empty or k.empty:
        return []
    from analysis.tables import kdiff  # imports the plotting style: only when a block is there

    summary, detail = kdiff.diff(r, k)
    if summary.empty:
        return []
    s = summary[summary["compile"] == "default"]
    s = s.iloc[0] if len(s) else summary.iloc[0]
    d = detail[detail["run_id"] == s["run_id"]]
    removed = d[d["change"] == "removed"]
    gen = d[d["change"] == "fused"]
    rem = ", ".join(f"`{x['kernel']}` ×{count(x['calls eager'])}" for _, x in removed.iterrows())
    fus = "; ".join(
        f"`{x['kernel']}` ({x['fused ops']})" if isinstance(x["fused ops"], str) and x["fused ops"]
        else f"`{x['kernel']}`"
        for _, x in gen.iterrows()
    )  # fmt: skip
    return [
        "",
        f"- What compile fused across the block ({s['compile']}, forward): "
        f"{count(s['kernels_eager'])} → {count(s['kernels_compiled'])} kernels per forward; "
        f"removed {count(s['n_removed'])} eager launches ({rem or 'none'}); "
        f"{count(s['n_fused'])} generated ({fus or 'none'})"
        + (f"; {count(s['n_added'])} added, not generated" if s["n_added"] else "")
        + _device(r, s),
    ]


def _device(r: pd.DataFrame, s) -> str:
    """The speed claim from device time (``device_time_us``: a CUDA-graph replay of the step,
    the figure the paired speedup agrees with), and the trace's kernel sums beside it, called
    what they are: kernel sums overlap and leave out the gaps, so their ratio is not the speedup
    (the block's 724 -> 518 µs of kernel sums read 1.40x against 1.12x of device time and the
    paired 1.14x)."""
    dev = pd.to_numeric(r.set_index("compile")["device_time_us"], errors="coerce")
    how = r.set_index("compile").get("device_time_method")
    kern = f"sum of the trace's kernel durations a step {sig(s['us_eager'])} → " \
           f"{sig(s['us_compiled'])} µs ({s['us_eager'] / s['us_compiled']:.2f}x; kernels.csv)"  # fmt: skip
    m = s["compile"]
    lat = pd.to_numeric(r.set_index("compile")["latency_median_us"], errors="coerce")
    if "off" in lat and lat["off"] == lat["off"] and s["us_eager"] > lat["off"]:
        kern += (f"; eager's sum exceeds its whole timed call ({sig(lat['off'])} µs): the "
                 "profiled step ran slower than the timed ones (the profiler perturbs it), so "
                 "the sums are a perturbed trace's")  # fmt: skip
    if "off" not in dev or m not in dev or not (dev["off"] == dev["off"] and dev[m] == dev[m]):
        return f". No device time recorded; {kern}."
    method = f", {how[m]}" if how is not None and isinstance(how[m], str) else ""
    return (
        f". Device time a step {sig(dev['off'])} → {sig(dev[m])} µs "
        f"({dev['off'] / dev[m]:.2f}x{method}); {kern}."
    )
