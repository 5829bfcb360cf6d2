"""Where does a cell's own time go? Prints figures; asserts nothing.

    python benchmarks/cell_profile.py outputs/sweeps/<time>            # every cell of a sweep
    python benchmarks/cell_profile.py outputs/sweeps/<time> --only flash --top 40

Runs each cell of a finished sweep again, as the sweep does: forked from a fresh warm parent
(study.sweep.warm_parent), pinned to the cores a one-slot sweep gives its cells, with its own empty
compile caches (as ``cache=cold``). The cell runs under cProfile. Per cell it prints the
phases (``cell.log``'s last line), the seconds from the fork to the cell's start and from its
end to its exit being seen (the CUDA context's teardown), the modules the cell imported that the
warm parent had not, and the functions with the most cumulative time. First, the warm parent's own start:
its imports and its ``prewarm`` items. This is how the warm parent's prewarm was found (H200:
a compiled cell's overhead 1.45 -> 0.66 s). The sweep dir is only read; scratch copies go to
``--out`` (default: a temporary dir).
"""

from __future__ import annotations

import argparse
import io
import json
import pstats
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def profiled(run_dir: str, out: str) -> None:
    """The forked child's target: the cell under cProfile, then its stats and timestamps."""
    import cProfile

    before = set(sys.modules)
    from study.cell import worker

    prof = cProfile.Profile()
    start = time.time()
    prof.enable()
    worker.cell_main(run_dir, None, start)
    prof.disable()
    prof.dump_stats(f"{out}/cell.prof")
    Path(out, "modules.txt").write_text("\n".join(sorted(set(sys.modules) - before)))
    Path(out, "times.json").write_text(json.dumps({"start": start, "end": time.time()}))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("sweep_dir", type=Path)
    ap.add_argument("--only", default="", help="cells whose run dir name contains this")
    ap.add_argument("--top", type=int, default=25, help="functions to print per cell")
    ap.add_argument("--out", type=Path, help="scratch dir (default: a temporary one)")
    ap.add_argument("--timeout", type=float, default=900, help="seconds a cell may take")
    a = ap.parse_args()
    cells = sorted(p.parent for p in a.sweep_dir.glob("*/cell.yaml") if a.only in p.parent.name)
    if not cells:
        sys.exit(f"no cell.yaml under {a.sweep_dir}/*/ (with --only {a.only!r}): a sweep dir?")

    from omegaconf import OmegaConf

    from study.cell.compiling import cache_env
    from study.config.cores import allowed
    from study.measure import pinning
    from study.sweep.scheduler import gpu_id, kill_groups
    from study.sweep.warm_parent import WarmParent

    house, groups = pinning.plan(allowed(), 1, "auto")
    out = a.out or Path(tempfile.mkdtemp(prefix="cell_profile-"))
    t = time.perf_counter()
    srv = WarmParent(house)
    st = srv.status
    warm = ", ".join(
        f"{k} {v:.2f}" if isinstance(v, float) else f"{k}: {v}" for k, v in st["prewarm_s"].items()
    )
    print(
        f"warm parent ready in {time.perf_counter() - t:.1f} s: imports {st['imports_s']:.1f} s; "
        f"prewarm: {warm or 'nothing'}; CUDA initialised: torch {st['cuda_initialized']}, "
        f"driver {st['cuda_driver_initialized']}"
    )
    for cell in cells:
        scratch = out / cell.name.replace("=", "_").replace(",", "_")
        shutil.rmtree(scratch, ignore_errors=True)
        shutil.copytree(cell, scratch, ignore=shutil.ignore_patterns("generated", "*.csv", "*.log"))
        resolved = OmegaConf.to_container(OmegaConf.load(scratch / "cell.yaml"))
        env = cache_env("cold", scratch, out, resolved)  # as cache=cold: empty, its own
        if resolved.get("device") == "cuda" and st["cuda_available"]:
            env["CUDA_VISIBLE_DEVICES"] = gpu_id(0)  # as a one-GPU sweep's cell
        forked = time.time()
        rid, pid = srv.spawn(
            "benchmarks.cell_profile:profiled",
            {"run_dir": str(scratch), "out": str(scratch)},
            env,
            groups[0],
            scratch / "cell.log",
        )
        deadline = time.monotonic() + a.timeout
        while rid not in srv.exits and time.monotonic() < deadline:
            srv.read(1.0)
        rc = srv.exits.pop(rid, None)
        if rc is None:
            kill_groups([pid])
        seen = time.time()
        print(f"\n== {cell.name} ({'killed at --timeout' if rc is None else f'exit {rc}'})")
        log = (scratch / "cell.log").read_text(errors="replace").splitlines()
        print(
            "  " + next((ln for ln in reversed(log) if ln.startswith("[cell]")), "no [cell] line")
        )
        if not (scratch / "times.json").exists():
            print("  no profile: the cell died; its log: " + " | ".join(log[-5:]))
            continue
        tm = json.loads((scratch / "times.json").read_text())
        mods = (scratch / "modules.txt").read_text().split()
        print(
            f"  fork -> start {tm['start'] - forked:.3f} s; end -> exit seen {seen - tm['end']:.3f} s; "
            f"{len(mods)} modules imported that the server had not"
            + (f": {' '.join(mods[:12])}{' ...' if len(mods) > 12 else ''}" if mods else "")
        )
        buf = io.StringIO()
        pstats.Stats(str(scratch / "cell.prof"), stream=buf).sort_stats("cumulative").print_stats(
            a.top
        )
        text = buf.getvalue()
        print("  " + text[text.find("ncalls") :].rstrip().replace("\n", "\n  "))
    srv.close()
    print(f"\nscratch copies, profiles (cell.prof) and logs: {out}")


if __name__ == "__main__":
    main()
