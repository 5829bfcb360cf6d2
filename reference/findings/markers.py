"""A generated block between two markers of a Markdown file (``<!-- NAME:start -->`` and
``<!-- NAME:end -->``): read it, or put new text there and keep the rest of the file. The
Findings block of FINDINGS.md and the summary block of reference/h200/SUMMARY.md are written this way."""

from __future__ import annotations

from pathlib import Path


def pair(name: str) -> tuple[str, str]:
    """The start and end markers of the block ``name``."""
    return f"<!-- {name}:start -->", f"<!-- {name}:end -->"


def _check(path, text: str, start: str, end: str) -> None:
    if start not in text or end not in text:
        raise ValueError(f"{path}: no {start} ... {end} markers")


def between(path: Path, start: str, end: str) -> str:
    """The block between the markers of ``path``, one newline at its end."""
    text = Path(path).read_text()
    _check(path, text, start, end)
    return text.split(start, 1)[1].split(end, 1)[0].strip("\n") + "\n"


def put(path: Path, start: str, end: str, text: str, new: str | None = None) -> None:
    """Put ``text`` (ending in a newline) between the markers of ``path``, keeping the rest of
    the file; a missing file starts from ``new`` where given."""
    path = Path(path)
    old = path.read_text() if new is None or path.exists() else new
    _check(path, old, start, end)
    head, rest = old.split(start, 1)
    path.write_text(f"{head}{start}\n{text}{end}{rest.split(end, 1)[1]}")
