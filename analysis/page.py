"""report.html: one self-contained page (images embedded, a few lines of inline script, no
network fetches) with a table of contents, one section per source, tables that sort when a
header is clicked, each figure with its sentence, and links from each cell to its generated
kernels and profiler trace when the report sits beside the sweep's run dirs."""

from __future__ import annotations

import base64
import html
import re
from pathlib import Path

import pandas as pd

from analysis.measures import sig
from study.rows.schema import SHAPE_KEYS

STYLE = """
body{font-family:system-ui,-apple-system,sans-serif;max-width:1500px;margin:1.5em auto;padding:0 1.2em;color:#222;line-height:1.45}
nav{background:#f7f7f9;border:1px solid #e3e3e8;padding:.6em 1.2em;margin:1em 0}
nav ul{margin:.2em 0;padding-left:1.2em}nav li{margin:.1em 0}nav>ul{columns:22em}nav>ul>li{break-inside:avoid}
table{border-collapse:collapse;font-size:12.5px;margin:.8em 0;display:block;overflow-x:auto}
td,th{border:1px solid #d6d6dc;padding:3px 7px;text-align:left;vertical-align:top}
td{max-width:38em;overflow-wrap:anywhere}
th{background:#f0f0f4;position:sticky;top:0}table.sortable th{cursor:pointer;user-select:none}
table.sortable th:after{content:" \\2195";color:#aaa;font-size:10px}
td.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
tr:hover td{background:#fafad2}
figure{margin:1.2em 0 2em 0}figure img{max-width:100%;border:1px solid #eee}
figcaption{max-width:1100px;margin:.3em 0;color:#333}
.muted{color:#666;font-size:13px}h2{border-bottom:2px solid #ddd;padding-bottom:.2em;margin-top:2em}
"""

# Click a header: sort by that column (numbers by data-v, else text); click again: reverse.
SCRIPT = """
document.querySelectorAll('table.sortable th').forEach(function(th){
  th.addEventListener('click', function(){
    var table = th.closest('table'), body = table.tBodies[0], i = th.cellIndex;
    var dir = th.dataset.dir === 'asc' ? -1 : 1; th.dataset.dir = dir === 1 ? 'asc' : 'desc';
    var key = function(tr){ var td = tr.cells[i]; if (!td) return '';
      var v = td.getAttribute('data-v'); return v === null ? td.textContent.trim().toLowerCase() : parseFloat(v); };
    Array.from(body.rows).sort(function(a, b){ var x = key(a), y = key(b);
      if (typeof x === 'number' && typeof y === 'number') return dir * (x - y);
      if (typeof x === 'number') return -1; if (typeof y === 'number') return 1;
      return dir * String(x).localeCompare(String(y)); }).forEach(function(tr){ body.appendChild(tr); });
  });
});
"""


def anchor(*parts: str) -> str:
    return re.sub(r"[^A-Za-z0-9_-]+", "-", "-".join(parts)).strip("-").lower()


def _cell(v, raw_html: bool = False, plain: bool = False) -> str:
    if raw_html:
        return f"<td>{v}</td>"
    if isinstance(v, bool):
        return f"<td>{v}</td>"
    if isinstance(v, int | float) and not (isinstance(v, float) and v != v):
        whole = float(v).is_integer() and abs(v) < 1e15
        text = f"{v:.0f}" if plain and whole else f"{v:,.0f}" if whole else sig(v)
        return f"<td class='num' data-v='{float(v)!r}'>{html.escape(text)}</td>"
    if v is None or (isinstance(v, float) and v != v) or v is pd.NA:
        return "<td></td>"
    return f"<td>{html.escape(str(v))}</td>"


def table(
    df: pd.DataFrame,
    html_cols: tuple[str, ...] = (),
    sortable: bool = True,
    plain: tuple[str, ...] = SHAPE_KEYS,
) -> str:
    """A table; columns named in ``html_cols`` hold ready HTML (links), the rest is escaped;
    numbers in ``plain`` columns (shapes) print without thousands separators."""
    if df is None or df.empty:
        return "<p class='muted'><em>(none)</em></p>"
    head = "".join(f"<th>{html.escape(str(c))}</th>" for c in df.columns)
    rows = []
    for rec in df.astype(object).where(df.notna(), None).itertuples(index=False):
        rows.append(
            "<tr>"
            + "".join(
                _cell(v, c in html_cols, c in plain) for c, v in zip(df.columns, rec, strict=True)
            )
            + "</tr>"
        )
    cls = " class='sortable'" if sortable else ""
    return f"<table{cls}><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"


def figure(path: Path, name: str, sentence: str, anchor_id: str) -> str:
    b64 = base64.b64encode(path.read_bytes()).decode()
    return (
        f"<figure id='{anchor_id}'><h4>{html.escape(name)}</h4>"
        f"<img alt='{html.escape(name)}' src='data:image/png;base64,{b64}'/>"
        f"<figcaption>{html.escape(sentence)}</figcaption></figure>"
    )


def page(title: str, intro: str, toc: list[tuple[int, str, str]], body: str, lead: str = "") -> str:
    """``toc``: (level, anchor, text) in reading order; ``lead``: the first screen (the answer),
    above the intro and the contents."""
    # a heading's sub-list sits inside its <li>, so the columns never split "Figures" from its
    # figures (nav>ul>li avoids a break inside)
    items, level = [], 1
    for lv, a, text in toc:
        if items and lv <= level:
            items.append("</li>")
        while level > lv:
            items.append("</ul></li>")
            level -= 1
        while level < lv:
            items.append("<ul>")
            level += 1
        items.append(f"<li><a href='#{a}'>{html.escape(text)}</a>")
    items += ["</li>"] if items else []
    items += ["</ul></li>"] * (level - 1)
    return (
        "<!doctype html><html><head><meta charset='utf-8'>"
        "<meta name='viewport' content='width=device-width, initial-scale=1'>"
        f"<title>{html.escape(title)}</title><style>{STYLE}</style></head><body>"
        f"<h1>{html.escape(title)}</h1>{lead}{intro}"
        f"<nav><strong>Contents</strong><ul>{''.join(items)}</ul></nav>{body}"
        f"<script>{SCRIPT}</script></body></html>"
    )
