"""The generic analysis (any sweep -> report, figures, comparison, tables) and the reference
study's narrative (``reference/``) stay apart: the narrative may import the generic modules and
``study.rows``, never the other way round, and a user's report loads nothing of the narrative."""

from __future__ import annotations

import ast
import sys

from tests import synth
from tests.conftest import ROOT

NARRATIVE = "reference"


def _imports(path) -> set[str]:
    """Every module a file names in an import, at any depth (inside functions too)."""
    out = set()
    for n in ast.walk(ast.parse(path.read_text())):
        if isinstance(n, ast.ImportFrom) and n.module:
            out.add(n.module)
            out.update(f"{n.module}.{a.name}" for a in n.names)
        elif isinstance(n, ast.Import):
            out.update(a.name for a in n.names)
    return out


def _narrative(module: str) -> bool:
    return module == NARRATIVE or module.startswith(f"{NARRATIVE}.")


def test_no_generic_module_imports_the_narrative():
    generic = sorted((ROOT / "analysis").rglob("*.py")) + sorted((ROOT / "study").rglob("*.py"))
    assert len(generic) > 100
    bad = {str(p.relative_to(ROOT)): sorted(m for m in _imports(p) if _narrative(m))
           for p in generic}  # fmt: skip
    assert not {k: v for k, v in bad.items() if v}


def test_the_report_of_a_sweep_loads_nothing_of_the_narrative(tmp_path, monkeypatch):
    from analysis.report import main

    for name in [m for m in sys.modules if _narrative(m)]:  # loaded by other tests
        monkeypatch.delitem(sys.modules, name)
    sweep = synth.write(synth.with_new_columns("part3"), tmp_path / "sweep")
    main([str(sweep), "--out", str(tmp_path / "report")])
    assert (tmp_path / "report" / "report.md").exists()
    assert not [m for m in sys.modules if _narrative(m)]


def test_source_names_sit_in_one_table():
    """A source name (part3, targets_bwd, ...) is written in reference/sources.py alone: no
    module of analysis/ selects by one (a generic figure selects by the rows' own columns)."""
    from reference import sources

    shared = {"flex", "autotune", "ncu", "dynamic", "models", "block", "targets", "oom"}  # also a
    # variant's, a column's, a status's, a CSV's or a table topic's name
    quoted = {f'"{n}"' for n in sources.BY_NAME if n not in shared}
    skip = {"tables", "__init__.py"}  # topic and figure names share a few words
    hits = {
        str(p.relative_to(ROOT)): sorted(q for q in quoted if q in p.read_text())
        for p in sorted((ROOT / "analysis").rglob("*.py"))
        if not skip & set(p.relative_to(ROOT / "analysis").parts)
    }
    assert not {k: v for k, v in hits.items() if v}
    assert sources.training("blog", "block") == (
        "part3", "part3_bwd", "part2", "part2_train", "block", "block_bwd"
    )  # fmt: skip


def test_the_compile_target_lists_come_from_study_config():
    """MODES, GRAPHS, WRAPPERS and MODE_COLORS were kept by hand in analysis/ (and WRAPPERS twice
    in the Findings): a new target must land in all of them, in the targets' own order."""
    from analysis.measures import GRAPHS, MODES, WRAPPERS
    from analysis.style import MODE_COLORS
    from study.config import compile_targets as ct

    assert MODES == list(ct.TARGETS) and MODES[0] == "off"
    assert GRAPHS == tuple(m for m, t in ct.TARGETS.items() if t.cudagraphs)
    assert set(WRAPPERS) == {"default", "max-autotune-no-cudagraphs", "cpp_wrapper"}
    assert all(ct.TARGETS[m].inductor and not ct.TARGETS[m].cudagraphs for m in WRAPPERS)
    assert list(MODE_COLORS) == MODES  # every target a colour, none twice
    assert len(set(map(str, MODE_COLORS.values()))) == len(MODES)
    by_hand = [
        p for p in sorted((ROOT / "reference").rglob("*.py")) if "WRAPPERS = " in p.read_text()
    ]
    assert by_hand == []
