"""The model suite's answer: ``python -m analysis.tables suite SWEEP...``

What PyTorch's HUD reports per suite and mode, from the study's own rows (``+experiment=suite``
or ``suite_cpu``), with what the HUD leaves out (``suite_stats`` computes; this prints):

- **per kind of model** and regime: the mode with the highest geomean over that kind's models,
  how much faster and what it costs to compile (the newcomer's question);
- **per regime, pass and mode**: the pass rate (ok over the rows planned: a failure is a row and
  counts against its mode), the geomean of the paired speedups over the models that ran ok on
  both sides with a 95% t-interval on their log speedups (their range under 3 models), the
  median compile s and first call s, the median peak-memory compression ratio and, on CUDA,
  the median share of device time inside CUDA graphs;
- **per model**: the best mode, its paired speedup and 95% interval, compile s, the calls it
  takes to pay the compile back (``payback_calls``: a faster mode only), what Dynamo's guards
  cost a call where the sweep ran ``compile.stance=default,skip_guard_eval_unsafe``
  (``startup.guard_costs``), its bound (``serial`` where a call waits for the GPU inside) and
  the one cause its rows support (``causes.answer``);
- the HUD's published figures beside ours, as an anchor (``hud``).

CSV only; no torch.
"""

from __future__ import annotations

import argparse

import pandas as pd

from analysis.load import expand, load, stop
from analysis.measures import sig, xs
from analysis.pairs import table as md_table
from analysis.tables import causes, hud, startup
from analysis.tables.suite_stats import (
    bound,
    in_order,
    kind_table,
    mode_table,
    not_ok,
    paired,
    payback,
    rows,
)

COLUMNS = ["model", "kind", "library", "regime", "pass", "best mode", "speedup [95%]",
           "compile s", "payback_calls", "guard µs/call", "bound", "cause", "not ok"]  # fmt: skip


def _guards(guard: pd.DataFrame, x: dict) -> str:
    """Guard µs a call for the model's row ``x`` (its mode, regime and pass), else blank."""
    if guard.empty:
        return ""
    hit = guard[(guard["variant"] == x["variant"]) & (guard["compile"] == x["compile"])]
    for c in ("regime", "pass"):
        if c in hit:
            hit = hit[hit[c].fillna("none" if c == "regime" else "fwd").astype(str) == x[c]]
    return sig(hit["guard_us"].median()) if len(hit) else ""


def model_stats(runs: pd.DataFrame, kernels=None, autotune=None) -> pd.DataFrame:
    """One line per model, regime and pass: its best compiled mode (the highest paired speedup
    among the modes ok on both sides) and that row's figures, as in COLUMNS; ``payback_calls``
    a number (NaN where the mode is not faster)."""
    r = rows(runs)
    if r.empty:
        return pd.DataFrame(columns=COLUMNS)
    both = paired(r)
    empty = pd.DataFrame()
    said = causes.answer(runs, empty if kernels is None else kernels,
                         empty if autotune is None else autotune)  # fmt: skip
    cause = {(s, i): c for s, i, c in zip(said["source"], said["run_id"], said["cause"],
                                           strict=True)}  # fmt: skip
    guard = startup.guard_costs(runs)
    out = []
    for (v, reg, p), g in r.groupby(["variant", "regime", "pass"], sort=False):
        x = g.iloc[0]
        line = {"model": v, "kind": x.get("model_kind", ""), "library": x.get("model_library", ""),
                "regime": reg, "pass": p, "not ok": not_ok(g)}  # fmt: skip
        b = both[(both["variant"] == v) & (both["regime"] == reg) & (both["pass"] == p)]
        b = b[b["both"]]
        if b.empty:
            eager_ok = g[(g["compile"] == "off") & (g["status"] == "ok")]
            line["best mode"] = "none ran" if eager_ok.empty else "no mode ran ok"
            out.append(line)
            continue
        best = b.loc[b["sp"].idxmax()].to_dict()
        faster = best["lo"] > 1
        slower = best["hi"] < 1
        line["best mode"] = best["compile"] + ("" if faster else
                                               " (slower: stay eager)" if slower
                                               else " (no measurable difference)")  # fmt: skip
        phase = str(best.get("timing_phase") or "fast")
        line["speedup [95%]"] = (f"{xs(best['sp'])} [{sig(best['lo'])}–{xs(best['hi'])}]"
                                 + ("" if phase in ("fast", "nan") else f", host {phase}"))  # fmt: skip
        line["compile s"] = sig(pd.to_numeric(best.get("compile_s"), errors="coerce"))
        line["payback_calls"] = payback(best)
        line["guard µs/call"] = _guards(guard, best)
        eager = g[(g["compile"] == "off") & (g["status"] == "ok")]
        said = bound(best)
        was = bound(eager.iloc[0].to_dict()) if len(eager) else ""
        line["bound"] = said + (f" (eager: {was})" if was and was != said else "")
        line["cause"] = cause.get((best.get("source", ""), best["run_id"]), "")
        out.append(line)
    t = pd.DataFrame(out, columns=COLUMNS)
    return in_order(t, "regime", "pass", "model").reset_index(drop=True)


def model_table(runs: pd.DataFrame, kernels=None, autotune=None) -> pd.DataFrame:
    """``model_stats`` as text: payback in whole calls."""
    t = model_stats(runs, kernels, autotune)
    pay = pd.to_numeric(t["payback_calls"], errors="coerce")
    t["payback_calls"] = pay.map(lambda v: "" if v != v else f"{v:,.0f}")
    return t.fillna("")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("dirs", nargs="+", help="sweep dirs (or a results dir with runs.csv)")
    a = p.parse_args(argv)
    try:
        d = load(expand(a.dirs))
    except FileNotFoundError as e:
        stop("tables suite", e)
    if rows(d["runs"]).empty:
        print("no suite rows (regime or model_kind): run +experiment=suite (or suite_cpu) first")
        return 1
    for title, t in (
        ("Which mode, how much faster, what it costs to compile, per kind of model",
         kind_table(d["runs"])),
        ("Per regime, pass and mode", mode_table(d["runs"])),
        ("Per model: its best mode", model_table(d["runs"], d["kernels"], d["autotune"])),
        (f"Anchor: PyTorch's HUD (other models, machine and torch; {hud.HOW})", hud.table()),
    ):  # fmt: skip
        print(f"{title}\n")
        print("\n".join(md_table(list(t.columns), t.values.tolist())))
        print()
    return 0


if __name__ == "__main__":
    from analysis.cli import run  # deferred: a command's end, not the module's

    run(main)
