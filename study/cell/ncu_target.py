"""The process Nsight Compute and Nsight Systems profile for a cell (study.observe.ncu starts it):

    python -m study.cell.ncu_target RUN_DIR

It rebuilds the cell's workload from RUN_DIR/cell.yaml (same seed, same compile mode, same SDPA
pin and the cell's still-present compile cache), warms up outside the NVTX range, then calls it
``ncu.launch_count`` times inside it.
"""

from __future__ import annotations

import sys
from pathlib import Path

import torch

from study.cell import compiling, regional
from study.cell.build import build_workload, resolve_device, sdpa_pin
from study.config import compile_targets
from study.config.cell_config import load_cell_config, plain
from study.observe import inductor as ind
from study.observe import ncu


def target(run_dir: Path) -> None:
    """The process ncu/nsys profile: the cell's workload, warm-up, then calls in an NVTX range."""
    cfg = load_cell_config(str(run_dir / "cell.yaml"))
    device = resolve_device(plain(cfg.device))
    _, _, wl = build_workload(cfg, device)
    c = cfg.compile
    if c.mode != "off":  # the same compiled code as the cell (same cache key)
        ind.apply({**compile_targets.get(c.mode).patches, **({"freezing": True} if c.freezing else {}),
                   **dict(c.inductor)})  # fmt: skip
    package = run_dir / "ncu" / "aot_inductor.pt2"  # aot_inductor: built again, beside the cell's
    with sdpa_pin(wl.sdpa_backend), torch.set_grad_enabled(not (c.freezing and c.mode != "off")):
        if c.regional and c.mode != "off":  # by region, as the cell compiled it
            how, kind = c.regional_how, cfg["pass"].kind  # auto: what the cell's pass chose
            fn = regional.make(wl.fn, c.mode, c.fullgraph, c.dynamic, how, cfg.variant.name,
                               kind)[0]  # fmt: skip
        else:
            fn = compiling.make(wl.fn, c.mode, c.fullgraph, c.dynamic, package)
        for _ in range(5):
            fn(*wl.inputs)
        torch.cuda.synchronize()
        with torch.cuda.nvtx.range(ncu.NVTX_RANGE):
            for _ in range(cfg.ncu.launch_count):
                fn(*wl.inputs)
            torch.cuda.synchronize()


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(
            "usage: python -m study.cell.ncu_target RUN_DIR   (run under ncu by the cell's worker)"
        )
    target(Path(sys.argv[1]))
