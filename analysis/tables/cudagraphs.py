"""Did CUDA graphs apply? The report's table for the rows of targets that use them
(reduce-overhead, max-autotune, cudagraphs: study.config.compile_targets), from runs.csv alone.

Per cell: the CUDA graphs recorded, the partitions captured and not, the share of the step's
device time a graph's replay launched (from the trace), and each skip reason with its count
(study.observe.cudagraphs says how each is read). A row written before these columns has its
share from kernels.csv (``graph_launched`` kernels' time over all of the step's), and its
counts blank. Reads only CSVs.
"""

from __future__ import annotations

import pandas as pd

from analysis.measures import order
from study.config import compile_targets
from study.rows.schema import SHAPE_KEYS

NOTE = (
    "Per cell of a CUDA-graph target: the CUDA graphs cudagraph trees recorded, the partitions "
    "captured (handed to cudagraph trees and recorded) and not (left out by Inductor's graph "
    "partition, or in a graph whose CUDA graphs were turned off, or never recorded), the share "
    "of the profiled step's device time (kernels, memcpy, memset) that a graph's replay "
    "launched, and each skip reason torch gave with its count. On the CPU CUDA graphs never "
    "apply. A share marked * comes from kernels.csv (a row older than the column)."
)


def _num(v):
    x = pd.to_numeric(v, errors="coerce")
    return None if pd.isna(x) else float(x)


def _text(v) -> str:
    return v if isinstance(v, str) else ""


def kernel_share(kernels: pd.DataFrame) -> dict[tuple, float]:
    """{(source, run_id): share of the step's device time in graph-launched kernels}, from
    kernels.csv rows (us_per_step, graph_launched), for rows older than cudagraph_kernel_share."""
    need = {"run_id", "us_per_step", "graph_launched"}
    if kernels is None or kernels.empty or not need <= set(kernels):
        return {}
    k = kernels.assign(
        us=pd.to_numeric(kernels["us_per_step"], errors="coerce").fillna(0.0),
        graph=kernels["graph_launched"].astype(str).str.lower() == "true",
    )
    if "source" not in k:
        k = k.assign(source="")
    out = {}
    for key, g in k.groupby(["source", "run_id"]):
        total = g["us"].sum()
        if total > 0:
            out[key] = g.loc[g["graph"], "us"].sum() / total
    return out


def _count(v) -> str:
    """A count as a whole number ('1', not '1.0': a column with a blank reads as float)."""
    return "" if v is None else f"{int(v)}"


def _applied(graphs, left_out, share, device) -> str:
    if device == "cpu":
        return "no (CPU)"
    if graphs is None:  # an older row: the trace alone
        return "" if share is None else ("yes" if share > 0 else "no")
    if graphs == 0:
        return "no"
    return "partly" if left_out else "yes"


def table(runs: pd.DataFrame, kernels: pd.DataFrame | None = None) -> pd.DataFrame:
    """One row per cell of a CUDA-graph target: did CUDA graphs apply, and how much."""
    if runs is None or runs.empty or "compile" not in runs:
        return pd.DataFrame()
    r = runs[runs["compile"].map(lambda m: compile_targets.uses_cudagraphs(str(m)))]
    if r.empty:
        return pd.DataFrame()
    r = order(r)
    old = kernel_share(kernels)
    shapes = [c for c in SHAPE_KEYS if c in r and r[c].nunique() > 1]
    rows = []
    for x in r.to_dict("records"):
        share, mark = _num(x.get("cudagraph_kernel_share")), ""
        if share is None and x.get("device") != "cpu":
            share = old.get((x.get("source", ""), x["run_id"]))
            mark = "*" if share is not None else ""
        graphs = _num(x.get("cudagraph_graphs"))
        left_out = _num(x.get("cudagraph_partitions_skipped"))
        rows.append(
            {
                "variant": x["variant"],
                **{c: x[c] for c in shapes},
                **({"pass": x["pass"]} if "pass" in r and r["pass"].nunique() > 1 else {}),
                "mode": x["compile"],
                "applied": _applied(graphs, left_out, share, x.get("device")),
                "graphs": _count(graphs),
                "partitions captured": _count(_num(x.get("cudagraph_partitions"))),
                "not captured": _count(left_out),
                "device time in graphs": "" if share is None else f"{share:.1%}{mark}",
                "skip reasons (count)": _text(x.get("cudagraph_skip_reasons")),
            }
        )
    out = pd.DataFrame(rows)
    for c in shapes:
        out[c] = out[c].astype("Int64")
    return out
