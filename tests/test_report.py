"""The analysis on a real tiny CPU sweep: files, agreement with runs.csv, failures, no torch."""

import re

import pandas as pd
import pytest

from analysis.measures import sig
from tests.conftest import TINY, cli, without_torch

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("report")]  # one module fixture per worker


@pytest.fixture(scope="module")
def two_sweeps(tmp_path_factory):
    out = tmp_path_factory.mktemp("report")
    a = cli("-m", "variant=naive,efficient", "compile=off,default", f"out_root={out}/a", *TINY)
    assert a.returncode == 0, a.stderr[-2000:]
    b = cli("-m", "variant=naive", "compile=off", "shape.seq_len=16,32", f"out_root={out}/b", *TINY)
    assert b.returncode == 0, b.stderr[-2000:]
    return [next((out / x / "sweeps").iterdir()) for x in ("a", "b")]


def report(*args):
    """The report, in a process where any torch import fails loudly."""
    return without_torch("analysis.report", list(args))


def test_report_of_one_sweep_without_torch(two_sweeps):
    from PIL import Image

    sweep = two_sweeps[0]
    r = report(str(sweep))
    assert r.returncode == 0, r.stderr[-3000:]
    out = sweep / "report"
    for f in ("report.md", "report.html", "runs.csv", "kernels.csv", "revealed.csv"):
        assert (out / f).stat().st_size > 0, f
    for fig in (
        "kernels_per_forward",
        "latency",
        "speedup",
        "kernel_diff",
        "kernel_classes",
        "top_kernels",
        "cpu_vs_gpu",
        "payback",
        "roofline",
    ):
        assert (out / f"{fig}.png").stat().st_size > 1000, fig
        assert (out / f"{fig}.svg").stat().st_size > 1000, fig
    for png in out.glob("*.png"):
        w, h = Image.open(png).size
        assert w <= 2000 and h <= 1400, f"{png.name}: {w}x{h}"
    assert "skipped How does it scale" in r.stdout  # one sweep varies no shape: says why
    assert "ncu.enabled=true" in r.stdout  # the Nsight Compute figure says how to get it
    md = (out / "report.md").read_text()
    runs = pd.read_csv(sweep / "runs.csv")
    for _, row in runs[runs["status"] == "ok"].iterrows():  # the table agrees with runs.csv
        if row["compile"] == "off":
            assert sig(row["latency_median_us"]) in md
        else:  # beside the paired speedup, the paired blocks' µs: their ratio is the speedup
            pe, pc = row["eager_latency_paired_us"], row["compiled_latency_paired_us"]
            assert f"{sig(pe)} → {sig(pc)}" in md
            assert abs(pe / pc / row["speedup_paired"] - 1) < 1e-6
    failed = runs[runs["variant"] == "efficient"]
    assert set(failed["status"]) == {"unsupported"}
    assert "No viable backend" in md and "unsupported" in md
    assert "hidden copy" in md
    # every kernel Inductor generated, with the ops it fused (here: the C++ kernels on the CPU)
    kern = pd.read_csv(out / "kernels.csv")
    gen = kern[kern["generated"].astype(str) == "True"]
    assert len(gen) and "### Kernels Inductor generated" in md
    for name in set(gen["kernel"]):
        assert name in md.split("### Kernels Inductor generated")[1], name
    # CPU cells: timed with a monotonic clock, and no host-bound verdicts
    assert "perf_counter" in md and "CUDA events" not in md
    assert "CPU-bound" not in md and "◀" not in md
    html = (out / "report.html").read_text()
    assert html.count("data:image/png;base64,") == len(list(out.glob("*.png")))
    assert "<nav>" in html and "class='sortable'" in html
    assert not re.search(r"(src|href)=['\"]?(https?:)?//", html)  # no network fetches
    links = re.findall(r"href='([^'#]+)'", html)
    assert any(x.endswith("trace.json.gz") for x in links), links[:5]
    assert any(x.endswith("generated") for x in links), links[:5]
    for x in links:
        assert (out / x).exists(), x


def test_report_of_two_sweeps_side_by_side(two_sweeps, tmp_path):
    r = report(*map(str, two_sweeps), "--out", str(tmp_path / "both"))
    assert r.returncode == 0, r.stderr[-3000:]
    runs = pd.read_csv(tmp_path / "both" / "runs.csv")
    assert runs["source"].nunique() == 2 and len(runs) == 6
    b = two_sweeps[1].name  # one set of figures per source; the second sweep varies seq_len
    assert (tmp_path / "both" / b / "scaling.png").exists()
    assert not (tmp_path / "both" / two_sweeps[0].name / "scaling.png").exists()
    md = (tmp_path / "both" / "report.md").read_text()
    assert md.count("## Source `") == 2


def test_report_survives_missing_columns(tmp_path):
    d = tmp_path / "sweep"
    d.mkdir()
    pd.DataFrame(
        [
            {
                "run_id": "x",
                "variant": "naive",
                "family": "attention",
                "compile": "off",
                "status": "error",
                "reason": "boom",
            }
        ]
    ).to_csv(d / "runs.csv", index=False)
    r = report(str(d))
    assert r.returncode == 0, r.stderr[-3000:]
    assert "boom" in (d / "report" / "report.md").read_text()
    assert "skipped" in r.stdout


def test_rebuilt_figures_are_byte_identical(two_sweeps, tmp_path):
    # Committed reports (reference/h200) must diff only where the rows do: no dates, no random ids.
    for name in ("one", "two"):
        r = report(str(two_sweeps[1]), "--out", str(tmp_path / name))
        assert r.returncode == 0, r.stderr[-3000:]
    figs = sorted(p.name for p in (tmp_path / "one").glob("*.svg"))
    assert figs
    for f in figs:
        assert (tmp_path / "one" / f).read_bytes() == (tmp_path / "two" / f).read_bytes(), f


def test_the_cell_table_tells_flex_cells_of_one_length_apart_by_mask():
    from analysis.report import cell_table

    runs = pd.DataFrame(
        [{"source": "flex", "run_id": f"flex,{m}", "variant": "flex", "compile": "default",
          "status": "ok", "seq_len": 1024, "mask": m, "score_mod": "none",
          "latency_median_us": lat, "kernels_per_step": 1}
         for m, lat in (("causal", 153.0), ("sliding_window", 91.8))]
    )  # fmt: skip
    t = cell_table({"runs": runs, "revealed": pd.DataFrame()})
    assert list(t["mask"]) == ["causal", "sliding_window"]
    assert "score_mod" not in t  # the same in every cell: no column


def test_the_cell_table_tells_cells_apart_by_the_axes_the_sweep_crossed():
    """start=cold,warm and compile.regional=false,true: a column each; an eager row's blank
    start reads cold, its default, and an axis that never varies gets no column."""
    from analysis.report import cell_table

    runs = pd.DataFrame(
        [{"source": "s", "run_id": f"r{i}", "variant": "block", "compile": mode, "status": "ok",
          "start": start, "regional": reg, "seed": 0, "latency_median_us": 500.0,
          "kernels_per_step": 14}
         for i, (mode, start, reg) in enumerate((("off", None, None), ("default", "cold", None),
                                                 ("default", "warm", None),
                                                 ("default", "cold", True)))]
    )  # fmt: skip
    t = cell_table({"runs": runs, "revealed": pd.DataFrame()})
    assert sorted(zip(t["compile"], t["start"], t["regional"], strict=True)) == [
        ("default", "cold", "no"), ("default", "cold", "yes"), ("default", "warm", "no"),
        ("off", "cold", "no")]  # a switch reads yes/no, not 0/1 (issue 68)  # fmt: skip
    assert "seed" not in t


def test_a_trace_cpu_bound_cell_that_is_gpu_bound_per_call_says_both():
    """v3's block, eager: 826 µs of CPU against 724 of GPU in the trace, 639 µs a call."""
    import pandas as pd

    from analysis.report import cell_table

    runs = pd.DataFrame([
        {"run_id": "a", "variant": "block", "compile": "off", "status": "ok", "device": "cuda",
         "latency_median_us": 639.0, "gpu_us_per_step": 724.0, "kernels_per_step": 16},
        {"run_id": "b", "variant": "block", "compile": "default", "status": "ok", "device": "cuda",
         "latency_median_us": 579.0, "gpu_us_per_step": 519.0, "kernels_per_step": 14},
    ])  # fmt: skip
    rev = pd.DataFrame({"run_id": ["a", "b"], "revealed": [
        "CPU-bound: 826 us CPU vs 724 us GPU per step",
        "CPU-bound: 592 us CPU vs 519 us GPU per step"]})  # fmt: skip
    said = cell_table({"runs": runs, "revealed": rev})["what the trace revealed"].tolist()
    assert said[0].startswith("CPU above GPU under the profiler, GPU-bound per call: 826 us")
    assert said[1].startswith("CPU-bound: 592 us")  # 579 µs a call on 519 of GPU: host-bound
    rev.loc[0, "revealed"] = float("nan")  # revealed.csv read back: a cell with nothing to say
    said = cell_table({"runs": runs, "revealed": rev})["what the trace revealed"].iloc[0]
    assert said != said  # left as it is (NaN), no TypeError


def test_a_source_is_named_relative_to_the_working_dir(tmp_path, monkeypatch):
    """A committed report names reference/h200/part3, not the machine's own /work/... path."""
    from analysis.report import _shown

    (tmp_path / "reference" / "h200").mkdir(parents=True)
    monkeypatch.chdir(tmp_path)
    assert _shown(tmp_path / "reference" / "h200") == "reference/h200"
    assert _shown("reference/h200") == "reference/h200"
    elsewhere = tmp_path.parent / "other"
    assert _shown(elsewhere) == str(elsewhere.resolve())  # outside it: the full path
