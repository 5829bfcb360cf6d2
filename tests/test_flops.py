"""FLOPs from the call itself: flop_counter on the reference, the variant's own formula where it
cannot count, else blank with the reason. Never another variant's or family's formula."""

import pytest
import torch
import torch.nn.functional as F
from torch.utils.flop_counter import FlopCounterMode

from study.observe import flops
from study.workloads.registry import Entry, Workload, get, names, reference_of

TINY = {"n": 24, "batch": 2, "in_features": 8, "out_features": 6, "seq_len": 16, "dim": 16}
TINY |= {"hidden": 32, "heads": 2, "head_dim": 8}


def build(name: str):
    e = get(name)
    shape = {k: TINY[k] for k in e.shape_keys}
    g = torch.Generator().manual_seed(0)
    return e, shape, e.build(shape=shape, dtype=torch.float32, device="cpu", gen=g)


def count(fn, *args, mode=None) -> int:
    mode = mode or flops.counter()
    with mode, torch.no_grad():
        fn(*args)
    return mode.get_total_flops()


@pytest.mark.parametrize("name", [n for n in names() if get(n).flops is not None])
def test_a_variants_own_formula_matches_flop_counter(name):
    e, shape, wl = build(name)
    ins = tuple(t.double() if t.is_floating_point() else t for t in wl.inputs)
    assert count(reference_of(wl), *ins) == e.flops(shape) > 0


def test_cpu_flash_sdpa_is_counted_like_math():
    q, k, v = (torch.randn(2, 3, 16, 8, dtype=torch.float64) for _ in range(3))
    sdpa = lambda: F.scaled_dot_product_attention(q, k, v, is_causal=True)  # noqa: E731
    assert count(sdpa, mode=FlopCounterMode(display=False)) == 0  # flop_counter's gap on CPU
    from torch.nn.attention import SDPBackend, sdpa_kernel

    with sdpa_kernel([SDPBackend.MATH]):
        math = count(sdpa)
    assert count(sdpa) == math == 4 * 2 * 3 * 16 * 16 * 8


def test_block_counts_its_projections_attention_and_mlp():
    e, s, wl = build("block")
    t, d, h = s["batch"] * s["seq_len"], s["dim"], s["hidden"]
    want = (
        2 * t * d * 3 * d  # qkv
        + 4 * s["batch"] * s["seq_len"] ** 2 * d  # q@k^T and p@v, all heads (full matrix)
        + 2 * t * d * d  # output projection
        + 3 * 2 * t * d * h  # GeGLU: gate, up, down
    )
    assert e.flops is None  # counted, not a formula
    assert count(reference_of(wl), wl.inputs[0].double()) == want


def _entry(name="softmax_only", family="attention", formula=None, target=None):
    def build(**_):
        raise AssertionError("not built here")

    return Entry(name, family, build, flops=formula, target=target)


WL = Workload(fn=torch.softmax, inputs=(), reference=torch.softmax)
SHAPE = {"batch": 2, "heads": 4, "seq_len": 128, "head_dim": 32}


def test_counter_wins_over_a_formula():
    out = flops.cell_flops(_entry(formula=lambda s: 1.0), WL, SHAPE, 123.0)
    assert out["flops"] == 123.0 and out["flops_source"] == "flop_counter"
    assert out["flops_note"] is None and out["flops_useful"] == 123.0  # nothing masked


def test_useful_flops_are_the_share_the_work_needs():
    wl = Workload(fn=torch.softmax, inputs=(), reference=torch.softmax, useful_fraction=0.25)
    assert flops.cell_flops(_entry(), wl, SHAPE, 400.0)["flops_useful"] == 100.0
    assert flops.cell_flops(_entry(), wl, SHAPE, 0.0)["flops_useful"] is None  # blank stays blank
    assert flops.cell_flops(_entry(), wl, SHAPE, 400.0)["flops_scheduled"] is None  # no tiles


def test_scheduled_flops_are_the_tiles_a_kernel_is_given_beside_the_useful_elements():
    # flex: the mask keeps 30% of the elements, its block mask 40% of the tiles
    wl = Workload(fn=torch.softmax, inputs=(), reference=torch.softmax, useful_fraction=0.3,
                  scheduled_fraction=0.4)  # fmt: skip
    out = flops.cell_flops(_entry(), wl, SHAPE, 1000.0)
    assert out["flops_useful"] == pytest.approx(300.0)
    assert out["flops_scheduled"] == pytest.approx(400.0)


def test_a_variant_without_counted_flops_or_formula_is_blank_never_the_familys():
    # softmax_only in the attention family: flop_counter counts no softmax, and the variant has
    # no formula; attention's 4*B*H*S^2*D (16,777,216 here) must not be borrowed.
    out = flops.cell_flops(_entry(), WL, SHAPE, 0.0)
    assert out["flops"] is None and out["flops_source"] is None
    assert "counted 0" in out["flops_note"] and "@register('softmax_only'" in out["flops_note"]
    out = flops.cell_flops(_entry("layernorm", "mlp", target="x.layernorm"), WL, SHAPE, 0.0)
    assert out["flops"] is None and "variant.flops=" in out["flops_note"]


def test_a_variants_own_formula_fills_in_where_the_counter_cannot_count():
    out = flops.cell_flops(_entry(formula=lambda s: 2.0 * s["seq_len"]), WL, SHAPE, None)
    assert out["flops"] == 256.0 and out["flops_source"] == "analytic"
    assert "slice" in out["flops_note"]
    out = flops.cell_flops(_entry(formula=lambda s: 7.0), WL, SHAPE, 0.0)
    assert out["flops"] == 7.0 and out["flops_source"] == "analytic"


def test_sdpa_flops_count_grouped_query_attention():
    """A Llama's 12 query heads over 3 key/value heads: torch 2.11's flop_counter asserts equal
    heads in its SDPA formula (on an H100 it failed every Llama cell's float64 reference); the
    study's counts the work of 12 heads, as SDPA's enable_gqa does, on every torch."""
    import inspect

    from torch.utils import flop_counter as fc

    q, kv = (1, 12, 8, 16), (1, 3, 8, 16)
    fwd, bwd = inspect.unwrap(fc.sdpa_flop), inspect.unwrap(fc.sdpa_backward_flop)  # shapes
    assert flops._grouped(fwd)(q, kv, kv, out_shape=q) == fwd(q, q, q, out_shape=q) > 0
    assert flops._grouped(bwd)(q, q, kv, kv, out_shape=None) == bwd(q, q, q, q, out_shape=None)
    counter = flops.counter()
    eff = next(op for op in counter.flop_registry if "efficient_attention" in str(op))
    assert counter.flop_registry[eff] is not fc.flop_registry[eff]  # the grouped formula
