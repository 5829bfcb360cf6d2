"""From a sweep's CSVs to figures and a report a person can read in a minute.

    python -m analysis.report                       # the newest sweep under outputs/
    python -m analysis.report outputs/sweeps/A outputs/sweeps/B --out outputs/both
    python -m analysis.report 'results/*'           # globs work; a `source` column tells them apart

Reads only CSVs (never torch): a laptop can read a GPU machine's results. Writes into
``<sweep>/report/`` (one sweep) or ``--out``: figures as PNG and SVG (one set per source, in
``<source>/`` when there are several), ``report.md``, a self-contained ``report.html`` (table
of contents, one section per source, sortable tables, figures with their sentence, links to
each cell's generated kernels and trace), and the combined tidy ``runs.csv``, ``kernels.csv``
and ``revealed.csv``. A figure that cannot be drawn is skipped with one line saying why;
failed rows never crash the report. A sweep's ``runs.csv`` is checked against its run dirs
first: where it misses a finished cell, lists a cell whose run dir is gone, or is cut short or
missing, it is rebuilt from them, with one line on stderr saying so (``analysis.load``).
"""

# Long: report.md and report.html are built together, section by section, so that the two never
# disagree.

from __future__ import annotations

import argparse
import datetime as dt
import html
import os
import re
from pathlib import Path

import matplotlib.pyplot as plt
import pandas as pd

from analysis import figures, page, suite_opening
from analysis.load import check_out, expand, guarded, load, newest_sweep, stop
from analysis.measures import (
    AXES,
    axis_values,
    host_bound_of,
    latency_methods,
    order,
    sig,
)
from analysis.shown import paired_us, with_shown
from analysis.style import save
from analysis.tables import autotune_picks, causes, cudagraphs, kdiff, startup, swept
from study.rows.schema import SHAPE_KEYS

ENV_COLS = [
    "source",
    "device_name",
    "driver_version",
    "torch_version",
    "triton_version",
    "cuda_version",
    "cudnn_version",
    "host",
    "cpu_threads",
]
TITLE = "torch.compile study report"


def _fmt(v, plain: bool = False) -> str:
    if v is None or v is pd.NA or (isinstance(v, float) and v != v):
        return ""
    if isinstance(v, bool):
        return str(v)
    if isinstance(v, int | float) and plain:
        return f"{v:.0f}" if float(v).is_integer() else str(v)
    if isinstance(v, float):
        return f"{v:,.0f}" if v.is_integer() and abs(v) < 1e15 else sig(v)
    return str(v)


def md_table(df: pd.DataFrame) -> str:
    if df is None or df.empty:
        return "_(none)_\n"
    cols = list(df.columns)
    lines = ["| " + " | ".join(cols) + " |", "| " + " | ".join("---" for _ in cols) + " |"]
    for rec in df.astype(object).where(df.notna(), None).itertuples(index=False):
        cells = [_fmt(v, c in SHAPE_KEYS) for c, v in zip(cols, rec, strict=True)]
        lines.append(
            "| " + " | ".join(x.replace("|", "\\|").replace("\n", " ") for x in cells) + " |"
        )
    return "\n".join(lines) + "\n"


def environment(runs: pd.DataFrame) -> pd.DataFrame:
    cols = [c for c in ENV_COLS if c in runs]
    return runs[cols].drop_duplicates().reset_index(drop=True)


def subset(d: dict, source: str) -> dict:
    """The loaded frames of one source."""
    out = {}
    for k, v in d.items():
        if isinstance(v, pd.DataFrame) and "source" in v:
            out[k] = v[v["source"] == source].reset_index(drop=True)
        elif k == "run_dirs":
            out[k] = {key: p for key, p in v.items() if key[0] == source}
        else:
            out[k] = v
    return out


def _speedup_text(row) -> str:
    sp = row.get("sp")
    if sp is None or sp != sp or row.get("compile") == "off":
        return ""
    # a cross-process ratio is not the paired speedup: it says what it is
    kind = " latency ratio" if row.get("sp_kind") == "cross-process" else ""
    return (f"≈ {sig(sp)}x" if row.get("sp_same") else f"{sig(sp)}x") + kind


YES_NO = ("regional", "freezing", "compiled_autograd")  # the axes that are switches
PER_CALL = "µs a call (compiled: eager → compiled, paired blocks)"


def _us_a_call(row) -> str:
    """An eager cell's own latency; a compiled cell's eager → compiled µs from the paired blocks
    its speedup comes from (never its calls timed apart, whose ratio is not the speedup)."""
    both = paired_us(row) if row.get("compile") != "off" else None
    if both:
        return f"{sig(both[0])} → {sig(both[1])}"
    lat = row.get("latency_median_us")
    return sig(lat) if lat == lat and lat is not None else ""


def _per_call(revealed: str, host_bound) -> str:
    """The trace's "CPU-bound" (profiled CPU time above GPU busy time) beside what the per-call
    latency says, where it says otherwise: the profiler slows the host (v3's block, eager: 826
    µs of CPU against 724 of GPU in the trace, 639 µs a call)."""
    if isinstance(revealed, str) and "CPU-bound:" in revealed and host_bound is False:
        return revealed.replace(
            "CPU-bound:", "CPU above GPU under the profiler, GPU-bound per call:", 1
        )
    return revealed


def cell_table(d: dict) -> pd.DataFrame:
    """One row per cell of one source: what it ran, how fast, what the trace revealed. A
    ``_links`` column holds the (generated code, trace) paths where the run dir is known."""
    r = d["runs"]
    if r.empty:
        return r
    r = order(with_shown(r))

    def col(c):
        return r[c] if c in r else pd.Series(float("nan"), index=r.index)

    shapes = [c for c in SHAPE_KEYS if c in r and r[c].nunique() > 1]
    out = pd.DataFrame({"variant": r["variant"]})
    for c in shapes:
        out[c] = r[c].astype("Int64")
    for c in ("mask", "score_mod"):  # what tells flex cells of one length apart
        if c in r and r[c].nunique() > 1:
            out[c] = r[c]
    if "pass" in r and r["pass"].nunique() > 1:
        out["pass"] = r["pass"]
    for c in AXES:  # the axes the sweep crossed: start, compile stance, regional, layers, ...
        if c in r and axis_values(r, c).nunique() > 1:
            out[c] = axis_values(r, c)
            if c in YES_NO:  # a switch reads yes/no, not 0/1
                out[c] = out[c].map({"1": "yes", "0": "no"}).fillna(out[c])
    out["compile"], out["status"] = col("compile"), col("status")
    out["kernels per forward"] = col("kernels_per_step")
    out[PER_CALL] = [_us_a_call(x) for x in r.to_dict("records")]
    out["speedup"] = [_speedup_text(x) for x in r.to_dict("records")]
    if r["sp_kind"].eq("paired").any():
        out["95% CI"] = [
            f"{sig(lo)}–{sig(hi)}" if lo == lo and hi == hi else ""
            for lo, hi in zip(r["sp_lo"], r["sp_hi"], strict=True)
        ]
    if r["apart"].astype(bool).any():  # where the two cells' own latencies say otherwise
        out["timed apart"] = r["apart"]
    if "n_repeats" in r and (r["n_repeats"] > 1).any():
        out["repeats"] = r["n_repeats"]
        if "latency_median_us_spread_pct" in r:
            out["latency spread %"] = r["latency_median_us_spread_pct"]
    rev = d["revealed"]
    if not rev.empty:
        text = dict(zip(rev["run_id"], rev["revealed"], strict=True))
        hb = [None if pd.isna(h) else bool(h) for h in host_bound_of(r)]
        out["what the trace revealed"] = [
            _per_call(text.get(x, ""), h) for x, h in zip(r["run_id"], hb, strict=True)
        ]
    out["_run_id"] = r["run_id"].to_numpy()
    return out.reset_index(drop=True)


def _links(d: dict, runs: pd.DataFrame, rid: str, out: Path) -> str:
    """'code · trace' links from the report to the cell's own files, where they exist."""
    src = runs["source"].iloc[0] if len(runs) else ""
    rd = d["run_dirs"].get((src, rid))
    if rd is None:
        return ""
    row = runs[runs["run_id"] == rid].iloc[0]
    links = []
    for what, col, default in (
        ("code", "generated_dir", "generated"),
        ("trace", "trace_file", "trace.json.gz"),
        ("compile log", "tlparse_index", "generated/tlparse/index.html"),
    ):
        rel = row.get(col) if isinstance(row.get(col), str) and row.get(col) else default
        p = rd / rel
        if p.exists():
            href = html.escape(Path(os.path.relpath(p, out)).as_posix())
            links.append(f"<a href='{href}'>{what}</a>")
    return " · ".join(links)


# a surprise_detail joins its broken predictions with '; ', each 'key: expected E, measured M'
_PART = re.compile(r"; (?=[\w.=>]+: expected )")
_ONE = re.compile(r"^(?P<key>.+?): expected (?P<expected>.+?), measured (?P<measured>.+)$")


def _shown(p) -> str:
    """A source's path as the report names it: relative to the working dir when under it
    (a committed report names reference/h200/part3, not the machine's own /work/... path)."""
    p = Path(p).resolve()
    try:
        return str(p.relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(p)


def surprises(rows: pd.DataFrame) -> tuple[str, pd.DataFrame]:
    """('N predictions checked, M broken in K rows.', one line per cell and broken prediction,
    most runs first: what it expected, what each run measured, and in how many of the cell's
    runs it broke (v3's part3: cuDNN's CPU time broke in 2 of its 3 processes, its kernel
    count in all 3)), or ('', empty) when no row carried a prediction."""
    if "expectations" not in rows or not rows["expectations"].notna().any():
        return "", pd.DataFrame()
    n = int(pd.to_numeric(rows["expectations"], errors="coerce").fillna(0).sum())
    k = pd.to_numeric(rows["surprises"], errors="coerce").fillna(0)
    cell = [c for c in ("source", "variant", "compile", "pass", *SHAPE_KEYS) if c in rows]
    key = pd.Series(
        ["|".join(map(str, t)) for t in rows[cell].itertuples(index=False)], index=rows.index
    )
    runs = key.map(key.value_counts())
    lines: dict[tuple, dict] = {}
    for i in rows.index[k > 0]:
        for part in _PART.split(str(rows.at[i, "surprise_detail"])):
            m = _ONE.match(part.strip())
            what = (m["key"], m["expected"]) if m else (part.strip(), "")
            x = lines.setdefault((key[i], *what), {
                **{c: rows.at[i, c] for c in cell if c in ("source", "variant", "compile", "pass")},
                "prediction": f"{what[0]}: {what[1]}" if what[1] else what[0],
                "measured": [], "of": int(runs[i])})  # fmt: skip
            x["measured"].append(m["measured"] if m else "")
    out = pd.DataFrame(
        [
            {
                **{c: v for c, v in x.items() if c not in ("measured", "of")},
                "measured": "; ".join(dict.fromkeys(v for v in x["measured"] if v)),
                "runs": f"{len(x['measured'])} of {x['of']}",
            }  # fmt: skip
            for x in sorted(lines.values(), key=lambda x: -len(x["measured"]))
        ]
    )
    said = (
        f"{n} predictions checked (the variants' expect blocks and the command line's), "
        f"{int(k.sum())} broken in {int((k > 0).sum())} rows. One line per cell and broken "
        "prediction: what it expected, what the cell's runs measured, and in how many of them."
    )
    return said, out


def failures(runs: pd.DataFrame) -> pd.DataFrame:
    bad = order(runs[runs["status"] != "ok"])
    shapes = [c for c in SHAPE_KEYS if c in runs and runs[c].nunique() > 1]
    cols = ["variant", *shapes, "compile", "status", "reason"]
    return bad[[c for c in cols if c in bad]].reset_index(drop=True)


def render(d: dict, where: Path, which=None) -> tuple[list, list]:
    """Draw every figure for one source into ``where``: (made, skipped). ``which`` picks
    another list (``figures.ACROSS``: figures over every source at once)."""
    made, skipped = [], []
    for key, name, fn in figures.FIGURES if which is None else which:
        name = figures.heading(key, name, d["runs"])
        try:
            fig, sentence = fn(d)
        except figures.Skip as e:
            skipped.append((name, str(e)))
            continue
        except Exception as e:  # noqa: BLE001 - a figure must never take the report down
            skipped.append((name, f"could not be drawn from these rows ({type(e).__name__}: {e})"))
            plt.close("all")
            continue
        where.mkdir(parents=True, exist_ok=True)
        save(fig, where / key)
        made.append((key, name, sentence, where / f"{key}.png"))
    return made, skipped


def _dirname(source: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.=,-]+", "_", source)


BREAK_CODE = re.compile(r"(GB\d+) \(x(\d+)\)")
BREAK_KIND = re.compile(r"(GB\d+): ([^\n|]+)")


def graph_breaks(runs: pd.DataFrame) -> pd.DataFrame:
    """Graph breaks over the sweep by Dynamo's registry code (``graph_break_codes``): the
    break's type (the first line of a reason with that code), the breaks summed over the rows
    and the cells that broke so; empty where no row has a code."""
    if "graph_break_codes" not in runs:
        return pd.DataFrame()
    seen: dict[str, dict] = {}
    for _, r in runs.iterrows():
        kinds = dict(BREAK_KIND.findall(str(r.get("graph_break_reasons") or "")))
        for code, n in BREAK_CODE.findall(str(r.get("graph_break_codes") or "")):
            x = seen.setdefault(code, {"code": code, "type": kinds.get(code, "").strip(),
                                       "breaks": 0, "cells": []})  # fmt: skip
            x["breaks"] += int(n)
            x["cells"].append(f"{r['variant']} {r['compile']}")
    rows = [{**x, "cells": ", ".join(sorted(set(x["cells"])))} for x in seen.values()]
    return pd.DataFrame(rows).sort_values("breaks", ascending=False) if rows else pd.DataFrame()


def _section(into, key: str, title: str, df: pd.DataFrame, count: str, note: str = "") -> None:
    """One table of a source, appended to report.md's lines, report.html's contents and body
    (``into`` = (md, toc, body, source anchor)); nothing for an empty table."""
    md, toc, body, sid = into
    if not len(df):
        return
    md.extend([f"### {title}", "", md_table(df)])
    toc.append((2, f"{sid}-{key}", f"{title} ({len(df)}{count})"))
    note = f"<p class='muted'>{note}</p>" if note else ""
    body.append(f"<h3 id='{sid}-{key}'>{title}</h3>{note}{page.table(df)}")


def _write_csvs(d: dict, out: Path) -> None:
    """The tidy CSVs, text a spreadsheet would run guarded as the study writes it (SCHEMA.md)."""
    guarded(d["repeats"]).to_csv(out / "runs.csv", index=False)  # every row, as read
    for name in ("kernels", "revealed", "autotune", "ncu", "shapes"):
        if name in ("kernels", "revealed") or not d[name].empty:
            guarded(d[name]).to_csv(out / f"{name}.csv", index=False)


def _answer(d: dict, made: dict, out: Path) -> tuple[list[str], str]:
    """The first screen (analysis.tables.causes): per compiled cell the verdict, its interval, the one
    cause the rows support and a link to the figure that shows it ((source, key) in ``made``:
    the figure's path), as report.md's lines and report.html's section."""
    a = causes.answer(d["runs"], d["kernels"], d["autotune"])
    alone = swept.answer(d["runs"], skip=a["run_id"])  # no eager twin: what the sweep varied
    if a.empty:
        return _swept(alone, "## The answer", "h2 id='answer'")
    md_links, html_links = [], []
    for src, key in zip(a["source"], a["figure"], strict=True):
        path = made.get((src, key))
        name = figures.heading(key, dict((k, n) for k, n, _ in figures.FIGURES).get(key, key),
                               d["runs"][d["runs"]["source"] == src] if "source" in d["runs"]
                               else d["runs"])  # fmt: skip
        if path is None:
            md_links.append("")
            html_links.append("")
            continue
        sid = page.anchor("src", src)
        md_links.append(f"[{name}]({path.relative_to(out).as_posix()})")
        html_links.append(f"<a href='#{page.anchor(sid, key)}'>{html.escape(name)}</a>")
    cols = ["cell", "verdict", "speedup", "µs a call", "cause"]
    said = ("Per compiled cell, against its eager twin: the verdict (the paired speedup's 95% "
            "interval against 1.0), the speedup with its interval, the µs of the paired blocks it "
            "comes from, the "
            "one cause its rows support, and the figure that shows it.")  # fmt: skip
    md = ["## The answer", "", said, "", md_table(a[cols].assign(figure=md_links)), ""]
    body = f"<h2 id='answer'>The answer</h2><p class='muted'>{html.escape(said)}</p>" + page.table(
        a[cols].assign(figure=html_links), html_cols=("figure",), sortable=False
    )
    more_md, more_body = _swept(alone, "### Cells without an eager twin", "h3")
    return md + more_md, body + more_body


def _swept(alone: pd.DataFrame, head: str, tag: str) -> tuple[list[str], str]:
    """The compiled cells without an eager twin (analysis.tables.swept), under ``head``."""
    if alone.empty:
        return [], ""
    title = head.lstrip("# ")
    md = [head, "", swept.SAID, "", md_table(alone), ""]
    body = (f"<{tag}>{html.escape(title)}</{tag.split()[0]}><p class='muted'>"
            f"{html.escape(swept.SAID)}</p>" + page.table(alone, sortable=False))  # fmt: skip
    return md, body


def _surprises(doc, d: dict) -> str:
    """Broken predictions right after the answer, when there are any (a mismatch is the
    insight: study.rows.expect); returns the count's sentence, which goes at the end when none
    broke."""
    md, toc, body = doc
    said, broke = surprises(d["repeats"])
    if said and len(broke):
        md += ["## Surprises", "", said, "", md_table(broke)]
        toc.append((1, "surprises", "Surprises"))
        body.append(f"<h2 id='surprises'>Surprises</h2><p>{html.escape(said)}</p>"
                    + page.table(broke))  # fmt: skip
        return ""
    return said


def _environment(doc, d: dict, checked: str) -> None:
    """The machine and versions, at the end; with how many predictions held, when none broke."""
    md, toc, body = doc
    runs = d["runs"]
    md += ["## Environment", "", md_table(environment(runs))]
    toc.append((1, "environment", "Environment"))
    body.append(
        f"<h2 id='environment'>Environment</h2>{page.table(environment(runs), sortable=False)}"
    )
    if checked:
        md += [checked, ""]
        body.append(f"<p class='muted'>{html.escape(checked)}</p>")


def _cells(doc, ds: dict, sid: str, head: str, count: str, out: Path) -> None:
    """What each cell ran: the table, with links to each cell's files in the HTML."""
    md, toc, body = doc
    cells = cell_table(ds)
    md += [f"## {head}", "", f"{count}.", "", "### What each cell ran", ""]
    md += [md_table(cells.drop(columns="_run_id")) if len(cells) else "_(none)_\n"]
    body.append(f"<h2 id='{sid}'>{html.escape(head.replace('`', ''))}</h2><p>{count}.</p>")
    toc.append((2, f"{sid}-cells", "What each cell ran"))
    cells_h = cells
    if len(cells):
        cells_h = cells.copy()
        if ds["run_dirs"]:
            cells_h["files"] = [_links(ds, ds["runs"], x, out) for x in cells_h["_run_id"]]
        cells_h = cells_h.drop(columns="_run_id")
    body.append(
        f"<h3 id='{sid}-cells'>What each cell ran</h3>{page.table(cells_h, html_cols=('files',))}"
    )


def _kernel_diff(doc, ds: dict, sid: str) -> None:
    md, toc, body = doc
    summ, detail = kdiff.diff(ds["runs"], ds["kernels"])
    if not len(summ):
        return
    kt = kdiff.table(summ)
    md += ["### What compiling changed in the kernels", "", md_table(kt)]
    toc.append((2, f"{sid}-diff", "What compiling changed in the kernels"))
    body.append(
        f"<h3 id='{sid}-diff'>What compiling changed in the kernels</h3>"
        "<p class='muted'>Eager → compiled, per cell: kernels removed (eager only), "
        "fused (generated by Inductor), added (compiled only, not generated) and the "
        "change in kernel time per step, µs.</p>"
        f"{page.table(kt)}<details><summary>Every kernel that changed "
        f"({len(detail)})</summary>{page.table(detail.drop(columns=['source', 'run_id']))}"
        "</details>"
    )


def _tables(doc, ds: dict, sid: str) -> None:
    """The generated kernels, max-autotune's picks and the rows that are not ok."""
    into = (*doc, sid)
    r = ds["runs"]
    gen_note = ("Each generated kernel once per variant and mask, with its source file (in "
                "the cell's <code>generated/</code> dir) and the aten ops it fused.")  # fmt: skip
    _section(into, "gen", "Kernels Inductor generated", kdiff.generated(r, ds["kernels"]), "",
             gen_note)  # fmt: skip
    picks = autotune_picks.table(ds["repeats"], ds["autotune"])
    picks_note = ("Per op it tuned: the choice it kept (over repeats, each pick and how often), "
                  "the best ATen (cuBLAS) and Triton times, and the runner-up. A near tie "
                  f"(within {autotune_picks.NEAR:.0%}) can flip between runs, and the kernels "
                  "with it.")  # fmt: skip
    _section(into, "autotune", "What max-autotune picked",
             picks.drop(columns="source", errors="ignore"), " ops", picks_note)  # fmt: skip
    breaks_note = ("Summed over this source's rows: a code names one kind of break in Dynamo's "
                   "graph-break registry; each row's graph_break_reasons holds the full text.")  # fmt: skip
    _section(into, "breaks", "Graph breaks by code", graph_breaks(r), " codes", breaks_note)
    _section(into, "cudagraphs", "Did CUDA graphs apply?", cudagraphs.table(r, ds["kernels"]),
             " cells", cudagraphs.NOTE)  # fmt: skip
    _section(into, "start", "What the first call costs: cold, warm, artifacts",
             startup.start_table(ds["repeats"]), " cells", startup.START_NOTE)  # fmt: skip
    _section(into, "guards", "What Dynamo's guards cost a call", startup.guard_table(ds["repeats"]),
             " cells", startup.GUARD_NOTE)  # fmt: skip
    _section(into, "bad", "Rows that are not ok", failures(r), "")


def _figures(doc, made: list, anchor: str, level: int, out: Path, listed: bool = True) -> None:
    """Each figure with its sentence; ``listed``: each one in the contents too."""
    md, toc, body = doc
    for key, name, sentence, path in made:
        rel = path.relative_to(out).as_posix()
        md += [f"#### {name}", "", sentence, "", f"![{name}]({rel})", ""]
        fid = page.anchor(anchor, key)
        if listed:
            toc.append((level, fid, name))
        body.append(page.figure(path, name, sentence, fid))


def _source(doc, d: dict, src: str, out: Path, many: bool) -> list:
    """One source's sections; returns the figures it skipped, (name, why), and those it made,
    (key, name, sentence, path)."""
    md, toc, body = doc
    ds = subset(d, src)
    made, skipped = render(ds, out / _dirname(src) if many else out)
    sid = page.anchor("src", src)
    ok_n = int((ds["runs"]["status"] == "ok").sum())
    head = f"Source `{src}`" if many else "Results"
    count = f"{len(ds['runs'])} cells, {ok_n} ok"
    toc.append((1, sid, f"{'Source ' + src if many else 'Results'} ({count})"))
    _cells(doc, ds, sid, head, count, out)
    _kernel_diff(doc, ds, sid)
    _tables(doc, ds, sid)
    md += ["### Figures", ""]
    index = " · ".join(
        f"<a href='#{page.anchor(sid, key)}'>{html.escape(name)}</a>" for key, name, _, _ in made
    )
    body.append(f"<h3 id='{sid}-figs'>Figures</h3><p class='muted'>{index}</p>")
    toc.append((2, f"{sid}-figs", "Figures"))
    _figures(doc, made, sid, 3, out, listed=not many)  # several sources: each lists its own
    if skipped:
        md += ["Skipped:", ""] + [f"- {n}: {w}" for n, w in skipped] + [""]
        body.append(
            "<p class='muted'>Skipped:</p><ul class='muted'>"
            + "".join(f"<li>{html.escape(n)}: {html.escape(w)}</li>" for n, w in skipped)
            + "</ul>"
        )
    return skipped, made


def _across(doc, d: dict, out: Path) -> list:
    """The figures whose question spans sources; returns those skipped, (name, why)."""
    made, skipped = render(d, out, figures.ACROSS)
    if made:
        doc[0].extend(["## Across sources", ""])
        doc[1].append((1, "across", "Across sources"))
        doc[2].append("<h2 id='across'>Across sources</h2>")
        _figures(doc, made, "across", 2, out)
    return skipped


def _how(runs: pd.DataFrame) -> str:
    """How to read the numbers: the latency's clock, which speedup, what ≈ means."""
    return (
        f"Per-call latency is the median over timed calls, timed with {latency_methods(runs)}. "
        "The speedup is eager over compiled, paired: both timed in alternating blocks in one "
        "process, with a 95% interval, and a compiled cell's µs are those blocks' (their "
        "ratio is the speedup; the cells' calls timed apart stay in runs.csv, and where their "
        "ratio disagrees the table says why); where a row has no paired timing the report shows the "
        "latency ratio instead (eager's per-call latency over compiled's, from separate "
        "processes) and says so. ≈ marks no change: an interval that contains 1.0 (no "
        "measurable difference), or a paired one within ±1% of it (the pairs' own error). "
        "Host-bound verdicts are given for GPU cells only: on the CPU host and device are one."
    )


def build(dirs: list[Path], out: Path) -> Path:
    """report.md and report.html in ``out`` from the sweeps (or a results dir) in ``dirs``."""
    d = load(dirs)
    if d["runs"].empty:
        raise SystemExit(f"no rows in {', '.join(map(str, dirs))}: nothing to report")
    out.mkdir(parents=True, exist_ok=True)
    _write_csvs(d, out)
    runs = d["runs"]
    sources = list(dict.fromkeys(runs["source"]))
    many = len(sources) > 1
    stamp = dt.datetime.now().strftime("%Y-%m-%d %H:%M")
    srcs = ", ".join(_shown(p) for p in dirs)
    n_ok = int((runs["status"] == "ok").sum())
    md = [f"# {TITLE}", ""]
    doc = ([], [], [])  # report.md's lines, report.html's contents and body, after the answer
    checked = _surprises(doc, d)
    skipped_all, made_at = [], {}
    for src in sources:
        skipped, made = _source(doc, d, src, out, many)
        skipped_all += [(src, n, w) for n, w in skipped]
        made_at.update({(src, key): path for key, _, _, path in made})
    skipped_all += [("every source", n, w) for n, w in _across(doc, d, out)]
    _environment(doc, d, checked)
    answer_md, answer_html = _answer(d, made_at, out)
    suite_md, suite_html, suite_toc = suite_opening.opening(d, out)  # a suite sweep opens so
    md += (
        suite_md
        + answer_md
        + [
            f"Sources: {srcs}  ",
            f"Built {stamp} from {len(runs)} cells ({n_ok} ok, {len(runs) - n_ok} not ok)"
            + (f" in {len(sources)} sources." if many else "."),
            "",
            _how(runs),
            "",
        ]
        + doc[0]
    )
    (out / "report.md").write_text("\n".join(md) + "\n")
    intro = (
        f"<p>Sources: {html.escape(srcs)}<br>Built {stamp} from {len(runs)} cells "
        f"({n_ok} ok, {len(runs) - n_ok} not ok).</p><p class='muted'>{html.escape(_how(runs))}</p>"
    )
    if answer_html:
        doc[1].insert(0, (1, "answer", "The answer"))
    doc[1][0:0] = suite_toc
    (out / "report.html").write_text(
        page.page(TITLE, intro, doc[1], "".join(doc[2]), lead=suite_html + answer_html)
    )
    n_made = sum(x.startswith("<figure") for x in doc[2])
    print(
        f"report: {out / 'report.md'} and {out / 'report.html'} ({n_made} figures"
        + (f", {len(skipped_all)} skipped" if skipped_all else "")
        + ")"
    )
    for src, name, why in skipped_all:
        print(f"  skipped {name}" + (f" ({src})" if many else "") + f": {why}")
    return out


def main(argv: list[str] | None = None) -> Path:
    ap = argparse.ArgumentParser(
        prog="python -m analysis.report", description=__doc__.split("\n\n")[0]
    )
    ap.add_argument(
        "sweeps", nargs="*", help="sweep dirs or globs (default: the newest under outputs/)"
    )
    ap.add_argument("--out", help="output dir (default: <sweep>/report for one sweep)")
    a = ap.parse_args(argv)
    try:
        dirs = expand(a.sweeps) if a.sweeps else [newest_sweep()]
        if a.out:
            out = Path(a.out)
        elif len(dirs) == 1:
            out = dirs[0] / "report"
        else:
            out = Path("outputs") / "reports" / dt.datetime.now().strftime("%Y-%m-%d_%H-%M-%S")
        check_out(out)
        return build(dirs, out)
    except FileNotFoundError as e:  # a path given that is no sweep (load.NotASweep), or none
        stop("report", e)
    except PermissionError as e:  # what check_out could not foresee (root squash, ACLs)
        stop("report", f"cannot write {e.filename} ({e.strerror}): give --out DIR")


if __name__ == "__main__":
    from analysis.cli import run  # deferred: a command's end, not the module's

    run(main)
