"""analysis.compare across GPUs (issue 70): a cell whose two sides ran on different GPUs has its
change split into its kernels' (grouped by the ceiling that bounds them, each side against its
own ceilings) and its host's, and the one that decided its latency is said. Made-up rows of an
H200 and an H100 whose kernels follow the ceilings' law by hand. No torch."""

import pandas as pd
import pytest

from analysis.compare import main

H200 = ("NVIDIA H200", 760.0, 4100.0)  # name, TFLOP/s, GB/s
H100 = ("NVIDIA H100 80GB HBM3", 750.0, 2900.0)
# cell: (flops, bytes_min, host units, compiled kernels); a kernel: (class, µs on A, calls).
# The ridge points: A 185 FLOP/B, B 259.
CELLS = {
    "gemm": (1e12, 1e9, 2.0,  # intensity 1000: its GEMM compute-bound on both
             [("gemm_cublas", 500, 1), ("triton_pointwise", 5, 1)]),
    "pointwise": (1e9, 1e9, 2.0,  # intensity 1: even its skinny GEMM follows bandwidth
                  [("triton_pointwise", 200, 1), ("gemm_cublas", 100, 1)]),
    "ridge": (2.2e11, 1e9, 1.0,  # intensity 220: over A's ridge, under B's
              [("gemm_cublas", 100, 1)]),
    "host": (1e9, 1e9, 3.0,  # 1-2 µs launches and one 4 µs kernel: host-bound, G 13 -> 16 µs
             [("triton_pointwise", 6, 3), ("triton_reduction", 4, 1)]),
    "nohost": (1e12, 1e9, 1.0, [("flash", 50, 1)]),  # B without host_units
}  # fmt: skip
G = (13.0, 16.0)


def on_b(cls, us, calls, v):
    """A kernel's µs on B: by the ceiling that bounds it there (B's own ridge), by hand."""
    if us / calls < 3 or cls == "other":
        return us  # a launch under 3 µs a call: as measured
    flops, nbytes = CELLS[v][:2]
    compute = cls in ("gemm_cublas", "flash") and flops / nbytes > H100[1] / H100[2] * 1e3
    return us * (H200[1] / H100[1] if compute else H200[2] / H100[2])


def sweep(tmp_path, name, gpu, g):
    runs, kernels = [], []
    b = gpu is H100
    for v, (flops, nbytes, units, ks) in CELLS.items():
        rid = f"variant={v},compile=default"
        dev = 0.0
        for cls, us, calls in ks:
            t = on_b(cls, us, calls, v) if b else us
            dev += t
            kernels.append({"run_id": rid, "variant": v, "compile": "default", "device": "cuda",
                            "dtype": "bf16", "kernel": f"{cls}_k", "kernel_short": f"{cls}_k", "kernel_class": cls,
                            "phase": "fwd", "calls_per_step": calls, "us_per_step": t,
                            "mean_us": t / calls})  # fmt: skip
        units = None if v == "nohost" and b else units
        host = units * g if units else 0.0
        for mode in ("off", "default"):
            lat = max(dev, host) * (1.5 if mode == "off" else 1.0)
            runs.append({"run_id": f"variant={v},compile={mode}", "variant": v, "compile": mode,
                         "device": "cuda", "dtype": "bf16", "pass": "fwd", "status": "ok", "family": "made_up",
                         "latency_median_us": lat, "device_time_us": dev * (1.5 if mode == "off" else 1),
                         "device_time_method": "cuda_graph_replay_x20", "device_name": gpu[0],
                         "peak_tflops": gpu[1], "peak_gbps": gpu[2], "flops": flops,
                         "bytes_min": nbytes, "host_units": units, "host_gauge_us": g,
                         "host_us": units * g if units else None})  # fmt: skip
    d = tmp_path / name
    d.mkdir()
    pd.DataFrame(runs).to_csv(d / "runs.csv", index=False)
    pd.DataFrame(kernels).to_csv(d / "kernels.csv", index=False)
    return d


@pytest.fixture
def across(tmp_path, capsys):
    a, b = sweep(tmp_path, "a", H200, G[0]), sweep(tmp_path, "b", H100, G[1])
    assert main([str(a), str(b), "--out", str(tmp_path / "out")]) == 0
    out = capsys.readouterr().out
    m = pd.read_csv(tmp_path / "out" / "compare.csv")
    assert m.loc[m["compile"] == "off", "gpu_decided"].isna().all()  # eager cells: not split
    m = m[m["compile"] == "default"].set_index("variant")
    return out, m, (tmp_path / "out" / "compare.md").read_text()


def test_each_cell_is_split_into_its_kernels_by_ceiling_and_its_host(across):
    _, m, _ = across
    assert m["gpu_a"].dropna().unique().tolist() == ["NVIDIA H200"]
    assert m.loc["gemm", "gpu_peak_gbps_ratio"] == pytest.approx(2900 / 4100)
    # the pointwise cell: its pointwise kernel and its GEMM (intensity 1) follow bandwidth
    pw = m.loc["pointwise"]
    assert (pw["gpu_memory_us_a"], pw["gpu_compute_us_a"]) == (300, 0)
    assert pw["gpu_memory_ratio"] == pytest.approx(4100 / 2900)
    assert pw["gpu_memory_moved"] == "with bandwidth"
    # the GEMM cell's GEMM stays compute-bound and barely moves; its pointwise kernel follows B/W
    gm = m.loc["gemm"]
    assert (gm["gpu_compute_us_a"], gm["gpu_memory_us_a"]) == (500, 5)
    assert gm["gpu_compute_ratio"] == pytest.approx(760 / 750)
    assert gm["gpu_compute_moved"] == "did not move"
    assert gm["gpu_memory_moved"] == "with bandwidth"
    # each side against its own ridge: intensity 220 is compute-bound on A, memory-bound on B
    r = m.loc["ridge"]
    assert (r["gpu_compute_us_a"], r["gpu_memory_us_a"]) == (100, 0)
    assert r["gpu_compute_us_b"] == 0 and r["gpu_memory_us_b"] == pytest.approx(100 * 4100 / 2900)
    # launches under 3 µs a call stay as measured (floor)
    h = m.loc["host"]
    assert (h["gpu_floor_us_a"], h["gpu_floor_us_b"]) == (6, 6)
    assert (h["gpu_host_units_a"], h["gpu_g_a"], h["gpu_host_us_a"]) == (3, 13, 39)
    assert h["gpu_host_us_b"] == 48


def test_decided_by(across):
    _, m, md = across
    d = m["gpu_decided"].to_dict()
    assert d == {
        "gemm": "neither (latency within ±5%)",
        "pointwise": "device (memory-bound kernels 1.41x slower, with bandwidth 1.41x lower)",
        "ridge": "device (memory-bound kernels 0 → 141 µs a step)",
        "host": "host (G 13 → 16 µs)",
        "nohost": "unknown (no host figures)",
    }
    assert "## Across GPUs" in md
    row = next(x for x in md.splitlines() if x.startswith("| a: pointwise"))
    assert "| NVIDIA H200 → NVIDIA H100 80GB HBM3 | TFLOP/s 0.987x, GB/s 0.707x |" in row
    assert "| 300 → 424 (1.41x, with bandwidth) |" in row
    nohost = next(x for x in md.splitlines() if x.startswith("| a: nohost"))
    assert "| no host_units in B |" in nohost


def test_the_console_line(across):
    out, _, _ = across
    # a regression between two GPUs says what decided it (the GPU change, not the code)
    reg = [x for x in out.splitlines() if x.startswith("  regressed: a: pointwise · default")]
    assert reg and reg[0].endswith("; other GPU, decided by device (memory-bound kernels 1.41x "
                                   "slower, with bandwidth 1.41x lower)")  # fmt: skip
    line = next(x for x in out.splitlines() if x.startswith("across GPUs"))
    assert line == (
        "across GPUs (NVIDIA H200 → NVIDIA H100 80GB HBM3): 5 cells; device decided 2, host 1, "
        "neither 1, unknown 1; memory-bound kernels moved 1.41x against bandwidth 1.41x, "
        "compute-bound 1.01x against compute 1.01x"
    )


def test_the_same_gpu_says_nothing_across(tmp_path, capsys):
    a, b = sweep(tmp_path, "a", H200, G[0]), sweep(tmp_path, "b", H200, G[1])
    assert main([str(a), str(b), "--out", str(tmp_path / "out")]) == 0
    assert "across GPUs" not in capsys.readouterr().out
    assert "Across GPUs" not in (tmp_path / "out" / "compare.md").read_text()
    assert not [c for c in pd.read_csv(tmp_path / "out" / "compare.csv") if c.startswith("gpu_")]


def test_without_kernels_the_device_verdict_names_no_kernel_group(tmp_path, capsys):
    """Review: with no kernels.csv on either side every group moved 0 µs, and the verdict read
    "device (compute-bound kernels  →  µs a step)"."""
    a, b = sweep(tmp_path, "a", H200, G[0]), sweep(tmp_path, "b", H100, G[1])
    for d in (a, b):
        (d / "kernels.csv").unlink()
    assert main([str(a), str(b), "--out", str(tmp_path / "out")]) == 0
    m = pd.read_csv(tmp_path / "out" / "compare.csv").set_index("variant")
    device = [d for d in m["gpu_decided"].dropna() if d.startswith("device")]
    assert device and set(device) == {"device (no kernels to split it by ceiling)"}
