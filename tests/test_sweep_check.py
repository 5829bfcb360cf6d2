"""A sweep's points are checked alike in one process and in forked ones (study.sweep_check)."""

import os
import signal

import pytest
from hydra import compose as hcompose
from hydra import initialize_config_dir

from study import sweep_check
from tests.conftest import ROOT, TINY, cli

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
    # not registered, and an unknown Inductor key: the registry's reason, as in one process
    ["variant.name=nosuch", "+compile.inductor.nosuch_knob=1"],
    ["variant=custom", "variant.target=examples.norm_mlp.NormMLP", "family=mlp"],  # your own
    ["+compile.inductor.nosuch_knob=1"],
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


@pytest.mark.slow
def test_forked_checkers_find_what_one_process_finds(master):
    before = _children()
    seen = {}
    serial = sweep_check._check_all(POINTS, master, "config", lambda p: seen.update(one=p), 0)
    forked = sweep_check._check_all(POINTS, master, "config", lambda p: seen.update(two=p), 3)
    assert forked == serial, (forked, serial)
    assert [i for i, why in enumerate(serial) if why is None] == [0, 6, 9]
    assert "is not registered" in serial[2] and "no such shape key" in serial[5]
    assert "is not registered" in serial[8] and "unknown Inductor" in serial[10]
    assert seen == {"one": POINTS, "two": POINTS}  # what the sweep starts early, started once
    assert _children() <= before, "a forked checker outlived the check"


def test_a_check_that_stops_ends_its_forked_checkers(master):
    before = _children()

    def broken(points):
        raise RuntimeError("a server that could not start")

    with pytest.raises(RuntimeError):
        sweep_check._check_all(POINTS, master, "config", broken, 2)
    assert _children() <= before, "a forked checker outlived the check"


def _die(indices):  # in a forked checker: it dies (a variant's module that exits, OOM)
    os._exit(3)


@pytest.mark.slow
def test_a_forked_checker_that_dies_leaves_the_check_to_this_process(master, monkeypatch):
    """A lost share would otherwise wait forever."""
    serial = sweep_check._check_all(POINTS[:4], master, "config", None, 0)
    monkeypatch.setattr(sweep_check, "_check_share", _die)
    started = []
    why = sweep_check._check_all(POINTS[:4], master, "config", started.append, 2)
    assert why == serial and started == [POINTS[:4]]


def _sigint_share(indices):  # in a forked checker: what Ctrl-C does there
    return [(i, str(signal.getsignal(signal.SIGINT)), None, None) for i in indices]


@pytest.mark.slow
def test_a_forked_checker_ignores_ctrl_c(master, monkeypatch):
    """Ctrl-C reaches every process of the foreground group: the main process says one line
    (study.run), the checkers must not print a traceback each."""
    monkeypatch.setattr(sweep_check, "_check_share", _sigint_share)
    why = sweep_check._check_all(POINTS[:4], master, "config", None, 2)
    assert why == [str(signal.SIG_IGN)] * 4


@pytest.mark.slow
def test_what_the_sweep_starts_early_starts_after_the_checkers_are_forked(master):
    """The forked checkers hold no pipe of a server started after them, and the servers
    import while the points are composed."""
    import multiprocessing

    forked = []
    sweep_check._check_all(
        POINTS[:4],
        master,
        "config",
        lambda p: forked.append(len(multiprocessing.active_children())),
        2,
    )
    assert forked == [2]


@pytest.mark.slow
def test_a_sweep_checked_by_forked_processes_lists_its_bad_points(tmp_path, monkeypatch):
    monkeypatch.setenv("STUDY_CHECK_WORKERS", "2")  # this box is too small to fork by itself
    r = cli("-m", "shape.seq_len=16,0,32,-4", f"out_root={tmp_path}", *TINY)
    assert r.returncode == 2, r.stderr[-1500:]
    assert "2 of 4 sweep points cannot run" in r.stderr and "shape.seq_len=-4" in r.stderr
    assert "Traceback" not in r.stderr and not (tmp_path / "sweeps").exists()


@pytest.mark.parametrize(
    "points, cores, want",
    [(35, 32, 5), (35, 2, 0), (4, 32, 0), (12, 32, 2), (11, 32, 0), (35, 7, 0), (500, 64, 8)],
)
def test_forked_checkers_only_for_many_points_on_many_cores(points, cores, want, monkeypatch):
    monkeypatch.delenv("STUDY_CHECK_WORKERS", raising=False)
    assert sweep_check.check_workers(points, cores) == want
    monkeypatch.setenv("STUDY_CHECK_WORKERS", "0")
    assert sweep_check.check_workers(points, cores) == 0


def test_a_bad_number_of_checkers_is_named(monkeypatch):
    monkeypatch.setenv("STUDY_CHECK_WORKERS", "many")
    with pytest.raises(ValueError, match="STUDY_CHECK_WORKERS='many'"):
        sweep_check.check_workers(35, 32)
