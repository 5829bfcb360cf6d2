"""The blog's claims, each with a verdict computed from the rows: the first section of the
Findings (reference.findings), and what ``changes.since_unpaired`` judges again on v1's rows. No torch."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from reference import sources
from reference.findings.base.common import blog_shapes, lat_text

ABOUT = 0.15  # "about 3.7x" holds within 15% (3.1-4.3x)
CLAIM_VARIANTS = {"naive", "naive_inplace", "math", "efficient", "flash", "cudnn"}


def verdict(ok: bool) -> str:
    return "**holds**" if ok else "**differs**"


def claims_source(runs: pd.DataFrame) -> str | None:
    """The blog's claims come from one sweep that has every eager attention variant: the first
    of the blog's forward sweeps that does (part3 when it is complete, else v1's core); None
    when no sweep has them all."""
    for src in sources.blog_forward():
        mine = runs[(runs["source"] == src) & (runs["compile"] == "off") & (runs["status"] == "ok")]
        if CLAIM_VARIANTS <= set(blog_shapes(mine)["variant"]):
            return src
    return None


def _cell(runs, variant, source, compile_="off"):
    r = blog_shapes(runs)
    r = r[(r["variant"] == variant) & (r["compile"] == compile_) & (r["status"] == "ok")]
    r = r[r["source"] == source]
    return r.iloc[0] if len(r) else None


def _kernels(kernels, row):
    return kernels[(kernels["source"] == row["source"]) & (kernels["run_id"] == row["run_id"])]


def _calls(k, cls) -> int:
    return int(k[k["kernel_class"] == cls]["calls_per_step"].astype(float).sum())


def naive_kernels(runs, kernels, src) -> str:
    naive = _cell(runs, "naive", src)
    kn = _kernels(kernels, naive)
    copies = kn[kn["kernel_class"] == "copy"]
    nk = int(naive["kernels_per_step"])
    name = copies["kernel_short"].iloc[0] if len(copies) else "none"
    return (
        f"- naive launches 6 kernels, including a hidden Memcpy: {verdict(nk == 6 and len(copies) > 0)} "
        f"in part. {nk} kernels per forward, {_calls(kn, 'copy')} of them `{name}`; the extra one "
        f"is {_calls(kn, 'memset')} cuBLAS `Memset`."
    )


def inplace_kernels(runs, kernels, src) -> str:
    inplace = _cell(runs, "naive_inplace", src)
    ik = int(inplace["kernels_per_step"])
    ic = _calls(_kernels(kernels, inplace), "copy")
    return (
        f"- in-place launches 5: {verdict(ik == 5)} — {ik} kernels, {ic} copies: the Memcpy is "
        "gone, the Memset stays."
    )


def math_slowdown(runs, kernels, src) -> str:
    math, inplace = _cell(runs, "math", src), _cell(runs, "naive_inplace", src)
    ratio = math["latency_median_us"] / inplace["latency_median_us"]
    mk = _kernels(kernels, math)
    fp32 = mk[mk["kernel_class"].str.startswith("gemm") & mk["kernel"].str.contains("f32f32")]
    near = abs(ratio - 3.7) / 3.7 <= ABOUT
    return (
        f"- math launches about 20 kernels and is about 3.7x slower than naive in-place: kernels "
        f"{verdict(15 <= math['kernels_per_step'] <= 25)} ({int(math['kernels_per_step'])}, "
        f"including {int(fp32['calls_per_step'].astype(float).sum())} FP32 GEMMs); slowdown "
        f"{verdict(near)}: {ratio:.2f}x ({math['latency_median_us']:.0f} vs "
        f"{inplace['latency_median_us']:.0f} µs)"
        + ("." if near else f", {'less' if ratio < 3.7 else 'more'} than the blog's 3.7x.")
        + (
            f" (A fact of torch {math.get('torch_version', '?')}: its math path runs these "
            "matmuls in FP32 here, so it is the FP32 GEMMs' speed against bf16's.)"
            if len(fp32) and not near
            else ""
        )
    )


def fused_kernels(runs, kernels, src) -> str:
    """One rule for every "launches N kernels" claim: every kernel a step counts, a Memset or
    Memcpy included (``kernels_per_step``), as naive's extra Memset makes its claim differ; so
    cuDNN's Memset beside its fused kernel makes it 2, counted as every other claim counts."""
    fused, off = [], []
    for v in ("efficient", "flash", "cudnn"):
        row = _cell(runs, v, src)
        k = _kernels(kernels, row)
        work = k[~k["kernel_class"].isin(["memset", "copy"])]
        n = int(float(row["kernels_per_step"]))
        if n != 1:
            off.append(v)
        extra = _calls(k, "memset")
        name = work["kernel_short"].iloc[0] if len(work) else "none"
        fused.append(f"{v}: `{name}`" + (f" + {extra} Memset ({n} kernels)" if extra else ""))
    said = f" for {', '.join(off)}, as naive's Memset counts for naive" if off else ""
    return (
        f"- efficient, flash and cuDNN each launch one fused kernel: {verdict(not off)}{said} — "
        + "; ".join(fused)
        + "."
    )


def eager_attention(runs, src) -> pd.DataFrame:
    """The eager attention cells of ``src`` at the blog's shape, fastest first."""
    att = blog_shapes(runs)
    return att[
        (att["source"] == src)
        & (att["family"] == "attention")
        & (att["compile"] == "off")
        & (att["status"] == "ok")
    ].sort_values("latency_median_us")


def flash_fastest(runs, kernels, src) -> str:
    att = eager_attention(runs, src)
    fastest, flash = att.iloc[0], _cell(runs, "flash", src)
    return (
        f"- flash is the fastest: {verdict(fastest['variant'] == 'flash')} — fastest eager cell is "
        f"{fastest['variant']} at {_lat1(fastest)}; flash {_lat1(flash)} "
        f"(device time {flash['device_time_us']:.1f} vs {fastest['device_time_us']:.1f} µs)."
        + flash_scope(att, flash)
    )


def flash_scope(att: pd.DataFrame, flash) -> str:
    """Which flash this is and what sdpa picks: facts of the torch build and the GPU."""
    parts = []
    k = str(flash.get("dominant_kernel") or "")
    if "pytorch_flash" in k:
        parts.append(
            "flash here is the FlashAttention-2 kernel built into torch "
            "(`pytorch_flash::flash_fwd_kernel`), not FlashAttention-3"
        )
    sdpa = att[att["variant"] == "sdpa"]
    choice = sdpa["sdpa_choice"].dropna() if "sdpa_choice" in sdpa else pd.Series(dtype=str)
    if len(choice):
        parts.append(f"unpinned, sdpa picks {choice.iloc[0]}")
    if not parts:
        return ""
    return (
        f" A fact of torch {flash.get('torch_version', '?')} on {flash.get('device_name', '?')}: "
        + "; ".join(parts)
        + "."
    )


def _lat1(row) -> str:
    """'96.8 µs' as v1 wrote it; with the range over repeats when the cell ran more than once."""
    if row.get("n_repeats", 1) > 1:
        return lat_text(row)
    return f"{row['latency_median_us']:.1f} µs"


def _ncu(d: Path, ncu: pd.DataFrame) -> tuple[pd.DataFrame, str]:
    """Nsight Compute rows: this run's, else v1's (reference/h200/v1/ncu.csv), with where from."""
    if not ncu.empty:
        return ncu, ""
    v1 = d / sources.V1 / "ncu.csv"
    if v1.exists():
        return pd.read_csv(v1), f" (v1's run, `{v1.parent.name}/ncu.csv`)"
    return ncu, ""


def flash_occupancy(runs, kernels, src, ncu, d) -> str:
    fk = _kernels(kernels, _cell(runs, "flash", src))
    occ = pd.to_numeric(fk[fk["kernel_class"] == "flash"]["occupancy_pct"], errors="coerce")
    if occ.dropna().empty:
        return "- flash runs at about 13% occupancy: no occupancy in the trace's kernel rows."
    occ = float(occ.dropna().iloc[0])
    ncu, where = _ncu(d, ncu)
    ach, lim = None, None
    if not ncu.empty:
        f = ncu[(ncu["variant"] == "flash") & (ncu["compile"] == "off")]
        n = pd.to_numeric(f[f["metric"] == "achieved_occupancy"]["value"], errors="coerce")
        ach = n.median() if len(n.dropna()) else None
        lims = f[f["metric"] == "occupancy_limiter"]["value"]
        lim = lims.iloc[0] if len(lims) else None
    return (
        f"- flash runs at about 13% occupancy: {verdict(abs(occ - 13) < 3)} — the trace estimates "
        f"{occ:.0f}%"
        + (
            f"; Nsight Compute{where} measures {ach:.1f}% achieved"
            + (f", limited by {lim}" if lim else "")
            if ach is not None
            else " (the trace's estimate only: no Nsight Compute rows)"
        )
        + "."
    )


# cuDNN's "fat CPU bar" (the blog: about 214 µs of CPU a step, its plan chosen at run time)
# holds where its profiled CPU time a step is at least this times flash's: v3 on the H200 read
# 129 against 127 µs, which is no cost of its own.
CPU_COST = 1.2


def cudnn_cpu_cost(runs, kernels, src) -> str:
    cud, flash = _cell(runs, "cudnn", src), _cell(runs, "flash", src)
    gap_c = cud["latency_median_us"] - cud["device_time_us"]
    gap_f = flash["latency_median_us"] - flash["device_time_us"]
    pairs = []  # every sweep with both eager cells: this trace figure moves with the host's load
    for source in dict.fromkeys([src, *runs["source"]]):
        c, f = _cell(runs, "cudnn", source), _cell(runs, "flash", source)
        if c is not None and f is not None:
            pairs.append((source, c["cpu_us_per_step"], f["cpu_us_per_step"]))
    more = [c >= CPU_COST * f for _, c, f in pairs if c == c and f == f]
    word = verdict(all(more)) if all(more) or not any(more) else "**varies** between sweeps"
    # no colon before the verdict: since_unpaired and summary cut a claim's name there
    return (
        f"- cuDNN has a CPU-side cost (about 214 µs of CPU a step in the blog, its plan chosen at "
        f"run time; counted here at {CPU_COST:g}x flash's or more): {word} in the trace — "
        "profiled CPU time per step, cuDNN vs flash: "
        + ", ".join(f"{c:.0f} vs {f:.0f} µs (`{s}`)" for s, c, f in pairs)
        + f"; it does not reach the per-call latency: latency minus device time is {gap_c:.1f} µs "
        f"for cuDNN and {gap_f:.1f} µs for flash (`{src}`)."
    )


CLAIMS = [naive_kernels, inplace_kernels, math_slowdown, fused_kernels, flash_fastest]


def claims(data: dict) -> list[str]:
    """The blog's claims, from the one sweep that has every eager attention variant."""
    runs, kernels = data["runs"], data["kernels"]
    src = claims_source(runs) if "source" in runs and len(runs) else None
    if src is None:
        return [
            f"_The blog's claims: need a source of {sources.quoted(sources.blog_forward())} with "
            f"every eager attention variant ok ({', '.join(sorted(CLAIM_VARIANTS))}), not in "
            "these results._"
        ]
    env = runs[runs["source"] == src].iloc[0]
    return [
        f"Measured on {env['device_name']}, torch {env['torch_version']}, bf16, B8 H16 S1024 D64 "
        f"causal (reference/h200, source `{src}` unless named). Generated by "
        "`python -m reference.findings reference/h200`.",
        "",
        *(claim(runs, kernels, src) for claim in CLAIMS),
        flash_occupancy(runs, kernels, src, data["ncu"], data["dir"]),
        cudnn_cpu_cost(runs, kernels, src),
    ]
