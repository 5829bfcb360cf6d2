"""study.measure.gpu_power: the power cap's share and the mean power around the timed rounds, from
NVML's counters read before and after (a fake NVML here; the H200 has nvidia-ml-py)."""

import sys
import types

from study.measure import gpu_power


def _fake_nvml(monkeypatch, energy_mj, capped_ns, fail=None):
    reads = {"i": 0}
    nv = types.ModuleType("pynvml")
    nv.NVML_PERF_POLICY_POWER = 0
    nv.nvmlInit = lambda: None
    picked = {}

    def by_index(i):
        picked["index"] = i
        return "h"

    def by_uuid(u):
        picked["uuid"] = u
        return "h"

    def energy(h):
        if fail:
            raise RuntimeError(fail)
        return energy_mj[min(reads["i"], 1)]

    def violation(h, policy):
        v = types.SimpleNamespace(violationTime=capped_ns[min(reads["i"], 1)])
        reads["i"] += 1
        return v

    nv.nvmlDeviceGetHandleByIndex, nv.nvmlDeviceGetHandleByUUID = by_index, by_uuid
    nv.nvmlDeviceGetTotalEnergyConsumption, nv.nvmlDeviceGetViolationStatus = energy, violation
    monkeypatch.setitem(sys.modules, "pynvml", nv)
    return picked


def test_a_capped_gemm_run_reads_its_power_and_capped_share(monkeypatch):
    """2 s at 690 W, capped 1.8 s of them (clock_probe on the H200: 690 W, SW power cap)."""
    picked = _fake_nvml(monkeypatch, energy_mj=[1_000_000, 1_000_000 + 1_380_000],
                        capped_ns=[5e9, 5e9 + 1.8e9])  # fmt: skip
    monkeypatch.setattr(gpu_power, "_uuid", lambda: "GPU-abcd")  # torch's device, by UUID
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "3")
    clock = iter([100.0, 102.0])
    monkeypatch.setattr(gpu_power.time, "monotonic", lambda: next(clock))
    with gpu_power.GpuPower("cuda") as p:
        pass
    assert p.why is None and picked == {"uuid": "GPU-abcd"}  # not NVML's GPU 3: its order differs
    assert p.row() == {"gpu_power_w": 690.0, "gpu_power_capped_share": 0.9}


def test_no_nvml_or_the_cpu_leaves_the_columns_blank_and_says_why(monkeypatch):
    with gpu_power.GpuPower("cpu") as p:
        pass
    assert p.row() == {"gpu_power_w": None, "gpu_power_capped_share": None} and p.why is None
    _fake_nvml(monkeypatch, [0, 0], [0, 0], fail="NVML_ERROR_NOT_SUPPORTED")
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "GPU-1234")
    with gpu_power.GpuPower("cuda") as p:
        pass
    assert p.row()["gpu_power_w"] is None
    assert p.why == "GPU power not read (NVML: RuntimeError: NVML_ERROR_NOT_SUPPORTED)"


def test_a_window_shorter_than_the_energy_counters_step_is_no_reading(monkeypatch):
    """The counter advances every 100 ms on the H200: eager flash's timed rounds (under 0.1 s)
    read the same energy twice, and the row said 0 W."""
    _fake_nvml(monkeypatch, energy_mj=[1_000_000, 1_000_000], capped_ns=[0, 0])
    clock = iter([100.0, 100.08])
    monkeypatch.setattr(gpu_power.time, "monotonic", lambda: next(clock))
    with gpu_power.GpuPower("cuda") as p:
        pass
    assert p.row() == {"gpu_power_w": None, "gpu_power_capped_share": None}
    assert "took 0.08 s, under the 1 s" in p.why


def test_without_torchs_uuid_the_gpu_is_the_first_visible_one(monkeypatch):
    picked = _fake_nvml(monkeypatch, [0, 2_000_000], [0, 0])

    def no_uuid():
        raise RuntimeError("no CUDA here")

    monkeypatch.setattr(gpu_power, "_uuid", no_uuid)
    clock = iter([100.0, 102.0, 104.0, 106.0])
    monkeypatch.setattr(gpu_power.time, "monotonic", lambda: next(clock))
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "3,1")
    with gpu_power.GpuPower("cuda") as p:
        pass
    assert picked == {"index": 3} and p.row()["gpu_power_w"] == 1000.0
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "GPU-1234")
    picked.clear()
    with gpu_power.GpuPower("cuda"):
        pass
    assert picked == {"uuid": "GPU-1234"}


def test_rounds_under_a_second_are_followed_by_steps_until_the_window_holds_one(monkeypatch):
    """49 of 50 H200 rows left the columns blank ("the timed rounds took 0.13 s, under 1 s"):
    the cell's step now runs on inside the window until it holds 1 s, and the row is read."""
    _fake_nvml(monkeypatch, energy_mj=[1_000_000, 1_000_000 + 300_000], capped_ns=[0, 0])
    now = {"t": 100.0}
    monkeypatch.setattr(gpu_power.time, "monotonic", lambda: now["t"])
    steps, syncs = [], []

    def step():
        steps.append(1)
        now["t"] += 0.01  # 10 ms a step

    with gpu_power.GpuPower("cuda") as p:
        now["t"] += 0.13  # the rounds
        filled = p.fill(step, lambda: syncs.append(1))
    assert filled == len(steps) >= 90 and syncs
    assert p.why is None and p.row()["gpu_power_w"] is not None
    with gpu_power.GpuPower("cpu") as q:
        assert q.fill(step, lambda: None) == 0  # nothing read, nothing run
