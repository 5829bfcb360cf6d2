"""From a sweep's CSVs to figures and a report a person can read in a minute.

    python -m analysis.report                       # the newest sweep under outputs/
    python -m analysis.report outputs/sweeps/A outputs/sweeps/B --out outputs/compare
    python -m analysis.report 'results/*'           # globs work; a `source` column tells them apart

Reads only CSVs (never torch): a laptop can read a GPU machine's results. Writes into
``<sweep>/report/`` (one sweep) or ``--out``: figures as PNG and SVG, ``report.md``, a
self-contained ``report.html`` (images embedded), and the combined tidy ``runs.csv``,
``kernels.csv`` and ``revealed.csv``. A figure that cannot be drawn is skipped with one line
saying why; failed rows never crash the report.
"""

from __future__ import annotations

import argparse
import base64
import datetime as dt
import html
import sys
from pathlib import Path

import matplotlib.pyplot as plt
import pandas as pd

from analysis import figures
from analysis.load import expand, load, newest_sweep

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


def _fmt(v, digits=1):
    if v is None or (isinstance(v, float) and v != v):
        return ""
    if isinstance(v, float):
        return f"{v:,.{digits}f}" if abs(v) >= 0.01 or v == 0 else f"{v:.2e}"
    return str(v)


def _md_table(df: pd.DataFrame) -> str:
    if df.empty:
        return "_(none)_\n"
    cols = list(df.columns)
    lines = ["| " + " | ".join(cols) + " |", "| " + " | ".join("---" for _ in cols) + " |"]
    for _, r in df.iterrows():
        lines.append(
            "| "
            + " | ".join(_fmt(r[c]).replace("|", "\\|").replace("\n", " ") for c in cols)
            + " |"
        )
    return "\n".join(lines) + "\n"


def _html_table(df: pd.DataFrame) -> str:
    if df.empty:
        return "<p><em>(none)</em></p>"
    head = "".join(f"<th>{html.escape(c)}</th>" for c in df.columns)
    body = "".join(
        "<tr>" + "".join(f"<td>{html.escape(_fmt(r[c]))}</td>" for c in df.columns) + "</tr>"
        for _, r in df.iterrows()
    )
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def environment(runs: pd.DataFrame) -> pd.DataFrame:
    cols = [c for c in ENV_COLS if c in runs]
    return runs[cols].drop_duplicates().reset_index(drop=True)


def blog_table(d) -> pd.DataFrame:
    t = d["revealed"]
    if t.empty:
        return t
    r = d["runs"][["source", "run_id", "status"]]
    t = t.merge(r, on=["source", "run_id"], how="left")
    order = {m: i for i, m in enumerate(figures.MODES)}
    t = t.assign(_o=t["compile"].map(order)).sort_values(["source", "family", "variant", "_o"])
    cols = (["source"] if t["source"].nunique() > 1 else []) + [
        "variant",
        "compile",
        "status",
        "kernels_per_step",
        "latency_median_us",
        "speedup",
        "revealed",
    ]
    out = t[cols].rename(
        columns={
            "kernels_per_step": "kernels per forward",
            "latency_median_us": "latency µs",
            "revealed": "what the trace revealed",
        }
    )
    for c in ("latency µs", "speedup", "kernels per forward"):
        out[c] = pd.to_numeric(out[c], errors="coerce")
    return out.reset_index(drop=True)


def failures(runs: pd.DataFrame) -> pd.DataFrame:
    bad = runs[runs["status"] != "ok"]
    cols = (["source"] if runs["source"].nunique() > 1 else []) + [
        "variant",
        "compile",
        "status",
        "reason",
    ]
    return bad[cols].reset_index(drop=True)


def build(dirs: list[Path], out: Path) -> Path:
    d = load(dirs)
    if d["runs"].empty:
        raise SystemExit(f"no rows in {', '.join(map(str, dirs))}: nothing to report")
    out.mkdir(parents=True, exist_ok=True)
    d["runs"].to_csv(out / "runs.csv", index=False)
    d["kernels"].to_csv(out / "kernels.csv", index=False)
    d["revealed"].to_csv(out / "revealed.csv", index=False)
    for extra in ("autotune", "ncu"):
        if not d[extra].empty:
            d[extra].to_csv(out / f"{extra}.csv", index=False)
    made, skipped = [], []
    for key, name, fn in figures.FIGURES:
        try:
            fig, sentence = fn(d)
        except figures.Skip as e:
            skipped.append((name, str(e)))
            continue
        except Exception as e:  # noqa: BLE001 - a figure must never take the report down; it says why
            skipped.append((name, f"could not be drawn from these rows ({type(e).__name__}: {e})"))
            plt.close("all")
            continue
        fig.savefig(out / f"{key}.png", dpi=130)
        fig.savefig(out / f"{key}.svg", metadata={"Date": None})  # same rows, same file
        plt.close(fig)
        made.append((key, name, sentence))
    runs = d["runs"]
    env, table, bad = environment(runs), blog_table(d), failures(runs)
    stamp = dt.datetime.now().strftime("%Y-%m-%d %H:%M")
    srcs = ", ".join(str(p) for p in dirs)
    n_ok = int((runs["status"] == "ok").sum())
    md = [
        "# torch.compile study report",
        "",
        f"Sources: {srcs}  ",
        f"Built {stamp} from {len(runs)} rows ({n_ok} ok, {len(runs) - n_ok} not ok).",
        "",
        "## Environment",
        "",
        _md_table(env),
        "## What each cell ran",
        "",
        "Latency is the per-call median (events around each call, back to back); "
        "speedup is eager latency over this row's. The last column lists the named rules "
        "(study/revealed.py) that fired on the cell's kernels.",
        "",
        _md_table(table),
        "## Rows that are not ok",
        "",
        _md_table(bad),
        "## Figures",
        "",
    ]
    for key, name, sentence in made:
        md += [f"### {name}", "", sentence, "", f"![{name}]({key}.png)", ""]
    for name, why in skipped:
        md += [f"- {name}: skipped — {why}"]
    (out / "report.md").write_text("\n".join(md) + "\n")

    imgs = []
    for key, name, sentence in made:
        b64 = base64.b64encode((out / f"{key}.png").read_bytes()).decode()
        imgs.append(
            f"<h3>{html.escape(name)}</h3><p>{html.escape(sentence)}</p>"
            f"<img alt='{html.escape(name)}' src='data:image/png;base64,{b64}'/>"
        )
    skipped_html = "".join(
        f"<li>{html.escape(n)}: skipped — {html.escape(w)}</li>" for n, w in skipped
    )
    page = f"""<!doctype html><html><head><meta charset="utf-8"><title>torch.compile study report</title>
<style>body{{font-family:system-ui,sans-serif;max-width:1400px;margin:2em auto;padding:0 1em;color:#222}}
table{{border-collapse:collapse;font-size:13px;margin:1em 0}}td,th{{border:1px solid #ccc;padding:3px 6px;text-align:left}}
th{{background:#f3f3f3}}img{{max-width:100%;border:1px solid #eee}}</style></head><body>
<h1>torch.compile study report</h1><p>Sources: {html.escape(srcs)}<br>Built {stamp} from {len(runs)} rows
({n_ok} ok, {len(runs) - n_ok} not ok).</p>
<h2>Environment</h2>{_html_table(env)}
<h2>What each cell ran</h2><p>Latency is the per-call median; speedup is eager latency over this row's.</p>{_html_table(table)}
<h2>Rows that are not ok</h2>{_html_table(bad)}
<h2>Figures</h2>{"".join(imgs)}<ul>{skipped_html}</ul></body></html>"""
    (out / "report.html").write_text(page)
    print(
        f"report: {out / 'report.md'} and {out / 'report.html'} ({len(made)} figures"
        + (f", {len(skipped)} skipped" if skipped else "")
        + ")"
    )
    for name, why in skipped:
        print(f"  skipped {name}: {why}")
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
    except FileNotFoundError as e:
        sys.exit(f"analysis.report: {e}")
    if a.out:
        out = Path(a.out)
    elif len(dirs) == 1:
        out = dirs[0] / "report"
    else:
        out = Path("outputs") / "reports" / dt.datetime.now().strftime("%Y-%m-%d_%H-%M-%S")
    return build(dirs, out)


if __name__ == "__main__":
    main()
