"""One cell, in its own process: build, compile, check, time, profile, prove -> rows.

``run_cell`` reads like the method, one phase per step:

1. build: device, environment, seeded inputs (study.cell.build), outside every timed region.
2. compile: Inductor's capture settings, ``torch.compile`` in the cell's mode, under the SDPA
   pin (study.cell.compiling); Dynamo starts fresh (a forked cell is fresh; an in-process one
   resets it).
3. first call on its own (``first_call_s``: compile included); then what Inductor generated
   and what compiling cost (study.observe.inductor).
4. check: the output against a float64 reference (study.cell.correctness); FLOPs counted on it.
5. measure, with no garbage collection, nothing recompiling and the host's load sampled:
   per-call latency, device time (study.measure.timing), and for a compiled cell the paired speedup
   against eager in the same process, with its 95% interval (study.observe.stats).
6. profile: one profiler pass; kernels attributed per step (study.observe.trace) and joined to the
   generated code; the pinned SDPA backend proven from the trace (study.observe.proof).

Anything that goes wrong becomes the row's status and reason; nothing escapes.
"""

# Long: the cell's phases in order, each a short method of Cell, so that run_cell reads like the
# method.

from __future__ import annotations

import datetime as dt
import os
import statistics
import time
import traceback
import warnings
from contextlib import ExitStack
from pathlib import Path

from omegaconf import DictConfig

from study.cell import build, compiling, passes, regional, shape_sweep, start, verdict
from study.cell.failures import classify_error, exited
from study.config import compile_targets
from study.config import env as envinfo
from study.config.cell_config import first_row, plain
from study.errors import Unsupported, WorkloadError
from study.measure import (
    calibrate,
    gpu_power,
    host_cost,
    host_gauge,
    host_load,
    memory,
    pinning,
    timing,
    timing_figures,
)
from study.observe import compile_log, proof
from study.observe import cudagraphs as cg
from study.observe import inductor as ind
from study.observe import trace as tr
from study.rows import metrics


class Cell:
    """The state one cell carries through its phases; each phase fills part of ``row``."""

    def __init__(self, cfg: DictConfig, run_dir: Path):
        self.cfg, self.run_dir = cfg, Path(run_dir)
        self.t0 = time.perf_counter()
        self.row = first_row(cfg, self.run_dir.name)
        self.row["started_at"] = dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
        self.mode = cfg.compile.mode
        self.kind = cfg["pass"].kind
        self.kernels: list[dict] = []
        self.generated: dict = {}
        self.caught: list[str] = []
        self.notes: list[str] = []
        self.tuner = ind.Autotune()
        self.stack = ExitStack()
        self.check_ok, self.check_reason = False, "not checked"
        self.ref = None  # the float64 reference's result, computed once (check)
        self.start_invalid = None  # start=warm|artifacts compiled again (study.cell.start)
        self.cg: cg.Watch | None = None  # CUDA-graph coverage, for the targets that use them
        # the timed rounds' host speed and eager's p90 there (timing_figures.settle)
        self.timing_gauge_us: float | None = None
        self.eager_p90_us: float | None = None

    # 1 ------------------------------------------------------------------------------------
    def build(self) -> None:
        _inject(self.cfg)
        sw = self.cfg.shape_sweep
        if sw.key is not None:  # the sweep's first shape is the cell's own
            from omegaconf import OmegaConf

            self.cfg = OmegaConf.merge(self.cfg, {"shape": {sw.key: sw.sizes[0]}})
        self.device = build.resolve_device(plain(self.cfg.device))
        self.row["device"] = self.device
        self.row.update(envinfo.collect(self.device))
        try:
            self.entry, shape, self.wl = build.build_workload(self.cfg, self.device)
        except Exception as e:  # noqa: BLE001 - a factory of the user's own is the user's
            failed = e
        else:
            failed = None
        if failed is not None:  # outside the except: the workload's words, not the chain's
            raise self._whose(failed)
        self.row.update(shape)
        self.notes += self.wl.notes
        self.row.update(self.wl.row)
        self.row["backend_expected"] = self.wl.sdpa_backend or ""
        self.shape = shape

    # 2 ------------------------------------------------------------------------------------
    def compile(self) -> None:
        c, target = self.cfg.compile, compile_targets.get(self.mode)
        if not target.training and self.kind != "fwd":
            raise Unsupported(
                f"compile={self.mode} with pass={self.kind}: {target.isolates}; an exported "
                "program is an inference graph, with no backward to run (use pass=fwd)"
            )
        start.prime(self)  # start=warm|artifacts: a primer process first, before any compile
        if self.mode != "off" and c.trace_log:
            compile_log.start(self.run_dir)
        if self.mode != "off" and compiling.skips_guards(c.stance):
            why = compiling.stance_supported()
            if why:
                raise Unsupported(why)
            self.notes.append(
                "compile.stance=skip_guard_eval_unsafe: timed and profiled with Dynamo's guards "
                "skipped (only those that tell its graphs apart run): host_us against this cell "
                "under compile.stance=default is what guards cost a call"
            )
        if self.mode != "off":
            patches = {
                **ind.settings(self.run_dir, self.device),
                **target.patches,
                **({"freezing": True} if c.freezing else {}),
                **dict(c.inductor),
            }
            bad = ind.apply(patches)
            if bad:
                raise ValueError(f"unknown Inductor config key(s) {bad} in compile.inductor")
        self.stack.enter_context(build.sdpa_pin(self.wl.sdpa_backend))
        if self.wl.sdpa_backend or self.entry.name == "sdpa":
            self.row["sdpa_choice"] = _sdp_choice(self.wl.inputs[:3])
        self.trained = passes.prepare(self.kind, self.wl, self.cfg["pass"].lr)
        if self.trained is not None:
            self.notes += self.trained.notes
            self.reference = passes.Reference(self.wl)  # float64, before any step changes it
            if self.cfg.tolerance_rule == "eager" and self.mode != "off":
                passes.snapshot(self.trained)
        backward_in = None
        if c.compiled_autograd and self.trained is not None and self.mode != "off":
            backward_in = lambda: compiling.compiled_autograd(c.fullgraph)  # noqa: E731
        self.backward_in = backward_in
        self.fn = self._compiled(c)
        if c.dynamic == "mark":
            compiling.mark_dynamic(self.wl.inputs, self.shape[self.cfg.shape_sweep.key])
        inputs, seed = self.wl.inputs, self.cfg.seed
        grad = not (c.freezing and self.mode != "off")  # freezing compiles under no_grad only
        if not grad:
            self.notes.append("compile.freezing: the forward runs under torch.no_grad (eager too)")
        self.step = passes.make_step(
            self.kind, self.fn, inputs, self.trained, seed, backward_in, grad=grad
        )
        self.eager = passes.make_step(self.kind, self.wl.fn, inputs, self.trained, seed, grad=grad)
        if self.mode != "off":  # an eager cell leaves Dynamo and Inductor alone (seconds)
            # always (0.3 ms): an in-process cell may follow one whose counters say nothing
            # compiled while its graphs are still counted (seen in CI: 6 graphs for 3)
            compiling.fresh_dynamo()
            self.stack.enter_context(self.tuner)
        self.row["setup_s"] = time.perf_counter() - self.t0

    def _compiled(self, c):
        """The callable timed as compiled: the target's (study.cell.compiling), or by region
        (compile.regional: a view of the module, so eager's stays eager; study.cell.regional)."""
        if not (c.regional and self.mode != "off"):
            package = self.run_dir / "generated" / "aot_inductor.pt2"
            return compiling.make(self.wl.fn, self.mode, c.fullgraph, c.dynamic, package)
        fn, got, note = regional.make(self.wl.fn, self.mode, c.fullgraph, c.dynamic,
                                      c.regional_how, self.entry.name, self.kind)  # fmt: skip
        self.row.update(got)
        self.notes.append(note)
        return fn

    # 3 ------------------------------------------------------------------------------------
    def first_call(self) -> None:
        try:
            self._first_call()
        except Exception as e:  # noqa: BLE001 - whose the failure is: the workload's, or ours
            failed = e
        else:
            return
        raise self._whose(failed, eager_again=self.mode != "off")

    def _whose(self, e: Exception, eager_again: bool = False) -> Exception:
        """A workload of the user's own (variant.target) that fails by itself is the user's
        (WorkloadError): when built, or in its first call, where a compiled cell runs the
        eager step once, so that eager and compiled say the same words for the same bug (the
        compiled call said `unsupported` in Dynamo's words where eager said `error`). Else
        ``e`` as it is."""
        if isinstance(e, Unsupported) or not (
            self.cfg.variant.get("target") or self.cfg.variant.name == "custom"
        ):
            return e
        if not eager_again:
            return WorkloadError(e)
        try:
            self.eager()
        except Exception as eager_e:  # noqa: BLE001 - eager fails too: the workload's own bug
            eager_e.__context__ = None
            return WorkloadError(eager_e)
        return e

    def _first_call(self) -> None:
        if compiling.uses_cudagraphs(self.mode):  # after compile's reset: this cell's graphs only
            self.cg = self.stack.enter_context(cg.Watch())
        with warnings.catch_warnings(record=True) as ws:
            warnings.simplefilter("always")
            try:
                with memory.Peak(self.device) as peak:
                    t = time.perf_counter()
                    self.out = self.step()
                    timing.sync(self.device)
                    self.row["first_call_s"] = time.perf_counter() - t
                self.row["compile_peak_mem_bytes"] = peak.allocated
            finally:
                self.caught += [str(w.message).split("\n")[0][:200] for w in ws]
        if self.mode != "off":
            self.row.update(ind.metrics())
            start.columns(self)
            if self.cg is not None:  # graph trees record at the 2nd call: read again later
                self.row.update(self.cg.after_first_call())
            if isinstance(self.fn, compiling.AOTInductor):  # no Dynamo: its own clock
                self.row.update(compile_s=self.fn.compile_s, graphs=1)
                self.notes.append(
                    f"AOTInductor: torch.export {self.fn.export_s:.2f} s, then compile, package "
                    f"and load {self.fn.compile_s - self.fn.export_s:.2f} s "
                    f"(package: generated/{self.fn.package.name})"
                )
            self.generated = ind.harvest(self.run_dir, ind.provenance_store())
            self.row["generated_kernels"] = len(self.generated["kernels"])
            self.row["generated_dir"] = "generated"
            if self.generated.get("provenance_restored"):
                self.notes.append("Inductor provenance restored from the warm cache (cache hit)")

    # 4 ------------------------------------------------------------------------------------
    def check(self) -> None:
        verdict.check(self)

    # 5 ------------------------------------------------------------------------------------
    def measure(self) -> None:
        # A CUDA cell is timed, profiled and shape-swept with all its threads on one core
        # (pinning.OneCore says why), until the cell's stack closes; cpu_cores and the host
        # load stay the cell's whole group.
        group = sorted(os.sched_getaffinity(0))
        one = pinning.OneCore(self.device == "cuda" and self.cfg.timing.one_core)
        self.stack.enter_context(one)
        self.row["timing_core"] = one.core
        if one.note:
            self.notes.append(one.note)
        self._measure(group)

    def _measure(self, cores: list[int]) -> None:
        cfg, row = self.cfg, self.row
        t = time.perf_counter()
        load = host_load.HostLoad(cores)
        probe = [host_load.host_probe_us()]
        self.levels = calibrate.cache_path(cfg.calibration_file).with_name(
            host_gauge.HOST_LEVEL_FILE
        )
        level, why = host_gauge.host_level(
            self.levels, host_gauge.SURVEY_S if self.device == "cuda" else 0.0
        )  # the CPU's cells judge by their own readings when none is recorded (CI: every cell)
        if why:
            self.notes.append(why)
        self.phases = host_gauge.Phases(
            cfg.timing.fast_ratio, level, host_dip=host_gauge.read_host_dip(self.levels)
        )
        eager_ok = self.mode != "off" and self._eager_baseline(
            lambda: [self.eager() for _ in range(max(1, cfg.timing.warmup))]
        )  # eager's first calls before the guard: some eager paths compile inside (flex)
        power = gpu_power.GpuPower(self.device)  # over the rounds only (a compiled cell's: both)
        with compiling.no_recompile(self.mode, self.cfg.compile.stance), timing.quiet(), load:
            warm = max(cfg.timing.warmup, 3 if compiling.uses_cudagraphs(self.mode) else 0)
            self.timed = None
            with power:
                if eager_ok:
                    try:
                        self._rounds(warm, paired=True)
                    except EagerFailed as e:  # the compiled step's own failures fail the cell
                        self._no_eager(e.__cause__)
                        self.phases.readings.clear()  # the retry judges its own rounds
                if self.timed is None:
                    self._rounds(warm, paired=False)
                if filled := power.fill(self.step, lambda: timing.sync(self.device)):
                    self.notes.append(f"GPU power over the rounds and {filled} more steps (1 s)")
            self._peak_memory()
            if self.device == "cuda":
                dtm = _device_time(self.step, cfg, self.mode, self.notes, self.kind)
                row.update(
                    device_time_us=dtm["median"],
                    device_time_p10_us=dtm["p10"],
                    device_time_p90_us=dtm["p90"],
                    device_time_method=dtm["method"],
                    device_time_l2=dtm.get("l2"),
                )
            else:
                row["device_time_method"] = "none"
            self._host_cost()
            if self.timed.eager:
                self._eager_baseline(self._eager_peak)
        load.at_least(host_load.MIN_WATCH_S)
        probe.append(host_load.host_probe_us())
        row.update(load.row(), host_probe_us=statistics.median(probe))
        row.update(power.row())
        if power.why:
            self.notes.append(power.why)
        timing_figures.settle(self)
        self._host_check()
        row["measure_s"] = time.perf_counter() - t

    def _host_check(self) -> None:
        """Each host figure at the timed calls' host speed (host units x the timed rounds'
        gauge: host_us; the blocks' own us stay in host_block_us), against its own call's
        latency (host_cost.check); a broken one is blanked, and the row says why. A serial
        call's latency is its host and device time added: the note gives both."""
        row, g = self.row, self.timing_gauge_us
        row["timing_gauge_us"] = g
        if row.get("host_us") is not None:
            row["host_block_us"] = row["host_us"]
        for k in ("", "eager_"):
            if g and row.get(f"{k}host_units"):
                row[f"{k}host_us"] = row[f"{k}host_units"] * g
        sides = (("", row.get("latency_median_us"), row.get("latency_p90_us")),
                 ("eager_", row.get("eager_latency_paired_us"), self.eager_p90_us))  # fmt: skip
        for k, lat, p90 in sides:
            if row.get(f"{k}host_status") == "serial" and lat:
                dev = row.get("device_time_us") if k == "" else None
                self.notes.append(
                    ("eager twin: " if k else "")
                    + f"serial: latency {lat:.0f} us is host and device time added"
                    + (f" (device {dev:.0f} us, the rest {lat - dev:.0f} us)" if dev else "")
                )
            ok, why = host_cost.check(row.get(f"{k}host_units"), lat, p90, g)
            if not ok:
                row.update({f"{k}host_us": None, f"{k}host_units": None,
                            f"{k}host_status": "above_latency"})  # fmt: skip
                self.notes.append(("eager twin: " if k else "") + why)

    def _host_cost(self) -> None:
        """Host µs per call, eager's twin too, timed behind a GPU sleep (study.measure.host_cost)."""
        t = self.cfg.timing
        why = host_cost.available(self.device) if t.host_blocks > 0 else "timing.host_blocks=0"
        if why:
            if self.device == "cuda":
                self.notes.append(why)
            return
        r = self.timed
        fns, lat = {"": self.step}, {"": statistics.median(x for c in r.chunks for x in c)}
        if r.eager:
            fns["eager_"], lat["eager_"] = self.eager, statistics.median(r.eager)
        level = self.phases.level()
        bar = None if level is None else self.phases.ratio * level
        try:
            got, self.row["host_queue_depth"] = host_cost.measure(
                fns, lat, t.host_blocks, t.host_sleep_ms, t.host_calls, self.phases.gauge
            )
        except Exception as e:  # noqa: BLE001 - the other measurements stand without it
            timing.sync(self.device)
            self.notes.append(f"host time per call not measured: {type(e).__name__}: {e}"[:200])
            return
        for k, b in got.items():
            figs, note = host_cost.figures(b, bar)
            self.row.update({f"{k}{c}": v for c, v in figs.items() if k == "" or c in EAGER_HOST})
            if note:
                self.notes.append(("eager twin: " if k else "") + note)

    def _peak_memory(self) -> None:
        """The steady step's peak memory (study.measure.memory.steady), and what CUDA graphs hide."""
        peak = memory.steady(self.step, self.device)
        self.row.update(
            peak_mem_alloc_bytes=peak.allocated,
            peak_mem_step_bytes=peak.step,
            peak_mem_reserved_bytes=peak.reserved,
            mem_source=peak.source,
        )
        if self.device == "cuda" and compiling.uses_cudagraphs(self.mode):
            self.notes.append(
                "CUDA graphs replay into memory their pool took while recording, which the "
                "allocator does not count again: peak_mem_alloc_bytes leaves it out, "
                "peak_mem_reserved_bytes holds it; no compression_ratio"
            )

    def _rounds(self, warm: int, paired: bool) -> None:
        """Per-call chunks, and for a compiled cell eager/compiled block pairs in the same
        rounds, each round between two gauges of the host's phase (study.measure.timing.rounds)."""
        t = self.cfg.timing
        est = timing.per_call(self.step, self.device, warm, max(3, t.calls // timing.CHUNKS))
        self.pair_calls = timing.pair_calls(est["median"], t.block_ms, t.calls, self.device)

        def eager():  # its failures are the baseline's, not the cell's
            try:
                return self.eager()
            except Exception as e:  # noqa: BLE001 - re-raised, tagged
                raise EagerFailed(str(e)) from e

        self.timed = timing.rounds(
            self.step,
            self.device,
            self.phases,
            t.calls,
            t.max_s,
            t.lead_in,
            eager if paired else None,
            t.pairs,
            self.pair_calls,
        )

    def _eager_peak(self) -> None:
        eager_peak = memory.steady(self.eager, self.device)
        self.row["eager_peak_mem_alloc_bytes"] = eager_peak.allocated
        self.row["eager_peak_mem_step_bytes"] = eager_peak.step
        if not (self.device == "cuda" and compiling.uses_cudagraphs(self.mode)):
            self.row["compression_ratio"] = metrics.speedup(
                eager_peak.allocated, self.row.get("peak_mem_alloc_bytes")
            )

    def _eager_baseline(self, run) -> bool:
        """Run part of the eager baseline of a compiled cell. Eager failing (flex's unfused
        fallback runs out of memory at lengths its compiled kernel handles) costs the paired
        columns, not the compiled cell's row: the notes say why."""
        try:
            run()
            return True
        except Exception as e:  # noqa: BLE001 - the compiled measurements stand on their own
            self._no_eager(e)
            return False

    def _no_eager(self, e: BaseException) -> None:
        status, reason = classify_error(e, [])
        self.notes.append(f"no eager baseline in this process (eager: {status}: {reason[:200]})")
        if self.device == "cuda":
            import torch

            torch.cuda.empty_cache()

    # 6 ------------------------------------------------------------------------------------
    def profile(self) -> None:
        # Long: the profiler pass and what is read from it (kernels, proof, phases), in the order of
        # the method.
        cfg, row = self.cfg, self.row
        t = time.perf_counter()
        p = cfg.profile
        if not p.enabled:
            self._coverage()
            status, reason = ("ok", "") if self.check_ok else ("mismatch", self.check_reason)
            if self.wl.sdpa_backend and status == "ok":  # a mismatch stays a mismatch
                status, reason = (
                    "invalid",
                    f"{proof.PREFIX}profile.enabled=false: the pinned backend cannot be proven",
                )
            row["status"], row["reason"] = status, reason
            row["profile_s"] = time.perf_counter() - t
            return
        trace_path = self.run_dir / "trace.json.gz"
        with compiling.no_recompile(self.mode, self.cfg.compile.stance):
            events = tr.profile(
                self.step, self.device, p.wait, p.warmup, p.active, p.record_shapes, trace_path
            )
        self.kernels, summary = tr.parse(events, self.device)
        if not p.save_trace:
            trace_path.unlink(missing_ok=True)
        else:
            row["trace_file"] = trace_path.name
        op_names = summary.pop("op_names", [])
        summary.pop("profile_note", None)
        row.update(cg.keep_share(summary, self.mode))
        self._coverage()
        ind.join(self.kernels, self.generated)
        if row.get("profiled_step_us") and row.get("latency_median_us"):
            row["profiler_overhead"] = row["profiled_step_us"] / row["latency_median_us"]
        if self.device == "cuda":
            row["host_bound"], why = metrics.bound_verdict(row)
            if why:
                self.notes.append(why)
        if (
            self.device == "cuda"
            and self.mode in compiling.CUDAGRAPH_MODES
            and not row.get("kernels_per_step")
        ):
            self.notes.append("no kernels visible in the profiled CUDA-graph steps (kineto#1165)")
        status, reason = ("ok", "") if self.check_ok else ("mismatch", self.check_reason)
        prove = self.wl.prove or (
            (lambda *a: proof.prove_pass(self.wl.sdpa_backend, *a))
            if self.entry.family == "attention"
            and (self.wl.sdpa_backend or self.entry.name == "sdpa")
            else None
        )
        if prove is not None:
            pr = prove(self.kernels, op_names, self.generated)
            self.notes += pr.get("notes", [])
            row["backend_seen"], row["backend_proof"] = pr["backend_seen"], pr["backend_proof"]
            if "decomposed by Inductor" in pr["backend_proof"]:
                self.notes.append("Inductor decomposed the SDPA math op into generated kernels")
            why = proof.unprovable(compile_targets.get(self.mode).backend, self.wl.sdpa_backend, pr)
            if why and status == "ok":
                status, reason = "unsupported", why
            elif not pr["ok"] and status == "ok":
                status, reason = "invalid", pr["reason"]
        if self.device == "cpu" and compiling.uses_cudagraphs(self.mode):
            self.notes.append(
                f"compile={self.mode} on the CPU: CUDA graphs do not apply (cudagraph_skip_"
                "reasons), so the row runs the same path without them"
            )
        pt = proof.prove_target(self.mode, self.device, self.kernels, self.generated, row)
        row["target_proof"] = pt["proof"]
        if not pt["ok"] and status == "ok":
            status, reason = "invalid", pt["reason"]
        if self.start_invalid and status == "ok":
            status, reason = "invalid", self.start_invalid
        row["status"], row["reason"] = status, reason
        row["profile_s"] = time.perf_counter() - t

    def _coverage(self) -> None:
        """CUDA-graph coverage after the steady state, which has recorded what it will
        (study.observe.cudagraphs)."""
        if self.cg is not None:
            self.row.update(self.cg.read())
            self.notes += self.cg.notes

    # 7 ------------------------------------------------------------------------------------
    def saved(self) -> None:
        """Training passes: what the forward saves for backward, compiled against eager."""
        if self.trained is None:
            return
        inputs = self.wl.inputs
        n, b = passes.saved_for_backward(lambda: self.fn(*inputs), self.trained.leaves)
        self.row["saved_tensors"], self.row["saved_bytes"] = n, b
        if self.mode != "off":
            n, b = passes.saved_for_backward(lambda: self.wl.fn(*inputs), self.trained.leaves)
            self.row["eager_saved_tensors"], self.row["eager_saved_bytes"] = n, b
            self.row.update(compiling.autograd_counts())
        self.trained.zero()

    # 8 ------------------------------------------------------------------------------------
    def shapes(self) -> None:
        """shape_sweep: the same compiled function over several shapes (study.cell.shape_sweep)."""
        if self.cfg.shape_sweep.key is not None:
            shape_sweep.run(self)

    # rows ---------------------------------------------------------------------------------
    def fail(self, e: BaseException) -> None:
        if isinstance(e, compiling.Recompiled):
            self.row["status"], self.row["reason"] = "invalid", str(e)
        elif isinstance(e, start.PrimerFailed):  # what a cold cell would have said
            self.row["status"], self.row["reason"] = e.status, e.reason
        else:
            self.row["status"], self.row["reason"] = classify_error(e, self.caught)
        (self.run_dir / "error.txt").write_text("".join(traceback.format_exception(e)))

    def rows(self) -> tuple[dict, list[dict], list[dict]]:
        row = self.row
        if self.mode != "off" and self.cfg.compile.trace_log:
            got, note = compile_log.render(self.run_dir)
            row.update(got)
            if note:
                self.notes.append(note)
        _rates(row, self.cfg.calibration_file)
        row["notes"] = "; ".join(dict.fromkeys(self.notes))
        row["wall_s"] = time.perf_counter() - self.t0
        meta = {k: row.get(k) for k in ("run_id", "variant", "compile", "device", "dtype")}
        kernels = [{**meta, **k} for k in self.kernels]
        autotune = [{"run_id": row["run_id"], **a} for a in self.tuner.rows]
        return row, kernels, autotune


# the eager twin's host figures a compiled row carries
EAGER_HOST = ("host_us", "host_units", "host_status")


class EagerFailed(Exception):
    """The eager baseline failed inside the timed rounds (the compiled step did not)."""


def run_cell(cfg: DictConfig, run_dir: Path) -> tuple[dict, list[dict], list[dict]]:
    """Run one cell. Returns (run row, kernel rows, autotune rows); never raises."""
    cell = Cell(cfg, run_dir)
    took = []

    def phase(fn):
        t = time.perf_counter()
        fn()
        took.append(f"{fn.__name__} {time.perf_counter() - t:.2f}s")
        if fn.__name__ in ("saved", "shapes"):  # passes beyond the timed method (overhead_s)
            cell.row["extra_s"] = (cell.row.get("extra_s") or 0.0) + time.perf_counter() - t

    try:
        phase(cell.build)
        with cell.stack:
            for fn in (
                cell.compile,
                cell.first_call,
                cell.check,
                cell.measure,
                cell.profile,
                cell.saved,
                cell.shapes,
            ):
                phase(fn)
    except Exception as e:  # noqa: BLE001 - every failure becomes the row's status
        cell.fail(e)
    except SystemExit as e:  # a sys.exit() in a factory or forward: the row says so
        cell.fail(cell._whose(exited(e)))
    print(f"[cell] {cell.row['status']}: " + ", ".join(took), flush=True)  # into cell.log
    return cell.rows()


def _inject(cfg) -> None:
    """fault=crash|segv|hang: the harness's own self-test (isolation, timeout, crash rows)."""
    import signal

    fault = plain(cfg.fault)
    if fault == "crash":
        os.kill(os.getpid(), signal.SIGABRT)
    elif fault == "segv":
        import ctypes

        ctypes.string_at(0)  # a real segmentation fault, as a broken extension would raise
    elif fault == "hang":
        time.sleep(10**7)


def _sdp_choice(qkv) -> str | None:
    import torch

    try:
        from torch.nn.attention import SDPBackend

        return SDPBackend(torch._fused_sdp_choice(*qkv)).name.lower()
    except Exception:  # noqa: BLE001 - a prediction only; the trace is the proof
        return None


def _device_time(step, cfg, mode, notes, kind="fwd") -> dict:
    import torch

    t = cfg.timing
    method = plain(t.device_time)
    if kind != "fwd" and method == "graph":  # autograd and the optimizer in one captured graph
        method = "do_bench"  # is not what users run; do_bench times the real step
        notes.append(f"device time of a {kind} step by do_bench (L2 flushed), not graph replay")
    try:
        return timing.device_time(
            step, method, compiling.uses_cudagraphs(mode), t.graph_calls, t.graph_replays
        )
    except Exception as e:  # noqa: BLE001 - a capture failure leaves the other numbers valid
        torch.cuda.synchronize()
        notes.append(f"device time ({method}) failed: {type(e).__name__}: {str(e)[:160]}")
        return {"median": None, "p10": None, "p90": None, "method": "none", "l2": None}


def _rates(row: dict, calibration_file: str | None = None) -> None:
    peaks = calibrate.lookup(
        row.get("device_name"), row.get("dtype"), row.get("torch_version"), calibration_file
    )
    row.update(metrics.rates(row, peaks))
