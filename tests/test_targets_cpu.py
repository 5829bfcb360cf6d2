"""Every compile target through the real CLI on the CPU, at the tiny shapes: ok rows with a
paired speedup, each target proven; AOTInductor's C++ source saved and its kernels matched to
it; a target that cannot apply is a row, never a crash."""

from pathlib import Path

import pytest

from study.config import compile_targets
from study.rows import io
from tests.conftest import TINY, cli
from tests.test_sweep import sweep_dir

pytestmark = pytest.mark.slow

NEW = ["dynamo_eager", "aot_eager", "cudagraphs", "cpp_wrapper", "aot_inductor"]


def test_naive_and_flash_run_ok_under_every_new_target(tmp_path):
    r = cli("-m", "variant=naive,flash", f"compile={','.join(NEW)}", f"out_root={tmp_path}", *TINY)
    assert r.returncode == 0, r.stderr[-3000:]
    d = sweep_dir(tmp_path)
    rows = io.read_csv(d / "runs.csv")
    assert sorted((x["variant"], x["compile"]) for x in rows) == sorted(
        (v, t) for v in ("naive", "flash") for t in NEW
    )
    for x in rows:
        assert x["status"] == "ok", (x["run_id"], x["reason"])
        assert float(x["speedup_paired"]) > 0 and float(x["speedup_ci_low"]) > 0, x["run_id"]
        assert x["target_proof"], x["run_id"]
        if not compile_targets.TARGETS[x["compile"]].inductor:
            assert "no generated kernel" in x["target_proof"]
            assert int(float(x["generated_kernels"] or 0)) == 0
    by = {(x["variant"], x["compile"]): x for x in rows}
    assert by[("naive", "cpp_wrapper")]["target_proof"] == "the wrapper is C++"
    assert "CUDA graphs do not apply" in by[("naive", "cudagraphs")]["notes"]
    for variant in ("naive", "flash"):
        aoti = by[(variant, "aot_inductor")]
        run = d / aoti["run_id"]
        assert (run / "generated" / "aot_inductor.pt2").exists()
        assert list((run / "generated").glob("output_code_*.cpp")), "AOTInductor's source"
        assert "each in the package's source" in aoti["target_proof"]
        assert float(aoti["compile_s"]) > 0 and "torch.export" in aoti["notes"]
    run = d / by[("naive", "aot_inductor")]["run_id"]
    made = [k for k in io.read_csv(run / "kernels.csv") if k["source_file"]]
    assert made, "naive's fused softmax kernel is matched to AOTInductor's C++ source"
    for k in made:
        assert (run / k["source_file"]).exists() and Path(k["source_file"]).suffix == ".cpp"
    flash = io.read_csv(d / by[("flash", "aot_inductor")]["run_id"] / "kernels.csv")
    assert any("flash_attention" in k["kernel"] for k in flash), "the aten op behind the shim"


def test_aot_inductor_cannot_train_and_says_so_in_a_row(tmp_path):
    r = cli(
        "variant=linear", "compile=aot_inductor", "pass=train_step", f"out_root={tmp_path}", *TINY
    )
    assert r.returncode == 0, r.stderr[-3000:]
    (run,) = (tmp_path / "runs").iterdir()
    (row,) = io.read_csv(run / "run.csv")
    assert row["status"] == "unsupported"
    assert "no backward" in row["reason"] and "pass=fwd" in row["reason"]
