"""One cell, in its own process: build, compile, check, time, profile, prove -> rows.

Order, and why:
1. Fresh state: Dynamo reset; Inductor/Triton caches were chosen by the parent's
   environment before torch was imported (study.compiling).
2. Seeded inputs, built once, outside every timed region.
3. First call on its own (``first_call_s``: compile included), under the SDPA pin.
4. Correctness against a float64 reference (study.check); FLOPs counted on the reference.
5. Steady state after warm-up: per-call latency, then device time (study.timing).
6. One profiler pass; kernels attributed per step (study.trace), joined to generated code
   (study.inductor), and the pinned backend proven from the trace.

Anything that goes wrong becomes the row's status and reason; nothing escapes.
"""

from __future__ import annotations

import datetime as dt
import time
import traceback
import warnings
from contextlib import ExitStack
from pathlib import Path

from omegaconf import DictConfig

from study import check, compiling, flops, metrics, timing
from study import env as envinfo
from study import inductor as ind
from study import trace as tr
from study.classify import BACKEND_CLASS
from study.config import plain, to_plain
from study.workloads import registry

DTYPES = {"bf16": "bfloat16", "fp16": "float16", "fp32": "float32"}
SDPA_BACKENDS = {
    "math": "MATH",
    "efficient": "EFFICIENT_ATTENTION",
    "flash": "FLASH_ATTENTION",
    "cudnn": "CUDNN_ATTENTION",
}
OOM_PATTERNS = ("out of memory", "can't allocate memory", "cannot allocate memory", "outofmemory")
UNSUPPORTED_PATTERNS = (
    "no available kernel",
    "no viable backend",
    "not supported",
    "only supports",
    "not implemented for",
    "not compiled with",
    "is not available",
    "unsupported",
)


class Unsupported(RuntimeError):
    """The cell cannot run on this machine (e.g. CUDA asked for, none present)."""


def resolve_device(requested: str) -> str:
    import torch

    if requested == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if requested == "cuda" and not torch.cuda.is_available():
        raise Unsupported(
            "device=cuda but torch.cuda.is_available() is False; use device=cpu or auto"
        )
    return requested


def resolve_shape(entry, cfg: DictConfig, device: str) -> dict:
    """The family's default shape for the device, overridden by non-null ``shape.*`` keys."""
    base = cfg.family.shapes.get(device) or cfg.family.shapes.get("cpu")
    shape = {}
    for k in entry.shape_keys:
        v = cfg.shape.get(k)
        v = base.get(k) if v is None and base is not None else v
        if v is None:
            raise ValueError(
                f"shape.{k} has no value for {entry.name} on {device}: set shape.{k}=<int>"
            )
        shape[k] = int(v)
    return shape


def sdpa_pin(backend: str | None):
    """The context that pins SDPA to ``backend`` (math, efficient, flash, cudnn); a no-op for None."""
    from contextlib import nullcontext

    if backend is None:
        return nullcontext()
    from torch.nn.attention import SDPBackend, sdpa_kernel

    return sdpa_kernel([getattr(SDPBackend, SDPA_BACKENDS[backend])])


def build_workload(cfg: DictConfig, device: str):
    """(registry entry, resolved shape, seeded workload) for a cell: the one way to build it,
    shared by the cell and by the Nsight pass that must replay exactly the same work."""
    import torch

    entry = registry.resolve(cfg.variant)
    shape = resolve_shape(entry, cfg, device)
    dtype = plain(cfg.dtype)
    torch.manual_seed(cfg.seed)
    gen = torch.Generator(device=device).manual_seed(cfg.seed)
    wl = entry.build(
        shape=shape,
        dtype=getattr(torch, DTYPES[dtype]),
        device=device,
        gen=gen,
        causal=cfg.family.causal,
        family=to_plain(cfg)["family"],
    )
    return entry, shape, wl


def input_bytes(wl) -> int:
    """Bytes of every input and parameter, each read once."""
    nbytes = sum(t.numel() * t.element_size() for t in wl.inputs)
    if wl.module is not None:
        nbytes += sum(p.numel() * p.element_size() for p in wl.module.parameters())
    return nbytes


def _chain(e: BaseException):
    seen = []
    while e is not None and e not in seen:
        seen.append(e)
        e = getattr(e, "inner_exception", None) or e.__cause__ or e.__context__
    return seen


def classify_error(e: BaseException, caught_warnings: list[str]) -> tuple[str, str]:
    """(status, reason) for an exception: oom, unsupported or error, with the library's words."""
    import torch

    chain = _chain(e)
    text = " ".join(f"{type(x).__name__}: {x}" for x in chain).lower()
    first = next((x for x in reversed(chain) if str(x).strip()), e)
    msg = f"{type(first).__name__}: {str(first).strip()}"
    msg = " ".join(msg.split())[:600]
    if any(isinstance(x, torch.OutOfMemoryError) for x in chain) or any(
        p in text for p in OOM_PATTERNS
    ):
        return "oom", msg
    if isinstance(e, Unsupported) or any(p in text for p in UNSUPPORTED_PATTERNS):
        extra = "; ".join(dict.fromkeys(w for w in caught_warnings if w))[:600]
        return "unsupported", msg + (f" | warnings: {extra}" if extra else "")
    where = (
        "compile: "
        if any(type(x).__module__.startswith(("torch._dynamo", "torch._inductor")) for x in chain)
        else ""
    )
    return "error", where + msg


def prove_backend(
    expected: str | None, kernel_rows: list[dict], op_names: list[str], generated: dict
) -> dict:
    """Which SDPA backend ran, with the evidence; ``ok`` False when the pinned one did not."""
    seen, proof = [], []
    for backend, cls in BACKEND_CLASS.items():
        hits = [r["kernel"][:120] for r in kernel_rows if r["kernel_class"] == cls]
        if hits:
            seen.append(backend)
            proof.append(f"{backend}: kernel {hits[0]}")
    math_ops = [n for n in op_names if "_scaled_dot_product_attention_math" in n]
    decomposed = sorted(k for k, v in generated.get("kernels", {}).items() if v.get("from_sdpa"))
    if math_ops:
        seen.append("math")
        proof.append(f"math: op {math_ops[0]}")
    elif decomposed and not seen:
        seen.append("math")
        proof.append(
            f"math: decomposed by Inductor into generated kernels ({', '.join(decomposed)}; "
            "Inductor provenance: scaled_dot_product_attention -> these kernels)"
        )
    out = {"backend_seen": "+".join(seen), "backend_proof": "; ".join(proof)}
    if expected is None:
        out["ok"] = bool(seen)
        out["reason"] = "" if seen else "no SDPA backend kernel or op found in the trace"
        return out
    out["ok"] = expected in seen
    if not out["ok"]:
        top = ", ".join(r["kernel_short"] for r in kernel_rows[:8])
        out["reason"] = (
            f"pinned backend {expected!r} did not run; trace shows: {top or 'no kernels'}"
        )
    return out


def base_row(cfg: DictConfig, run_id: str) -> dict:
    plain = to_plain(cfg)
    c = plain["compile"]
    return {
        "run_id": run_id,
        "variant": cfg.variant.name,
        "family": cfg.family.name,
        "compile": c["mode"],
        "fullgraph": c["fullgraph"],
        "dynamic": c["dynamic"],
        "inductor_patches": ";".join(f"{k}={v}" for k, v in sorted(c["inductor"].items())),
        "device": plain["device"],
        "dtype": plain["dtype"],
        "cache": plain["cache"],
        "seed": plain["seed"],
        "causal": cfg.family.causal if cfg.family.name == "attention" else None,
        "status": "error",
        "reason": "",
    }


def run_cell(cfg: DictConfig, run_dir: Path) -> tuple[dict, list[dict], list[dict]]:
    """Run one cell. Returns (run row, kernel rows, autotune rows); never raises."""
    import torch

    t_cell = time.perf_counter()
    run_dir = Path(run_dir)
    row = base_row(cfg, run_dir.name)
    row["started_at"] = dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
    kernel_rows: list[dict] = []
    tuner = ind.Autotune()
    caught: list[str] = []
    notes: list[str] = []
    try:
        _inject(cfg)
        device = resolve_device(plain(cfg.device))
        row["device"] = device
        row.update(envinfo.collect(device))
        entry, shape, wl = build_workload(cfg, device)
        row.update(shape)
        mode = cfg.compile.mode
        notes += wl.notes
        row.update(wl.row)
        row["backend_expected"] = wl.sdpa_backend or ""

        if mode != "off":
            bad = ind.apply({**ind.settings(run_dir, device), **dict(cfg.compile.inductor)})
            if bad:
                raise ValueError(f"unknown Inductor config key(s) {bad} in compile.inductor")
        with ExitStack() as stack:
            stack.enter_context(sdpa_pin(wl.sdpa_backend))
            if wl.sdpa_backend or entry.name == "sdpa":
                row["sdpa_choice"] = _sdp_choice(wl.inputs[:3])
            if mode != "off":  # an eager cell leaves Dynamo alone
                torch._dynamo.reset()
            fn = compiling.make(wl.fn, mode, cfg.compile.fullgraph, cfg.compile.dynamic)

            def step():
                return fn(*wl.inputs)

            # the autotune hook imports Inductor: seconds an eager cell never needs
            if mode != "off":
                stack.enter_context(tuner)
            row["setup_s"] = time.perf_counter() - t_cell
            with warnings.catch_warnings(record=True) as ws:
                warnings.simplefilter("always")
                try:
                    t0 = time.perf_counter()
                    out = step()
                    timing.sync(device)
                    row["first_call_s"] = time.perf_counter() - t0
                finally:
                    caught += [str(w.message).split("\n")[0][:200] for w in ws]

            t_check = time.perf_counter()
            res = _check(wl, out, row["dtype"], cfg.tolerance)
            row["check_s"] = time.perf_counter() - t_check
            row["bytes_min"] = input_bytes(wl) + res["out_bytes"]
            row.update(
                {k: res[k] for k in ("max_abs_err", "max_rel_err", "norm_rel_err", "tolerance")}
            )
            row.update(flops.cell_flops(entry, wl, shape, None if wl.ref_index else res["flops"]))
            del out

            generated = {}
            if mode != "off":
                row.update(ind.metrics())
                generated = ind.harvest(run_dir)
                row["generated_kernels"] = len(generated["kernels"])
                row["generated_dir"] = "generated"

            t_measure = time.perf_counter()
            warm = max(cfg.timing.warmup, 3 if compiling.uses_cudagraphs(mode) else 0)
            lat = timing.per_call(step, device, warm, cfg.timing.repeat)
            row.update(
                latency_median_us=lat["median"],
                latency_p10_us=lat["p10"],
                latency_p90_us=lat["p90"],
                latency_samples=lat["n"],
                latency_method=lat["method"],
            )
            if device == "cuda":
                dtm = _device_time(step, cfg, mode, notes)
                row.update(
                    device_time_us=dtm["median"],
                    device_time_p10_us=dtm["p10"],
                    device_time_p90_us=dtm["p90"],
                    device_time_method=dtm["method"],
                )
            else:
                row["device_time_method"] = "none"
            row["measure_s"] = time.perf_counter() - t_measure

            t_profile = time.perf_counter()
            if cfg.profile.enabled:
                p = cfg.profile
                trace_path = run_dir / "trace.json.gz"
                events = tr.profile(
                    step, device, p.wait, p.warmup, p.active, p.record_shapes, trace_path
                )
                kernel_rows, summary = tr.parse(events, device)
                if not p.save_trace:
                    trace_path.unlink(missing_ok=True)
                else:
                    row["trace_file"] = trace_path.name
                op_names = summary.pop("op_names", [])
                summary.pop("profile_note", None)
                row.update(summary)
                ind.join(kernel_rows, generated)
                if row.get("profiled_step_us") and row.get("latency_median_us"):
                    row["profiler_overhead"] = row["profiled_step_us"] / row["latency_median_us"]
                if (
                    device == "cuda"
                    and mode in compiling.CUDAGRAPH_MODES
                    and not row.get("kernels_per_step")
                ):
                    notes.append(
                        "no kernels visible in the profiled CUDA-graph steps (kineto#1165)"
                    )
                status, reason = ("ok", "") if res["ok"] else ("mismatch", res["reason"])
                prove = wl.prove or (
                    (lambda *a: prove_backend(wl.sdpa_backend, *a))
                    if entry.family == "attention" and (wl.sdpa_backend or entry.name == "sdpa")
                    else None
                )
                if prove is not None:
                    proof = prove(kernel_rows, op_names, generated)
                    notes += proof.get("notes", [])
                    row["backend_seen"], row["backend_proof"] = (
                        proof["backend_seen"],
                        proof["backend_proof"],
                    )
                    if "decomposed by Inductor" in proof["backend_proof"]:
                        notes.append("Inductor decomposed the SDPA math op into generated kernels")
                    if not proof["ok"] and status == "ok":
                        status, reason = "invalid", proof["reason"]
            else:
                status, reason = ("ok", "") if res["ok"] else ("mismatch", res["reason"])
                if wl.sdpa_backend:
                    status, reason = (
                        "invalid",
                        "profile.enabled=false: the pinned backend cannot be proven",
                    )
            row["status"], row["reason"] = status, reason
            row["profile_s"] = time.perf_counter() - t_profile
    except Exception as e:  # noqa: BLE001 - every failure becomes the row's status
        row["status"], row["reason"] = classify_error(e, caught)
        (run_dir / "error.txt").write_text("".join(traceback.format_exception(e)))
    _rates(row)
    row["notes"] = "; ".join(dict.fromkeys(notes))
    row["wall_s"] = time.perf_counter() - t_cell
    meta = {k: row.get(k) for k in ("run_id", "variant", "compile", "device", "dtype")}
    kernel_rows = [{**meta, **k} for k in kernel_rows]
    autotune_rows = [{"run_id": row["run_id"], **a} for a in tuner.rows]
    return row, kernel_rows, autotune_rows


def _inject(cfg) -> None:
    """fault=crash|hang: the harness's own self-test (isolation, timeout, crash rows)."""
    import os
    import signal

    fault = plain(cfg.fault)
    if fault == "crash":
        os.kill(os.getpid(), signal.SIGABRT)
    elif fault == "hang":
        time.sleep(10**7)


def _sdp_choice(qkv) -> str | None:
    import torch

    try:
        from torch.nn.attention import SDPBackend

        return SDPBackend(torch._fused_sdp_choice(*qkv)).name.lower()
    except Exception:  # noqa: BLE001 - a prediction only; the trace is the proof
        return None


def _check(wl, out, dtype: str, tolerance) -> dict:
    import torch

    out_bytes = out.numel() * out.element_size()
    ins = wl.inputs
    if wl.ref_index is not None:  # check a slice: the full float64 reference would not fit
        ins = tuple(t[wl.ref_index] if t.dim() == 4 else t for t in ins)
        out = out[wl.ref_index]
    ins = tuple(t.double() if t.is_floating_point() else t for t in ins)
    counter = flops.counter()
    with counter, torch.no_grad():
        ref = registry.reference_of(wl)(*ins)
    res = check.compare(out, ref, dtype, tolerance)
    res["flops"] = float(counter.get_total_flops())
    res["out_bytes"] = out_bytes
    return res


def _device_time(step, cfg, mode, notes) -> dict:
    import torch

    t = cfg.timing
    method = plain(t.device_time)
    try:
        return timing.device_time(
            step, method, compiling.uses_cudagraphs(mode), t.graph_calls, t.graph_replays
        )
    except Exception as e:  # noqa: BLE001 - a capture failure leaves the other numbers valid
        torch.cuda.synchronize()
        notes.append(f"device time ({method}) failed: {type(e).__name__}: {str(e)[:160]}")
        return {"median": None, "p10": None, "p90": None, "method": "none"}


def _rates(row: dict) -> None:
    from study import calibrate

    row["arith_intensity"] = metrics.arith_intensity(row.get("flops"), row.get("bytes_min"))
    row["tflops"] = metrics.rate(row.get("flops"), row.get("latency_median_us"), 1e12)
    row["tflops_useful"] = metrics.rate(row.get("flops_useful"), row.get("latency_median_us"), 1e12)
    row["gbps"] = metrics.rate(row.get("bytes_min"), row.get("latency_median_us"), 1e9)
    row["tflops_device"] = metrics.rate(row.get("flops"), row.get("device_time_us"), 1e12)
    row["gbps_device"] = metrics.rate(row.get("bytes_min"), row.get("device_time_us"), 1e9)
    peaks = calibrate.lookup(row.get("device_name"), row.get("dtype"), row.get("torch_version"))
    row["peak_tflops"], row["peak_gbps"] = peaks.get("tflops"), peaks.get("gbps")
    use_dev = row.get("tflops_device") is not None
    row.update(
        metrics.roofline(
            row["tflops_device"] if use_dev else row["tflops"],
            row["gbps_device"] if use_dev else row["gbps"],
            row["arith_intensity"],
            row["peak_tflops"],
            row["peak_gbps"],
        )
    )
    row.pop("ridge_intensity", None)
