"""Which machine each start-up row ran on: its GPU and boot, the host gauge surveys its
command read (``survey.md``), and the code it ran. Part of the start-up section
(reference.findings.host.startup), whose rows may come from several machines.
"""

from __future__ import annotations

import re

import pandas as pd


def column(r: pd.DataFrame, c: str) -> pd.Series:
    """Column ``c`` as text, "?" where a row has none (a crash row names no GPU): a group of
    its own, never dropped."""
    v = r[c] if c in r else pd.Series(None, index=r.index, dtype=object)
    return v.fillna("?").astype(str)


def surveys(text: str) -> dict[str, list[tuple[str, str]]]:
    """survey.md's host gauge lines by boot: a line ``boot XXXXXXXX`` starts a boot's lines; a
    file without one is one machine's, under the key ``""``."""
    out: dict[str, list[tuple[str, str]]] = {}
    boot = ""
    for line in text.splitlines():
        if m := re.match(r"boot (\w{8})", line.strip()):
            boot = m.group(1)
        elif m := re.search(r"fast level ([\d.]+) us .*?(\d+)% of them", line):
            out.setdefault(boot, []).append((m.group(1), m.group(2)))
    return out


def describe(d, r: pd.DataFrame) -> str:
    """Each machine the rows ran on (GPU, boot): its sources, its code hash and its host gauge
    surveys (``d/survey.md``), then the torch they share."""
    sv = d / "survey.md"
    said_by = surveys(sv.read_text()) if sv.exists() else {}
    gpus = r.groupby([column(r, "device_name"), column(r, "boot_id").str[:8].rename("boot")],
                     sort=False)  # fmt: skip
    said = []
    for (gpu, boot), g in gpus:
        levels = said_by.get(boot) or (said_by.get("") if len(gpus) == 1 else None) or []
        survey = "; ".join(f"{lv} µs ({share}% within 1.3x)" for lv, share in levels)
        code = ", ".join(sorted(column(g, "code_hash").unique()))
        said.append(
            f"{gpu}, boot {boot} ({', '.join(sorted(g['source'].dropna().unique()))}; code "
            f"{code}; host gauge before and after: {survey or '?'})"
        )
    torch = ", ".join(sorted(column(r, "torch_version").unique()))
    return f"{'; '.join(said)}. Torch {torch}"


def by_machine(r: pd.DataFrame) -> list[tuple[str, pd.DataFrame]]:
    """The rows by machine (GPU and boot), in the order they come: [(label, rows)]."""
    gpu = column(r, "device_name").str.replace("NVIDIA ", "", regex=False)
    label = gpu + " (boot " + column(r, "boot_id").str[:8] + ")"
    return [(k, g) for k, g in r.groupby(label, sort=False)]


def other_code(g: pd.DataFrame, g0: pd.DataFrame) -> str:
    """'; the two ran other code (A against B)' where two machines' rows carry other code
    hashes, else nothing."""
    a, b = (sorted(column(x, "code_hash").unique()) for x in (g, g0))
    return "" if a == b else f"; the two ran other code ({', '.join(a)} against {', '.join(b)})"
