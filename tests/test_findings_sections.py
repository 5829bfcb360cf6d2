"""The Findings sections for the v2 study, each on a few synthetic rows (pure pandas, no files
beyond a tmp dir): paired speedups and repeats, v1 → v2 reasons, training, the block,
FlexAttention, the sweep's cost, and a section whose source is missing."""

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from analysis import pairs
from analysis.load import cells
from reference.findings import cost as findings_cost
from reference.findings.base import common as findings_common
from reference.findings.changes import since_unpaired
from reference.findings.speed import flex as speed_flex
from reference.findings.speed import training as speed_training
from reference.findings.speed import transformer as speed_transformer

BASE = {"status": "ok", "device": "cuda", "dtype": "bf16", "family": "attention", "pass": "fwd",
        "device_name": "NVIDIA H200", "torch_version": "2.11", "seq_len": 1024, "batch": 8,
        "heads": 16, "head_dim": 64, "device_time_us": 100.0, "kernels_per_step": 1}  # fmt: skip


def _data(rows, kernels=(), shapes=()) -> dict:
    raw = pd.DataFrame([{**BASE, **r} for r in rows])
    return {
        "dir": Path("/nonexistent"),
        "raw": raw,
        "runs": cells(raw),
        "kernels": pd.DataFrame(list(kernels)),
        "ncu": pd.DataFrame(),
        "revealed": pd.DataFrame(),
        "shapes": pd.DataFrame(list(shapes)),
    }


def _cell(source, variant, mode, lat, **kw):
    """One runs.csv row; repeats of a cell (``repeat=``) share its config_hash."""
    cell = f"{source}{variant}{mode}{kw.get('pass', 'fwd')}{kw.get('mask')}{kw.get('seq_len')}"
    return {"source": source, "run_id": f"{variant},{mode},{kw.get('repeat', 0)}",
            "config_hash": cell, "variant": variant, "compile": mode,
            "latency_median_us": lat, **kw}  # fmt: skip


def test_repeats_give_the_geometric_mean_and_the_interval_that_covers_processes():
    from study.observe.stats import across_processes

    rows = [_cell("part3", "flash", "off", 100.0, repeat=i) for i in range(3)]
    for i, (sp, lo, hi) in enumerate(((0.90, 0.88, 0.92), (1.02, 0.99, 1.05), (0.95, 0.93, 0.97))):
        rows.append(_cell("part3", "flash", "default", 100 / sp, repeat=i, speedup_paired=sp,
                          speedup_ci_low=lo, speedup_ci_high=hi))  # fmt: skip
    c = pairs.with_eager(_data(rows)["runs"]).iloc[0].to_dict()
    geo = float(np.exp(np.log([0.90, 1.02, 0.95]).mean()))  # the t-interval's centre
    assert c["n_repeats"] == 3 and c["sp"] == pytest.approx(geo) and c["sp_kind"] == "paired"
    want = across_processes([0.90, 1.02, 0.95], [0.88, 0.99, 0.93], [0.92, 1.05, 0.97])
    assert (c["sp"], c["sp_lo"], c["sp_hi"]) == pytest.approx(want)
    assert c["sp_lo"] < 0.90 and c["sp_hi"] > 1.02  # it covers every process's ratio ...
    assert (c["sp_lo"], c["sp_hi"]) != (0.88, 1.05)  # ... and is not the envelope
    assert pairs.verdict(c) == "no measurable difference"
    assert findings_common.sp_text(c) == f"{geo:.3g}x [{c['sp_lo']:.3g}–{c['sp_hi']:.3g}]"
    assert findings_common.spread_text(c) == "3 runs: 0.900–1.02x"


def test_processes_that_disagree_beyond_their_own_intervals_widen_the_cells_interval():
    """cudnn/default in three processes of one H200 sweep: disjoint intervals."""
    from study.observe.stats import across_processes

    sp, lo, hi = across_processes([0.717, 0.524, 0.424], [0.652, 0.506, 0.410],
                                  [0.782, 0.542, 0.439])  # fmt: skip
    assert sp == pytest.approx((0.717 * 0.524 * 0.424) ** (1 / 3)) and lo < 0.424 and hi > 0.717
    assert across_processes([0.5], [0.4], [0.6]) == (0.5, 0.4, 0.6)  # one process: its own
    with pytest.raises(ValueError):
        across_processes([0.5, -1.0], [0.4, 0.1], [0.6, 0.2])


def test_a_cell_uses_its_fast_phase_repeats_and_never_mixes_in_the_others_silently():
    rows = [_cell("part3", "linear", "default", lat, repeat=i, status="ok", timing_phase=ph,
                  speedup_paired=sp, speedup_ci_low=sp - 0.01, speedup_ci_high=sp + 0.01)
            for i, (lat, ph, sp) in enumerate(((50.0, "fast", 0.32), (80.0, "contended", 0.2),
                                               (52.0, "fast", 0.31)))]  # fmt: skip
    c = _data(rows)["runs"].iloc[0]
    assert c["latency_median_us"] == 51.0 and c["timing_phase"] == "fast"
    assert c["n_repeats"] == 3 and c["n_repeats_fast"] == 2
    alone = _data(rows[1:2])["runs"].iloc[0]  # no fast repeat: its own figures, and it says so
    assert alone["timing_phase"] == "contended" and alone["latency_median_us"] == 80.0
    eager = _cell("part3", "linear", "off", 16.0, status="ok", timing_phase="fast")
    c = pairs.with_eager(_data([eager, rows[1]])["runs"]).iloc[0].to_dict()
    assert findings_common.sp_text(c) == "0.200x [0.190–0.210], host contended"


def test_a_paired_interval_that_excludes_one_inside_1pct_is_no_verdict():
    """v3 on the H200: the naive attention under dynamo_eager, the same 7 kernels as eager,
    read 1.00x [1.001-1.004]: 'faster' by its interval, and a payback of 392,000 calls."""
    row = {"sp": 1.002, "sp_lo": 1.001, "sp_hi": 1.004, "sp_kind": "paired"}
    assert pairs.verdict(row) == "within ±1%"
    assert pairs.verdict(dict(row, sp=0.999, sp_lo=0.998, sp_hi=0.9995)) == "within ±1%"
    assert pairs.verdict(dict(row, sp=0.986, sp_lo=0.985, sp_hi=0.988)) == "slower"
    assert pairs.verdict(dict(row, sp=1.0, sp_lo=0.995, sp_hi=1.004)) == (
        "no measurable difference"
    )


def test_cross_process_speedups_are_within_one_sweep_and_judged_against_2pct():
    rows = [_cell("part1", "mm", "off", 200.0), _cell("part1", "mm", "default", 160.0),
            _cell("core", "mm", "off", 100.0), _cell("core", "mm", "default", 99.0)]  # fmt: skip
    c = pairs.with_eager(_data(rows)["runs"]).set_index("source")
    assert c.loc["part1", "sp"] == 1.25 and pairs.verdict(c.loc["part1"]) == "faster"
    assert pairs.verdict(c.loc["core"]) == "within ±2%"


def test_why_a_v1_speedup_moved():
    base = {"sp_a": 3.26, "sp_b": 3.25, "sp_lo_b": 3.1, "sp_hi_b": 3.4, "sx_b": 3.26,
            "hb_a": False, "hb_b": False, "lat_a": 326.0, "lat_b": 326.0, "elat_a": 1062.0,
            "elat_b": 1063.0, "kernels_a": 4, "kernels_b": 4}  # fmt: skip
    assert since_unpaired.why(base) == "unchanged"
    paired_only = {**base, "sp_b": 2.87, "sp_lo_b": 2.76, "sp_hi_b": 2.96}
    assert since_unpaired.why(paired_only) == "pairing"
    host = {**paired_only, "sx_b": 0.54, "hb_b": True}
    assert since_unpaired.why(host) == "host"
    real = {**paired_only, "sx_b": 2.5, "lat_b": 400.0, "kernels_b": 5}
    assert since_unpaired.why(real) == "real change"
    # other kernels (mlp max-autotune: 5 -> 7) are a real change even when the ratio repeats
    assert since_unpaired.why({**paired_only, "kernels_b": 7}) == "real change"


def test_training_proves_the_backward_backend_and_the_saved_tensors():
    bwd = {"pass": "fwd_bwd", "backend_expected": "flash"}
    proof = "flash: kernel void pytorch_flash::flash_fwd_kernel<T>(P); bwd: kernel void pytorch_flash::flash_bwd_dq_kernel<T>(P)"  # noqa: E501
    rows = [
        _cell("part3", "flash", "off", 100.0),
        _cell(
            "part3",
            "flash",
            "default",
            110.0,
            speedup_paired=0.9,
            speedup_ci_low=0.85,
            speedup_ci_high=0.95,
        ),  # fmt: skip
        _cell(
            "part3_bwd",
            "flash",
            "off",
            300.0,
            backend_seen="flash (fwd), flash (bwd)",
            backend_proof=proof,
            saved_tensors=7,
            saved_bytes=2**20,
            **bwd,
        ),  # fmt: skip
        _cell(
            "part3_bwd",
            "flash",
            "default",
            280.0,
            backend_seen="flash (fwd), math (bwd)",
            backend_proof=proof,
            speedup_paired=1.07,
            speedup_ci_low=1.02,
            speedup_ci_high=1.1,
            saved_tensors=5,
            saved_bytes=2**20,
            eager_saved_tensors=7,
            eager_saved_bytes=2**20,
            compression_ratio=1.5,
            peak_mem_alloc_bytes=2**21,
            eager_peak_mem_alloc_bytes=3 * 2**20,
            **bwd,
        ),  # fmt: skip
    ]
    k = [{"source": "part3_bwd", "run_id": "flash,off,0", "phase": p, "calls_per_step": n}
         for p, n in (("fwd", 1), ("bwd", 3))]  # fmt: skip
    text = "\n".join(speed_training.section(_data(rows, k)))
    assert "| flash | default | 0.90x [0.85–0.95] | 1.07x [1.02–1.10] |" in text
    assert "- fwd → training pass, default mode: flash 0.900x → 1.07x fwd_bwd." in text
    # the compiled cell's trace saw math in the backward: not proven there
    assert "backend also runs the backward: **differs**" in text
    assert "| flash | flash | 1 of 2 | `flash_bwd_dq_kernel` | 1 + 3 →  |" in text
    assert "saved fewer tensors than eager for: flash fwd_bwd 7 → 5" in text
    assert "Compression ratio (eager peak / compiled peak) without CUDA graphs: 1.50–1.50x" in text
    assert "Dynamic shapes: needs source `dynamic`" in text


def test_block_gives_each_pass_in_every_mode():
    rows = [_cell("block", "block", m, lat, kernels_per_step=k, **sp)
            for m, lat, k, sp in (("off", 600.0, 16, {}),
                                  ("default", 530.0, 14, {"speedup_paired": 1.09,
                                   "speedup_ci_low": 1.07, "speedup_ci_high": 1.12}))]  # fmt: skip
    rows += [_cell("block_bwd", "block", m, lat, kernels_per_step=k, **{"pass": "fwd_bwd"}, **sp)
             for m, lat, k, sp in (("off", 2266.0, 48, {}),
                                   ("default", 2310.0, 46, {"speedup_paired": 0.99,
                                    "speedup_ci_low": 0.96, "speedup_ci_high": 1.01}))]  # fmt: skip
    text = "\n".join(speed_transformer.section(_data(rows)))
    assert "| off | 16 | 600 |  | eager | 48 | 2,266 |  | eager |" in text
    assert (
        "| default | 14 | 530 | 1.09x [1.07–1.12] | faster | 46 | 2,310 | 0.990x [0.960–1.01] "
        "| no measurable difference |" in text
    )


def _flex(variant, mask, seq, lat, status="ok", **kw):
    kw.setdefault("device_time_us", lat)  # GPU-bound unless a test says otherwise
    frac = {"causal": 0.5, "sliding_window": 256 / seq}[mask]
    flops = 4 * 8 * 16 * seq * seq * 64.0
    return _cell("flex", variant, "default", lat if status == "ok" else None, mask=mask,
                 seq_len=seq, status=status, run_id=f"{variant},{mask},{seq}",
                 tflops=flops / lat / 1e6 if status == "ok" else None,
                 tflops_useful=flops * frac / lat / 1e6 if status == "ok" else None,
                 peak_tflops=770.0, **kw)  # fmt: skip


def test_flex_rates_ratios_sliding_window_and_the_peak():
    rows = [
        _flex("flex", "causal", 4096, 800.0, block_mask_s=0.03),
        _flex("flash", "causal", 4096, 1000.0),
        _flex("cudnn", "causal", 4096, 640.0),
        _flex("flex", "causal", 16384, None, status="oom"),
        _flex("flash", "sliding_window", 4096, None, status="unsupported"),
        _flex("flex", "sliding_window", 4096, 100.0),
        _flex("flex", "sliding_window", 16384, 420.0),
    ]
    k = [{"source": "flex", "run_id": "flex,causal,4096", "variant": "flex", "generated": True,
          "kernel": "triton_tem_fused_flex_attention_0", "source_file": "generated/k.py",
          "fused_ops": "higher_order.flex_attention sdpa_mask0(aten.ge)"}]  # fmt: skip
    # the same template kernel serves the sliding window, with the window's own ops fused
    k += [{**k[0], "run_id": "flex,sliding_window,4096",
           "fused_ops": "higher_order.flex_attention sdpa_mask0(aten.sub,aten.lt)"}]  # fmt: skip
    text = "\n".join(speed_flex.section(_data(rows, k)))
    assert "| causal | 4096 | 344 | 275 | 429 |" in text
    assert "| sliding_window | 4096 | 344 | unsupported |  |" in text
    assert "4096: flex/flash 0.800x, flex/cudnn 1.25x; 16384: flex oom." in text
    assert (
        "useful TFLOP/s roughly flat over length (within 1.3x): **holds** — seq_len 4096, 16384: "
        "useful 344 → 327 TFLOP/s; counting the full S×S matrix it rises: 5,498 → 20,943 (the "
        "block mask keeps 6% → 2% of its tiles)." in text
    )
    assert (
        "`triton_tem_fused_flex_attention_0` from `generated/k.py`, fusing causal: "
        "`higher_order.flex_attention sdpa_mask0(aten.ge)`; sliding_window: "
        "`higher_order.flex_attention sdpa_mask0(aten.sub,aten.lt)`." in text
    )
    assert "Building the block mask took 30.0–30.0 ms" in text
    # the full-matrix counts of the sliding window and flex causal read above the 770 peak
    assert "calibrated peak in useful TFLOP/s: **holds** — 5 ok rows; the highest is cudnn" in text
    assert "Counting the full S×S matrix, 3 read above it." in text


def test_flex_rows_that_count_elements_say_so_and_give_the_tiles_beside_them():
    # rows with flops_scheduled: flex's useful FLOPs are the window's elements (as SDPA's);
    # its block mask's tiles (here 1.5x the elements) are the second column
    def by_element(seq, lat):
        x = _flex("flex", "sliding_window", seq, lat)
        x["flops"] = 4 * 8 * 16 * seq * seq * 64.0
        x["flops_scheduled"] = x["flops"] * 1.5 * 256 / seq
        return x

    text = "\n".join(speed_flex.section(_data([by_element(4096, 100.0), by_element(16384, 420.0)])))
    assert "every variant counts the mask's kept elements, flex included" in text
    assert "flex counts the block mask's kept tiles" not in text
    assert "(the window keeps 6% → 2% of the matrix, its block mask 9% → 2% of the tiles)." in text


def test_flex_judges_a_host_bound_length_by_its_device_time():
    rows = [
        # at 1024 the compiled flex call waits on the host: 150 µs per call, 75 on the GPU
        _flex("flex", "causal", 1024, 150.0, device_time_us=75.0, host_bound=True),
        _flex("flash", "causal", 1024, 100.0, device_time_us=100.0, host_bound=False),
        _flex("cudnn", "causal", 1024, 60.0, device_time_us=60.0, host_bound=False),
        _flex("flex", "sliding_window", 1024, 50.0, device_time_us=25.0, host_bound=True),
        _flex("flex", "sliding_window", 4096, 100.0, device_time_us=100.0, host_bound=False),
        _flex("flex", "sliding_window", 16384, 420.0, device_time_us=420.0, host_bound=False),
    ]
    text = "\n".join(speed_flex.section(_data(rows)))
    assert (
        "1024: flex/flash 1.50x, flex/cudnn 2.50x (flex latency-bound: 150 µs per call for 75.0 µs "
        "on the GPU; by device time flex/flash 0.750x, flex/cudnn 1.25x)." in text
    )
    # 1024 reads far below the rest by latency (172 against 344, 327), within 1.3x by device time
    assert "roughly flat over length (within 1.3x): **holds** — seq_len 1024, 4096, 16384" in text
    assert (
        "Judged over the lengths where flex is GPU-bound (4096, 16384: within 1.05x); at 1024 "
        "flex is latency-bound (50.0 µs per call for 25.0 µs on the GPU; by device time 344 useful "
        "TFLOP/s)." in text
    )


def test_the_sweeps_cost_sums_every_phase_over_repeats():
    t = {"overhead_s": 1.0, "first_call_s": 2.0, "check_s": 0.5, "measure_s": 3.0,
         "profile_s": 0.5, "gpu_wait_s": 0.0, "extra_s": 0.0}  # fmt: skip
    rows = [_cell("part3", "flash", "off", 100.0, repeat=i, **{**t, "overhead_s": 4.0 + i})
            for i in range(3)]  # fmt: skip
    rows += [_cell("part3", "flash", "default", 90.0, **t),
             _cell("part3", "naive", "default", 90.0, **{**t, "overhead_s": 3.0},
                   status="invalid")]  # fmt: skip
    rows[1]["prepare_s"] = 3.5  # this sweep's first cell waited for the server's imports
    text = "\n".join(findings_cost.section(_data(rows)))
    # rows: (4+6) + (5+6) + (6+6) + (1+6) + (3+6) = 49 s; eager overheads 4, 5-3.5, 6
    assert "| part3 | 5 | 3 | 4 ok, 1 invalid | 1 | 0.817 | 4.00 | 2.00 | 3.50 |" in text
    for i, r in enumerate(rows[2:]):  # a resume on two GPUs (the gpus launcher) did these
        r["gpu_index"] = i % 2
    text = "\n".join(findings_cost.section(_data(rows)))
    assert "| part3 | 5 | 3 | 4 ok, 1 invalid | 1; 3 rows on the launcher (0, 1) | 0.817 |" in text
    for i, r in enumerate(rows):
        r["gpu_index"] = i % 2
    text = "\n".join(findings_cost.section(_data(rows)))
    assert "| part3 | 5 | 3 | 4 ok, 1 invalid | 2 (0, 1) | 0.817 |" in text
    for r in rows:
        r["gpu_index"], r["device"] = None, "cpu"
    assert "| 4 ok, 1 invalid | CPU |" in "\n".join(findings_cost.section(_data(rows)))
    assert "overhead_s + gpu_wait_s + first_call_s" in text


def test_each_section_names_the_source_it_needs_when_it_is_missing():
    data = _data([_cell("part3", "naive", "off", 1000.0)])
    assert speed_training.section(data)[1].startswith("_Training: needs source `part3_bwd`")
    assert speed_transformer.section(data) == ["", "_The transformer block: needs source `block` "
                                            "(and `block_bwd`), not in these results._"]  # fmt: skip
    assert "needs source `flex`" in speed_flex.section(data)[1]
    assert "needs source set `v1`" in since_unpaired.section(data)[1]
    assert "needs rows with `overhead_s`" in findings_cost.section(data)[1]


def test_v1_to_v2_matches_cells_and_says_why_each_speedup_moved(tmp_path):
    from reference.findings.base.common import read

    def rows(flash_c, naive_c, **v2):
        return pd.DataFrame([{**BASE, **r} for r in (
            _cell("part3", "naive", "off", 1062.0, speedup=1.0, device_time_us=1060.0),
            _cell("part3", "naive", "default", naive_c, device_time_us=320.0,
                  **v2.get("naive", {"speedup": 1062 / naive_c})),
            _cell("part3", "flash", "off", 96.8, speedup=1.0, device_time_us=94.0),
            _cell("part3", "flash", "default", flash_c, device_time_us=95.0,
                  **v2.get("flash", {"speedup": 96.8 / flash_c})),
        )])  # fmt: skip

    (tmp_path / "v1").mkdir()
    rows(103.7, 325.7).to_csv(tmp_path / "v1" / "runs.csv", index=False)
    paired = {"naive": {"speedup_paired": 2.87, "speedup_ci_low": 2.76, "speedup_ci_high": 2.96,
                        "host_bound": False},
              "flash": {"speedup_paired": 0.86, "speedup_ci_low": 0.84, "speedup_ci_high": 0.87,
                        "host_bound": True}}  # fmt: skip
    rows(141.1, 326.4, **paired).to_csv(tmp_path / "runs.csv", index=False)
    text = "\n".join(since_unpaired.section(read(tmp_path)))
    assert "4 cells matched by configuration within the same source: `part3`" in text
    assert "Speedups of the 2 compiled cells: 0 unchanged, 1 pairing, 1 host, 0 real change" in text
    assert (
        "| naive | default | part3 | 3.26x | 3.25x | 2.87x [2.76–2.96] | 326 → 326 | 1 → 1 | pairing |"
        in text
    )  # noqa: E501
    assert (
        "| flash | default | part3 | 0.933x | 0.686x | 0.860x [0.840–0.870] | 104 → 141 |" in text
    )
    assert "the paired speedup is 0.882–0.882x the cross-process one" in text


def test_the_training_tables_give_repeats_the_interval_that_covers_processes():
    import pandas as pd

    from analysis.tables import training
    from study.observe.stats import across_processes

    rows = pd.DataFrame([{"run_id": f"r{i}", "config_hash": "c", "status": "ok",
                          "repeat": i, "speedup_paired": sp,
                          "speedup_ci_low": lo, "speedup_ci_high": hi}
                         for i, (sp, lo, hi) in enumerate(((0.5, 0.41, 0.54), (0.7, 0.68, 0.78),
                                                           (0.53, 0.51, 0.55)))])  # fmt: skip
    c = training.cells(rows).iloc[0]
    got = (c["speedup_paired"], c["speedup_ci_low"], c["speedup_ci_high"])
    assert got == pytest.approx(across_processes([0.5, 0.7, 0.53], [0.41, 0.68, 0.51],
                                                 [0.54, 0.78, 0.55]))  # fmt: skip
    assert got[0] == pytest.approx((0.5 * 0.7 * 0.53) ** (1 / 3)) and got[1] < 0.5 and got[2] > 0.7


def test_scaling_quotes_the_useful_rate_and_says_what_the_full_count_would_read():
    import pandas as pd

    from reference.findings.speed import scaling

    ok = pd.DataFrame(
        [
            {"variant": v, "compile": "default", "seq_len": 8192, "causal": True, "dtype": "bf16",
             "tflops": t, "tflops_useful": t / 2, "peak_tflops": 761.0}
            for v, t in (("cudnn", 938.0), ("naive", 105.0))
        ]
    )  # fmt: skip
    line = scaling.best_rates(ok, ok)
    assert line.startswith("- Best useful rate per variant (FLOPs of the half of the S×S matrix")
    assert "cudnn 469 TFLOP/s (default, seq_len 8192); naive 52 TFLOP/s" in line
    assert "Counting the full S×S matrix, cudnn would read above the calibrated bf16" in line
    assert "the useful rate stays below it" in line
    # a useful rate above the peak is said, never hidden
    hot = ok.assign(tflops_useful=ok["tflops"] * 0.9)
    assert (
        "cudnn read above the calibrated bf16 matmul peak (761 TFLOP/s, `peak_tflops`) even "
        "in useful FLOPs." in scaling.best_rates(hot, hot)
    )
    # one variant without a useful rate (e.g. a row from an older harness) is left out
    part = ok.assign(tflops_useful=[469.0, None])
    assert "naive" not in scaling.best_rates(part, part).split(":")[1]
    # v1's rows have no useful rate: the full count, with the caveat
    line = scaling.best_rates(ok.drop(columns="tflops_useful"), ok)
    assert "Best rate per variant (FLOPs of the full S×S matrix" in line
    assert "cudnn 938 TFLOP/s" in line and "about half of what they read" in line


def test_scaling_speedups_are_paired_with_their_interval_or_said_to_be_cross_process():
    import pandas as pd

    from reference.findings.speed import scaling

    def row(mode, seq, lat, **kw):
        return {"variant": "flash", "compile": mode, "seq_len": seq, "status": "ok",
                "kernels_per_step": 1, "latency_median_us": lat, **kw}  # fmt: skip

    sc = pd.DataFrame([
        row("off", 512, 30.0), row("off", 4096, 900.0),
        row("default", 512, 100.0, speedup_paired=0.653, speedup_ci_low=0.638,
            speedup_ci_high=0.672, timing_phase="fast"),
        row("default", 4096, 900.0),  # an older row: no paired speedup
    ])  # fmt: skip
    text = "\n".join(scaling._scaling_notes(sc, None, sc))
    assert "flash 0.653x [0.638–0.672] at 512 → 1.00x cross-process at 4096" in text
    assert "0.30x" not in text  # the cross-process ratio at 512, where a paired one exists


def test_a_training_step_slower_through_the_host_alone_gives_the_rule():
    bwd = {"pass": "fwd_bwd", "kernels_per_step": 11, "timing_phase": "fast", "timing_core": 3}

    def pair(variant, eager, compiled, gpu, sp, gpu_c=None):
        return [
            _cell("part3_bwd", variant, "off", eager, gpu_us_per_step=gpu, **bwd),
            _cell("part3_bwd", variant, "default", compiled, gpu_us_per_step=gpu_c or gpu,
                  speedup_paired=sp, speedup_ci_low=sp - 0.02, speedup_ci_high=sp + 0.02,
                  eager_latency_paired_us=eager, **bwd),
        ]  # fmt: skip

    rows = pair("cudnn", 298.0, 450.0, 289.0, 298 / 450)  # host-bound, eager's device time
    rows += pair("flash", 446.0, 448.0, 437.0, 0.995)  # the GPU covers the host side
    rows += pair("math", 298.0, 450.0, 289.0, 298 / 450, gpu_c=400.0)  # the device changed
    (line,) = [x for x in speed_training.host_steps(_data(rows)["runs"]) if x]
    assert "cudnn fwd_bwd default 0.662x [0.642–0.682] (289 µs on the device, as eager's 289; the step took " \
        "450 µs, 152 more than eager's)" in line  # fmt: skip
    assert "Such a compiled step took 450 µs here" in line and "math" not in line
    assert "of host time" not in line  # latency and device time only: no host time is measured
    assert (
        "latency within 10% of the device time: flash fwd_bwd default 0.995x [0.975–1.01] (437 µs)"
        in line
    )
    covered = pair("flash", 446.0, 448.0, 437.0, 0.995)
    assert speed_training.host_steps(_data(covered)["runs"]) == []
    spread = [{**r, "timing_core": None} for r in rows]  # threads spread (v2): no figure
    assert speed_training.host_steps(_data(spread)["runs"]) == []


def test_the_summary_names_the_host_step_only_from_rows_timed_on_one_core():
    from reference.findings import summary

    bwd = {"pass": "fwd_bwd", "kernels_per_step": 11, "gpu_us_per_step": 289.0}
    rows = [
        _cell("part3_bwd", "cudnn", "off", 298.0, **bwd),
        _cell("part3_bwd", "cudnn", "default", 505.0, speedup_paired=0.59,
              speedup_ci_low=0.55, speedup_ci_high=0.64, **bwd),
    ]  # fmt: skip
    spread = summary.trains(_data(rows))
    assert "threads on different cores" in spread and "Where it loses" not in spread
    one = summary.trains(_data([{**r, "timing_core": 3} for r in rows]))
    assert "different cores" not in one
    assert "its device time does not: compiled cudnn takes 505 µs a fwd_bwd step for 289 µs" in one


def test_the_summary_names_the_source_of_a_training_cell_measured_in_two_sweeps():
    from reference.findings import summary

    bwd = {"pass": "fwd_bwd", "kernels_per_step": 1, "gpu_us_per_step": 435.0, "timing_core": 3}
    rows = []
    for src, sp in (("part3_bwd", 0.976), ("targets_bwd", 0.814)):
        rows += [
            _cell(src, "flash", "off", 446.0, **bwd),
            _cell(src, "flash", "default", 446.0 / sp, speedup_paired=sp,
                  speedup_ci_low=sp - 0.01, speedup_ci_high=sp + 0.01, **bwd),
        ]  # fmt: skip
    rows += [_cell("part3_bwd", "naive", "off", 900.0, **bwd),
             _cell("part3_bwd", "naive", "default", 300.0, speedup_paired=3.0,
                   speedup_ci_low=2.9, speedup_ci_high=3.1, **bwd)]  # fmt: skip
    line = summary.trains(_data(rows))
    assert "naive 3.00x, flash 0.976x `part3_bwd`, 0.814x `targets_bwd` (fwd_bwd)" in line, line
    assert line.split("(fwd_bwd)")[0].count("flash") == 1


def test_the_summary_says_what_its_intervals_cover():
    from reference.findings import summary

    rows = [_cell("part3", "naive", "off", 900.0, repeat=r, started_at="2026-12-02T15:00")
            for r in range(3)]  # fmt: skip
    rows += [_cell("models", "gpt2", "off", 1500.0, started_at="2026-12-03T06:30")]
    line = summary.scope(_data(rows)["runs"])
    assert "[95% interval over the cell's processes in part3, over one process's pairs " \
        "elsewhere]" in line  # fmt: skip
    only = summary.scope(_data(rows[:3])["runs"])
    assert "[95% interval over processes]" in only
