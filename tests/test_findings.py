"""Every number in the README's Findings section comes from the committed H200 CSVs."""

from analysis.findings import findings, readme_block
from tests.conftest import ROOT


def test_readme_findings_match_committed_results():
    expected = findings(ROOT / "results" / "h200")
    assert readme_block(ROOT / "README.md") == expected, (
        "README Findings are stale: regenerate with `python -m analysis.findings results/h200`"
    )


def test_committed_results_are_csv_png_svg_md_only():
    files = list((ROOT / "results").rglob("*"))
    assert files
    assert all(f.suffix in {".csv", ".png", ".svg", ".md"} for f in files if f.is_file())
