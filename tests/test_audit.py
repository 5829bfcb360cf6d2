"""reference.findings.audit: rows whose figures disagree with each other."""

import pandas as pd

from reference.findings import audit


def _cell(compile, lat, dev, sp=None, phase="fast", lead_in=1, run_id=None, **kw):
    return {"source": "s", "variant": "naive", "compile": compile, "pass": "fwd",
            "status": "ok", "device": "cuda", "seq_len": 1024, "batch": 8,
            "latency_median_us": lat, "device_time_us": dev, "kernels_per_step": 4,
            "speedup_paired": sp, "speedup_ci_low": sp and sp * 0.99,
            "speedup_ci_high": sp and sp * 1.01, "timing_phase": phase,
            "pair_lead_in": lead_in if compile != "off" else None,
            "run_id": run_id or f"compile={compile}", **kw}  # fmt: skip


def _check(*rows):
    return audit.check(pd.DataFrame(rows))


def test_a_gpu_bound_paired_speedup_below_its_per_call_ratio_fails_the_lead_in_check():
    eager = _cell("off", 1000.0, 990.0)
    fails, line = _check(eager, _cell("default", 330.0, 325.0, sp=2.9))  # per-call 3.03x: 4% below
    assert [f for f in fails if f.startswith("lead-in")] and "1 failure" in line
    fails, _ = _check(eager, _cell("default", 330.0, 325.0, sp=3.0))  # 1% below: ok
    assert fails == []
    # v2's rows (no pair_lead_in) are not judged
    fails, _ = _check(eager, _cell("default", 330.0, 325.0, sp=2.9, lead_in=None))
    assert fails == []


def test_a_host_bound_or_slow_phase_eager_twin_makes_the_per_call_ratio_the_hosts():
    # GPT-2's eager cell, host-bound and timed in the slow phase: 2,687 us against 1,850 paired
    slow = _cell("off", 2687.0, 1294.0, phase="slow")
    fails, line = _check(slow, _cell("default", 774.0, 768.0, sp=2.47))  # per-call 3.47x
    assert fails == [] and "1 of them timed outside the host's fast phase" in line
    # the same disagreement with both sides in the fast phase fails both checks
    fast = _cell("off", 2687.0, 2600.0)
    fails, _ = _check(fast, _cell("default", 774.0, 768.0, sp=2.47))
    assert sorted(f.split(":")[0] for f in fails) == ["agreement", "lead-in"]


def test_flex_must_count_the_masks_elements_as_sdpa_does():
    def attn(variant, useful, scheduled=None):
        return _cell("default", 100.0, 99.0, sp=1.0, variant=variant, mask="sliding_window",
                     flops=1000.0, flops_useful=useful, flops_scheduled=scheduled,
                     run_id=variant)  # fmt: skip

    eager = _cell("off", 100.0, 99.0, mask="sliding_window")
    assert _check(eager, attn("flex", 375.0, 500.0), attn("flash", 375.0))[0] == []
    fails, _ = _check(eager, attn("flex", 500.0, 500.0), attn("flash", 375.0))  # tiles
    assert len(fails) == 1 and "counts 0.5000 of the matrix, flash 0.3750" in fails[0]
    # a row of the new code (it records code_hash) without the tiles' column fails; a v2 row
    # (neither) is not judged
    fails, _ = _check(eager, {**attn("flex", 500.0), "code_hash": "abc"}, attn("flash", 375.0))
    assert any("no flops_scheduled" in f for f in fails)
    assert _check(eager, attn("flex", 500.0), attn("flash", 375.0))[0] == []


def test_a_study_is_one_code_revision():
    rows = [_cell("off", 1000.0, 990.0, code_hash="aaa"),
            _cell("default", 330.0, 325.0, sp=3.0, code_hash="bbb")]  # fmt: skip
    fails, _ = _check(*rows)
    assert fails == ["code: 1 cells at code_hash aaa, 1 cells at code_hash bbb (one study, one "
                     "code revision: run the others again at one)"]  # fmt: skip
    rows[1]["code_hash"] = "aaa"
    assert _check(*rows)[0] == []


def test_a_sweep_dir_without_a_source_column_is_audited_as_its_own_source(tmp_path):
    # a sweep's runs.csv has no source column (analysis.load labels it by its dir)
    d = tmp_path / "part3"
    d.mkdir()
    rows = [_cell("off", 1000.0, 990.0), _cell("default", 330.0, 325.0, sp=2.9)]
    pd.DataFrame(rows).drop(columns="source").to_csv(d / "runs.csv", index=False)
    fails, line = audit.audit([str(d)])
    assert "1 failure" in line and fails[0].startswith("lead-in: part3/naive/default")


def test_an_agreement_failure_says_which_side_moved():
    # v3's flash fwd_bwd under max-autotune on the H200: eager 448 us a step in its own cell,
    # 644 in the compiled cell's pairs; the compiled step 1,054 per call, 1,079 in the pairs
    eager = _cell("off", 448.0, 449.0, **{"pass": "fwd_bwd"})
    comp = _cell("max-autotune", 1054.0, 1121.0, sp=0.597, eager_latency_paired_us=644.0,
                 **{"pass": "fwd_bwd"})  # fmt: skip
    fails, _ = _check(eager, comp)
    assert len(fails) == 1 and fails[0].startswith("agreement")
    assert "eager 448 µs a call in its own cell, 644 in the pairs (+44%)" in fails[0]
    assert "compiled 1,054 per call, 1,079 in the pairs" in fails[0]
    assert "(eager's there over the paired speedup; +2%): eager moved" in fails[0]


def test_a_study_runs_at_one_host_speed():
    """Two H200 machines' hosts at 13.4 and 16.7 µs: the slower one's sweep is named."""
    rows = [_cell("off", 94.0, 93.0, source=src, gauge_fast_us=lvl, run_id=f"{src}{i}")
            for src, lvls in (("fast", [12.4, 12.8, 13.3]), ("slow", [15.2, 16.1, 16.7]))
            for i, lvl in enumerate(lvls)]  # fmt: skip
    fails, _ = _check(*rows)
    assert len(fails) == 1 and fails[0].startswith("host: slow ran at a fast level of 16.1")
    assert "1.18x the study's full speed of 13.6 µs (the lower quartile" in fails[0]
    fails, _ = _check(*[r for r in rows if r["source"] == "fast"])
    assert fails == []
    cpu = [dict(r, device="cpu") if r["source"] == "slow" else r for r in rows]
    assert _check(*cpu)[0] == []  # a CPU sweep's host is another machine, not a slow GPU host
    # rows that name their machine (boot_id): the slow sweep's is said, and the summary says all
    named = [dict(r, boot_id="aaaa1111" if r["source"] == "fast" else "bbbb2222") for r in rows]
    fails, line = _check(*named)
    assert fails[0].startswith("host: slow ran at a fast level of 16.1 µs (its cells' median) on "
                               "machine bbbb2222, 1.18x")  # fmt: skip
    assert "on machines aaaa1111, bbbb2222: 1 failure(s)" in line


def test_one_sweep_at_a_faster_moment_does_not_make_the_others_read_slow():
    """v3 on the H200: part3_bwd's cells at 11.5-11.6 µs (the host's level moved within
    minutes), the block at 13.8 and the rest at 12.9-13.3: one host speed."""
    levels = {"part3": [13.3] * 30, "part2": [13.3] * 10, "targets": [12.9] * 10,
              "part3_bwd": [11.6] * 10, "block": [13.8] * 5}  # fmt: skip
    rows = [_cell("off", 94.0, 93.0, source=src, gauge_fast_us=lvl, run_id=f"{src}{i}")
            for src, lvls in levels.items() for i, lvl in enumerate(lvls)]  # fmt: skip
    assert _check(*rows)[0] == []
    slow = rows + [_cell("off", 94.0, 93.0, source="models", gauge_fast_us=16.0, run_id=f"m{i}")
                   for i in range(10)]  # fmt: skip
    fails = _check(*slow)[0]
    assert len(fails) == 1 and fails[0].startswith("host: models ran at a fast level of 16.0")


def test_a_big_sweep_on_a_slow_machine_is_not_the_yardstick():
    """60 cells at 16.7 µs and 20 at 13.4 (two machines of one day): the slow sweep is named,
    though most cells ran there."""
    rows = [_cell("off", 94.0, 93.0, source=src, gauge_fast_us=lvl, run_id=f"{src}{i}")
            for src, lvl, n in (("part3", 16.7, 60), ("part1", 13.4, 20)) for i in range(n)]  # fmt: skip
    fails = _check(*rows)[0]
    assert len(fails) == 1 and fails[0].startswith("host: part3 ran at a fast level of 16.7")


def test_a_sweep_is_judged_by_its_cells_own_levels_where_they_have_them():
    """The rows' gauge_fast_us is the lower of a cell's own level and the host's: a sweep timed
    through a 16 µs stretch after a 13 µs survey reads 13 there, and 16 in gauge_own_us."""
    rows = [_cell("off", 94.0, 93.0, source=src, gauge_fast_us=13.0, gauge_own_us=own,
                  run_id=f"{src}{i}")
            for src, own in (("part3", 13.1), ("part2", 13.2), ("models", 16.0))
            for i in range(10)]  # fmt: skip
    fails = _check(*rows)[0]
    assert len(fails) == 1 and fails[0].startswith("host: models ran at a fast level of 16.0")
