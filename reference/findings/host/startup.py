"""What compiling costs before the first fast call: the first call after a cold start, a warm
restart and cache artifacts; the whole model against its repeated block compiled by region; what
Dynamo's guards cost a call; whether CUDA graphs applied. Part of ``python -m reference.findings``.

Reads ``DIR/startup/runs.csv`` (``benchmarks/host_reference.sh start guards cudagraphs
regional`` writes one sweep per set; the rows carry a ``source`` column naming it) and
``machine.md`` / ``survey.md`` beside it (a line ``boot XXXXXXXX`` there starts that machine's
surveys). The rows may come from several machines (reference.findings.host.boots): each table
then names the machine of each row, the first machine's figures are stated in full and
another's as ratios to them. The tables are analysis.tables.startup's and
analysis.tables.cudagraphs'; each sits beside the published figures it answers.
"""

from __future__ import annotations

import re

import pandas as pd

from analysis.load import TEXT
from analysis.pairs import table
from analysis.tables import cudagraphs, host_model, startup
from reference import sources
from reference.findings.host import boots, guards

DIR = sources.STARTUP
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
    # repeats: one row per cell and machine, their medians
    return startup.one_per_cell(pd.read_csv(p, dtype=TEXT, low_memory=False))


def _ratio_range(pairs) -> str:
    """'1.4–2.1x' over the ratios a/b of ``pairs`` with both sides measured."""
    xs = [a / b for a, b in pairs if pd.notna(a) and pd.notna(b) and a > 0 and b > 0]
    if not xs:
        return "–"
    lo, hi = f"{min(xs):.1f}", f"{max(xs):.1f}"
    return f"{lo}x" if lo == hi else f"{lo}–{hi}x"


def _start_one(r: pd.DataFrame) -> str:
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
        f"cache artifacts cut the first call {cut} against the same cell's cold start in the "
        f"primer process, a fresh interpreter ({cells}){_against_cold(r, art)}; what is left is "
        f"{share.min():.0%}–{share.max():.0%} Dynamo, which traces again in every new process."
        + (f" A warm restart (the caches on disk) cut it {cut_w}{_against_cold(r, warm)}."
           if len(warm) else "")
    )  # fmt: skip


def _against_cold(r: pd.DataFrame, x: pd.DataFrame) -> str:
    """', X against the cell's own `cold` row': the cut measured against the cold cell, started
    as the warm and artifacts cells are (forked from the sweep's warm parent), where a fresh
    interpreter's first call (the primer's) is slower; '' without cold rows."""
    key = lambda y: host_model.cell_key(y, ("compile", "compile_stance", "layers"))  # noqa: E731
    c = r[r["start"] == "cold"]
    cold = c["first_call_s"].groupby(key(c)).median()
    pairs = [(cold.get(k), f) for k, f in zip(key(x), x["first_call_s"], strict=True)]
    said = _ratio_range(pairs)
    return "" if said == "–" else f" and {said} against the cell's own cold row (started as it is)"


def _start_text(r: pd.DataFrame) -> str:
    """The first machine's cut in full; each other machine's first calls as ratios to the
    first's, cell by cell, per start: how much of a start is the machine."""
    machines = [(m, g) for m, g in boots.by_machine(r) if _start_one(g)]
    if not machines:
        return ""
    (m0, g0), rest = machines[0], machines[1:]
    text = _start_one(g0)
    if not rest:
        return text[0].upper() + text[1:]
    out = [f"On the {m0}, {text}"]
    key = ["variant", "start"]
    for m, g in rest:
        j = g.merge(g0, on=key, suffixes=("", "_0"))
        ratios = []
        for what, col, rows in (
            ("the primers' cold starts", "cold_first_call_s", j[j["start"] != "cold"]),
            ("the cold cells' first calls", "first_call_s", j[j["start"] == "cold"]),
            ("first calls from artifacts", "first_call_s", j[j["start"] == "artifacts"]),
            ("first calls after a warm restart", "first_call_s", j[j["start"] == "warm"]),
        ):
            pairs = list(zip(rows[col], rows[f"{col}_0"], strict=True))
            if pairs:
                ratios.append(f"{what} {_ratio_range(pairs)}")
        cut = _start_one(g).split(" against")[0].replace("cache artifacts cut the first call ", "")
        out.append(
            f"On the {m}, the same cells took, against the {m0}: {', '.join(ratios)}; artifacts "
            f"cut its first call {cut}{boots.other_code(g, g0)}. Compiling in default mode is "
            "host work (tracing, code generation, Triton's compiler; no autotuning), so a start "
            "moves with the host: compare the machines' host gauges above."
        )
    return " ".join(out)


def _regional_pairs(r: pd.DataFrame) -> pd.DataFrame:
    """Each workload's whole-model row beside its regional row: columns ``*_w`` and ``*_r``."""
    reg = r["regional"].astype(str).str.lower().isin(["true", "1", "1.0"])
    return r[~reg].merge(r[reg], on=["variant", "layers"], suffixes=("_w", "_r"))


def _fast(x, side: str) -> bool:
    return str(x.get(f"timing_phase_{side}")) == "fast"


def _regional_one(m: pd.DataFrame) -> str:
    """The compile cut and, where both sides were timed in the host's fast phase, the paired
    speedup whole → by region; a pair with a side outside it is not compared (its phase said)."""
    bits = []
    for _, x in m.sort_values(["variant", "layers"]).iterrows():
        said = (
            f"{x['variant']} x{int(x['layers'])} {x['compile_s_w']:.1f} → {x['compile_s_r']:.1f} s"
        )
        if _fast(x, "w") and _fast(x, "r"):
            said += f", {x['speedup_paired_w']:.2f}x → {x['speedup_paired_r']:.2f}x"
        else:
            phases = f"host {x.get('timing_phase_w')} → {x.get('timing_phase_r')}"
            said += f", speedups not compared ({phases}: not both in the fast phase)"
        bits.append(said)
    cut = _ratio_range(zip(m["compile_s_w"], m["compile_s_r"], strict=True))
    return (f"cut compile time {cut}, and the paired speedup (fast phase on both sides only) "
            f"moved as follows: {'; '.join(bits)}")  # fmt: skip


def _regional_text(r: pd.DataFrame) -> str:
    """Per machine: the compile cut and the speedups; where two machines ran the same
    workloads, how far one cell's compile seconds moved between them."""
    machines = [(m, _regional_pairs(g)) for m, g in boots.by_machine(r)]
    machines = [(m, p) for m, p in machines if not p.empty]
    if not machines:
        return ""
    how = ", ".join(sorted(r["regional_method"].dropna().astype(str).unique()))
    (m0, p0), rest = machines[0], machines[1:]
    head = f"Compiling the repeated block by region ({how})"
    out = [f"{head} {_regional_one(p0)}." if not rest else f"On the {m0}, {head.lower()[0]}"
           f"{head[1:]} {_regional_one(p0)}."]  # fmt: skip
    rows = dict(boots.by_machine(r))
    for m, p in rest:
        j = p.merge(p0, on=["variant", "layers"], suffixes=("", "_0"))
        moved = [a / b for c in ("compile_s_w", "compile_s_r")
                 for a, b in zip(j[c], j[f"{c}_0"], strict=True)
                 if pd.notna(a) and pd.notna(b) and a > 0 and b > 0]  # fmt: skip
        said = f"On the {m}, it {_regional_one(p)}"
        if moved:
            said += (f". One cell's compile seconds moved {min(moved):.2f}–{max(moved):.2f}x "
                     f"against the {m0}{boots.other_code(rows[m], rows[m0])}: a compile is one "
                     "sample, timed through the host's fast and slow phases, so only a cut that "
                     "holds on both is the workload's (`repeats=3` gives a cell's median over "
                     "fresh processes)")  # fmt: skip
        out.append(said + ".")
    out.append("It traces one block's FX nodes instead of every block's, and fusion stops at "
               "block edges (more kernels a step).")  # fmt: skip
    return " ".join(out)


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
        f"{boots.describe(d / DIR, r)}. Made by `benchmarks/host_reference.sh`; `python -m "
        "analysis.tables startup` prints the same tables for any sweep. Speedups are paired, "
        "with their 95% interval over the cell's pairs in one process; host figures are "
        "measured (host µs and units, G the host's speed). GPT-2 is at the study's 2 layers "
        "unless its row says x12.",
    ]
    by = {s: r[r["source"].astype(str).str.startswith(s)] for s in PUBLISHED}
    parts = (
        ("start", "The first call: cold, a warm restart, cache artifacts", startup.start_table,
         _start_text),
        ("regional", "The whole model against its repeated block compiled by region"
         + _gpus(by["regional"], d), startup.regional_table, _regional_text),
        ("guards", "What Dynamo's guards cost a call" + _gpus(by["guards"], d),
         lambda x: guards.mark_table(startup.guard_table(x), x[x["status"] == "ok"]),
         lambda x: guards.text(x, guards.spread(d), r[r["status"] == "ok"])),
        ("cudagraphs", "Did CUDA graphs apply? " + _rerun(by["cudagraphs"]),
         lambda x: cudagraphs.table(x, None), _cudagraphs_text),
    )  # fmt: skip
    for key, title, make, say in parts:
        t = make(by[key]) if len(by[key]) else pd.DataFrame()
        if t.empty:
            continue
        out += ["", f"### {title}", "", *table(list(t.columns), t.values.tolist()), ""]
        text = say(by[key][by[key]["status"] == "ok"])
        out += [f"{text} {PUBLISHED[key]}".strip()]
        if key == "regional":
            m, _ = _drawn(r)
            out += ["", f"![What does compiling by region trade? On the {m}]({FIGURE}.png)"]
    return out


def _gpus(r: pd.DataFrame, d) -> str:
    """' (H100 80GB HBM3 rows only, no H200 row)' where the rows of a part come from one GPU
    model other than the one its folder is named for (reference/h200 → H200), which the reader
    of "Findings on the H200" must be told; '' otherwise, and for a folder named for no GPU."""
    gpu = re.fullmatch(r"[hab]\d{2,3}", d.resolve().name.lower()) if d else None
    names = sorted(boots.column(r, "device_name").str.replace("NVIDIA ", "", regex=False).unique())
    if gpu is None or len(names) != 1 or gpu.group(0).upper() in names[0]:
        return ""
    return f" ({names[0]} rows only, no {gpu.group(0).upper()} row)"


def _rerun(r: pd.DataFrame) -> str:
    """'(a re-run of part3's cells under reduce-overhead, …)': the cudagraphs rows are their own
    sweep at their own code hash, not the `part3` source."""
    code = ", ".join(sorted(boots.column(r, "code_hash").unique()))
    gpus = ", ".join(
        sorted(boots.column(r, "device_name").str.replace("NVIDIA ", "", regex=False).unique())
    )
    return (f"(a re-run of part3's attention cells under reduce-overhead: source `cudagraphs` in "
            f"`startup/`, {gpus}, code {code}; not the `part3` source)")  # fmt: skip


def _drawn(r: pd.DataFrame) -> tuple[str, pd.DataFrame]:
    """(machine, rows) the regional figure draws: one machine, the first with a workload
    compiled both ways (a point is one sample, never a median across machines)."""
    reg = r[r["source"].astype(str).str.startswith("regional") & (r["status"] == "ok")]
    drawn = [(m, g) for m, g in boots.by_machine(reg) if not _regional_pairs(g).empty]
    return drawn[0] if drawn else ("no machine", reg)


def draw(d) -> str | None:
    """The regional figure (analysis.figures.regional) of ``d/startup``'s rows into ``d/FIGURE``
    .png and .svg; its sentence, or None without them."""
    # deferred: matplotlib, the figure's alone (the section's text needs none)
    from analysis.figures.regional import regional
    from analysis.style import Skip, save

    r = _rows(d)
    if r is None:
        return None
    try:
        fig, sentence = regional({"runs": _drawn(r)[1]})
    except Skip as e:
        return str(e)
    save(fig, d / FIGURE)
    return sentence
