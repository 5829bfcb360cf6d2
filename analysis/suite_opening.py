"""The report's opening for a sweep with suite rows (``+experiment=suite``, ``suite_cpu``): the
suite's answer before anything else, so that a newcomer reads, for their kind of model and
regime, which mode, how much faster and what it costs to compile, in one screen.

Per source with suite rows (a regime or a model kind): the per-kind table
(``analysis.tables.suite``), the figure (``analysis.figures.suite``), the per regime, pass and
mode table, the per model table and the HUD's figures as an anchor. A sweep without suite rows
gets nothing here: its report opens as before. CSV only; no torch.
"""

from __future__ import annotations

import html
from pathlib import Path

import matplotlib.pyplot as plt
import pandas as pd

from analysis import page
from analysis.figures.suite import suite as suite_figure
from analysis.pairs import table as md_rows
from analysis.style import Skip, save
from analysis.tables import hud
from analysis.tables.suite import model_table
from analysis.tables.suite_stats import is_suite, kind_table, mode_table

TITLE = "Your model, measured: the suite"
LEAD = (
    "Find your kind of model and regime (latency: batch 1, a short sequence, a decoder's one "
    "decode step; throughput: 32 images or 8 × 512 tokens on CUDA, smaller on the CPU). The "
    "mode is the one with the highest geometric-mean paired speedup over that kind's models, "
    "each ok under eager and "
    "the mode (a model that failed on one side is left out, and named below); the interval is "
    "a 95% t-interval on the log speedups over those models, their range under 3. Compile s "
    "and first call s are medians: what the mode costs before its first fast call."
)
MODES_NOTE = (
    "Pass rate: ok rows over the rows planned (a failure is a row). Geomean over the models "
    "ok on both sides. Memory compression: eager's peak over the mode's (above 1: less memory). "
    "CUDA-graph share: of the device time, the part a CUDA graph's replay launched (CUDA only)."
)
MODELS_NOTE = (
    "Per model: its fastest mode with the paired speedup's 95% interval (over pairs), the calls "
    "it takes to pay the compile back (payback_calls; a mode that is faster only), what Dynamo's "
    "guards cost a call where the sweep ran compile.stance=default,skip_guard_eval_unsafe, what "
    "bounds the call (serial: it waits for the GPU inside, host and device in series) and the "
    "one cause its rows support."
)


def _frames(d: dict, src: str) -> dict:
    return {k: (v[v["source"] == src] if isinstance(v, pd.DataFrame) and "source" in v else v)
            for k, v in d.items()}  # fmt: skip


def _md(df: pd.DataFrame) -> list[str]:
    return [*md_rows(list(df.columns), df.astype(str).values.tolist()), ""]


def _one(d: dict, src: str, many: bool, out: Path) -> tuple[list[str], str]:
    """The opening of one source: (report.md's lines, report.html's section)."""
    ds = _frames(d, src)
    runs = ds["runs"]
    anchor = page.anchor("suite", src) if many else "suite"
    title = f"{TITLE} (`{src}`)" if many else TITLE
    kinds, modes = kind_table(runs), mode_table(runs)
    models = model_table(runs, ds.get("kernels"), ds.get("autotune"))
    md = [f"## {title}", "", LEAD, "", *_md(kinds)]
    body = (f"<h2 id='{anchor}'>{html.escape(title.replace('`', ''))}</h2>"
            f"<p>{html.escape(LEAD)}</p>{page.table(kinds, sortable=False)}")  # fmt: skip
    try:
        fig, sentence = suite_figure(ds)
    except Skip as e:
        md += [f"_(no figure: {e})_", ""]
    else:
        stem = out / (f"suite_{page.anchor(src)}" if many else "suite")
        save(fig, stem)
        plt.close("all")
        rel = stem.with_suffix(".png").relative_to(out).as_posix()
        md += [sentence, "", f"![speedup by model and mode]({rel})", ""]
        body += page.figure(stem.with_suffix(".png"), "Speedup by model and mode", sentence,
                            f"{anchor}-figure")  # fmt: skip
    anchors = hud.table()
    for head, note, t in (("Per regime, pass and mode", MODES_NOTE, modes),
                          ("Per model", MODELS_NOTE, models),
                          ("Anchor: PyTorch's HUD", f"Other models, another machine and torch: "
                           f"an anchor, not a baseline. Its harness: {hud.HOW}.", anchors)):  # fmt: skip
        md += [f"### {head}", "", note, "", *_md(t)]
        body += (f"<h3>{html.escape(head)}</h3><p class='muted'>{html.escape(note)}</p>"
                 + page.table(t))  # fmt: skip
    return md, body


def opening(d: dict, out: Path) -> tuple[list[str], str, list[tuple[int, str, str]]]:
    """(report.md's lines, report.html's lead, contents entries) for the sources with suite
    rows; all empty for a sweep without any."""
    runs = d["runs"]
    if runs.empty or not is_suite(runs).any():
        return [], "", []
    srcs = list(dict.fromkeys(runs.loc[is_suite(runs), "source"]))
    many = runs["source"].nunique() > 1
    md, body, toc = [], "", []
    for src in srcs:
        m, b = _one(d, src, many, out)
        md += m
        body += b
        toc.append((1, page.anchor("suite", src) if many else "suite",
                    f"{TITLE} ({src})" if many else TITLE))  # fmt: skip
    return md, body, toc
