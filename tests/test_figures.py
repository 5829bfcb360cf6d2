"""Figure helpers on made-up rows: labels, shape sweeps in per-cell figures, the scaling grid."""

import matplotlib.pyplot as plt
import pandas as pd
import pytest

from analysis import figures


def _rows():
    """Two sources: a matmul sweep over n (a shape key attention rows lack) and an attention
    sweep over seq_len 512..4096 whose naive cells run out of memory at 4096."""
    rows = []
    for n in (64, 4096):
        for m in ("off", "default"):
            rows.append(dict(source="part1", variant="matmul_add", family="matmul", n=n, compile=m))
    for seq in (512, 1024, 2048, 4096):
        for v in ("naive", "flash"):
            for m in ("off", "default"):
                oom = v == "naive" and seq == 4096
                rows.append(
                    dict(
                        source="scaling",
                        variant=v,
                        family="attention",
                        seq_len=seq,
                        compile=m,
                        status="oom" if oom else "ok",
                        kernels_per_step=(7 if m == "off" else 4) if v == "naive" else 1,
                        tflops=10.0 * seq / 512,
                    )
                )
    df = pd.DataFrame(rows)
    df["status"] = df["status"].fillna("ok")
    df["latency_median_us"] = df["seq_len"].fillna(df["n"]) * (df["variant"] == "naive").map(
        {True: 10.0, False: 1.0}
    )
    df["device_name"], df["dtype"], df["torch_version"] = "GPU", "bf16", "2.11"
    return df


def test_bar_labels_name_only_the_shape_that_varies_and_never_go_missing():
    r = figures.ok(_rows())
    lab = figures.bar_labels(r)
    assert lab.notna().all()
    # n varies for part1 only: attention labels must not carry an "n=" (they used to be NaN)
    assert set(lab[r["source"] == "part1"]) == {"part1:matmul_add n=64", "part1:matmul_add n=4096"}
    assert "scaling:naive seq_len=512" in set(lab)
    assert not lab[r["source"] == "scaling"].str.contains(" n=").any()
    assert not (lab + r["compile"]).duplicated().any()


def test_per_cell_keeps_the_ends_of_a_shape_sweep():
    r = figures.ok(_rows())
    kept, dropped = figures.per_cell(r)
    s = kept[kept["source"] == "scaling"]
    assert set(s[s["variant"] == "flash"]["seq_len"]) == {512, 4096}
    assert set(s[s["variant"] == "naive"]["seq_len"]) == {512, 2048}  # 4096 is not ok
    assert dropped == 2 * 2 + 1 * 2  # flash 1024, 2048; naive 1024, each in two modes
    assert len(kept[kept["source"] == "part1"]) == 4  # two values of n are not a sweep


def test_scaling_grid_marks_what_did_not_run():
    fig, sentence = figures.scaling({"runs": _rows()})
    plt.close(fig)
    assert "seq_len (512 to 4096) in source scaling" in sentence
    assert "naive oom from seq_len=4096 (off, default)" in sentence
    assert "14 ok cells" in sentence
    axes = fig.axes
    assert [a.get_title() for a in axes[:2]] == ["naive", "flash"]  # slowest first
    assert len(axes) == 6  # latency, kernels, TFLOP/s x two variants


def test_scaling_grid_draws_the_useful_rate_of_causal_attention():
    r = _rows()
    r["tflops_useful"] = r["tflops"] / 2  # causal: half the score matrix (SCHEMA.md)
    fig, _ = figures.scaling({"runs": r})
    plt.close(fig)
    rate = fig.axes[4]  # the third row, first variant (naive)
    assert rate.get_ylabel() == "useful TFLOP/s"
    drawn = sorted(y for line in rate.get_lines() for y in line.get_ydata())
    ok = r[(r["variant"] == "naive") & (r["status"] == "ok")]
    assert drawn == sorted(ok["tflops_useful"])


def test_scaling_skips_without_a_shape_sweep():
    r = _rows()
    with pytest.raises(figures.Skip, match="does not vary a shape"):
        figures.scaling({"runs": r[(r["source"] == "scaling") & (r["seq_len"] == 512)]})


# Every figure from fixture sweeps: real H200 rows (several sources), the same rows with the
# runtime's newer columns (repeats, paired speedups, passes, ...) and a CPU-flavoured copy.
SOURCES = ["part3", "scaling", "ncu", "part1", "oom", "new", "cpu"]


pytestmark = pytest.mark.xdist_group("figures")  # its module fixture, once


@pytest.fixture(scope="module")
def fixture_sweeps(tmp_path_factory):
    from analysis.load import load
    from tests import synth

    root = tmp_path_factory.mktemp("fixtures")
    dirs = [
        synth.write(synth.h200("part3", "scaling", "ncu", "part1", "oom"), root / "h200"),
        synth.write(synth.with_new_columns(), root / "new"),
        synth.write(synth.on_cpu(), root / "cpu"),
    ]
    return load(dirs)


def _texts(fig):
    from matplotlib.text import Text

    return [t for t in fig.findobj(Text) if t.get_visible() and t.get_text()]


def _empty_tick_labels(fig):
    """Major tick labels inside the view that are visible but say nothing."""
    empty = []
    for ax in fig.axes:
        if not ax.get_visible() or not ax.axison:
            continue
        for axis, lim in ((ax.xaxis, ax.get_xlim()), (ax.yaxis, ax.get_ylim())):
            lo, hi = min(lim), max(lim)
            for tick in axis.get_major_ticks():
                loc = tick.get_loc()
                if tick.label1.get_visible() and lo <= loc <= hi:
                    if not tick.label1.get_text().strip():
                        empty.append((ax.get_title(), loc))
    return empty


def _bars_per_panel(ax):
    from matplotlib.patches import Rectangle

    bars = [p for p in ax.patches if isinstance(p, Rectangle) and p.get_width() and p.get_height()]
    vertical = len({round(p.get_width(), 6) for p in bars}) <= len(
        {round(p.get_height(), 6) for p in bars}
    )
    centers = {
        round(p.get_x() + p.get_width() / 2, 3)
        if vertical
        else round(p.get_y() + p.get_height() / 2, 3)
        for p in bars
    }
    return len(centers)


@pytest.mark.parametrize("source", SOURCES)
def test_every_figure_fits_a_screen_and_says_something(fixture_sweeps, source):
    import re

    from analysis.report import subset
    from analysis.style import DPI, MAX_BARS, MAX_PX

    d = subset(fixture_sweeps, source)
    drawn = []
    for key, _, fn in figures.FIGURES:
        try:
            fig, sentence = fn(d)
        except figures.Skip as e:
            assert str(e) and "nan" not in str(e).lower(), (key, e)
            continue
        try:
            fig.canvas.draw()
            w, h = fig.get_size_inches() * DPI
            assert w <= MAX_PX[0] + 0.5 and h <= MAX_PX[1] + 0.5, f"{key}: {w:.0f}x{h:.0f} px"
            texts = [t.get_text() for t in _texts(fig)] + [sentence]
            bad = [t for t in texts if re.search(r"\b(nan|none|null)\b", t, re.I)]
            assert not bad, f"{key}: {bad[:3]}"
            assert not _empty_tick_labels(fig), (
                f"{key}: empty tick labels {_empty_tick_labels(fig)[:3]}"
            )
            assert any(t.get_text().strip().endswith("?") for t in fig.texts), f"{key}: no question"
            for ax in fig.axes:
                assert ax.get_legend() is None, f"{key}: a legend inside the axes"
                assert _bars_per_panel(ax) <= MAX_BARS, f"{key}: {_bars_per_panel(ax)} bars"
            rend = fig.canvas.get_renderer()
            for leg in fig.legends:
                lb = leg.get_window_extent(rend)
                assert not any(
                    lb.overlaps(ax.get_window_extent(rend))
                    for ax in fig.axes
                    if ax.get_visible() and ax.axison
                ), f"{key}: legend over data"
            if key in ("payback", "roofline", "cpu_vs_gpu"):  # the points that matter, labelled
                named = [t for ax in fig.axes for t in ax.texts if " · " in t.get_text()]
                points = sum(len(c.get_offsets()) for ax in fig.axes for c in ax.collections
                             if type(c).__name__ == "PathCollection")  # fmt: skip
                assert len(named) >= min(3, points), f"{key}: {len(named)} labelled points"
            drawn.append(key)
        finally:
            plt.close(fig)
    assert {"latency", "kernels_per_forward", "top_kernels"} <= set(drawn), drawn


def _runs(rows):
    import pandas as pd

    base = {"status": "ok", "family": "attention", "device": "cuda", "dtype": "bf16",
            "device_name": "NVIDIA H200", "torch_version": "2.11", "batch": 8, "heads": 16,
            "head_dim": 64, "compile": "default", "pass": "fwd"}  # fmt: skip
    return {"runs": pd.DataFrame([{**base, **r} for r in rows])}


def test_flex_figure_plots_useful_rates_per_mask_and_marks_what_did_not_run():
    from analysis.figures.flex import flex
    from analysis.style import DPI, MAX_PX

    rows = [{"variant": v, "mask": m, "seq_len": s, "tflops_useful": t, "status": st}
            for v, m, s, t, st in (("flex", "causal", 1024, 300.0, "ok"),
                                   ("flex", "causal", 4096, 360.0, "ok"),
                                   ("cudnn", "causal", 4096, 436.0, "ok"),
                                   ("flash", "document", 4096, None, "unsupported"),
                                   ("flex", "document", 4096, 200.0, "ok"))]  # fmt: skip
    fig, s = flex(_runs(rows))
    assert [a.get_title() for a in fig.axes if a.get_title()] == ["causal", "document"]
    w, h = fig.get_size_inches() * DPI
    assert w <= MAX_PX[0] and h <= MAX_PX[1]
    assert (
        "causal cudnn 436 at 4096; document flex 200 at 4096; not run: 1 cells (unsupported)" in s
    )
    with pytest.raises(figures.Skip):
        flex(_runs([{**r, "variant": "flash"} for r in rows]))  # no flex: nothing to compare


def test_training_figure_spans_sources_and_gives_each_pass():
    from analysis.figures.training import training
    from analysis.style import DPI, MAX_PX

    rows = [{"source": src, "variant": "naive", "pass": p, "compile": "default", "seq_len": 1024,
             "speedup_paired": sp, "speedup_ci_low": sp * 0.97, "speedup_ci_high": sp * 1.03}
            for src, p, sp in (("dynamic", "fwd", 1.5), ("targets_bwd", "fwd_bwd", 1.6),
                               ("part3", "fwd", 2.87), ("part3_bwd", "fwd_bwd", 1.92))]  # fmt: skip
    # a dynamic-shape sweep says so in its own column: one variant, several `dynamic` values
    rows[0]["dynamic"] = "true"
    rows.insert(1, {**rows[0], "dynamic": "mark", "speedup_paired": 1.4})
    # the compile targets' own modes are fig_targets' (and their sweep comes after the ladder's)
    rows.append({**rows[-1], "source": "targets_bwd", "compile": "dynamo_eager"})
    rows.append({**rows[-1], "source": "part3_bwd", "compile": "reduce-overhead",
                 "timing_phase": "mixed/slow"})  # fmt: skip
    fig, s = training(_runs(rows))  # the dynamic sweep's own shapes are not the ladder's cell
    w, h = fig.get_size_inches() * DPI
    assert w <= MAX_PX[0] and h <= MAX_PX[1]
    assert "default mode naive 2.87x fwd → 1.92x fwd_bwd" in s
    said = [t.get_text() for leg in fig.legends for t in leg.texts]
    assert "dynamo_eager" not in said and "reduce-overhead" in said
    assert any(t.startswith("hollow: timed outside") for t in said)
    assert sorted(t.get_text() for t in fig.axes[0].texts) == ["1.92x", "2.87x"]
    lo, hi = fig.axes[0].get_ylim()  # every bar inside the frame, with a margin; 1x in view
    assert lo < 1.0 and hi > 2.87 * 1.03 * 1.2
    with pytest.raises(figures.Skip):
        training(_runs(rows[3:4]))  # the forward alone
    with pytest.raises(figures.Skip):  # trained under a compile target's mode only
        training(_runs([rows[3], {**rows[4], "compile": "dynamo_eager"}]))


def test_cpu_vs_gpu_rings_only_the_cells_host_bound_by_their_latency():
    """Above the line is the profiled host side, which the profiler slows: flash's eager forward
    sits there (130 µs of CPU against 92 of GPU) while its latency is its device time. Only the
    cells whose per-call latency is host-bound get the ring."""
    from analysis.figures.host import RING, cpu_gpu

    rows = [{"variant": v, "compile": c, "cpu_us_per_step": cpu, "gpu_us_per_step": gpu,
             "latency_median_us": lat}
            for v, c, cpu, gpu, lat in (("flash", "off", 130.0, 92.0, 93.6),
                                        ("cudnn", "default", 200.0, 58.4, 65.7),
                                        ("naive", "off", 260.0, 1050.0, 1062.0))]  # fmt: skip
    fig, sentence = cpu_gpu(_runs(rows))
    try:
        rings = [c for ax in fig.axes for c in ax.collections
                 if len(c.get_edgecolor()) and tuple(c.get_edgecolor()[0][:3])
                 == tuple(int(RING[i:i + 2], 16) / 255 for i in (1, 3, 5))]  # fmt: skip
        assert [len(c.get_offsets()) for c in rings] == [1]
        assert tuple(rings[0].get_offsets()[0]) == (58.4, 200.0)
        assert any("host-bound by" in t.get_text() for leg in fig.legends for t in leg.texts)
        assert "2 of 3 GPU cells spend more CPU time" in sentence
        assert "1 are host-bound by per-call latency" in sentence
    finally:
        plt.close(fig)


def test_one_cell_reads_in_the_singular_and_is_not_both_best_and_worst():
    """Issue 68: '1 are slower', and 'best … 0.860x, worst … 0.860x' for one cell; a
    no-change cell drawn inside 'never pays back'."""
    import matplotlib.pyplot as plt

    from analysis.figures import payback, speedup

    base = {"source": "s", "family": "attention", "variant": "naive", "pass": "fwd", "kernels_per_step": 3,
            "device": "cpu", "dtype": "fp32", "status": "ok", "torch_version": "2.13",
            "device_name": "CPU"}  # fmt: skip
    runs = pd.DataFrame([
        {**base, "run_id": "e", "compile": "off", "latency_median_us": 600.0, "speedup": 1.0},
        {**base, "run_id": "c", "compile": "default", "latency_median_us": 700.0, "speedup": 0.857,
         "speedup_paired": 0.86, "speedup_ci_low": 0.84, "speedup_ci_high": 0.88,
         "eager_latency_paired_us": 600.0, "compiled_latency_paired_us": 697.7,
         "compile_s": 5.0},
    ])  # fmt: skip
    fig, s = speedup({"runs": runs})
    plt.close(fig)
    assert ": best " not in s and ", worst " not in s and "of 1 compiled cell:" in s
    assert ": naive · default 0.860x, slower" in s
    fig, s = payback({"runs": runs})
    plt.close(fig)
    assert "1 is slower than eager and never pays back" in s
