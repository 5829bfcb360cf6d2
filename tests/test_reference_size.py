"""A paper a person reads (issue 69): each GPU's FINDINGS.md at most 40 KB, the long per-cell
tables in generated files it links; benchmarks/README.md under 12 KB of current tables, each
with its date, machine and commit (history goes to git)."""

from __future__ import annotations

import re

import pandas as pd

from tests.conftest import ROOT

BENCH = ROOT / "benchmarks" / "README.md"
FINDINGS_MAX, BENCH_MAX = 40_000, 12_000
DATE, COMMIT = re.compile(r"20\d\d-\d\d-\d\d"), re.compile(r"\b[0-9a-f]{7,12}\b")
MACHINE = re.compile(r"\b(H200|H100|CPU|x2|m\d)\b")


def test_each_gpus_findings_is_at_most_40_kb():
    found = sorted((ROOT / "reference").glob("*/FINDINGS.md"))
    assert found
    for f in found:
        size = len(f.read_bytes())
        assert size <= FINDINGS_MAX, (
            f"{f} is {size} bytes, over {FINDINGS_MAX}: move a long per-cell table into the "
            "generated tables/ it links (reference/findings/tables.py)"
        )


def test_benchmarks_readme_is_under_12_kb_of_dated_tables():
    text = BENCH.read_text()
    assert len(text.encode()) < BENCH_MAX, f"benchmarks/README.md is over {BENCH_MAX} bytes"
    for part in text.split("\n## ")[1:]:
        if "\n|" not in part:
            continue  # a section without a table of figures
        head = part.split("\n|", 1)[0] + part  # what the section says before and in its tables
        title = part.splitlines()[0]
        assert DATE.search(head), f"section {title!r}: a table without its date"
        assert COMMIT.search(head), f"section {title!r}: a table without its commit"
        assert MACHINE.search(head), f"section {title!r}: a table without its machine"


def test_benchmarks_readme_quotes_the_leave_one_out_under_the_current_method():
    """Audit defect 4: '24 of 24' (m1–m4) held only under a superseded method; under the current
    one it is 18 of 20 (17 with plain units × G), and the null predictor does as well."""
    from analysis.tables import host_model
    from reference.findings.host import machines, predict

    text = BENCH.read_text()
    assert "within ±10% (24 of 24)" not in text
    ms = machines._machines(ROOT / "reference" / "h200")
    for names in (["m5", "m6", "m7"], ["m1", "m2", "m3", "m4"]):
        rows = pd.concat([ms[m]["rows"] for m in names]).reset_index(drop=True)
        c = host_model.cells(machines.fast_only(rows))
        lo = predict.loo(c)
        n = [int((lo[k].abs() <= 0.10).sum()) for k in ("err", "plain_err", "null_err")]
        row = f"| {len(lo)} | {n[0]} | {n[1]} | {n[2]} | {host_model.fit_alpha(c):.2f} |"
        assert row in text, f"{names[0]}–{names[-1]}: expected {row}"


def test_the_results_readme_says_which_gpus_and_code_each_folder_holds():
    """Audit defect 9: reference/h200 said one H200 and one code revision, while `startup/` holds
    H100 and H200 rows at other code hashes and was missing from the sources table."""
    d = ROOT / "reference" / "h200"
    text = (d / "README.md").read_text()
    assert "Every row was made by one code revision" not in text
    assert "| `startup/` |" in text.split("What each folder holds")[0]  # in the sources table
    holds = text.split("What each folder holds")[1]
    for f in sorted(d.glob("**/runs.csv")):
        r = pd.read_csv(f, low_memory=False)
        folder = f.parent.relative_to(d).as_posix()
        row = _row(holds, folder)
        for gpu in r["device_name"].dropna().str.replace("NVIDIA ", "").unique():
            assert gpu in row, f"{folder}: {gpu} not said"
        for code in r.get("code_hash", pd.Series(dtype=str)).dropna().astype(str).unique():
            assert code[:12] in row, f"{folder}: code {code[:12]} not said"


def _row(holds: str, folder: str) -> str:
    """The holds-table row of ``folder``: '.', 'startup', 'v1', or 'host_machines/m2' (in the
    row '`host_machines/m1`–`m3`')."""
    rows = [x for x in holds.splitlines() if x.startswith("| ")]
    first = {x: x.split("|")[1] for x in rows}
    if folder == ".":
        (row,) = [x for x in rows if "`.`" in first[x]]
    elif folder.startswith("host_machines/m"):
        n = int(folder.rsplit("m", 1)[1])
        (row,) = [x for x in rows if "host_machines" in first[x]
                  and _span(first[x])[0] <= n <= _span(first[x])[-1]]  # fmt: skip
    else:
        (row,) = [x for x in rows if f"`{folder}/`" in first[x]]
    return row


def _span(cell: str) -> list[int]:
    return [int(x) for x in re.findall(r"m(\d)", cell)]
