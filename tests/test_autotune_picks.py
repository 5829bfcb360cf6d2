"""What max-autotune picked, per cell and op, in the report: from the committed H200 rows."""

import pandas as pd
import pytest

from analysis.load import load
from analysis.tables.autotune_picks import table
from tests.conftest import ROOT

H200 = ROOT / "reference" / "h200" / "v2"  # one repeat a cell at part3: v2 kept its rows


pytestmark = pytest.mark.xdist_group("autotune_picks")  # its module fixture, once


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
    assert row["picked µs"] == op0["time_us"].iloc[0] == row["best ATen µs"]
    assert row["best Triton µs"] == op0["time_us"].iloc[1]
    margin = op0["time_us"].iloc[1] / op0["time_us"].iloc[0] - 1
    assert row["runner-up"] == f"{op0['choice'].iloc[1]} +{margin:.1%}"
    assert row["choices"] == len(op0)
    # its second bmm: Triton templates within 1% of each other
    assert _row(t, "part3", "naive", "max-autotune", 1)["runner-up"].endswith(" near tie")


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


def _cell(picks_by_repeat):
    """A one-op max-autotune cell with a repeat per entry: {choice: (time_us, won)}."""
    runs, at = [], []
    for i, choices in enumerate(picks_by_repeat):
        rid = f"compile=max-autotune,repeat={i},variant=mlp"
        runs.append({"source": "s", "run_id": rid, "variant": "mlp", "compile": "max-autotune",
                     "repeat": i, "config_hash": "h"})  # fmt: skip
        for c, (us, won) in choices.items():
            at.append({"source": "s", "run_id": rid, "op_id": 0, "op": "mm", "input_shapes": "",
                       "choice": c, "time_us": us, "winner": won})  # fmt: skip
    return pd.DataFrame(runs), pd.DataFrame(at)


def test_the_runner_up_and_its_margin_come_from_one_repeat():
    runs, at = _cell([
        {"mm": (10.0, True), "triton_mm_1": (10.1, False)},  # +1%
        {"mm": (10.0, True), "triton_mm_2": (11.0, False)},  # +10%
        {"triton_mm_1": (9.0, True), "mm": (9.45, False)},  # +5%: the median repeat
    ])  # fmt: skip
    runs = pd.concat([runs, runs.iloc[[0]]], ignore_index=True)  # a runs row written twice
    row = table(runs, at).iloc[0]
    assert row["op"] == "op0 mm ?" and row["held"] == "2 of 3"
    assert row["picked"] == "mm (ATen) ×2, triton_mm_1 (Triton) ×1"
    assert row["picked µs"] == 10.0  # the median of each repeat's winning time
    assert row["runner-up"] == "mm +5.0% (repeats +1.0% to +10.0%) near tie"


def test_a_repeat_with_one_choice_still_gives_its_winning_time():
    runs, at = _cell([{"mm": (12.0, True)}])
    row = table(runs, at).iloc[0]
    assert row["picked µs"] == 12.0 and row["runner-up"] == "" and row["choices"] == 1
