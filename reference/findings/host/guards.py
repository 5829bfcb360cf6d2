"""What Dynamo's guards cost a call, said against how far one cell's host units move between
the current host-cost layer's machines (``spread``, audit 2026-12-06 defect 7: not an older
ladder's range), with every figure from a row of fewer than ``MIN_FAST`` fast-phase blocks
marked † (defect 5). Part of the start-up section (reference.findings.host.startup).
"""

from __future__ import annotations

import pandas as pd

MIN_FAST = 5  # host figures from a row with fewer fast-phase blocks are marked (†)


def few_fast(r: pd.DataFrame) -> pd.DataFrame:
    """The rows whose host figures rest on fewer than ``MIN_FAST`` fast-phase blocks."""
    n = pd.to_numeric(r.get("host_blocks_fast"), errors="coerce")
    return r[
        n.notna() & (n < MIN_FAST) & pd.to_numeric(r.get("host_units"), errors="coerce").notna()
    ]


def spread(d) -> dict | None:
    """How far one cell's host units move between the host-cost layer's machines (m5–m7):
    over the cells two machines or more measured, the min, max and median of max / min - 1, and
    how many exceed 15%; None without the layer."""
    from analysis.tables import host_model  # the layer's own table
    from reference.findings.host import machines

    got = machines._layer_rows({"dir": d})
    if got is None:
        return None
    t = host_model.units_spread(machines.fast_only(got[4].reset_index(drop=True)))
    s = t["spread"][t.drop(columns="spread").notna().sum(axis=1) >= 2]
    if s.empty:
        return None
    return {"n": len(s), "lo": s.min(), "hi": s.max(), "median": s.median(),
            "over": int((s > 0.15).sum()), "machines": ", ".join(got[2])}  # fmt: skip


def evaluated(r: pd.DataFrame, same: pd.DataFrame | None) -> dict[str, pd.Series]:
    """Per variant, the host units of every process on the guard rows' machine that ran the
    same compiled cell with guards evaluated (the start-up sets' cold, warm and artifacts cells
    too): how far one machine's processes move by themselves."""
    if same is None or "host_units" not in same:
        return {}
    from analysis.tables import host_model  # the cell's keys, the table's own

    key = lambda x: host_model.cell_key(x, ("compile", "layers", "regional", "boot_id"))  # noqa: E731
    on = r[r["compile_stance"] == "default"]
    out = {}
    for v, g in on.groupby("variant"):  # the same cell: every key, not the variant alone
        x = same[(same["compile_stance"] == "default") & key(same).isin(set(key(g)))]
        u = pd.to_numeric(x["host_units"], errors="coerce").dropna()
        if len(u) >= 2:
            out[v] = u
    return out


def text(r: pd.DataFrame, sp: dict | None = None, same: pd.DataFrame | None = None) -> str:
    """What guards cost, against how far one cell's host units move between machines in the
    current host-cost layer (``spread``): a share under its median is not told apart; nor is a
    skipped-guards figure inside the range of the machine's own processes with guards evaluated
    (``evaluated``, from ``same``), whose median the cost is then taken from."""
    cols = ["host_units", "host_gauge_us"]
    on = r[r["compile_stance"] == "default"].groupby("variant")[cols].median()
    off = r[r["compile_stance"] == "skip_guard_eval_unsafe"].groupby("variant")[cols].median()
    both = sorted(on.index.intersection(off.index))
    if not both:
        return ""
    noise = sp["median"] if sp else float("nan")
    ev = evaluated(r, same)
    for v in both:  # the evaluated side: the median of the machine's processes
        if v in ev:
            on.at[v, "host_units"] = ev[v].median()
    units = {v: on.at[v, "host_units"] - off.at[v, "host_units"] for v in both}
    share = {v: units[v] / on.at[v, "host_units"] for v in both}
    few = few_fast(r)
    mark = {v: "†" if v in set(few["variant"]) else "" for v in both}
    inside = {v for v in both if v in ev and off.at[v, "host_units"] >= ev[v].min()}
    # told apart only where even the lowest evaluated process lies the ruler's share above it
    low = {v: (ev[v].min() - off.at[v, "host_units"]) / on.at[v, "host_units"] if v in ev
           else share[v] for v in both}  # fmt: skip
    real = [v for v in both if low[v] >= noise and v not in inside]
    span = {v: (f" (the median of {len(ev[v])} runs with guards evaluated on this machine, "
                f"{ev[v].min() - off.at[v, 'host_units']:.2f}–{ev[v].max() - off.at[v, 'host_units']:.2f} "
                "from the lowest to the highest)") if v in ev else "" for v in both}  # fmt: skip
    said = [f"{v}{mark[v]} {units[v]:.2f} host units a call{span[v]} "
            f"({units[v] * on.at[v, 'host_gauge_us']:.0f} µs at G {on.at[v, 'host_gauge_us']:.1f}), "
            f"{share[v]:.0%} of its compiled host cost" for v in real]  # fmt: skip
    rest = [f"{v}{mark[v]} {share[v]:.0%}" + (" (inside the range of its own runs with guards "
            "evaluated)" if v in inside else f" against the median of its {len(ev[v])} runs with "
            f"guards evaluated on this machine, {low[v]:.0%} against their lowest" if v in ev
            else "") for v in both if v not in real]  # fmt: skip
    ruler = (
        f"Between the current host-cost layer's machines ({sp['machines']}), one cell's host units "
        f"spread {sp['lo']:.0%}–{sp['hi']:.0%} (median {sp['median']:.0%}; {sp['over']} of "
        f"{sp['n']} cells beyond 15%). "
        if sp
        else "No host-cost layer to measure how far host units move between machines. "
    )
    marked = "; ".join(
        f"{x.variant} {x.compile_stance} ({int(x.host_blocks_fast)} fast blocks)"
        for x in few.itertuples()
    )
    return (
        ruler
        + (f"Guards cost {'; '.join(said)}: beyond that median, within the spread of the "
           f"{sp['over']} cells beyond 15%. " if said and sp else "")
        + (f"Not told apart from what one cell's host units move (a share of its compiled host "
           f"cost under that median, at least against the lowest run): {'; '.join(rest)}. "
           if rest and sp else "")
        + (f"† a host figure from a row with fewer than {MIN_FAST} fast-phase blocks (its host "
           f"time includes slow-phase blocks): {marked}. " if marked else "")
        + "Skipping guards is unsafe: an input that changes is no longer caught."
    )  # fmt: skip


def mark_table(t: pd.DataFrame, r: pd.DataFrame) -> pd.DataFrame:
    """Mark (†) each guard-table figure taken from a row with fewer than MIN_FAST fast blocks."""
    t = t.copy()
    few = few_fast(r)
    cols = {"default": "guards evaluated: host units (µs, G)",
            "skip_guard_eval_unsafe": "guards skipped: host units (µs, G)"}  # fmt: skip
    for x in few.itertuples():
        col = cols.get(x.compile_stance)
        hit = t["cell"].astype(str).str.startswith(f"{x.variant} ")
        if col in t:
            t.loc[hit, col] = (
                t.loc[hit, col].astype(str) + f" † {int(x.host_blocks_fast)} fast blocks"
            )
        for c in ("guards: host units", "guards µs a call (units x G)"):
            if c in t:
                t.loc[hit, c] = t.loc[hit, c].astype(str) + " †"
    return t
