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
    lab = figures._bar_labels(r)
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


def test_scaling_skips_without_a_shape_sweep():
    r = _rows()
    with pytest.raises(figures.Skip, match="does not vary a shape"):
        figures.scaling({"runs": r[(r["source"] == "scaling") & (r["seq_len"] == 512)]})
