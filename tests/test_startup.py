"""start=cold|warm|artifacts (study.cell.start): what compiling costs before the first fast call.

The slow tests run real cells: a primer process compiles the cell and saves its cache
artifacts, the cell loads them into empty caches before its first call. They assert the cache
hits and the proof, never the time."""

import pytest

from study.config.cell_config import to_plain
from study.config.identity import config_hash
from study.config.rules import validate
from study.errors import ConfigError
from tests.conftest import TINY, compose


@pytest.mark.parametrize(
    "overrides, said",
    [
        (["start=artifacts", "compile=default", "cache=warm"], "start=artifacts with cache=warm"),
        (["start=artifacts", "compile=off"], "start=artifacts with compile=off"),
        (["start=warm", "compile=off"], "start=warm with compile=off"),
        (["start=warm", "compile=dynamo_eager"], "runs no Inductor"),
        (["start=warm", "compile=default", "cache=warm"], "start=warm with cache=warm"),
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


def test_a_warm_or_artifacts_cell_divides_by_its_cold_eager_twin():
    """eager_hash names the eager cell a compiled row's cross-process speedup divides by: an
    eager cell is always start=cold (a warm one is refused), so a start=warm row's twin is it."""
    from study.config.identity import eager_hash

    warm = to_plain(compose(*TINY, "variant=naive", "compile=default", "start=warm"))
    eager = to_plain(compose(*TINY, "variant=naive", "compile=off"))
    assert eager_hash(warm) == config_hash(eager)


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


def _rows():
    import pandas as pd

    base = {"variant": "naive", "compile": "default", "status": "ok", "pass": "fwd"}
    return pd.DataFrame(
        [
            {**base, "start": "cold", "first_call_s": 3.0, "compile_s": 2.9,
             "first_call_dynamo_share": 0.1, "fxgraph_cache_hits": 0, "aot_cache_hits": 0},
            {**base, "start": "artifacts", "first_call_s": 1.0, "cold_first_call_s": 3.2,
             "compile_s": 0.9, "first_call_dynamo_share": 0.4, "fxgraph_cache_hits": 1,
             "aot_cache_hits": 1, "artifacts_bytes": 2.5e6, "artifacts_load_s": 0.01},
            {**base, "start": "warm", "first_call_s": 0.8, "cold_first_call_s": 3.1,
             "compile_s": 0.7, "first_call_dynamo_share": 0.5, "fxgraph_cache_hits": 0,
             "aot_cache_hits": 1},
            {**base, "variant": "linear", "compile_stance": "default", "host_us": 55.0,
             "host_units": 4.0, "host_gauge_us": 13.0, "device_time_us": 3.0},
            {**base, "variant": "linear", "compile_stance": "skip_guard_eval_unsafe",
             "host_us": 45.0, "host_units": 3.2, "host_gauge_us": 14.0, "device_time_us": 3.0},
        ]
    )  # fmt: skip


def test_the_start_table_sets_each_start_beside_its_cold_start_in_order():
    from analysis.tables import startup

    t = startup.start_table(_rows())
    assert list(t["start"]) == ["cold", "warm", "artifacts"]
    art = t[t["start"] == "artifacts"].iloc[0]
    assert art["first call s"] == "1.00" and art["primer's cold first call s"] == "3.20"
    assert art["cache hits"] == "FX graph 1, AOTAutograd 1" and art["artifacts"].startswith("2.5")
    assert t[t["start"] == "warm"].iloc[0]["Dynamo share of the first call"] == "50%"


def test_the_guard_table_gives_what_guards_cost_in_units_at_the_guarded_rows_host_speed():
    """Two processes in different host phases: µs alone would not subtract (the skipped row
    could even read slower); units do, times the guarded row's G."""
    from analysis.tables import startup

    t = startup.guard_table(_rows())
    assert len(t) == 1 and t.iloc[0]["cell"] == "linear default"
    assert t.iloc[0]["guards: host units"] == "0.80"
    assert t.iloc[0]["guards µs a call (units x G)"] == "10.4"
    assert t.iloc[0]["guards evaluated: host units (µs, G)"] == "4.00 (55.0 µs, G 13.0)"


def test_the_guard_table_shows_cpu_rows_which_have_no_host_units(tmp_path, capsys):
    """Issue 68: on a CPU stance=default,skip_guard_eval_unsafe sweep the table said the rows
    were missing and asked for the very sweep that was run (the CPU measures no host units)."""
    from analysis.tables import startup
    from tests import synth

    r = _rows()
    cpu = r[r["variant"] == "linear"].drop(columns=["host_us", "host_units", "host_gauge_us",
                                                    "device_time_us"])  # fmt: skip
    cpu = cpu.assign(latency_median_us=[165.0, 150.0], timing_phase=["fast", "contended"],
                     source="cpu", run_id=["a", "b"])  # fmt: skip
    t = startup.guard_table(cpu)
    assert len(t) == 1 and t.iloc[0]["cell"] == "linear default"
    assert t.iloc[0]["latency µs: evaluated, skipped"] == "165, 150 (host contended)"
    assert t.iloc[0]["guards: host units"] == "–"
    assert startup.main([str(synth.write({"runs": cpu}, tmp_path / "s"))]) == 0
    assert "Guards: host cost" in capsys.readouterr().out


def test_the_regional_table_sets_each_regional_row_beside_its_whole_model():
    import pandas as pd

    from analysis.tables import startup

    base = {
        "variant": "block",
        "compile": "default",
        "status": "ok",
        "pass": "fwd",
        "layers": 4,
        "graphs": 1,
        "speedup_ci_low": 1.1,
        "speedup_ci_high": 1.2,
    }
    r = pd.DataFrame([
        {**base, "regional": None, "compile_s": 4.0, "first_call_s": 4.5, "speedup_paired": 1.12,
         "graph_ops": 76, "kernels_per_step": 53},
        {**base, "regional": True, "regional_method": "nested_compile_region", "compile_s": 2.0,
         "first_call_s": 2.5, "speedup_paired": 1.14, "graph_ops": 8, "kernels_per_step": 56},
        {**base, "variant": "naive", "layers": None, "regional": None, "compile_s": 1.0,
         "speedup_paired": 3.0},  # no regional twin: not in the table
    ])  # fmt: skip
    t = startup.regional_table(r)
    assert list(t["compiled"]) == ["whole model", "nested_compile_region"]
    assert list(t["workload"]) == ["block x4", "block x4"]
    assert list(t["FX nodes traced"]) == [76, 8] and t.iloc[1]["compile s"] == "2.00"
    assert t.iloc[1]["paired speedup [95%, pairs]"] == "1.14x [1.10–1.20]"


def test_no_start_or_stance_rows_no_tables():
    from analysis.tables import startup

    r = _rows()
    r = r[(r["start"] == "cold") | r["start"].isna()].drop(columns="compile_stance")
    assert startup.start_table(r).empty and startup.guard_table(r).empty


def test_the_findings_section_reads_the_startup_rows_and_says_what_they_show(tmp_path):
    """From the committed rows of both folders (an H200 and two H100s): the artifacts' cut is the primer's cold
    first call over the cell's, per machine; with no host-cost layer to
    measure one cell's spread, no guard cost is claimed."""
    import pandas as pd

    from reference.findings.host import startup as host_startup
    from tests.conftest import ROOT

    rows = pd.concat([pd.read_csv(ROOT / "reference" / gpu / "startup" / "runs.csv",
                                  low_memory=False) for gpu in ("h200", "h100")],
                     ignore_index=True)  # fmt: skip
    (tmp_path / "startup").mkdir()
    rows.to_csv(tmp_path / "startup" / "runs.csv", index=False)
    text = "\n".join(host_startup.section({"dir": tmp_path}))
    art = rows[rows["start"] == "artifacts"]
    boots = list(dict.fromkeys(art["boot_id"].str[:8]))
    for boot, said in zip(boots, ("cut the first call", "artifacts cut its first call"),
                          strict=False):  # fmt: skip
        a = art[art["boot_id"].str[:8] == boot]
        cut = a["cold_first_call_s"] / a["first_call_s"]
        assert f"(boot {boot}), " in text and f"{said} {cut.min():.1f}–{cut.max():.1f}x" in text
    assert "### The whole model against its repeated block compiled by region" in text
    # without the host-cost layer beside the rows, no guard cost is claimed against a ruler
    (said,) = [s for s in text.splitlines() if "Skipping guards is unsafe" in s]
    assert said.startswith("No host-cost layer") and "Guards cost" not in said
    empty = "\n".join(host_startup.section({"dir": tmp_path / "none"}))
    assert "needs `startup/runs.csv`" in empty


def _two_machines():
    """_rows() on two machines: the second's first calls 1.5x the first's."""
    a = _rows().assign(device_name="NVIDIA H200", boot_id="aaaaaaaa-1", source="start")
    b = a.assign(boot_id="bbbbbbbb-2", device_name="NVIDIA H100 80GB HBM3", source="start_b")
    for col in ("first_call_s", "cold_first_call_s"):
        b[col] = b[col] * 1.5
    import pandas as pd

    return pd.concat([a, b], ignore_index=True)


def test_the_start_table_names_the_machine_only_where_rows_span_two():
    from analysis.tables import startup

    assert "machine" not in startup.start_table(_rows()).columns
    t = startup.start_table(_two_machines())
    assert list(t.columns[:3]) == ["cell", "machine", "start"]
    # each machine's cold, warm, artifacts together, in the order the rows came
    assert list(t["machine"]) == ["H200 aaaaaaaa"] * 3 + ["H100 bbbbbbbb"] * 3
    assert list(t["start"]) == ["cold", "warm", "artifacts"] * 2


def test_the_start_text_gives_a_second_machine_as_ratios_to_the_first():
    from reference.findings.host import startup as host_startup

    text = host_startup._start_text(_two_machines())
    assert text.startswith("On the H200 (boot aaaaaaaa), cache artifacts cut the first call 3.2x")
    assert ("On the H100 80GB HBM3 (boot bbbbbbbb), the same cells took, against the H200 (boot "
            "aaaaaaaa): the primers' cold starts 1.5x, the cold cells' first calls 1.5x, first "
            "calls from artifacts 1.5x") in text  # fmt: skip
    one = host_startup._start_text(_rows())
    assert one.startswith("Cache artifacts cut the first call 3.2x") and "On the" not in one


def test_the_regional_text_says_how_far_one_cells_compile_moved_between_machines():
    import pandas as pd

    from reference.findings.host import startup as host_startup

    base = {
        "variant": "block",
        "compile": "default",
        "status": "ok",
        "layers": 12,
        "device_name": "NVIDIA H100 80GB HBM3",
        "regional_method": "nested_compile_region",
    }
    rows = []
    for boot, whole, region in (("aaaaaaaa", 8.0, 4.0), ("bbbbbbbb", 12.0, 4.4)):
        rows += [{**base, "boot_id": boot, "regional": None, "compile_s": whole,
                  "speedup_paired": 1.12},
                 {**base, "boot_id": boot, "regional": True, "compile_s": region,
                  "speedup_paired": 1.14}]  # fmt: skip
    text = host_startup._regional_text(pd.DataFrame(rows))
    assert "(boot aaaaaaaa), compiling the repeated block by region" in text
    assert "cut compile time 2.0x" in text and "cut compile time 2.7x" in text
    assert "compile seconds moved 1.10–1.50x against the H100 80GB HBM3 (boot aaaaaaaa)" in text


def test_the_surveys_are_read_by_boot():
    from reference.findings.host import boots

    line = "host gauge over 5 s: fast level {} us (the lowest ...), {}% of them within 1.3x"
    two = "\n".join(["boot aaaaaaaa", line.format("13.0", 55), "boot bbbbbbbb (later)",
                     line.format("15.2", 16), line.format("15.1", 23)])  # fmt: skip
    assert boots.surveys(two) == {
        "aaaaaaaa": [("13.0", "55")],
        "bbbbbbbb": [("15.2", "16"), ("15.1", "23")],
    }
    assert boots.surveys(line.format("14.1", 30)) == {"": [("14.1", "30")]}


def test_a_cell_run_in_several_processes_is_one_line_at_its_median_compile():
    """repeats=3: the regional table and the text take each cell's median, not one sample."""
    import pandas as pd

    from analysis.tables import startup
    from reference.findings.host import startup as host_startup

    base = {"variant": "block", "compile": "default", "status": "ok", "pass": "fwd", "layers": 4,
            "source": "regional", "regional_method": "nested_compile_region"}  # fmt: skip
    rows = []
    for rep, (whole, region) in enumerate(((4.0, 2.0), (9.0, 2.2), (4.4, 2.1))):
        rows += [{**base, "config_hash": "w", "run_id": "w", "repeat": rep, "regional": None,
                  "compile_s": whole, "speedup_paired": 1.12},
                 {**base, "config_hash": "r", "run_id": "r", "repeat": rep, "regional": True,
                  "compile_s": region, "speedup_paired": 1.14}]  # fmt: skip
    r = pd.DataFrame(rows)
    t = startup.regional_table(r)
    assert list(t["compile s"]) == ["4.40", "2.10"]
    text = host_startup._regional_text(startup.one_per_cell(r))
    assert "block x4 4.4 → 2.1 s" in text


def test_two_machines_in_one_source_stay_two_machines_with_repeats(tmp_path):
    """A cell's config_hash is the same on every machine: with repeats, each machine's rows
    are still their own median, and the section names both machines."""
    import pandas as pd

    from analysis.tables import startup
    from reference.findings.host import startup as host_startup

    r = _two_machines().assign(
        source="start", run_id=lambda x: x["variant"] + x["start"].fillna("")
    )
    r["config_hash"] = [f"cell{i % 5}" for i in range(len(r))]  # one cell, two machines
    r = pd.concat([r.assign(repeat=0), r.assign(repeat=1)], ignore_index=True)
    one = startup.one_per_cell(r)
    assert len(one) == len(r) // 2
    assert list(dict.fromkeys(startup.machine(one))) == ["H200 aaaaaaaa", "H100 bbbbbbbb"]
    (tmp_path / "startup").mkdir()
    r.to_csv(tmp_path / "startup" / "runs.csv", index=False)
    text = "\n".join(host_startup.section({"dir": tmp_path}))
    assert "On the H100 80GB HBM3 (boot bbbbbbbb), the same cells took" in text
    assert "| naive default | H100 bbbbbbbb | artifacts |" in text


def test_a_crash_row_and_machines_without_a_shared_workload_break_nothing():
    """A crash row names no GPU (it is its own '?' machine, never a dropped row); a second
    machine with other workloads gets its own sentence and no ratio against the first."""
    import pandas as pd

    from reference.findings.host import boots
    from reference.findings.host import startup as host_startup

    base = {"compile": "default", "status": "ok", "device_name": "NVIDIA H100 80GB HBM3",
            "regional_method": "nested_compile_region", "speedup_paired": 1.1}  # fmt: skip
    rows = []
    for boot, variant in (("aaaaaaaa", "block"), ("bbbbbbbb", "gpt2")):
        rows += [{**base, "boot_id": boot, "variant": variant, "layers": 12, "regional": None,
                  "compile_s": 8.0},
                 {**base, "boot_id": boot, "variant": variant, "layers": 12, "regional": True,
                  "compile_s": 4.0}]  # fmt: skip
    rows.append({"variant": "bert", "compile": "default", "status": "crash", "layers": 12})
    r = pd.DataFrame(rows)
    ok = r[r["status"] == "ok"]
    text = host_startup._regional_text(ok)
    assert "(boot bbbbbbbb), it cut compile time 2.0x" in text
    assert "compile seconds moved" not in text
    assert [m for m, _ in boots.by_machine(r)][-1] == "? (boot ?)"
    assert host_startup._ratio_range([(float("nan"), 1.0), (2.0, 1.0), (3.0, 0.0)]) == "2.0x"


def _primers(here) -> list[int]:
    """Pids of live primer processes whose run dir is below ``here``."""
    import os

    from tests.test_sweep import _alive

    out = []
    for p in os.listdir("/proc"):
        try:
            with open(f"/proc/{p}/cmdline", "rb") as f:
                argv = f.read().split(b"\0")
        except OSError:
            continue
        if b"study.cell.prime" in argv and any(str(here).encode() in a for a in argv):
            out.append(int(p)) if _alive(int(p)) else None
    return out


@pytest.mark.slow
def test_a_killed_sweep_takes_its_primer_with_it(tmp_path):
    """Issue 68: SIGKILL of the sweep during a start=warm primer left the primer running (3 of 5
    tries), compiling into the run dir a resume reuses. The workload holds the primer in its
    build (tests.user_faults.hangs_in_primer)."""
    import os
    import signal
    import subprocess
    import sys
    import time

    from tests.conftest import ROOT, root_env

    cmd = [sys.executable, "-m", "study.run", "-m", "variant=custom", "shape.dim=16",
           "variant.target=tests.user_faults.hangs_in_primer", "compile=default",
           "variant.inputs=tests.user_faults.inputs", "start=warm", f"out_root={tmp_path}",
           *TINY]  # fmt: skip
    with open(tmp_path / "sweep.log", "w") as log:
        proc = subprocess.Popen(cmd, cwd=ROOT, env=root_env(), stdout=log, stderr=log)
    try:
        deadline = time.time() + 240  # a loaded 2-core box starts a sweep slowly
        while time.time() < deadline and not _primers(tmp_path):
            time.sleep(0.2)
        primers = _primers(tmp_path)
        assert primers, (tmp_path / "sweep.log").read_text()[-2000:]
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    deadline = time.time() + 20
    while _primers(tmp_path) and time.time() < deadline:
        time.sleep(0.2)
    left = _primers(tmp_path)
    for pid in left:  # the test's own leftovers, by pid
        os.kill(pid, signal.SIGKILL)
    assert not left, "the primer outlived the killed sweep"


def test_the_start_and_regional_tables_name_the_axis_that_splits_two_rows():
    """Issue 68: 'analysis.tables startup' printed two identical-looking 'block default | cold'
    rows (they differed in compile.regional), and the regional table had no start column."""
    import pandas as pd

    from analysis.tables import startup

    base = {"variant": "block", "compile": "default", "status": "ok", "pass": "fwd",
            "layers": 4, "first_call_s": 9.0, "compile_s": 8.0, "speedup_paired": 1.1}  # fmt: skip
    r = pd.DataFrame([
        {**base, "start": s, "regional": g, "regional_method": "nested_compile_region" if g else None}
        for s in ("cold", "artifacts") for g in (False, True)
    ])  # fmt: skip
    t = startup.start_table(r)
    assert len(t) == 4 and "regional" in t.columns
    assert len(t[["cell", "start", "regional"]].drop_duplicates()) == 4
    g = startup.regional_table(r)
    assert "start" in g.columns and sorted(g["start"]) == ["artifacts", "artifacts", "cold", "cold"]
    assert len(g[["workload", "compiled", "start"]].drop_duplicates()) == 4


def test_the_cut_against_the_cold_row_pairs_the_same_cell_only():
    """Review: cold rows were keyed by variant alone, so a second compile mode's cold row of the
    same variant would join the median."""
    import pandas as pd

    from reference.findings.host.startup import _against_cold

    r = pd.DataFrame({"variant": ["mlp"] * 3, "compile": ["default", "max-autotune", "default"],
                      "start": ["cold", "cold", "artifacts"], "first_call_s": [2.0, 20.0, 1.0]})  # fmt: skip
    assert _against_cold(r, r[r["start"] == "artifacts"]).startswith(" and 2.0x against")
