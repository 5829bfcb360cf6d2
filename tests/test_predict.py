"""Predicting another GPU (analysis.tables.predict) on made-up rows of two GPUs whose kernels
follow a known law: each kernel on the target is the source's scaled by the ceiling that bounds
it. The model must give the target's device µs back, and miss where a kernel's class or a
ceiling is ignored. Plus the committed H200 rows onto made-up H100 ceilings. No torch."""

import json

import pandas as pd
import pytest

from analysis.load import expand, load
from analysis.tables import predict
from tests.conftest import ROOT

SRC = (760.0, 4100.0)  # source TFLOP/s, GB/s
TGT = (750.0, 2900.0)  # target
# cell: (flops, bytes_min, eager kernels, compiled kernels); a kernel: (name, class, µs, calls)
CELLS = {
    "gemm": (1e12, 1e9,  # intensity 1000 FLOP/B, over the ridge (185): GEMMs are compute-bound
             [("cublas_a", "gemm_cublas", 500, 1), ("elt", "aten_elementwise", 50, 1)],
             [("cublas_a", "gemm_cublas", 500, 1), ("poi", "triton_pointwise", 30, 1),
              ("memset", "memset", 1, 1), ("odd", "other", 5, 1)]),
    "pointwise": (1e9, 1e9,  # intensity 1: even its skinny GEMM is memory-bound
                  [("elt", "aten_elementwise", 300, 3), ("cublas_b", "gemm_cublas", 100, 1)],
                  [("poi", "triton_pointwise", 100, 1), ("cublas_b", "gemm_cublas", 100, 1)]),
    "fused": (1e12, 1e9,  # eager memory-bound, compiled a compute-bound template
              [("elt", "aten_elementwise", 300, 1)], [("tmpl", "triton_template", 200, 1)]),
}  # fmt: skip
BOUND = {"gemm": "compute", "triton_template": "compute", "pointwise": "memory"}


def scale(cls, us, calls, variant, peak):
    """A kernel's µs on a GPU of ceilings ``peak``: the law the model assumes, by hand."""
    if us / calls < predict.FLOOR_US or cls == "other":
        return us
    compute = cls in ("gemm_cublas", "triton_template") and variant != "pointwise"
    return us * (SRC[0] / peak[0] if compute else SRC[1] / peak[1])


def sweep(tmp_path, name, target=False, host_units=(0.5, 0.4), change=None, peak=None):
    """runs.csv and kernels.csv of one GPU (the source's, or a target's of ceilings ``peak``,
    TGT by default): per cell an eager and a compiled row; the measured speedup follows
    max(device, host) at G = 20 µs (host-bound nowhere)."""
    runs, kernels = [], []
    peak = (peak or TGT) if target else SRC
    for v, (flops, nbytes, eager, comp) in CELLS.items():
        dev = {}
        for mode, ks in (("off", eager), ("default", comp)):
            rid = f"variant={v},compile={mode}"
            ks = (change or {}).get((v, mode), ks)
            for kname, cls, us, calls in ks:
                t = scale(cls, us, calls, v, peak)
                kernels.append({"run_id": rid, "variant": v, "compile": mode, "device": "cuda",
                                "dtype": "bf16", "kernel": kname, "kernel_class": cls,
                                "phase": "fwd", "calls_per_step": calls, "us_per_step": t,
                                "mean_us": t / calls, "graph_launched": False})  # fmt: skip
            dev[mode] = sum(k["us_per_step"] for k in kernels if k["run_id"] == rid)
        u_e, u_c = host_units
        sp = max(dev["off"], u_e * 20) / max(dev["default"], u_c * 20)
        for mode in ("off", "default"):
            runs.append({"run_id": f"variant={v},compile={mode}", "variant": v, "compile": mode,
                         "device": "cuda", "dtype": "bf16", "pass": "fwd", "status": "ok",
                         "device_time_us": dev[mode], "device_time_method": "cuda_graph_replay_x20",
                         "peak_tflops": peak[0], "peak_gbps": peak[1], "flops": flops,
                         "bytes_min": nbytes, "host_units": u_c if mode != "off" else u_e,
                         "eager_host_units": u_e if mode != "off" else None, "host_gauge_us": 20.0,
                         "host_us": (u_c if mode != "off" else u_e) * 20,
                         "speedup_paired": sp if mode != "off" else None,
                         "device_name": "GPU-T" if target else "GPU-S"})  # fmt: skip
    d = tmp_path / name
    d.mkdir()
    pd.DataFrame(runs).to_csv(d / "runs.csv", index=False)
    pd.DataFrame(kernels).to_csv(d / "kernels.csv", index=False)
    return d


def ceilings_file(tmp_path, entries=None):
    p = tmp_path / "ceilings.json"
    entries = entries or {"GPU-T|bf16|2.9.0": {"tflops": TGT[0], "gbps": TGT[1],
                                               "measured_at": "2026-01-01T00:00:00Z"}}  # fmt: skip
    p.write_text(json.dumps(entries))
    return p


def table(src, tgt=None, ceilings=TGT, g=None):
    s = load(expand([str(src)]))
    t = predict.cell_table(s["runs"], s["kernels"], {"bf16": (*ceilings, "made up")}, g)
    return predict.compare(t, s, load(expand([str(tgt)]))) if tgt else t


def test_the_model_gives_back_the_targets_device_us_and_speedups(tmp_path):
    t = table(sweep(tmp_path, "src"), sweep(tmp_path, "tgt", target=True))
    assert len(t) == 3 and t["note"].eq("").all()
    for c in ("err_dev_c", "err_dev_e", "err_speedup"):
        assert t[c].abs().max() < 0.01, c
    by = t.set_index(t["run_id"].str.split(",").str[0])
    assert by.loc["variant=gemm", "floor_us"] == 1 and by.loc["variant=gemm", "other_us"] == 5
    assert by.loc["variant=gemm", "unchanged"] == "other"
    assert by.loc["variant=pointwise", "compute_us"] == 0  # its GEMM went to bandwidth
    # the null: the source's own measured speedup, beside every prediction
    s = pd.read_csv(tmp_path / "src" / "runs.csv")
    assert sorted(t["null_speedup"]) == sorted(s["speedup_paired"].dropna())
    # a "why" only where the model's own figures miss: the null misses fused, the model does not
    assert by.loc["variant=fused", "err_null"] < -0.1 and pd.isna(by.loc["variant=fused", "why"])


def test_a_target_that_ran_nothing_of_the_source_or_lost_a_cell_says_so(tmp_path):
    """Review: --measured matching no cell stopped with a KeyError; a cell the target ran and
    lost read "not measured"."""
    src, tgt = sweep(tmp_path, "src"), sweep(tmp_path, "tgt", target=True)
    r = pd.read_csv(tgt / "runs.csv")
    r.loc[r["run_id"] == "variant=gemm,compile=default", "status"] = "oom"
    r["variant"] = r["variant"].replace({"pointwise": "other_name", "fused": "other_name2"})
    r.to_csv(tgt / "runs.csv", index=False)
    t = table(src, tgt)
    why = dict(zip(t["run_id"].str.split(",").str[0], t["why"], strict=True))
    assert why == {"variant=gemm": "target: oom", "variant=pointwise": "not measured on the target",
                   "variant=fused": "not measured on the target"}  # fmt: skip
    assert predict.summary(t)[0].startswith("no cell of the source was measured ok on the target")


def test_the_summary_says_the_model_beat_the_null_and_the_shares(tmp_path):
    t = table(sweep(tmp_path, "src"), sweep(tmp_path, "tgt", target=True))
    lines = predict.summary(t)
    # the fused cell's speedup moves (memory-bound eager, compute-bound compiled): the null misses
    assert "all cells: model 3/3, null (the source's own speedup) 2/3: the model wins" in lines[0]
    assert "GPU-bound cells: model 3/3" in lines[1]
    assert "device µs within ±10% of the target's (6 sides): model 6/6" in lines[2]


@pytest.mark.parametrize(
    "compute, memory",
    [(frozenset(), predict.COMPUTE | predict.MEMORY),  # everything scaled by bandwidth
     (predict.COMPUTE | predict.MEMORY, frozenset())],  # everything scaled by compute
)  # fmt: skip
def test_ignoring_the_kernel_class_misses(tmp_path, monkeypatch, compute, memory):
    monkeypatch.setattr(predict, "COMPUTE", compute)
    monkeypatch.setattr(predict, "MEMORY", memory)
    t = table(sweep(tmp_path, "src"), sweep(tmp_path, "tgt", target=True))
    assert pd.concat([t["err_dev_c"], t["err_dev_e"]]).abs().max() > 0.10


SLOW = (380.0, 2900.0)  # a made-up target of half the compute, so ignoring it shows


@pytest.mark.parametrize(
    "peak, given",
    [(TGT, SRC),  # equal ceilings: ratio 1 throughout
     (TGT, (TGT[0], SRC[1])),  # the bandwidth ceiling ignored
     (SLOW, (SRC[0], SLOW[1]))],  # the compute ceiling ignored
)  # fmt: skip
def test_ignoring_a_ceiling_misses(tmp_path, peak, given):
    """With the target's true ceilings the model is within 1%; with one ignored, some device µs
    is off by over 10%."""
    src, tgt = sweep(tmp_path, "src"), sweep(tmp_path, "tgt", target=True, peak=peak)
    right, wrong = table(src, tgt, peak), table(src, tgt, given)
    errs = [pd.concat([t["err_dev_c"], t["err_dev_e"]]).abs().max() for t in (right, wrong)]
    assert errs[0] < 0.01 and errs[1] > 0.10


def test_ignoring_the_cells_intensity_misses_the_skinny_gemm(tmp_path):
    src = sweep(tmp_path, "src")
    r = pd.read_csv(src / "runs.csv")
    r.loc[r["variant"] == "pointwise", "flops"] = None  # no intensity: the GEMM reads as compute
    r.to_csv(src / "runs.csv", index=False)
    t = table(src, sweep(tmp_path, "tgt", target=True))
    assert t.loc[t["run_id"].str.contains("pointwise"), "err_dev_c"].abs().item() > 0.10


def test_a_kernel_under_the_floor_stays_as_measured():
    row = pd.Series({"peak_tflops": SRC[0], "peak_gbps": SRC[1], "device_time_us": 5.0,
                     "device_time_method": "cuda_graph_replay_x20"})  # fmt: skip
    k = pd.DataFrame({"kernel": ["a", "b"], "kernel_class": ["triton_pointwise", "memset"],
                      "us_per_step": [4.0, 1.0], "calls_per_step": [2, 1]})  # fmt: skip
    out = predict.side(row, k, TGT)
    assert out["floor_us"] == 5.0 and out["pred"] == 5.0  # 2 µs a call: latency-bound
    out = predict.side(row, k.assign(calls_per_step=1), TGT)  # 4 µs a call: bandwidth
    assert out["memory_us"] == 4.0 and out["pred"] == pytest.approx(4 * SRC[1] / TGT[1] + 1)


def test_the_host_side_at_a_given_host_speed(tmp_path):
    t = table(sweep(tmp_path, "src", host_units=(1.0, 2.0)), g=400.0)
    for _, x in t.iterrows():
        assert x["host_c"] == 800.0 and x["host_e"] == 400.0 and x["g"] == 400.0
        want = max(x["pred_dev_e"], 400.0) / max(x["pred_dev_c"], 800.0)
        assert x["pred_speedup"] == pytest.approx(want)
    own = table(sweep(tmp_path, "own", host_units=(1.0, 2.0)))  # the rows' own G: 20 µs
    assert own["host_c"].eq(40.0).all()
    d = sweep(tmp_path, "nohost")
    r = pd.read_csv(d / "runs.csv").drop(columns=["host_units", "eager_host_units"])
    r.to_csv(d / "runs.csv", index=False)
    t = table(d)
    assert t["host_c"].isna().all() and t["note"].str.startswith("device only").all()
    assert (t["pred_speedup"] == t["pred_dev_e"] / t["pred_dev_c"]).all()


def test_a_miss_names_a_cause_the_rows_support(tmp_path):
    tgt = sweep(tmp_path, "tgt", target=True, change={
        ("gemm", "default"): [("cublas_new", "gemm_cublas", 900, 1)],
        ("fused", "default"): [("tmpl_other", "triton_template", 400, 1)]})  # fmt: skip
    t = table(sweep(tmp_path, "src"), tgt).set_index("run_id")
    assert t.loc["variant=gemm,compile=default", "why"].startswith("1 kernel(s) on the target")
    assert (
        t.loc["variant=fused,compile=default", "why"]
        == "autotune picked other kernels on the target"
    )
    assert pd.isna(t.loc["variant=pointwise,compile=default", "why"])


def run(capsys, *argv):
    with pytest.raises(SystemExit) as e:
        predict.main([str(a) for a in argv])
    err = capsys.readouterr().err
    assert e.value.code == 2 and "Traceback" not in err and len(err.strip().splitlines()) == 1
    return err


def test_bad_input_is_one_line_and_exit_2(tmp_path, capsys):
    src, cf = sweep(tmp_path, "src"), ceilings_file(tmp_path)
    assert "no such dir" in run(capsys, tmp_path / "nowhere", "--to", cf)
    assert "no such file or dir" in run(capsys, src, "--to", tmp_path / "none.json")
    fp32 = ceilings_file(tmp_path, {"GPU-T|fp32|2.9.0": {"tflops": 60.0, "gbps": 2900.0}})
    assert "no bf16 ceilings" in run(capsys, src, "--to", fp32)
    two = ceilings_file(tmp_path, {"A|bf16|2.9": {"tflops": 1, "gbps": 1},
                                   "B|bf16|2.9": {"tflops": 1, "gbps": 1}})  # fmt: skip
    assert "give --to-device NAME" in run(capsys, src, "--to", two)
    (tmp_path / "list.json").write_text("[1, 2]")  # JSON, but no ceilings file: it stopped
    assert "it holds no ceilings" in run(capsys, src, "--to", tmp_path / "list.json")
    assert predict.main([str(src), "--to", str(two), "--to-device", "B"]) == 0
    capsys.readouterr()
    cpu = pd.read_csv(src / "runs.csv").assign(device="cpu")
    cpu.to_csv(src / "runs.csv", index=False)
    assert "no ok compiled CUDA row" in run(capsys, src, "--to", cf)


def test_the_command_prints_the_table_and_the_verdict(tmp_path, capsys):
    src, tgt = sweep(tmp_path, "src"), sweep(tmp_path, "tgt", target=True)
    assert (
        predict.main([str(src), "--to", str(ceilings_file(tmp_path)), "--measured", str(tgt)]) == 0
    )
    out = capsys.readouterr().out
    assert "target: GPU-T bf16 torch 2.9.0: 750 TFLOP/s, 2,900 GB/s" in out
    assert "the model wins" in out and out.count("| src: variant=") == 3


def test_the_h200_rows_onto_made_up_h100_ceilings_predict_or_say_why():
    d = load(expand([str(ROOT / "reference" / "h200")]))
    t = predict.cell_table(d["runs"], d["kernels"], {"bf16": (700.0, 2900.0, "made up")})
    r = d["runs"]
    ok = r[(r["status"] == "ok") & (r["device"] == "cuda") & (r["compile"] != "off")]
    assert len(t) == len(ok) > 150
    said = t["pred_speedup"].notna() | t["note"].fillna("").str.len().gt(0)
    assert said.all()
    assert t["pred_speedup"].notna().sum() > 100  # most cells are predicted, not excused
    assert (t["pred_dev_c"] > t["dev_c"]).mean() > 0.9  # a slower target: longer kernels
