"""PyTorch's HUD, as an anchor beside the suite's own figures: published geomean speedups of
a benchmark suite, each with its suite, GPU, dtype, pass and date, and where it was read.

The HUD's harness (torch's ``benchmarks/dynamo``) times 30 interleaved repeats and reports the
ratio of medians, without an interval, at each model's own batch size: closest to the suite's
``throughput`` regime. Its ``cudagraphs`` is Inductor with CUDA graphs (``reduce-overhead``
here). Other models, another machine and another torch: an anchor, never a baseline. Add a
figure as one more line of ``HUD``, with where it was published.
"""

from __future__ import annotations

import pandas as pd

ISSUE = "pytorch/pytorch#178489 (the HUD's figures as transcribed there)"
HOW = "30 interleaved repeats, ratio of medians, no interval; each model's own batch size"
# suite, the HUD's mode, the mode here, geomean speedup, GPU, dtype and pass, date, source
HUD = [
    ("Hugging Face", "default", "default", 1.90, "H100", "bf16 inference", "2026-03", ISSUE),
    ("Hugging Face", "cudagraphs", "reduce-overhead", 2.39, "H100", "bf16 inference", "2026-03",
     ISSUE),
]  # fmt: skip
COLUMNS = ["suite", "HUD mode", "mode", "geomean", "GPU", "dtype, pass", "date", "source"]


def anchors() -> pd.DataFrame:
    """The HUD's figures, one line each (numbers, not text)."""
    return pd.DataFrame(HUD, columns=COLUMNS)


def label(x) -> str:
    """'HUD Hugging Face default 1.90x (H100, bf16 inference, nightly 2026-03)'."""
    return (f"HUD {x['suite']} {x['HUD mode']} {x['geomean']:.2f}x "
            f"({x['GPU']}, {x['dtype, pass']}, nightly {x['date']})")  # fmt: skip


def table() -> pd.DataFrame:
    """The anchors as text, for a report or the terminal."""
    t = anchors()
    t["geomean"] = t["geomean"].map(lambda v: f"{v:.2f}x")
    t["mode"] = t["mode"].map(lambda m: f"≈ {m} here")
    return t.assign(harness=HOW)
