"""What max-autotune picked, per cell and op, in the report: from the committed H200 rows."""

import pandas as pd
import pytest

from analysis.autotune_picks import table
from analysis.load import load
from analysis.measures import sig
from tests.conftest import ROOT

H200 = ROOT / "results" / "h200"


@pytest.fixture(scope="module")
def h200():
    d = load([H200])
    return d, table(d["repeats"], d["autotune"])


def _row(t, source, variant, mode, op_id):
    x = t[(t["source"] == source) & (t["variant"] == variant) & (t["mode"] == mode)]
    x = x[x["op"].str.startswith(f"op{op_id} ")]
    assert len(x) == 1, x
    return x.iloc[0]


def test_each_op_its_pick_the_best_of_each_kind_and_the_runner_up(h200):
    d, t = h200
    at = d["autotune"]
    cell = at[(at["source"] == "part3") & (at["run_id"] == "compile=max-autotune,variant=naive")]
    op0 = cell[cell["op_id"] == 0].assign(time_us=lambda x: x["time_us"].astype(float))
    op0 = op0.sort_values("time_us")
    row = _row(t, "part3", "naive", "max-autotune", 0)
    assert row["op"] == "op0 bmm [128, 1024, 64] x [128, 64, 1024]"
    assert row["picked"] == "bmm (ATen)" and row["held"] == ""  # one repeat
    assert row["picked µs"] == sig(op0["time_us"].iloc[0]) == row["best ATen µs"]
    assert row["best Triton µs"] == sig(op0["time_us"].iloc[1])
    margin = op0["time_us"].iloc[1] / op0["time_us"].iloc[0] - 1
    assert row["runner-up"] == f"{op0['choice'].iloc[1]} +{margin:.1%}"
    assert row["choices"] == len(op0)
    # its second bmm: Triton templates within 1% of each other
    assert _row(t, "part3", "naive", "max-autotune", 1)["runner-up"].endswith("(near tie)")


def test_a_pick_that_moved_between_repeats_says_how_often_it_held(h200):
    d, t = h200
    row = _row(t, "part2", "linear", "max-autotune", 0)
    reps = d["repeats"]
    runs = reps[(reps["source"] == "part2") & (reps["variant"] == "linear")]
    n = int((runs["compile"] == "max-autotune").sum())
    assert n == 3
    picked = row["picked"].split(", ")
    assert len(picked) == 3 and all(p.endswith("(Triton) ×1") for p in picked)
    assert row["held"] == "1 of 3"


def test_no_autotune_rows_no_table_and_the_report_section(tmp_path):
    d = load([H200])
    assert table(d["repeats"], pd.DataFrame()).empty
    part2 = tmp_path / "part2"
    part2.mkdir()
    for f in ("runs.csv", "kernels.csv", "autotune.csv"):
        x = pd.read_csv(H200 / f, low_memory=False)
        x[x["source"] == "part2"].to_csv(part2 / f, index=False)
    from analysis.report import build

    build([part2], tmp_path / "out")
    md = (tmp_path / "out" / "report.md").read_text()
    section = md.split("### What max-autotune picked")[1].split("###")[0]
    assert "| linear | max-autotune | op0 addmm" in section and "1 of 3" in section
    assert (
        "| mlp | max-autotune-no-cudagraphs | op2 mm [8192, 3072] x [3072, 768] | mm (ATen)"
        in section
    )
    assert "What max-autotune picked" in (tmp_path / "out" / "report.html").read_text()
