"""Several shapes in one process with one compiled function: what dynamic shapes cost.

``shape_sweep.key=seq_len shape_sweep.sizes=[512,1024,2048,4096]``: the cell compiles and times
its first shape as usual; then, for each further shape, the same compiled function meets new
seeded inputs (marked dynamic under ``compile.dynamic=mark``): the first call's seconds (a
recompile, or none with symbolic shapes), whether Dynamo compiled, the graphs and recompiles so
far with the latest reason, and the steady-state latency under the no-recompile guard. One row
per shape in ``shapes.csv``; ``python -m analysis.tables training`` compares the modes.
"""

from __future__ import annotations

import time

from study.cell import build, compiling, passes
from study.cell.failures import classify_error
from study.measure import timing
from study.observe import inductor as ind
from study.rows import io


def run(cell) -> None:
    """The sweep for a cell that has run its first shape (study.cell.phases.Cell)."""
    import torch

    sw = cell.cfg.shape_sweep
    rows = []
    for order, value in enumerate(sw.sizes):
        r = {"order": order, "value": value, "status": "ok", "reason": ""}
        try:
            if order == 0:  # the cell's own shape: compiled (unless eager) and timed already
                r.update(first_call_s=cell.row.get("first_call_s"), compiled=cell.mode != "off")
                step = cell.step
            else:
                step, r["first_call_s"], r["compiled"] = _new_shape(cell, sw.key, value)
            with compiling.no_recompile(cell.mode, cell.cfg.compile.stance), timing.quiet():
                lat = timing.per_call(
                    step, cell.device, cell.cfg.timing.warmup, cell.cfg.timing.calls
                )
            r.update(
                latency_median_us=lat["median"],
                latency_p10_us=lat["p10"],
                latency_p90_us=lat["p90"],
            )
        except Exception as e:  # noqa: BLE001 - one shape's failure is its own row
            r["status"], r["reason"] = classify_error(e, [])
            if cell.device == "cuda":
                torch.cuda.empty_cache()
        m = ind.metrics() if cell.mode != "off" else {}
        reasons = (m.get("recompile_reasons") or "").split(" | ")
        r.update(
            graphs=m.get("graphs"),
            recompiles=m.get("recompiles"),
            recompile_reason=reasons[-1] if r.get("compiled") and order else "",
        )
        rows.append(r)
    meta = {
        "run_id": cell.row["run_id"],
        "variant": cell.row["variant"],
        "compile": cell.mode,
        "dynamic": cell.cfg.compile.dynamic,
        "pass": cell.kind,
        "key": sw.key,
    }
    io.write_csv(cell.run_dir / "shapes.csv", [{**meta, **r} for r in rows], "shapes")
    if cell.mode != "off":
        m = ind.metrics()
        cell.row.update({k: m[k] for k in ("graphs", "recompiles", "recompile_reasons")})


def _new_shape(cell, key: str, value: int):
    """(step at the new shape, its first call's seconds, whether Dynamo compiled for it)."""
    from omegaconf import OmegaConf

    cfg = OmegaConf.merge(cell.cfg, {"shape": {key: value}})
    _, _, wl = build.build_workload(cfg, cell.device)
    if cell.cfg.compile.dynamic == "mark":
        compiling.mark_dynamic(wl.inputs, value)
    tr = passes.prepare(cell.kind, wl, cell.cfg["pass"].lr)
    step = passes.make_step(cell.kind, cell.fn, wl.inputs, tr, cell.cfg.seed, cell.backward_in)
    before = compiling.compiles()
    t = time.perf_counter()
    step()
    timing.sync(cell.device)
    return step, time.perf_counter() - t, compiling.compiles() > before
