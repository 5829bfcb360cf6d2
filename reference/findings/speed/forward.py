"""What torch.compile changes at the blog's shapes (forward): one row per variant, shape and
mode, set against the eager cell of the same sweep; the paired speedup with its 95% interval
where measured, and when compiling pays for itself. Part of ``python -m reference.findings``.
"""

from __future__ import annotations

import pandas as pd

from analysis.measures import MODES, PAIRED_NOISE, count, sig
from analysis.pairs import NOISE, host_bound, table, verdict, with_eager
from analysis.slowdown import host_only, kernels_changed, lead_in_artefact
from reference import sources
from reference.findings.base.common import HOST_FREE, blog_shapes, cause, sp_text, spread_text
from study.rows import metrics

# Where each variant's compiled rows are taken from, best first: the experiment that covers it,
# then the earlier sweeps. One row per variant, shape and mode: the first source that has it.
PRIORITY = list(sources.blog_forward())
# Sources with a section of their own (and shapes of their own).
OWN = set(sources.names("block", "masks", "dynamic"))


def _shape_label(r, varying) -> str:
    return ", ".join(f"{k}={int(r[k])}" for k in varying if k in r and pd.notna(r[k]))


WIDE = 2.0  # a payback range wider than this (most over fewest calls) is not quoted


def _calls(x, sp) -> float | None:
    gain = x["eager_us"] - x["eager_us"] / sp if sp and sp == sp else 0.0
    return x["compile_s"] * 1e6 / gain if gain > 0 else None


def _payback(x) -> tuple[float, float | None] | None:
    """Calls until the compile time is repaid, as (fewest, most) over the speedup's interval
    (most None: the interval reaches 1, so it may never be repaid); a speedup without an
    interval gives (calls, calls). Only for a compiled cell that is faster."""
    if x["verdict"] not in ("faster",):
        return None
    if x["sp_kind"] == "paired":
        best = _calls(x, x.get("sp_hi") if x.get("sp_hi") == x.get("sp_hi") else x["sp"])
        if best is None:
            return None
        lo = x.get("sp_lo")
        return best, (_calls(x, lo) if lo == lo and lo is not None else best)
    calls = metrics.payback_calls(x["compile_s"], x["eager_lat"], x["latency_median_us"])
    return None if calls is None else (calls, calls)


def payback_text(pay) -> str:
    """'2,229–2,410' (fewest–most calls over the interval), '2,229' (one figure), or, where
    the range spans more than WIDE, why it is not quoted."""
    if pay is None:
        return ""
    few, most = pay
    if most is None:
        return "may never pay back (its interval reaches 1x)"
    if most > WIDE * few:
        return f"range over {WIDE:g}x, not quoted"
    few, most = _3(few), _3(most)  # three figures: the interval leaves no more
    return f"{few:,.0f}" if most == few else f"{few:,.0f}–{most:,.0f}"


def _3(x: float) -> float:
    return float(f"{x:.3g}")


def verdict_text(x: dict) -> str:
    """The verdict, saying "not its device time" where ``slow_cause`` names the host: a side's
    latency over its device time, or the same kernels timed with the lead-in, and a device time
    that rose by less than a quarter of the latency added (no host time is measured in these
    rows, so no host-bound claim is made from them). Where the kernels changed it says so (v3's matmul n=64
    under `default` on the H200: 2 kernels fused into 1, 4.4 → 2.4 µs on the device, 22 → 43 µs
    a call; Linear under CUDA graphs: 2.7 → 6.9 µs on the device, +66 µs a call). And the
    timing, where a GPU-bound row predates the lead-in fix."""
    if x["verdict"] == "slower" and lead_in_artefact(x):
        return "slower by v2's timing only (no lead-in; same kernels and device time)"
    if x["verdict"] == "slower" and cause(x) == HOST_FREE:
        return f"slower: {HOST_FREE}" + (" (its kernels changed)" if kernels_changed(x) else "")
    return x["verdict"]


def rows(runs: pd.DataFrame) -> list[dict]:
    """One dict per (variant, shape, mode): the first source of PRIORITY that has it, with the
    same comparison in every other source that has it."""
    r = runs[~runs["source"].isin(OWN)]
    comp = with_eager(blog_shapes(r))
    if comp.empty:
        return []
    comp["_src"] = comp["source"].map(lambda s: PRIORITY.index(s) if s in PRIORITY else 99)
    comp["_hb"] = host_bound(comp)
    comp = comp.sort_values("_src", kind="stable")
    cols = [c for c in ("n", "batch", "in_features", "out_features", "seq_len", "dim", "hidden",
                        "heads", "head_dim") if c in comp]  # fmt: skip
    every = []
    for _, x in comp.iterrows():
        mine = r[(r["source"] == x["source"]) & (r["variant"] == x["variant"])]
        mine = blog_shapes(mine)
        varying = [c for c in cols if mine[c].nunique() > 1]
        x = x.to_dict()
        x["verdict"] = verdict(x)
        x["host_only"] = host_only(x)
        every.append(
            {
                **x,
                "key": (
                    x["variant"],
                    tuple(x[c] if pd.notna(x[c]) else None for c in cols),
                    x["compile"],
                ),
                "label": x["variant"] + (f" ({_shape_label(x, varying)})" if varying else ""),
                "mode": x["compile"],
                "payback": _payback(x),
                "host_bound": bool(x["_hb"]),
            }
        )
    out = []
    for key in dict.fromkeys(x["key"] for x in every):
        same = [x for x in every if x["key"] == key]
        out.append(
            {
                **same[0],
                "elsewhere": ", ".join(f"{sp_text(x)} `{x['source']}`" for x in same[1:]),
                "all": [x["sp"] for x in same],
                "host_bound": any(x["host_bound"] for x in same),
            }
        )
    mode_i = {m: i for i, m in enumerate(MODES)}
    out.sort(key=lambda x: (x["label"], mode_i.get(x["mode"], 99)))
    return out


def section(data: dict) -> list[str]:
    rs = rows(data["runs"])
    if not rs:
        return []
    paired = any(x["sp_kind"] == "paired" for x in rs)
    repeated = any(spread_text(x) for x in rs)
    out = [
        "",
        "What torch.compile changes, per variant and mode (forward; speedup = "
        + (
            "paired: eager and compiled timed in alternating blocks in one process, with its 95% "
            "interval in brackets, where measured, else "
            if paired
            else ""
        )
        + "eager latency / compiled latency, per-call medians from the same sweep; verdict = "
        + (
            f"the interval against 1.0 (one inside ±{PAIRED_NOISE:.0%} of it: within "
            f"±{PAIRED_NOISE:.0%}, the size of the pairs' own error), or for a speedup without "
            "one, "
            if paired
            else ""
        )
        + f"more than {NOISE:.0%} from 1.0; "
        + ("repeats = the speedup's range over the cell's fresh processes; " if repeated else "")
        + "payback = calls until the compile time is repaid, for a faster cell only, over "
        f"the speedup's interval (not quoted where that range spans more than {WIDE:g}x); source = "
        f"the sweep the row comes from, the first of {', '.join(PRIORITY)} that has it; other "
        "sweeps = the same comparison in the other sweeps that have it, which shows how far a "
        "cell whose latency runs over its device time moves from sweep to sweep):",
        "",
    ]
    head = ["variant", "mode", "source", "kernels eager → compiled",
            "latency eager → compiled, µs", "speedup", "verdict"]  # fmt: skip
    head += ["repeats"] if repeated else []
    head += ["compile s", "payback calls", "other sweeps"]
    body = []
    for x in rs:
        pay = payback_text(x["payback"])
        cells = [x["label"], x["mode"], x["source"],
                 f"{count(x['eager_kernels'])} → {count(x['kernels_per_step'])}",
                 f"{sig(x['eager_lat'])} → {sig(x['latency_median_us'])}", sp_text(x),
                 verdict_text(x)]  # fmt: skip
        cells += [spread_text(x)] if repeated else []
        cells += [sig(x["compile_s"]), pay, x["elsewhere"]]
        body.append(cells)
    out += table(head, body)
    out += reproducibility(rs)
    out += ["", pays(rs)]
    return out


def pays(rs: list[dict]) -> str:
    """When compiling pays for itself, per variant: the fewest calls over the modes measured."""
    paying, flat, never = [], [], []
    for label in dict.fromkeys(x["label"] for x in rs):
        mine = [x for x in rs if x["label"] == label]
        pay = [x for x in mine if x["payback"] is not None]
        quoted = [x for x in pay if payback_text(x["payback"])[:1].isdigit()]
        if quoted:
            b = min(quoted, key=lambda x: x["payback"][0])
            paying.append(
                f"{label} after {payback_text(b['payback'])} calls ({b['mode']}, {sp_text(b)})"
            )
        elif pay:
            paying.append(f"{label} (faster, but its payback's range spans more than {WIDE:g}x)")
        elif any(x["verdict"] != "slower" for x in mine):
            flat.append(label)
        else:
            host = all(x.get("host_only") for x in mine)
            never.append(f"{label} (" + ", ".join(
                f"{x['mode']} {sp_text(x)}" + (f": {cause(x)}" if cause(x) and not host else "")
                for x in mine)
                + (f"; {HOST_FREE}: same kernels and device time in every mode" if host else "")
                + ")")  # fmt: skip
    return (
        "When compiling pays for itself (the fewest calls over the modes measured): "
        + ("; ".join(paying) or "never")
        + "."
        + (f" No measurable gain in any mode: {', '.join(flat)}." if flat else "")
        + (f" Slower than eager in every mode measured: {'; '.join(never)}." if never else "")
    )


def reproducibility(rows: list[dict]) -> list[str]:
    """How far one comparison moves between sweeps, GPU-bound against host-bound compiled cells."""
    again = [x for x in rows if len(x["all"]) > 1]
    if not again:
        return []

    def spread(x):
        return max(x["all"]) / min(x["all"]) - 1

    parts = []
    for bound, what in ((False, "GPU-bound"), (True, "latency-bound")):
        mine = sorted((x for x in again if x["host_bound"] is bound), key=spread)
        if mine:
            w = mine[-1]
            parts.append(
                f"{len(mine)} where the compiled cell is {what} moved by at most "
                f"{spread(w):.1%} ({w['label']} {w['mode']}: "
                f"{min(w['all']):.2f}–{max(w['all']):.2f}x)"
            )
    return [
        "",
        f"Between sweeps (the other sweeps column): of the {len(again)} comparisons measured "
        "more than once, " + "; ".join(parts) + ". Latency-bound = per-call latency more than "
        "10% over the profiler's GPU busy time per step (these rows measure no host time; "
        "measured host µs are under Host cost measured); compare those within one sweep only.",
    ]
