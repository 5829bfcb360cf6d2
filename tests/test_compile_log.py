"""The structured compile log (study.observe.compile_log): rendered by tlparse where it is
installed, kept raw with a note where it is not, and a failed render is a note. No compile: a
stand-in log and stand-in tlparse scripts (the real log comes from tests/test_inductor.py)."""

import os
import stat

import pytest

from study.observe import compile_log


def _log(tmp_path):
    d = tmp_path / compile_log.LOG_DIR
    d.mkdir()
    (d / "dedicated_log_torch_trace_x.log").write_text("V1204 ... {}\n")
    return tmp_path


def _tool(tmp_path, body: str, monkeypatch):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    tool = bin_dir / "tlparse"
    tool.write_text("#!/bin/sh\n" + body)
    tool.chmod(tool.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}/usr/bin:/bin")


def test_without_tlparse_the_log_stays_and_a_note_says_how_to_render_it(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    row, note = compile_log.render(_log(tmp_path))
    assert row == {
        "compile_log": "compile_log/dedicated_log_torch_trace_x.log",
        "tlparse_index": "",
    }
    assert "pip install tlparse" in note and "tlparse compile_log/" in note


@pytest.mark.slow  # a stand-in tlparse process
def test_with_tlparse_its_index_is_the_rows(tmp_path, monkeypatch):
    # the stand-in writes index.html into the folder given after -o, as tlparse does
    _tool(tmp_path, 'while [ "$1" != "-o" ]; do shift; done; mkdir -p "$2"; '
                    'echo ok > "$2/index.html"\n', monkeypatch)  # fmt: skip
    row, note = compile_log.render(_log(tmp_path))
    assert note is None and row["tlparse_index"] == compile_log.INDEX
    assert (tmp_path / compile_log.INDEX).read_text().strip() == "ok"


@pytest.mark.slow
def test_a_failed_render_is_a_note_not_a_failure(tmp_path, monkeypatch):
    _tool(tmp_path, "echo 'unrecognized log line' >&2; exit 3\n", monkeypatch)
    row, note = compile_log.render(_log(tmp_path))
    assert row["tlparse_index"] == "" and "exit 3" in note and "unrecognized" in note


def test_a_cell_without_a_log_says_nothing(tmp_path):
    assert compile_log.render(tmp_path) == ({}, None)
