"""An analysis command whose reader closed the pipe (``| head -1``) ends quietly with its status."""

import subprocess
import sys

import pytest

from tests.conftest import ROOT

pytestmark = pytest.mark.slow  # each test starts a process


def test_a_command_piped_into_head_ends_without_a_traceback(tmp_path):
    code = (
        "import sys\n"
        "from analysis.cli import run\n"
        "def main():\n"
        "    for i in range(100000):\n"
        "        print('line', i)\n"
        "    return 0\n"
        "run(main)\n"
    )
    cmd = f'{sys.executable} -c "{code}" | head -1'
    p = subprocess.run(["bash", "-o", "pipefail", "-c", cmd], cwd=ROOT, capture_output=True,
                       text=True, timeout=60)  # fmt: skip
    assert p.stdout == "line 0\n"
    assert "Traceback" not in p.stderr and "BrokenPipe" not in p.stderr, p.stderr
    assert p.returncode == 0


def test_a_commands_status_is_its_exit_status():
    p = subprocess.run([sys.executable, "-c", "from analysis.cli import run; run(lambda: 3)"],
                       cwd=ROOT, capture_output=True, text=True, timeout=60)  # fmt: skip
    assert p.returncode == 3
