"""v1 → v2: what changed between the v1 rows (kept in ``DIR/v1``) and these, and why. Part of
``python -m reference.findings``; the matching is ``analysis.compare``'s (same configuration,
same source name).

Why a compiled cell's speedup moved, in this order:

- **unchanged**: v1's number lies inside v2's 95% interval, or within 2% of v2's speedup;
- **pairing**: v2's own cross-process ratio (the two cells' medians, as v1 measured it) is
  within 2% of v1's: the cells reproduce, the paired measurement (one process) differs;
- **host**: the compiled or eager cell is host-bound on either side: its latency moves with
  the host's state (v2 pins each cell to its own cores; v1 did not);
- **real change**: GPU-bound on both sides, and a latency moved by more than 2% or the kernels
  changed.
"""

from __future__ import annotations

import re

import pandas as pd

from analysis import compare
from analysis.measures import count, sig, xs
from analysis.pairs import NOISE, host_bound, table, with_eager
from reference import sources
from reference.findings.base.claims import claims
from reference.findings.base.common import blog_shapes, needs, read, sp_text

WHY = ["unchanged", "pairing", "host", "real change"]


def why(x) -> str:
    """One matched compiled cell (a dict or row with the columns ``join`` makes)."""
    sa, sb, lo, hi, xb = x["sp_a"], x["sp_b"], x["sp_lo_b"], x["sp_hi_b"], x["sx_b"]
    if (lo == lo and hi == hi and lo <= sa <= hi) or abs(sb / sa - 1) <= NOISE:
        return "unchanged"
    if x["kernels_b"] != x["kernels_a"] and not (x["hb_a"] or x["hb_b"]):
        return "real change"  # other kernels: not the measurement's doing
    if xb == xb and abs(xb / sa - 1) <= NOISE:
        return "pairing"
    if x["hb_a"] or x["hb_b"]:
        return "host"
    moved = max(abs(x["lat_b"] / x["lat_a"] - 1), abs(x["elat_b"] / x["elat_a"] - 1))
    if moved > NOISE or x["kernels_b"] != x["kernels_a"]:
        return "real change"
    return "pairing"


def _side(runs: pd.DataFrame) -> pd.DataFrame:
    """Per cell: host-bound, and for compiled cells the eager twin and cross-process ratio."""
    r = runs[runs["status"] == "ok"].copy()
    r["hb"] = host_bound(r)
    c = with_eager(r)
    keep = c[["source", "run_id", "eager_lat", "speedup"]].rename(columns={"speedup": "sx"})
    return r[["source", "run_id", "hb"]].merge(keep, on=["source", "run_id"], how="left")


def join(m: pd.DataFrame, ra: pd.DataFrame, rb: pd.DataFrame) -> pd.DataFrame:
    """compare.match's cells (same source only) with each side's host verdict and eager twin."""
    m = m[m["source_a"] == m["source_b"]].copy()
    for s, r in (("a", ra), ("b", rb)):
        x = _side(r).rename(columns={c: f"{c}_{s}" for c in ("source", "run_id", "hb",
                                                              "eager_lat", "sx")})  # fmt: skip
        m = m.merge(x, on=[f"source_{s}", f"run_id_{s}"], how="left")
    m["lat_a"], m["lat_b"] = m["latency_median_us_a"], m["latency_median_us_b"]
    m["elat_a"], m["elat_b"] = m["eager_lat_a"], m["eager_lat_b"]
    m["kernels_a"], m["kernels_b"] = m["kernels_per_step_a"], m["kernels_per_step_b"]
    m["hb_a"], m["hb_b"] = m["hb_a"].fillna(False), m["hb_b"].fillna(False)
    comp = (m["compile"] != "off") & m["sp_a"].notna() & m["sp_b"].notna()
    m["why"] = ""
    m.loc[comp, "why"] = [why(x) for x in m[comp].to_dict("records")]
    return m


def label(x) -> str:
    """'naive', 'matmul_add (n=64)', 'flash (seq_len=4096)': the shape where a sweep varies it."""
    for col in ("n", "seq_len"):
        v = x.get(col)
        if col == "seq_len" and x.get("family") != "attention":
            continue
        if v is not None and v == v and (col == "n" or int(v) != 1024):
            return f"{x['variant']} ({col}={int(v)})"
    return x["variant"]


def latencies(m: pd.DataFrame) -> list[str]:
    """GPU-bound latencies that agree, host-bound ones that moved (every matched cell)."""
    m = m.assign(move=m["lat_b"] / m["lat_a"] - 1)
    out = []
    for hb, what in ((False, "GPU-bound on both sides"), (True, "host-bound on either side")):
        g = m[(m["hb_a"] | m["hb_b"]) == hb]
        if g.empty:
            continue
        w = g.loc[g["move"].abs().idxmax()]
        within = int((g["move"].abs() <= NOISE).sum())
        out.append(
            f"- Per-call latency, cells {what}: {within} of {len(g)} within {NOISE:.0%} of v1; "
            f"the most moved: {label(w)} {w['compile']} (`{w['source_a']}`), "
            f"{sig(w['lat_a'])} → {sig(w['lat_b'])} µs ({w['move']:+.0%})."
        )
    return out


def claims_changed(v1: dict, data: dict) -> list[str]:
    """The blog's claims whose verdict differs between v1's rows and these."""

    # Judge v1 on the sweeps both sides have (v1 judged some claims over five of its own).
    shared = set(data["runs"]["source"]) if "source" in data["runs"] else set()
    v1 = {
        k: (f[f["source"].isin(shared)] if isinstance(f, pd.DataFrame) and "source" in f
            and k != "ncu" and shared & set(f["source"]) else f)
        for k, f in v1.items()
    }  # fmt: skip
    old, new = claims(v1), claims(data)
    if len(old) != len(new) or not old[0].startswith("Measured"):
        return []
    changed = []
    for a, b in zip(old[2:], new[2:], strict=True):
        va, vb = re.findall(r"\*\*(\w+)\*\*", a), re.findall(r"\*\*(\w+)\*\*", b)
        if va != vb:
            claim = b.split(":", 1)[0].removeprefix("- ")
            changed.append(f"{claim} ({', '.join(va)} → {', '.join(vb)})")
    return [
        "- The blog's claims: "
        + (
            "the verdict changed for " + "; ".join(changed) + "."
            if changed
            else "every verdict is the same in v1 and v2."
        )
    ]


def section(data: dict) -> list[str]:
    v1 = data["dir"] / sources.V1
    if not (v1 / "runs.csv").exists():
        return needs("v1 → v2", f"set `{v1.name}` (v1's CSVs in reference/h200/{v1.name}/)")
    old = read(v1)
    m, _, _ = compare.match({"runs": old["runs"]}, {"runs": data["runs"]})
    m = join(m, old["runs"], data["runs"]) if len(m) else m
    if m.empty:
        return ["", "_v1 → v2: no cell of v1 matches one of these by configuration and source._"]
    srcs = ", ".join(f"`{s}`" for s in dict.fromkeys(m["source_a"]))
    comp = m[m["why"] != ""]  # compiled cells with a speedup on both sides
    counts = comp["why"].value_counts()
    out = [
        "",
        f"v1 → v2 (`analysis.compare` of reference/h200/v1 against reference/h200, {len(m)} cells "
        f"matched by configuration within the same source: {srcs}):",
        "",
        *claims_changed(old, data),
        *latencies(m),
        f"- Speedups of the {len(comp)} compiled cells: "
        + ", ".join(f"{counts.get(w, 0)} {w}" for w in WHY)
        + f" (v1: cross-process; v2: paired where measured; {why_text()}).",
    ]
    out += pairing_gap(comp)
    blog = blog_shapes(comp[~comp["source_a"].isin(sources.names("seq_len"))])
    moved = blog[blog["why"] != "unchanged"]
    if len(moved):
        out += ["", f"Compiled cells at the blog's shapes whose speedup moved ({len(moved)}):", ""]
        rows = [
            [label(x), x["compile"], x["source_a"], xs(x["sp_a"]),
             xs(x["sx_b"]), sp_text({"sp": x["sp_b"], "sp_lo": x["sp_lo_b"], "sp_hi": x["sp_hi_b"],
                                     "sp_kind": x["sp_kind_b"]}),
             f"{sig(x['lat_a'])} → {sig(x['lat_b'])}",
             f"{count(x['kernels_a'])} → {count(x['kernels_b'])}", x["why"]]
            for x in moved.to_dict("records")
        ]  # fmt: skip
        out += table(["variant", "mode", "source", "v1 speedup", "v2 cross-process",
                      "v2 paired [95%]", "compiled latency v1 → v2, µs", "kernels", "why"],
                     rows)  # fmt: skip
    same = blog[blog["why"] == "unchanged"]
    if len(same):
        by = [
            f"`{src}` " + ", ".join(f"{label(x)} {x['compile']}" for x in g.to_dict("records"))
            for src, g in same.groupby("source_a", sort=False)
        ]
        out += ["", "Unchanged at the blog's shapes: " + "; ".join(by) + "."]
    return out


def pairing_gap(comp: pd.DataFrame) -> list[str]:
    """Where the cells reproduce (GPU-bound, latencies within 2%), how far the paired speedup
    sits from the cross-process one: what pairing alone changes."""
    g = comp[~(comp["hb_a"] | comp["hb_b"]) & (comp["sp_kind_b"] == "paired")]
    g = g[((g["lat_b"] / g["lat_a"] - 1).abs() <= NOISE)
          & ((g["elat_b"] / g["elat_a"] - 1).abs() <= NOISE)]  # fmt: skip
    if g.empty:
        return []
    r = g["sp_b"] / g["sx_b"]
    lo, hi = g.loc[r.idxmin()], g.loc[r.idxmax()]
    return [
        f"- Pairing alone: in the {len(g)} compiled cells that are GPU-bound and whose eager and "
        f"compiled latencies both repeat v1's within {NOISE:.0%}, the paired speedup is "
        f"{sig(r.min())}–{xs(r.max())} the cross-process one ({label(lo)} {lo['compile']}: "
        f"{xs(lo['sp_b'])} paired, {xs(lo['sx_b'])} cross-process; {label(hi)} {hi['compile']}: "
        f"{xs(hi['sp_b'])}, {xs(hi['sx_b'])})."
    ]


def why_text() -> str:
    return (
        "unchanged = v1's number inside v2's interval or within 2%; pairing = v2's own "
        "cross-process ratio repeats v1's, only the one-process measurement differs; host = "
        "host-bound, moves with the host (v2 pins cells to cores); real change = GPU-bound, "
        "latency or kernels moved"
    )
