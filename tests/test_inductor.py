"""Compile metrics through real compiled cells (subprocess, as in a sweep)."""

import pytest

from study import io
from study.sweep import run_job
from tests.conftest import TINY, compose

pytestmark = pytest.mark.slow


def run(tmp_path, name, *overrides):
    cfg = compose(*TINY, *overrides, f"out_root={tmp_path}")
    run_dir = tmp_path / "sweep" / name
    run_job(cfg, run_dir, tmp_path / "sweep")
    return io.read_csv(run_dir / "run.csv")[0], run_dir


def test_deliberate_graph_break_is_reported_with_its_reason(tmp_path):
    row, _ = run(tmp_path, "break", "variant=naive_break", "compile=default")
    assert row["status"] == "ok", row["reason"]
    assert int(row["graph_breaks"]) >= 1
    assert (
        "graph_break" in row["graph_break_reasons"].lower()
        or "graph break" in row["graph_break_reasons"].lower()
    )
    assert int(row["graphs"]) >= 2


def test_warm_cache_second_run_hits_what_the_cold_run_missed(tmp_path):
    cold, _ = run(tmp_path, "cold", "variant=naive_inplace", "compile=default", "cache=warm")
    warm, _ = run(tmp_path, "warm", "variant=naive_inplace", "compile=default", "cache=warm")
    assert cold["status"] == warm["status"] == "ok"
    assert int(cold["fxgraph_cache_hits"]) == 0 and int(cold["fxgraph_cache_misses"]) >= 1
    assert int(warm["fxgraph_cache_hits"]) >= 1
    assert int(warm["cache_hits"]) > int(cold["cache_hits"])


def test_warm_cache_never_serves_one_backend_to_another(tmp_path):
    # The same SDPA graph under two pinned backends: some torch versions key the cache
    # without the backend (pytorch#185449), so the second would silently reuse the first.
    flash, _ = run(tmp_path, "flash", "variant=flash", "compile=default", "cache=warm")
    math, _ = run(tmp_path, "math", "variant=math", "compile=default", "cache=warm")
    assert flash["status"] == "ok" and flash["backend_seen"] == "flash"
    assert math["status"] == "ok", math["reason"]
    assert math["backend_seen"] == "math" and int(math["fxgraph_cache_hits"]) == 0
