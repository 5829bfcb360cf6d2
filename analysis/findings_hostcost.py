"""Host cost measured: a call's host µs and host units, eager and compiled, on several H200
machines in one code hash, the headline of what compiling costs the host, and the paired
speedup predicted from the other machines. Part of ``python -m analysis.findings``.

Reads ``DIR/host_machines/<machine>/runs.csv`` (``benchmarks/host_reference.sh`` writes one
sweep per experiment; the machine's rows are those sweeps' rows with a ``source`` column;
``machine.md`` names its boot, ``survey.md`` the gauge's survey). The machines of the code hash
most of them share are the measured layer; machines of other code hashes are named and left out.

Every host figure is measured (``host_us``: blocks of calls issued behind queued GPU sleep,
study.cell.host_cost), from rows with at least ``MIN_FAST`` fast-phase blocks; a compiled row's
eager figure is its eager twin's, timed in the same rounds (``eager_host_us``). Host units are
host µs over the gauge's µs around the same blocks; G is that gauge (the host's speed). A cell
is host-bound compiled where its host µs exceed its device µs (``metrics.device_us``). A cell's
figure is the median over the machines, with their min–max beside it (a range over 3 machines,
not an interval). Paired speedups from rows not timed in the fast phase say so.
"""

# Long: the layer, the per-cell frame, its table, the headline and the leave-one-out share one
# frame; apart they would pass it between three modules.
from __future__ import annotations

import re

import pandas as pd

from analysis import host_model
from analysis.findings_common import table
from analysis.measures import sig
from study.observe.metrics import device_us

MIN_FAST = 5  # a row's host figures count here when this many of its blocks ran fast
WRAPPERS = ("default", "max-autotune-no-cudagraphs", "cpp_wrapper")  # Inductor, no CUDA graphs
WAITED = "did not cover any block"  # host_cost's note: a call waited for the GPU (a sync)
FIGURE = "host_machines/host_speed"  # .png and .svg, drawn by ``draw`` (findings --write)


def _machines(d) -> dict:
    """{machine dir name: {'rows', 'boot', 'survey'}} under ``d/host_machines``."""
    out = {}
    for m in sorted((d / "host_machines").glob("*/runs.csv")) if d else []:
        md, sv = m.parent / "machine.md", m.parent / "survey.md"
        boot = re.search(r"boot_id (\w{8})", md.read_text()) if md.exists() else None
        level = re.search(r"fast level ([\d.]+) us .*?(\d+)% of them", sv.read_text()) if (
            sv.exists()) else None  # fmt: skip
        out[m.parent.name] = {
            "rows": pd.read_csv(m, low_memory=False).copy().assign(machine=m.parent.name),
            "boot": boot.group(1) if boot else "?",
            "survey": f"{level.group(1)} µs, {level.group(2)}% within 1.3x" if level else "?",
        }
    return out


def layer(machines: dict) -> tuple[str, list[str], list[str]]:
    """(code hash, its machines, the others): the code hash most machines share (the latest
    machine's where they tie)."""
    codes = {m: str(v["rows"]["code_hash"].dropna().iloc[0]) if "code_hash" in v["rows"] and
             v["rows"]["code_hash"].notna().any() else "?" for m, v in machines.items()}  # fmt: skip
    count = pd.Series(codes).value_counts()
    best = max(count.index, key=lambda c: (count[c], max(m for m in codes if codes[m] == c)))
    return best, [m for m in codes if codes[m] == best], [m for m in codes if codes[m] != best]


def frame(rows: pd.DataFrame) -> pd.DataFrame:
    """One row per compiled CUDA row: its host and device µs and units and its eager twin's
    (the eager device time from the same machine's eager cell), ``hb`` host-bound compiled."""
    r = rows[(rows["status"] == "ok") & (rows["device"] == "cuda")].copy()
    if r.empty or "host_us" not in r:
        return pd.DataFrame()
    r["cell"] = host_model.cell_key(r)
    r["dev"] = pd.to_numeric(pd.Series([device_us(x) for x in r.to_dict("records")], r.index))
    src = r["source"] if "source" in r else pd.Series("", r.index)
    r["src"] = src.fillna("").astype(str)
    eager = r[r["compile"] == "off"].groupby(["machine", "cell"])["dev"].median()
    c = r[r["compile"] != "off"].copy()
    c["dev_e"] = [eager.get((m, k)) for m, k in zip(c["machine"], c["cell"], strict=True)]
    fast = pd.to_numeric(c.get("host_blocks_fast"), errors="coerce") >= MIN_FAST
    c["hu"] = c["host_us"].where(fast)
    c["hn"] = c["host_units"].where(fast)
    # the eager twin's blocks ran in the same rounds: kept where the compiled ones ran fast
    c["eu"], c["en"] = c["eager_host_us"].where(fast), c["eager_host_units"].where(fast)
    notes = c.get("notes", pd.Series("", c.index)).fillna("").astype(str)
    c["eager_waited"] = notes.str.contains("eager twin: host time per call not measured") & (
        notes.str.contains(WAITED))  # fmt: skip
    c["hb"] = c["hu"] > c["dev"]
    c["fast"] = c.get("timing_phase", pd.Series("", c.index)).astype(str) == "fast"
    c["label"] = [_label(k, m) for k, m in zip(c["cell"], c["compile"], strict=True)]
    return c


def _label(cell: str, mode: str) -> str:
    """'cudnn|fwd|bf16|…' + 'default' -> 'cudnn default' (n=64 where given)."""
    parts = cell.split("|")
    n = dict(zip(["variant", "pass", "dtype", *host_model.SHAPE_KEYS], parts, strict=False)).get(
        "n"
    )
    size = f" n={n.split('.')[0]}" if n else ""
    return f"{parts[0]}{size} {mode}"


def cells(c: pd.DataFrame) -> pd.DataFrame:
    """One row per cell and source: medians over the machines and their min–max."""
    out = []
    for (label, src), x in c.groupby(["label", "src"], sort=True):
        med = x[["dev_e", "dev", "eu", "hu", "en", "hn", "speedup_paired"]].median()
        add = (x["hu"] - x["eu"]).dropna()
        g = x["host_gauge_us"].where(x["hu"].notna())  # the G of the host figures quoted
        out.append({
            "label": label, "src": src, "compile": x["compile"].iloc[0], "n": x["machine"].nunique(),
            **med.to_dict(), "hu_lo": x["hu"].min(), "hu_hi": x["hu"].max(),
            "eu_lo": x["eu"].min(), "eu_hi": x["eu"].max(),
            "add": add.median() if len(add) else float("nan"),
            "add_units": (x["hn"] - x["en"]).median(),
            "g_lo": g.min(), "g_hi": g.max(),
            "hb_n": int(x["hb"].sum()), "known": int(x["hu"].notna().sum()),
            "sp_lo": x["speedup_paired"].min(), "sp_hi": x["speedup_paired"].max(),
            "not_fast": int((~x["fast"]).sum()), "eager_waited": bool(x["eager_waited"].all()),
        })  # fmt: skip
    return pd.DataFrame(out)


def _rng(lo, mid, hi) -> str:
    """'61.1 [57.9–66.5]': a median and its min–max over machines; '–' where none."""
    if mid != mid:
        return "–"
    return sig(mid) if sig(lo) == sig(hi) else f"{sig(mid)} [{sig(lo)}–{sig(hi)}]"


def _span(lo, hi) -> str:
    """'13.1–16.0', or '14.0' where both ends read the same; '–' where none."""
    if lo != lo:
        return "–"
    return sig(lo) if sig(lo) == sig(hi) else f"{sig(lo)}–{sig(hi)}"


def _sp(x) -> str:
    if x["speedup_paired"] != x["speedup_paired"]:
        return "–"
    mark = f", {x['not_fast']} of {x['n']} not fast" if x["not_fast"] else ""
    return f"{x['speedup_paired']:.2f}x [{x['sp_lo']:.2f}–{x['sp_hi']:.2f}]{mark}"


def _bound(x) -> str:
    if not x["known"]:
        return "–"
    return ("host" if x["hb_n"] == x["known"] else "device" if x["hb_n"] == 0
            else f"host on {x['hb_n']} of {x['known']}")  # fmt: skip


def headline(data: dict) -> dict | None:
    """What compiling without CUDA graphs costs the host, over every cell host-bound compiled
    (host µs over device µs on most machines) with an eager twin measured: the added host µs a
    call and units (their median over the cells, min–max), the compiled host µs and device µs
    ranges, the G the rows ran at, and how many cells; None without the measured layer."""
    t = _cells(data)
    if t is None or t.empty:
        return None
    hb = t[t["compile"].isin(WRAPPERS) & (t["hb_n"] * 2 > t["known"])]
    w, unmeasured = hb[hb["add"].notna()], hb[hb["add"].isna()]
    if w.empty:
        return None
    return {"n": len(w), "of": int(t["compile"].isin(WRAPPERS).sum()),
            "median": w["add"].median(), "lo": w["add"].min(), "hi": w["add"].max(),
            "units": w["add_units"].median(), "units_lo": w["add_units"].min(),
            "units_hi": w["add_units"].max(), "host_lo": w["hu"].min(), "host_hi": w["hu"].max(),
            "dev_lo": w["dev"].min(), "dev_hi": w["dev"].max(), "g_lo": w["g_lo"].min(),
            "g_hi": w["g_hi"].max(), "machines": int(w["n"].max()),
            "cells": ", ".join(f"{x.label} `{x.src}` {x.add:+.1f}" for x in w.itertuples()),
            "unmeasured": ", ".join(f"{x.label} `{x.src}`" for x in unmeasured.itertuples())}  # fmt: skip


def _cells(data: dict) -> pd.DataFrame | None:
    machines = _machines(data.get("dir"))
    if len(machines) < 2:
        return None
    _, names, _ = layer(machines)
    c = frame(pd.concat([machines[m]["rows"] for m in names], ignore_index=True))
    return cells(c) if len(c) else pd.DataFrame()


def section(data: dict) -> list[str]:
    machines = _machines(data.get("dir"))
    if len(machines) < 2:
        return ["", "_Host cost measured: needs `host_machines/<machine>/runs.csv` of two "
                "machines or more (benchmarks/host_reference.sh), not in these results._"]  # fmt: skip
    code, names, rest = layer(machines)
    rows = pd.concat([machines[m]["rows"] for m in names], ignore_index=True)
    t = cells(frame(rows))
    h = headline(data)
    boots = "; ".join(f"{m} boot {machines[m]['boot']} (survey: fast level "
                      f"{machines[m]['survey']})" for m in names)  # fmt: skip
    body = [[x["label"], f"`{x['src']}`", f"{sig(x['dev_e'])} → {sig(x['dev'])}",
             f"{_rng(x['eu_lo'], x['eu'], x['eu_hi'])} → {_rng(x['hu_lo'], x['hu'], x['hu_hi'])}"
             if not x["eager_waited"] else
             f"waits on the GPU → {_rng(x['hu_lo'], x['hu'], x['hu_hi'])}",
             f"{sig(x['en']) or '–'} → {sig(x['hn']) or '–'}", _span(x["g_lo"], x["g_hi"]),
             _bound(x), _sp(x)] for _, x in t.iterrows()]  # fmt: skip
    out = [
        "",
        "## Host cost measured",
        "",
        f"{len(names)} H200 machines, each fresh after an idle release, one code hash "
        f"({code}): {boots}. Part1–3 under off, default and max-autotune-no-cudagraphs, "
        "the compile targets, the models' and the block's forward "
        "(`benchmarks/host_reference.sh`, `results/h200/host_machines`). Host µs a call are "
        "measured: blocks of calls issued behind queued GPU sleep, so the host never waits for "
        "the GPU; units are host µs over the gauge's µs around the same blocks, and G that "
        f"gauge (the host's speed), from fast-phase blocks only (at least {MIN_FAST}); eager's "
        "figures are the twin's, timed in the same rounds. Each figure is the median over the "
        "machines with their min–max in brackets (a range, not an interval).",
    ]
    if h:
        out += ["", headline_text(h)]
    out += ["", *table(["cell", "source", "device µs eager → compiled",
                        "host µs eager → compiled", "host units eager → compiled", "G µs",
                        "bound (compiled)", "paired speedup [range over machines]"], body)]  # fmt: skip
    waited = t[t["eager_waited"]]
    if len(waited):
        out += ["", _waited(sorted({x.split()[0] for x in waited["label"]}), data.get("kernels"))]
    out += ["", *_crossings(t, data.get("dir"))]
    out += ["", *_loo(rows)]
    if rest:
        other = ", ".join(f"{m} (boot {machines[m]['boot']})" for m in rest)
        out += ["", f"Left out, another code hash: {other}, the older ladder of "
                "`benchmarks/host_machines.sh`; their rows stay in the folder."]  # fmt: skip
    return out


def _waited(variants: list[str], kernels) -> str:
    """Why the eager call of ``variants`` has no host figure, with the device-to-host copies
    the reference sweep's trace shows in its eager step (kernels.csv) and none compiled."""
    said = ""
    k = kernels if isinstance(kernels, pd.DataFrame) else pd.DataFrame()
    if len(k) and {"variant", "compile", "kernel_short", "calls_per_step"} <= set(k):
        d2h = k[k["variant"].isin(variants) & k["kernel_short"].astype(str).str.contains("DtoH")]
        eager = d2h[d2h["compile"] == "off"].drop_duplicates(["variant", "cpu_op"])
        if len(eager):
            ops = ", ".join(f"{x.variant} {int(x.calls_per_step)} from `{x.cpu_op}`"
                            for x in eager.itertuples())  # fmt: skip
            none = "none" if (d2h["compile"] != "off").sum() == 0 else "some"
            said = (f" The reference sweep's trace shows why: device-to-host copies a step in "
                    f"the eager forward ({ops}: a value read back to the host, a sync), and "
                    f"{none} compiled; eager latency there is host and device in series, not "
                    "their maximum.")  # fmt: skip
    return (f"Eager {', '.join(variants)}: no host figure, because the call waits for the GPU "
            "inside each forward (the sleep queued ahead of a block never covered one call)."
            + said)  # fmt: skip


def _crossings(t: pd.DataFrame, d) -> list[str]:
    """Where compiling stops paying: the host speed at which each compiled cell's predicted
    speedup (units x G, the medians over machines) falls through 1, and the figure."""
    cross, low = [], host_model.GRID[0]
    both = [f"{x.label} `{x.src}`" for x in t.itertuples()
            if x.en * low > x.dev_e and x.hn * low > x.dev]  # fmt: skip
    for x in t.itertuples():
        g = host_model.crossover(x.dev_e, x.en, x.dev, x.hn) if x.en == x.en else None
        if g is not None:
            cross.append(f"{x.label} `{x.src}` {sig(g)} µs")
    fig = d is not None and (d / f"{FIGURE}.png").exists()
    text = (
        "Where compiling stops paying (the host speed G at which the predicted speedup, "
        "max(device µs, units × G) each side from the medians above, falls through 1): "
        + ("; ".join(cross) if cross else "no cell crosses 1 between 5 and 100 µs")
        + ". The others keep their side of 1 at every G from 5 µs up"
        + (
            f"; host-bound on both sides throughout, so slower at any host speed: {', '.join(both)}"
            if both
            else ""
        )
        + "."
    )
    return [text, "", f"![At what host speed does compiling stop paying?]({FIGURE}.png)"] if (
        fig) else [text]  # fmt: skip


def draw(d) -> str | None:
    """Draw the measured layer's speedup against host speed (``fig_host_speed``: a predicted
    curve per cell, each machine's row a point) into ``d/FIGURE`` .png and .svg; its
    sentence, or None without two machines' rows."""
    # matplotlib only here: the section's text needs none
    import matplotlib.pyplot as plt

    from analysis.fig_host_speed import host_speed
    from analysis.style import DPI, Skip

    machines = _machines(d)
    if len(machines) < 2:
        return None
    _, names, _ = layer(machines)
    rows = pd.concat([machines[m]["rows"] for m in names], ignore_index=True)
    try:
        fig, sentence = host_speed({"runs": rows})
    except Skip as e:
        return str(e)
    fig.savefig(d / f"{FIGURE}.png", dpi=DPI)
    fig.savefig(d / f"{FIGURE}.svg", metadata={"Date": None})
    plt.close(fig)
    return sentence


def headline_text(h: dict) -> str:
    return (
        f"Compiled without CUDA graphs, a host-bound call costs the host {h['median']:+.1f} µs "
        f"more than eager's (median over the {h['n']} cells host-bound compiled, of "
        f"{h['of']} compiled this way; {h['lo']:+.1f} to {h['hi']:+.1f} across them), "
        f"{h['units']:+.2f} host units ({h['units_lo']:+.2f} to {h['units_hi']:+.2f}) at G = "
        f"{sig(h['g_lo'])}–{sig(h['g_hi'])} µs: {sig(h['host_lo'])}–{sig(h['host_hi'])} µs of "
        f"host a call against {sig(h['dev_lo'])}–{sig(h['dev_hi'])} µs of device time "
        f"({h['cells']}). A cell with less device time a call than that is host-bound compiled "
        "and slower unless its kernels save more."
        + (
            f" Host-bound compiled but without an eager figure, so not in the median: "
            f"{h['unmeasured']}."
            if h["unmeasured"]
            else ""
        )
    )


def _loo(rows: pd.DataFrame) -> list[str]:
    """Each machine's paired speedups predicted from the other machines (host_model)."""
    c = host_model.cells(rows)
    lo = host_model.leave_one_out(c)
    if lo.empty:
        return []
    lo = lo[lo["measured"].notna()]
    err = lo["err"].abs()
    # host-bound compiled on that machine: the case the model is for (the rest predict ~1x)
    hb = c.assign(hb=c["host_us"] > c["dev_c"]).groupby(["machine", "cell"])["hb"].any()
    on = [bool(hb.get((m, k), False)) for m, k in zip(lo["machine"], lo["cell"], strict=True)]
    e_hb = err[on]
    worst = lo.loc[err.idxmax()]
    off = lo[err > 0.10].sort_values("err")
    named = "; ".join(f"{x.machine} {x.variant} {x.compile} {x.measured:.3f}x predicted "
                      f"{x.predicted:.3f} ({x.err:+.1%})" for x in off.itertuples())  # fmt: skip
    return [
        "Each machine's paired speedup, predicted from the other machines at the host speed of "
        "the row's paired rounds (the level its gauge held; latency ≈ max(device µs, host µs at "
        "G), host µs scaled as G ** alpha, alpha fitted on the others, "
        f"{lo['alpha'].min():.2f}–{lo['alpha'].max():.2f}): {int((err <= 0.10).sum())} of "
        f"{len(lo)} within ±10%, {int((err <= 0.15).sum())} within ±15%, the worst "
        f"{worst.err:+.1%} ({worst.machine} {worst.variant} {worst['compile']}); of the "
        f"{len(e_hb)} host-bound compiled, {int((e_hb <= 0.10).sum())} within ±10%, the worst "
        f"{e_hb.max():.1%} off" + (f"; beyond ±10%: {named}." if len(off) else ".")
    ]
