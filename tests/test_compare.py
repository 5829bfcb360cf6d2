"""analysis.compare: cells matched by configuration, regressions by the compiler dashboard's
thresholds widened by each cell's own interval, and never an import of torch."""

import pandas as pd
import pytest

from analysis.compare import build
from tests import synth
from tests.conftest import ROOT, without_torch


def _h200_with(tmp_path, change):
    out = tmp_path / "b"
    out.mkdir()
    for f in ("runs.csv", "kernels.csv", "ncu.csv"):
        (out / f).write_bytes((synth.H200 / f).read_bytes())
    runs = pd.read_csv(out / "runs.csv")
    change(runs)
    runs.to_csv(out / "runs.csv", index=False)
    return out


@pytest.mark.slow
def test_h200_against_itself_without_torch(tmp_path):
    r = without_torch(
        "analysis.compare",
        ["reference/h200", "reference/h200", "--out", str(tmp_path), "--fail-on-regression"],
    )
    assert r.returncode == 0, r.stdout + r.stderr[-3000:]
    rows = pd.read_csv(ROOT / "reference" / "h200" / "runs.csv")
    cells = rows.groupby(["source", "config_hash"]).ngroups  # every cell, flex's masks apart
    assert f"{cells} cells matched (0 only in A, 0 only in B)" in r.stdout
    assert "0 regressions" in r.stdout and "latency 1.00x" in r.stdout
    for f in ("compare.md", "compare.csv", "compare.png", "compare.svg"):
        assert (tmp_path / f).stat().st_size > 0, f


def test_one_cell_ten_percent_slower_is_the_one_regression(tmp_path):
    def slower(runs):  # every call 10% slower: the median and its p10–p90 spread (96–100 µs)
        at = (runs["source"] == "part3") & (runs["variant"] == "flash") & (runs["compile"] == "off")
        for c in ("latency_median_us", "latency_p10_us", "latency_p90_us"):
            runs.loc[at, c] *= 1.10

    line, m = build(str(synth.H200), str(_h200_with(tmp_path, slower)), tmp_path / "out")
    reg = m[m["regressed"] != ""]
    assert "1 regression," in line
    assert list(zip(reg["source_a"], reg["variant"], reg["compile"], strict=True)) == [
        ("part3", "flash", "off")
    ]
    assert reg["regressed"].iloc[0] == "latency"
    assert "| part3 | flash | off |" in (tmp_path / "out" / "compare.md").read_text()


def test_cells_match_by_configuration_not_run_id(tmp_path):
    def renamed(runs):
        runs["run_id"] = [f"job-{i}" for i in range(len(runs))]

    line, m = build(str(synth.H200), str(_h200_with(tmp_path, renamed)), None)
    assert line.startswith("191 cells matched (0 only in A, 0 only in B)")  # 9 of them oom
    # a sweep dir (one source, another name) against one source of a results dir
    line, _ = build(f"{synth.H200}:part3", f"{synth.H200}:core", None)
    assert line.startswith("12 cells matched (23 only in A, 6 only in B)")  # core lacks sdpa


def test_a_boolean_key_matches_however_the_csv_spells_it(tmp_path):
    # v3's combined runs.csv: causal a float column (1.0), its bools beside part1's blanks;
    # v2's: True. The same cells.
    def floated(runs):
        runs["causal"] = runs["causal"].map({True: 1.0, False: 0.0, "True": 1.0, "False": 0.0})

    line, _ = build(str(synth.H200), str(_h200_with(tmp_path, floated)), None)
    assert line.startswith("191 cells matched (0 only in A, 0 only in B)")


@pytest.fixture
def repeated(tmp_path):
    """The same source written twice, with 3 repeats a cell (latency spread 3%) and paired
    speedups (95% interval ±3%); ``edit`` changes B's raw rows."""

    def make(edit):
        a = synth.write(synth.with_new_columns(), tmp_path / "a")
        d = synth.with_new_columns()
        edit(d["runs"])
        return build(str(a), str(synth.write(d, tmp_path / "b")), None)[1]

    return make


def _at(runs, variant="math", mode="default"):
    return (runs["variant"] == variant) & (runs["compile"] == mode) & (runs["pass"] == "fwd")


def _flagged(m):
    return {
        (r["variant"], r["compile"], r["regressed"]) for _, r in m[m["regressed"] != ""].iterrows()
    }


def test_a_cells_own_spread_widens_the_latency_threshold(repeated):
    def by(f):
        def edit(runs):
            runs.loc[_at(runs), "latency_median_us"] *= f

        return edit

    assert _flagged(repeated(by(1.06))) == set()  # 5% + the 3% spread over repeats
    assert _flagged(repeated(by(1.12))) == {("math", "default", "latency")}


def test_a_paired_speedup_is_judged_by_its_interval(repeated):
    def by(f):
        def edit(runs):
            for c in ("speedup_paired", "speedup_ci_low", "speedup_ci_high"):
                runs.loc[_at(runs), c] *= f

        return edit

    # The cell's interval covers its 3 processes (±2% here: they agree, each ±3%); B's top
    # must fall under 0.95x A's bottom
    assert _flagged(repeated(by(0.94))) == set()
    assert _flagged(repeated(by(0.85))) == {("math", "default", "speedup")}


def test_peak_memory_up_twenty_percent(repeated):
    def by(f):
        def edit(runs):
            runs.loc[_at(runs, "flash"), "peak_mem_alloc_bytes"] *= f

        return edit

    assert _flagged(repeated(by(1.15))) == set()
    assert _flagged(repeated(by(1.25))) == {("flash", "default", "peak memory")}


def test_a_cuda_graph_mode_is_judged_by_its_reserved_memory(repeated):
    """Its allocator peak leaves out the graph pool: v2 → v3 read naive's reduce-overhead
    49 → 81 MiB allocated (+65%, flagged) while reserved, pool and all, went 426 → 459 MiB."""

    def by(col, f):
        def edit(runs):
            runs.loc[_at(runs, "naive", "reduce-overhead"), col] *= f

        return edit

    assert _flagged(repeated(by("peak_mem_alloc_bytes", 1.65))) == set()
    assert _flagged(repeated(by("peak_mem_reserved_bytes", 1.25))) == {
        ("naive", "reduce-overhead", "peak memory")
    }

    def no_reserved(runs):  # a side without reserved memory: both sides' allocator peaks
        at = _at(runs, "naive", "reduce-overhead")
        runs.loc[at, "peak_mem_reserved_bytes"] = float("nan")
        runs.loc[at, "peak_mem_alloc_bytes"] *= 1.25

    assert _flagged(repeated(no_reserved)) == {("naive", "reduce-overhead", "peak memory")}


NAIVE_MA = "compile=max-autotune,variant=naive"
OP0 = "op0 bmm [128, 1024, 64] x [128, 64, 1024]"


def _with_autotune(tmp_path, change=None, repeat=None):
    """reference/h200/v2 (v2 rows, with autotune.csv: one repeat a cell) and a copy of it, B, where ``change(at)``
    edits the part3 naive/max-autotune cell's op0 autotune rows in place. ``repeat(at)`` adds
    a second repeat of that cell to B: its runs.csv row and its own autotune rows."""
    a = ROOT / "reference" / "h200" / "v2"
    b = tmp_path / "b"
    b.mkdir(parents=True)
    for f in ("runs.csv", "kernels.csv", "autotune.csv"):
        (b / f).write_bytes((a / f).read_bytes())
    at = pd.read_csv(b / "autotune.csv")
    op0 = (at["source"] == "part3") & (at["run_id"] == NAIVE_MA) & (at["op_id"] == 0)
    before = at[(at["source"] == "part3") & (at["run_id"] == NAIVE_MA)].copy()
    if change is not None:
        change(at, op0)
    if repeat is not None:
        again = before.assign(run_id="compile=max-autotune,repeat=1,variant=naive")
        repeat(again, again["op_id"] == 0)
        at = pd.concat([at, again], ignore_index=True)
        runs = pd.read_csv(b / "runs.csv")
        one = runs[(runs["source"] == "part3") & (runs["run_id"] == NAIVE_MA)]
        two = one.assign(run_id="compile=max-autotune,repeat=1,variant=naive", repeat=1)
        pd.concat([runs, two], ignore_index=True).to_csv(b / "runs.csv", index=False)
    at.to_csv(b / "autotune.csv", index=False)
    return a, b, before


def _time(rows, choice, op_id=0):
    return float(rows[(rows["op_id"] == op_id) & (rows["choice"] == choice)]["time_us"].iloc[0])


def _cublas_read_slower(at, op0):
    """What a two-GPU sweep did: the first bmm's cuBLAS choice read 137 µs, not about 87."""
    at.loc[op0 & (at["choice"] == "bmm"), ["time_us", "winner"]] = [137.2, False]
    at.loc[op0 & (at["choice"] == "triton_bmm_16"), ["time_us", "winner"]] = [106.3, True]


def test_an_autotune_pick_that_moved_is_named_with_the_times_behind_it(tmp_path, capsys):
    from analysis.compare import main
    from analysis.measures import sig

    a, b, before = _with_autotune(tmp_path, _cublas_read_slower)
    line, m = build(f"{a}:part3", f"{b}:part3", tmp_path / "out")
    assert line.endswith("1 cell with another autotune pick.")
    moved = m[m["autotune"] != ""]
    assert list(zip(moved["variant"], moved["compile"], strict=True)) == [("naive", "max-autotune")]
    cublas, triton = sig(_time(before, "bmm")), sig(_time(before, "triton_bmm_16"))
    assert moved["autotune"].iloc[0] == (
        f"{OP0}: bmm {cublas} µs → triton_bmm_16 106 µs (bmm read 137 µs in B, +29.1% on B's "
        f"pick; triton_bmm_16 read {triton} µs in A)"
    )
    md = (tmp_path / "out" / "compare.md").read_text()
    assert "## Autotune picks that changed" in md and "(bmm read 137 µs in B" in md
    assert main([f"{a}:part3", f"{b}:part3", "--out", str(tmp_path / "o2")]) == 0
    assert f"  autotune: part3: naive · max-autotune: {OP0}" in capsys.readouterr().out


def test_a_pick_that_one_repeat_of_b_kept_has_not_changed(tmp_path):
    """Picks move between fresh processes: B's second repeat picked A's cuBLAS again."""
    a, b, _ = _with_autotune(tmp_path, _cublas_read_slower, repeat=lambda at, op0: None)
    line, m = build(f"{a}:part3", f"{b}:part3", None)
    assert "autotune" not in line and (m["autotune"] == "").all()
    # both of B's repeats picked Triton: changed, and B's pick is named once
    a, b, _ = _with_autotune(tmp_path / "2", _cublas_read_slower, repeat=_cublas_read_slower)
    line, m = build(f"{a}:part3", f"{b}:part3", None)
    assert line.endswith("1 cell with another autotune pick.")
    assert " → triton_bmm_16 106 µs (" in m[m["autotune"] != ""]["autotune"].iloc[0]


def test_a_tie_and_a_failed_winner_are_said_as_such(tmp_path):
    def tie(at, op0):  # cuBLAS read 1% slower than the Triton pick
        at.loc[op0 & (at["choice"] == "bmm"), ["time_us", "winner"]] = [107.4, False]
        at.loc[op0 & (at["choice"] == "triton_bmm_16"), ["time_us", "winner"]] = [106.3, True]

    a, b, _ = _with_autotune(tmp_path, tie)
    line, m = build(f"{a}:part3", f"{b}:part3", None)
    assert line.endswith("0 cells with another autotune pick, 1 with a tie.")
    said = m[m["autotune"] != ""]["autotune"].iloc[0]
    assert "(bmm read 107 µs in B, +1.0% on B's pick;" in said and said.endswith("[a tie]")

    def failed(at, op0):  # cuBLAS failed to benchmark in B: its time is empty
        at.loc[op0 & (at["choice"] == "bmm"), ["time_us", "winner"]] = [None, False]
        at.loc[op0 & (at["choice"] == "triton_bmm_16"), "winner"] = True

    a, b, _ = _with_autotune(tmp_path / "2", failed)
    _, m = build(f"{a}:part3", f"{b}:part3", None)
    assert "(bmm failed in B; triton_bmm_16 read " in m[m["autotune"] != ""]["autotune"].iloc[0]


def test_no_autotune_pick_is_named_when_none_moved_or_a_side_has_none(tmp_path):
    a, b, _ = _with_autotune(tmp_path)
    line, m = build(f"{a}:part3", f"{b}:part3", None)
    assert "autotune" not in line and (m["autotune"] == "").all()
    (b / "autotune.csv").unlink()
    line, m = build(f"{a}:part3", f"{b}:part3", None)
    assert "autotune" not in line and (m["autotune"] == "").all()


def test_why_a_cell_moved_real_kernels_device_time_lead_in_or_host(tmp_path):
    part3 = "(runs['source'] == 'part3') & (runs['variant'] == '{v}') & (runs['compile'] == '{c}')"

    def at(runs, v, c):
        return eval(part3.format(v=v, c=c))  # noqa: S307 - a fixed expression over the frame

    def changed(runs):
        x = at(runs, "naive", "default")  # fewer kernels, faster: a real change
        runs.loc[x, "kernels_per_step"] -= 1
        for c in ("latency_median_us", "latency_p10_us", "latency_p90_us", "device_time_us"):
            runs.loc[x, c] *= 0.7
        y = at(runs, "math", "default")  # same kernels, 30% more device time, in the trace too
        for c in ("latency_median_us", "latency_p10_us", "latency_p90_us", "device_time_us",
                  "gpu_us_per_step"):  # fmt: skip
            runs.loc[y, c] *= 1.3
        z = at(runs, "flash", "off")  # only the latency: the host, in a slow phase
        for c in ("latency_median_us", "latency_p10_us", "latency_p90_us"):
            runs.loc[z, c] *= 1.3
        runs.loc[z, "timing_phase"] = "slow"

    _, m = build(str(synth.H200), str(_h200_with(tmp_path, changed)), tmp_path / "out")
    p3 = m[m["source_a"] == "part3"]
    why = {(v, c): w for v, c, w in zip(p3["variant"], p3["compile"], p3["why"], strict=True)}
    assert why[("naive", "default")].startswith("real: kernels per step")
    assert why[("math", "default")] == "real: device time +30%"
    assert why[("flash", "off")] == (
        "host: kernels unchanged, the device time does not carry it (B slow, B latency over "
        "device time)"
    )  # the fixture's rows predate host timing: no host-bound claim from latency alone
    assert why[("efficient", "off")] == ""  # did not move


def test_host_bound_is_said_only_of_a_side_that_measured_its_host_time():
    """Issue 69: a host-bound claim is a measured host_us, or it is not made."""
    from analysis.compare_causes import _rest

    x = pd.Series({"timing_phase_a": "fast", "timing_phase_b": "fast", "hbound_a": True,
                   "hbound_b": True, "host_us_a": None, "host_us_b": 61.0})  # fmt: skip
    assert _rest(x, True) == ("host: kernels unchanged, the device time does not carry it "
                              "(A latency over device time, B host-bound)")  # fmt: skip
    x["host_us_b"] = None  # neither side measured: latency alone names no host
    assert _rest(x, True).startswith("not the device: kernels unchanged")


def test_a_paired_speedup_that_rose_with_the_lead_in_fix_says_so():
    from analysis.compare_causes import causes

    m = pd.DataFrame([{"kernels": 0, "kernels_per_step_a": 4, "kernels_per_step_b": 4,
                       "device_time_us_a": 320.0, "device_time_us_b": 321.0,
                       "sp_kind_a": "paired", "sp_kind_b": "paired", "sp_a": 2.94, "sp_b": 3.26,
                       "pair_lead_in_a": None, "pair_lead_in_b": 1}])  # fmt: skip
    assert causes(m, pd.Series([True])) == [
        "lead-in: A's paired timing had no lead-in call before each block"
    ]
    m["pair_lead_in_a"] = 1  # both with the fix: not the lead-in; a GPU-bound fast cell
    assert causes(m, pd.Series([True]))[0].startswith("eager's side")
    m["sp_kind_a"] = "cross-process"
    assert causes(m, pd.Series([True])) == ["method: A's speedup is cross-process, B's paired"]


def test_an_eager_cell_is_never_put_down_to_its_eager_side_and_a_tiny_device_move_is_not_real():
    from analysis.compare_causes import causes

    base = {"kernels": 0, "kernels_per_step_a": 1, "kernels_per_step_b": 1,
            "sp_kind_a": "paired", "sp_kind_b": "paired", "pair_lead_in_a": 1,
            "pair_lead_in_b": 1, "hbound_a": False, "hbound_b": False}  # fmt: skip
    eager = {**base, "compile": "off", "device_time_us_a": 58.5, "device_time_us_b": 58.6,
             "latency_median_us_a": 62.0, "latency_median_us_b": 58.6}  # fmt: skip
    assert causes(pd.DataFrame([eager]), pd.Series([True]))[0].startswith("unexplained")
    # Linear: 2.91 -> 2.70 us on the device (-7%) while the latency went 29 -> 62 us, host-bound
    linear = {**base, "compile": "default", "device_time_us_a": 2.91, "device_time_us_b": 2.70,
              "latency_median_us_a": 29.0, "latency_median_us_b": 62.0, "hbound_b": True,
              "host_us_b": 61.0}  # fmt: skip
    assert causes(pd.DataFrame([linear]), pd.Series([True]))[0].startswith("host: ")
    # a GPU-bound cell whose device time moved 7% with its latency: real
    gpu = {**linear, "device_time_us_b": 3.11, "latency_median_us_a": 3.0,
           "latency_median_us_b": 3.2, "hbound_b": False}  # fmt: skip
    assert causes(pd.DataFrame([gpu]), pd.Series([True])) == ["real: device time +7%"]


def test_a_graph_modes_device_time_stretched_by_the_host_is_not_a_real_change():
    """v2 → v3, cuDNN under reduce-overhead: do_bench around the call read 158 → 112 µs and the
    latency 169 → 106 µs, while its kernels' busy time held at 99 µs: the host (v2 slow), not
    the device, and not the lead-in fix either, which moves a paired speedup, not the latency."""
    from analysis.compare_causes import causes

    row = {"kernels": 0, "kernels_per_step_a": 4, "kernels_per_step_b": 4,
           "compile": "reduce-overhead", "device_time_us_a": 158.5, "device_time_us_b": 112.4,
           "gpu_us_per_step_a": 99.4, "gpu_us_per_step_b": 99.2,
           "latency_median_us_a": 169.0, "latency_median_us_b": 106.0,
           "sp_kind_a": "paired", "sp_kind_b": "paired", "sp_a": 0.467, "sp_b": 0.559,
           "pair_lead_in_a": None, "pair_lead_in_b": 1, "hbound_a": True, "hbound_b": False,
           "host_us_a": 120.0}  # fmt: skip
    m, yes = pd.DataFrame([row]), pd.Series([True])
    assert causes(m, yes, yes)[0].startswith("host: kernels unchanged")
    # the latency held: the paired speedup's rise is the lead-in fix's
    assert causes(m, yes, ~yes)[0].startswith("lead-in")
    # the kernels' own time moved with it: a real change
    m["gpu_us_per_step_b"] = 70.0
    assert causes(m, yes, yes) == ["real: device time -29%"]


def test_judge_puts_a_speedup_rise_down_to_the_lead_in_only_while_the_latency_held(repeated):
    """A predates the lead-in fix, B has it; math/default's paired speedup rises 10%."""

    def rise(latency):
        def edit(runs):
            runs["pair_lead_in"] = 1
            at = _at(runs)
            for c in ("speedup_paired", "speedup_ci_low", "speedup_ci_high"):
                runs.loc[at, c] *= 1.1
            for c in ("latency_median_us", "latency_p10_us", "latency_p90_us"):
                runs.loc[at, c] *= latency

        return edit

    def why(m):
        return m[(m["variant"] == "math") & (m["compile"] == "default")]["why"].iloc[0]

    assert why(repeated(rise(1.0))).startswith("lead-in")
    # its own latency moved too, GPU-bound and fast on both sides: not the lead-in, and not
    # its eager side either
    assert why(repeated(rise(0.8))).startswith("unexplained")


def test_a_printed_cell_names_the_shape_that_tells_it_apart():
    """v3 against v2: part1's matmul+bias at n=64 and n=4096 both regressed; the line names n."""
    from analysis.compare import _cell

    m = pd.DataFrame({"source_a": ["part1", "part1", "part2"], "variant": ["matmul_add"] * 2
                      + ["mlp"], "compile": ["default"] * 3, "n": [64.0, 4096.0, None]})  # fmt: skip
    assert _cell(m.iloc[1], m) == "part1: matmul_add (n=4096) · default"
    assert _cell(m.iloc[2], m) == "part2: mlp · default"
    assert _cell(m.iloc[1]) == "part1: matmul_add · default"  # without the cells: no shape
    two = pd.DataFrame({"source_a": ["b", "b"], "variant": ["block"] * 2, "compile": ["off"] * 2,
                        "pass": ["fwd", "fwd_bwd"]})  # fmt: skip
    assert _cell(two.iloc[1], two) == "b: block (pass=fwd_bwd) · off"


def test_a_reason_is_said_in_its_own_words_without_cudas_advice():
    from analysis.compare import first_words

    oom = ("AcceleratorError: CUDA error: out of memory Search for `cudaErrorMemoryAllocation' "
           "in https://docs.nvidia.com for more information. CUDA kernel errors might be")  # fmt: skip
    assert first_words(oom) == "AcceleratorError: CUDA error: out of memory"
    said = "OutOfMemoryError: CUDA out of memory. Tried to allocate 128.00 GiB"
    assert first_words(said) == said  # the allocator's own words stay
    assert first_words(float("nan")) == "no reason given"
    assert first_words("x" * 300, 10) == "x" * 9 + "…"


def test_the_steps_own_peak_is_judged_where_both_sides_have_it(tmp_path):
    """v3's compiled cells read 32 MiB more allocated than v2's: eager's cuBLAS workspace, left
    allocated before the compiled peak was taken. The step's own peak did not move."""

    def make(name, edit):
        sides = []
        for side in ("a", "b"):
            d = synth.with_new_columns()
            d["runs"]["peak_mem_step_bytes"] = d["runs"]["peak_mem_alloc_bytes"] / 2
            if side == "b":
                edit(d["runs"])
            sides.append(str(synth.write(d, tmp_path / name / side)))
        return build(*sides, None)[1]

    def workspace(runs):  # the allocator's peak up by a workspace, the step's own unchanged
        runs.loc[_at(runs, "flash"), "peak_mem_alloc_bytes"] *= 1.25

    def own(runs):
        runs.loc[_at(runs, "flash"), "peak_mem_step_bytes"] *= 1.25

    assert _flagged(make("ws", workspace)) == set()
    assert _flagged(make("own", own)) == {("flash", "default", "peak memory")}

    def tiny(runs):  # a step of a few KiB up by a quarter (matmul+bias n=64: 8-18 KiB)
        runs["peak_mem_step_bytes"] = 16_384.0
        runs.loc[_at(runs, "flash"), "peak_mem_step_bytes"] = 20_480.0

    def tiny_a(runs):
        runs["peak_mem_step_bytes"] = 16_384.0

    sides = []
    for side, edit in (("a", tiny_a), ("b", tiny)):
        d = synth.with_new_columns()
        edit(d["runs"])
        sides.append(str(synth.write(d, tmp_path / "tiny" / side)))
    assert _flagged(build(*sides, None)[1]) == set()  # 4 KiB is under the 1 MiB floor


def _host_side(tmp_path, name, speed=1.0, cost=1.0):
    """reference/h200/host_machines/m1's rows on a host ``speed`` x slower, each call's host cost
    in units ``cost`` x higher."""
    r = pd.read_csv(synth.ROOT / "reference/h200/host_machines/m1/runs.csv", low_memory=False)
    r["host_gauge_us"] *= speed
    r["host_units"] *= cost
    r["host_us"] *= speed * cost
    d = tmp_path / name
    d.mkdir()
    r.to_csv(d / "runs.csv", index=False)
    return str(d)


def test_host_cost_is_compared_in_units_when_the_hosts_ran_at_other_speeds(tmp_path):
    """A host 1.3x slower costs every call 1.3x the µs and the same units: no host regression;
    the same host speed with 1.3x the units is one, in every cell that has host_us."""
    a = _host_side(tmp_path, "a")
    _, m = build(a, _host_side(tmp_path, "slower", speed=1.3), None)
    assert set(m["host_cost_by"]) == {"units"} and not m["regressed"].str.contains("host").any()
    assert m["host_cost"].round(6).eq(1.0).all()
    _, m = build(a, _host_side(tmp_path, "costlier", cost=1.3), None)
    assert set(m["host_cost_by"]) == {"µs"} and m["regressed"].str.contains("host cost").all()
    _, m = build(a, _host_side(tmp_path, "both", speed=1.3, cost=1.3), None)
    assert m["regressed"].str.contains("host cost").all()
    _, m = build(a, _host_side(tmp_path, "slow_phase", speed=2.0, cost=1.3), None)
    assert set(m["host_cost_by"]) == {"not judged"}  # one side in a slow phase: said only


def _startup_dir(tmp_path, name, edit=None):
    """reference/h200/startup's and reference/h100/startup's rows (start=cold,warm,artifacts;
    guards skipped and not; the whole model against its block by region, the H100's) in a
    results dir of their own, ``edit`` applied."""
    out = tmp_path / name
    out.mkdir()
    runs = pd.concat([pd.read_csv(ROOT / "reference" / gpu / "startup" / "runs.csv",
                                  low_memory=False) for gpu in ("h200", "h100")],
                     ignore_index=True)  # fmt: skip
    runs = edit(runs) if edit else runs
    runs.to_csv(out / "runs.csv", index=False)
    return out, runs


def test_cells_that_differ_only_in_start_stance_or_region_are_cells_of_their_own(tmp_path):
    """One key per configuration the sweep crossed: before, start=cold,warm,artifacts was one
    cell, and only one of the three was compared (24 of 57)."""
    a, runs = _startup_dir(tmp_path, "a")

    def warm_slower(r):
        at = (r["source"] == "start") & (r["variant"] == "mlp") & (r["start"] == "warm")
        for c in ("latency_median_us", "latency_p10_us", "latency_p90_us"):
            r.loc[at, c] *= 1.5
        return r

    b, _ = _startup_dir(tmp_path, "b", warm_slower)
    line, m = build(str(a), str(b), tmp_path / "out")
    cells = runs.groupby(["source", "config_hash"]).ngroups
    assert line.startswith(f"{cells} cells matched (0 only in A, 0 only in B)"), line
    reg = m[m["regressed"] != ""]
    assert list(zip(reg["source_a"], reg["variant"], reg["start"], strict=True)) == [
        ("start", "mlp", "warm")
    ]
    assert "| start | mlp | default |" in (tmp_path / "out" / "compare.md").read_text()


def test_a_study_without_an_axis_column_matches_its_default(tmp_path):
    """An older study's rows have no ``start`` or ``regional``: they ran cold and whole, and
    match the new study's cold, whole cells, not its warm or regional ones."""
    cold = lambda r: r[(r["source"] == "start") & (r["start"] == "cold")]  # noqa: E731
    a, runs = _startup_dir(tmp_path, "a", lambda r: cold(r).drop(columns=["start", "regional"]))
    b, _ = _startup_dir(tmp_path, "b", lambda r: r[r["source"] == "start"])
    line, m = build(str(a), str(b), None)
    assert line.startswith(f"{len(runs)} cells matched (0 only in A, 8 only in B)"), line
    assert set(m["start_b"]) == {"cold"} and m["regional_b"].isna().all()


def test_cells_no_column_tells_apart_are_said_not_dropped(tmp_path):
    """Two cells of one source whose rows differ only in config_hash (a timing.* setting): one
    is compared, and the line says so."""

    def twin(r):
        r = r[r["source"] == "guards"]
        extra = r.iloc[[0]].assign(config_hash="another", run_id="another")
        return pd.concat([r, extra], ignore_index=True)

    a, _ = _startup_dir(tmp_path, "a", twin)
    line, _ = build(str(a), str(a), tmp_path / "out")
    assert "2 cells of A and 2 of B share their source and configuration" in line, line
    assert "## Not told apart in A" in (tmp_path / "out" / "compare.md").read_text()


def test_cells_of_a_sweep_over_a_timing_setting_are_told_apart_where_both_sides_say_it(tmp_path):
    """timing.host_sleep_ms=5,40: two cells whose rows differ in timing_overrides alone."""

    def sleeps(r):
        r = r[r["source"] == "guards"].copy()
        other = r.assign(config_hash=r["config_hash"] + "-40", run_id=r["run_id"] + "-40",
                         timing_overrides="host_sleep_ms=40.0")  # fmt: skip
        return pd.concat([r.assign(timing_overrides=None), other], ignore_index=True)

    a, runs = _startup_dir(tmp_path, "a", sleeps)
    line, m = build(str(a), str(a), None)
    assert line.startswith(f"{len(runs)} cells matched (0 only in A, 0 only in B)"), line
    assert "share their source" not in line
    # against a study without the column: matched at the configuration, the twins said
    b, _ = _startup_dir(tmp_path, "b", lambda r: r[r["source"] == "guards"])
    line, _ = build(str(b), str(a), None)
    assert line.startswith("6 cells matched (0 only in A, 0 only in B)"), line
    assert "0 cells of A and 12 of B share their source" in line
