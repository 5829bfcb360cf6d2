"""The model suite's configuration (conf/experiment/suite.yaml, conf/regime/, conf/regimes/):
every model composes in both regimes with its kind and library, a regime plans only its
passes (the sweep leaves the rest out, a single run is refused), a regime needs a model, and a
decoder LM's latency call is one decode step whose output is the full forward's last position."""

import copy
import importlib.util

import pytest
from omegaconf import OmegaConf

from study.config import rules
from study.config.cell_config import MODEL_KINDS
from study.errors import ConfigError
from tests.conftest import ROOT, compose

SUITE = OmegaConf.load(ROOT / "conf" / "experiment" / "suite.yaml")
MODELS = str(SUITE.hydra.sweeper.params.variant).split(",")
HF = importlib.util.find_spec("transformers") is not None


def test_the_suite_has_a_dozen_models_from_three_libraries_and_five_kinds():
    libs, kinds = set(), set()
    for m in MODELS:
        v = compose(f"variant={m}").variant
        assert v.kind in MODEL_KINDS, f"conf/variant/{m}.yaml: variant.kind {v.kind!r}"
        libs.add(v.library)
        kinds.add(v.kind)
    assert len(MODELS) >= 12
    assert libs == {"transformers", "timm", "torchvision"}
    assert kinds == set(MODEL_KINDS)


@pytest.mark.parametrize("model", MODELS)
def test_every_model_composes_in_both_regimes_with_sizes_for_both_devices(model):
    for regime in ("throughput", "latency"):
        c = compose(f"variant={model}", f"regime={regime}", "pass=fwd")
        rules.validate(c)  # raises on a bad size or an unknown key
        for dev in ("cpu", "cuda"):
            assert c.family.shapes[dev], f"{model} {regime}: no shapes.{dev}"
    lat = compose(f"variant={model}", "regime=latency").family.shapes
    thr = compose(f"variant={model}", "regime=throughput").family.shapes
    assert lat.cuda.batch == 1 and thr.cuda.batch > 1, model


@pytest.mark.parametrize("model", ["gpt2", "llama"])
def test_a_decoder_lm_is_timed_one_decode_step_at_a_time_in_the_latency_regime(model):
    v = compose(f"variant={model}", "regime=latency").variant
    assert v.target == f"study.workloads.models.{model}_decode"
    assert v.inputs == "study.workloads.models.next_token"


def test_the_latency_regime_plans_the_forward_only_and_says_so():
    c = compose("variant=bert", "regime=latency", "pass=train_step")
    why = rules.unplanned(c)
    assert why and "regime=latency" in why and "pass=train_step" in why
    with pytest.raises(ConfigError, match="regime=throughput"):
        rules.validate(c)
    assert rules.unplanned(compose("variant=bert", "regime=throughput", "pass=train_step")) is None
    assert rules.unplanned(compose("variant=naive", "pass=train_step")) is None  # no regime


def test_a_regime_on_a_workload_that_is_not_a_model_is_refused_with_the_way_out():
    with pytest.raises(ConfigError, match="drop regime="):
        rules.validate(compose("variant=naive", "regime=latency"))


@pytest.mark.skipif(not HF, reason="needs transformers (pip install -e '.[dev]')")
@pytest.mark.parametrize("model", ["gpt2", "llama"])
def test_a_decode_step_gives_the_full_forwards_last_position_and_the_same_on_every_call(model):
    import torch

    from study.workloads import models

    torch.manual_seed(0)
    past = 6
    if model == "gpt2":
        step = models.gpt2_decode(dim=32, heads=2, seq_len=past, batch=2)
    else:  # grouped-query attention: 4 heads over 2 KV heads, rotary positions
        step = models.llama_decode(dim=32, heads=4, hidden=64, seq_len=past, batch=2, kv_heads=2)
    step = step.double().eval()  # the move re-prefills the cache in float64
    tok = torch.randint(0, models.TOKENS, (2, 1))
    with torch.no_grad():
        one, again = step(tok), step(tok)
        ids = torch.cat([torch.zeros(2, past, dtype=torch.long), tok], dim=1)
        full = step.model(input_ids=ids, use_cache=False).last_hidden_state[:, -1:]
    assert one.dtype == torch.float64 and one.shape == full.shape
    torch.testing.assert_close(one, full, rtol=1e-9, atol=1e-9)
    torch.testing.assert_close(again, one, rtol=0, atol=0)  # the same slot, the same work
    twin = copy.deepcopy(step)  # the float64 reference's copy holds a cache of its own
    assert twin.cache is not step.cache
    with torch.no_grad():
        torch.testing.assert_close(twin(tok), one, rtol=0, atol=0)
