"""The analysis on a real tiny CPU sweep: files, agreement with runs.csv, failures, no torch."""

import subprocess
import sys

import pandas as pd
import pytest

from tests.conftest import ROOT, TINY, cli

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def two_sweeps(tmp_path_factory):
    out = tmp_path_factory.mktemp("report")
    a = cli("-m", "variant=naive,efficient", "compile=off,default", f"out_root={out}/a", *TINY)
    assert a.returncode == 0, a.stderr[-2000:]
    b = cli("-m", "variant=naive", "compile=off", "shape.seq_len=16,32", f"out_root={out}/b", *TINY)
    assert b.returncode == 0, b.stderr[-2000:]
    return [next((out / x / "sweeps").iterdir()) for x in ("a", "b")]


def report(*args):
    # A finder that refuses torch: any torch import in the report fails loudly.
    code = (
        "import sys\n"
        "class NoTorch:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name == 'torch' or name.startswith('torch.'):\n"
        "            raise ImportError('analysis must not import torch')\n"
        "sys.meta_path.insert(0, NoTorch())\n"
        "from analysis.report import main\n"
        f"main({list(args)!r})\n"
        "assert 'torch' not in sys.modules\n"
    )
    return subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300
    )


def test_report_of_one_sweep_without_torch(two_sweeps):
    sweep = two_sweeps[0]
    r = report(str(sweep))
    assert r.returncode == 0, r.stderr[-3000:]
    out = sweep / "report"
    for f in ("report.md", "report.html", "runs.csv", "kernels.csv", "revealed.csv"):
        assert (out / f).stat().st_size > 0, f
    for fig in (
        "latency",
        "speedup",
        "kernels_per_forward",
        "cpu_vs_gpu",
        "top_kernels",
        "payback",
        "roofline",
    ):
        assert (out / f"{fig}.png").stat().st_size > 1000, fig
        assert (out / f"{fig}.svg").stat().st_size > 1000, fig
    assert (
        "skipped Scaling with shape" in r.stdout
    )  # one sweep varies no shape: skipped, with a reason
    md = (out / "report.md").read_text()
    runs = pd.read_csv(sweep / "runs.csv")
    for _, row in runs[runs["status"] == "ok"].iterrows():
        assert f"{row['latency_median_us']:,.1f}" in md  # the table agrees with runs.csv
    failed = runs[runs["variant"] == "efficient"]
    assert set(failed["status"]) == {"unsupported"}
    assert "No viable backend" in md and "unsupported" in md
    html = (out / "report.html").read_text()
    assert html.count("data:image/png;base64,") == 7 and "<img" in html
    assert "hidden copy" in md


def test_report_of_two_sweeps_side_by_side(two_sweeps, tmp_path):
    r = report(*map(str, two_sweeps), "--out", str(tmp_path / "both"))
    assert r.returncode == 0, r.stderr[-3000:]
    runs = pd.read_csv(tmp_path / "both" / "runs.csv")
    assert runs["source"].nunique() == 2 and len(runs) == 6
    assert (tmp_path / "both" / "scaling.png").exists()  # the second sweep varies seq_len


def test_report_survives_missing_columns(tmp_path):
    d = tmp_path / "sweep"
    d.mkdir()
    pd.DataFrame(
        [
            {
                "run_id": "x",
                "variant": "naive",
                "family": "attention",
                "compile": "off",
                "status": "error",
                "reason": "boom",
            }
        ]
    ).to_csv(d / "runs.csv", index=False)
    r = report(str(d))
    assert r.returncode == 0, r.stderr[-3000:]
    assert "boom" in (d / "report" / "report.md").read_text()
    assert "skipped" in r.stdout


def test_rebuilt_figures_are_byte_identical(two_sweeps, tmp_path):
    # Committed reports (results/h200) must diff only where the rows do: no dates, no random ids.
    for name in ("one", "two"):
        r = report(str(two_sweeps[1]), "--out", str(tmp_path / name))
        assert r.returncode == 0, r.stderr[-3000:]
    figs = sorted(p.name for p in (tmp_path / "one").glob("*.svg"))
    assert figs
    for f in figs:
        assert (tmp_path / "one" / f).read_bytes() == (tmp_path / "two" / f).read_bytes(), f
