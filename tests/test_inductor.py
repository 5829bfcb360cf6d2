"""Compile metrics through real compiled cells (subprocess, as in a sweep)."""

import pytest

from study.rows import io
from study.sweep.scheduler import Scheduler
from tests.conftest import TINY, compose

pytestmark = pytest.mark.slow


def run(tmp_path, name, *overrides):
    return run_all(tmp_path, {name: overrides})[name]


def run_all(tmp_path, cells: dict):
    """Each cell in turn, in order, from one warm parent: {name: (row, run dir)}."""
    with Scheduler() as sched:
        for name, overrides in cells.items():
            cfg = compose(*TINY, *overrides, f"out_root={tmp_path}")
            sched.submit(cfg, tmp_path / "sweep" / name, tmp_path / "sweep")
    return {n: (io.read_csv(tmp_path / "sweep" / n / "run.csv")[0], tmp_path / "sweep" / n)
            for n in cells}  # fmt: skip


def test_deliberate_graph_break_is_reported_with_its_reason(tmp_path):
    row, _ = run(tmp_path, "break", "variant=naive_break", "compile=default")
    assert row["status"] == "ok", row["reason"]
    assert int(row["graph_breaks"]) >= 1
    assert (
        "graph_break" in row["graph_break_reasons"].lower()
        or "graph break" in row["graph_break_reasons"].lower()
    )
    assert int(row["graphs"]) >= 2


def test_warm_cache_never_serves_one_backend_to_another_and_keeps_its_proof(tmp_path):
    """The same SDPA graph under two pinned backends with one shared cache: some torch
    versions key the cache without the backend (pytorch#185449), so the second would silently
    reuse the first. Then math again: a cache hit, whose provenance (written only while
    compiling) comes back from beside the cache, so the decomposed math is still proven."""
    warm = ("compile=default", "cache=warm")  # one slot: in this order, one after the other
    got = run_all(tmp_path, {"flash": ("variant=flash", *warm), "math": ("variant=math", *warm),
                             "math2": ("variant=math", *warm)})  # fmt: skip
    (flash, _), (math, _), (again, run_dir) = got["flash"], got["math"], got["math2"]
    assert flash["status"] == "ok" and flash["backend_seen"] == "flash", flash["reason"]
    assert math["status"] == "ok", math["reason"]
    assert math["backend_seen"] == "math" and int(math["fxgraph_cache_hits"]) == 0
    assert again["status"] == "ok", again["reason"]
    assert int(again["fxgraph_cache_hits"]) >= 1 and again["backend_seen"] == "math"
    assert "restored from the warm cache" in again["notes"]
    assert list((run_dir / "generated" / "debug" / "restored").iterdir())


def test_compiled_math_then_flash_prove_their_own_backend_in_one_cold_sweep(tmp_path):
    from tests.conftest import cli

    r = cli(
        "-m", "variant=math,flash", "compile=default", "cache=cold", f"out_root={tmp_path}", *TINY
    )
    assert r.returncode == 0, r.stderr[-2000:]
    rows = io.read_csv(next((tmp_path / "sweeps").iterdir()) / "runs.csv")
    seen = {x["variant"]: (x["status"], x["backend_seen"]) for x in rows}
    assert seen == {"math": ("ok", "math"), "flash": ("ok", "flash")}, rows


def test_a_graph_break_carries_its_registry_code_where_this_torch_has_one(tmp_path):
    """torch.compile's graph-break registry (torch 2.8+) names the deliberate break
    (``torch._dynamo.graph_break()``); its code is in front of the reason and counted in
    graph_break_codes, and the report sums the codes over the sweep."""
    from analysis.report import graph_breaks as by_code
    from study.observe import graph_breaks

    kinds = graph_breaks.registry()
    if not kinds:
        pytest.skip("this torch has no graph-break registry")
    code = kinds["Call to `torch._dynamo.graph_break()`"]
    row, _ = run(tmp_path, "break", "variant=naive_break", "compile=default")
    assert row["graph_break_reasons"].startswith(f"{code}: Call to `torch._dynamo.graph_break()`")
    assert f"{code} (x" in row["graph_break_codes"]
    table = by_code(__import__("pandas").DataFrame([row, row]))
    (line,) = table[table["code"] == code].to_dict("records")
    assert line["breaks"] == 2 * int(row["graph_breaks"]) and "naive_break default" in line["cells"]


def test_a_cell_timed_with_guards_skipped_is_an_ok_row_that_says_so(tmp_path):
    """compile.stance=skip_guard_eval_unsafe: timed and profiled under set_stance(...,
    skip_guard_eval_unsafe=True), nothing recompiles, and the row names its stance."""
    from study.cell import compiling

    if compiling.stance_supported():
        pytest.skip(compiling.stance_supported())
    row, _ = run(tmp_path, "skip", "variant=naive", "compile=dynamo_eager",
                 "compile.stance=skip_guard_eval_unsafe")  # fmt: skip
    assert row["status"] == "ok", row["reason"]
    assert row["compile_stance"] == "skip_guard_eval_unsafe"
    assert "Dynamo's guards skipped" in row["notes"] and float(row["speedup_paired"]) > 0


def test_a_compiled_cell_keeps_its_structured_compile_log(tmp_path):
    """TORCH_TRACE, set inside the forked cell: the log is in compile_log/, the row names it,
    and tlparse renders it where installed (else a note says how)."""
    row, run_dir = run(tmp_path, "log", "variant=naive", "compile=default")
    assert row["status"] == "ok", row["reason"]
    log = run_dir / row["compile_log"]
    assert log.exists() and log.stat().st_size > 1000 and "inductor" in log.read_text()
    if row["tlparse_index"]:
        assert (run_dir / row["tlparse_index"]).exists()
    else:
        assert "pip install tlparse" in row["notes"] or "tlparse did not render" in row["notes"]
