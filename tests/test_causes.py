"""analysis.tables.causes on synthetic rows: each cause where the rows support it, the verdict from the
interval, the figure that shows it, and the CPU's reading (host and device are one)."""

from __future__ import annotations

import pandas as pd

from analysis.tables import causes


def _cell(variant, compile, sp=None, lo=None, hi=None, device="cuda", **kw):
    row = {
        "source": "s",
        "run_id": f"compile={compile},variant={variant}",
        "variant": variant,
        "family": "attention",
        "compile": compile,
        "device": device,
        "dtype": "bf16",
        "status": "ok",
        "speedup_paired": sp,
        "speedup_ci_low": lo,
        "speedup_ci_high": hi,
        "latency_median_us": 100.0,
        "kernels_per_step": 1,
        "gpu_us_per_step": 50.0,
    }
    row.update(kw)
    return row


def _kern(run_id, *kernels):
    """(name, calls per step, µs per step, generated) per kernel of one cell."""
    return [
        {"source": "s", "run_id": run_id, "kernel": k, "kernel_short": k, "phase": "fwd",
         "calls_per_step": n, "us_per_step": us, "generated": g, "variant": run_id,
         "kernel_class": "copy" if "Memcpy" in k else "other",
         "compile": run_id.split(",")[0].removeprefix("compile="),
         "source_file": f"generated/kernels/{k}.py" if g else "", "fused_ops": ""}
        for k, n, us, g in kernels
    ]  # fmt: skip


def _answer(cells, kernels=(), autotune=None):
    runs = pd.DataFrame(cells)
    kern = pd.DataFrame(list(kernels))
    return causes.answer(runs, kern, autotune if autotune is not None else pd.DataFrame())


def test_fusion_wins_with_kernels_removed_and_fused():
    e = _cell("naive", "off", kernels_per_step=6, gpu_us_per_step=90.0)
    c = _cell("naive", "default", 1.6, 1.5, 1.7, kernels_per_step=3, gpu_us_per_step=40.0)
    k = _kern(e["run_id"], ("softmax", 1, 30, False), ("copy", 1, 10, False),
              ("mm", 2, 40, False), ("mask", 2, 10, False))  # fmt: skip
    k += _kern(c["run_id"], ("mm", 2, 30, False), ("triton_fused_0", 1, 10, True))
    a = _answer([e, c], k).iloc[0]
    assert a["verdict"] == "faster"
    assert a["cause_kind"] == "fusion" and a["figure"] == "kernel_diff"
    assert "6 → 3 per step (4 removed, 1 fused)" in a["cause"]
    assert a["speedup"] == "1.60x (95% CI 1.50–1.70)"


def test_host_bound_loss_names_the_host_not_the_kernels():
    e = _cell("flash", "off", device_time_us=20.0, host_us=30.0)
    c = _cell("flash", "default", 0.8, 0.75, 0.85, device_time_us=19.0, host_us=55.0,
              eager_host_us=30.0)  # fmt: skip
    a = _answer([e, c]).iloc[0]
    assert a["verdict"] == "slower"
    assert a["cause_kind"] == "host" and a["figure"] == "cpu_vs_gpu"
    assert "55.0 µs" in a["cause"] and "19.0 µs" in a["cause"]


def test_host_win_where_eager_was_host_bound():
    e = _cell("mlp", "off", device_time_us=20.0, host_us=60.0)
    c = _cell("mlp", "reduce-overhead", 2.5, 2.3, 2.7, device_time_us=19.0, host_us=8.0,
              eager_host_us=60.0)  # fmt: skip
    a = _answer([e, c]).iloc[0]
    assert (a["verdict"], a["cause_kind"]) == ("faster", "host")
    assert "eager was host-bound (60.0 µs host against 20.0 µs device" in a["cause"]


def test_cuda_graphs_copies_under_reduce_overhead():
    e = _cell("flash", "off", device_time_us=50.0, host_us=10.0)
    c = _cell("flash", "reduce-overhead", 0.9, 0.86, 0.94, kernels_per_step=3,
              device_time_us=55.0, host_us=5.0)  # fmt: skip
    k = _kern(e["run_id"], ("flash_fwd", 1, 50, False))
    k += _kern(c["run_id"], ("flash_fwd", 1, 50, False), ("Memcpy DtoD (Device -> Device)", 2, 5,
                                                           False))  # fmt: skip
    a = _answer([e, c], k).iloc[0]
    assert (a["verdict"], a["cause_kind"]) == ("slower", "graphs")
    assert "2 Memcpy DtoD per step" in a["cause"]


def test_autotune_pick_under_max_autotune():
    e = _cell("linear", "off", device_time_us=50.0, host_us=10.0)
    c = _cell("linear", "max-autotune-no-cudagraphs", 1.2, 1.1, 1.3, device_time_us=40.0,
              host_us=9.0)  # fmt: skip
    t = pd.DataFrame([
        {"source": "s", "run_id": c["run_id"], "op_id": 0, "op": "mm", "choice": "triton_mm_3",
         "time_us": 12.0, "winner": True},
        {"source": "s", "run_id": c["run_id"], "op_id": 0, "op": "mm", "choice": "extern_mm",
         "time_us": 14.0, "winner": False}])  # fmt: skip
    a = _answer([e, c], autotune=t).iloc[0]
    assert a["cause_kind"] == "autotune"
    assert "mm: triton_mm_3 (12.0 µs)" in a["cause"] and "extern_mm" not in a["cause"]


def test_cpu_says_host_and_device_are_one_and_explains_kernel_time_above_latency():
    """The quickstart's flash: the same one kernel, and eager's kernel time (read under a profiler
    that ran its steps 6.8x a timed call) above its latency."""
    e = _cell("flash", "off", device="cpu", latency_median_us=472.0, gpu_us_per_step=3131.0,
              profiler_overhead=6.76)  # fmt: skip
    c = _cell("flash", "default", 0.79, 0.54, 1.04, device="cpu", latency_median_us=506.0,
              gpu_us_per_step=422.0, profiler_overhead=1.09)  # fmt: skip
    a = _answer([e, c]).iloc[0]
    assert a["verdict"] == "no measurable difference"
    assert a["cause_kind"] == "kernels"
    assert "host and device are one" in a["cause"]
    # issue 68: "kernel time exceeds its latency ... ran 1.96x a timed call", unexplained; a
    # distorted profile is said to be one, and no conclusion is drawn from its kernel times
    assert "the profile is distorted (its steps ran 6.76x a timed call)" in a["cause"]
    assert "no conclusion from its kernel times" in a["cause"] and "3,131" not in a["cause"]
    assert a["µs a call"] == "472 eager → 506 compiled (separate cells)"


def test_cpu_loss_with_the_same_kernels_is_the_compiled_calls_own_work():
    e = _cell("flash", "off", device="cpu", latency_median_us=400.0, gpu_us_per_step=380.0)
    c = _cell("flash", "default", 0.8, 0.75, 0.85, device="cpu", latency_median_us=500.0,
              gpu_us_per_step=385.0)  # fmt: skip
    a = _answer([e, c]).iloc[0]
    assert a["verdict"] == "slower"
    assert "host and device are one" in a["cause"] and "compiled wrapper" in a["cause"]


def test_verdicts_from_the_interval():
    row = {"sp": 1.004, "sp_lo": 1.001, "sp_hi": 1.008, "sp_kind": "paired"}
    assert causes.verdict(row) == "no measurable difference"  # within the pairs' own error
    assert causes.verdict({**row, "sp": 1.2, "sp_lo": 0.9, "sp_hi": 1.4}) == (
        "no measurable difference"
    )
    assert causes.verdict({**row, "sp": 0.7, "sp_lo": 0.6, "sp_hi": 0.8}) == "slower"
    no_ci = {"sp": 1.2, "sp_lo": float("nan"), "sp_hi": float("nan"), "sp_kind": "cross-process"}
    assert causes.verdict(no_ci) == "no interval"
    assert causes.interval(no_ci) == "1.20x latency ratio, separate processes"


def test_eager_cells_and_cells_without_a_twin_get_no_row():
    alone = _cell("flash", "default", 1.2, 1.1, 1.3)
    assert _answer([alone]).empty
    assert _answer([_cell("flash", "off")]).empty


def test_the_report_opens_with_the_answer_and_ends_with_the_environment(tmp_path):
    """The first screen answers the question: per compiled cell its verdict, interval and cause
    above the intro and the contents; Environment last; no Surprises heading when none broke."""
    from analysis.report import build

    e = _cell("naive", "off", kernels_per_step=6, expectations=2, surprises=0)
    c = _cell("naive", "default", 1.6, 1.5, 1.7, kernels_per_step=3, gpu_us_per_step=40.0,
              expectations=1, surprises=0)  # fmt: skip
    k = _kern(e["run_id"], ("softmax", 4, 40, False), ("mm", 2, 50, False))
    k += _kern(c["run_id"], ("mm", 2, 30, False), ("triton_fused_0", 1, 10, True))
    src = tmp_path / "s"
    src.mkdir()
    pd.DataFrame([e, c]).drop(columns="source").to_csv(src / "runs.csv", index=False)
    pd.DataFrame(k).drop(columns="source").to_csv(src / "kernels.csv", index=False)
    build([src], tmp_path / "out")
    md = (tmp_path / "out" / "report.md").read_text()
    heads = [x for x in md.splitlines() if x.startswith("## ")]
    assert heads[0] == "## The answer" and heads[-1] == "## Environment", heads
    assert "## Surprises" not in md and "3 predictions checked" in md.split("## Environment")[1]
    first = md.split("## Results")[0]
    assert "| naive · default | faster | 1.60x (95% CI 1.50–1.70) |" in first
    assert "fusion: kernels 6 → 3 per step (4 removed, 1 fused)" in first
    page = (tmp_path / "out" / "report.html").read_text()
    assert page.index("id='answer'") < page.index("<nav>") < page.index("id='environment'")
    assert "href='#src-s-kernel_diff'" in page.split("<nav>")[0]  # the figure that shows it


def test_rows_without_host_us_infer_the_host_from_latency_before_fusion():
    """v1's matmul_add n=64 under default: one kernel fewer and less kernel time, 0.498x. The
    cause is the host (53 µs a call against 2 µs of kernels), not fusion."""
    e = _cell("matmul_add", "off", kernels_per_step=2, gpu_us_per_step=3.58, latency_median_us=26.0)
    c = _cell("matmul_add", "default", 0.498, 0.481, 0.51, kernels_per_step=1,
              gpu_us_per_step=2.08, latency_median_us=53.0)  # fmt: skip
    a = _answer([e, c]).iloc[0]
    assert (a["verdict"], a["cause_kind"]) == ("slower", "host")
    assert "53.0 µs a call against 2.08 µs of kernel time (inferred from latency" in a["cause"]


def test_a_cross_process_ratio_is_never_shown_as_the_speedup():
    """The cell table and the figures' sentences call runs.csv's `speedup` a per-call latency
    ratio: only `speedup_paired` is the speedup."""
    from analysis.measures import kinds_text, speedups
    from analysis.report import _speedup_text

    r = speedups(pd.DataFrame([{"speedup": 1.3, "compile": "default", "latency_median_us": 10.0}]))
    assert _speedup_text(r.iloc[0]) == "1.30x latency ratio"
    assert kinds_text(r).startswith("per-call latency ratio, not the paired speedup")


def test_long_unbroken_names_wrap_inside_the_page():
    """GPT-2's generated kernels (184-character names, 205-character source files) ran the table
    past the page: a cell wraps anywhere, within a bounded width."""
    from analysis import page

    td = [x for x in page.STYLE.split("}") if x.strip().startswith("td{")]
    assert any("overflow-wrap:anywhere" in x and "max-width" in x for x in td), td


def test_the_answer_gives_the_paired_blocks_us_and_the_host_phase():
    """A contended quickstart read 'faster 1.12x' beside '608 eager → 645 compiled': per-call
    latencies of two cells against a paired speedup. Beside a paired speedup the µs are the
    paired blocks', and a row timed outside the fast phase says its phase."""
    from analysis.tables.causes import per_call

    c = {"eager_latency_paired_us": 560.0, "sp": 1.12, "sp_kind": "paired",
         "latency_median_us": 645.0}  # fmt: skip
    assert per_call(c, {"latency_median_us": 608.0}) == "560 eager → 500 compiled (paired blocks)"
    c2 = {
        **c,
        "compiled_latency_paired_us": 498.0,
        "apart": "timed apart 0.94x: host busy between them",
    }
    assert per_call(c2, {}) == (
        "560 eager → 498 compiled (paired blocks; timed apart 0.94x: host busy between them)"
    )


def test_fusion_under_a_distorted_profile_counts_kernels_and_reads_no_kernel_time():
    """Issue 68: 'fusion did not pay … kernel time 248 µs eager → 4,538 µs compiled … its
    profiled steps ran 13.5x a timed call'. The counts stand; the kernel times do not."""
    e = _cell("naive", "off", device="cpu", latency_median_us=600.0, kernels_per_step=6,
              gpu_us_per_step=248.0, profiler_overhead=1.1)  # fmt: skip
    c = _cell("naive", "default", 0.8, 0.7, 0.9, device="cpu", latency_median_us=750.0,
              kernels_per_step=3, gpu_us_per_step=4538.0, profiler_overhead=13.5)  # fmt: skip
    a = _answer([e, c]).iloc[0]
    assert a["cause"].startswith("fusion cut kernels 6 → 3 per step")
    assert "distorted (its steps ran 13.5x a timed call)" in a["cause"]
    assert "4,538" not in a["cause"] and "did not pay" not in a["cause"]
    quiet = _answer([e, {**c, "gpu_us_per_step": 500.0, "profiler_overhead": 1.2}]).iloc[0]
    assert "distorted" not in quiet["cause"] and "kernel time 248 µs eager" in quiet["cause"]
