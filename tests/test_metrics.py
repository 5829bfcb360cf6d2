"""Rates, roofline and payback: pure functions (FLOPs themselves: tests/test_flops.py)."""

import pytest

from study.rows import metrics


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


def test_a_compiled_row_divides_by_its_own_eager_twin():
    """Two window sizes, eager and compiled each, repeated: each compiled row pairs with the
    eager row of its own window (eager_hash), over the median of that twin's repeats."""
    from study.rows.io import with_speedups

    rows = [
        {"compile": "off", "status": "ok", "config_hash": "e128", "latency_median_us": "100"},
        {"compile": "off", "status": "ok", "config_hash": "e128", "latency_median_us": "120"},
        {"compile": "off", "status": "ok", "config_hash": "e512", "latency_median_us": "400"},
        {
            "compile": "default",
            "status": "ok",
            "config_hash": "c128",
            "eager_hash": "e128",
            "latency_median_us": "55",
        },
        {
            "compile": "default",
            "status": "ok",
            "config_hash": "c512",
            "eager_hash": "e512",
            "latency_median_us": "100",
        },
    ]
    out = with_speedups(rows)
    assert out[3]["speedup"] == 2.0 and out[4]["speedup"] == 4.0
