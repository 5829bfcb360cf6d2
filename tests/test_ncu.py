"""Nsight Compute: parse the real H200 capture, join it to kernels, and the unavailable path."""

import csv

import pytest

from study.observe import ncu
from study.sweep.scheduler import run_one
from tests.conftest import FIXTURES, TINY, compose


def rows():
    return ncu.parse_csv((FIXTURES / "ncu_flash_fwd_h200.csv").read_text())


def metric(rs, name, launch=0):
    return next(r["value"] for r in rs if r["metric"] == name and r["launch"] == launch)


def test_parse_real_h200_capture():
    rs = rows()
    assert {r["launch"] for r in rs} == {0, 1}
    assert metric(rs, "registers_per_thread") == 255
    assert metric(rs, "dynamic_smem_per_block") == 49152
    assert metric(rs, "theoretical_occupancy") == pytest.approx(12.5)
    assert metric(rs, "achieved_occupancy") == pytest.approx(11.98)
    assert metric(rs, "sm_throughput_pct") == pytest.approx(38.79)
    assert metric(rs, "dram_throughput_pct") == pytest.approx(13.99)
    assert metric(rs, "duration") == pytest.approx(93088)
    assert metric(rs, "occupancy_limiter") == "registers + shared memory"
    units = {r["metric"]: r["unit"] for r in rs}
    assert units["duration"] == "ns" and units["achieved_occupancy"] == "%"


def test_ncu_rows_join_to_trace_kernels():
    kernels = list(csv.DictReader(open(FIXTURES / "h200_flash_eager.kernels.csv")))
    name = rows()[0]["kernel"]
    assert name.startswith("void flash_fwd_kernel")  # ncu drops the pytorch_flash:: namespace
    assert ncu.match(name, kernels).startswith("void pytorch_flash::flash_fwd_kernel")
    assert ncu.match("void some_other_kernel<int>(int)", kernels) is None
    assert ncu.top_kernels(kernels, 3) == ["flash_fwd_kernel"]


@pytest.mark.slow
def test_missing_ncu_is_unavailable_and_the_cell_is_unaffected(tmp_path):
    cfg = compose(
        *TINY,
        "variant=naive",
        "ncu.enabled=true",
        "ncu.binary=/nonexistent/ncu",
        "nsys.enabled=true",
        "nsys.binary=/nonexistent/nsys",
        f"out_root={tmp_path}",
    )
    kernels = [{"kernel": "void at::native::foo_kernel<float>(float)", "us_per_step": "5"}]
    out = ncu.run(cfg, tmp_path, kernels)
    assert out["ncu_status"] == "unavailable" and "not found" in out["ncu_note"]
    assert out["nsys_status"] == "unavailable" and "not found" in out["nsys_note"]


@pytest.mark.slow
def test_ncu_error_message_is_kept(tmp_path):
    fake = tmp_path / "ncu"
    fake.write_text(
        "#!/bin/sh\necho '==ERROR== Failed to initialize the profiler: LibraryNotLoaded' >&2\nexit 1\n"
    )
    fake.chmod(0o755)
    cfg = compose(*TINY, "ncu.enabled=true", f"ncu.binary={fake}")
    out = ncu.run(cfg, tmp_path, [{"kernel": "triton_poi_fused_add_0", "us_per_step": "3"}])
    assert out["ncu_status"] == "unavailable" and "LibraryNotLoaded" in out["ncu_note"]


@pytest.mark.slow
def test_ncu_on_a_cpu_cell_is_a_clear_unavailable_row(tmp_path):
    cfg = compose(
        *TINY, "variant=naive", "ncu.enabled=true", "nsys.enabled=true", f"out_root={tmp_path}"
    )
    run_one(cfg, tmp_path / "s" / "cell", tmp_path / "s")
    row = next(csv.DictReader(open(tmp_path / "s" / "cell" / "run.csv")))
    assert row["status"] == "ok"
    assert row["ncu_status"] == "unavailable" and "CUDA" in row["ncu_note"]
    assert row["nsys_status"] == "unavailable" and "CUDA" in row["nsys_note"]
