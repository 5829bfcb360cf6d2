"""benchmarks/throughput.py's account of where each GPU's time went (it prints; this checks the sums)."""

import importlib.util

from tests.conftest import ROOT

spec = importlib.util.spec_from_file_location("throughput", ROOT / "benchmarks" / "throughput.py")
throughput = importlib.util.module_from_spec(spec)
spec.loader.exec_module(throughput)


def _row(gpu, start_s, wall_s):
    return {
        "gpu_index": gpu,
        "started_at": f"2026-11-30T21:07:{start_s:02d}+00:00",
        "wall_s": str(wall_s),
    }


def test_each_gpu_its_busy_time_and_gaps_and_the_time_outside_every_cell():
    rows = [_row("0", 10, 3.0), _row("0", 14, 2.0), _row("0", 17, 1.5),  # gaps 1.0 + 1.0
            _row("1", 11, 4.0), _row("1", 16, 2.5),  # gap 1.0
            {"gpu_index": "1", "started_at": "", "wall_s": "1"}]  # fmt: skip  # unreadable: left out
    got = throughput.lanes(rows, wall=30.0)
    assert got == [
        "GPU 0: 3 cells, busy 6.5 s, gaps between cells 2.0 s (1.00 s each)",
        "GPU 1: 2 cells, busy 6.5 s, gaps between cells 1.0 s (1.00 s each)",
        "outside every cell (the sweep's start and end): 21.5 s",  # 30 - (18.5 - 10)
    ]


def test_one_gpu_sweep_and_a_re_read_sweep_without_its_wall_time():
    rows = [_row("", 0, 2.0), _row("", 3, 1.0)]
    assert throughput.lanes(rows, wall=None) == [
        "the device: 2 cells, busy 3.0 s, gaps between cells 1.0 s (1.00 s each)"
    ]
    assert throughput.lanes([], wall=5.0) == []
