"""FlexAttention against the fused SDPA backends (source ``flex``): useful TFLOP/s per mask and
length, flex's latency against flash and cuDNN, the sliding window's flat useful rate, the
kernel Inductor generated for flex, and no attention row above the calibrated peak. Part of
``python -m reference.findings``.

Useful TFLOP/s (``tflops_useful``) count only the score matrix the mask keeps; ``tflops``
counts the full S×S matrix, so a masked kernel that skips tiles reads high there. Rows with
``flops_scheduled`` count flex's useful FLOPs by element, as SDPA's; older rows (v2) counted
its block mask's kept tiles, and the text says which it read.
"""

from __future__ import annotations

import pandas as pd

from analysis.measures import count, sig, truthy, xs
from analysis.pairs import host_bound, table
from reference import sources
from reference.findings.base.common import calibrated_peak, needs, of, phase_note

SOURCE = sources.one("masks")
VARIANTS = ["flex", "flash", "cudnn", "efficient"]
MASKS = ["causal", "sliding_window", "document", "prefix_lm"]
RATIO_AT = [1024, 4096, 16384]
FLAT = 1.3  # "roughly flat": the useful rate's max over min across lengths


def section(data: dict) -> list[str]:
    r = of(data["runs"], SOURCE)
    if r.empty:
        return needs("FlexAttention", f"`{SOURCE}`")
    r = r[r["pass"] == "fwd"]
    out = ["", *rates(r), *ratios(r), *sliding(r), *kernel(r, data["kernels"])]
    return out + peak_check(data["runs"])


def by_element(r: pd.DataFrame) -> bool:
    """Whether flex's useful FLOPs in these rows count the mask's elements (rows that carry
    ``flops_scheduled``, the tiles, beside them), not its block mask's kept tiles (v2's rows)."""
    f = r[r["variant"] == "flex"] if "variant" in r else r
    f = f[f["status"] == "ok"] if "status" in f else f
    if "flops_scheduled" not in f or f.empty:
        return False  # every ok flex row must carry it: a mix of v2 and v3 rows is not by element
    return bool(pd.to_numeric(f["flops_scheduled"], errors="coerce").notna().all())


def _mask_order(m) -> int:
    return MASKS.index(m) if m in MASKS else len(MASKS)


def cell_at(r, variant, mask, seq):
    """The row of ``variant`` under ``mask`` at ``seq``, or None."""
    x = r[(r["variant"] == variant) & (r["mask"] == mask) & (r["seq_len"] == seq)]
    return x.iloc[0] if len(x) else None


def rates(r: pd.DataFrame) -> list[str]:
    variants = [v for v in VARIANTS if v in set(r["variant"])]
    variants += sorted(set(r["variant"]) - set(variants))
    x0 = r.iloc[0]
    rows = []
    keys = r[["mask", "seq_len"]].drop_duplicates()
    keys = keys.assign(_m=keys["mask"].map(_mask_order)).sort_values(["_m", "seq_len"])
    for _, k in keys.iterrows():
        row = [k["mask"], f"{int(k['seq_len'])}"]
        for v in variants:
            x = cell_at(r, v, k["mask"], k["seq_len"])
            if x is None:
                row.append("")
            elif x["status"] != "ok":
                row.append(x["status"])
            else:
                row.append(sig(x["tflops_useful"]) + phase_note(x))
        rows.append(row)
    return [
        f"FlexAttention against the fused SDPA kernels (source `{SOURCE}`, {x0['compile']} mode, "
        f"B{int(x0['batch'])} H{int(x0['heads'])} D{int(x0['head_dim'])}, {x0['dtype']}), "
        "useful TFLOP/s (FLOPs of the score matrix the mask keeps over per-call latency; "
        + (
            "every variant counts the mask's kept elements, flex included (its block mask's "
            "kept tiles are `flops_scheduled`)"
            if by_element(r)
            else "flex counts the block mask's kept tiles, 1 − sparsity(), the SDPA kernels the "
            "mask's exact elements, so at the same mask flex's count is the larger: compare flex "
            "and SDPA by latency, the ratios below"
        )
        + '; a status where the cell did not run; "(host mixed)" or "(host slow)": a row '
        "not timed in the host's fast phase, so its rate is the slower host's):",
        "",
        *table(["mask", "seq_len", *variants], rows),
    ]


def ratios(r: pd.DataFrame) -> list[str]:
    """flex latency over flash's and over cuDNN's, causal, at 1k, 4k and 16k. Where a side is
    host-bound (the GPU waits on the call's Python), the device-time ratio follows: the kernels'
    own race, which the latency ratio hides."""
    parts = []
    hb = host_bound(r)
    for seq in RATIO_AT:
        f = cell_at(r, "flex", "causal", seq)
        if f is None:
            continue
        if f["status"] != "ok":
            parts.append(f"{seq}: flex {f['status']}")  # e.g. oom: no ratio
            continue
        each, gpu, waits = [], [], []
        for other in ("flash", "cudnn"):
            o = cell_at(r, other, "causal", seq)
            if o is None or o["status"] != "ok":
                each.append(f"{other} {o['status'] if o is not None else 'not measured'}")
                continue
            each.append(
                f"flex/{other} {xs(f['latency_median_us'] / o['latency_median_us'])}"
                + _phases(f, o)
            )
            if pd.notna(f.get("device_time_us")) and pd.notna(o.get("device_time_us")):
                gpu.append(f"flex/{other} {xs(f['device_time_us'] / o['device_time_us'])}")
            for x in (f, o):  # each host-bound side once
                if hb[x.name] and all(w["variant"] != x["variant"] for w in waits):
                    waits.append(x)
        line = f"{seq}: " + ", ".join(each)
        if waits and gpu:
            line += (
                " ("
                + ", ".join(
                    f"{w['variant']} latency-bound{phase_note(w)}: {sig(w['latency_median_us'])} "
                    f"µs per call for "
                    f"{sig(w['device_time_us'])} µs on the GPU"
                    for w in waits
                )
                + "; by device time "
                + ", ".join(gpu)
                + ")"
            )
        parts.append(line)
    if not parts:
        return []
    fa = r[(r["variant"] == "flash") & (r["status"] == "ok")]
    fa2 = len(fa) and "pytorch_flash" in str(fa.iloc[0].get("dominant_kernel") or "")
    return [
        "",
        "- flex latency over flash's and cuDNN's, causal (below 1: flex faster): "
        + "; ".join(parts)
        + "."
        + (
            f" (flash: the FlashAttention-2 kernel built into torch {fa.iloc[0]['torch_version']}"
            ", not FlashAttention-3.)"
            if fa2
            else ""
        ),
    ]


def _phases(*rows) -> str:
    """' (flex host mixed)': the sides of a ratio not timed in the host's fast phase."""
    slow = [f"{x['variant']} host {x['timing_phase']}" for x in rows if phase_note(x)]
    return f" ({', '.join(slow)})" if slow else ""


def sliding(r: pd.DataFrame) -> list[str]:
    """The sliding window: useful TFLOP/s roughly flat over length (the window's work grows as
    S·W, and so does its time), while the full-matrix count (S²) drifts away from the work."""
    s = r[(r["variant"] == "flex") & (r["mask"] == "sliding_window") & (r["status"] == "ok")]
    s = s.sort_values("seq_len")
    if len(s) < 2:
        have = ", ".join(f"{int(x['seq_len'])} {x['status']}" for _, x in
                         r[(r["variant"] == "flex") & (r["mask"] == "sliding_window")].iterrows())  # fmt: skip
        return ["", "- Sliding window: needs flex at two lengths or more"
                + (f" (have: {have})." if have else ".")]  # fmt: skip
    u, t = s["tflops_useful"], s["tflops"]
    steps = t.diff().dropna()
    way = "rises" if (steps > 0).all() else "falls" if (steps < 0).all() else "moves"
    # A host-bound length measures the host, not the kernel: judge over the GPU-bound ones.
    hb = host_bound(s)
    g = s[~hb]
    judged = g["tflops_useful"] if len(g) >= 2 else u
    flat = judged.max() / judged.min() <= FLAT
    waits = ""
    if hb.any() and len(g) < 2:
        waits = (
            f" Flex is latency-bound (latency over 1.1x its device time) at {int(hb.sum())} of "
            f"{len(s)} lengths, too many to leave out: the verdict is over every length, and "
            "those numbers are not the kernels' alone."
        )
    elif hb.any():
        waits = (
            " Judged over the lengths where flex is GPU-bound ("
            + ", ".join(str(int(x)) for x in g["seq_len"])
            + f": within {judged.max() / judged.min():.2f}x); at "
            + ", ".join(
                f"{int(x['seq_len'])} flex is latency-bound{phase_note(x)} "
                f"({sig(x['latency_median_us'])} µs per "
                f"call for {sig(x['device_time_us'])} µs on the GPU; by device time "
                f"{sig(x['tflops_useful'] * x['latency_median_us'] / x['device_time_us'])} useful "
                "TFLOP/s)"
                for _, x in s[hb].iterrows()
            )
            + "."
        )
    return [
        "",
        f"- Sliding window, flex: useful TFLOP/s roughly flat over length (within {FLAT}x): "
        f"{'**holds**' if flat else '**differs**'} — seq_len "
        + ", ".join(str(int(x)) for x in s["seq_len"])
        + ": useful "
        + " → ".join(sig(x["tflops_useful"]) + phase_note(x) for _, x in s.iterrows())
        + f" TFLOP/s; counting the full S×S matrix it {way}: "
        + " → ".join(sig(x) for x in t)
        + _kept(s, u / t)
        + waits,
    ]


def _kept(s: pd.DataFrame, share: pd.Series) -> str:
    """' (the window keeps 37% → 19% of the matrix, its block mask 50% → 25% of the tiles)', or
    for rows that counted tiles, ' (the block mask keeps 50% → 25% of its tiles)'."""
    pct = " → ".join(f"{x:.0%}" for x in share)
    if not by_element(s):
        return f" (the block mask keeps {pct} of its tiles)."
    tiles = pd.to_numeric(s["flops_scheduled"], errors="coerce") / pd.to_numeric(
        s["flops"], errors="coerce"
    )
    return (f" (the window keeps {pct} of the matrix, its block mask "
            + " → ".join(f"{x:.0%}" for x in tiles) + " of the tiles).")  # fmt: skip


def kernel(r: pd.DataFrame, kernels: pd.DataFrame) -> list[str]:
    """The kernel Inductor generated for flex: name, source file, the ops it fused."""
    k = of(kernels, SOURCE)
    if k.empty or "generated" not in k:
        return []
    g = k[(k["variant"] == "flex") & truthy(k["generated"])]
    if g.empty:
        return ["", "- flex: no generated kernel in kernels.csv."]
    masks = r.set_index("run_id")["mask"].to_dict()
    out = []
    for name, x in g.groupby("kernel", sort=True):
        # One template kernel serves every mask; what it fused differs by mask: list each.
        x = x.assign(_mask=[str(masks.get(i, "?")) for i in x["run_id"]])
        x = x.drop_duplicates("_mask").sort_values("_mask", key=lambda m: m.map(_mask_order))
        fused = "; ".join(f"{m}: `{f}`" for m, f in zip(x["_mask"], x["fused_ops"], strict=True))
        out.append(f"`{name}` from `{x['source_file'].iloc[0]}`, fusing {fused}")
    bm = r[(r["variant"] == "flex") & r["block_mask_s"].notna()] if "block_mask_s" in r else r[:0]
    mask_s = (
        f" Building the block mask took {sig(bm['block_mask_s'].min() * 1e3)}–"
        f"{sig(bm['block_mask_s'].max() * 1e3)} ms, once per cell, outside the timing."
        if len(bm)
        else ""
    )
    return ["", "- The kernel Inductor generated for flex: " + "; ".join(out) + "." + mask_s]


def peak_check(runs: pd.DataFrame) -> list[str]:
    """No attention row reads above the calibrated matmul peak in useful TFLOP/s."""
    a = runs[(runs["family"] == "attention") & (runs["status"] == "ok")]
    if "tflops_useful" not in a or a["tflops_useful"].isna().all():
        return []
    a = a[a["tflops_useful"].notna()]
    peaks = pd.Series([calibrated_peak(runs, x) for _, x in a.iterrows()], index=a.index)
    known = a[peaks.notna()]
    if known.empty:
        return ["", "- Useful TFLOP/s against the calibrated peak: no `peak_tflops` in any row."]
    frac = known["tflops_useful"] / peaks[known.index].astype(float)
    over = known[frac > 1]
    top = known.loc[frac.idxmax()]
    full_over = int((known["tflops"] > peaks[known.index].astype(float)).sum())
    return [
        "",
        f"- No attention row reads above the calibrated peak in useful TFLOP/s: "
        f"{'**holds**' if over.empty else '**differs**'} — {len(known)} ok rows; the highest is "
        f"{top['variant']} at seq_len {count(top['seq_len'])} (`{top['source']}`), "
        f"{sig(top['tflops_useful'])} of {sig(peaks[top.name])} TFLOP/s ({frac.max():.0%})"
        + (f"; {len(over)} above it" if len(over) else "")
        + (f". Counting the full S×S matrix, {full_over} read above it." if full_over else "."),
    ]
