"""Shared look of every figure: colours, labels, the size cap, titles that ask the question,
legends outside the data, and labels on the points that matter.

Rules: a compile mode keeps its colour everywhere (``MODE_COLORS``); kernel names are short
(full names stay in the CSV); a figure fits one screen (``MAX_PX`` at ``DPI``) with at most
``MAX_BARS`` bars per panel; its title is the question it answers; shapes sort as numbers.
"""

# Long: the shared look of every figure (helpers all fig_*.py use), in one place so that a mode
# keeps its colour everywhere.

from __future__ import annotations

import textwrap

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import seaborn as sns  # noqa: E402
from matplotlib.transforms import Bbox  # noqa: E402

from analysis.measures import MODES, order, sig  # noqa: E402
from study.rows.schema import SHAPE_KEYS  # noqa: E402

DPI = 130
MAX_PX = (2000, 1400)
MAX_IN = (MAX_PX[0] / DPI - 0.02, MAX_PX[1] / DPI - 0.02)  # 15.4 x 10.8 in
MAX_BARS = 40
_PAL = sns.color_palette("colorblind", 10)
# One colour a compile target (analysis.measures.MODES, from study.config.compile_targets):
# eager grey, then the palette in the targets' order, skipping its own grey (7).
MODE_COLORS = {
    "off": "#555555",
    **dict(zip(MODES[1:], [c for i, c in enumerate(_PAL) if i != 7], strict=False)),
}
CLASS_ORDER = [
    "gemm_cublas",
    "gemm_cutlass",
    "gemm_cpu",
    "triton_template",
    "triton_persistent_reduction",
    "triton_reduction",
    "triton_pointwise",
    "triton_other",
    "cpp_generated",
    "flash",
    "mem_efficient",
    "cudnn",
    "softmax",
    "aten_reduction",
    "aten_elementwise",
    "copy",
    "memset",
    "other",
]
CLASS_COLORS = dict(zip(CLASS_ORDER, sns.color_palette("tab20", len(CLASS_ORDER)), strict=True))
FAMILY_MARKERS = {"matmul": "s", "linear": "D", "mlp": "^", "attention": "o"}
sns.set_theme(style="whitegrid", context="notebook")
plt.rcParams["svg.hashsalt"] = "study"  # stable ids: rebuilt figures diff only where rows do


class Skip(Exception):
    """This figure cannot be drawn from these rows; the message says why."""


def need(df: pd.DataFrame, cols: list[str], what: str) -> pd.DataFrame:
    missing = [c for c in cols if c not in df or df[c].isna().all()]
    if df.empty or missing:
        raise Skip(f"{what}: no data in column(s) {', '.join(missing) or 'any'}")
    return df


def ok(runs: pd.DataFrame) -> pd.DataFrame:
    return runs[runs["status"] == "ok"].copy()


def modes_in(df: pd.DataFrame) -> list[str]:
    seen = set(df["compile"])
    return [m for m in MODES if m in seen] + sorted(m for m in seen if m not in MODES)


def bar_labels(g: pd.DataFrame) -> pd.Series:
    """variant (with its source when several), the pass when several, plus the shape keys that
    vary among rows that would otherwise share a label (same source, variant, compile mode)."""
    lab = g["variant"].astype(str)
    if "source" in g and g["source"].nunique() > 1:
        lab = g["source"].astype(str) + ":" + lab
    if "pass" in g and g["pass"].nunique() > 1:  # name the pass where it is not the forward
        p = g["pass"].fillna("fwd").astype(str)
        lab = lab + p.map(lambda x: "" if x == "fwd" else f" {x}")
    key = lab + " / " + g["compile"].astype(str)
    extra = pd.Series("", index=g.index, dtype=object)
    dup = key.duplicated(keep=False)
    for c in SHAPE_KEYS:
        if c not in g or not dup.any():
            continue
        varies = g.loc[dup, c].groupby(key[dup]).transform("nunique") > 1
        rows = varies[varies].index
        extra.loc[rows] += [f" {c}={'?' if pd.isna(v) else int(v)}" for v in g.loc[rows, c]]
    return lab + extra


def cell_labels(runs: pd.DataFrame) -> pd.Series:
    """One readable, unique label per cell: variant[ shape] · mode."""
    return bar_labels(runs) + " · " + runs["compile"].astype(str)


def label_kernels(k: pd.DataFrame, runs: pd.DataFrame) -> pd.DataFrame:
    lab = runs.assign(cell=cell_labels(runs), label=bar_labels(runs))
    return k.merge(lab[["source", "run_id", "cell", "label"]], on=["source", "run_id"])


def shape_sweeps(runs: pd.DataFrame) -> list[str]:
    """Shape keys that take 3+ values within one (source, variant, compile) group."""
    return [
        c
        for c in SHAPE_KEYS
        if c in runs
        and len(runs)
        and runs.groupby(["source", "variant", "compile"])[c].nunique().max() > 2
    ]


def per_cell(runs: pd.DataFrame) -> tuple[pd.DataFrame, int]:
    """The cells a one-bar-per-cell figure draws, in reading order: a shape sweep (3+ values
    of a shape key for one source, variant and mode) keeps its two ends; the points between
    are in the scaling figure. Returns the rows kept and how many were left out."""
    keep = pd.Series(True, index=runs.index)
    for c in shape_sweeps(runs):
        grp = runs.groupby(["source", "variant", "compile"])[c]
        lo, hi = grp.transform("min"), grp.transform("max")
        n = grp.transform("nunique")
        keep &= (n <= 2) | runs[c].isna() | (runs[c] == lo) | (runs[c] == hi)
    return order(runs[keep].copy()), int((~keep).sum())


def left_out(n: int) -> str:
    return (
        f"; {n} cells between the ends of a shape sweep are in the scaling figure only" if n else ""
    )


def context(runs: pd.DataFrame, width_in: float = 12.0) -> str:
    """Device, dtype, shapes and torch version of the rows a figure draws (one or two lines)."""

    def uniq(c):
        return ", ".join(sorted({str(x) for x in runs[c].dropna().unique()})) if c in runs else "?"

    shapes = []
    for fam, g in runs.groupby("family"):
        cols = {
            "matmul": ["n"],
            "linear": ["batch", "in_features", "out_features"],
            "mlp": ["batch", "seq_len", "dim", "hidden"],
            "attention": ["batch", "heads", "seq_len", "head_dim"],
        }.get(fam, [])
        parts = []
        for c in cols:
            vals = sorted({int(v) for v in g[c].dropna()}) if c in g else []
            if vals:
                parts.append(f"{c}={vals[0]}" if len(vals) == 1 else f"{c}={vals[0]}..{vals[-1]}")
        shapes.append(f"{fam}({' '.join(parts)})")
    src = ""
    if "source" in runs and runs["source"].nunique() == 1:
        src = f"source {runs['source'].iloc[0]} | "
    head = f"{src}{uniq('device_name')} | {uniq('dtype')} | torch {uniq('torch_version')}"
    text = head + " | " + "; ".join(shapes)
    return "\n".join(textwrap.wrap(text, max(60, int(width_in * 14)))[:4])


def figure(nrows=1, ncols=1, w=8.0, h=5.0, **kw):
    """A figure no larger than MAX_PX at DPI; axes always a 2-D array."""
    w, h = min(w, MAX_IN[0]), min(h, MAX_IN[1])
    return plt.subplots(nrows, ncols, figsize=(w, h), squeeze=False, **kw)


def finish(fig, question: str, ctx: str = "", right_in: float = 0.0, bottom_in: float = 0.0):
    """Title = the question; below it, in small type, what the rows are. ``right_in`` inches
    on the right are kept free for a legend outside the axes."""
    fw, fh = fig.get_figwidth(), fig.get_figheight()
    q = textwrap.wrap(question, max(30, int(fw * 8.2)))  # 12 pt bold: about 8 characters an inch
    # fig.text, not suptitle: tight_layout would make room for a suptitle a second time
    fig.text(0.01, 1 - 0.08 / fh, "\n".join(q), fontsize=12, fontweight="bold", ha="left", va="top")
    q_in = 0.22 * len(q)
    lines = ctx.count("\n") + 1 if ctx else 0
    if ctx:
        fig.text(
            0.01, 1 - (0.14 + q_in) / fh, ctx, fontsize=8, va="top", ha="left", color="#444444"
        )
    top = 1 - (0.23 + q_in + 0.16 * lines) / fh
    fig.tight_layout(rect=(0, bottom_in / fh, 1 - right_in / fw, top))


def save(fig, stem) -> None:
    """``fig`` as ``stem``.png (at DPI) and ``stem``.svg (no date, so the same rows give the same
    file), then closed."""
    fig.savefig(f"{stem}.png", dpi=DPI)
    fig.savefig(f"{stem}.svg", metadata={"Date": None})
    plt.close(fig)


def legend_right(fig, handles, labels, title: str | None = None, fontsize=8):
    """A legend in the right margin, outside every axes (never over data)."""
    return fig.legend(
        handles,
        labels,
        title=title,
        loc="center right",
        fontsize=fontsize,
        title_fontsize=fontsize,
        frameon=False,
        bbox_to_anchor=(1.0, 0.5),
    )


def legend_width(labels, fontsize=8) -> float:
    """Inches a right-hand legend with these labels needs."""
    longest = max((len(str(x)) for x in labels), default=8)
    return min(3.6, 0.45 + 0.0085 * fontsize * longest)


def mode_handles(modes):
    return [plt.Rectangle((0, 0), 1, 1, color=MODE_COLORS.get(m, "black")) for m in modes]


def log_colorbar(ax, base: float, ticks, fmt, label: str) -> None:
    """Label a heatmap's colour bar (colours are log_base of the values) in the values."""
    cb = ax.collections[0].colorbar if ax.collections else None
    if cb is None:
        return
    lo, hi = cb.vmin, cb.vmax
    keep = [t for t in ticks if lo - 1e-9 <= np.log(t) / np.log(base) <= hi + 1e-9]
    while len(keep) > 7:  # every other tick, keeping 1 (the middle of a diverging scale)
        keep = [t for i, t in enumerate(keep) if (i - keep.index(1) if 1 in keep else i) % 2 == 0]
    cb.set_ticks([np.log(t) / np.log(base) for t in keep], labels=[fmt(t) for t in keep])
    cb.ax.tick_params(labelsize=8)
    cb.set_label(label, fontsize=9)


def readable_log(ax, axis: str = "x") -> None:
    """A log axis labelled in plain numbers at 1, 2 and 5 per decade, minor ticks unlabelled: a
    range under a decade otherwise gets a crowd of minor labels that run into each other (the
    CPU roofline's '3.125×10¹3.15×10¹...')."""
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    a = ax.xaxis if axis == "x" else ax.yaxis
    a.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0), numticks=15))
    a.set_major_formatter(FuncFormatter(lambda v, _: sig(v, 2)))
    a.set_minor_formatter(NullFormatter())


def log_if_wide(ax, values, axis="y", ratio=50):
    v = pd.Series(values, dtype=float).dropna()
    v = v[v > 0]
    if len(v) and v.max() / v.min() > ratio:
        (ax.set_yscale if axis == "y" else ax.set_xscale)("log")
        return True
    return False


def chunks(items: list, size: int) -> list[list]:
    """Split a list into near-equal pieces of at most ``size``."""
    if not items:
        return []
    n = int(np.ceil(len(items) / size))
    step = int(np.ceil(len(items) / n))
    return [items[i : i + step] for i in range(0, len(items), step)]


_OFFSETS = [(6, 5, "left", "bottom"), (6, -5, "left", "top"), (-6, 5, "right", "bottom"),
            (-6, -5, "right", "top"), (8, 0, "left", "center"), (-8, 0, "right", "center"),
            (0, 9, "center", "bottom"), (0, -9, "center", "top")]  # fmt: skip


def label_points(ax, x, y, labels, priority=None, max_labels=14, fontsize=7) -> int:
    """Label points without covering each other, other points or the axes' edge; the most
    important first (``priority``, high first). Points drawn on top of each other share one
    label ("a, b +2"). Call after the layout is final. Returns how many labels it placed."""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    labels = [str(s) for s in labels]
    if not len(x):
        return 0
    pr = np.zeros(len(x)) if priority is None else np.asarray(priority, dtype=float)
    pr = np.nan_to_num(pr, nan=-np.inf)
    fig = ax.figure
    fig.canvas.draw()
    rend = fig.canvas.get_renderer()
    box = ax.get_window_extent(rend)
    pts = ax.transData.transform(np.c_[x, y])
    groups: list[list[int]] = []  # points within 4 px of each other get one label
    for i in np.argsort(-pr, kind="stable"):
        for g in groups:
            if np.hypot(*(pts[g[0]] - pts[i])) < 4:
                g.append(i)
                break
        else:
            groups.append([i])
    dots = [Bbox.from_extents(px - 3, py - 3, px + 3, py + 3) for px, py in pts]
    placed: list[Bbox] = []
    done = 0
    for g in groups:
        i = g[0]
        if done >= max_labels:
            break
        if not (np.isfinite(pts[i]).all() and box.contains(*pts[i])):
            continue
        text = ", ".join(labels[j] for j in g[:2]) + (f" +{len(g) - 2}" if len(g) > 2 else "")
        for dx, dy, ha, va in _OFFSETS:
            t = ax.annotate(text, (x[i], y[i]), xytext=(dx, dy), textcoords="offset points",
                            ha=ha, va=va, fontsize=fontsize, color="#222222")  # fmt: skip
            bb = t.get_window_extent(rend).expanded(1.04, 1.1)
            inside = box.contains(bb.x0, bb.y0) and box.contains(bb.x1, bb.y1)
            clash = any(bb.overlaps(b) for b in placed) or any(
                bb.overlaps(d) for j, d in enumerate(dots) if j not in g
            )
            if inside and not clash:
                placed.append(bb)
                done += 1
                break
            t.remove()
    return done


def fit_text(ax, x, y, text: str, suffix: str = "", **kw):
    """Write ``text + suffix`` at (x, y), shortening ``text`` with '…' until it stays inside
    the axes. Call after the layout is final (and the figure drawn once)."""
    rend = ax.figure.canvas.get_renderer()
    box = ax.get_window_extent(rend)
    for n in range(len(text), 0, -1):
        t = ax.text(x, y, (text if n == len(text) else text[: n - 1] + "…") + suffix, **kw)
        bb = t.get_window_extent(rend)
        if bb.x0 >= box.x0 and bb.x1 <= box.x1:
            return t
        t.remove()
    return None


def marker_legend(modes, fams):
    """Handles and names for 'colour = compile mode, marker = family' (families only when
    the figure has more than one)."""
    from matplotlib.lines import Line2D

    handles = [Line2D([], [], color=MODE_COLORS.get(m, "black"), marker="o", ls="") for m in modes]
    names = list(modes)
    if len(fams) > 1:
        handles += [
            Line2D([], [], color="grey", marker=FAMILY_MARKERS.get(f, "o"), ls="") for f in fams
        ]
        names += list(fams)
    return handles, names
