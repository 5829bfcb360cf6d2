"""Did CUDA graphs apply? A compiled cell's CUDA-graph coverage, for the targets that use them
(reduce-overhead, max-autotune, cudagraphs: study.config.compile_targets).

``Watch`` is entered before the cell's first call and read after it and again after the
profiled steady state (cudagraph trees run a function eagerly at its 1st call, record it at
its 2nd and replay it from then on). It reads, from torch 2.11 to 2.14:

- graphs: the CUDA graphs cudagraph trees recorded (``CUDAGraphNode``s under each device's
  tree manager: ``roots`` and every node's ``children``); a re-recording is one more.
- partitions captured: the functions handed to cudagraph trees (``ids_to_funcs``: each
  partition Inductor split out for CUDA graphs, or a whole graph; the cudagraphs backend's
  forward and backward) that recorded at least one graph.
- partitions not captured: pieces Inductor compiled to run outside CUDA graphs, seen as each
  compiled graph is loaded (``CompiledFxGraph.post_compile``, on a cache hit too): a graph
  whose CUDA graphs were turned off counts all its partitions, else those its graph partition
  left out (partitions: ``counter_deltas['cudagraph_partitions']``, which Inductor counts
  where it split a graph in more than one, else 1; for CUDA graphs: ``partition_maps``); and
  the functions handed to cudagraph trees that never recorded. The cudagraphs backend has no
  Inductor graph: its whole graphs skipped at compile time (``cudagraph_skips`` after the
  first call) count instead.
- skip reasons with their counts: every message torch logs as it skips
  (``log_cudagraph_skip_and_bump_counter`` warns on ``cudagraph_utils.cudagraphs_log``),
  at compile time and at run time (re-record limit), one count per message. A graph whose
  post_compile turned CUDA graphs off without a message (the graph-partition path does so
  silently; so does a graph with no CUDA device) gives its own reason
  (``disabled_cudagraphs_reason``, else ``cudagraph_info.cudagraph_fail_reasons``, else no
  partition for CUDA graphs); any other skip torch counted without a message is said as such.

The share of the step's device time that ran inside a graph comes from the trace
(study.observe.trace: ``cudagraph_kernel_share``). Nothing here imports torch at module level.
"""

from __future__ import annotations

import logging
import sys
from collections import Counter

from study.config import compile_targets

COLUMNS = (
    "cudagraph_graphs",
    "cudagraph_partitions",
    "cudagraph_partitions_skipped",
    "cudagraph_kernel_share",
)
UNLOGGED = "no CUDA device in the graph (counted by torch without a message)"
NO_PARTITION = "no partition for CUDA graphs (Inductor's graph partition left every op out)"


def reasons_text(counts: dict[str, int]) -> str:
    """'reason (x2) | other (x1)', most first: as graph_break_reasons counts its reasons."""
    return " | ".join(f"{r} (x{n})" for r, n in sorted(counts.items(), key=lambda x: -x[1]))


def keep_share(summary: dict, mode: str) -> dict:
    """The trace summary without ``cudagraph_kernel_share`` where ``mode`` has no CUDA graphs
    (eager, default, ...): their rows leave it blank."""
    if not compile_targets.uses_cudagraphs(mode):
        summary.pop("cudagraph_kernel_share", None)
    return summary


SKIPS = "log_cudagraph_skip_and_bump_counter"  # the function whose warnings are the skips


class _Messages(logging.Handler):
    """Counts the skip messages on the cudagraphs log: the warnings ``SKIPS`` emits (others,
    such as the dynamic-shape recording warning, are not skips)."""

    def __init__(self):
        super().__init__(logging.WARNING)
        self.counts: Counter[str] = Counter()

    def emit(self, record: logging.LogRecord) -> None:
        if record.funcName == SKIPS:
            self.counts[" ".join(record.getMessage().split())] += 1


class Watch:
    """What cudagraph trees and Inductor did with CUDA graphs in this cell (see the module)."""

    def __init__(self):
        self.graphs: list[dict] = []  # one per Inductor graph loaded: {partitions, captured, on}
        self.messages = _Messages()
        self.silent: Counter[str] = Counter()  # graphs turned off without a message: their reason
        self.silent_skips = 0  # of which torch counted as skips
        self.logger = None
        self.original = None
        self.first_call_skips = None
        self.notes: list[str] = []

    def __enter__(self):
        try:
            from torch._inductor import cudagraph_utils
            from torch._inductor.output_code import CompiledFxGraph
        except ImportError as e:  # a torch without them: the columns stay blank
            self.notes.append(f"CUDA-graph coverage not read: {e}")
            return self
        self.logger = cudagraph_utils.cudagraphs_log
        self.logger.addHandler(self.messages)
        self.original = CompiledFxGraph.post_compile
        watch, original = self, self.original

        def post_compile(graph, example_inputs, constants, graph_kwargs, *rest, **kw):
            before = watch._state(graph_kwargs)
            out = original(graph, example_inputs, constants, graph_kwargs, *rest, **kw)
            watch._saw(graph, graph_kwargs, before)
            return out

        CompiledFxGraph.post_compile = post_compile
        return self

    def __exit__(self, *exc):
        if self.logger is not None:
            self.logger.removeHandler(self.messages)
        if self.original is not None:
            from torch._inductor.output_code import CompiledFxGraph

            CompiledFxGraph.post_compile = self.original
        return False

    def _state(self, graph_kwargs) -> tuple:
        """(cudagraphs on, messages heard, skips counted) before a graph's post_compile."""
        from torch._dynamo.utils import counters

        box = graph_kwargs.get("cudagraphs") if isinstance(graph_kwargs, dict) else None
        skips = int(counters["inductor"].get("cudagraph_skips", 0) or 0)
        return bool(box) if box is not None else None, sum(self.messages.counts.values()), skips

    def _saw(self, graph, graph_kwargs, before=(None, 0, 0)) -> None:
        """One Inductor graph loaded: its partitions, those for CUDA graphs, whether its CUDA
        graphs stayed on; where this graph turned them off without a message (Inductor's graph
        partition does so silently), the graph's own reason is heard as one."""
        deltas = getattr(graph, "counter_deltas", None) or {}
        maps = getattr(graph, "partition_maps", None)
        on, heard, skips = self._state(graph_kwargs)
        self.graphs.append(
            {
                "partitions": int(deltas.get("cudagraph_partitions", 0) or 0) or 1,
                "for_graphs": len(maps) if maps is not None else 1,  # not partitioned: all
                "on": on,
            }
        )
        if before[0] and on is False and heard == before[1]:
            info = getattr(graph, "cudagraph_info", None)
            fails = list(getattr(info, "cudagraph_fail_reasons", None) or [])
            why = getattr(graph, "disabled_cudagraphs_reason", None) or (
                f"skipping cudagraphs due to {fails}" if fails else NO_PARTITION
            )
            self.silent[" ".join(str(why).split())] += 1
            self.silent_skips += skips - before[2]

    def after_first_call(self) -> dict:
        from torch._dynamo.utils import counters

        self.first_call_skips = int(counters["inductor"].get("cudagraph_skips", 0) or 0)
        return self.read()

    def read(self) -> dict:
        """The row's columns now: cudagraph_graphs, cudagraph_partitions(_skipped),
        cudagraph_skips and cudagraph_skip_reasons (each reason with its count)."""
        from torch._dynamo.utils import counters

        if self.original is None:
            return {}
        graphs, funcs, recorded = _trees()
        unknown = [g for g in self.graphs if g["on"] is None]
        if unknown:
            self.notes.append("CUDA-graph partitions not counted: a graph's cudagraphs flag unseen")
            left_out = None
        elif self.graphs:
            left_out = sum(
                g["partitions"] - (g["for_graphs"] if g["on"] else 0) for g in self.graphs
            )
        else:  # the cudagraphs backend (no Inductor): its whole graphs skipped at compile time
            left_out = self.first_call_skips or 0
        skips = int(counters["inductor"].get("cudagraph_skips", 0) or 0)
        counts = self.messages.counts + self.silent
        unlogged = skips - sum(self.messages.counts.values()) - self.silent_skips
        if unlogged > 0:
            counts[UNLOGGED] = unlogged
        return {
            "cudagraph_graphs": graphs,
            "cudagraph_partitions": recorded,
            "cudagraph_partitions_skipped": None
            if left_out is None
            else left_out + (funcs - recorded),
            "cudagraph_skips": skips,
            "cudagraph_skip_reasons": reasons_text(counts),
        }


def _trees() -> tuple[int, int, int]:
    """(graphs recorded, functions handed to cudagraph trees, those that recorded a graph),
    over every device's tree manager of this thread's containers (shared with autograd's)."""
    trees = sys.modules.get("torch._inductor.cudagraph_trees")
    if trees is None:  # nothing imported it: nothing was handed to cudagraph trees
        return 0, 0, 0
    containers = trees.get_obj(trees.local, "tree_manager_containers")
    graphs = funcs = 0
    recorded = set()
    for c in list(containers.values()):
        m = getattr(c, "tree_manager", None)
        if m is None or m.roots is None:
            continue
        funcs += len(m.ids_to_funcs)
        stack = [n for nodes in m.roots.values() for n in nodes]
        while stack:
            node = stack.pop()
            graphs += 1
            recorded.add((id(m), node.wrapped_function.id))
            stack.extend(n for nodes in node.children.values() for n in nodes)
    return graphs, funcs, len(recorded)
