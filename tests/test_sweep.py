"""Real sweeps through the CLI, as a user runs them: rows, files, resume, faults, kills."""

import os
import signal
import subprocess
import sys
import time

import pytest

from study.rows import io
from tests.conftest import ROOT, TINY, cli, root_env

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("sweep")]  # one module fixture per worker


def sweep_dir(out):
    dirs = sorted((out / "sweeps").iterdir())
    assert len(dirs) == 1, dirs
    return dirs[0]


def sweep_rows(out, *overrides, code=0):
    """A multirun of tiny CPU cells into ``out``: its rows by run_id (the CLI must exit
    ``code``)."""
    r = cli("-m", *overrides, f"out_root={out}", *TINY)
    assert r.returncode == code, r.stderr[-2000:]
    return {x["run_id"]: x for x in io.read_csv(sweep_dir(out) / "runs.csv")}


@pytest.fixture(scope="module")
def quick_sweep(tmp_path_factory):
    out = tmp_path_factory.mktemp("quick")
    r = cli("-m", "variant=naive,flash", "compile=off,default", f"out_root={out}", *TINY)
    assert r.returncode == 0, r.stderr[-3000:]
    return out, r


def test_2x2_multirun_gives_four_ok_rows(quick_sweep):
    out, r = quick_sweep
    assert "running on the CPU" in r.stdout
    sd = sweep_dir(out)
    rows = io.read_csv(sd / "runs.csv")
    assert sorted((x["variant"], x["compile"]) for x in rows) == [
        ("flash", "default"),
        ("flash", "off"),
        ("naive", "default"),
        ("naive", "off"),
    ]
    assert all(x["status"] == "ok" for x in rows), [x["reason"] for x in rows]
    for x in rows:
        run = sd / x["run_id"]
        assert run.name in (
            "compile=off,variant=naive",
            "compile=default,variant=naive",
            "compile=off,variant=flash",
            "compile=default,variant=flash",
        )
        for f in ("cell.yaml", "run.csv", "kernels.csv", "trace.json.gz"):
            assert (run / f).stat().st_size > 0, f
        ks = io.read_csv(run / "kernels.csv")
        assert ks and all(k["kernel_class"] for k in ks)
        assert all(float(k["calls_per_step"]).is_integer() for k in ks)
        assert (
            float(x["latency_p10_us"])
            <= float(x["latency_median_us"])
            <= float(x["latency_p90_us"])
        )
    eager = {x["variant"]: x for x in rows if x["compile"] == "off"}
    assert all(float(eager[v]["speedup"]) == 1.0 for v in eager)
    revealed = io.read_csv(sd / "revealed.csv")
    assert len(revealed) == 4
    assert any(
        "hidden copy" in x["revealed"]
        for x in revealed
        if x["variant"] == "naive" and x["compile"] == "off"
    )
    assert not (
        sd / "compile=default,variant=naive" / ".compile_cache"
    ).exists()  # cold cache removed


def test_compiled_run_lists_generated_cpp_kernels_with_source_and_fused_ops(quick_sweep):
    out, _ = quick_sweep
    run = sweep_dir(out) / "compile=default,variant=naive"
    row = io.read_csv(run / "run.csv")[0]
    assert float(row["compile_s"]) > 0 and int(float(row["generated_kernels"])) >= 1
    gen = [k for k in io.read_csv(run / "kernels.csv") if k["generated"] == "True"]
    assert gen, "no generated kernel in the compiled naive run"
    for k in gen:
        assert k["kernel_class"] == "cpp_generated" and k["inductor_kind"] == "cpp"
        src = run / k["source_file"]
        assert src.exists() and src.stat().st_size > 0
        assert k["fused_ops"] and "aten." in k["fused_ops"]
    assert (run / "generated" / "output_code_0.py").exists() or list(
        (run / "generated").glob("output_code_*.py")
    )
    assert list((run / "generated").rglob("fx_graph_transformed.py"))  # the post-grad graph


def test_resume_skips_ok_cells_and_redoes_the_rest(quick_sweep):
    out, _ = quick_sweep
    sd = sweep_dir(out)
    bad = sd / "compile=off,variant=flash" / "run.csv"
    rows = io.read_csv(bad)
    rows[0]["status"] = "error"
    io.write_csv(bad, rows, "runs")
    r = cli(
        "-m", "variant=naive,flash", "compile=off,default", f"out_root={out}", "resume=true", *TINY
    )
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.count("skipped (resume=true)") == 3
    assert sweep_dir(out) == sd  # the same sweep dir, no new one
    assert io.read_csv(bad)[0]["status"] == "ok"
    assert len(io.read_csv(sd / "runs.csv")) == 4
    # More repeats of one cell into the same sweep (the reference study's host-bound cells):
    # the progress counts this sweep's own cells, the rows keep every repeat.
    r = cli(
        "-m", "variant=naive", "compile=off", f"out_root={out}", "resume=true", "repeat=1", *TINY
    )
    assert r.returncode == 0, r.stderr[-2000:]
    assert "[study] [1/1] compile=off,repeat=1,variant=naive: ok" in r.stdout, r.stdout
    again = cli("-m", "variant=naive", "compile=off", f"out_root={out}", "resume=true", "repeat=1",
                *TINY)  # fmt: skip
    assert "[study] [1/1] compile=off,repeat=1,variant=naive: ok already, skipped" in again.stdout
    rows = io.read_csv(sd / "runs.csv")
    assert sorted(str(x["repeat"]) for x in rows if x["run_id"].endswith("variant=naive")) == [
        "0",
        "0",
        "1",
    ]


def test_crash_segfault_and_hang_become_rows_and_the_sweep_goes_on(tmp_path):
    """Each fault costs only its own row; the next cell, forked by the same warm server, is ok.
    A crash is a failure of the harness: the command exits 1 after its summary."""
    rows = sweep_rows(
        tmp_path, "variant=naive", "fault=crash,segv,hang,none", "timeout_s=10", code=1
    )
    assert rows["fault=crash,variant=naive"]["status"] == "crash"
    assert "SIGABRT" in rows["fault=crash,variant=naive"]["reason"]
    crash = rows["fault=crash,variant=naive"]  # the row says what the cell ran
    assert crash["device"] == "cpu" and crash["seq_len"] == "16" and crash["config_hash"]
    assert rows["fault=segv,variant=naive"]["status"] == "crash"
    assert "SIGSEGV" in rows["fault=segv,variant=naive"]["reason"]
    assert rows["fault=hang,variant=naive"]["status"] == "timeout"
    assert "timeout_s=10" in rows["fault=hang,variant=naive"]["reason"]
    assert rows["fault=none,variant=naive"]["status"] == "ok"


def test_sigkill_mid_cell_loses_no_completed_row(tmp_path):
    env = root_env()
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "study.run",
            "-m",
            "variant=naive",
            "fault=none,hang",
            f"out_root={tmp_path}",
            *TINY,
        ],
        cwd=ROOT,
        env=env,
        stdout=open(tmp_path / "sweep.log", "w"),
        stderr=subprocess.STDOUT,
    )
    deadline = time.time() + 120
    hang_dir = None
    while time.time() < deadline:
        found = list(tmp_path.glob("sweeps/*/fault=hang,variant=naive/cell.yaml"))
        if found:
            hang_dir = found[0].parent
            break
        time.sleep(0.2)
    assert hang_dir is not None, "the sweep never reached its second cell"
    time.sleep(3)  # the hanging cell's process is up
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    sd = hang_dir.parent
    assert (sd / "runs.csv").exists(), (tmp_path / "sweep.log").read_text()[-3000:]
    rows = io.read_csv(sd / "runs.csv")
    assert [(x["run_id"], x["status"]) for x in rows] == [("fault=none,variant=naive", "ok")]
    assert not list(sd.rglob(".*.tmp"))
    assert not (hang_dir / "run.csv").exists()
    pid = int((hang_dir / ".cell.pid").read_text())
    deadline = time.time() + 10
    while _alive(pid) and time.time() < deadline:
        time.sleep(0.2)
    assert not _alive(pid), "the orphaned cell process outlived the killed sweep"
    # The sweep's runs.csv can always be rebuilt from the per-run files.
    (sd / "runs.csv").unlink()
    io.aggregate(sd)
    assert len(io.read_csv(sd / "runs.csv")) == 1


def _alive(pid: int) -> bool:
    """A live (not zombie) process with this pid."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def test_a_cpu_cell_past_its_memory_cap_is_an_oom_row_and_the_sweep_goes_on(tmp_path):
    """One scores buffer is 2*2*4096^2 fp32 = 0.27 GB (tiny: batch 2, heads 2), over a 0.2 GB
    cap: the allocator says no (an `oom` row that names the cap), no OOM killer involved."""
    rows = sweep_rows(
        tmp_path,
        "variant=naive",
        "device=cpu",
        "dtype=fp32",
        "shape.seq_len=4096,16",
        "cpu_mem_limit_gb=0.2",
    )
    big = rows["device=cpu,dtype=fp32,shape.seq_len=4096,variant=naive"]
    assert big["status"] == "oom", big["reason"]
    assert "allocate" in big["reason"] and "cpu_mem_limit_gb" in big["reason"]
    assert rows["device=cpu,dtype=fp32,shape.seq_len=16,variant=naive"]["status"] == "ok"


@pytest.mark.slow
def test_the_sweeps_own_process_needs_no_torch(tmp_path):
    """The sweep's main process (sweeper, launcher, scheduler) writes the timeout or crash row
    of a cell that wrote none; it imported study.cell.phases for that, and with it torch."""
    code = (
        "import sys\n"
        "class NoTorch:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name == 'torch' or name.startswith('torch.'):\n"
        "            raise ImportError('the job process must not import torch')\n"
        "sys.meta_path.insert(0, NoTorch())\n"
        "from pathlib import Path\n"
        "from tests.conftest import compose\n"
        "import hydra_plugins.study_plugins\n"
        "from study.sweep import rundir\n"
        "cfg = compose('+experiment=tiny', 'variant=naive', 'compile=default')\n"
        "keys = ['batch', 'heads', 'seq_len', 'head_dim']\n"
        f"d = Path({str(tmp_path)!r})\n"
        "cell = rundir.Cell(d / 'c', d, rundir.resolve(cfg, False, keys))\n"
        "rundir.prepare(cell)\n"
        "row = rundir.finish(cell, ('crash', 'x'), 1.0, None, None)\n"
        "assert row['status'] == 'crash' and row['variant'] == 'naive', row\n"
        "from study.config.env import boot_id\n"
        "assert row['boot_id'] == boot_id() != '', row  # which machine, even for a crash\n"
        "assert 'torch' not in sys.modules\n"
    )
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=root_env(),
                       capture_output=True, text=True, timeout=120)  # fmt: skip
    assert r.returncode == 0, r.stderr[-2000:]
