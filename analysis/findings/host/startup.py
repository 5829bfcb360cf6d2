"""What compiling costs before the first fast call: the first call after a cold start, a warm
restart and cache artifacts; the whole model against its repeated block compiled by region; what
Dynamo's guards cost a call; whether CUDA graphs applied. Part of ``python -m analysis.findings``.

Reads ``DIR/startup/runs.csv`` (``benchmarks/host_reference.sh start guards cudagraphs
regional`` writes one sweep per set; the rows carry a ``source`` column naming it) and
``machine.md`` / ``survey.md`` beside it. The tables are analysis.tables.startup's and
analysis.tables.cudagraphs'; each sits beside the published figures it answers.
"""

from __future__ import annotations

import re

import pandas as pd

from analysis import sources
from analysis.load import TEXT
from analysis.pairs import table
from analysis.tables import cudagraphs, startup

DIR = sources.STARTUP
NOISE = 0.15  # a guard share below it is within what one cell's host units move (3-14%)
FIGURE = f"{DIR}/regional"  # .png and .svg, drawn by ``draw`` (findings --write)
PUBLISHED = {
    "start": "Published: `save_cache_artifacts` / `load_cache_artifacts` took a first call from "
    "3.36 s to 1.03 s, against 0.25 s eager, on an H100 (pytorch #172547); a warm start in vLLM "
    "still pays about 5 s of Dynamo tracing (vllm #16848).",
    "regional": "Published: regional compilation took Flux-1-Dev's compile on an H100 from 67.4 s "
    "to 9.6 s with its latency kept (4.5 s against 6.7 s eager; PyTorch devlog, 2026), and "
    "Llama-3.2-1B's from 10.7 s to 1.95 s, but at 9.7 ms against 6.3 ms a call at 1x128 "
    "(accelerate PR #3529).",
    "guards": "Published: guard evaluation went from about 1 ms to 3–4 ms a call between torch "
    "2.7 and 2.12 in one report (pytorch #185886).",
    "cudagraphs": "Users ask for a final report of what CUDA graphs captured and what they did "
    "not (pytorch #124506).",
}


def _rows(d) -> pd.DataFrame | None:
    p = d / DIR / "runs.csv" if d else None
    if p is None or not p.exists():
        return None
    return pd.read_csv(p, dtype=TEXT, low_memory=False)


def _machine(d, r: pd.DataFrame) -> str:
    md, sv = d / DIR / "machine.md", d / DIR / "survey.md"
    boot = re.search(r"boot_id (\w{8})", md.read_text()) if md.exists() else None
    levels = re.findall(r"fast level ([\d.]+) us .*?(\d+)% of them", sv.read_text()) if (
        sv.exists()) else []  # fmt: skip
    gpu = ", ".join(sorted(r["device_name"].dropna().astype(str).unique()))
    torch = ", ".join(sorted(r["torch_version"].dropna().astype(str).unique()))
    code = ", ".join(sorted(r["code_hash"].dropna().astype(str).unique()))
    survey = "; ".join(f"{lv} µs ({share}% within 1.3x)" for lv, share in levels)
    return (
        f"{gpu}, torch {torch}, one code hash ({code}), boot {boot.group(1) if boot else '?'}; "
        f"host gauge surveys, before and after each command: {survey or '?'}"
    )


def _ratio_range(pairs) -> str:
    xs = [a / b for a, b in pairs if a and b]
    return f"{min(xs):.1f}–{max(xs):.1f}x" if xs else "–"


def _start_text(r: pd.DataFrame) -> str:
    art = r[(r["start"] == "artifacts") & r["cold_first_call_s"].notna()]
    if art.empty:
        return ""
    cut = _ratio_range(zip(art["cold_first_call_s"], art["first_call_s"], strict=True))
    share = art["first_call_dynamo_share"]
    cells = ", ".join(
        f"{x['variant']} {x['cold_first_call_s']:.2f} → {x['first_call_s']:.2f} s"
        for _, x in art.sort_values("cold_first_call_s").iterrows()
    )
    warm = r[(r["start"] == "warm") & r["cold_first_call_s"].notna()]
    cut_w = _ratio_range(zip(warm["cold_first_call_s"], warm["first_call_s"], strict=True))
    return (
        f"Cache artifacts cut the first call {cut} against the same cell's cold start in the "
        f"primer process, a fresh interpreter ({cells}); what is left is "
        f"{share.min():.0%}–{share.max():.0%} Dynamo, which traces again in every new process."
        + (f" A warm restart (the caches on disk) cut it {cut_w}." if len(warm) else "")
    )


def _regional_text(r: pd.DataFrame) -> str:
    reg = r["regional"].astype(str).str.lower().isin(["true", "1", "1.0"])
    whole, region = r[~reg], r[reg]
    keys = ["variant", "layers"]
    m = whole.merge(region, on=keys, suffixes=("_w", "_r"))
    if m.empty:
        return ""
    bits = [
        f"{x['variant']} x{int(x['layers'])} {x['compile_s_w']:.1f} → {x['compile_s_r']:.1f} s, "
        f"{x['speedup_paired_w']:.2f}x → {x['speedup_paired_r']:.2f}x"
        for _, x in m.sort_values(["variant", "layers"]).iterrows()
    ]
    how = ", ".join(sorted(region["regional_method"].dropna().astype(str).unique()))
    return (
        f"Compiling the repeated block by region ({how}) cut compile time "
        f"{_ratio_range(zip(m['compile_s_w'], m['compile_s_r'], strict=True))}, and the paired speedup "
        f"moved as follows: {'; '.join(bits)}. It traces one block's FX nodes instead of "
        "every block's, and fusion stops at block edges (more kernels a step)."
    )


def _guards_text(r: pd.DataFrame) -> str:
    cols = ["host_units", "host_gauge_us"]
    on = r[r["compile_stance"] == "default"].groupby("variant")[cols].median()
    off = r[r["compile_stance"] == "skip_guard_eval_unsafe"].groupby("variant")[cols].median()
    both = sorted(on.index.intersection(off.index))
    if not both:
        return ""
    units = {v: on.at[v, "host_units"] - off.at[v, "host_units"] for v in both}
    share = {v: units[v] / on.at[v, "host_units"] for v in both}
    real = [v for v in both if share[v] >= NOISE]
    said = [f"{v} {units[v]:.2f} host units a call ({units[v] * on.at[v, 'host_gauge_us']:.0f} µs "
            f"at G {on.at[v, 'host_gauge_us']:.1f}), {share[v]:.0%} of its compiled host cost"
            for v in real]  # fmt: skip
    rest = [f"{v} {share[v]:.0%}" for v in both if v not in real]
    return (
        (f"Guards cost {'; '.join(said)}. " if said else "")
        + (
            f"Under {NOISE:.0%} ({', '.join(rest)}), the difference is within what one cell's "
            "host units move between processes and machines (3–14%, benchmarks/README.md). "
            if rest
            else ""
        )  # fmt: skip
        + "Skipping guards is unsafe: an input that changes is no longer caught."
    )


def _cudagraphs_text(r: pd.DataFrame) -> str:
    share = r["cudagraph_kernel_share"].dropna()
    if share.empty:
        return ""
    out_us = (1 - r["cudagraph_kernel_share"]) * r["kernel_us_per_step"]
    recorded = int((r["cudagraph_graphs"].fillna(0) > 0).sum())
    whole = int((r["cudagraph_partitions_skipped"].fillna(0) == 0).sum())
    return (
        f"{recorded} of {len(r)} cells recorded a CUDA graph, {whole} with no partition left "
        f"out, and ran {share.min():.0%}–{share.max():.0%} of their device time inside it; "
        f"{out_us.min():.0f}–{out_us.max():.0f} µs a call ran outside it (kernels.csv of the "
        "sweep names those kernels)."
    )


def section(data: dict) -> list[str]:
    d = data.get("dir")
    r = _rows(d)
    if r is None:
        return ["", "_What compiling costs before the first fast call: needs `startup/runs.csv` "
                "(benchmarks/host_reference.sh start guards cudagraphs regional), not in these "
                "results._"]  # fmt: skip
    out = [
        "",
        "## What compiling costs before the first fast call",
        "",
        f"{_machine(d, r)}. Sources {', '.join(sorted(r['source'].dropna().unique()))} "
        "(`benchmarks/host_reference.sh`; `python -m analysis.tables startup` prints the same tables "
        "for any sweep). Speedups are paired, with their 95% interval over the cell's pairs in "
        "one process; host figures are measured (host µs and units, G the host's speed). "
        "GPT-2 is at the study's 2 layers unless its row says x12.",
    ]
    by = {s: r[r["source"].astype(str).str.startswith(s)] for s in PUBLISHED}
    parts = (
        ("start", "The first call: cold, a warm restart, cache artifacts", startup.start_table,
         _start_text),
        ("regional", "The whole model against its repeated block compiled by region",
         startup.regional_table, _regional_text),
        ("guards", "What Dynamo's guards cost a call", startup.guard_table, _guards_text),
        ("cudagraphs", "Did CUDA graphs apply? (part3 under reduce-overhead)",
         lambda x: cudagraphs.table(x, None), _cudagraphs_text),
    )  # fmt: skip
    for key, title, make, say in parts:
        t = make(by[key]) if len(by[key]) else pd.DataFrame()
        if t.empty:
            continue
        out += ["", f"### {title}", "", *table(list(t.columns), t.values.tolist()), ""]
        text = say(by[key])
        out += [f"{text} {PUBLISHED[key]}".strip()]
        if key == "regional":
            out += ["", f"![What does compiling by region trade?]({FIGURE}.png)"]
    return out


def draw(d) -> str | None:
    """The regional figure (analysis.figures.regional) of ``d/startup``'s rows into ``d/FIGURE``
    .png and .svg; its sentence, or None without them."""
    import matplotlib.pyplot as plt

    # deferred: matplotlib, the figure's alone (the section's text needs none)
    from analysis.figures.regional import regional
    from analysis.style import DPI, Skip

    r = _rows(d)
    if r is None:
        return None
    try:
        fig, sentence = regional({"runs": r[r["source"].astype(str).str.startswith("regional")]})
    except Skip as e:
        return str(e)
    fig.savefig(d / f"{FIGURE}.png", dpi=DPI)
    fig.savefig(d / f"{FIGURE}.svg", metadata={"Date": None})
    plt.close(fig)
    return sentence
