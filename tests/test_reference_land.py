"""benchmarks/reference_study.sh land: a new study replaces a results dir's, and every earlier
study's CSVs stay (v1/, v2/, and the one it replaces under the name given)."""

import subprocess

import pandas as pd
import pytest

from tests.conftest import ROOT, root_env

RESULTS = ROOT / "reference" / "h200"


def _study(d, rows, source="part1"):
    d.mkdir(parents=True)
    rows[rows["source"] == source].to_csv(d / "runs.csv", index=False)
    k = pd.read_csv(RESULTS / "kernels.csv", low_memory=False)
    k[k["source"] == source].to_csv(d / "kernels.csv", index=False)
    return d


@pytest.mark.slow
def test_land_keeps_every_earlier_study_and_the_replaced_one_under_its_name(tmp_path):
    runs = pd.read_csv(RESULTS / "runs.csv", low_memory=False)
    res = _study(tmp_path / "h200", runs)
    for v in ("v1", "v2"):
        _study(res / v, runs)
    (res / "README.md").write_text("# mine\n")
    (res / "part1").mkdir()  # the old study's figures: replaced
    (res / "part1" / "old.png").write_bytes(b"")
    new = _study(tmp_path / "new", runs.assign(latency_median_us=runs["latency_median_us"] * 0.9))
    sh = ROOT / "benchmarks" / "reference_study.sh"

    bad = subprocess.run(["bash", str(sh), "land", str(new), str(res), "latest"], cwd=ROOT,
                         env=root_env(), capture_output=True, text=True, timeout=60)  # fmt: skip
    assert bad.returncode == 2 and "KEEP is a version name" in bad.stdout
    r = subprocess.run(["bash", str(sh), "land", str(new), str(res), "v3"], cwd=ROOT,
                       env=root_env(), capture_output=True, text=True, timeout=600)  # fmt: skip
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    assert (res / "v1" / "runs.csv").exists() and (res / "v2" / "runs.csv").exists()
    kept = pd.read_csv(res / "v3" / "runs.csv", low_memory=False)
    assert len(kept) == (runs["source"] == "part1").sum()
    assert (
        kept["latency_median_us"].tolist()
        == runs[runs["source"] == "part1"]["latency_median_us"].tolist()
    )  # the replaced study's own rows, not the new ones
    now = pd.read_csv(res / "runs.csv", low_memory=False)
    assert now["latency_median_us"].tolist() == pytest.approx(kept["latency_median_us"] * 0.9)
    assert (res / "README.md").read_text() == "# mine\n"
    assert not (res / "part1" / "old.png").exists()
    assert "v3 → v4" in (res / "FINDINGS.md").read_text()  # the Findings compare the kept one
    again = subprocess.run(["bash", str(sh), "land", str(new), str(res), "v3"], cwd=ROOT,
                           env=root_env(), capture_output=True, text=True, timeout=60)  # fmt: skip
    assert again.returncode == 2  # h200.prev is there: compare or remove it first
