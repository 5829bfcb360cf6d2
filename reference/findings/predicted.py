"""Predicted vs seen: every prediction the rows carry (study.rows.expect), held or broken, broken
first. The variants' YAMLs carry the blog's A100 predictions, so on another GPU this says at
once which of the blog's claims hold there. Pure pandas over the CSVs; no torch."""

from __future__ import annotations

import pandas as pd

from analysis.pairs import table
from study.rows import expect

MEASURED_CHARS = 60  # a dominant kernel's name: its C++ template arguments run to 300


def seen(runs: pd.DataFrame) -> list[dict]:
    """One entry per (cell, prediction) that applied and had a value."""
    if "expect" not in runs or not runs["expect"].notna().any():
        return []
    rows = runs.astype(object).where(runs.notna(), None).to_dict("records")
    out = []
    for r in rows:
        for e, measured, ok in expect.evaluate(r, rows):
            out.append(
                {
                    "source": r.get("source"),
                    "variant": r.get("variant"),
                    "compile": r.get("compile"),
                    "pass": r.get("pass") or "fwd",
                    "prediction": f"{e.label()} {e.text}",
                    "measured": measured,
                    "held": ok,
                }
            )
    return out


def _measured(v) -> str:
    """The measured value, a kernel's name cut at its template arguments' first MEASURED_CHARS."""
    text = f"{v:.3g}" if isinstance(v, float) else str(v)
    return text if len(text) <= MEASURED_CHARS else text[: MEASURED_CHARS - 1] + "…"


def section(data: dict) -> list[str]:
    """Broken first; the same prediction in several sweeps (v3: part3's eager cells and the
    targets sweep's) side by side, each with its source, so neither reads as a duplicate."""
    items = seen(data["runs"])
    if not items:
        return ["", "_Predicted vs seen: no row carries a prediction (`expect`, from v3 on)._"]
    items.sort(key=lambda x: (x["held"], str(x["variant"]), x["prediction"], str(x["source"])))
    held = sum(x["held"] for x in items)
    many = len({x["source"] for x in items}) > 1
    rows = [
        [
            x["variant"],
            x["compile"],
            x["pass"],
            *([f"`{x['source']}`"] if many else []),
            f"`{x['prediction']}`",
            _measured(x["measured"]),
            "holds" if x["held"] else "**broke**",
        ]
        for x in items
    ]
    head = ["variant", "mode", "pass", *(["source"] if many else []), "prediction", "measured"]
    return [
        "",
        f"Predicted vs seen ({len(items)} predictions checked, {len(items) - held} broke; the "
        "variants' predictions are the blog's, on an A100; `study.rows.expect`):",
        "",
        *table([*head, "verdict"], rows),
    ]
