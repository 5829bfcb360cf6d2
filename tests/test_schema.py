"""One schema: SCHEMA.md is generated from study/rows/schema.py, and writers refuse other columns."""

import pytest

from study.rows import io, schema
from tests.conftest import ROOT


def test_schema_md_is_in_sync():
    assert (ROOT / "SCHEMA.md").read_text() == schema.markdown(), (
        "SCHEMA.md is stale: run `python -m study.rows.schema > SCHEMA.md`"
    )


def test_columns_are_unique_and_documented():
    for table, cols in schema.TABLES.items():
        names = [c.name for c in cols]
        assert len(names) == len(set(names)), table
        assert all(c.meaning for c in cols), table


def test_writer_rejects_undeclared_columns(tmp_path):
    with pytest.raises(KeyError, match="not in study/rows/schema.py"):
        io.write_csv(tmp_path / "x.csv", [{"run_id": "a", "bogus": 1}], "runs")
    p = io.write_csv(
        tmp_path / "x.csv",
        [{"run_id": "a", "status": "ok", "latency_median_us": float("nan")}],
        "runs",
    )
    row = io.read_csv(p)[0]
    assert row["status"] == "ok" and row["latency_median_us"] == ""  # unknown is empty, never 0
    assert not list(tmp_path.glob(".*.tmp"))  # atomic: no temp file left behind


def test_schema_opens_with_the_columns_a_person_reads_first():
    """SCHEMA.md starts with the 12 columns that answer the question, and says which column is
    the speedup: `speedup` is a per-call latency ratio, `speedup_paired` the speedup."""
    md = schema.markdown()
    first = md.split("## Read these first")[1].split("\n## ")[0]
    names = [x.split("`")[1] for x in first.splitlines() if x.startswith("| `")]
    assert names == list(schema.FIRST) and len(names) == 12
    assert set(names) <= set(schema.columns("runs"))
    assert md.index("## Read these first") < md.index("## run.csv")
    assert "`speedup` is a per-call latency ratio" in first
    meaning = {c.name: c.meaning for c in schema.RUN}
    assert meaning["speedup"].startswith("a per-call latency ratio, NOT the speedup")
    assert meaning["speedup_paired"].startswith("THE speedup")
