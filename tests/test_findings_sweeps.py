"""reference.findings.host.two_sweeps: the same compiled cell in two sweeps, and why two intervals that do
not overlap differ (v3's rows on the H200, reduced to the columns that decide it)."""

from pathlib import Path

import pandas as pd

from analysis.load import cells
from reference.findings.host import two_sweeps as host_two_sweeps

BASE = {"status": "ok", "device": "cuda", "family": "attention", "variant": "flash",
        "pass": "fwd_bwd", "seq_len": 1024, "batch": 8, "kernels_per_step": 11,
        "timing_phase": "fast", "pair_lead_in": 1}  # fmt: skip


def _pair(source, lat, gpu, sp, lo, hi, level, eager=(446.0, 437.0), **kw):
    """An eager cell and a compiled (`default`) one of ``source``."""
    e = {**BASE, "source": source, "compile": "off", "run_id": f"{source}e",
         "config_hash": f"{source}e", "latency_median_us": eager[0],
         "gpu_us_per_step": eager[1], "gauge_fast_us": level}  # fmt: skip
    c = {**BASE, "source": source, "compile": "default", "run_id": f"{source}c",
         "config_hash": f"{source}c", "latency_median_us": lat, "gpu_us_per_step": gpu,
         "speedup_paired": sp, "speedup_ci_low": lo, "speedup_ci_high": hi,
         "eager_latency_paired_us": eager[0], "gauge_fast_us": level, **kw}  # fmt: skip
    return [e, c]


def _section(rows) -> str:
    raw = pd.DataFrame(rows)
    return "\n".join(host_two_sweeps.section({"dir": Path("."), "raw": raw, "runs": cells(raw)}))


def test_a_step_at_the_line_follows_the_hosts_speed():
    """flash fwd_bwd under default: 0.976x at a fast level of 11.5 µs, 0.814x at 13.2 µs, the
    same 438 µs of GPU work; the slower sweep's step host-bound (541 µs a step)."""
    rows = _pair("part3_bwd", 456.0, 435.0, 0.976, 0.971, 0.979, 11.5)
    rows += _pair("targets_bwd", 541.0, 438.0, 0.814, 0.789, 0.843, 13.2)
    text = _section(rows)
    assert "1 compiled cell(s) have a paired speedup in more than one source; 0 agree" in text
    assert (
        "- flash fwd_bwd default: 0.976x [0.971–0.979] in `part3_bwd`, 0.814x "
        "[0.789–0.843] in `targets_bwd`; not its device time: its fast level 11.5 → 13.2 µs "
        "(1.15x), the compiled step 1.19x as long (456 → 541 µs), its latency over 1.1x its "
        "device time in `targets_bwd` (GPU work 435 → 438 µs)." in text
    )


def test_overlapping_intervals_agree_and_other_causes_come_first():
    agree = _pair("part3", 93.6, 92.0, 1.001, 0.999, 1.003, 13.1)
    agree += _pair("targets", 94.3, 92.1, 1.001, 0.999, 1.005, 13.0)
    text = _section(agree)
    assert "1 compiled cell(s)" in text and "1 agree" in text and "- flash" not in text
    # the lower one's compiled GPU work rose: the device, before any host reading
    dev = _pair("a", 456.0, 435.0, 0.976, 0.971, 0.979, 11.5)
    dev += _pair("b", 541.0, 520.0, 0.814, 0.789, 0.843, 13.2)
    assert "; the device: GPU work a step compiled 435 → 520 µs." in _section(dev)
    # eager's GPU work rising in the lower one would raise its speedup: not the cause
    up = _pair("a", 456.0, 435.0, 0.976, 0.971, 0.979, 11.5)
    up += _pair("b", 541.0, 438.0, 0.814, 0.789, 0.843, 13.2, eager=(446.0, 480.0))
    assert "the device" not in _section(up) and "the host" in _section(up)
    # a slow phase is named; a lower row made before the lead-in fix, GPU-bound, is the timing
    slow = _pair("a", 456.0, 435.0, 0.976, 0.971, 0.979, 11.5)
    slow += _pair("b", 541.0, 438.0, 0.814, 0.789, 0.843, 13.2, timing_phase="slow")
    assert "; a slow phase: `b` timed outside the host's fast phase." in _section(slow)
    old = _pair("a", 456.0, 435.0, 0.976, 0.971, 0.979, 11.5)
    old += _pair("b", 444.0, 438.0, 0.95, 0.94, 0.96, 13.2, pair_lead_in=None)
    assert "; the timing: `b` predates the lead-in fix" in _section(old)
    one = _pair("a", 456.0, 435.0, 0.976, 0.971, 0.979, 11.5)
    assert _section(one) == ""  # one sweep: nothing to set side by side


def test_a_cause_is_claimed_only_where_the_rows_carry_it():
    a = _pair("a", 456.0, 435.0, 0.976, 0.971, 0.979, 13.2)
    # a slow phase on the higher side explains nothing of the lower one
    hi_slow = [a[0], {**a[1], "timing_phase": "slow"}]
    hi_slow += _pair("b", 541.0, 438.0, 0.814, 0.789, 0.843, 13.2)
    text = _section(hi_slow)
    assert "a slow phase" not in text and "; not its device time: the compiled step 1.19x" in text
    # the host's level fell: no level phrase, the step still host-bound
    fell = a + _pair("b", 541.0, 438.0, 0.814, 0.789, 0.843, 11.5)
    assert "fast level" not in _section(
        fell
    ) and "not its device time: the compiled step" in _section(fell)
    # no GPU work on record: said, not 'the same'
    bare = [{k: v for k, v in r.items() if k != "gpu_us_per_step"} for r in a]
    bare += [{k: v for k, v in r.items() if k != "gpu_us_per_step"}
             for r in _pair("b", 541.0, 438.0, 0.814, 0.789, 0.843, 13.2)]  # fmt: skip
    assert "unexplained by the rows (GPU work not recorded" in _section(bare)
    # one measure for both: a's trace busy time is not set against b's device time
    mixed = [dict({k: v for k, v in r.items() if k != "gpu_us_per_step"},
                  device_time_us=r["gpu_us_per_step"]) for r in a]  # fmt: skip
    mixed += _pair("b", 541.0, 470.0, 0.814, 0.789, 0.843, 13.2)
    assert "the device" not in _section(mixed) and "GPU work not recorded" in _section(mixed)
    # a small rise that cannot carry the step's 85 µs: not the device
    small = a + _pair("b", 541.0, 447.0, 0.814, 0.789, 0.843, 13.2)
    assert "the device" not in _section(small) and "the host" in _section(small)
    # apart by their intervals, but within 1% of each other: agreeing
    near = a + _pair("b", 460.0, 435.0, 0.969, 0.965, 0.970, 13.2)
    assert "1 agree" in _section(near)
