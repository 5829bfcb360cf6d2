"""Why a slower compiled cell is slower: the host, the device, or the timing of an older study.
Used by the reference Findings' compile table (``reference.findings.speed.forward``, which says
"not its device time" for 'the host': its rows measure no host time) and by the latency figure.

The device side is the trace's GPU busy time a step where both sides have it
(``analysis.pairs.device_pair``): a CUDA-graph mode's ``device_time_us`` is do_bench around
whole calls, which on a host-bound call times the host. The latencies are the ones the verdict
comes from (``latencies``): the paired blocks' for a paired row, both in one process.
"""

from __future__ import annotations

from analysis.measures import GRAPHS, number
from analysis.pairs import SHAPE_COLS, device_pair, host_bound, one_core, with_eager

# a slower cell's device time that rose by at least this share of the latency it added
# counts as a cause beside the host (CUDA graphs' copies)
DEVICE_SHARE = 0.25
# ... and by more than this, relative: two profiled runs' GPU busy time of the same kernels
# differ by about that much (dynamo_eager runs eager's kernels: +1.2% on cuDNN's 58 µs)
DEVICE_NOISE = 0.02
# device time "unchanged", for naming a slowdown the host's alone: within 5% of eager's
SAME_DEVICE = 0.05


def latencies(x: dict) -> tuple[float, float]:
    """(compiled, eager) µs a call behind the verdict: for a paired row the paired blocks'
    (eager ``E`` as timed beside it, compiled ``E / speedup``), else the two cells' per-call
    medians."""
    sp, e = number(x.get("sp")), number(x.get("eager_latency_paired_us"))
    if x.get("sp_kind") == "paired" and sp == sp and sp > 0 and e == e:
        return e / sp, e
    return number(x.get("latency_median_us")), number(x.get("eager_lat"))


def _lead_in(x: dict) -> bool:
    """Timed with the lead-in fix: at least one untimed call before each block."""
    lead = number(x.get("pair_lead_in"))
    return lead == lead and lead > 0


def host_only(x: dict) -> bool:
    """As many kernels as eager, and a device time that moved by less than half the latency:
    what moved the latency moved on the host (a slower verdict names it). That holds where a
    side is host-bound, and for a GPU-bound cell timed with the lead-in fix (``pair_lead_in``)
    without CUDA graphs: back to back, the same kernels in the same device time leave only the
    GPU's idle time between them, the wait for the host (cuDNN's 58 µs call, compiled: about as
    long as the compiled wrapper's host side). A GPU-bound row made before the fix is not put
    down to the host: without the lead-in, such rows read low by the timing alone
    (``lead_in_artefact``)."""
    dev, edev = device_pair(x)
    lat, elat = latencies(x)
    if dev != dev or edev != edev or lat != lat or elat != elat:
        return False
    hb = bool(x.get("_hb")) or bool(x.get("eager_hb"))
    same = kernels_changed(x) is False
    return (hb or _gpu_bound_fixed(x)) and same and abs(dev - edev) < 0.5 * abs(lat - elat)


def kernels_changed(x: dict) -> bool | None:
    """Whether the compiled step launches another number of kernels than eager's; None where
    either count is missing (a row without a trace)."""
    a, b = number(x.get("kernels_per_step")), number(x.get("eager_kernels"))
    return None if a != a or b != b else a != b


def _gpu_bound_fixed(x: dict) -> bool:
    """Timed with the lead-in, and not replaying CUDA graphs (a replay's own launch can leave
    the GPU idle between calls without the host's Python in it): an idle GPU between the same
    kernels is then the wait for the host."""
    return _lead_in(x) and x.get("mode", x.get("compile")) not in GRAPHS


def slow_cause(x: dict) -> str:
    """Why a slower row is slower, in a few words: "v2's timing only" (``lead_in_artefact``),
    'the device' (its device time rose by more than DEVICE_NOISE and by at least DEVICE_SHARE
    of the latency it added; CUDA graphs' copies in a graph mode), 'the host' (host-bound on a
    side, or timed with the lead-in without CUDA graphs with eager's kernels, and the device
    time did not rise that much), or '' where the figures cannot say."""
    if lead_in_artefact(x):
        return "v2's timing only"
    dev, edev = device_pair(x)
    lat, elat = latencies(x)
    if dev != dev or edev != edev or lat != lat or elat != elat or lat <= elat:
        return ""
    if dev > edev * (1 + DEVICE_NOISE) and dev - edev >= DEVICE_SHARE * (lat - elat):
        mode = x.get("mode", x.get("compile"))
        return "the device" + (" (CUDA graphs' copies)" if mode in GRAPHS else "")
    # GPU-bound on both sides, only an idle GPU between the same kernels is the host's wait
    if bool(x.get("_hb")) or bool(x.get("eager_hb")):
        return "the host"
    if _gpu_bound_fixed(x) and kernels_changed(x) is False:
        return "the host"
    return ""


def lead_in_artefact(x: dict) -> bool:
    """A GPU-bound paired row made before the lead-in fix (no ``pair_lead_in``, or 0) with
    eager's kernels, device time and per-call latency (within 2%): its paired speedup reads low
    by the timing alone (v2's GPU-bound rows: a median 0.968x of their per-call ratio;
    reference.findings.audit)."""
    dev, edev = device_pair(x)
    lat, elat = number(x.get("latency_median_us")), number(x.get("eager_lat"))
    if dev != dev or edev != edev or lat != lat or elat != elat:
        return False
    return (
        x.get("sp_kind") == "paired"
        and not _lead_in(x)
        and not (bool(x.get("_hb")) or bool(x.get("eager_hb")))
        and x.get("kernels_per_step") == x.get("eager_kernels")
        and abs(dev / edev - 1) <= 0.02  # device_pair: graph replay, else the trace's GPU busy
        and abs(lat / elat - 1) <= 0.02  # per call, too, compiled runs as fast as eager
    )


def host_effects(runs) -> list[str]:
    """'variant · mode' (with the pass where it is not the forward, and the shape keys that
    vary among the variant's cells) of each compiled cell that is slower by its interval while
    it runs as many kernels as eager in eager's device time (within ``SAME_DEVICE``): slower
    through the host (``slow_cause``), not through its kernels. Left out: cells without an
    eager twin in the same source, pass and shape, and training rows not timed on one core
    (``timing_core``: with the threads spread, the backward ran on other cores in other
    phases). Rows as ``analysis.load`` gives them (one per cell, with ``source``)."""
    if runs.empty or "source" not in runs or not (runs["compile"] == "off").any():
        return []
    m = with_eager(runs.assign(**{"pass": runs.get("pass", "fwd")}))
    if m.empty:
        return []
    m["_hb"] = host_bound(m)
    m["_one"] = one_core(m)
    vary = [c for c in SHAPE_COLS if c in m and m.groupby("variant")[c].nunique().gt(1).any()]
    out = []
    for _, x in m.iterrows():
        x = x.to_dict()
        p = x.get("pass") or "fwd"
        spread = p != "fwd" and not x["_one"]
        if spread or not (x.get("sp_hi") == x.get("sp_hi") and x["sp_hi"] < 1.0):
            continue
        dev, edev = device_pair(x)
        same_dev = dev == dev and edev == edev and abs(dev - edev) <= SAME_DEVICE * edev
        if same_dev and kernels_changed(x) is False and slow_cause(x) == "the host":
            shape = ", ".join(
                f"{c}={number(x[c]):g}" for c in vary if number(x.get(c)) == number(x.get(c))
            )
            what = x["variant"] + ("" if p == "fwd" else f" {p}") + (f" ({shape})" if shape else "")
            out.append(f"{what} · {x['compile']}")
    return list(dict.fromkeys(out))
