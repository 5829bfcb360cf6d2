"""An independent reader of the profiler traces: HolisticTraceAnalysis (HTA) parses the H200
fixture traces on its own, and kernels per step counted from its events agree with
``study.observe.trace``. HTA's own iteration column assigns GPU events by their GPU-side time (naive
eager: 21 kernels in one step), so the count here does what the trace shows: CPU-side
``ProfilerStep#N`` rows by category, each device event matched to its launch by correlation id.
Test-only: HTA is in the ``dev`` extra."""

import shutil
from collections import Counter

import pytest

from study.observe import trace
from tests.conftest import FIXTURES

pytest.importorskip("hta", reason="HolisticTraceAnalysis is not installed: pip install -e '.[dev]'")

TRACES = sorted(p.name.removesuffix(".trace.json.gz") for p in FIXTURES.glob("*.trace.json.gz"))
DEVICE = {"kernel", "gpu_memcpy", "gpu_memset"}
LAUNCH = {"cuda_runtime", "cuda_driver"}


def hta_counts(path, tmp_path) -> list[Counter]:
    """Per CPU-side profiler step, how many times each device event name ran, read by HTA."""
    from hta.common.trace import Trace

    d = tmp_path / path.name.split(".")[0]
    d.mkdir()
    shutil.copy(path, d / path.name)
    t = Trace(trace_dir=str(d))
    t.parse_traces()
    df = t.get_trace(0)
    sym = t.symbol_table.get_sym_table()
    df = df.assign(cat_s=df["cat"].map(lambda i: sym[i]), name_s=df["name"].map(lambda i: sym[i]))
    steps = df[(df["cat_s"] == "user_annotation") & df["name_s"].str.startswith("ProfilerStep#")]
    launches = df[df["cat_s"].isin(LAUNCH) & (df["correlation"] > 0)]
    launch_of = {
        c: row for c, row in zip(launches["correlation"], launches.itertuples(), strict=True)
    }
    per_step = {s: Counter() for s in steps["name_s"]}
    for ev in df[df["cat_s"].isin(DEVICE)].itertuples():
        la = launch_of.get(ev.correlation)
        if la is None:
            continue
        hit = steps[
            (steps["pid"] == la.pid)
            & (steps["tid"] == la.tid)
            & (steps["ts"] <= la.ts)
            & (la.ts < steps["ts"] + steps["dur"])
        ]
        if len(hit):
            per_step[hit["name_s"].iloc[0]][ev.name_s] += 1
    return list(per_step.values())


@pytest.mark.parametrize("name", TRACES)
def test_hta_agrees_on_kernels_per_step(name, tmp_path):
    path = FIXTURES / f"{name}.trace.json.gz"
    rows, summary = trace.parse(trace.load_events(path), "cuda")
    steps = hta_counts(path, tmp_path)
    assert len(steps) == summary["profiled_steps"], name
    totals = [sum(c.values()) for c in steps]
    assert len(set(totals)) == 1, f"{name}: HTA sees {totals} per step"
    assert totals[0] == summary["kernels_per_step"], (
        f"{name}: HTA {totals[0]}, study.observe.trace {summary['kernels_per_step']}"
    )
    ours = Counter()
    for r in rows:
        ours[r["kernel"]] += r["calls_per_step"]
    assert steps[0] == ours, name  # the same kernels, each as often
