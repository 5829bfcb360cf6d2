"""Re-read a sweep's traces with the current parser: ``python -m study.reparse SWEEP_DIR``.

After a change to the trace reading, the kernel classes or the proof of backend, each cell's
kernels.csv and the trace-derived columns of its run.csv are derived again from the saved
``trace.json.gz`` and generated code (the Inductor join is redone from ``generated/``), the
pinned SDPA backend is proven again (study.observe.proof), and runs.csv/revealed.csv are rebuilt. No
GPU needed: a GPU sweep can be re-read on a laptop. Cells without a trace are left as they
are. A proof decides only between ``ok`` and ``invalid``: a row that is ``mismatch``, or
``invalid`` for another reason than its proof, keeps its status.
"""

from __future__ import annotations

import sys
from pathlib import Path

from study.observe import cudagraphs, inductor, proof, trace
from study.rows import io
from study.workloads.registry import get

KEEP = ("source_file", "fused_ops", "inductor_kind")


def _sdpa(variant: str) -> tuple[bool, str | None]:
    """(whether the variant's backend is proven, the backend it pins)."""
    try:
        e = get(variant)
    except KeyError:
        return False, None
    return e.family == "attention" and (
        e.sdpa_backend is not None or e.name == "sdpa"
    ), e.sdpa_backend


def reparse_run(run_dir: Path) -> bool:
    path = run_dir / "trace.json.gz"
    if not path.exists() or not (run_dir / "run.csv").exists():
        return False
    row = io.read_csv(run_dir / "run.csv")[0]
    rows, summary = trace.parse(trace.load_events(path), row["device"])
    op_names = summary.pop("op_names", [])
    summary.pop("profile_note", None)
    generated = inductor.analyse(run_dir) if (run_dir / "generated").exists() else {}
    old = (
        {k["kernel"]: k for k in io.read_csv(run_dir / "kernels.csv")}
        if (run_dir / "kernels.csv").exists()
        else {}
    )
    inductor.join(rows, generated)
    for k in rows:  # a run dir without its generated code keeps the join it had
        for c in KEEP:
            if not k.get(c) and old.get(k["kernel"], {}).get(c):
                k[c] = old[k["kernel"]][c]
    meta = {c: row[c] for c in ("run_id", "variant", "compile", "device", "dtype")}
    io.write_csv(run_dir / "kernels.csv", [{**meta, **k} for k in rows], "kernels")
    cudagraphs.keep_share(summary, row["compile"])
    row.update({k: v for k, v in summary.items() if k in row})
    proven, backend = _sdpa(row["variant"])
    decided = row["status"] == "ok" or (
        row["status"] == "invalid" and proof.is_proof_reason(row.get("reason", ""))
    )
    if decided:
        status, reason = "ok", ""
        if proven:
            p = proof.prove_pass(backend, rows, op_names, generated)
            row["backend_seen"], row["backend_proof"] = p["backend_seen"], p["backend_proof"]
            status, reason = ("ok", "") if p["ok"] else ("invalid", p["reason"])
        t = proof.prove_target(row["compile"], row["device"], rows, generated, row)
        row["target_proof"] = t["proof"]
        if status == "ok" and not t["ok"]:
            status, reason = "invalid", t["reason"]
        row["status"], row["reason"] = status, reason
    io.write_csv(run_dir / "run.csv", [row], "runs")
    return True


def main(sweep: Path) -> int:
    n = sum(reparse_run(p.parent) for p in io.run_csvs(sweep))
    io.aggregate(sweep)
    return n


if __name__ == "__main__":
    if len(sys.argv) != 2 or not (Path(sys.argv[1]) / "runs.csv").exists():
        sys.exit(
            "usage: python -m study.reparse SWEEP_DIR  (a sweep dir holds runs.csv, e.g. "
            "outputs/sweeps/<time>)"
        )
    print(f"re-read {main(Path(sys.argv[1]))} traces under {sys.argv[1]}")
