"""The report's figures. Each function takes the loaded frames and returns
``(figure, sentence)`` or raises ``Skip(reason)``; the sentence states what the figure shows,
in numbers taken from the rows it plots. Seaborn/matplotlib only; never torch.

Rules: a compile mode keeps its colour everywhere (``MODE_COLORS``); kernel names are short
(full names stay in the CSV); log scales where values span decades; every label sits on its
own tick or legend entry, and figure sizes grow with the number of cells, so nothing overlaps.
"""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import seaborn as sns  # noqa: E402

from study.schema import SHAPE_KEYS  # noqa: E402

MODES = ["off", "default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs"]
_PAL = sns.color_palette("colorblind", 8)
MODE_COLORS = {
    "off": "#555555",
    "default": _PAL[0],
    "reduce-overhead": _PAL[1],
    "max-autotune": _PAL[2],
    "max-autotune-no-cudagraphs": _PAL[3],
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
    return [m for m in MODES if m in set(df["compile"])]


def cell_labels(runs: pd.DataFrame) -> pd.Series:
    """One readable, unique label per run: [source:]variant[ shape=..] / compile."""
    return _bar_labels(runs) + " / " + runs["compile"].astype(str)


def label_kernels(k: pd.DataFrame, runs: pd.DataFrame) -> pd.DataFrame:
    lab = runs.assign(cell=cell_labels(runs))[["source", "run_id", "cell"]]
    return k.merge(lab, on=["source", "run_id"])


def title(runs: pd.DataFrame, width: float = 12.0) -> str:
    """Device, dtype, shapes and torch version of the rows a figure draws."""

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
    import textwrap

    head = f"{uniq('device_name')} | {uniq('dtype')} | torch {uniq('torch_version')}"
    return head + "\n" + "\n".join(textwrap.wrap("; ".join(shapes), max(40, int(width * 10))))


def _suptitle(fig, text: str) -> None:
    fig.suptitle(text, fontsize=9)
    lines = text.count("\n") + 1
    fig.tight_layout(rect=(0, 0, 1, 1 - (0.18 * lines + 0.1) / fig.get_figheight()))


def _scatter_modes(ax, r: pd.DataFrame, x: str, y: str) -> None:
    """One point per cell: colour = compile mode, marker = family (same in every figure)."""
    for m, g in r.groupby("compile"):
        for fam, gf in g.groupby("family"):
            ax.scatter(
                gf[x],
                gf[y],
                color=MODE_COLORS.get(m),
                marker=FAMILY_MARKERS.get(fam, "o"),
                s=48,
                label=f"{m} · {fam}",
                edgecolor="black",
                linewidth=0.4,
            )


def _log_if_wide(ax, values, axis="y"):
    v = pd.Series(values).dropna()
    v = v[v > 0]
    if len(v) and v.max() / v.min() > 50:
        (ax.set_yscale if axis == "y" else ax.set_xscale)("log")


def _bar_labels(g: pd.DataFrame) -> pd.Series:
    """variant (with its source when several), plus the shape keys that vary among the rows
    that would otherwise share a label (same source, variant and compile mode)."""
    lab = g["variant"].astype(str)
    if g["source"].nunique() > 1:
        lab = g["source"].astype(str) + ":" + lab
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
    """The cells a one-bar-per-cell figure draws: a shape sweep (3+ values of a shape key for
    one source, variant and compile mode) keeps its two ends; the points between are in the
    scaling figure. Returns the rows kept and how many were left out."""
    keep = pd.Series(True, index=runs.index)
    for c in shape_sweeps(runs):
        grp = runs.groupby(["source", "variant", "compile"])[c]
        lo, hi = grp.transform("min"), grp.transform("max")
        n = grp.transform("nunique")
        keep &= (n <= 2) | runs[c].isna() | (runs[c] == lo) | (runs[c] == hi)
    return runs[keep].copy(), int((~keep).sum())


def _left_out(n: int) -> str:
    return (
        f". {n} cells between the ends of a shape sweep are drawn in the scaling figure only"
        if n
        else ""
    )


def latency(d) -> tuple:
    r, dropped = per_cell(need(ok(d["runs"]), ["latency_median_us"], "latency"))
    r = r.assign(label=_bar_labels(r)).drop_duplicates(["label", "compile"])
    fams = list(dict.fromkeys(r["family"]))
    modes = modes_in(r)
    widths = [
        max(
            2.5,
            0.22 * len(modes) * r[r["family"] == f]["label"].nunique()
            + 0.25 * r[r["family"] == f]["label"].nunique()
            + 1.2,
        )
        for f in fams
    ]
    fig, axes = plt.subplots(
        1,
        len(fams),
        figsize=(sum(widths) + 1.5, 6),
        squeeze=False,
        gridspec_kw={"width_ratios": widths},
    )
    for ax, fam in zip(axes[0], fams, strict=True):
        g = r[r["family"] == fam]
        variants = list(dict.fromkeys(g["label"]))
        w = 0.8 / max(1, len(modes))
        for j, m in enumerate(modes):
            gm = g[g["compile"] == m].set_index("label").reindex(variants)
            x = np.arange(len(variants)) + (j - (len(modes) - 1) / 2) * w
            y = gm["latency_median_us"].to_numpy(dtype=float)
            lo = y - gm["latency_p10_us"].to_numpy(dtype=float)
            hi = gm["latency_p90_us"].to_numpy(dtype=float) - y
            ax.bar(x, y, w, color=MODE_COLORS[m], label=m)
            ax.errorbar(
                x,
                y,
                yerr=[np.nan_to_num(lo), np.nan_to_num(hi)],
                fmt="none",
                ecolor="black",
                elinewidth=0.8,
                capsize=2,
            )
        ax.set_xticks(np.arange(len(variants)), variants, rotation=90, fontsize=8)
        ax.set_title(fam)
        ax.set_ylabel("per-call latency, µs\n(median, p10–p90)")
        _log_if_wide(ax, g["latency_median_us"])
    handles = [plt.Rectangle((0, 0), 1, 1, color=MODE_COLORS[m]) for m in modes]
    fig.legend(
        handles, modes, title="compile", loc="upper right", bbox_to_anchor=(1.0, 0.88), fontsize=8
    )
    fig.suptitle(title(r, fig.get_figwidth()), fontsize=9)
    fig.tight_layout(rect=(0, 0, 0.88, 0.93))
    lo, hi = r.loc[r["latency_median_us"].idxmin()], r.loc[r["latency_median_us"].idxmax()]
    s = (
        f"Per-call latency of {len(r)} ok cells: fastest {lo['variant']}/{lo['compile']} at "
        f"{lo['latency_median_us']:.1f} µs, slowest {hi['variant']}/{hi['compile']} at {hi['latency_median_us']:.1f} µs"
        f"{_left_out(dropped)}."
    )
    return fig, s


def speedup(d) -> tuple:
    r = need(ok(d["runs"]), ["speedup"], "speedup")
    r = r[(r["compile"] != "off") & r["speedup"].notna()]
    if r.empty:
        raise Skip("speedup: no compiled cell with an ok eager baseline in the same sweep")
    r = r.assign(cell=_bar_labels(r))
    piv = r.pivot_table(index="cell", columns="compile", values="speedup", aggfunc="first")
    piv = piv[[m for m in MODES if m in piv.columns]]
    fig, ax = plt.subplots(figsize=(1.6 * len(piv.columns) + 3, 0.45 * len(piv) + 2))
    sns.heatmap(
        np.log2(piv),
        annot=piv.map(lambda v: f"{v:.2f}x" if v == v else ""),
        fmt="",
        center=0,
        cmap="RdBu",
        cbar_kws={"label": "log2(speedup)", "shrink": 0.8},
        ax=ax,
        annot_kws={"fontsize": 8},
    )
    ax.set_xlabel("compile mode")
    ax.set_ylabel("")
    _suptitle(fig, title(r, fig.get_figwidth()))
    best = r.loc[r["speedup"].idxmax()]
    worst = r.loc[r["speedup"].idxmin()]
    s = (
        f"Speedup over eager (latency ratio): best {best['cell']} / {best['compile']} {best['speedup']:.2f}x, "
        f"worst {worst['cell']} / {worst['compile']} {worst['speedup']:.2f}x."
    )
    return fig, s


def kernel_classes(d) -> tuple:
    k = need(d["kernels"], ["kernel_class", "calls_per_step"], "kernels per forward")
    r, dropped = per_cell(ok(d["runs"]))
    k = label_kernels(k, r)
    if k.empty:
        raise Skip("kernels per forward: no kernels for ok cells")
    piv = k.pivot_table(
        index="cell", columns="kernel_class", values="calls_per_step", aggfunc="sum"
    ).fillna(0)
    piv = piv[[c for c in CLASS_ORDER if c in piv.columns]]
    piv = piv.loc[piv.sum(axis=1).sort_values().index]
    fig, ax = plt.subplots(figsize=(9, 0.35 * len(piv) + 2.2))
    left = np.zeros(len(piv))
    for c in piv.columns:
        ax.barh(piv.index, piv[c], left=left, color=CLASS_COLORS[c], label=c)
        left += piv[c].to_numpy()
    for y, tot in enumerate(left):
        ax.text(tot + 0.2, y, f"{tot:g}", va="center", fontsize=8)
    ax.set_ylim(-0.7, len(piv) - 0.3)  # the default 5% margin is rows of blank with many cells
    ax.set_xlabel("kernels per forward (per profiled step)")
    ax.legend(fontsize=7, loc="lower right", ncol=2)
    _suptitle(fig, title(r, fig.get_figwidth()))
    most = piv.sum(axis=1).idxmax()
    s = (
        f"Kernels per forward by kernel class: from {left.min():g} to {left.max():g} "
        f"({most} launches the most){_left_out(dropped)}."
    )
    return fig, s


def cpu_gpu(d) -> tuple:
    r = need(ok(d["runs"]), ["cpu_us_per_step", "gpu_us_per_step"], "CPU vs GPU")
    r, dropped = per_cell(r.dropna(subset=["cpu_us_per_step", "gpu_us_per_step"]))
    r = r.assign(cell=cell_labels(r))
    if r.empty:
        raise Skip("CPU vs GPU: no profiled ok cell")
    r = r.sort_values("gpu_us_per_step")
    fig, ax = plt.subplots(figsize=(9, 0.4 * len(r) + 2))
    y = np.arange(len(r))
    ax.barh(
        y - 0.2,
        r["cpu_us_per_step"],
        0.4,
        color="#d95f02",
        label="CPU (dispatch + launch) per step",
    )
    ax.barh(y + 0.2, r["gpu_us_per_step"], 0.4, color="#1b9e77", label="device busy per step")
    bound = r["cpu_us_per_step"] > r["gpu_us_per_step"]
    ax.set_yticks(
        y,
        [f"{c}  {'◀ CPU-bound' if b else ''}" for c, b in zip(r["cell"], bound, strict=True)],
        fontsize=8,
    )
    ax.set_xlabel("µs per profiled step")
    ax.set_ylim(-0.7, len(r) - 0.3)
    _log_if_wide(ax, pd.concat([r["cpu_us_per_step"], r["gpu_us_per_step"]]), axis="x")
    ax.legend(fontsize=8, loc="lower right")
    _suptitle(fig, title(r, fig.get_figwidth()))
    s = (
        f"CPU time against device time per step: {int(bound.sum())} of {len(r)} cells are CPU-bound "
        f"(CPU time above device time under the profiler){_left_out(dropped)}."
    )
    return fig, s


def top_kernels(d, n: int = 5) -> tuple:
    k = need(d["kernels"], ["us_per_step", "kernel_short"], "top kernels")
    r, dropped = per_cell(ok(d["runs"]))
    k = label_kernels(k, r)
    if k.empty:
        raise Skip("top kernels: no kernels for ok cells")
    cells = list(dict.fromkeys(zip(k["source"], k["run_id"], strict=True)))
    ncols = 3 if len(cells) > 2 else len(cells)
    nrows = int(np.ceil(len(cells) / ncols))
    fig, axes = plt.subplots(nrows, ncols, figsize=(6.2 * ncols, 2.3 * nrows + 0.8), squeeze=False)
    for ax in axes.flat[len(cells) :]:
        ax.axis("off")
    for ax, (src, rid) in zip(axes.flat, cells, strict=False):
        g = k[(k["source"] == src) & (k["run_id"] == rid)].sort_values(
            "us_per_step", ascending=False
        )
        top = g.head(n)
        rest = g.iloc[n:]["us_per_step"].sum()
        names = list(top["kernel_short"].str.slice(0, 40)) + (
            [f"rest ({len(g) - n})"] if len(g) > n else []
        )
        vals = list(top["us_per_step"]) + ([rest] if len(g) > n else [])
        colors = [CLASS_COLORS.get(c, "grey") for c in top["kernel_class"]] + (
            ["#bbbbbb"] if len(g) > n else []
        )
        ax.barh(range(len(vals))[::-1], vals, color=colors)
        ax.set_yticks(range(len(vals))[::-1], names, fontsize=7)
        ax.set_title(g["cell"].iloc[0], fontsize=9)
        ax.tick_params(axis="x", labelsize=7)
        ax.set_xlabel("µs per step", fontsize=7)
    _suptitle(
        fig,
        title(r, fig.get_figwidth())
        + f"\ntop {n} kernels per cell by device time (colour = kernel class)",
    )
    dom = k.loc[k.groupby(["source", "run_id"])["us_per_step"].idxmax()]
    s = (
        f"Device time by kernel for {len(cells)} cells; the dominant kernel takes a median "
        f"{100 * dom['share'].median():.0f}% of a step{_left_out(dropped)}."
    )
    return fig, s


def scaling(d) -> tuple:
    """Small multiples over the shape key a sweep varies: one column per variant; rows for
    latency, kernels per forward and achieved TFLOP/s; colour = compile mode; a row that is
    not ok (an ``oom`` at the long end) is a cross on the top edge of the latency panel."""
    runs = d["runs"]
    groups = ["source", "variant", "compile"]
    counts = {
        c: runs.groupby(groups)[c].nunique().max() for c in SHAPE_KEYS if c in runs and len(runs)
    }
    varied = [c for c, n in sorted(counts.items(), key=lambda kv: -kv[1]) if n > 1]
    if not varied:
        raise Skip("scaling: the sweep does not vary a shape")
    x = varied[0]
    r = runs[runs.groupby(groups)[x].transform("nunique") > 1].dropna(subset=[x])
    # One sweep: the source with the most cells over x (others would clutter every panel).
    src = r.groupby("source").size().idxmax()
    r = r[r["source"] == src].copy()
    good, bad = r[r["status"] == "ok"], r[r["status"] != "ok"]
    if good.empty:
        raise Skip(f"scaling: no ok cell in the sweep over {x} ({src})")
    metrics = [
        (c, lab)
        for c, lab in (
            ("latency_median_us", "latency, µs"),
            ("kernels_per_step", "kernels per forward"),
            ("tflops", "achieved TFLOP/s"),
        )
        if c in good and good[c].notna().any()
    ]
    # Slowest first, judged at each variant's shortest ok length.
    first = good[good[x] == good.groupby("variant")[x].transform("min")]
    slow = first.groupby("variant")["latency_median_us"].median().sort_values(ascending=False)
    variants = list(slow.index) + [v for v in dict.fromkeys(bad["variant"]) if v not in slow]
    fig, axes = plt.subplots(
        len(metrics),
        len(variants),
        figsize=(2.7 * len(variants) + 2.2, 2.4 * len(metrics) + 1.2),
        squeeze=False,
        sharex=True,
        sharey="row",
    )
    from matplotlib.lines import Line2D
    from matplotlib.transforms import blended_transform_factory

    for j, v in enumerate(variants):
        for i, (col, lab) in enumerate(metrics):
            ax = axes[i][j]
            g = good[good["variant"] == v]
            for m, gm in g.groupby("compile", sort=False):
                gm = gm.sort_values(x)
                ax.plot(
                    gm[x],
                    gm[col],
                    marker="o",
                    ms=3.5,
                    color=MODE_COLORS.get(m, "black"),
                )
            ax.set_xscale("log", base=2)
            if i == 0:
                ax.set_title(v, fontsize=10)
                top = blended_transform_factory(ax.transData, ax.transAxes)
                for _, row in bad[bad["variant"] == v].iterrows():
                    k = MODES.index(row["compile"]) if row["compile"] in MODES else 0
                    ax.plot(  # one height per mode, so crosses at one length don't hide
                        row[x],
                        0.95 - 0.09 * k,
                        "x",
                        transform=top,
                        ms=7,
                        mew=2,
                        color=MODE_COLORS.get(row["compile"], "black"),
                        clip_on=False,
                    )
            if j == 0:
                ax.set_ylabel(lab, fontsize=9)
            if i == len(metrics) - 1:
                ax.set_xlabel(x, fontsize=9)
            ax.tick_params(labelsize=7)
    for i, (col, _) in enumerate(metrics):
        _log_if_wide(axes[i][0], good[col])
    modes = modes_in(r)
    handles = [Line2D([], [], color=MODE_COLORS[m], marker="o", ms=4, label=m) for m in modes]
    if not bad.empty:
        statuses = "/".join(sorted(set(bad["status"])))
        handles.append(Line2D([], [], color="black", marker="x", ls="", mew=2, label=statuses))
    fig.legend(handles=handles, loc="center right", fontsize=8, title="compile", frameon=False)
    fig.suptitle(title(r, fig.get_figwidth()), fontsize=9)
    fig.tight_layout(rect=(0, 0, 1 - 1.5 / fig.get_figwidth(), 1 - 0.5 / fig.get_figheight()))
    s = (
        f"Scaling over {x} ({int(r[x].min())} to {int(r[x].max())}) in source {src}: "
        f"{len(good)} ok cells"
    )
    limits = [
        f"{v} {'/'.join(sorted(set(gb['status'])))} from {x}={int(gb[x].min())} "
        f"({', '.join(m for m in modes if m in set(gb['compile']))})"
        for v, gb in bad.groupby("variant", sort=False)
    ]
    s += ("; not ok: " + "; ".join(limits) if limits else "; every cell ran") + "."
    return fig, s


def payback(d) -> tuple:
    r = need(ok(d["runs"]), ["compile_s", "speedup"], "payback")
    r = r[(r["compile"] != "off") & r["compile_s"].notna() & r["speedup"].notna()].copy()
    if r.empty:
        raise Skip("payback: no compiled cell with compile time and an eager baseline")
    r["gain_us"] = r["latency_median_us"] * (r["speedup"] - 1)  # eager - compiled
    fig, ax = plt.subplots(figsize=(8, 5.5))
    _scatter_modes(ax, r, "gain_us", "compile_s")
    ax.axvline(0, color="grey", lw=0.8)
    ax.set_xscale("symlog", linthresh=1.0)
    ax.set_yscale("log")
    ax.set_xlabel("steady-state gain per call, µs (eager − compiled; < 0: compiled is slower)")
    ax.set_ylabel("compile time, s")
    ax.legend(fontsize=7, ncol=2)
    _suptitle(fig, title(r, fig.get_figwidth()))
    pays = r.dropna(subset=["payback_calls"])
    s = (
        f"Compile time against the per-call gain: {len(pays)} of {len(r)} compiled cells ever pay back"
        + (
            f"; the quickest after {pays['payback_calls'].min():,.0f} calls ({pays.loc[pays['payback_calls'].idxmin(), 'variant']}/"
            f"{pays.loc[pays['payback_calls'].idxmin(), 'compile']})."
            if len(pays)
            else "."
        )
    )
    return fig, s


def roofline(d) -> tuple:
    r = need(ok(d["runs"]), ["flops", "bytes_min", "arith_intensity"], "roofline")
    r = r.copy()
    r["achieved"] = r["tflops_device"].fillna(r["tflops"]) if "tflops_device" in r else r["tflops"]
    r = r.dropna(subset=["achieved", "arith_intensity"])
    if r.empty:
        raise Skip("roofline: no achieved rate")
    fig, ax = plt.subplots(figsize=(8.5, 6))
    xs = np.logspace(
        np.log10(r["arith_intensity"].min() / 4), np.log10(r["arith_intensity"].max() * 4), 200
    )
    ceilings = (
        r.dropna(subset=["peak_tflops", "peak_gbps"]).drop_duplicates(["device_name", "dtype"])
        if "peak_tflops" in r
        else pd.DataFrame()
    )
    for _, c in ceilings.iterrows():
        roof = np.minimum(c["peak_tflops"], c["peak_gbps"] * 1e9 * xs / 1e12)
        ax.plot(xs, roof, color="black", lw=1.2)
        ax.text(
            xs[-1],
            c["peak_tflops"],
            f" {c['peak_tflops']:.0f} TFLOP/s {c['dtype']}",
            fontsize=7,
            va="bottom",
            ha="right",
        )
    _scatter_modes(ax, r, "arith_intensity", "achieved")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("arithmetic intensity, FLOP/byte (bytes_min)")
    ax.set_ylabel("achieved TFLOP/s (device time when measured)")
    ax.legend(fontsize=7, ncol=2, loc="lower right")
    _suptitle(
        fig,
        title(r, fig.get_figwidth())
        + ("" if len(ceilings) else "\nno calibrated ceilings: run python -m study.calibrate"),
    )
    top = r.loc[r["achieved"].idxmax()]
    s = (
        f"Roofline of {len(r)} ok cells; the highest rate is {top['variant']}/{top['compile']} at "
        f"{top['achieved']:.1f} TFLOP/s"
        + (
            f" ({top['pct_peak_compute']:.0f}% of the measured peak)."
            if top.get("pct_peak_compute") == top.get("pct_peak_compute")
            and top.get("pct_peak_compute") is not None
            else "."
        )
    )
    if len(ceilings):
        roof = r.merge(
            ceilings[["device_name", "dtype", "peak_tflops"]],
            on=["device_name", "dtype"],
            suffixes=("", "_roof"),
        )
        above = roof[roof["achieved"] > roof["peak_tflops_roof"]]
        causal = (above["family"] == "attention") & (
            above["causal"].eq(True) if "causal" in above else False  # CSV: True, or NaN
        )
        att, other = above[causal], above[~causal]
        if len(att):
            s += (
                f" {len(att)} attention cells read above the calibrated matmul peak "
                f"({', '.join(sorted(set(att['variant'])))}): FLOPs count the full causal "
                "matrix, whose masked half the fused kernels skip (study/metrics.py)."
            )
        if len(other):
            worst = (other["achieved"] / other["peak_tflops_roof"]).max()
            s += (
                f" {len(other)} other cells ({', '.join(sorted(set(other['variant'])))}) read up "
                f"to {100 * (worst - 1):.0f}% above it: the ceiling is one calibration run "
                "(python -m study.calibrate), not the hardware's limit."
            )
    return fig, s


def ncu_occupancy(d) -> tuple:
    n = need(d["ncu"], ["metric", "value"], "ncu occupancy")
    want = {"achieved_occupancy", "sm_throughput_pct", "dram_throughput_pct"}
    n = n[n["metric"].isin(want)].assign(value=lambda x: pd.to_numeric(x["value"], errors="coerce"))
    if n.empty:
        raise Skip("ncu: no achieved occupancy / throughput metrics")
    piv = n.pivot_table(
        index=["source", "run_id", "kernel_match"],
        columns="metric",
        values="value",
        aggfunc="first",
    )
    piv = piv.reset_index()
    k = d["kernels"][["source", "run_id", "kernel", "occupancy_pct", "kernel_short"]]
    piv = piv.merge(
        k,
        left_on=["source", "run_id", "kernel_match"],
        right_on=["source", "run_id", "kernel"],
        how="left",
    )
    piv["label"] = (
        piv["kernel_short"].fillna(piv["kernel_match"].str.slice(0, 30))
        + " ("
        + piv["run_id"].str.slice(0, 40)
        + ")"
    )
    fig, axes = plt.subplots(1, 2, figsize=(14, 0.45 * len(piv) + 2.5))
    y = np.arange(len(piv))
    if "achieved_occupancy" in piv:
        axes[0].barh(y - 0.2, piv["occupancy_pct"], 0.4, label="trace estimate", color="#7570b3")
        axes[0].barh(y + 0.2, piv["achieved_occupancy"], 0.4, label="ncu achieved", color="#e7298a")
    axes[0].set_yticks(y, piv["label"], fontsize=7)
    axes[0].set_xlabel("occupancy, %")
    axes[0].legend(fontsize=7)
    for col, lab, off, colr in (
        ("sm_throughput_pct", "SM throughput", -0.2, "#1b9e77"),
        ("dram_throughput_pct", "DRAM throughput", 0.2, "#d95f02"),
    ):
        if col in piv:
            axes[1].barh(y + off, piv[col], 0.4, label=lab, color=colr)
    axes[1].set_yticks(y, [""] * len(y))
    axes[1].set_xlabel("% of peak (ncu)")
    axes[1].legend(fontsize=7)
    _suptitle(
        fig,
        title(ok(d["runs"]), fig.get_figwidth())
        + "\nNsight Compute: occupancy (trace vs measured) and throughput",
    )
    s = f"Nsight Compute for {len(piv)} kernels: achieved occupancy {piv['achieved_occupancy'].min():.1f}–{piv['achieved_occupancy'].max():.1f}%."
    return fig, s


FIGURES = [
    ("latency", "Latency by variant and compile mode", latency),
    ("speedup", "Speedup over eager", speedup),
    ("kernels_per_forward", "Kernels per forward by class", kernel_classes),
    ("cpu_vs_gpu", "CPU time vs GPU time per step", cpu_gpu),
    ("top_kernels", "Device time by kernel", top_kernels),
    ("scaling", "Scaling with shape", scaling),
    ("payback", "Compile time vs steady-state gain", payback),
    ("roofline", "Roofline", roofline),
    ("ncu", "Nsight Compute: occupancy and throughput", ncu_occupancy),
]
