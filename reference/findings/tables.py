"""Long per-cell tables out of FINDINGS.md, into generated files it links (issue 69: a GPU's
FINDINGS.md at most 40 KB, the claims and their tables; the long ones one click away).

``split`` takes one section's lines and moves every Markdown table of more than ``ROWS`` body
rows into ``tables/<section>-<k>.md`` (k counts the section's long tables from 1), leaving a link
where it stood; the paragraph before a table, which says what its columns are, goes with it and
stays too. ``python -m reference.<gpu> --write`` writes the files (and removes stale ones),
``--check`` compares them byte for byte like the block.
"""

from __future__ import annotations

from pathlib import Path

ROWS = 8  # a table with more body rows than this goes to its own file
DIR = "tables"  # beside FINDINGS.md
HEAD = (
    "Generated from the CSVs of this results folder with [FINDINGS.md](../FINDINGS.md), which "
    "links it, by the command FINDINGS.md names (`python -m reference.<gpu> --write`); `--check` "
    "fails when it and the CSVs disagree. Change the generator (`reference/findings/`), not this "
    "file."
)


def _tables(lines: list[str]) -> list[tuple[int, int]]:
    """(start, end) of each run of lines starting with '|' (a Markdown table), end exclusive."""
    out, i = [], 0
    while i < len(lines):
        if lines[i].startswith("|"):
            j = i
            while j < len(lines) and lines[j].startswith("|"):
                j += 1
            out.append((i, j))
            i = j
        else:
            i += 1
    return out


def _caption(lines: list[str], start: int) -> str:
    """The nearest non-blank, non-table line above ``start``: what the table is."""
    for line in reversed(lines[:start]):
        if line.strip() and not line.startswith("|"):
            return line
    return ""


def split(lines: list[str], name: str) -> tuple[list[str], dict[str, str]]:
    """(the section's lines with each long table replaced by a link, {file name: its text})."""
    if not lines:
        return [], {}
    lines = "\n".join(lines).split("\n")  # a section may give a table as one string
    files, out, last, k = {}, [], 0, 0
    for start, end in _tables(lines):
        body = end - start - 2  # header and rule
        if body <= ROWS:
            continue
        k += 1
        fname = f"{name}-{k}.md"
        caption = _caption(lines, start)
        title = caption.lstrip("# ").split(":")[0].split(" (")[0].strip("*_ ") or name
        files[fname] = "\n".join([f"# {title}", "", HEAD, "", caption, "", *lines[start:end], ""])
        out += lines[last:start]
        out.append(f"Table, {body} rows: [{title}]({DIR}/{fname})")
        last = end
    out += lines[last:]
    return out, files


def stale(d: Path, files: dict[str, str]) -> list[Path]:
    """The table files under ``d/DIR`` that differ from ``files``, are missing, or are left
    over from an earlier generator."""
    t = Path(d) / DIR
    bad = [
        t / f for f, text in files.items() if not (t / f).exists() or (t / f).read_text() != text
    ]
    have = {p.name for p in t.glob("*.md")} if t.exists() else set()
    return bad + [t / f for f in sorted(have - set(files))]


def write(d: Path, files: dict[str, str]) -> None:
    """Write ``files`` under ``d/DIR`` and remove the .md files there no longer generated."""
    t = Path(d) / DIR
    t.mkdir(exist_ok=True)
    for f, text in files.items():
        (t / f).write_text(text)
    for p in t.glob("*.md"):
        if p.name not in files:
            p.unlink()
