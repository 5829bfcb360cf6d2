"""FLOP formulas, rates, roofline and payback: pure functions, checked against flop_counter."""

import pytest
import torch
from torch.utils.flop_counter import FlopCounterMode

from study import metrics
from study.workloads import attention, dense


def counted(fn, *args):
    with FlopCounterMode(display=False) as c:
        fn(*args)
    return c.get_total_flops()


def test_analytic_flops_match_flop_counter():
    g = torch.Generator().manual_seed(0)
    n = 24
    wl = dense.matmul_add(shape={"n": n}, dtype=torch.float32, device="cpu", gen=g)
    assert counted(wl.fn, *wl.inputs) == metrics.flops_analytic("matmul", {"n": n})
    shp = {"batch": 4, "in_features": 8, "out_features": 6}
    wl = dense.linear(shape=shp, dtype=torch.float32, device="cpu", gen=g)
    assert counted(wl.fn, *wl.inputs) == metrics.flops_analytic("linear", shp)
    shp = {"batch": 2, "seq_len": 3, "dim": 8, "hidden": 16}
    wl = dense.mlp(shape=shp, dtype=torch.float32, device="cpu", gen=g)
    assert counted(wl.fn, *wl.inputs) == metrics.flops_analytic("mlp", shp)
    shp = {"batch": 2, "heads": 3, "seq_len": 16, "head_dim": 8}
    q, k, v, mask = attention._qkv_mask(shp, torch.float32, "cpu", g, causal=True)
    # Causal attention: the full score matrix is counted, by both (the documented convention).
    assert counted(attention.naive, q, k, v, mask) == metrics.flops_analytic("attention", shp)
    # SDPA: the CPU flash op counts 0 (a flop_counter gap), so count the math backend.
    from torch.nn.attention import SDPBackend, sdpa_kernel

    with sdpa_kernel([SDPBackend.MATH]):
        sdpa = counted(
            lambda: torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
        )
    assert sdpa == metrics.flops_analytic("attention", shp)


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
