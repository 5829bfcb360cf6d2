"""Around the timed rounds, what the GPU's power limit did: the mean power drawn and the share
of the time its clocks were held down by the power cap, from NVML's own counters (the energy
used, and the time spent under the power policy), read once before and once after, so nothing
runs beside the timing. Rounds shorter than the 1 s the counter needs are followed by the
cell's step back to back until the window holds 1 s (``fill``), still inside the window.

Why: on the H200, back-to-back GEMMs reach the board's 700 W within a second and the driver
caps the SM clock at 1,560-1,725 MHz (clock-event reason SW power cap; benchmarks/clock_probe.py,
2026-12-02). A GEMM-bound cell's µs then depend on how long the GPU ran flat out, and the row
should say whether it ran capped. None of this on the CPU, or where NVML (nvidia-ml-py) is
missing or refuses: the columns stay blank and the note says why.
"""

from __future__ import annotations

import os
import time

# NVML's energy counter advanced every 97-107 ms on the H200 (2026-12-03): a shorter window
# read 0 W (eager flash's timed rounds), and 1 s keeps the step's error within about 10%.
MIN_WINDOW_S = 1.0


def _uuid() -> str:
    """The UUID of the GPU torch runs on, as NVML writes it ("GPU-..."). CUDA's device order
    and numbering need not be NVML's (CUDA_DEVICE_ORDER, cgroups under SLURM); the UUID is one."""
    import torch

    uuid = str(torch.cuda.get_device_properties(torch.cuda.current_device()).uuid)
    return "GPU-" + uuid.removeprefix("GPU-")


def _handle(nvml):
    """The NVML handle of the GPU this process uses: by its UUID; else (no UUID from torch) the
    first CUDA_VISIBLE_DEVICES entry, an index or a UUID (the sweep's scheduler gives a cell one)."""
    try:
        return nvml.nvmlDeviceGetHandleByUUID(_uuid())
    except Exception:  # noqa: BLE001 - torch or NVML without the UUID: the variable says which
        first = os.environ.get("CUDA_VISIBLE_DEVICES", "0").split(",")[0].strip() or "0"
        if first.isdigit():
            return nvml.nvmlDeviceGetHandleByIndex(int(first))
        return nvml.nvmlDeviceGetHandleByUUID(first)


class GpuPower:
    """``with GpuPower(device) as p: ...`` then ``p.row()`` (the columns) and ``p.why``."""

    def __init__(self, device: str):
        self.device = device
        self.why: str | None = None
        self.watts = self.capped = None
        self._nvml = self._h = None

    def _read(self) -> tuple[float, float, float]:
        nv = self._nvml
        energy_mj = nv.nvmlDeviceGetTotalEnergyConsumption(self._h)
        capped_ns = nv.nvmlDeviceGetViolationStatus(
            self._h, nv.NVML_PERF_POLICY_POWER
        ).violationTime
        return time.monotonic(), float(energy_mj), float(capped_ns)

    def __enter__(self):
        if self.device != "cuda":
            return self
        try:
            import pynvml

            pynvml.nvmlInit()
            self._nvml, self._h = pynvml, _handle(pynvml)
            self._start = self._read()
        except Exception as e:  # noqa: BLE001 - a missing or refusing NVML costs the columns only
            self.why = f"GPU power not read (NVML: {type(e).__name__}: {e})"
            self._nvml = None
        return self

    def fill(self, step, sync) -> int:
        """Run ``step`` back to back until the window holds ``MIN_WINDOW_S`` (NVML's counter
        needs it; most forward cells' rounds take 0.1-0.7 s on the H200), then ``sync``: the
        power of the cell's own steady state. Returns the steps run (0: the window was long
        enough, or nothing is read)."""
        if self._nvml is None:
            return 0
        n, t0 = 0, self._start[0]
        while time.monotonic() - t0 < MIN_WINDOW_S * 1.05:
            for _ in range(10):
                step()
            n += 10
            sync()
        return n

    def __exit__(self, *exc):
        if self._nvml is None:
            return False
        try:
            t, e, c = self._read()
            t0, e0, c0 = self._start
            if t - t0 < MIN_WINDOW_S:
                self.why = (
                    f"GPU power not read: the timed rounds took {t - t0:.2f} s, under the "
                    f"{MIN_WINDOW_S:g} s NVML's energy counter needs (it advances every 100 ms)"
                )
            else:
                self.watts = (e - e0) / 1e3 / (t - t0)
                self.capped = min(1.0, max(0.0, (c - c0) / 1e9 / (t - t0)))
        except Exception as e:  # noqa: BLE001 - as above
            self.why = f"GPU power not read (NVML: {type(e).__name__}: {e})"
        return False

    def row(self) -> dict:
        return {"gpu_power_w": self.watts, "gpu_power_capped_share": self.capped}
