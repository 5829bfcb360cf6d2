"""The Findings' v2 → v3 section: analysis.compare's per-cell causes, from the kept v2 CSVs."""

import shutil

import pandas as pd

from reference.findings.base.common import read
from reference.findings.changes import since_kept
from tests.conftest import ROOT

RESULTS = ROOT / "reference" / "h200"


def _study(tmp_path, with_v2=True):
    """part3 of the committed study, with v2's part3 (and v1's CSVs) kept below it."""
    d = tmp_path / "h200"
    d.mkdir()
    runs = pd.read_csv(RESULTS / "runs.csv", low_memory=False)
    runs[runs["source"] == "part3"].to_csv(d / "runs.csv", index=False)
    k = pd.read_csv(RESULTS / "kernels.csv", low_memory=False)
    k[k["source"] == "part3"].to_csv(d / "kernels.csv", index=False)
    if with_v2:
        (d / "v2").mkdir()
        old = pd.read_csv(RESULTS / "v2" / "runs.csv", low_memory=False)
        old[old["source"] == "part3"].to_csv(d / "v2" / "runs.csv", index=False)
    shutil.copytree(RESULTS / "v1", d / "v1")
    return d


def test_the_previous_study_is_the_newest_kept_after_v1(tmp_path):
    for v in ("v1", "v2", "v10", "vx"):
        (tmp_path / v).mkdir()
        (tmp_path / v / "runs.csv").write_text("status\nok\n")
    assert since_kept.previous(tmp_path) == tmp_path / "v10"
    shutil.rmtree(tmp_path / "v10")
    shutil.rmtree(tmp_path / "v2")
    assert since_kept.previous(tmp_path) is None  # v1 alone: findings_v1's section


def test_v2_to_v3_says_why_each_blog_cell_moved(tmp_path):
    text = "\n".join(since_kept.section(read(_study(tmp_path))))
    assert "v2 → v3 (`python -m analysis.compare reference/h200/v2 reference/h200`" in text
    assert "35 cells matched (0 only in A, 0 only in B)" in text
    # naive under default: v2's paired figure predates the lead-in call, v3's has it
    (naive,) = [x for x in text.splitlines() if x.startswith("| naive | default | part3 |")]
    assert "2.94x [2.84–2.99] | 3.26x [3.26–3.27]" in naive  # v3: t-interval over processes
    assert "lead-in: v2's paired timing had no lead-in call" in naive
    # cuDNN compiled: same kernels, latency over device time in v2 and v3, neither with a host
    # time measured: not called host-bound (issue 69), named by what it is not
    (cudnn,) = [x for x in text.splitlines() if x.startswith("| cudnn | default | part3 |")]
    assert "not the device: kernels unchanged" in cudnn and "v2 latency over device time" in cudnn
    assert "host-bound" not in cudnn
    assert "lead-in (v2's paired timing had no lead-in call before each block)" in text


def test_without_a_kept_v2_the_section_is_v1s(tmp_path):
    text = "\n".join(since_kept.section(read(_study(tmp_path, with_v2=False))))
    assert "v1 → v2" in text and "v2 → v3" not in text


def test_a_cell_no_longer_ok_is_said_with_the_errors_own_words(tmp_path):
    d = _study(tmp_path)
    runs = pd.read_csv(d / "runs.csv", low_memory=False)
    at = (runs["variant"] == "math") & (runs["compile"] == "default")
    runs["reason"] = runs["reason"].astype(object)
    runs.loc[at, "status"] = "oom"
    runs.loc[at, "reason"] = (
        "AcceleratorError: CUDA error: out of memory Search for `cudaErrorMemoryAllocation' in "
        "https://docs.nvidia.com for more information. CUDA kernel errors might be reported"
    )
    runs.to_csv(d / "runs.csv", index=False)
    text = "\n".join(since_kept.section(read(d)))
    line = next(x for x in text.splitlines() if x.startswith("- No longer ok: part3 math default"))
    # the cell is not ok from its first failed repeat (analysis.load.cells), in the error's words
    assert "(ok → oom: repeat " in line and "AcceleratorError: CUDA error: out of memory)" in line
