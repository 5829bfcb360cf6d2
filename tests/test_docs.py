"""The docs hold together: every relative link in the README, docs/, benchmarks/README.md and
reference/h200's FINDINGS.md and README.md reaches a file (and a `#heading` in it), and the README
stays short."""

import re
import unicodedata
from pathlib import Path

from tests.conftest import ROOT

README_MAX_BYTES = 25_000
LINK = re.compile(r"!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
FENCE = re.compile(r"^(```|~~~).*?^\1[^\n]*$", re.M | re.S)
CODE = re.compile(r"`+[^`\n]*`+")


def docs() -> list[Path]:
    files = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    results = ROOT / "reference" / "h200"
    return files + [
        ROOT / "benchmarks" / "README.md",
        results / "FINDINGS.md",
        results / "SUMMARY.md",
        results / "README.md",
    ]


def _prose(text: str) -> str:
    """The text without code blocks and inline code, where a [x](y) is not a link."""
    return CODE.sub("", FENCE.sub("", text))


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, markup and punctuation dropped, spaces to -."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading.strip())  # a link's text only
    text = text.replace("`", "").lower()
    kept = "".join(c for c in text if c in " -_" or unicodedata.category(c)[0] in "LN")
    return kept.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    seen: dict[str, int] = {}
    out = set()
    for line in FENCE.sub("", path.read_text()).splitlines():
        m = re.match(r"#{1,6}\s+(.*?)\s*#*\s*$", line)
        if not m:
            continue
        s = slug(m.group(1))
        n = seen.get(s, 0)
        seen[s] = n + 1
        out.add(s if n == 0 else f"{s}-{n}")
    return out


def _name(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(ROOT.resolve()))
    except ValueError:
        return path.name


def broken_links(path: Path) -> list[str]:
    """Each relative link of a Markdown file that reaches no file, or no heading in it."""
    bad = []
    for target in LINK.findall(_prose(path.read_text())):
        if re.match(r"[a-z][a-z0-9+.-]*:", target, re.I):  # http:, https:, mailto:
            continue
        where, _, anchor = target.partition("#")
        dest = (path.parent / where).resolve() if where else path
        if not dest.exists():
            bad.append(f"{_name(path)}: {target} (no such file)")
        elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
            bad.append(f"{_name(path)}: {target} (no heading #{anchor} in {_name(dest)})")
    return bad


def test_every_relative_link_resolves():
    files = docs()
    assert len(files) > 4 and all(f.exists() for f in files), files
    bad = [b for f in files for b in broken_links(f)]
    assert not bad, "broken links:\n" + "\n".join(bad)


def test_the_readme_is_a_front_door():
    size = len((ROOT / "README.md").read_bytes())
    assert size < README_MAX_BYTES, (
        f"README.md is {size} bytes, over {README_MAX_BYTES}: move detail to docs/ "
        "(method, sweeps, analysis), benchmarks/README.md or reference/h200/FINDINGS.md"
    )


def test_the_checker_finds_a_broken_link_and_a_missing_heading(tmp_path):
    (tmp_path / "other.md").write_text("# Other page\n\n## The host's phases\n")
    page = tmp_path / "page.md"
    page.write_text(
        "# Page\n\n[ok](other.md) [ok](other.md#the-hosts-phases) [ok](#page) "
        "[web](https://example.com/x.md) `[code](nowhere.md)`\n\n"
        "```\n[in a block](nowhere.md)\n```\n\n"
        "[gone](nowhere.md) [no heading](other.md#nope) [here](#nope)\n"
    )
    assert broken_links(page) == [
        "page.md: nowhere.md (no such file)",
        "page.md: other.md#nope (no heading #nope in other.md)",
        "page.md: #nope (no heading #nope in page.md)",
    ]


def test_slugs_match_githubs():
    assert slug("`stability.py`: do the numbers hold across fresh processes?") == (
        "stabilitypy-do-the-numbers-hold-across-fresh-processes"
    )
    assert slug("Findings on the H200, in short") == "findings-on-the-h200-in-short"
    assert slug("The quickstart (4 cells)") == "the-quickstart-4-cells"


def test_the_quickstart_prose_says_how_to_read_it_not_a_fixed_result():
    """The README's quickstart read '0.85x ... compiling did not pay' as if every run would:
    it says how to read the lines (the interval, no measurable difference) instead."""
    text = (ROOT / "README.md").read_text()
    after = text.split("python -m analysis.report        #")[1].split("\n## ")[0]
    assert "did not pay" not in after
    assert "How to read it" in after and "no measurable difference" in after
