"""The reference study's Findings, re-checked against committed results: ``python -m
reference.findings DIR`` (``python -m reference.h200 [--check | --write]`` for the H200's).

Prints the Findings block from the CSVs in ``DIR`` (e.g. reference/h200): its scope (GPUs, versions
and host phase level, ``scope``), the blog's claims (``claims``), each with a verdict computed
from the rows, then one section per question, each in its own module, grouped by what it tells:

- ``speed/``: what compile changes at the blog's shapes (``forward``), training
  (``training``), the transformer block (``transformer``), FlexAttention (``flex``), attention
  over length (``scaling``), compile targets layer by layer (``layers``), real models
  (``models``);
- ``host/``: host cost measured across machines (``machines``, the model against the null in
  ``predict``), start-up and guards (``startup``), the same cell in two sweeps
  (``two_sweeps``);
- ``changes/``: an earlier study kept beside the rows against this one (``since_kept``;
  ``since_unpaired`` where only the cross-process v1 is kept);
- the predictions the rows carry (``predicted``) and the sweep's own cost (``cost``).

A section whose source is missing prints one line naming it. ``--write`` puts the block between
the markers of ``DIR/FINDINGS.md`` (reference/h200/FINDINGS.md) and, for the reference study, the
short summary, reference/h200/SUMMARY.md (``summary``); ``tests/test_findings.py`` fails when those files and this output
differ. This package reads the generic ``analysis`` modules; none of them reads it. No torch.
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path

from reference.findings import cost, markers, predicted, scope, summary, tables
from reference.findings.base.claims import claims
from reference.findings.base.common import read
from reference.findings.changes import since_kept
from reference.findings.host import machines, startup, two_sweeps
from reference.findings.speed import flex, forward, layers, models, scaling, training, transformer

START, END = markers.pair("findings")
FILE = "FINDINGS.md"  # in the results dir: reference/h200/FINDINGS.md
ROOT = Path(__file__).resolve().parents[2]
REFERENCE = ROOT / "reference" / "h200"
SUMMARY = REFERENCE / "SUMMARY.md"  # --write: its summary too (the README links it)
# The sections after the blog's claims, in reading order; each takes the read results.
SECTIONS = [
    predicted.section,
    forward.section,
    machines.section,
    startup.section,
    two_sweeps.section,
    since_kept.section,
    training.section,
    transformer.section,
    flex.section,
    scaling.section,
    layers.section,
    models.section,
    cost.section,
]

# A GPU folder that holds only some of the study's sources reads only their sections; its
# Findings name no section it has no rows for (reference/h100: start-up and regional compile).
PLANS = {
    ROOT / "reference" / "h100": [startup.section]
}  # by path: a user's own "h100" dir reads all

# Re-exported for the tests and older callers.
_reproducibility = forward.reproducibility


def _safe(section, data: dict) -> list[str]:
    """A section that cannot be built from these rows says so in one line; the rest go on."""
    try:
        return section(data)
    except Exception as e:  # noqa: BLE001 - one odd row must not take the Findings down
        name = section.__module__.rsplit(".", 1)[-1]
        return ["", f"_`{name}` could not be built from these rows: {type(e).__name__}: {e}_"]


def generate(d: Path) -> tuple[str, dict[str, str]]:
    """(the Findings block, {table file: its text}): each section's long tables moved into
    ``d/tables/<section>-<k>.md`` and linked (``tables.split``)."""
    data = read(Path(d))
    out, files = [], {}
    plan = PLANS.get(Path(d).resolve()) or [scope.section, claims, *SECTIONS]
    for section in plan:
        lines, moved = tables.split(_safe(section, data), section.__module__.rsplit(".", 1)[-1])
        out += lines
        files.update(moved)
    return "\n".join(out).lstrip("\n") + "\n", files  # markers.between drops a first blank


def findings(d: Path) -> str:
    """The Findings block of ``d`` (its long tables linked, ``generate``)."""
    return generate(d)[0]


def full(d: Path) -> str:
    """The block with its linked tables' text after it: what a reader of ``d`` can follow."""
    text, files = generate(d)
    return text + "".join(f"\n{files[f]}" for f in sorted(files))


def block(path: Path) -> str:
    """The generated block between the markers of ``path`` (reference/h200/FINDINGS.md)."""
    return markers.between(path, START, END)


HEADER = f"""# Findings{{on}}

Generated: the block between the markers is written by
`{{command}}` from the CSVs in this directory, and
`tests/test_findings.py` fails when it and the CSVs disagree. Change the generator
(`reference/findings/`), not the block.

{START}
{END}
"""


def check(d: Path) -> int:
    """0 when the block of ``d/FINDINGS.md`` (and, for the reference study, SUMMARY.md's
    summary) is what the CSVs in ``d`` give, byte for byte; 1, with what to run, when not."""
    d = Path(d)
    text, files = generate(d)
    stale = ([] if block(d / FILE) == text else [d / FILE]) + tables.stale(d, files)
    if (
        d.resolve() == REFERENCE
        and summary.block(SUMMARY) != "\n".join(summary.summary(read(d))) + "\n"
    ):
        stale.append(SUMMARY)
    for f in stale:
        print(
            f"{f} is stale: its generated text differs from what the CSVs in {d} give; "
            f"rewrite it with `python -m reference.findings {d} --write`"
        )
    if not stale:
        print(f"{d / FILE}: the generated block matches the CSVs")
    return 1 if stale else 0


def write(path: Path, text: str) -> None:
    """Put ``text`` between the markers of ``path``, keeping the rest of the file; a missing
    file starts from a short header."""
    folder = Path(path).resolve().parent
    gpu = folder.parent == ROOT / "reference" and re.fullmatch(r"[hab]\d{2,3}", folder.name)
    header = HEADER.format(
        on=f" on the {folder.name.upper()}" if gpu else "",
        command=f"python -m reference.{folder.name} --write" if gpu
        else f"python -m reference.findings {folder} --write",
    )  # fmt: skip
    markers.put(path, START, END, text, new=header)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m reference.findings",
        description="Print the Findings block from a results dir's CSVs, or --write it into "
        f"DIR/{FILE}.",
    )
    ap.add_argument("dir", nargs="?", default="reference/h200", help="results dir (reference/h200)")
    how = ap.add_mutually_exclusive_group()
    how.add_argument("--write", action="store_true", help=f"rewrite the block in DIR/{FILE}")
    how.add_argument("--check", action="store_true", help=f"exit 1 when DIR/{FILE} is stale")
    args = ap.parse_args(argv)
    if args.check:
        return check(Path(args.dir))
    text, files = generate(Path(args.dir))
    if args.write:
        out = Path(args.dir) / FILE
        write(out, text)
        tables.write(Path(args.dir), files)
        print(f"wrote the Findings block in {out}")
        if Path(args.dir).resolve() == REFERENCE:  # SUMMARY.md summarises the reference study
            summary.write(SUMMARY, summary.summary(read(Path(args.dir))))
            print(f"wrote the summary block in {SUMMARY}")
        for m in (machines, startup):
            said = m.draw(Path(args.dir))
            if said:
                print(f"drew {m.FIGURE}.png: {said}")
    else:
        print(text, end="")
    return 0
