"""Your own workload (variant.target): the example runs, docs/workloads.md shows it verbatim, FLOPs come
from the call or are blank with the reason, and a bad target fails at start or as a row."""

import re
import textwrap

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from study.rows import io
from tests.conftest import ROOT, TINY, cli, compose

EXAMPLE = ["variant=custom", "variant.target=examples.norm_mlp.NormMLP"]


# Factories and inputs the cases below name by dotted path (tests.test_custom.<name>).
def scores(batch, heads, seq_len, *, dtype, device, gen):
    return torch.randn(batch, heads, seq_len, seq_len, dtype=dtype, device=device, generator=gen)


def layernorm(dim):
    return nn.LayerNorm(dim)


def layernorm_flops(batch, seq_len, dim):
    return 8.0 * batch * seq_len * dim  # mean, var, normalise, scale, shift: a user's own count


def gelu():
    return F.gelu  # a plain function, not a module: its reference is itself in float64


def forty_two():
    return 42


def not_tensors(batch, *, dtype, device, gen):
    return [torch.zeros(batch), "x"]  # a list, but not of tensors (a dict of tensors is fine)


@pytest.mark.slow
def test_example_module_runs_with_its_reference_and_counted_flops(run_inline):
    row, kernels, _ = run_inline(*EXAMPLE, name="example")
    assert row["status"] == "ok", row["reason"]
    assert row["variant"] == "NormMLP" and row["family"] == "custom"
    assert row["max_rel_err"] <= row["tolerance"] and kernels
    s = {k: row[k] for k in ("batch", "seq_len", "dim", "hidden")}
    assert s == {"batch": 2, "seq_len": 16, "dim": 16, "hidden": 32}  # +experiment=tiny
    tokens = s["batch"] * s["seq_len"]
    assert row["flops_source"] == "flop_counter"
    assert row["flops"] == 2 * 2 * tokens * s["dim"] * s["hidden"]  # up and down projections
    assert row["tflops"] > 0


@pytest.mark.slow
def test_example_yaml_on_a_search_path(run_inline):
    searchpath = f"hydra.searchpath=[file://{ROOT / 'examples' / 'conf'}]"
    row, _, _ = run_inline(searchpath, "variant=norm_mlp", name="yaml")
    assert row["status"] == "ok", row["reason"]
    assert row["variant"] == "norm_mlp" and row["flops_source"] == "flop_counter"


def test_the_docs_snippets_are_the_examples_verbatim():
    readme = (ROOT / "docs" / "workloads.md").read_text()
    section = readme.split("## Add a workload", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```(python|yaml)\n(.*?)```", section, re.S)
    assert {lang for lang, _ in blocks} == {"python", "yaml"}
    files = [*(ROOT / "examples").rglob("*.py"), *(ROOT / "examples").rglob("*.yaml")]
    sources = "\n".join(p.read_text() for p in files)
    for _, code in blocks:
        assert textwrap.dedent(code) in sources, (
            f"docs/workloads.md snippet is not in examples/:\n{code}"
        )


@pytest.mark.slow
def test_softmax_in_the_attention_family_has_blank_flops_not_attentions(run_inline):
    row, _, _ = run_inline(
        "variant=custom",
        "variant.target=torch.nn.Softmax",
        "+variant.kwargs.dim=-1",
        "variant.inputs=tests.test_custom.scores",
        "family=attention",
        name="softmax_only",
    )
    assert row["status"] == "ok", row["reason"]
    assert row["family"] == "attention" and row["seq_len"] == 16
    assert row["flops"] is None and row["flops_source"] is None and row["tflops"] is None
    assert "counted 0" in row["flops_note"] and "variant.flops=" in row["flops_note"]


@pytest.mark.slow
def test_layernorm_in_the_mlp_family_is_ok_with_blank_or_its_own_flops(run_inline):
    base = ["variant=custom", "variant.target=tests.test_custom.layernorm", "family=mlp"]
    base += ["variant.inputs=examples.norm_mlp.inputs"]
    row, _, _ = run_inline(*base, name="layernorm")
    assert row["status"] == "ok", row["reason"]  # was: error (KeyError: 'hidden')
    assert row["flops"] is None and "counted 0" in row["flops_note"]
    row, _, _ = run_inline(*base, "variant.flops=tests.test_custom.layernorm_flops", name="ln2")
    assert row["status"] == "ok", row["reason"]
    assert row["flops_source"] == "analytic" and row["flops"] == 8.0 * 2 * 16 * 16
    assert row["tflops"] > 0


@pytest.mark.slow
def test_a_plain_function_is_its_own_float64_reference(run_inline):
    row, _, _ = run_inline(
        "variant=custom",
        "variant.target=tests.test_custom.gelu",
        "variant.inputs=examples.norm_mlp.inputs",
        name="gelu",
    )
    assert row["status"] == "ok", row["reason"]
    assert 0 < row["max_rel_err"] <= row["tolerance"]  # bf16 against float64: not identical


@pytest.mark.parametrize(
    "target, inputs, says",
    [
        ("forty_two", "examples.norm_mlp.inputs", "returned int (42), which is not callable"),
        ("gelu", "tests.test_custom.not_tensors", "returned Tensor, str: it must return a tensor"),
    ],
)
def test_a_factory_that_builds_the_wrong_thing_is_an_error_row_saying_so(
    run_inline, target, inputs, says
):
    row, _, _ = run_inline(
        "variant=custom",
        f"variant.target=tests.test_custom.{target}",
        f"variant.inputs={inputs}",
        name=target,
    )
    assert row["status"] == "error" and says in row["reason"], row["reason"]


@pytest.mark.parametrize(
    "overrides, says",
    [
        (["variant.target=examples.nope.Make"], "cannot import module 'examples.nope'"),
        (["variant.target=examples.norm_mlp.Nope"], "'examples.norm_mlp' imports but has no"),
        (["variant.target=examples.norm_mlp"], "is a module, not a factory"),
        (["variant.target=examples.norm_mlp.NormMLP", "variant.name=flash"], "its own name"),
        (["variant.target=torch.nn.LayerNorm"], "has no function 'inputs'"),
        ([], "variant=custom needs a factory: variant.target="),
    ],
)
def test_bad_custom_config_is_a_config_error(overrides, says):
    from study.workloads.check import check_config

    why = check_config(compose(*TINY, "variant=custom", *overrides))
    assert why is not None and says in why, why


def test_missing_shape_keys_are_listed_in_one_message():
    from study.workloads.check import check_config

    msg = check_config(compose(*EXAMPLE, "shape.dim=8", "device=cpu")) or ""
    assert "shape.batch=<int> shape.seq_len=<int> shape.hidden=<int>" in msg
    assert "shape.dim=<int>" not in msg and "family.shapes.cpu" in msg


@pytest.mark.slow
def test_cli_bad_target_and_missing_shapes_stop_at_start_without_a_traceback(tmp_path):
    r = cli("-m", "variant=custom", "variant.target=mypkg.blocks.make", f"out_root={tmp_path}")
    assert r.returncode != 0 and not list(tmp_path.rglob("run.csv"))
    assert "cannot import module 'mypkg'" in r.stderr and "No module named" in r.stderr
    assert "Traceback" not in r.stderr
    r = cli("-m", *EXAMPLE, "compile=off,default", f"out_root={tmp_path}")
    assert r.returncode != 0 and not list(tmp_path.rglob("run.csv"))
    assert "shape.batch=<int> shape.seq_len=<int> shape.dim=<int> shape.hidden=<int>" in r.stderr
    assert "Traceback" not in r.stderr


USER_MODULE = '''
import torch
from torch import nn


class NormProject(nn.Module):
    """A user's LayerNorm module: layer_norm(x) @ W + b."""

    def __init__(self, dim):
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        self.proj = nn.Linear(dim, dim)

    def forward(self, x):
        return self.proj(self.norm(x))


def inputs(batch, dim, *, dtype, device, gen):
    return torch.randn(batch, dim, dtype=dtype, device=device, generator=gen)
'''

USER_YAML = """# @package _global_
defaults:
  - /family: custom
variant:
  name: my_norm
  target: my_norms.NormProject
family:
  shapes:
    cpu: {batch: 64, dim: 32}
"""


@pytest.mark.slow
def test_a_users_module_on_their_own_path_runs_eager_and_compiled(tmp_path):
    (tmp_path / "my_norms.py").write_text(USER_MODULE)
    (tmp_path / "conf" / "variant").mkdir(parents=True)
    (tmp_path / "conf" / "variant" / "my_norm.yaml").write_text(USER_YAML)
    out = tmp_path / "out"
    r = cli(
        "-m",
        f"hydra.searchpath=[file://{tmp_path / 'conf'}]",
        "variant=my_norm",
        "compile=off,default",
        "timing.calls=5",
        f"out_root={out}",
        cwd=tmp_path,  # the user's own directory: nothing of theirs is in study/
    )
    assert r.returncode == 0, r.stderr[-2000:]
    rows = io.read_csv(next((out / "sweeps").iterdir()) / "runs.csv")
    assert sorted(x["compile"] for x in rows) == ["default", "off"]
    for x in rows:
        assert x["status"] == "ok", x["reason"]
        assert x["variant"] == "my_norm" and x["family"] == "custom"
        assert x["flops_source"] == "flop_counter" and float(x["flops"]) == 2 * 64 * 32 * 32
    compiled = next(x for x in rows if x["compile"] == "default")
    assert int(compiled["generated_kernels"]) > 0


def test_a_module_named_whole_is_found_whatever_was_imported_before(monkeypatch):
    """``examples.norm_mlp`` is an attribute of ``examples`` only once something imported it:
    the answer depended on the tests that ran before, on the same worker."""
    import sys
    import types

    import examples
    from study.workloads.custom import locate

    monkeypatch.delitem(sys.modules, "examples.norm_mlp", raising=False)
    monkeypatch.delattr(examples, "norm_mlp", raising=False)
    got = locate("examples.norm_mlp", "variant.target")
    assert isinstance(got, types.ModuleType) and got.__name__ == "examples.norm_mlp"
