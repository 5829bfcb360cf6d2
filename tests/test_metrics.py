"""Rates, roofline and payback: pure functions (FLOPs themselves: tests/test_flops.py)."""

import pytest

from study import metrics


def test_rates_are_amount_over_latency():
    assert metrics.rate(2e12, 1e6, 1e12) == pytest.approx(2.0)  # 2 TFLOP in 1 s
    assert metrics.rate(4e9, 2e6, 1e9) == pytest.approx(2.0)
    assert metrics.rate(1.0, None, 1e9) is None
    assert metrics.rate(None, 5.0, 1e9) is None
    assert metrics.arith_intensity(100.0, 50.0) == 2.0
    assert metrics.arith_intensity(100.0, 0) is None


def test_unknown_ceiling_leaves_percentages_blank():
    r = metrics.roofline(100.0, 1000.0, 10.0, None, None)
    assert r["pct_peak_compute"] is None and r["pct_peak_bw"] is None and r["bound"] is None
    r = metrics.roofline(100.0, 1000.0, 10.0, 800.0, None)
    assert r["pct_peak_compute"] == pytest.approx(12.5) and r["bound"] is None


def test_roofline_bound_from_ridge_point():
    # ridge = 800e12 / 4000e9 = 200 FLOP/B
    assert metrics.roofline(1, 1, 199.0, 800.0, 4000.0)["bound"] == "memory"
    assert metrics.roofline(1, 1, 201.0, 800.0, 4000.0)["bound"] == "compute"


def test_payback_blank_unless_compiled_is_faster():
    assert metrics.payback_calls(2.0, 100.0, 50.0) == pytest.approx(2.0e6 / 50.0)
    assert metrics.payback_calls(2.0, 100.0, 100.0) is None
    assert metrics.payback_calls(2.0, 100.0, 150.0) is None
    assert metrics.speedup(100.0, 50.0) == 2.0
