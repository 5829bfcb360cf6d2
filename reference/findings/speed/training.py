"""Training: what compile buys in the forward against the forward and backward (and a whole
training step), which SDPA backward ran, what the partitioner saved for backward, and dynamic
shapes. The tables are ``analysis.tables.training``'s; this module picks the rows and adds the
verdicts. Part of ``python -m reference.findings``.
"""

from __future__ import annotations

import re

import pandas as pd

from analysis.measures import GRAPHS, MODES, WRAPPERS, count, sig, truthy, xs
from analysis.pairs import device_pair, host_bound, ok, one_core, table, with_eager
from analysis.slowdown import SAME_DEVICE
from analysis.tables import training
from reference import sources
from reference.findings.base.common import needs, of, phase_note, sp_text

# fwd sources and their training-pass twins (same variants, pass=fwd_bwd or train_step).
SOURCES = sources.training("blog", "block")
BACKWARD = sources.one("blog", pass_="fwd_bwd")  # attention's SDPA backends in the backward
DYNAMIC = sources.one("dynamic")
TRAINING = ("fwd_bwd", "train_step")


def section(data: dict) -> list[str]:
    raw = of(data["raw"], *SOURCES)
    if raw.empty or not raw["pass"].isin(TRAINING).any():
        out = needs("Training", f"{sources.quoted(SOURCES[1::2])} (pass=fwd_bwd, train_step)")
    else:
        out = [*by_pass(raw), *host_steps(of(data["runs"], *SOURCES)), *backends(data)]
        out += saved(raw)
    return out + dynamic(data)


def host_steps(runs: pd.DataFrame) -> list[str]:
    """The training steps Inductor's wrapper (no CUDA graphs) makes slower with eager's kernels
    in eager's device time, the compiled step's latency over 1.1x its device time: latency and
    device time only, since these rows measure no host time (the steps with as many kernels as
    eager whose latency stays within 1.1x are named beside them). Only rows timed on one core (``timing_core``): with the threads spread, the backward's
    thread ran on other cores in other phases (docs/method.md)."""
    if "pass" not in runs:
        return []
    r = ok(runs[runs["pass"].isin(TRAINING) & one_core(runs)])
    m = with_eager(r) if len(r) else pd.DataFrame()
    if m.empty:
        return []
    m = m[m["compile"].isin(WRAPPERS) & (m["sp_kind"] == "paired")].copy()
    m["_hb"] = host_bound(m)
    m["C"] = m["eager_us"] / m["sp"]
    dev = [device_pair(x) for _, x in m.iterrows()]
    m["dev_c"], m["dev_e"] = [c for c, _ in dev], [e for _, e in dev]
    same = m[
        (m["kernels_per_step"] == m["eager_kernels"])
        & ((m["dev_c"] - m["dev_e"]).abs() <= SAME_DEVICE * m["dev_e"])
    ]
    slow = same[same["_hb"] & (same["sp_hi"] < 1.0)]
    if slow.empty:
        return []
    fast = slow[slow.get("timing_phase", pd.Series("", slow.index)).astype(str) == "fast"]
    use, star = (fast, "") if len(fast) else (slow, "*")
    cells = "; ".join(
        f"{x['variant']} {x['pass']} {x['compile']} {sp_text(x)} ({sig(x['dev_c'])} µs on "
        f"the device, as eager's {sig(x['dev_e'])}; the step took {sig(x['C'])} µs, "
        f"{sig(x['C'] - x['eager_us'])} more than eager's)"
        for _, x in use.iterrows()
    )
    hidden = same[~same["_hb"]]
    if not star:  # the cells are the fast phase's: so are those set beside them
        hidden = hidden[hidden.get("timing_phase", pd.Series("", hidden.index)) == "fast"]
    hid = "; ".join(
        f"{x['variant']} {x['pass']} {x['compile']} {sp_text(x)} ({sig(x['dev_c'])} µs)"
        for _, x in hidden.iterrows()
    )
    lo, hi = sig(use["C"].min()), sig(use["C"].max())
    return [
        "",
        "- Slower with eager's kernels and device time (Inductor without CUDA graphs; the "
        "compiled step's latency more than 10% over its device time; these rows measure no host "
        f"time, so its cause is not its device time, and no more is claimed): {cells}. "
        f"Such a compiled step took {lo if lo == hi else f'{lo}–{hi}'}{star} µs here"
        + (
            f"; with as many kernels as eager and latency within 10% of the device time: {hid}."
            if hid
            else "."
        )
        + (" (*: not timed in the host's fast phase.)" if star else ""),
    ]


def _trained(raw: pd.DataFrame) -> pd.DataFrame:
    """Rows of the variants measured in a training pass, every pass of them."""
    v = set(raw.loc[raw["pass"].isin(TRAINING), "variant"])
    return raw[raw["variant"].isin(v)]


def _paired(c: pd.DataFrame, variant: str, pass_: str, mode: str = "default"):
    x = c[(c["variant"] == variant) & (c["pass"] == pass_) & (c["compile"] == mode)]
    return x.iloc[0] if len(x) and pd.notna(x["speedup_paired"].iloc[0]) else None


def by_pass(raw: pd.DataFrame) -> list[str]:
    rows = _trained(raw)
    out = [
        "",
        "Training: the paired speedup of compiled over eager per pass (fwd = forward; fwd_bwd = "
        "forward, (out·g).sum() and backward; train_step = fwd_bwd and AdamW.step), 95% "
        "interval in brackets (sources "
        + ", ".join(f"`{s}`" for s in SOURCES if s in set(raw["source"]))
        + "):",
        "",
        training.speedup_by_pass(rows).rstrip("\n"),
    ]
    c = training.cells(rows)
    moves = []
    for v in sorted(set(c.loc[c["pass"].isin(TRAINING), "variant"])):
        f = _paired(c, v, "fwd")
        steps = [(p, _paired(c, v, p)) for p in TRAINING]
        steps = [(p, x) for p, x in steps if x is not None]
        if f is None or not steps:
            continue
        moves.append(
            f"{v} {sig(f['speedup_paired'])}x{phase_note(f)} → "
            + ", ".join(f"{sig(x['speedup_paired'])}x{phase_note(x)} {p}" for p, x in steps)
        )
    if moves:
        out += ["", "- fwd → training pass, default mode: " + "; ".join(moves) + "."]
    return out


def _bwd_kernel(proof: str) -> str:
    """The backward kernel a backend_proof names: 'flash_bwd_dq_dk_dv_loop_seqk_parallel_kernel'."""
    m = re.search(r"bwd: (?:kernel )?(.*)$", str(proof))
    if not m:
        return ""
    text = m.group(1).removeprefix("void ").strip()
    if text.startswith("no fused"):
        return text
    return "`" + re.split(r"[<(]", text)[0].split("::")[-1] + "`"


def backends(data: dict) -> list[str]:
    """BACKWARD (part3_bwd): the backend each SDPA variant pins, proven in the backward (backend_seen),
    the kernel that proves it, and the kernels per step by phase, eager → compiled."""
    r = ok(of(data["runs"], BACKWARD))
    if r.empty or "backend_seen" not in r:
        return needs("SDPA backward backends", sources.quoted([BACKWARD]))
    k = data["kernels"]
    r = r[r["backend_expected"].notna()]
    rows, proven = [], []
    for v, g in r.groupby("variant", sort=True):
        exp = g["backend_expected"].iloc[0]
        seen = {m: str(x) for m, x in zip(g["compile"], g["backend_seen"], strict=True)}
        ok_modes = [m for m in MODES if m in seen and f"{exp} (bwd)" in seen[m]]
        proven.append(len(ok_modes) == len(seen))
        e = g[g["compile"] == "off"]
        c = g[g["compile"] == "default"]
        phases = []
        for x in (e, c):
            if x.empty:
                phases.append("")
                continue
            kx = k[(k["source"] == BACKWARD) & (k["run_id"] == x["run_id"].iloc[0])] \
                if len(k) else k  # fmt: skip
            if kx.empty:
                phases.append("")
                continue
            by = kx.groupby(kx["phase"].fillna("fwd"))["calls_per_step"].sum()
            phases.append(" + ".join(count(by.get(p, 0)) for p in ("fwd", "bwd")))
        proof = (e if len(e) else g)["backend_proof"].iloc[0]
        rows.append(
            [
                v,
                exp,
                f"{len(ok_modes)} of {len(seen)}",
                _bwd_kernel(proof),
                f"{phases[0]} → {phases[1]}",
            ]  # fmt: skip
        )
    verdict = "**holds**" if all(proven) else "**differs**"
    return [
        "",
        f"- The pinned SDPA backend also runs the backward: {verdict} (`{BACKWARD}`: the "
        "backend named in `backend_seen` for the bwd phase, from the trace or compiled graph):",
        "",
        *table(
            [
                "variant",
                "backend pinned",
                "modes that proved it in the backward",
                "backward kernel (eager)",
                "kernels per step fwd + bwd, eager → default",
            ],
            rows,
        ),  # fmt: skip
    ]


def saved(raw: pd.DataFrame) -> list[str]:
    """What AOTAutograd's partitioner saved for backward, compiled against eager, and memory."""
    c = training.cells(raw)
    c = c[c["pass"].isin(TRAINING) & (c["compile"] != "off")]
    if c.empty or "saved_tensors" not in c or c["saved_tensors"].isna().all():
        return needs("Saved tensors", "training rows with `saved_tensors` (v2)")
    out = [
        "",
        "What compiled training keeps (steady-state memory and tensors saved for backward):",
        "",
    ]
    out.append(
        training.memory(raw[raw["pass"].isin(TRAINING) & (raw["compile"] != "off")]).rstrip("\n")
    )
    fewer, more_bytes = [], []
    d = c[c["compile"] == "default"]
    for _, x in d.sort_values(["variant", "pass"]).iterrows():
        if x["saved_tensors"] < x["eager_saved_tensors"]:
            fewer.append(
                f"{x['variant']} {x['pass']} {count(x['eager_saved_tensors'])} → {count(x['saved_tensors'])}"
            )
    for m in [x for x in MODES if x in set(c["compile"])]:
        g = c[c["compile"] == m].sort_values(["variant", "pass"])
        more = g[g["saved_bytes"] > g["eager_saved_bytes"] * 1.01]
        if len(more):
            more_bytes.append(
                f"{m}: " + ", ".join(f"{x['variant']} {x['pass']}" for _, x in more.iterrows())
            )
    out += [
        "",
        "- The partitioner (default mode) saved fewer tensors than eager for: "
        + ("; ".join(fewer) if fewer else "none")
        + f"; the same number for the other {len(d) - len(fewer)} cells."
        + (
            f" More activation bytes saved than eager in {'; '.join(more_bytes)}."
            if more_bytes
            else " No compiled cell saved more activation bytes than eager."
        )
        + compression(c),
    ]
    return out


def compression(c: pd.DataFrame) -> str:
    """The compression ratio (eager peak / compiled peak), the CUDA-graph modes apart: their
    steady-state peak can be far below what the step uses (1 MiB for a 66 MiB linear step,
    481 MiB for every attention variant, on the stand-in rows), as if the graph's memory pool,
    set aside at capture, were not in it."""
    cr = c.dropna(subset=["compression_ratio"])
    if cr.empty:
        return ""
    plain, graphs = cr[~cr["compile"].isin(GRAPHS)], cr[cr["compile"].isin(GRAPHS)]
    out = ""
    if len(plain):
        top = plain.loc[plain["compression_ratio"].idxmax()]
        out += (
            f" Compression ratio (eager peak / compiled peak) without CUDA graphs: "
            f"{sig(plain['compression_ratio'].min())}–{xs(top['compression_ratio'])} "
            f"(highest {top['variant']} {top['pass']} {top['compile']})."
        )
    if len(graphs):
        peaks = graphs["peak_mem_alloc_bytes"] / 2**20
        out += (
            f" With CUDA graphs ({', '.join(sorted(set(graphs['compile'])))}) it reads "
            f"{sig(graphs['compression_ratio'].min())}–{xs(graphs['compression_ratio'].max())}, "
            f"from compiled peaks of {sig(peaks.min())}–{sig(peaks.max())} MiB, which look like "
            "the step without the graph's memory pool: those ratios do not compare."
        )
    return out


def dynamic(data: dict) -> list[str]:
    s = data["shapes"]
    s = s[s["source"] == DYNAMIC] if "source" in s else s.iloc[0:0]
    if s.empty:
        return needs("Dynamic shapes", f"`{DYNAMIC}` (its shapes.csv)")
    s = s[s["status"] == "ok"] if "status" in s else s
    s = s.assign(compiled=truthy(s["compiled"]).astype(str))
    return [
        "",
        f"Dynamic shapes (source `{DYNAMIC}`: one process per cell runs every shape in turn; "
        "compile.dynamic False = specialise, True = symbolic, mark = mark_dynamic):",
        "",
        training.dynamic(s).rstrip("\n"),
    ]
