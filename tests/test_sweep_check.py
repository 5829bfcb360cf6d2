"""A sweep's points are checked alike in one process and in forked ones (study.sweep_check)."""

import os
import signal

import pytest
from hydra import compose as hcompose
from hydra import initialize_config_dir

from study import sweep_check
from tests.conftest import ROOT

# one good point, then one of each kind of bad point the check knows, then good again
POINTS = [
    ["shape.seq_len=16"],
    ["shape.seq_len=0"],  # a value
    ["variant.name=nosuch"],  # a variant that is not registered (the main process's check)
    ["compile=nosuch"],  # Hydra's composition
    ["+foo=1"],  # an unknown key
    ["shape_sweep.key=hidden", "shape_sweep.sizes=[8,16]"],  # a shape key the variant lacks
    ["variant=flash"],
    ["shape.seq_len=-4"],
]


@pytest.fixture
def master():
    import study.run  # noqa: F401 - the schema and the resolvers

    with initialize_config_dir(config_dir=str(ROOT / "conf"), version_base="1.3"):
        yield hcompose(config_name="config", overrides=[], return_hydra_config=True)


def _children() -> set[int]:
    me = os.getpid()
    out = set()
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == me and fields[0] != "Z":
            out.add(int(pid))
    return out


def test_forked_checkers_find_what_one_process_finds(master):
    before = _children()
    seen = {}
    serial = sweep_check._check_all(POINTS, master, "config", lambda p: seen.update(one=p), 0)
    forked = sweep_check._check_all(POINTS, master, "config", lambda p: seen.update(two=p), 3)
    assert forked == serial, (forked, serial)
    assert serial[0] is None and serial[6] is None
    assert all(serial[i] for i in (1, 2, 3, 4, 5, 7))
    assert "is not registered" in serial[2] and "no such shape key" in serial[5]
    assert seen == {"one": POINTS, "two": POINTS}  # what the sweep starts early, started once
    assert _children() <= before, "a forked checker outlived the check"


def _sigint_share(indices):  # in a forked checker: what Ctrl-C does there
    return [(i, str(signal.getsignal(signal.SIGINT)), None) for i in indices]


def test_a_forked_checker_ignores_ctrl_c(master, monkeypatch):
    """Ctrl-C reaches every process of the foreground group: the main process says one line
    (study.run), the checkers must not print a traceback each."""
    monkeypatch.setattr(sweep_check, "_check_share", _sigint_share)
    why = sweep_check._check_all(POINTS[:4], master, "config", None, 2)
    assert why == [str(signal.SIG_IGN)] * 4


def test_what_the_sweep_starts_early_starts_before_the_points_are_composed(master, monkeypatch):
    """The forked checkers are forked first, and hold no pipe of a server started after them;
    the servers then import while the points are composed."""
    order = []
    real = sweep_check._check_point

    def check(*a, **k):
        order.append("compose")
        return real(*a, **k)

    monkeypatch.setattr(sweep_check, "_check_point", check)
    sweep_check._check_all(POINTS[:2], master, "config", lambda p: order.append("start"), 0)
    assert order == ["start", "compose", "compose"]


@pytest.mark.parametrize(
    "points, cores, want", [(35, 32, 5), (35, 2, 0), (4, 32, 0), (12, 32, 2), (500, 64, 8)]
)
def test_forked_checkers_only_for_many_points_on_many_cores(points, cores, want):
    assert sweep_check.check_workers(points, cores) == want
