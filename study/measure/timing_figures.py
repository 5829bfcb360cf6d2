"""The row's timing figures from the rounds that ran in the host's fast phase, judged against one
level for the whole cell (study.measure.host_gauge): latency, the paired speedup and its interval, the
phase the figures come from, and the host's level for the next cells."""

from __future__ import annotations

import statistics

from study.measure import host_gauge, timing
from study.observe import stats


def settle(cell) -> None:
    """The row's latency and paired figures from the rounds that ran in the host's fast
    phase, judged against one level for the whole cell (study.measure.host_gauge): one story."""
    # Long: one decision, which rounds count (fast, slow, contended) and what the row says about it;
    # its cases read best together.
    row, t, ph, r = cell.row, cell.cfg.timing, cell.phases, cell.timed
    fast, slow = host_gauge.split(r.gauges, ph)
    size = len(r.chunks[0])  # samples a round adds (CUDA: one, the chunk's mean)
    enough = len(fast) >= min(host_gauge.MIN_FAST_PAIRS, timing.latency_rounds(t.calls))
    use = fast if enough else range(len(r.gauges))
    state = "fast" if enough else ("mixed" if fast else "slow")
    lat = timing.summarize([x for k in use for x in r.chunks[k]])
    gauges = [ph.readings[r.gauges[k]] for k in use]  # the host's speed in the kept rounds
    cell.timing_gauge_us = statistics.median(gauges) if gauges else None
    cell.eager_p90_us = None
    row.update(
        latency_median_us=lat["median"],
        latency_p10_us=lat["p10"],
        latency_p90_us=lat["p90"],
        latency_samples=lat["n"],
        latency_method=r.method,
    )
    if r.eager:
        eu, cu = [r.eager[k] for k in use], [r.compiled[k] for k in use]
        sp, lo, hi = stats.ratio_of_medians(eu, cu)
        cell.eager_p90_us = timing.summarize(eu)["p90"]
        row.update(
            eager_latency_paired_us=statistics.median(eu),
            compiled_latency_paired_us=statistics.median(cu),
            speedup_paired=sp,
            speedup_ci_low=lo,
            speedup_ci_high=hi,
            pairs=len(eu),
            pair_calls=cell.pair_calls,
            pair_lead_in=t.lead_in,
            pairs_fast=len(fast),
            pairs_slow=len(slow),
        )
        if len(slow) >= host_gauge.MIN_SLOW_PAIRS:
            row["speedup_paired_slow"] = stats.ratio_of_medians(
                [r.eager[k] for k in slow], [r.compiled[k] for k in slow]
            )[0]
        if len(fast) < t.pairs:
            cell.notes.append(
                f"only {len(fast)} of timing.pairs={t.pairs} pairs ran in the host's fast "
                f"phase (against the cell's final fast level; timing.max_s={t.max_s:g} s)"
                + ("" if enough else f": the figures use all {len(r.gauges)} rounds")
            )
    elif len(fast) * size < t.calls:
        cell.notes.append(
            f"only {len(fast)} of {len(r.gauges)} rounds ran in the host's fast phase "
            f"(timing.max_s={t.max_s:g} s)"
            + ("" if enough else f": the latency uses all {len(r.gauges)} rounds")
        )
    if state != "fast":
        cell.notes.append(
            "no timed round ran in the host's fast phase"
            if state == "slow"
            else "too few timed rounds ran in the host's fast phase"
        )
    if row.get("host_loaded"):
        state = "contended"
        cell.notes.append(
            "the host was contended while timing (others' CPU on the cell's cores): "
            "not a fast-phase figure"
        )
    if not ph.level_held():
        cell.notes.append(
            f"this host never held its fast phase: its gauge held {ph.held():.1f} us at best and "
            f"dipped to {ph.dip():.1f} us; rounds judged against the dip, so a slow phase is not "
            "called fast"
        )
    own = ph.own_level()
    row.update(
        gauge_held=ph.level_held(),
        timing_phase=state,
        phase_fast_share=len(fast) / len(r.gauges),
        gauge_fast_us=ph.level(),
        gauge_own_us=own,
        gauge_slow_us=ph.slow_level(),
        gauge_level_source=(
            "dip" if not ph.level_held() else "host" if ph.level() < own else "cell"
        ),
    )
    if state != "contended" and len(ph.readings) >= host_gauge.MIN_LEVEL_READINGS:
        dip = host_gauge.held_level(ph.readings, host_gauge.DIP)
        why = host_gauge.record_host_level(cell.levels, own, dip=dip)
        if why:
            cell.notes.append(why)
