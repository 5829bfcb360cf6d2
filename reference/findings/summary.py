"""The short summary of the Findings (reference/h200/SUMMARY.md, linked from the README): at
most ``MAX_LINES`` lines, from the same rows as FINDINGS.md, so that its headline numbers cannot
drift from the CSVs. ``python -m reference.h200 --write`` writes both; ``tests/test_findings.py``
fails when SUMMARY.md's block and the rows disagree. No torch.

Each line is one question: what of the blog held, where compiling pays, where it costs and why,
what training keeps of it, and what real models get. A line whose rows are missing is left out.
"""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd

from analysis.measures import column, count, sig, xs
from analysis.pairs import one_core
from analysis.tables import training
from reference import sources
from reference.findings import markers
from reference.findings.base.claims import claims, claims_source, eager_attention
from reference.findings.base.common import cause, is_fast, of, phase_note, sp_text
from reference.findings.host import machines
from reference.findings.speed import flex, forward

MAX_LINES = 15
START, END = markers.pair("summary")
LINK = "FINDINGS.md"  # beside SUMMARY.md, in reference/h200
MODELS = sources.one("models")  # real models: a section of their own, not the blog's cells
ALSO = (
    "host µs measured on several machines, compile targets taken apart, FlexAttention, "
    "attention over length, dynamic shapes, what training saves, the sweep's cost"
)


def summary(data: dict) -> list[str]:
    """The summary's lines: a scope line, then one bullet per question that the rows answer."""
    every = forward.rows(data["runs"])
    lines = [scope(data["runs"])]
    for line in (blog(data), pays(every), costs(data, every), trains(data), models(every),
                 flex_line(data)):  # fmt: skip
        if line:
            lines.append(f"- {line}")
    lines.append(f"- Also in [FINDINGS.md]({LINK}): {ALSO}.")
    return lines[:MAX_LINES]


def scope(runs: pd.DataFrame) -> str:
    ok = runs[runs["status"] == "ok"] if "status" in runs else runs
    first = ok.iloc[0] if len(ok) else {}
    dates = pd.to_datetime(ok.get("started_at", pd.Series(dtype=str)), errors="coerce").dropna()
    when = ""
    if len(dates):
        lo, hi = dates.min().date(), dates.max().date()
        when = f", {lo}" + (f" to {hi}" if hi != lo else "")
    return (
        f"{first.get('device_name', 'GPU')}, torch {first.get('torch_version', '?')}, bf16, "
        f"{len(ok)} ok cells{when}. Speedups are paired (eager and compiled in one process), "
        f"{_interval(ok)}. Every table, and why each cell moved: [{LINK}]({LINK})."
    )


def _interval(ok: pd.DataFrame) -> str:
    """What the brackets cover: the cell's fresh processes where a source ran each cell in
    several (v3: part1-3, repeats=3), one process's pairs where it ran each once."""
    n = pd.to_numeric(ok.get("n_repeats", pd.Series(1, ok.index)), errors="coerce").fillna(1)
    src = ok["source"] if "source" in ok else pd.Series("", ok.index)
    many = n.groupby(src).min()
    multi = [s for s, k in many.items() if k > 1]
    if not multi:
        return "[95% interval over one process's pairs]"
    if len(multi) == len(many):
        return "[95% interval over processes]"
    return (
        f"[95% interval over the cell's processes in {', '.join(multi)}, over one process's "
        "pairs elsewhere]"
    )


def blog(data: dict) -> str:
    """How many of the blog's claims held, which differed, and the fastest eager attention."""
    said = [x for x in claims(data) if x.startswith("- ")]
    if not said:
        return ""
    held = [x for x in said if "**holds**" in x and "**differs**" not in x]
    differ = [re.sub(r"^- ", "", x.split(":", 1)[0]) for x in said if "**differs**" in x]
    other = len(said) - len(held) - len(differ)
    fastest = _fastest(data["runs"])
    return (
        f"The blog's claims (A100), re-checked: {len(held)} of {len(said)} hold, "
        f"{len(differ)} differ ({'; '.join(differ)})"
        + (f", {other} {'varies' if other == 1 else 'vary'} between sweeps" if other else "")
        + (f". {fastest}" if fastest else "")
        + "."
    )


def _fastest(runs: pd.DataFrame) -> str:
    src = claims_source(runs) if "source" in runs and len(runs) else None
    att = eager_attention(runs, src) if src else runs.iloc[:0]
    if att.empty or "flash" not in set(att["variant"]):
        return ""
    best, flash = att.iloc[0], att[att["variant"] == "flash"].iloc[0]
    return (
        f"The fastest eager attention is {best['variant']} at "
        f"{sig(float(best['latency_median_us']))} µs a call, flash "
        f"{sig(float(flash['latency_median_us']))} µs"
    )


def _default_fwd(every: list[dict]) -> list[dict]:
    return [x for x in every if x.get("pass", "fwd") == "fwd" and x["mode"] == "default"]


def pays(every: list[dict]) -> str:
    """Where compiling pays (default mode, forward): the largest paired speedups, with kernels."""
    won = [x for x in _default_fwd(every) if x["verdict"] == "faster" and x["source"] != MODELS]
    if not won:
        return ""
    won = sorted(won, key=lambda x: -x["sp"])[:4]
    return (
        "Compiling pays where Inductor fuses (default mode, forward): "
        + ", ".join(
            f"{x['label']} {sp_text(x)} ({count(x['eager_kernels'])} → "
            f"{count(x['kernels_per_step'])} kernels)"
            for x in won
        )
        + "."
    )


def costs(data: dict, every: list[dict]) -> str:
    """Where it costs (default mode, forward), each with its cause, and the host rule."""
    lost = [x for x in _default_fwd(every) if x["verdict"] == "slower" and x["source"] != MODELS]
    if not lost:
        return ""
    lost = sorted(lost, key=lambda x: x["sp"])[:4]
    cells = ", ".join(
        f"{x['label']} {sp_text(x)}" + (f" ({cause(x)})" if cause(x) else "") for x in lost
    )
    measured = machines.headline(data)
    said = ""
    if measured:
        h = measured
        said = (
            f"; a figure for {machines.kernels_text(h)} calls ({h['workloads']}): "
            f"host-bound and compiled without CUDA graphs, such a call costs the host "
            f"{h['median']:+.1f} µs more than eager's (median over {h['n']} cells, {h['on']}; "
            f"{h['lo']:+.1f} to {h['hi']:+.1f}; {h['units']:+.2f} host units at "
            f"G = {sig(h['g_lo'])}–{sig(h['g_hi'])} µs), so a call with less GPU work than its "
            f"compiled host time ({sig(h['host_lo'])}–{sig(h['host_hi'])} µs) loses unless its "
            "kernels save more"
        )
    return f"It costs where one library kernel already does the work: {cells}{said}."


def trains(data: dict) -> str:
    """What a training pass keeps of the forward's speedup (default mode, paired)."""
    raw = data["raw"]
    if "pass" not in raw or not raw["pass"].isin(("fwd_bwd", "train_step")).any():
        return ""
    c = training.cells(raw[raw["pass"].isin(("fwd_bwd", "train_step"))])
    c = c[(c["compile"] == "default") & c["speedup_paired"].notna()]
    if "source" in c:
        c = c[c["source"] != MODELS]
    if c.empty:
        return ""
    parts = []
    for p, g in c.groupby("pass", sort=False):
        g = g.assign(sp=g["speedup_paired"]).sort_values("sp", ascending=False)
        parts.append(", ".join(_by_variant(g)) + f" ({p})")
    spread = (
        "; timed with the main and autograd threads on different cores, which understates "
        "compiled training: FINDINGS.md says by how much"
        if not one_core(c).any()
        else ""
    )  # rows made before timing.one_core record no core
    return (
        f"Training keeps less (default mode, paired{spread}): " + "; ".join(parts)
        + _host_step(c) + "."
    )  # fmt: skip


def _by_variant(g: pd.DataFrame) -> list[str]:
    """'flash 0.976x `part3_bwd`, 0.814x `targets_bwd`': a variant measured in several sources
    once, each figure with its source (``g`` sorted by ``sp``, fastest first)."""
    out = []
    for v, x in g.groupby("variant", sort=False):
        # fast rows first: a slow or mixed row's figure follows, its phase said
        x = x.assign(_slow=[bool(phase_note(r)) for _, r in x.iterrows()])
        x = x.sort_values("_slow", kind="stable")
        one = len(x) == 1 or "source" not in x
        out.append(f"{v} " + ", ".join(
            f"{sig(r['sp'])}x{phase_note(r)}" + ("" if one else f" `{r['source']}`")
            for _, r in x.iterrows()))  # fmt: skip
    return out


def _host_step(c: pd.DataFrame) -> str:
    """The slowest training cell whose compiled latency runs over 1.1x its GPU work: its step's
    latency against its GPU work (latency and device time only: no host time is measured). Only cells timed on one core (``timing_core``), as
    in ``speed.training.host_steps``: with the threads spread, the backward's thread ran on
    other cores in other phases, and the step's latency read the spread, not the host."""
    lat = pd.to_numeric(c.get("latency_median_us"), errors="coerce")
    gpu = pd.to_numeric(c.get("gpu_us_per_step"), errors="coerce")
    hb = c[one_core(c) & (c["speedup_paired"] < 1) & (lat > 1.1 * gpu)]
    fast = hb[[is_fast(r) for _, r in hb.iterrows()]]
    hb = fast if len(fast) else hb  # the headline prefers a fast row; else it says the phase
    if hb.empty:
        return ""
    x = hb.loc[hb["speedup_paired"].idxmin()]
    return (
        f". Where it loses, its device time does not: compiled {x['variant']} takes "
        f"{sig(float(x['latency_median_us']))} µs a {x['pass']} step{phase_note(x)} for "
        f"{sig(float(x['gpu_us_per_step']))} µs of GPU work"
    )


def models(every: list[dict]) -> str:
    """Real models, forward under default: paired speedup and kernels a step."""
    m = [x for x in _default_fwd(every) if x["source"] == MODELS]
    if not m:
        return ""
    return (
        "Real models (forward, default mode): "
        + ", ".join(
            f"{x['label']} {sp_text(x)} ({count(x['eager_kernels'])} → "
            f"{count(x['kernels_per_step'])} kernels)"
            for x in sorted(m, key=lambda x: -x["sp"])
        )
        + "."
    )


def flex_line(data: dict) -> str:
    """FlexAttention against flash and cuDNN at the longest causal length all three ran, and
    its useful rate with a sliding window over length."""
    r = of(data["runs"], flex.SOURCE)
    if r.empty:
        return ""
    r = r[r["pass"] == "fwd"]
    parts = []
    for seq in reversed(flex.RATIO_AT):
        f, fa, cu = (flex.cell_at(r, v, "causal", seq) for v in ("flex", "flash", "cudnn"))
        if all(x is not None and x["status"] == "ok" for x in (f, fa, cu)):
            lat = f["latency_median_us"]
            slow = [
                f"{x['variant']} host {x['timing_phase']}" for x in (f, fa, cu) if phase_note(x)
            ]
            parts.append(
                f"causal at seq_len {seq} it takes {xs(lat / fa['latency_median_us'])} flash's "
                f"time and {xs(lat / cu['latency_median_us'])} cuDNN's"
                + (f" ({', '.join(slow)})" if slow else "")
            )
            break
    window = r[(r["variant"] == "flex") & (r["mask"] == "sliding_window") & (r["status"] == "ok")]
    fast = window[[is_fast(x) for _, x in window.iterrows()]]
    left = len(window) - len(fast)
    over = "over length "
    if len(fast) >= 2 and left:  # the fast rows; the others' phase is said in FINDINGS.md
        window = fast
        over = f"over the {len(fast)} lengths timed in the host's fast phase ({left} not) "
    elif left:
        over = f"over length ({left} of them not timed in the host's fast phase) "
    if len(window) >= 2:
        u = column(window, "tflops_useful")
        parts.append(
            f"with a sliding window its useful rate runs {sig(u.min())}–{sig(u.max())} TFLOP/s "
            f"({u.max() / u.min():.2f}x apart) "
            + over
            + (
                "(the window's elements)"
                if flex.by_element(r)
                else "(counting its block mask's whole tiles, as rows before v3 do)"
            )
        )
    return ("FlexAttention: " + "; ".join(parts) + ".") if parts else ""


def block(path: Path) -> str:
    """The summary between the markers of ``path`` (reference/h200/SUMMARY.md)."""
    return markers.between(path, START, END)


def write(path: Path, lines: list[str]) -> None:
    """Put the summary between the markers of ``path``, keeping the rest of the file."""
    markers.put(path, START, END, "\n".join(lines) + "\n")
