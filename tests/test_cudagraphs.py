"""Did CUDA graphs apply? The share of device time a graph's replay launched (real H200 traces),
graphs and partitions from cudagraph trees and Inductor's graphs, skip reasons with their
counts, and the report's table."""

import csv
import sys
import types
from collections import Counter

import pandas as pd
import pytest

from analysis import report
from analysis.tables import cudagraphs as tables_cudagraphs
from study.observe import cudagraphs as cg
from study.observe import trace
from tests.conftest import FIXTURES

DEVICE = {"kernel", "gpu_memcpy", "gpu_memset"}


def _share_by_hand(events) -> float:
    """Device time launched by cudaGraphLaunch over all device time whose launch lies in a
    CPU-side ProfilerStep: counted straight from the events, without the parser."""
    steps = [e for e in events if e.get("ph") == "X" and e.get("cat") == "user_annotation"
             and e["name"].startswith("ProfilerStep#")]  # fmt: skip
    launch = {e["args"]["correlation"]: e for e in events
              if e.get("cat") in ("cuda_runtime", "cuda_driver") and "correlation" in e.get("args", {})}  # fmt: skip
    in_graph = total = 0.0
    for e in events:
        if e.get("cat") not in DEVICE:
            continue
        la = launch.get(e["args"].get("correlation"))
        if la is None or not any(s["ts"] <= la["ts"] <= s["ts"] + s["dur"] for s in steps):
            continue
        total += e["dur"]
        in_graph += e["dur"] if la["name"] == "cudaGraphLaunch" else 0.0
    return in_graph / total


def _share_from_kernels_csv(name: str) -> float:
    """The same share from the kernels.csv the H200 run wrote with its own parser."""
    rows = list(csv.DictReader(open(FIXTURES / f"{name}.kernels.csv")))
    total = sum(float(r["us_per_step"]) for r in rows)
    return sum(float(r["us_per_step"]) for r in rows if r["graph_launched"] == "True") / total


def test_the_share_of_device_time_in_graphs_from_a_real_reduce_overhead_trace():
    events = trace.load_events(FIXTURES / "h200_naive_reduce_overhead.trace.json.gz")
    _, s = trace.parse(events, "cuda")
    by_hand = _share_by_hand(events)
    assert 0.5 < by_hand < 1.0  # the input copies ran outside the graph
    assert s["cudagraph_kernel_share"] == pytest.approx(by_hand, rel=1e-9)
    assert s["cudagraph_kernel_share"] == pytest.approx(
        _share_from_kernels_csv("h200_naive_reduce_overhead"), rel=1e-6
    )


@pytest.mark.parametrize("name", ["h200_naive_eager", "h200_naive_default", "h200_flash_eager"])
def test_no_graph_no_share_and_blank_outside_cuda_graph_targets(name):
    _, s = trace.parse(trace.load_events(FIXTURES / f"{name}.trace.json.gz"), "cuda")
    assert s["cudagraph_kernel_share"] == 0.0  # measured: nothing was graph-launched
    for mode in ("off", "default", "max-autotune-no-cudagraphs"):
        assert "cudagraph_kernel_share" not in cg.keep_share(dict(s), mode)
    assert cg.keep_share(dict(s), "reduce-overhead")["cudagraph_kernel_share"] == 0.0


def test_the_cpu_trace_has_no_share():
    ev = [trace_event("ProfilerStep#1", "user_annotation", 0, 100, 1),
          trace_event("aten::mm", "cpu_op", 10, 50, 1)]  # fmt: skip
    _, s = trace.parse(ev, "cpu")
    assert s.get("cudagraph_kernel_share") is None


def trace_event(name, cat, ts, dur, tid, **args):
    return {"ph": "X", "name": name, "cat": cat, "ts": ts, "dur": dur, "tid": tid, "args": args}


def test_the_share_from_kernels_csv_for_rows_older_than_the_column():
    for name in ("h200_flash_reduce_overhead", "h200_naive_reduce_overhead"):
        k = pd.read_csv(FIXTURES / f"{name}.kernels.csv")
        (got,) = tables_cudagraphs.kernel_share(k).values()
        assert got == pytest.approx(_share_from_kernels_csv(name))
    flash = pd.read_csv(FIXTURES / "h200_flash_reduce_overhead.kernels.csv")
    (got,) = tables_cudagraphs.kernel_share(flash).values()
    assert got < 0.75  # the foreach copy of the inputs ran outside the graph


def test_reasons_carry_their_counts_most_first():
    assert cg.reasons_text({"a": 1, "b": 3}) == "b (x3) | a (x1)"
    assert cg.reasons_text({}) == ""


class _Node:
    def __init__(self, fid, *children):
        self.wrapped_function = types.SimpleNamespace(id=fid)
        self.children = {}
        for c in children:
            self.children.setdefault(c.wrapped_function.id, []).append(c)


def _fake_trees(monkeypatch, managers):
    mod = types.SimpleNamespace(
        local=object(),
        get_obj=lambda local, name: {
            i: types.SimpleNamespace(tree_manager=m) for i, m in enumerate(managers)
        },  # fmt: skip
    )
    monkeypatch.setitem(sys.modules, "torch._inductor.cudagraph_trees", mod)


def test_graphs_and_partitions_from_the_cudagraph_trees(monkeypatch):
    # functions 0, 1, 2 handed to the tree; 0 then 1 recorded, 0 re-recorded; 2 never
    tree = types.SimpleNamespace(
        ids_to_funcs={0: "f0", 1: "f1", 2: "f2"},
        roots={0: [_Node(0, _Node(1)), _Node(0)]},
    )
    _fake_trees(monkeypatch, [tree, types.SimpleNamespace(ids_to_funcs={}, roots=None)])
    assert cg._trees() == (3, 3, 2)


def test_the_watch_counts_partitions_left_out_and_reasons_unlogged(monkeypatch):
    from torch._dynamo.utils import counters

    tree = types.SimpleNamespace(ids_to_funcs={0: "p0", 1: "p1", 2: "p2"},
                                 roots={0: [_Node(0, _Node(1))]})  # fmt: skip
    _fake_trees(monkeypatch, [tree])
    monkeypatch.setitem(counters, "inductor", Counter(cudagraph_skips=3))
    w = cg.Watch()
    w.original = object()  # entered
    # a graph split in 3 (2 for CUDA graphs), one unsplit one whose CUDA graphs were turned off
    w._saw(types.SimpleNamespace(counter_deltas={"cudagraph_partitions": 3},
                                 partition_maps=["m0", "m1"]), {"cudagraphs": True})  # fmt: skip
    w._saw(types.SimpleNamespace(counter_deltas={}, partition_maps=[]), {"cudagraphs": False})
    w.messages.counts.update({"skipping cudagraphs due to mutated inputs": 2})
    # graph partition turned two graphs off in post_compile without a message or a count
    info = types.SimpleNamespace(cudagraph_fail_reasons=["incompatible ops"])
    for g in (
        types.SimpleNamespace(counter_deltas={}, partition_maps=[]),
        types.SimpleNamespace(counter_deltas={}, partition_maps=[], cudagraph_info=info),
    ):
        w._saw(g, {"cudagraphs": False}, before=(True, 2, 3))
    got = w.read()
    assert got["cudagraph_graphs"] == 2 and got["cudagraph_partitions"] == 2
    # 1 left out of the split graph + 1 of the graph turned off + 2 turned off silently + p2
    assert got["cudagraph_partitions_skipped"] == 5
    assert got["cudagraph_skips"] == 3
    assert got["cudagraph_skip_reasons"] == (
        f"skipping cudagraphs due to mutated inputs (x2) | {cg.NO_PARTITION} (x1) | "
        f"skipping cudagraphs due to ['incompatible ops'] (x1) | {cg.UNLOGGED} (x1)"
    )


def test_the_watch_hears_every_skip_message_torch_logs():
    import logging

    w = cg.Watch()
    log = logging.getLogger("test.cudagraphs.watch")

    def log_cudagraph_skip_and_bump_counter(msg):  # torch's own name: its warnings are skips
        log.warning(msg)

    def maybe_warning_due_to_dynamic_shape():  # a warning on the same log that is no skip
        log.warning("CUDAGraph supports dynamic shapes by recording a new graph for each ...")

    log.addHandler(w.messages)
    try:
        for _ in range(2):
            log_cudagraph_skip_and_bump_counter("skipping cudagraphs due to cpu device (arg0_1)")
        log_cudagraph_skip_and_bump_counter(
            "skipping cudagraph due to function 0 exceeding max re-recording limit"
        )
        maybe_warning_due_to_dynamic_shape()
    finally:
        log.removeHandler(w.messages)
    assert w.messages.counts == {
        "skipping cudagraphs due to cpu device (arg0_1)": 2,
        "skipping cudagraph due to function 0 exceeding max re-recording limit": 1,
    }


def _runs():
    base = {"family": "attention", "device": "cuda", "status": "ok", "source": "s"}
    return pd.DataFrame([
        {**base, "run_id": "a", "variant": "naive", "compile": "reduce-overhead",
         "cudagraph_graphs": 1, "cudagraph_partitions": 1, "cudagraph_partitions_skipped": 0,
         "cudagraph_kernel_share": 0.92, "cudagraph_skip_reasons": ""},
        {**base, "run_id": "b", "variant": "flex", "compile": "max-autotune",
         "cudagraph_graphs": 2, "cudagraph_partitions": 2, "cudagraph_partitions_skipped": 1,
         "cudagraph_kernel_share": 0.5,
         "cudagraph_skip_reasons": "skipping cudagraphs due to cpu device (x1)"},
        {**base, "run_id": "c", "variant": "naive", "compile": "default"},
        {**base, "run_id": "d", "variant": "naive", "compile": "off"},
        {**base, "run_id": "e", "variant": "naive", "compile": "cudagraphs", "device": "cpu",
         "cudagraph_graphs": 0, "cudagraph_partitions": 0, "cudagraph_partitions_skipped": 1,
         "cudagraph_skip_reasons": "skipping cudagraphs due to cpu device (x1)"},
        {**base, "run_id": "f", "variant": "flash", "compile": "reduce-overhead"},  # older row
    ])  # fmt: skip


def test_the_report_table_says_whether_cuda_graphs_applied():
    kernels = pd.read_csv(FIXTURES / "h200_flash_reduce_overhead.kernels.csv").assign(
        source="s", run_id="f"
    )
    t = tables_cudagraphs.table(_runs(), kernels)
    by = {(v, m): x for v, m, x in zip(t["variant"], t["mode"], t.to_dict("records"), strict=True)}
    assert set(by) == {("naive", "reduce-overhead"), ("flex", "max-autotune"),
                       ("naive", "cudagraphs"), ("flash", "reduce-overhead")}  # fmt: skip
    assert by[("naive", "reduce-overhead")]["applied"] == "yes"
    assert by[("naive", "reduce-overhead")]["device time in graphs"] == "92.0%"
    flex = by[("flex", "max-autotune")]
    assert (flex["applied"], flex["graphs"], flex["not captured"]) == ("partly", "2", "1")
    assert flex["skip reasons (count)"] == "skipping cudagraphs due to cpu device (x1)"
    cpu = by[("naive", "cudagraphs")]
    assert cpu["applied"] == "no (CPU)" and cpu["device time in graphs"] == ""
    old = by[("flash", "reduce-overhead")]
    share = _share_from_kernels_csv("h200_flash_reduce_overhead")
    assert old["device time in graphs"] == f"{share:.1%}*" and old["applied"] == "yes"
    assert old["graphs"] == ""  # an older row: no count, not 0


def test_the_report_has_the_table_only_when_the_sweep_has_such_rows():
    runs = _runs()
    ds = {"runs": runs, "repeats": runs, "kernels": pd.DataFrame(), "autotune": pd.DataFrame()}
    md, toc, body = [], [], []
    report._tables((md, toc, body), ds, "src")
    assert "### Did CUDA graphs apply?" in md
    assert any("Did CUDA graphs apply?" in t for _, _, t in toc)
    plain = runs[~runs["compile"].isin(["reduce-overhead", "max-autotune", "cudagraphs"])]
    md = []
    report._tables((md, [], []), {**ds, "runs": plain, "repeats": plain}, "src")
    assert "### Did CUDA graphs apply?" not in md


@pytest.mark.slow
def test_a_cpu_cell_under_reduce_overhead_says_cuda_graphs_never_applied(run_inline):
    """On the CPU no CUDA graph is recorded and every compiled graph runs outside one: 0 graphs
    and partitions captured, the forward's and backward's pieces not captured, the skip torch
    counted without a message said as such; no share (no device trace). A target without CUDA
    graphs, in the same process after it, leaves every column blank."""
    row, _, _ = run_inline("variant=mlp", "compile=reduce-overhead", "pass=fwd_bwd", name="ro")
    assert row["status"] == "ok", row["reason"]
    assert (row["cudagraph_graphs"], row["cudagraph_partitions"]) == (0, 0)
    assert row["cudagraph_partitions_skipped"] == 2  # the forward's graph and the backward's
    assert row["cudagraph_skips"] >= 1
    assert cg.UNLOGGED in row["cudagraph_skip_reasons"]
    assert row.get("cudagraph_kernel_share") is None
    assert "CUDA graphs do not apply" in row["notes"]
    row, _, _ = run_inline("variant=mlp", "compile=default", name="default")
    assert row["status"] == "ok", row["reason"]
    assert all(row.get(c) is None for c in cg.COLUMNS)
