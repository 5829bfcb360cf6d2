"""Regional compilation (compile.regional, study/cell/regional.py) and the block's depth
(shape.layers): refused at start where it makes no sense, the repeated block found, the compiled
view sharing the eager module's parameters without changing it, and old cells' identity kept.
The compiled cells (subprocess, as in a sweep) are the slow tests at the end."""

import pytest

from study.config.rules import validate
from study.errors import ConfigError
from tests.conftest import compose


@pytest.mark.parametrize(
    "overrides, words",
    [
        (["compile=aot_inductor", "compile.regional=true"], "regions are torch.compile's"),
        (["compile=default", "compile.regional_how=layers"], "is not a method"),
        (["shape.layers=0"], "shape.layers=0 is not allowed"),
    ],
)
def test_regional_options_that_make_no_sense_are_refused_at_start(overrides, words):
    with pytest.raises(ConfigError) as e:
        validate(compose("variant=block", *overrides))
    assert words in str(e.value)


def test_a_models_depth_is_its_factorys_own_not_shape_layers():
    with pytest.raises(ConfigError, match=r"\+variant.kwargs.layers=N"):
        validate(compose("variant=gpt2", "shape.layers=4"))


@pytest.mark.parametrize(
    "overrides",
    [
        ["compile=default", "compile.regional=true", "shape.layers=4"],
        ["compile=reduce-overhead", "compile.regional=true", "compile.regional_how=blocks"],
        ["compile=off", "compile.regional=true"],  # eager ignores every compile setting
    ],
)
def test_regional_options_that_make_sense_are_accepted(overrides):
    validate(compose("variant=block", *overrides))


def test_old_cells_keep_their_identity_and_a_regional_or_deeper_cell_is_another():
    """A sweep made before regions and depths resumes: the defaults (whole model, one block)
    hash as the config did without those keys."""
    from study.config.cell_config import to_plain
    from study.config.identity import config_hash

    now = to_plain(compose("variant=block", "compile=default"))
    before = {**now, "compile": {k: v for k, v in now["compile"].items()
                                 if k not in ("regional", "regional_how")},
              "shape": {k: v for k, v in now["shape"].items() if k != "layers"}}  # fmt: skip
    assert config_hash(now) == config_hash(before)
    one = {**now, "shape": {**now["shape"], "layers": 1}}  # the family's one block, resolved
    assert config_hash(one) == config_hash(before)
    assert config_hash({**now, "shape": {**now["shape"], "layers": 4}}) != config_hash(now)
    regional = {**now, "compile": {**now["compile"], "regional": True}}
    assert config_hash(regional) != config_hash(now)
    how = {**now, "compile": {**now["compile"], "regional_how": "blocks"}}
    assert config_hash(how) == config_hash(now)  # no regions: the method changes nothing


def test_the_row_says_depth_and_regional_from_the_config():
    from study.config.cell_config import to_plain
    from study.rows import io

    row = io.base_row(to_plain(compose("variant=block", "shape.layers=4", "compile=default",
                              "compile.regional=true")), "r")  # fmt: skip
    assert row["layers"] == 4 and row["regional"] is True
    row = io.base_row(
        to_plain(compose("variant=block", "compile=off", "compile.regional=true")), "r"
    )
    assert row["layers"] is None and row["regional"] is None  # one block; eager: no regions
    row = io.base_row(to_plain(compose("variant=gpt2", "+variant.kwargs.layers=12")), "r")
    assert row["layers"] == 12


def test_the_repeated_block_is_found_in_a_module_list_or_a_sequential():
    from torch import nn

    from study.cell import regional
    from study.workloads.block import PreNormBlock, Stack

    assert regional.find(Stack(3, 16, 2, 32)) == (PreNormBlock, ["layers"], 3)
    seq = nn.Sequential(nn.Linear(4, 4), nn.Sequential(*[nn.Linear(4, 4) for _ in range(5)]))
    assert regional.find(seq) == (nn.Linear, ["1"], 5)
    assert regional.find(PreNormBlock(16, 2, 32)) is None  # one block: nothing repeats
    mixed = nn.ModuleList([nn.Linear(4, 4), nn.ReLU()])
    assert regional.find(mixed) is None
    b = nn.Linear(4, 4)  # weight-tied: one block applied 3 times (issue 68: "no repeated block")
    assert regional.find(nn.Sequential(nn.ReLU(), nn.ModuleList([b, b, b]))) == (
        nn.Linear,
        ["1"],
        3,
    )


def test_the_view_shares_parameters_and_leaves_the_eager_module_as_it_was():
    """What the cell times compiled is a view: its blocks replaced, the module's own blocks,
    parameters and class untouched (the eager twin stays eager), a training pass's parameters
    the same objects through either."""
    from study.cell import regional
    from study.workloads.block import PreNormBlock, Stack

    mod = Stack(3, 16, 2, 32)
    blocks = list(mod.layers)
    marked = []
    view = regional._view(mod, ["layers"], lambda c: marked.append(c) or _Wrapped(c))
    assert list(mod.layers) == blocks and all(type(b) is PreNormBlock for b in blocks)
    assert all(type(b).__name__ == "_Wrapped" for b in view.layers)
    assert marked == blocks
    assert [id(p) for p in view.parameters()] == [id(p) for p in mod.parameters()]


def _Wrapped(inner):  # noqa: N802 - a module made on demand (torch imported by the test)
    from torch import nn

    class _Wrapped(nn.Module):
        def __init__(self, inner):
            super().__init__()
            self.inner = inner

        def forward(self, x):
            return self.inner(x)

    return _Wrapped(inner)


def test_the_block_stacks_its_layers_each_with_its_own_weights():
    import torch

    from study.workloads.block import Stack, block

    gen = torch.Generator().manual_seed(0)
    shape = {"batch": 1, "seq_len": 4, "dim": 16, "heads": 2, "hidden": 32}
    wl = block(shape=shape, dtype=torch.float32, device="cpu", gen=gen, layers=3)
    assert isinstance(wl.fn, Stack) and len(wl.fn.layers) == 3
    w = [b.qkv.weight for b in wl.fn.layers]
    assert not torch.equal(w[0], w[1])
    assert wl.fn(*wl.inputs).shape == (1, 4, 16)


# --- compiled cells ------------------------------------------------------------------------


@pytest.mark.slow
def test_a_four_layer_block_compiled_by_region_traces_one_block_where_whole_traces_four(tmp_path):
    """Regional compilation's acceptance, from the rows: the same 4-layer block compiled
    whole and by region (auto: nested_compile_region for a forward; and per block). Each is one
    Dynamo graph, but the whole model's holds every layer's ops, and a region's one block's:
    the block's graph is traced once and reused by all four."""
    from tests.test_inductor import run_all

    deep = ("variant=block", "shape.layers=4", "compile=default")
    got = run_all(tmp_path, {
        "whole": deep,
        "nested": (*deep, "compile.regional=true"),
        "blocks": (*deep, "compile.regional=true", "compile.regional_how=blocks"),
    })  # fmt: skip
    whole, nested, blocks = (got[n][0] for n in ("whole", "nested", "blocks"))
    for r in (whole, nested, blocks):
        assert r["status"] == "ok", r["reason"]
        assert r["layers"] == "4" and int(r["graphs"]) == 1 and float(r["speedup_paired"]) > 0
    assert whole["regional"] == "" and whole["regional_method"] == ""
    assert nested["regional_method"] == "nested_compile_region"
    assert blocks["regional_method"] == "per-block torch.compile"
    for r in (nested, blocks):
        assert r["regional"] == "True" and r["regional_blocks"] == "4"
        assert r["regional_block"] == "PreNormBlock in layers"
        # one block's graph, not four: at most a quarter of the whole model's traced ops
        assert 0 < 4 * int(r["graph_ops"]) <= int(whole["graph_ops"]), (r, whole["graph_ops"])
        assert int(r["generated_kernels"]) < int(whole["generated_kernels"])
        assert float(r["compile_s"]) > 0 and float(r["first_call_s"]) > 0
    assert "reused" in nested["notes"] and "the rest of the module runs eager" in blocks["notes"]


@pytest.mark.slow
def test_regional_on_a_workload_with_no_repeated_block_is_unsupported_with_the_reason(tmp_path):
    """Never silently the whole model: a function (naive attention) and a single block have
    nothing to compile by region."""
    from tests.test_inductor import run_all

    got = run_all(tmp_path, {
        "naive": ("variant=naive", "compile=default", "compile.regional=true"),
        "one": ("variant=block", "compile=default", "compile.regional=true"),
    })  # fmt: skip
    for name, what in (("naive", "naive (a function)"), ("one", "block (PreNormBlock)")):
        row = got[name][0]
        assert row["status"] == "unsupported", row
        assert f"compile.regional=true: {what} has no repeated block" in row["reason"]
        assert row["compile_s"] == "" and row["regional"] == "True"


def test_the_regional_figure_joins_each_workload_whole_to_regional_and_skips_without_one():
    """analysis/figures/regional.py on made-up rows: one line per workload and way, the depth from
    layers (or the blocks a model's regional row compiled), no figure without regional rows."""
    import matplotlib.pyplot as plt
    import pandas as pd

    from analysis.figures.regional import regional
    from analysis.style import Skip

    base = dict(status="ok", compile="default", family="block", device_name="CPU", dtype="bf16",
                torch_version="2.13", source="s")  # fmt: skip
    rows = [
        dict(base, variant="block", layers=4, compile_s=8.5, speedup_paired=1.23),
        dict(base, variant="block", layers=4, compile_s=5.0, speedup_paired=1.25, regional=True,
             regional_method="nested_compile_region", regional_blocks=4),
        dict(base, variant="gpt2", family="custom", compile_s=12.0, speedup_paired=1.08),
        dict(base, variant="gpt2", family="custom", compile_s=7.9, speedup_paired=0.93,
             regional=True, regional_method="per-block torch.compile", regional_blocks=2),
    ]  # fmt: skip
    runs = pd.DataFrame(rows)
    fig, sentence = regional({"runs": runs})
    try:
        assert "block x4 · default nested_compile_region: compile 8.50 -> 5.00 s" in sentence
        assert "gpt2 x2 · default per-block torch.compile: compile 12.0 -> 7.90 s" in sentence
        w, h = fig.get_size_inches() * fig.dpi
        assert w <= 2000 and h <= 1400
    finally:
        plt.close(fig)
    with pytest.raises(Skip):
        regional({"runs": runs[runs["regional"] != True]})  # noqa: E712 - NaN is not True


def test_a_list_inside_the_repeated_list_is_not_counted_again():
    """The module itself a ModuleList of blocks, each holding a ModuleList of the same class:
    the outer list is the one compiled by region, its blocks counted once."""
    from torch import nn

    from study.cell import regional

    class Blk(nn.Module):
        def __init__(self, inner: bool):
            super().__init__()
            self.sub = nn.ModuleList([Blk(False), Blk(False)]) if inner else nn.ModuleList()

    root = nn.ModuleList([Blk(True) for _ in range(3)])
    cls, paths, blocks = regional.find(root)
    assert cls is Blk and paths == [""] and blocks == 3


def test_the_regional_figure_never_averages_cells_that_differ_in_another_axis():
    """Issue 68: a start=cold,artifacts x regional sweep drew one point at 15.9 s, the mean of
    the cold (20.03 s) and artifacts (11.76 s) cells. Each start is its own workload."""
    import matplotlib.pyplot as plt
    import pandas as pd

    from analysis.figures.regional import regional

    base = dict(status="ok", compile="default", family="block", device_name="CPU", dtype="bf16",
                torch_version="2.13", source="s", variant="block", layers=4)  # fmt: skip
    reg = dict(regional=True, regional_method="nested_compile_region", regional_blocks=4)
    runs = pd.DataFrame([
        dict(base, start="cold", compile_s=20.03, speedup_paired=1.2),
        dict(base, start="artifacts", compile_s=11.76, speedup_paired=1.2),
        dict(base, **reg, start="cold", compile_s=6.0, speedup_paired=1.1),
        dict(base, **reg, start="artifacts", compile_s=3.0, speedup_paired=1.1),
    ])  # fmt: skip
    fig, sentence = regional({"runs": runs})
    plt.close(fig)
    assert "start=cold nested_compile_region: compile 20.0 -> 6.00 s" in sentence
    assert "start=artifacts nested_compile_region: compile 11.8 -> 3.00 s" in sentence
    assert "15.9" not in sentence
