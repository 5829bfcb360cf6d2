"""The report's figures, one question each. Every function takes the loaded frames of ONE
source (``analysis.load``) and returns ``(figure, sentence)`` or raises ``Skip(reason)``; the
sentence states what the figure shows, in numbers taken from the rows it plots. The functions
live in this folder's modules, split by question; the shared look is ``analysis/style.py``.
Seaborn/matplotlib only; never torch.
"""

from __future__ import annotations

from analysis.figures.compile import kernel_diff, payback
from analysis.figures.flex import flex
from analysis.figures.host import cpu_gpu
from analysis.figures.host_speed import host_speed
from analysis.figures.kernels import blog_grid, kernel_classes, top_kernels
from analysis.figures.latency import latency, speedup
from analysis.figures.layers import where_time_goes
from analysis.figures.ncu import ncu_occupancy
from analysis.figures.regional import regional
from analysis.figures.roofline import roofline
from analysis.figures.scaling import scaling
from analysis.figures.training import training
from analysis.measures import MODES
from analysis.style import (
    DPI,
    MAX_BARS,
    MAX_PX,
    Skip,
    bar_labels,
    cell_labels,
    ok,
    per_cell,
    shape_sweeps,
)

# (file name, heading, function); the heading is the question in a few words.
FIGURES = [
    ("kernels_per_forward", "Kernels per forward and latency (the blog's table)", blog_grid),
    ("latency", "How long does one call take?", latency),
    ("speedup", "How much faster than eager?", speedup),
    ("kernel_diff", "What did compiling change in the kernels?", kernel_diff),
    ("kernel_classes", "Which kinds of kernels?", kernel_classes),
    ("top_kernels", "Where does the device time go?", top_kernels),
    ("cpu_vs_gpu", "Does the GPU wait on the host?", cpu_gpu),
    ("host_speed", "At what host speed does compiling stop paying?", host_speed),
    ("payback", "When does compiling pay for itself?", payback),
    ("regional", "Compile time against speedup, whole model against by region", regional),
    ("roofline", "How close to the ceiling?", roofline),
    ("scaling", "How does it scale with shape?", scaling),
    ("ncu", "Nsight Compute: occupancy and throughput", ncu_occupancy),
    ("flex", "FlexAttention against flash and cuDNN, per mask", flex),
    ("targets", "Where does a compiled call's time go, layer by layer?", where_time_goes),
]
# Headings that depend on the rows: a CPU-only source has no GPU to wait on the host.
CPU_HEADINGS = {"cpu_vs_gpu": "How much of a CPU step is kernel work?"}


def heading(key: str, name: str, runs) -> str:
    """The figure's heading for these rows: ``CPU_HEADINGS`` where no row ran on CUDA."""
    cpu_only = "device" in runs and len(runs) and not (runs["device"] == "cuda").any()
    return CPU_HEADINGS.get(key, name) if cpu_only else name


# Figures over every source at once (a question that spans sweeps, e.g. fwd against fwd_bwd).
ACROSS = [
    ("training", "Does compile pay less once the backward runs?", training),
]

__all__ = [
    "DPI",
    "ACROSS",
    "FIGURES",
    "MAX_BARS",
    "MAX_PX",
    "MODES",
    "Skip",
    "bar_labels",
    "cell_labels",
    "heading",
    "ok",
    "per_cell",
    "shape_sweeps",
]
