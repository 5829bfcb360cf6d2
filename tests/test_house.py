"""The house holds its shape (benchmarks/tree_facts.py measures it): no import cycle, no
private name taken across modules, no torch at module level in the sweep's own process, every
module over 300 lines and function over 60 says why at its top; no two folders of study/,
analysis/ and reference/ import each other (within a package or across them), few project imports inside functions without a reason, no folder over FOLDER_MAX
modules. The counting itself is checked on small trees written here."""

import textwrap

from benchmarks import tree_facts as tf

# The house's limits, checked against the tree (the last three tests).
TWO_WAY_PAIRS_MAX = 0  # pairs of folders of study/, analysis/, reference/ importing each other
UNEXPLAINED_MAX = 10  # project imports inside functions without a comment that says why
FOLDER_MAX = tf.FOLDER_MAX  # modules in one folder


def test_no_import_cycle_and_no_private_name_across_modules():
    graph, private = tf.import_graph(tf.modules())
    assert tf.cycles(graph) == []
    assert private == []


def test_the_sweeps_own_process_imports_no_torch_at_module_level():
    assert tf.sweep_imports_torch(tf.modules()) == []


def test_every_long_module_and_function_says_why():
    unexplained = []
    for path in tf.modules().values():
        lines = path.read_text().splitlines()
        where = path.relative_to(tf.ROOT).as_posix()
        if len(lines) > 300 and not tf.says_why(lines, tf.doc_end(path)):
            unexplained.append(f"{where}: {len(lines)} lines")
        unexplained += [f"{where}:{name}: {n} lines" for n, name, why in tf.functions(path)
                        if n > 60 and not why]  # fmt: skip
    assert unexplained == [], "split it, or say why at its top with a '# Long:' comment"


def test_the_check_finds_a_cycle():
    assert tf.cycles({"a": {"b"}, "b": {"a"}, "c": {"a"}}) != []


def test_a_name_taken_from_the_packages_own_init_that_imports_it_back_is_a_cycle(tmp_path):
    """analysis/findings/__init__.py imported summary, which took START from the package: a
    cycle that running the package's __init__ first hid. Importing a sibling is not one."""
    files = {
        "reference/__init__.py": "",
        "reference/findings/__init__.py": "from reference.findings import summary\nSTART = 1\n",
        "reference/findings/summary.py": "from reference.findings import START\n",
        "reference/findings/markers.py": "",
        "reference/findings/scope.py": "from reference.findings import markers\n",
    }
    for path, src in files.items():
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text(src)
    known = tf.modules(tmp_path, ("reference",))
    graph, _ = tf.import_graph(known, tmp_path)
    assert tf.cycles(graph) == [["reference.findings", "reference.findings.summary"]]


def test_no_eval_exec_shell_or_unsafe_load_in_the_code():
    """The red team's security cases (docs/sweeps.md): nothing the code reads is run as code."""
    import re

    bad = re.compile(r"(?<![.\w])(eval|exec)\(|shell=True|yaml\.load\(|pickle\.loads?\(")
    hits = [f"{p}:{i}: {line.strip()}"
            for d in tf.PACKAGES for p in sorted((tf.ROOT / d).rglob("*.py"))
            for i, line in enumerate(p.read_text().splitlines(), 1) if bad.search(line)]  # fmt: skip
    assert hits == []


def house() -> dict:
    """The tree's figures that the limits above hold: two-way folder pairs (tf.HOUSE), project
    imports inside functions without a reason ('file:line'), and folders over FOLDER_MAX modules."""
    known = tf.modules()
    return {
        "pairs": tf.two_way_pairs(known),
        "unexplained": [f"{i.path}:{i.line}" for i in tf.unexplained(tf.function_imports(known))],
        "big folders": tf.big_folders(known, most=FOLDER_MAX),
    }


def test_no_two_folders_of_the_house_import_each_other():
    assert set(tf.HOUSE) == {"study", "analysis", "reference"}
    pairs = house()["pairs"]
    assert len(pairs) <= TWO_WAY_PAIRS_MAX, pairs


def test_imports_inside_functions_say_why():
    bare = house()["unexplained"]
    assert len(bare) <= UNEXPLAINED_MAX, (
        f"{len(bare)} project imports inside functions without a reason (a comment on the line "
        "or above it, e.g. '# deferred: torch'):\n" + "\n".join(bare)
    )


def test_no_folder_over_the_limit():
    assert house()["big folders"] == {}


# The counting, on small trees.


def tree(root, files: dict[str, str]) -> dict:
    """Writes ``files`` (path -> source) under ``root``; returns tree_facts' module table."""
    for path, src in files.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(textwrap.dedent(src))
    return tf.modules(root, ("study",))


SMALL = {
    "study/__init__.py": "",
    "study/phase.py": "from study.cell import a\n",
    "study/cell/__init__.py": "",
    "study/cell/a.py": """\
        import os


        def f():
            from study import phase

            return phase


        def g():
            # deferred: torch
            import study.rows.r
            from study.sweep import s

            return study.rows.r, s


        def h():
            from . import b  # the cell's own helpers: cheap, but b imports a

            return b
        """,
    "study/cell/b.py": "import study.cell.a\n",
    "study/rows/__init__.py": "",
    "study/rows/r.py": """\
        class Table:
            from study.workloads import w


        def k():
            from study.cell.a import f  # noqa: E402

            return f


        def m():
            # Long: why this function is long, not why it imports
            from study.workloads import w

            return w
        """,
    "study/sweep/__init__.py": "",
    "study/sweep/s.py": "from study.rows import r\n",
    "study/workloads/__init__.py": "",
    "study/workloads/w.py": "import os\n",
}


def test_pairs_count_imports_inside_functions_and_top_level_modules(tmp_path):
    known = tree(tmp_path, SMALL)
    # phase.py -> cell at module level, cell -> phase.py in a function: a pair; cell -> rows with
    # a reason and rows -> cell in a function: a pair; sweep -> rows and rows -> workloads one way.
    assert tf.two_way_pairs(known, tmp_path, "study") == [
        ("study/cell", "study/phase.py"),
        ("study/cell", "study/rows"),
    ]
    assert tf.folder(tmp_path / "study/phase.py", tmp_path) == "study/phase.py"
    assert tf.folder(tmp_path / "study/__init__.py", tmp_path) == "study"
    assert tf.folder(tmp_path / "study/cell/a.py", tmp_path) == "study/cell"


def test_pairs_span_packages_and_their_subfolders(tmp_path):
    """reference/findings/host/effects.py took speed/forward and speed/training took
    host.effects.WRAPPERS: a sibling loop; and a package's top modules that import its
    subfolders, which import them back, are a pair too. A pair across packages counts."""
    files = {
        "analysis/__init__.py": "",
        "analysis/m.py": "from reference.findings import base\n",
        "reference/__init__.py": "",
        "reference/findings/__init__.py": "",
        "reference/findings/document.py": "from reference.findings.speed import forward\n",
        "reference/findings/base.py": "",
        "reference/findings/speed/__init__.py": "",
        "reference/findings/speed/forward.py": "from reference.findings import base\n",
        "reference/findings/speed/training.py": "from reference.findings.host import effects\n",
        "reference/findings/host/__init__.py": "",
        "reference/findings/host/effects.py": "from reference.findings.speed import forward\n",
        "reference/findings/x.py": "from analysis import m\n",
    }
    for path, src in files.items():
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text(src)
    known = tf.modules(tmp_path, ("analysis", "reference"))
    assert tf.two_way_pairs(known, tmp_path, ("analysis", "reference")) == [
        ("analysis/m.py", "reference/findings"),
        ("reference/findings", "reference/findings/speed"),
        ("reference/findings/host", "reference/findings/speed"),
    ]
    assert tf.two_way_pairs(known, tmp_path, "analysis") == []  # one package: its own pairs only


def test_pairs_go_when_one_direction_goes(tmp_path):
    known = tree(tmp_path, {**SMALL, "study/rows/r.py": "import os\n"})
    assert tf.two_way_pairs(known, tmp_path, "study") == [("study/cell", "study/phase.py")]


def test_imports_inside_functions_with_and_without_a_reason(tmp_path):
    known = tree(tmp_path, SMALL)
    found = {(i.path, i.line): i for i in tf.function_imports(known, tmp_path)}
    said = {k: i.reason for k, i in found.items()}
    assert said == {
        ("study/cell/a.py", 5): "",  # none
        ("study/cell/a.py", 12): "deferred: torch",  # the line above
        ("study/cell/a.py", 13): "deferred: torch",  # above the run of imports it belongs to
        ("study/cell/a.py", 19): "the cell's own helpers: cheap, but b imports a",  # its own line
        ("study/rows/r.py", 6): "",  # a pragma is not a reason
        ("study/rows/r.py", 13): "",  # nor a function's '# Long:' comment
    }  # the class-level import in r.py is not inside a function
    assert found[("study/cell/a.py", 19)].targets == ("study.cell.b",)  # a relative import
    assert len(tf.unexplained(list(found.values()))) == 3


def test_modules_per_folder_and_the_big_ones(tmp_path):
    many = {f"study/observe/m{n}.py": "" for n in range(16)}
    known = tree(tmp_path, {**SMALL, **many, "study/observe/__init__.py": ""})
    per = tf.modules_per_folder(known, tmp_path)
    assert per["study/observe"] == 16 and per["study/cell"] == 2 and per["study"] == 1
    assert tf.big_folders(known, tmp_path) == {"study/observe": 16}
    assert tf.big_folders(known, tmp_path, most=16) == {}
