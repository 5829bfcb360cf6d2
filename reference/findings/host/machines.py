"""Host cost measured: a call's host µs and host units, eager and compiled, on several H200
machines in one code hash, the headline of what compiling costs the host, where compiling stops
paying, and the paired speedup predicted from the other machines. Part of
``python -m reference.findings``.

Reads ``DIR/host_machines/<machine>/runs.csv`` (``benchmarks/host_reference.sh`` writes one
sweep per experiment; a machine's rows are those sweeps' rows with a ``source`` column;
``machine.md`` names its boot, ``survey.md`` the gauge's survey). The measured layer is the
newest code hash (the latest ``started_at`` of its rows); machines of other code hashes are
named and left out.

Every host figure is measured (``host_us``: blocks of calls issued behind queued GPU sleep,
study.measure.host_cost) and kept only from rows with at least ``MIN_FAST`` fast-phase blocks
(``fast_only``); a compiled row's eager figure is its eager twin's, timed in the same rounds.
Host units are host µs over the gauge's µs around the same blocks; G is that gauge (the host's
speed). A cell is host-bound compiled where its host µs exceed its device µs
(``metrics.device_us``). A cell's figure is the median over the machines that measured it, with
their min–max (a range, not an interval) and their count where not every machine did. Paired
speedups from rows not timed in the fast phase say so.
"""

# Long: the layer, the per-cell frame, its table, the headline, the crossovers and the
# leave-one-out share one frame; apart they would pass it between three modules.
from __future__ import annotations

import re

import pandas as pd

from analysis.measures import WRAPPERS, sig  # Inductor, no CUDA graphs
from analysis.pairs import table
from analysis.tables import host_model
from reference import sources
from reference.findings.host import predict
from study.rows.metrics import device_us

MIN_FAST = 5  # study.measure.host_cost.MIN_FAST_BLOCKS (that module imports torch)
WAITED = "did not cover any block"  # host_cost's note: a call waited for the GPU (a sync)
FIGURE = "host_machines/host_speed"  # .png and .svg, drawn by ``draw`` (findings --write)
HOST = ["host_us", "host_units", "eager_host_us", "eager_host_units"]


def _machines(d) -> dict:
    """{machine dir name: {'rows', 'boot', 'survey', 'code'}} under ``d/host_machines``."""
    out = {}
    for m in sorted((d / sources.HOST_MACHINES).glob("*/runs.csv")) if d else []:
        md, sv = m.parent / "machine.md", m.parent / "survey.md"
        boot = re.search(r"boot_id (\w{8})", md.read_text()) if md.exists() else None
        level = re.search(r"fast level ([\d.]+) us .*?(\d+)% of them", sv.read_text()) if (
            sv.exists()) else None  # fmt: skip
        rows = pd.read_csv(m, low_memory=False).copy()  # one block: no fragmented insert
        rows["machine"] = m.parent.name
        code = rows["code_hash"].dropna() if "code_hash" in rows else pd.Series(dtype=str)
        out[m.parent.name] = {
            "rows": rows,
            "boot": boot.group(1) if boot else "?",
            "survey": f"{level.group(1)} µs, {level.group(2)}% within 1.3x" if level else "?",
            "code": str(code.iloc[0]) if len(code) else "?",
        }
    return out


def layer(machines: dict) -> tuple[str, list[str], list[str]]:
    """(code hash, its machines, the others): the newest code hash, by the latest
    ``started_at`` of its machines' rows (the most machines where no row has a time)."""
    latest = {}
    for v in machines.values():
        t = pd.to_datetime(v["rows"].get("started_at"), errors="coerce", utc=True)
        t = t.max() if t is not None and t.notna().any() else pd.NaT
        prev = latest.get(v["code"], (0, pd.NaT))
        newer = prev[1] if pd.isna(t) else t if pd.isna(prev[1]) else max(t, prev[1])
        latest[v["code"]] = (prev[0] + 1, newer)
    zero = pd.Timestamp(0, tz="UTC")
    best = max(latest, key=lambda c: (zero if pd.isna(latest[c][1]) else latest[c][1],
                                      latest[c][0], c))  # fmt: skip
    names = [m for m, v in machines.items() if v["code"] == best]
    return best, names, [m for m in machines if m not in names]


def fast_only(rows: pd.DataFrame) -> pd.DataFrame:
    """The rows with their host figures blank where fewer than ``MIN_FAST`` of their blocks
    ran in the host's fast phase (host_cost then used every block, slow ones too)."""
    r = rows.copy()
    fast = pd.to_numeric(r.get("host_blocks_fast"), errors="coerce") >= MIN_FAST
    for col in HOST:
        if col in r:
            r[col] = r[col].where(fast)
    return r


def frame(rows: pd.DataFrame) -> pd.DataFrame:
    """One row per compiled CUDA row: its host and device µs and units and its eager twin's
    (the eager device time from the same machine's eager cell), ``hb`` host-bound compiled."""
    r = rows[(rows["status"] == "ok") & (rows["device"] == "cuda")].copy()
    if r.empty or "host_us" not in r:
        return pd.DataFrame()
    r = fast_only(r)
    for col in [*HOST, "host_gauge_us", "speedup_paired"]:
        if col not in r:
            r[col] = float("nan")
    r["cell"] = host_model.cell_key(r)
    r["dev"] = pd.to_numeric(pd.Series([device_us(x) for x in r.to_dict("records")], r.index))
    r["src"] = r["source"].fillna("").astype(str) if "source" in r else ""
    eager = r[r["compile"] == "off"].groupby(["machine", "src", "cell"])["dev"].median()
    c = r[r["compile"] != "off"].copy()
    c["dev_e"] = [eager.get(k) for k in zip(c["machine"], c["src"], c["cell"], strict=True)]
    c["hu"], c["hn"] = c["host_us"], c["host_units"]
    c["eu"], c["en"] = c["eager_host_us"], c["eager_host_units"]
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
    for (_, label, src), x in c.groupby(["cell", "label", "src"], sort=True):
        med = x[["dev_e", "dev", "eu", "hu", "en", "hn", "speedup_paired"]].median()
        add = (x["hu"] - x["eu"]).dropna()
        g = x["host_gauge_us"].where(x["hu"].notna())  # the G of the host figures quoted
        out.append({
            "label": label, "src": src, "compile": x["compile"].iloc[0], "n": x["machine"].nunique(),
            **med.to_dict(), "hu_lo": x["hu"].min(), "hu_hi": x["hu"].max(),
            "eu_lo": x["eu"].min(), "eu_hi": x["eu"].max(), "hu_n": int(x["hu"].notna().sum()),
            "eu_n": int(x["eu"].notna().sum()), "add": add.median() if len(add) else float("nan"),
            "add_n": len(add), "add_units": (x["hn"] - x["en"]).median(),
            "g_lo": g.min(), "g_hi": g.max(), "hb_n": int(x["hb"].sum()),
            "sp_lo": x["speedup_paired"].min(), "sp_hi": x["speedup_paired"].max(),
            "not_fast": int((~x["fast"]).sum()), "eager_waited": bool(x["eager_waited"].all()),
            "kern": pd.to_numeric(x.get("kernels_per_step"), errors="coerce").median(),
        })  # fmt: skip
    return pd.DataFrame(out)


def _rng(lo, mid, hi, k: int, n: int) -> str:
    """'61.1 [57.9–66.5]': a median and its min–max over machines, '(1 of 3)' where fewer
    machines than the cell ran on measured it; '–' where none."""
    if mid != mid:
        return "–"
    some = f" ({k} of {n})" if k < n else ""
    return (sig(mid) if sig(lo) == sig(hi) else f"{sig(mid)} [{sig(lo)}–{sig(hi)}]") + some


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
    if not x["hu_n"]:
        return "–"
    return ("host" if x["hb_n"] == x["hu_n"] else "device" if x["hb_n"] == 0
            else f"host on {x['hb_n']} of {x['hu_n']}")  # fmt: skip


def _layer_rows(data: dict) -> tuple[dict, str, list[str], list[str], pd.DataFrame] | None:
    """(machines, code hash, its machines, the others, the layer's rows); None without two
    machines in the layer."""
    machines = _machines(data.get("dir"))
    if not machines:
        return None
    code, names, rest = layer(machines)
    if len(names) < 2:
        return None
    return machines, code, names, rest, pd.concat([machines[m]["rows"] for m in names])


def headline(data: dict, t: pd.DataFrame | None = None) -> dict | None:
    """What compiling without CUDA graphs costs the host, over every cell host-bound compiled
    (host µs over device µs on most of the machines that measured it) whose added host time
    (compiled less the eager twin's) two machines or more measured: its median over the cells,
    min–max, in µs and units, the compiled host and device µs ranges, the G of those figures;
    None without the measured layer."""
    if t is None:
        got = _layer_rows(data)
        if got is None:
            return None
        t = cells(frame(got[4].reset_index(drop=True)))
    if t.empty:
        return None
    hb = t[t["compile"].isin(WRAPPERS) & (t["hb_n"] * 2 > t["hu_n"])]
    w, few = hb[hb["add_n"] >= 2], hb[hb["add_n"] < 2]
    if w.empty:
        return None
    return {"n": len(w), "distinct": w["label"].nunique(),
            "of": int(t["compile"].isin(WRAPPERS).sum()),
            "median": w["add"].median(), "lo": w["add"].min(), "hi": w["add"].max(),
            "units": w["add_units"].median(), "units_lo": w["add_units"].min(),
            "units_hi": w["add_units"].max(), "host_lo": w["hu"].min(), "host_hi": w["hu"].max(),
            "dev_lo": w["dev"].min(), "dev_hi": w["dev"].max(), "g_lo": w["g_lo"].min(),
            "g_hi": w["g_hi"].max(), "machines": int(t["n"].max()),
            "on": _machines_counted(w["add_n"]), "kern_lo": w["kern"].min(),
            "kern_hi": w["kern"].max(),
            "workloads": ", ".join(dict.fromkeys(x.split(" ", 1)[0] for x in w["label"])),
            "cells": ", ".join(f"{x.label} `{x.src}` {x.add:+.1f}" for x in w.itertuples()),
            "few": ", ".join(f"{x.label} `{x.src}`" + (" (eager waits on the GPU)"
                             if x.eager_waited else f" (measured on {x.add_n})")
                             for x in few.itertuples())}  # fmt: skip


def section(data: dict) -> list[str]:
    got = _layer_rows(data)
    if got is None:
        return ["", "_Host cost measured: needs `host_machines/<machine>/runs.csv` of two "
                "machines or more in one code hash (benchmarks/host_reference.sh), not in these "
                "results._"]  # fmt: skip
    machines, code, names, rows = got[0], got[1], got[2], got[4].reset_index(drop=True)
    t = cells(frame(rows))
    if t.empty:
        return ["", "## Host cost measured", "", "_No compiled CUDA row with host_us._"]
    h = headline(data, t)
    boots = "; ".join(f"{m} boot {machines[m]['boot']} (survey: fast level "
                      f"{machines[m]['survey']})" for m in names)  # fmt: skip
    srcs = ", ".join(sorted(rows["source"].dropna().astype(str).unique())) if (
        "source" in rows) else "?"  # fmt: skip
    modes = ", ".join(sorted(rows["compile"].astype(str).unique()))
    n = rows["boot_id"].nunique() if "boot_id" in rows else len(names)
    body = [[x["label"], f"`{x['src']}`", f"{sig(x['dev_e'])} → {sig(x['dev'])}",
             ("waits on the GPU" if x["eager_waited"] else
              _rng(x["eu_lo"], x["eu"], x["eu_hi"], x["eu_n"], x["n"]))
             + f" → {_rng(x['hu_lo'], x['hu'], x['hu_hi'], x['hu_n'], x['n'])}",
             f"{sig(x['en']) or '–'} → {sig(x['hn']) or '–'}", _span(x["g_lo"], x["g_hi"]),
             _bound(x), _sp(x)] for _, x in t.iterrows()]  # fmt: skip
    out = [
        "",
        "## Host cost measured",
        "",
        f"{len(names)} H200 machines ({n} distinct boots), one code hash ({code}): {boots}. "
        f"Sources {srcs}; modes {modes} (`benchmarks/host_reference.sh`, "
        "`reference/h200/host_machines`). Host µs a call are measured: blocks of calls issued "
        "behind queued GPU sleep, so the host never waits for the GPU; units are host µs over "
        "the gauge's µs around the same blocks, and G that gauge (the host's speed). Host "
        f"figures come from rows with at least {MIN_FAST} fast-phase blocks only; eager's are "
        "the twin's, timed in the same rounds. Each figure is the median over the machines "
        "with their min–max in brackets (a range, not an interval), and (k of n) where only k "
        "of the cell's n machines measured it.",
    ]
    if h:
        out += ["", headline_text(h)]
    out += ["", "Host cost per cell: host and device µs eager and compiled, medians over the "
            "machines [their min–max]:"]  # fmt: skip
    out += ["", *table(["cell", "source", "device µs eager → compiled",
                        "host µs eager → compiled", "host units eager → compiled", "G µs",
                        "bound (compiled)", "paired speedup [range over machines]"], body)]  # fmt: skip
    waited = t[t["eager_waited"]]
    if len(waited):
        out += ["", _waited(sorted({x.split()[0] for x in waited["label"]}), data.get("kernels"))]
    out += ["", *_crossings(fast_only(rows), data.get("dir"))]
    out += ["", *_loo(fast_only(rows))]
    if got[3]:
        other = ", ".join(f"{m} (boot {machines[m]['boot']}, code {machines[m]['code']})"
                          for m in got[3])  # fmt: skip
        out += ["", f"Left out, other code hashes than the layer's: {other}; their rows stay in "
                "the folder."]  # fmt: skip
    return out


def _waited(variants: list[str], kernels) -> str:
    """Why the eager call of ``variants`` has no host figure, with the device-to-host copies
    the reference sweep's trace shows in its eager step (kernels.csv) and none compiled."""
    said = ""
    k = kernels if isinstance(kernels, pd.DataFrame) else pd.DataFrame()
    if len(k) and {"variant", "compile", "kernel_short", "calls_per_step", "cpu_op"} <= set(k):
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


def _crossings(rows: pd.DataFrame, d) -> list[str]:
    """Where compiling stops paying (``predict.crossings``), its table and the figure where
    ``draw`` made it."""
    t = predict.crossings(host_model.cells(rows), _label)
    if t.empty:
        return []
    out = [*predict.crossings_text(t), "", *table(predict.HEAD, predict.table_rows(t))]
    if d is not None and (d / f"{FIGURE}.png").exists():
        out += ["", f"![At what host speed does compiling stop paying?]({FIGURE}.png)", "",
                f"The figure draws the model's curves over 5–100 µs; beyond {predict.REACH}x the "
                "G a cell was measured at they are extrapolation, and no crossover is read "
                "from them."]  # fmt: skip
    return out


def draw(d) -> str | None:
    """Draw the measured layer's speedup against host speed (``analysis.figures.host_speed``: a predicted
    curve per cell, each machine's row a point) into ``d/FIGURE`` .png and .svg; its
    sentence, or None without the layer."""
    # deferred: matplotlib, the figure's alone (the section's text needs none)
    from analysis.figures.host_speed import host_speed
    from analysis.style import Skip, save

    got = _layer_rows({"dir": d})
    if got is None:
        return None
    try:
        fig, sentence = host_speed({"runs": fast_only(got[4].reset_index(drop=True))})
    except Skip as e:
        return str(e)
    save(fig, d / FIGURE)
    return sentence


def _machines_counted(n: pd.Series) -> str:
    """'6 of the 8 on 2 machines, 2 on 3': how many machines each cell's figure rests on."""
    k = n.value_counts().sort_index()
    if len(k) == 1:
        return f"each on {int(k.index[0])} machines"
    parts = [f"{int(c)} on {int(m)}" for m, c in k.items()]
    return f"{parts[0].split(' on ')[0]} of the {len(n)} on {parts[0].split(' on ')[1]} machines, " \
        + ", ".join(parts[1:])  # fmt: skip


def kernels_text(h: dict) -> str:
    """'1–2-kernel': the compiled kernels a call of the cells behind the host-cost figure."""
    lo, hi = h["kern_lo"], h["kern_hi"]
    if lo != lo:
        return "few-kernel"
    return f"{lo:.0f}-kernel" if lo == hi else f"{lo:.0f}–{hi:.0f}-kernel"


def headline_text(h: dict) -> str:
    return (
        f"A figure for {kernels_text(h)} calls ({h['workloads']}): compiled without CUDA "
        f"graphs, such a host-bound call costs the host {h['median']:+.1f} µs more than eager's: "
        f"the median over the {h['n']} cells host-bound compiled and measured on two machines or "
        f"more ({h['on']}; {h['distinct']} distinct; a cell in two experiments counts in each), "
        f"of {h['of']} compiled this way; larger models are not in it, {h['lo']:+.1f} to {h['hi']:+.1f} across "
        f"them; {h['units']:+.2f} host units ({h['units_lo']:+.2f} to {h['units_hi']:+.2f}) at "
        f"G = {_span(h['g_lo'], h['g_hi'])} µs: {_span(h['host_lo'], h['host_hi'])} µs of host a "
        f"call against {_span(h['dev_lo'], h['dev_hi'])} µs of device time ({h['cells']}). A "
        "cell with less device time a call than that is host-bound compiled and slower unless "
        "its kernels save more."
        + (f" Host-bound compiled but not in the median: {h['few']}." if h["few"] else "")
    )


def _loo(rows: pd.DataFrame) -> list[str]:
    """Each machine's paired speedups predicted from the other machines, beside the null."""
    return predict.loo_text(host_model.cells(rows))
