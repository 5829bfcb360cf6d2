"""start=cold|warm|artifacts (study.cell.start): what compiling costs before the first fast call.

The slow tests run real cells: a primer process compiles the cell and saves its cache
artifacts, the cell loads them into empty caches before its first call. They assert the cache
hits and the proof, never the time."""

import pytest

from study.rows.config import to_plain
from study.rows.config_error import ConfigError
from study.rows.config_rules import validate
from study.rows.identity import config_hash
from tests.conftest import TINY, compose


@pytest.mark.parametrize(
    "overrides, said",
    [
        (["start=artifacts", "compile=default", "cache=warm"], "start=artifacts with cache=warm"),
        (["start=artifacts", "compile=off"], "start=artifacts with compile=off"),
        (["start=warm", "compile=off"], "start=warm with compile=off"),
        (["start=warm", "compile=dynamo_eager"], "runs no Inductor"),
        (["start=artifacts", "compile=aot_inductor"], "compile=aot_inductor"),
    ],
)
def test_a_start_that_makes_no_sense_is_refused_at_start_naming_both(overrides, said):
    with pytest.raises(ConfigError, match=said):
        validate(compose(*TINY, "variant=naive", *overrides))


def test_a_bad_start_lists_the_starts():
    from hydra.errors import ConfigCompositionException

    with pytest.raises(ConfigCompositionException) as e:
        compose(*TINY, "variant=naive", "start=hot")
    assert "expected one of [cold, warm, artifacts]" in str(e.value.__cause__)


def test_the_default_start_leaves_a_cells_identity_as_it_was():
    """Cells made before start= existed keep their config_hash (resume, compare)."""
    cold = to_plain(compose(*TINY, "variant=naive", "compile=default"))
    before = {k: v for k, v in cold.items() if k != "start"}
    assert config_hash(cold) == config_hash(before)
    art = to_plain(compose(*TINY, "variant=naive", "compile=default", "start=artifacts"))
    assert config_hash(art) != config_hash(cold)


@pytest.mark.slow
@pytest.mark.parametrize("variant", ["naive", "mlp"])
def test_an_artifacts_start_loads_what_a_primer_saved_and_compiles_nothing_again(tmp_path, variant):
    from tests.test_inductor import run

    row, run_dir = run(tmp_path, variant, f"variant={variant}", "compile=default",
                       "start=artifacts")  # fmt: skip
    assert row["status"] == "ok", row["reason"]
    assert row["start"] == "artifacts"
    assert "inductor" in row["artifacts_loaded"] and int(row["artifacts_bytes"]) > 0
    hits = int(row["fxgraph_cache_hits"]) + int(row["aot_cache_hits"])
    assert hits >= 1 and int(row["fxgraph_cache_misses"]) == 0
    assert float(row["cold_first_call_s"]) > 0 and float(row["first_call_s"]) > 0
    assert 0 <= float(row["first_call_dynamo_share"]) <= 1
    assert (run_dir / "cache_artifacts.bin").stat().st_size == int(row["artifacts_bytes"])
    assert not (run_dir / ".start").exists()  # the primer's dir and caches are gone


def test_a_start_whose_first_call_compiles_again_is_invalid():
    """The proof: a first call with an FX graph cache miss, or no hit at all, compiled
    Inductor code again, and the row is invalid; with hits and no miss it stands."""
    from study.cell import start

    class Cell:  # the row and config of a cell whose first call missed the cache
        def __init__(self):
            self.cfg = compose(*TINY, "variant=naive", "compile=default", "start=artifacts")
            self.mode, self.start_invalid = "default", None
            self.row = {"first_call_s": 2.0, "dynamo_s": 0.5, "fxgraph_cache_misses": 1,
                        "cache_hits": 0}  # fmt: skip

    cell = Cell()
    start.columns(cell)
    assert "compiled Inductor code again (1 FX graph cache miss" in cell.start_invalid
    assert cell.row["first_call_dynamo_share"] == 0.25
    cell.row.update(fxgraph_cache_misses=0, cache_hits=2)
    cell.start_invalid = None
    start.columns(cell)
    assert cell.start_invalid is None
