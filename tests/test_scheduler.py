"""The scheduler's slots, timeouts and rows, with a stand-in for the warm parent: no process is
started, so several GPUs can be faked on the CPU box (study.sweep.scheduler)."""

import pytest

from study.config.cell_config import to_plain
from study.rows import io
from study.sweep.scheduler import Scheduler
from study.sweep.warm_parent import WarmParentError
from tests.conftest import TINY


def cell_cfg(tmp_path, *overrides):
    """One tiny cell's config as the launcher hands it over (no Hydra key)."""
    from omegaconf import OmegaConf

    from study.config.cell_config import schema
    from tests.conftest import compose

    cfg = compose(*TINY, *overrides)
    cfg = OmegaConf.merge(schema(), {k: v for k, v in cfg.items() if k != "hydra"})
    cfg.out_root = str(tmp_path)
    return cfg


class FakeParent:
    """Forks nothing: records each spawn; ``script(fake)`` decides what ends at each read."""

    made = 0

    def __init__(self, cores, prewarm=True, pycache="auto", gpus=0, script=None, eager=False):
        from study.workloads import registry

        FakeParent.made += 1
        variants = {n: list(registry.get(n).shape_keys) for n in registry.names()}
        self.status = {"cuda_available": gpus > 0, "device_count": gpus, "variants": variants}
        self.spawned, self.exits, self.dead, self.script = [], {}, False, script
        self.eager = eager

    def alive(self):
        return not self.dead

    def spawn(self, target, kwargs, env, cores, log, cpu_compile=False):
        rid = len(self.spawned) + 1
        self.spawned.append(
            {"rid": rid, "kwargs": kwargs, "env": env, "cores": list(cores), "cpu": cpu_compile}
        )
        return rid, 4_000_000 + rid  # no such process group: killing it is a no-op

    def read(self, timeout):
        if self.script is not None:
            self.script(self)
        if self.dead:
            raise WarmParentError("the stand-in died")
        return None

    def close(self):
        pass


def factory(**kw):
    made = []

    def make(cores, **opts):
        made.append(FakeParent(cores, **opts, **kw))
        return made[-1]

    return make, made


def end_oldest(fake):
    """The oldest running cell exits with code 1 and no row (a crash row)."""
    for s in fake.spawned:
        if s["rid"] not in fake.exits and not s.get("ended"):
            s["ended"] = True
            fake.exits[s["rid"]] = 1
            return


def rows(sweep):
    return {r["run_id"]: r for r in io.read_csv(sweep / "runs.csv")}


def test_two_gpu_slots_run_two_cells_at_once_each_on_its_own_gpu_and_cores(tmp_path, monkeypatch):
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    make, made = factory(gpus=2, script=end_oldest)
    sweep = tmp_path / "sweep"
    cfg = cell_cfg(tmp_path, "device=cuda")
    with Scheduler(2, make_parent=make) as sched:
        for name in ("a", "b", "c"):
            sched.submit(cfg, sweep / name, sweep)
            if name == "b":  # both slots taken, nothing ended yet
                assert len(made[0].spawned) == 2 and not made[0].exits
    s = made[0].spawned
    assert [x["env"]["CUDA_VISIBLE_DEVICES"] for x in s] == ["0", "1", "0"]
    assert [x["kwargs"]["gpu"] for x in s] == ["0", "1", "0"]  # each cell proves its pin
    assert not set(s[0]["cores"]) & set(s[1]["cores"])  # no two cells share a core
    got = rows(sweep)
    assert [got[n]["gpu_index"] for n in "abc"] == ["0", "1", "0"]  # crash rows name their GPU
    assert all(got[n]["status"] == "crash" for n in "abc")
    assert float(got["c"]["gpu_wait_s"]) >= 0 and len(made) == 1


@pytest.mark.parametrize(
    "device, cuda, want", [("auto", True, "5"), ("cpu", True, None), ("cuda", False, None)]
)
def test_a_one_gpu_cell_sees_only_the_gpu_it_runs_on(tmp_path, monkeypatch, device, cuda, want):
    """One slot: a CUDA cell runs on the first GPU the sweep sees, and sees only that one (CUDA
    sets up every device it can see: 0.2 s a cell on a two-GPU host), and proves no pin."""
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "5,7")
    make, made = factory(gpus=2 if cuda else 0, script=end_oldest)
    sweep = tmp_path / "sweep"
    with Scheduler(1, make_parent=make) as sched:
        sched.submit(cell_cfg(tmp_path, f"device={device}"), sweep / "c", sweep)
    spawned = made[0].spawned[0]
    assert spawned["env"].get("CUDA_VISIBLE_DEVICES") == want
    assert spawned["kwargs"]["gpu"] is None
    assert rows(sweep)["c"]["gpu_wait_s"] in ("", None)  # one slot: nobody waits for a GPU


@pytest.mark.parametrize(
    "overrides, cuda, want",
    [(["compile=default"], False, True), (["compile=off"], False, False),
     (["compile=default"], True, False), (["compile=default", "device=cpu"], True, True),
     (["compile=aot_eager"], False, False)],  # no Inductor: nothing to probe
)  # fmt: skip
def test_only_a_compiled_cpu_cell_asks_the_warm_parent_to_probe_the_cpu_first(
    tmp_path, monkeypatch, overrides, cuda, want
):
    make, made = factory(gpus=1 if cuda else 0, script=end_oldest)
    sweep = tmp_path / "sweep"
    with Scheduler(1, make_parent=make) as sched:
        sched.submit(cell_cfg(tmp_path, *overrides), sweep / "c", sweep)
    assert made[0].spawned[0]["cpu"] is want


def test_an_eager_only_sweep_asks_for_a_warm_parent_without_inductor(tmp_path):
    make, made = factory(script=end_oldest)
    sweep = tmp_path / "sweep"
    with Scheduler(1, make_parent=make, eager=True) as sched:
        sched.submit(cell_cfg(tmp_path, "compile=off"), sweep / "c", sweep)
    assert made[0].eager is True and rows(sweep)["c"]["status"] == "crash"  # the stand-in's


def test_timeout_counts_from_the_fork_not_from_the_wait_for_a_slot(tmp_path, monkeypatch):
    """Two cells that never end, one slot, timeout_s=0.5: each is killed 0.5 s after its own
    fork; the second waited for the first and still got its whole 0.5 s."""
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    make, made = factory()
    sweep = tmp_path / "sweep"
    cfg = cell_cfg(tmp_path, "timeout_s=0.5")
    with Scheduler(1, make_parent=make) as sched:
        sched.submit(cfg, sweep / "a", sweep)
        sched.submit(cfg, sweep / "b", sweep)
    got = rows(sweep)
    assert [got[n]["status"] for n in "ab"] == ["timeout", "timeout"]
    assert "timeout_s=0.5" in got["b"]["reason"]
    assert 0.5 <= float(got["b"]["wall_s"]) < 0.9  # its wait for the slot is not its time


def test_a_dead_warm_parent_costs_its_running_cells_and_the_next_cell_gets_a_new_one(
    tmp_path, monkeypatch
):
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)

    def die(fake):
        fake.dead = True

    make, made = factory(script=die)
    sweep = tmp_path / "sweep"
    cfg = cell_cfg(tmp_path)
    with Scheduler(1, make_parent=make) as sched:
        sched.submit(cfg, sweep / "a", sweep)
        sched.submit(cfg, sweep / "b", sweep)  # waits for the slot: the parent dies meanwhile
        assert len(made) == 2  # b was forked by a new warm parent
        made[1].script = end_oldest
    got = rows(sweep)
    assert got["a"]["status"] == "crash" and "warm parent died" in got["a"]["reason"]
    assert got["b"]["status"] == "crash" and "exit code 1" in got["b"]["reason"]


def test_a_resumed_sweep_keeps_an_ok_cell_of_the_same_config_and_forks_nothing(
    tmp_path, monkeypatch
):
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    make, made = factory(script=end_oldest)
    sweep = tmp_path / "sweep"
    cfg = cell_cfg(tmp_path, "resume=true")
    with Scheduler(1, make_parent=make) as sched:
        cell = sched.cell(cfg, sweep / "a", sweep)
        (sweep / "a").mkdir(parents=True)
        row = {**io.base_row(to_plain(cfg), "a"), "status": "ok", "config_hash": cell.config_hash}
        row["latency_median_us"] = 12.5  # an ok row has its figures
        io.write_csv(sweep / "a" / "run.csv", [row], "runs")
        sched.submit(cfg, sweep / "a", sweep)
        sched.submit(cfg, sweep / "b", sweep)
    assert len(made[0].spawned) == 1  # only b
    assert sched.statuses == ["ok", "crash"]


def write_ok_row(cfg, sweep, name):
    """The cell ``name`` wrote its own ok row (what a cell does last)."""
    row = {**io.base_row(to_plain(cfg), name), "status": "ok", "latency_median_us": 12.5}
    io.write_csv(sweep / name / "run.csv", [row], "runs")


def test_a_row_a_cell_wrote_survives_its_warm_parent_dying(tmp_path, monkeypatch):
    """The review's case: the cell wrote run.csv, then the parent died before its exit was
    read. The cell's own row stands (it was overwritten by a crash row)."""
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    sweep = tmp_path / "sweep"

    cfg = cell_cfg(tmp_path)

    def write_then_die(fake):
        write_ok_row(cfg, sweep, "a")
        fake.dead = True

    make, made = factory(script=write_then_die)
    with Scheduler(1, make_parent=make) as sched:
        sched.submit(cfg, sweep / "a", sweep)
    got = rows(sweep)["a"]
    assert got["status"] == "ok" and got["config_hash"], got


def test_ctrl_c_keeps_the_rows_cells_wrote_and_completes_them(tmp_path, monkeypatch):
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    make, made = factory(gpus=2)
    sweep = tmp_path / "sweep"
    cfg = cell_cfg(tmp_path, "device=cuda")
    with pytest.raises(KeyboardInterrupt):
        with Scheduler(2, make_parent=make) as sched:
            sched.submit(cfg, sweep / "a", sweep)
            sched.submit(cfg, sweep / "b", sweep)
            write_ok_row(cfg, sweep, "a")  # a finished its row; b did not
            raise KeyboardInterrupt
    assert not sched.running and sched._parent is None
    got = rows(sweep)
    assert list(got) == ["a"] and got["a"]["config_hash"] and got["a"]["gpu_wait_s"] != ""
    assert not (sweep / "b" / "run.csv").exists()  # a resume runs b again
