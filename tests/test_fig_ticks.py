"""Figures whose axes must be readable: the CPU roofline's log axis over less than a decade,
and the targets plot's scale, on rows like the quickstart's."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import pandas as pd  # noqa: E402

from analysis.figures.roofline import roofline  # noqa: E402


def _quickstart():
    """The CPU quickstart's four cells: arithmetic intensity 60.2 and 64 FLOP/byte."""
    rows = []
    for v, b in (("naive", 278528), ("flash", 262144)):
        for m, lat in (("off", 600.0), ("default", 500.0)):
            rows.append({"source": "s", "run_id": f"compile={m},variant={v}", "variant": v,
                         "family": "attention", "compile": m, "device": "cpu", "dtype": "bf16",
                         "status": "ok", "flops": 16777216.0, "bytes_min": b,
                         "latency_median_us": lat})  # fmt: skip
    return {"runs": pd.DataFrame(rows)}


def test_cpu_roofline_x_ticks_are_plain_numbers_that_do_not_overlap():
    fig, _ = roofline(_quickstart())
    ax = fig.axes[0]
    fig.canvas.draw()
    r = fig.canvas.get_renderer()
    lo, hi = ax.get_xlim()
    shown = [t for t in ax.xaxis.get_major_ticks() + ax.xaxis.get_minor_ticks()
             if t.label1.get_visible() and t.label1.get_text() and lo <= t.get_loc() <= hi]  # fmt: skip
    texts = [t.label1.get_text() for t in shown]
    assert len(texts) >= 2, texts
    assert not any("10^" in x or "times" in x or "$" in x for x in texts), texts
    boxes = sorted((t.label1.get_window_extent(r) for t in shown), key=lambda b: b.x0)
    assert all(a.x1 < b.x0 for a, b in zip(boxes, boxes[1:], strict=False)), texts
