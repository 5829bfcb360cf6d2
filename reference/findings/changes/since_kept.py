"""The previous study against this one (v2 → v3, from the CSVs kept in ``DIR/v2``): per cell,
what changed and why, by ``analysis.compare`` itself (its loading, matching, thresholds and
causes, so the Findings and ``python -m analysis.compare DIR/v2 DIR`` say the same). Where only
v1's CSVs are kept, ``since_unpaired`` says v1 → v2 instead. Part of ``python -m reference.findings``.
"""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd

from analysis import compare
from analysis.measures import count, sig
from analysis.pairs import table
from reference import sources
from reference.findings.base.common import blog_shapes, sp_text
from reference.findings.changes import since_unpaired

# compare_causes' first word, in the order a reader asks: the code, the measurement, the host
CAUSES = [
    ("real", "real (its kernels or their device time changed)"),
    ("lead-in", "lead-in (v{a}'s paired timing had no lead-in call before each block)"),
    ("method", "method (cross-process against paired)"),
    ("host", "host (kernels and device time unchanged; a side host-bound by a measured host "
             "time, or not timed in the host's fast phase)"),
    ("not the device", "not the device (kernels and device time unchanged, both sides fast; "
                       "a side's latency over its device time, no host time measured)"),
    ("eager's side", "eager's side (the compiled cell unchanged, its eager twin moved)"),
    ("unexplained", "unexplained (kernels and device time unchanged, GPU-bound, fast)"),
    ("unknown", "unknown (no device time on one side)"),
]  # fmt: skip
BLOG_SOURCES = sources.names("blog", pass_="fwd")


def previous(d: Path) -> Path | None:
    """The newest kept study below ``d`` after v1 (``v2``, ``v3``, ...), or None."""
    kept = [(int(m.group(1)), p) for p in d.glob("v*/runs.csv")
            if (m := re.fullmatch(r"v(\d+)", p.parent.name)) and int(m.group(1)) >= 2]  # fmt: skip
    return max(kept)[1].parent if kept else None


def section(data: dict) -> list[str]:
    prev = previous(Path(data["dir"]))
    if prev is None:
        return since_unpaired.section(data)
    a = int(prev.name[1:])
    da, _ = compare.side(str(prev))
    db, _ = compare.side(str(data["dir"]))
    m, only_a, only_b = compare.match(da, db, every_status=True)
    va, vb = f"v{a}", f"v{a + 1}"
    out = [
        "",
        f"{va} → {vb} (`python -m analysis.compare reference/h200/{prev.name} reference/h200`, which "
        f"says per cell what changed and why; {va}'s CSVs are kept in [`{prev.name}/`]"
        f"({prev.name}/)): {compare.summary_line(m, only_a, only_b)}",
    ]
    if m.empty:
        return out
    out += ["", *lost(m), *causes(m, a)]
    out += moved_at_blog_shapes(m, va, vb)
    return out


def _cause(why: str) -> str:
    return next((k for k, _ in CAUSES if why.startswith(k)), why.split(":")[0])


def _compiled(m: pd.DataFrame) -> pd.DataFrame:
    """The matched compiled cells with a speedup on both sides."""
    return m[(m["compile"] != "off") & m["sp_a"].notna() & m["sp_b"].notna()]


def causes(m: pd.DataFrame, a: int) -> list[str]:
    """How many compiled cells' speedups moved, by cause."""
    comp = _compiled(m)
    moved = comp[comp["why"] != ""]
    if comp.empty:
        return []
    n = moved["why"].map(_cause).value_counts()
    said = [f"{n[k]} {text.format(a=a)}" for k, text in CAUSES if n.get(k, 0)]
    said += [f"{v} {k}" for k, v in n.items() if k not in dict(CAUSES)]
    return [
        f"- Compiled cells with a speedup on both sides: {len(comp)}; "
        f"{len(comp) - len(moved)} did not move past a threshold or out of their interval"
        + (", and the others moved for these reasons (the first that applies): "
           + "; ".join(said) if said else "")
        + "."
    ]  # fmt: skip


def lost(m: pd.DataFrame) -> list[str]:
    """Cells ok before and not now, with the reason the row gives."""
    x = m[m["lost"]] if "lost" in m else m.iloc[0:0]
    return [
        f"- No longer ok: {r['source_b']} {since_unpaired.label(r)} {r['compile']} "
        f"({r['status_a']} → {r['status_b']}: {compare.first_words(r.get('reason_b'), 120)})"
        for r in x.to_dict("records")
    ]


def _named(why: str, va: str, vb: str) -> str:
    """analysis.compare's 'A' and 'B' as the studies' names."""
    return re.sub(r"\bB\b", vb, re.sub(r"\bA\b", va, why))


def moved_at_blog_shapes(m: pd.DataFrame, va: str, vb: str) -> list[str]:
    """The blog's forward cells (part1–3) whose compiled speedup moved, with the cause."""
    comp = _compiled(m)
    comp = blog_shapes(comp[comp["source_b"].isin(BLOG_SOURCES)])
    moved = comp[comp["why"] != ""]
    if moved.empty:
        return []
    rows = [
        [since_unpaired.label(x), x["compile"], x["source_b"],
         sp_text({"sp": x["sp_a"], "sp_lo": x["sp_lo_a"], "sp_hi": x["sp_hi_a"],
                  "sp_kind": x["sp_kind_a"]}),
         sp_text({"sp": x["sp_b"], "sp_lo": x["sp_lo_b"], "sp_hi": x["sp_hi_b"],
                  "sp_kind": x["sp_kind_b"], "timing_phase": x.get("timing_phase_b")}),
         f"{sig(x['latency_median_us_a'])} → {sig(x['latency_median_us_b'])}",
         f"{count(x['kernels_per_step_a'])} → {count(x['kernels_per_step_b'])}",
         _named(x["why"], va, vb)]
        for x in moved.to_dict("records")
    ]  # fmt: skip
    return [
        "",
        f"The blog's forward cells (part1–3) whose compiled speedup moved {va} → {vb} "
        f"({len(moved)} of {len(comp)}):",
        "",
        *table(["variant", "mode", "source", f"{va} speedup", f"{vb} speedup",
                f"compiled latency {va} → {vb}, µs", "kernels", "why"], rows),
    ]  # fmt: skip
