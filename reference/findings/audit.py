"""The reference study's audit: rows whose figures disagree with each other.

    python -m reference.findings.audit DIR [DIR...]   # exit 1 when a checked row fails

Five checks. The first two judge only the rows made with the fixed paired timing
(``pair_lead_in`` recorded: every row since the lead-in fix); v2's rows predate it and are
counted, not judged:

1. **Lead-in.** A GPU-bound forward compiled row's paired speedup is not more than
   ``LEAD_IN`` (3%) below its per-call ratio (the eager cell's per-call latency over this
   row's, same sweep and configuration), where the eager cell is GPU-bound too and both were
   timed in the host's fast phase: only then is the per-call ratio the kernels'. v2's rows,
   timed without a lead-in call before each block, read a median 0.968x of it.
2. **Agreement.** A compiled row's per-call ratio and paired speedup differ by at most
   ``AGREE`` (20%), unless either cell was timed outside the host's fast phase (``slow``,
   ``mixed`` or ``contended``: study.measure.host_gauge). The per-call ratio sets two processes' latencies
   side by side, so a host phase between them shows there; the paired speedup times both in
   one process, in the same phase. The exempt rows are counted, not hidden.
3. **Flex counts elements.** A masked flex row made by the element-counting code (it records
   ``code_hash``) has ``flops_useful`` of the mask's elements: at most its ``flops_scheduled``
   (the tiles), and the same share of ``flops`` as an SDPA or naive row of the same mask and
   length in the same sweep, where there is one.
4. **One code revision.** Every row that records ``code_hash`` records the same one.
5. **One host speed.** Each source's (sweep's) median ``gauge_fast_us`` is at most
   ``HOST_SPREAD`` (15%) above the study's full speed: the lower quartile of the sources'
   medians. H200 machines' hosts ran at fast levels of 13.4 and 16.7 µs on one day, and every
   host-bound cell read slower on the second (docs/method.md): a study stitched from both
   compares hosts, not compile modes. One machine's level also moves: 13.5 µs in part3_bwd's
   first cells of v3, 10.5-11.6 in the rest minutes later, and 13.1 in block_bwd after it, so
   the fastest sweep is no yardstick: it made v3's block (13.8 µs) read 1.19x slow.

Reads only CSVs; never imports torch.
"""

from __future__ import annotations

import argparse

import pandas as pd

from analysis.load import expand, load, stop
from analysis.measures import column
from analysis.pairs import host_bound, with_eager
from reference.findings.base.common import read

LEAD_IN = 0.03
AGREE = 0.20
HOST_SPREAD = 0.15
FULL_SPEED_QUANTILE = 0.25  # one_host_speed: the study's full speed among its sweeps' medians
SAME_SHARE = 1e-6  # flex's element share against SDPA's at the same mask: equal but for rounding


def fixed(r: pd.DataFrame) -> pd.Series:
    """Rows made with the lead-in fix (they record ``pair_lead_in``)."""
    return column(r, "pair_lead_in").notna()


def _name(x) -> str:
    return f"{x.get('source', '?')}/{x['variant']}/{x['compile']}/{x.get('pass', 'fwd')}"


def _fast(phase: pd.Series) -> pd.Series:
    """Timed in the host's fast phase, or before phases were recorded (no column, or blank)."""
    ph = phase.fillna("").astype(str)
    return ph.isin(["", "fast"])


def with_twin(runs: pd.DataFrame) -> pd.DataFrame:
    """Compiled cells with their eager twin (analysis.pairs.with_eager: the twin's latency,
    host-boundness ``eager_hb`` and timing phase ``eager_phase``)."""
    m = with_eager(runs)
    if not m.empty and "timing_phase" not in m:
        m = m.assign(timing_phase="")
    return m


def lead_in(m: pd.DataFrame) -> list[str]:
    both = (
        ~host_bound(m)
        & ~m["eager_hb"].astype(bool)
        & _fast(m["timing_phase"])
        & _fast(m["eager_phase"])
    )
    gpu = m[fixed(m) & both & (m["pass"] == "fwd") & (m["sp_kind"] == "paired")]
    low = gpu[gpu["sp"] < (1 - LEAD_IN) * gpu["speedup"]]
    return [
        f"lead-in: {_name(x)} paired {x['sp']:.3f}x is {1 - x['sp'] / x['speedup']:.1%} below its "
        f"per-call ratio {x['speedup']:.3f}x (GPU-bound)"
        for _, x in low.iterrows()
    ]


def agreement(m: pd.DataFrame) -> list[str]:
    p = m[fixed(m) & (m["sp_kind"] == "paired")]
    off = (p["sp"] / p["speedup"] - 1).abs() > AGREE
    bad = p[off & _fast(p["timing_phase"]) & _fast(p["eager_phase"])]
    return [
        f"agreement: {_name(x)} paired {x['sp']:.3f}x against per-call {x['speedup']:.3f}x "
        f"({x['sp'] / x['speedup'] - 1:+.0%}; both timed in the fast phase)" + moved(x)
        for _, x in bad.iterrows()
    ]


def moved(x) -> str:
    """Which side's latency differs between its own per-call timing and the paired blocks:
    eager alone (its own cell, another process) against eager in the pairs, and the compiled
    call's per-call chunks against its paired blocks (the same process)."""
    try:
        e_alone, e_pair = float(x["eager_lat"]), float(x["eager_latency_paired_us"])
        c_alone = float(x["latency_median_us"])
    except (KeyError, TypeError, ValueError):
        return ""
    if not (e_alone == e_alone and e_pair == e_pair and c_alone == c_alone and x["sp"] > 0):
        return ""
    c_pair = e_pair / x["sp"]
    de, dc = e_pair / e_alone - 1, c_pair / c_alone - 1
    side = "eager" if abs(de) > abs(dc) else "the compiled call"
    return (
        f": eager {e_alone:,.0f} µs a call in its own cell, {e_pair:,.0f} in the pairs "
        f"({de:+.0%}); compiled {c_alone:,.0f} per call, {c_pair:,.0f} in the pairs (eager's "
        f"there over the paired speedup; {dc:+.0%}): "
        f"{side} moved"
    )


def exempt(m: pd.DataFrame) -> int:
    """Compiled rows with a paired speedup whose own timing or whose eager twin's was not in the
    fast phase: the agreement check does not judge them."""
    p = m[fixed(m) & (m["sp_kind"] == "paired")]
    return int((~(_fast(p["timing_phase"]) & _fast(p["eager_phase"]))).sum())


def counted(r: pd.DataFrame) -> pd.Series:
    """Rows whose FLOPs come from the element-counting code (they record ``code_hash`` or
    ``flops_scheduled``): counting has nothing to do with the paired timing."""
    return column(r, "flops_scheduled").notna() | (
        r["code_hash"].notna() if "code_hash" in r else pd.Series(False, r.index)
    )


def _masked(runs: pd.DataFrame) -> pd.Series:
    if "mask" not in runs or "variant" not in runs:
        return pd.Series(False, runs.index)
    ok = runs["status"] == "ok" if "status" in runs else True
    return ok & (runs["variant"] == "flex") & runs["mask"].notna() & (runs["mask"] != "none")


def _masked_flex(runs: pd.DataFrame) -> int:
    return int((_masked(runs) & counted(runs)).sum())


def one_code(runs: pd.DataFrame) -> list[str]:
    """A study is one code revision: every row that records ``code_hash`` records the same."""
    if "code_hash" not in runs:
        return []
    hashes = runs["code_hash"].dropna().astype(str).value_counts()
    if len(hashes) <= 1:
        return []
    return [
        "code: "
        + ", ".join(f"{n} cells at code_hash {h}" for h, n in hashes.items())
        + " (one study, one code revision: run the others again at one)"
    ]


def one_host_speed(runs: pd.DataFrame) -> list[str]:
    """A study runs at one host speed: no source's median fast level above HOST_SPREAD of the
    study's full speed, the lower quartile of its sources' median levels (each sweep counted
    once, so a big sweep on a slow machine cannot make itself the yardstick). Not the fastest
    source's: one machine's level moved from 13.5 to 10.5-11.6 µs within part3_bwd's minutes
    (v3, 2026-12-02), and a sweep that ran at such a moment made every other read slow."""
    if "gauge_fast_us" not in runs or "source" not in runs:
        return []
    gpu = runs[runs["device"] == "cuda"] if "device" in runs else runs  # a CPU box: its own host
    # the cell's own level where the row has it: gauge_fast_us is the lower of it and the
    # host's, so a sweep timed through a slow stretch reads as fast as the host's best moment
    cells = column(gpu, "gauge_own_us").fillna(column(gpu, "gauge_fast_us"))
    level = cells.groupby(gpu["source"]).median().dropna()
    if len(level) < 2:
        return []
    full = level.quantile(FULL_SPEED_QUANTILE)
    return [
        f"host: {src} ran at a fast level of {lvl:.1f} µs (its cells' median){_machines(gpu, src)}, "
        f"{lvl / full:.2f}x the study's full speed of {full:.1f} µs (the lower quartile of its "
        f"sweeps' medians): its host-bound cells read slow; run it again on a machine at full "
        f"speed"
        for src, lvl in level.items()
        if lvl > full * (1 + HOST_SPREAD)
    ]


def _machines(runs: pd.DataFrame, src: str | None = None) -> str:
    """' on machine 6831806f' (rows' ``boot_id``: every H200 VM is called "vm"), '' where the
    rows do not record it (v3's and older)."""
    if "boot_id" not in runs:
        return ""
    r = runs if src is None else runs[runs["source"] == src]
    boots = [str(b) for b in dict.fromkeys(r["boot_id"].dropna()) if str(b) not in ("", "-")]
    if not boots:
        return ""
    return f" on machine{'s' if len(boots) > 1 else ''} {', '.join(boots)}"


def flex_elements(runs: pd.DataFrame) -> list[str]:
    if "mask" not in runs or "status" not in runs:
        return []
    r = runs[runs["status"] == "ok"]
    share = column(r, "flops_useful") / column(r, "flops")
    out = []
    flex = r[_masked(r) & counted(r)]
    for i, x in flex.iterrows():
        tiles = pd.to_numeric(pd.Series([x.get("flops_scheduled")]), errors="coerce").iloc[0]
        if tiles != tiles:
            out.append(
                f"flex: {_name(x)} ({x['mask']}) has no flops_scheduled: tiles, not elements?"
            )
            continue
        if float(x["flops_useful"]) > tiles * (1 + SAME_SHARE):
            out.append(f"flex: {_name(x)} ({x['mask']}) counts more useful FLOPs than tiles")
        twin = r[(r["variant"] != "flex") & (r["mask"] == x["mask"]) & share.notna()
                 & (r["seq_len"] == x["seq_len"]) & (r.get("source") == x.get("source"))]  # fmt: skip
        if len(twin) and abs(share[twin.index].iloc[0] - share[i]) > SAME_SHARE:
            out.append(
                f"flex: {_name(x)} ({x['mask']}, {x['seq_len']}) counts {share[i]:.4f} of the "
                f"matrix, {twin.iloc[0]['variant']} {share[twin.index].iloc[0]:.4f}"
            )
    return out


def audit(dirs: list[str]) -> tuple[list[str], str]:
    """(failures, one line on what was checked) for a results dir (reference/h200, its sources
    in one runs.csv) or sweep dirs (each its own source, as analysis.report labels them)."""
    paths = expand(dirs)
    if len(paths) == 1 and "source" in pd.read_csv(paths[0] / "runs.csv", nrows=1).columns:
        return check(read(paths[0])["runs"])
    runs = load(paths)["runs"]
    if "pass" in runs:
        runs["pass"] = runs["pass"].fillna("fwd")
    return check(runs)


def check(runs: pd.DataFrame) -> tuple[list[str], str]:
    """(failures, one line on what was checked) for cells as analysis.load gives them."""
    if runs.empty:
        return [], "no rows"
    m = with_twin(runs)
    flex = flex_elements(runs) + one_code(runs) + one_host_speed(runs)
    nflex = _masked_flex(runs)
    if m.empty:
        return flex, (
            f"{len(runs)} cells, none compiled with an eager twin; {nflex} masked flex row(s) "
            f"checked{_machines(runs)}: {len(flex)} failure(s)"
        )
    failures = lead_in(m) + agreement(m) + flex
    line = (
        f"{int(fixed(m).sum())} compiled cells made with the lead-in fix, with an eager twin, "
        f"of {len(runs)} cells, checked ({exempt(m)} of them timed outside the host's fast "
        f"phase, on their side or eager's, not judged for agreement), and {nflex} masked flex "
        f"row(s){_machines(runs)}: {len(failures)} failure(s)"
    )
    return failures, line


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("dirs", nargs="+", help="a results dir (reference/h200), or sweep dirs")
    a = p.parse_args(argv)
    try:
        failures, line = audit(a.dirs)
    except FileNotFoundError as e:
        stop("reference.findings.audit", e)
    print(line)
    for f in failures:
        print(f"  {f}")
    return 1 if failures else 0


if __name__ == "__main__":
    from analysis.cli import run  # deferred: a command's end, not the module's

    run(main)
