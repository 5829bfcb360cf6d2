"""What the console says per cell and at the end of a sweep: how a figure was timed (the host's
phase, host and device us per call) is never hidden. No process, no compile."""

from study.rows.metrics import apart_note
from study.rows.summary import apart_lines, phase_lines
from study.sweep.rundir import summary_line


def test_a_cell_not_timed_in_the_fast_phase_says_its_phase_on_its_line():
    row = {"status": "ok", "latency_median_us": "291.2", "kernels_per_step": "3",
           "speedup_paired": "0.65", "speedup_ci_low": "0.63", "speedup_ci_high": "0.67",
           "timing_phase": "contended"}  # fmt: skip
    line = summary_line(row, 2.0)
    assert "host phase contended" in line and "0.65x paired [0.63-0.67]" in line
    assert "host phase" not in summary_line({**row, "timing_phase": "fast"}, 2.0)


def test_the_line_gives_host_and_device_us_and_one_kernel_is_singular():
    row = {"status": "ok", "latency_median_us": "60.59", "kernels_per_step": "1",
           "host_us": "56.24", "device_time_us": "58.46", "timing_phase": "fast"}  # fmt: skip
    line = summary_line(row, 3.3)
    assert "60.6 us/call (host 56.2, device 58.5), 1 kernel/step" in line
    assert "kernels/step" in summary_line({**row, "kernels_per_step": "2"}, 1.0)
    cpu = summary_line({"status": "ok", "latency_median_us": "300.0", "kernels_per_step": "6"}, 1)
    assert "300.0 us/call, 6 kernels/step" in cpu  # the CPU: no host or device split


def test_the_summary_counts_rows_off_the_fast_phase_and_says_what_to_do():
    rows = [
        {"timing_phase": p, "gauge_held": "True"} for p in ("fast", "slow", "mixed", "contended")
    ]
    rows = [{**r, "cpu_cores": "1"} for r in rows]
    lines = phase_lines(rows, allowed=list(range(8)))
    assert len(lines) == 1 and "3 of 4 rows were not timed in the host's fast phase" in lines[0]
    assert "resume=true" in lines[0] and "cores=2-7" in lines[0]
    assert phase_lines([{"timing_phase": "fast", "gauge_held": "True"}]) == []


def test_a_host_that_never_held_its_fast_phase_is_said_at_the_end():
    rows = [{"timing_phase": "slow", "gauge_held": "False", "device": "cuda"}] * 3
    (line,) = [x for x in phase_lines(rows) if "never held its fast phase (3 rows" in x]
    assert "host_units" in line
    cpu = [{**r, "device": "cpu"} for r in rows]  # the CPU never measures host units
    assert not any("host_units" in x for x in phase_lines(cpu))


def test_no_cores_advice_where_no_core_is_spare():
    """Issue 68: on 2 cores every line said contended and the summary said 'cores=...', which
    changed nothing: the sweep keeps core 0, the cells ran on core 1."""
    rows = [{"timing_phase": "contended", "gauge_held": "True", "cpu_cores": "1"}] * 4
    (line,) = phase_lines(rows, allowed=[0, 1])
    assert "cores=" not in line and "no core is spare" in line
    assert "cores=2-3" in phase_lines(rows, allowed=[0, 1, 2, 3])[0]


def test_the_cpu_line_says_where_the_shapes_came_from():
    """'running on the CPU with the small CPU shapes' was printed when +experiment=tiny or
    shape.* set the shapes."""
    from study.sweep.scheduler import cpu_shapes
    from tests.conftest import compose

    assert "small CPU shapes" in cpu_shapes([compose()])
    tiny = cpu_shapes([compose("+experiment=tiny")])
    assert "small CPU shapes" not in tiny and "9 shape.* keys" in tiny
    assert cpu_shapes([compose("shape.seq_len=64")]) == "with the shapes given (shape.seq_len)"


def test_more_slots_than_cores_is_said():
    """hydra/launcher=gpus hydra.launcher.n_jobs=4 on 2 CPU cores timed two cells on the same
    cores with no word."""
    from study.measure import pinning
    from study.sweep.scheduler import shared_cores

    _, groups = pinning.plan([0, 1], 4, "0,1")
    assert shared_cores(groups) == 2
    _, groups = pinning.plan(list(range(8)), 2, "auto")
    assert shared_cores(groups) == 0


def test_a_compiled_line_gives_the_paired_blocks_us_not_its_calls_timed_apart():
    """Issue 68: 'naive compiled 552.4 us/call' against eager's 653.6, then '0.92x paired' on
    the same line. Beside the paired speedup the line gives the two us it comes from."""
    row = {"status": "ok", "latency_median_us": "552.4", "eager_latency_paired_us": "560.0",
           "compiled_latency_paired_us": "608.7", "kernels_per_step": "3",
           "speedup_paired": "0.92", "speedup_ci_low": "0.90", "speedup_ci_high": "0.94"}  # fmt: skip
    line = summary_line(row, 5.0)
    assert "560.0 -> 608.7 us/call eager -> compiled (paired)" in line
    assert "552.4" not in line and "0.92x paired [0.90-0.94]" in line


def test_latencies_timed_apart_that_disagree_with_the_paired_speedup_say_why():
    assert apart_note(1.18, 0.92, 0.90, 0.94, busy=True) == (
        "timed apart 1.18x: host busy between them"
    )
    assert "separate processes" in apart_note(1.18, 0.92, 0.90, 0.94, busy=False)
    assert apart_note(0.95, 0.92, 0.90, 0.94, busy=True) == ""  # within the interval and 5%
    assert apart_note(None, 0.92, 0.90, 0.94, busy=True) == ""
    rows = [
        {"compile": "off", "config_hash": "e", "status": "ok", "timing_phase": "contended"},
        {
            "compile": "default",
            "eager_hash": "e",
            "status": "ok",
            "timing_phase": "fast",
            "run_id": "compile=default,variant=naive",
            "speedup": "1.18",
            "speedup_paired": "0.92",
            "speedup_ci_low": "0.90",
            "speedup_ci_high": "0.94",
        },  # fmt: skip
    ]
    (line,) = apart_lines(rows)
    assert line.startswith("compile=default,variant=naive: timed apart 1.18x: host busy")
    assert "speedup is the paired 0.92x" in line
    assert apart_lines([rows[0], {**rows[1], "speedup": "0.93"}]) == []
