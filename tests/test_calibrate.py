"""Calibration runs on the CPU, caches per device/dtype/torch, and cells read the cache."""

import json

import pytest

from study.cell import phases
from study.measure import calibrate


@pytest.mark.slow
def test_calibration_on_cpu_caches_its_result(tmp_path, monkeypatch):
    path = str(tmp_path / "ceilings.json")
    res = calibrate.calibrate("cpu", ["fp32"], path)
    assert res["fp32"]["tflops"] > 0 and res["fp32"]["gbps"] > 0
    data = json.loads((tmp_path / "ceilings.json").read_text())
    (key,) = data
    name, dtype, torch_version = key.split("|")
    assert dtype == "fp32" and torch_version
    assert calibrate.lookup(name, "fp32", torch_version, path)["tflops"] == pytest.approx(
        res["fp32"]["tflops"]
    )
    assert calibrate.lookup(name, "bf16", torch_version, path) == {}  # never from another dtype


ROW = {
    "flops": 2e9,
    "bytes_min": 2000,
    "latency_median_us": 100.0,
    "device_name": "dev",
    "dtype": "bf16",
    "torch_version": "t",
}


def test_rows_get_percentages_only_from_a_calibrated_ceiling(tmp_path):
    row = dict(ROW)
    phases._rates(row, str(tmp_path / "none.json"))
    assert row["tflops"] == pytest.approx(2e9 / 100e-6 / 1e12)
    assert row["gbps"] == pytest.approx(2000 / 100e-6 / 1e9)
    assert row["pct_peak_compute"] is None and row["pct_peak_bw"] is None and row["bound"] is None
    path = str(tmp_path / "ceilings.json")
    calibrate.store("dev", "bf16", "t", {"tflops": 40.0, "gbps": 100.0}, path)
    row = dict(ROW)
    phases._rates(row, path)
    assert row["pct_peak_compute"] == pytest.approx(100 * 20.0 / 40.0)
    assert row["bound"] == "compute"  # 1e6 FLOP/B against a ridge of 400
