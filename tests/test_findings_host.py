"""The forward table's cause of a slower cell, said from the rows' own columns: "not its
device time" where eager's kernels and device time stay (these rows measure no host time; the
latency-inferred host section is retired, audit 2026-12-06 defect 8)."""

from reference.findings.speed import forward as speed_forward
from tests.test_findings_sections import _cell, _data


def _linear(mode, lat, dev, sp, eager_paired, phase="fast", kernels=1):
    return _cell("part2", "linear", mode, lat, family="linear", device_time_us=dev,
                 kernels_per_step=kernels, speedup_paired=sp, speedup_ci_low=sp * 0.98,
                 speedup_ci_high=sp * 1.02, eager_latency_paired_us=eager_paired,
                 timing_phase=phase, gpu_us_per_step=dev, compile_s=2.0)  # fmt: skip


def _rows():
    eager = _cell("part2", "linear", "off", 19.0, family="linear", device_time_us=2.9,
                  kernels_per_step=1, timing_phase="fast", gpu_us_per_step=2.9)  # fmt: skip
    return [
        eager,
        _linear("default", 80.0, 2.95, 0.25, 20.0),  # same kernels and device time: the host
        _linear("reduce-overhead", 75.0, 39.0, 0.25, 19.0, kernels=2),  # graphs' copies
    ]


def test_the_compile_table_says_not_its_device_time_for_a_slower_cell_with_eagers_kernels():
    text = "\n".join(speed_forward.section(_data(_rows())))
    assert (
        "| linear | default | part2 | 1 → 1 |" in text and "| slower: not its device time |" in text
    )
    assert "| linear | reduce-overhead | part2 | 1 → 2 |" in text
    line = [x for x in text.split("\n") if x.startswith("| linear | reduce-overhead")][0]
    assert "| slower |" in line  # its device time rose: not the host alone


def _cudnn(mode, lat, busy, sp, kernels=2, lead_in=1.0, dev=None):
    """part3's cuDNN forward as v3 timed it: GPU-bound, 58 µs of kernels a call."""
    return _cell("part3", "cudnn", mode, lat, device_time_us=busy if dev is None else dev,
                 gpu_us_per_step=busy, kernels_per_step=kernels, speedup_paired=sp,
                 speedup_ci_low=sp - 0.01, speedup_ci_high=sp + 0.005,
                 eager_latency_paired_us=58.8, timing_phase="fast", pair_lead_in=lead_in,
                 compile_s=0.5)  # fmt: skip


def _cudnn_rows(lead_in=1.0):
    eager = _cell("part3", "cudnn", "off", 58.8, device_time_us=58.5, gpu_us_per_step=57.6,
                  kernels_per_step=2, timing_phase="fast")  # fmt: skip
    return [
        eager,
        # the same kernels in the same device time, 1.8 µs slower a call: the host
        _cudnn("default", 60.6, 57.1, 0.976, lead_in=lead_in),
        # CUDA graphs: two copies more on the device (100 µs busy): the device
        _cudnn("reduce-overhead", 105.6, 100.2, 0.558, kernels=4, lead_in=lead_in, dev=111.4),
    ]


def test_a_gpu_bound_cell_timed_with_the_lead_in_and_eagers_kernels_says_not_its_device_time():
    text = "\n".join(speed_forward.section(_data(_cudnn_rows())))
    line = [x for x in text.split("\n") if x.startswith("| cudnn | default")][0]
    assert "| slower: not its device time |" in line
    ro = [x for x in text.split("\n") if x.startswith("| cudnn | reduce-overhead")][0]
    assert "| slower |" in ro  # its device time rose: not the host
    assert (
        "default 0.976x [0.966–0.981]: not its device time" in text
    )  # the 'slower in every mode' line
    assert "reduce-overhead 0.558x [0.548–0.563]: the device (CUDA graphs' copies)" in text
    # v2's rows (no lead-in recorded) read low by the timing alone: never put down to the host
    old = "\n".join(speed_forward.section(_data(_cudnn_rows(lead_in=float("nan")))))
    line = [x for x in old.split("\n") if x.startswith("| cudnn | default")][0]
    assert "not its device time" not in line and "| slower |" in line


def test_a_lead_in_of_zero_calls_is_not_the_fixed_timing():
    # timing.lead_in=0 times each block from an idle device: a GPU-bound row so timed is not
    # put down to the host
    text = "\n".join(speed_forward.section(_data(_cudnn_rows(lead_in=0))))
    line = [x for x in text.split("\n") if x.startswith("| cudnn | default")][0]
    assert "not its device time" not in line and "| slower |" in line


def test_the_cause_follows_the_paired_latencies_behind_the_verdict():
    # per call, in two processes, the compiled cell read faster (57.0 against eager's 58.8);
    # paired, in one process, slower (0.976x): the cause is judged on the paired figures
    rows = _cudnn_rows()
    rows[1] = _cudnn("default", 57.0, 57.1, 0.976)
    text = "\n".join(speed_forward.section(_data(rows)))
    line = [x for x in text.split("\n") if x.startswith("| cudnn | default")][0]
    assert "| slower: not its device time |" in line
    assert "default 0.976x [0.966–0.981]: not its device time" in text


def test_a_graph_modes_device_time_from_do_bench_is_not_taken_for_device_work():
    # compiled nn.Linear under reduce-overhead on the H200: do_bench around the host-bound call
    # reads 46.7 µs, the trace 7.0 µs busy; the 62 µs it adds are the host's
    rows = _rows()
    rows[2] = _linear("reduce-overhead", 82.0, 46.7, 19.2 / 82.0, 19.2, kernels=2)
    rows[2]["gpu_us_per_step"] = 7.0
    table = "\n".join(speed_forward.section(_data(rows)))
    verdict = [x for x in table.split("\n") if x.startswith("| linear | reduce-overhead")][0]
    assert "| slower: not its device time (its kernels changed) |" in verdict


def test_the_report_names_a_slowdown_with_eagers_kernels_and_device_time_as_the_hosts():
    from analysis.slowdown import host_effects

    rows = _rows() + [_linear("max-autotune", 25.0, 2.9, 1.3, 19.0)]  # faster: not named
    assert host_effects(_data(rows)["runs"]) == ["linear · default"]  # not the graphs' copies
    no_eager = [r for r in rows if r["compile"] != "off"]
    assert host_effects(_data(no_eager)["runs"]) == []
    device_rose = _rows()[:1] + [_linear("default", 80.0, 12.0, 0.25, 20.0)]  # 2.9 -> 12 us
    assert host_effects(_data(device_rose)["runs"]) == []
    spread = [{**r, "pass": "fwd_bwd"} for r in _rows()[:2]]  # training, threads spread
    assert host_effects(_data(spread)["runs"]) == []
    one_core = [{**r, "timing_core": 3} for r in spread]
    assert host_effects(_data(one_core)["runs"]) == ["linear fwd_bwd · default"]


def test_a_gpu_bound_cell_whose_kernels_changed_is_not_put_down_to_the_host():
    """Only an idle GPU between eager's own kernels is the host's wait: with other kernels, a
    GPU-bound cell timed with the lead-in that reads slower is not named the host's."""
    rows = _cudnn_rows()
    rows[1] = _cudnn("default", 60.6, 57.1, 0.976, kernels=1)  # 2 -> 1 kernel, GPU-bound
    text = "\n".join(speed_forward.section(_data(rows)))
    line = [x for x in text.split("\n") if x.startswith("| cudnn | default")][0]
    assert "not its device time" not in line and "| slower |" in line


def test_a_host_bound_cell_without_kernel_counts_says_nothing_of_its_kernels():
    rows = _rows()
    rows[1]["kernels_per_step"] = float("nan")  # a row without a trace
    table = "\n".join(speed_forward.section(_data(rows)))
    line = [x for x in table.split("\n") if x.startswith("| linear | default")][0]
    assert "| slower: not its device time |" in line
