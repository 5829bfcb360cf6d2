"""The scripts outside the package (benchmarks/, examples/) still fit it: they import what the
package no longer has only when run, inside main(), where no unit test reaches."""

import ast
import importlib

import pytest

from tests.conftest import ROOT

SCRIPTS = sorted([*(ROOT / "benchmarks").glob("*.py"), *(ROOT / "examples").rglob("*.py")])


def study_imports(path) -> list[tuple[str, str]]:
    """(module, name) for every ``from study... import name`` anywhere in the file."""
    tree = ast.parse(path.read_text())
    return [
        (node.module, alias.name)
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "study"
        for alias in node.names
    ]


@pytest.mark.parametrize("path", SCRIPTS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_name_a_script_imports_from_study_exists(path):
    missing = []
    for module, name in study_imports(path):
        mod = importlib.import_module(module)
        if not hasattr(mod, name):
            try:
                importlib.import_module(f"{module}.{name}")  # a submodule
            except ImportError:
                missing.append(f"{module}.{name}")
    assert not missing, f"{path.name} imports what the package no longer has: {missing}"
