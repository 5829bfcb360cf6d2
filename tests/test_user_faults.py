"""A user's fault is the user's: a factory that raises, inputs of the wrong shape and a factory
that exits are ``error`` rows in the workload's own words, the same for eager and compiled, and
no failure of the harness (exit 0, not 1)."""

import pytest

from study.rows.summary import harness_failure
from tests.conftest import TINY, cli

CUSTOM = ["variant=custom", "variant.inputs=tests.user_faults.inputs", "shape.dim=16"]
WRONG = ["variant=custom", "variant.target=tests.user_faults.projection",
         "variant.inputs=tests.user_faults.wrong_inputs", "shape.dim=16"]  # fmt: skip


def test_the_workloads_own_error_is_no_failure_of_the_harness():
    assert not harness_failure({"status": "error", "reason": "workload: ValueError: no"})
    assert harness_failure({"status": "error", "reason": "KeyError: 'flops'"})  # ours


@pytest.mark.slow
@pytest.mark.parametrize(
    "overrides, said",
    [
        ([*CUSTOM, "variant.target=tests.user_faults.broken"],
         "workload: ValueError: my factory cannot build dim=16"),
        (WRONG, "workload: RuntimeError: mat1 and mat2 shapes cannot be multiplied (2x17 and 16x16)"),
        ([*CUSTOM, "variant.target=tests.user_faults.exits"],
         "workload: RuntimeError: the workload called sys.exit(0): a workload must raise an "
         "exception, not exit the process"),
    ],
    ids=["factory raises", "wrong inputs", "factory exits"],
)  # fmt: skip
def test_eager_and_compiled_say_the_workloads_own_words(run_inline, overrides, said):
    for mode in ("off", "default"):
        row, _, _ = run_inline(*overrides, f"compile={mode}", "shape.batch=2", name=mode)
        assert (row["status"], row["reason"]) == ("error", said), mode


@pytest.mark.slow
def test_a_sweep_of_a_broken_workload_exits_0_without_blaming_the_harness(tmp_path):
    r = cli("-m", *WRONG, "compile=off,default", f"out_root={tmp_path}", *TINY)
    assert r.returncode == 0, r.stdout[-1500:] + r.stderr[-1500:]
    assert "done: 2 cells" in r.stdout and "2 error" in r.stdout
    assert "reason of the harness" not in r.stdout + r.stderr
