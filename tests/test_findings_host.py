"""effects: compile effects against host effects, and the rule they give."""

from reference.findings.host import effects
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


def test_a_slower_cell_with_eagers_kernels_and_device_time_names_the_host():
    text = "\n".join(effects.section(_data(_rows())))
    # E = 20 us paired, C = 20 / 0.25 = 80 us; device +0.05 us: 59.95 us more host time a call
    assert "| linear | default | part2 | 1 → 1 | 2.90 → 2.95 | 20.0 → 80.0 | +60.0 | " in text
    assert "| +60.0 | slower: the host (same kernels) |" in text
    assert "| linear | reduce-overhead | part2 | 1 → 2 |" in text
    assert "slower: the device too (CUDA graphs' copies)" in text


def test_one_host_bound_side_gives_a_bound_not_a_figure():
    # GPT-2's forward: eager host-bound (1,910 us a call for 1,295 on the device), compiled
    # GPU-bound (773 for 768): the host saved at least 1,910 - 773 us a call
    eager = _cell("models", "gpt2", "off", 1910.0, family="custom", device_time_us=1295.0,
                  kernels_per_step=74, timing_phase="fast", gpu_us_per_step=1295.0)  # fmt: skip
    comp = _cell("models", "gpt2", "default", 773.0, family="custom", device_time_us=768.0,
                 kernels_per_step=24, speedup_paired=1910 / 773, speedup_ci_low=2.4,
                 speedup_ci_high=2.5, eager_latency_paired_us=1910.0, timing_phase="fast",
                 gpu_us_per_step=768.0, compile_s=5.0)  # fmt: skip
    text = "\n".join(effects.section(_data([eager, comp])))
    assert "| 1,910 → 773 | ≤ -1,137.0 | faster: fewer launches save host time |" in text
    assert "No cell gives the rule" in text  # neither side of a wrapper cell host-bound on both


def test_the_rule_gives_the_wrappers_host_cost_and_the_gpu_work_under_which_cells_lose():
    """The defect: over every cell host-bound on both sides (not only those with eager's
    kernels), how many said, and the host time a call over every host-bound compiled cell."""
    d = _data(_rows())
    line = effects.rule(effects.frame(d["runs"]), d["runs"])
    assert "over the 1 cell(s) host-bound on both sides (linear default +60.0)" in line
    assert "host time against eager's dispatch ranged +60.0 µs (median +60.0)" in line
    assert "Over all 1 forward cells host-bound when compiled this way" in line
    assert "a call's host time (its latency) was 80.0 µs" in line and "*" not in line
    # timed in a slow phase: the figures are marked
    slow = _rows()
    slow[1] = _linear("default", 80.0, 2.95, 0.25, 20.0, phase="slow")
    d = _data(slow)
    assert "+60.0* µs" in effects.rule(effects.frame(d["runs"]), d["runs"])


def test_the_compile_table_names_the_host_for_a_slower_cell_with_eagers_kernels():
    text = "\n".join(speed_forward.section(_data(_rows())))
    assert "| linear | default | part2 | 1 → 1 |" in text and "| slower: the host |" in text
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


def test_a_gpu_bound_cell_timed_with_the_lead_in_and_eagers_kernels_names_the_host():
    text = "\n".join(speed_forward.section(_data(_cudnn_rows())))
    line = [x for x in text.split("\n") if x.startswith("| cudnn | default")][0]
    assert "| slower: the host |" in line
    ro = [x for x in text.split("\n") if x.startswith("| cudnn | reduce-overhead")][0]
    assert "| slower |" in ro  # its device time rose: not the host
    assert "default 0.976x [0.966–0.981]: the host" in text  # the 'slower in every mode' line
    assert "reduce-overhead 0.558x [0.548–0.563]: the device (CUDA graphs' copies)" in text
    # v2's rows (no lead-in recorded) read low by the timing alone: never put down to the host
    old = "\n".join(speed_forward.section(_data(_cudnn_rows(lead_in=float("nan")))))
    line = [x for x in old.split("\n") if x.startswith("| cudnn | default")][0]
    assert "the host" not in line and "| slower |" in line


def test_cells_at_the_line_are_named_beside_the_rule():
    # beside the at-the-line cell: one under the same wrapper whose device time rose by 12 µs
    # a call (its kernels, not the host), which is not at the line
    rose = _cudnn("max-autotune-no-cudagraphs", 70.5, 69.5, 58.8 / 70.5)
    text = "\n".join(effects.section(_data(_rows() + _cudnn_rows() + [rose])))
    edge = [x for x in text.split("\n") if x.startswith("At the line")][0]
    assert (
        "cudnn default 0.976x [0.966–0.981] (57.1 µs on the device against eager's 57.6, "
        "+1.4 µs a call: 58.8 → 60.2)" in edge
    )
    assert "max-autotune-no-cudagraphs" not in edge


def test_a_lead_in_of_zero_calls_is_not_the_fixed_timing():
    # timing.lead_in=0 times each block from an idle device: a GPU-bound row so timed is not
    # put down to the host
    text = "\n".join(speed_forward.section(_data(_cudnn_rows(lead_in=0))))
    line = [x for x in text.split("\n") if x.startswith("| cudnn | default")][0]
    assert "the host" not in line and "| slower |" in line


def test_the_cause_follows_the_paired_latencies_behind_the_verdict():
    # per call, in two processes, the compiled cell read faster (57.0 against eager's 58.8);
    # paired, in one process, slower (0.976x): the cause is judged on the paired figures
    rows = _cudnn_rows()
    rows[1] = _cudnn("default", 57.0, 57.1, 0.976)
    text = "\n".join(speed_forward.section(_data(rows)))
    line = [x for x in text.split("\n") if x.startswith("| cudnn | default")][0]
    assert "| slower: the host |" in line
    assert "default 0.976x [0.966–0.981]: the host" in text


def test_a_graph_modes_device_time_from_do_bench_is_not_taken_for_device_work():
    # compiled nn.Linear under reduce-overhead on the H200: do_bench around the host-bound call
    # reads 46.7 µs, the trace 7.0 µs busy; the 62 µs it adds are the host's
    rows = _rows()
    rows[2] = _linear("reduce-overhead", 82.0, 46.7, 19.2 / 82.0, 19.2, kernels=2)
    rows[2]["gpu_us_per_step"] = 7.0
    text = "\n".join(effects.section(_data(rows)))
    line = [x for x in text.split("\n") if x.startswith("| linear | reduce-overhead")][0]
    assert "| 2.90 → 7.00 |" in line and "slower: the host (its kernels changed)" in line
    # the compile table's verdict says the same
    table = "\n".join(speed_forward.section(_data(rows)))
    verdict = [x for x in table.split("\n") if x.startswith("| linear | reduce-overhead")][0]
    assert "| slower: the host (its kernels changed) |" in verdict
    # and the rule says what the graph's host side took, against the wrapper's 80 µs
    assert (
        "Under CUDA graphs (linear reduce-overhead) a call's host side took 82.0 µs, against "
        "80.0 without them: for calls this small the graph's own bookkeeping" in text
    )


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
    assert "the host" not in line and "| slower |" in line


def test_a_host_bound_cell_without_kernel_counts_says_nothing_of_its_kernels():
    rows = _rows()
    rows[1]["kernels_per_step"] = float("nan")  # a row without a trace
    text = "\n".join(effects.section(_data(rows)))
    line = [x for x in text.split("\n") if x.startswith("| linear | default")][0]
    assert "| slower: the host |" in line and "kernels changed" not in line
    table = "\n".join(speed_forward.section(_data(rows)))
    line = [x for x in table.split("\n") if x.startswith("| linear | default")][0]
    assert "| slower: the host |" in line
