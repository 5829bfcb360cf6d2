"""Why a cell moved between two studies (``analysis.compare``'s ``why`` column): a real change
(its kernels, or its device time), the speedup's method, the lead-in fix, the host, or the
eager side. The first that applies is said; a cell that did not move gets none.
"""

from __future__ import annotations

import pandas as pd

from analysis.measures import column

DEVICE = 0.05  # device time moved by more than this: the kernels' own work changed


def causes(m: pd.DataFrame, moved: pd.Series, lat_moved: pd.Series | None = None) -> list[str]:
    """Why a cell's latency or speedup moved between A and B (blank where it did not), the first
    that applies: its kernels changed; its device time changed (real changes); device time
    unknown; the speedup's method changed (cross-process against paired); A's paired speedup
    predates the lead-in fix (no ``pair_lead_in``) and B's, with it, reads higher, while the
    per-call latency (``lat_moved``: past its threshold) held; the host (kernels unchanged, a
    device change too small to carry the latency, and a side timed outside the fast phase or
    host-bound); else the eager side moved, for a compiled cell whose own latency held, and
    otherwise it is unexplained.

    A device time moved only where the trace's GPU busy time a step (``gpu_us_per_step``, the
    kernels' own time) moved with it, when both sides record it: a CUDA-graph mode's device time
    is ``do_bench`` around a whole call, which a slow host stretches (v2 → v3: cuDNN under
    reduce-overhead read 158 → 112 µs so, its kernels 99.4 → 99.2 µs in the trace)."""
    if lat_moved is None:
        lat_moved = pd.Series(False, index=m.index)
    dev = device_ratio(m)
    kern = m["kernels"].fillna(0) != 0
    lead = (
        column(m, "pair_lead_in_a").isna()
        & column(m, "pair_lead_in_b").notna()
        & (m.get("sp_kind_a", pd.Series("", m.index)) == "paired")
        & (column(m, "sp_b") > column(m, "sp_a"))
    )
    dev_us = (column(m, "device_time_us_b") - column(m, "device_time_us_a")).abs()
    lat_us = (column(m, "latency_median_us_b") - column(m, "latency_median_us_a")).abs()
    out = []
    for i in range(len(m)):
        x = m.iloc[i]
        hb = bool(x.get("hbound_a")) or bool(x.get("hbound_b"))
        # a device change is the cause only where it carries the latency: a host-bound cell's
        # few µs of device time can move 20% while its latency moves 40 µs on the host
        carries = not hb or dev_us.iloc[i] >= 0.5 * lat_us.iloc[i]
        eager = str(x.get("compile")) == "off"
        if not bool(moved.iloc[i]):
            out.append("")
        elif bool(kern.iloc[i]):
            a, b = x["kernels_per_step_a"], x["kernels_per_step_b"]
            out.append(f"real: kernels per step {a:g} → {b:g}")
        elif dev.iloc[i] == dev.iloc[i] and abs(dev.iloc[i] - 1) > DEVICE and carries:
            out.append(f"real: device time {dev.iloc[i] - 1:+.0%}")
        elif dev.iloc[i] != dev.iloc[i] and not bool(lead.iloc[i]):
            out.append("unknown: kernels unchanged, device time not recorded on both sides")
        elif not eager and str(x.get("sp_kind_a")) != str(x.get("sp_kind_b")):
            out.append(f"method: A's speedup is {x.get('sp_kind_a')}, B's {x.get('sp_kind_b')}")
        elif bool(lead.iloc[i]) and not bool(lat_moved.iloc[i]):
            out.append("lead-in: A's paired timing had no lead-in call before each block")
        else:
            out.append(_rest(x, eager or bool(lat_moved.iloc[i])))
    return out


def device_ratio(m: pd.DataFrame) -> pd.Series:
    """Device time B/A, 1.0 where the trace's GPU busy time a step says its move is the host's
    (it did not move the same way by more than DEVICE: ``causes``), blank where unknown."""
    dev = column(m, "device_time_us_b") / column(m, "device_time_us_a")
    busy = column(m, "gpu_us_per_step_b") / column(m, "gpu_us_per_step_a")
    return dev.where(busy.isna() | ((busy - 1).abs().gt(DEVICE) & (busy > 1).eq(dev > 1)), 1.0)


def _bound_word(x: pd.Series, k: str) -> str:
    """'host-bound' where the side measured its host time (``host_us``); a row from before host
    timing only shows its latency over its device time, and is called that, not host-bound."""
    host = pd.to_numeric(pd.Series([x.get(f"host_us_{k}")]), errors="coerce").iloc[0]
    return "host-bound" if host == host and host > 0 else "latency over device time"


def _rest(x: pd.Series, own: bool) -> str:
    """Kernels and device time unchanged: the host where a side was timed outside the fast
    phase or measured host-bound ('not the device' where only latency over device time says
    so, no host time measured); else unexplained where the cell's ``own`` latency moved (an eager cell,
    or a compiled one whose per-call latency moved), or its eager side."""
    where = [f"{s} {x.get(f'timing_phase_{k}')}" for s, k in (("A", "a"), ("B", "b"))
             if str(x.get(f"timing_phase_{k}") or "fast") not in ("fast", "nan")]  # fmt: skip
    where += [f"{s} {_bound_word(x, k)}" for s, k in (("A", "a"), ("B", "b"))
              if x.get(f"hbound_{k}")]  # fmt: skip
    if where:
        # no host time measured on either side and both fast: latency alone says nothing of
        # the host, so the cause is named by what it is not
        first = "not the device" if all("latency over" in w for w in where) else "host"
        return f"{first}: kernels unchanged, the device time does not carry it ({', '.join(where)})"
    if own:
        return "unexplained: kernels and device time unchanged, GPU-bound, fast"
    return ("eager's side: this cell's kernels, device time and host-boundness are unchanged "
            "(see its eager cell)")  # fmt: skip
