"""Why a cell moved between two studies (``analysis.compare``'s ``why`` column): a real change
(its kernels, or its device time), the speedup's method, the lead-in fix, the host, or the
eager side. The first that applies is said; a cell that did not move gets none. Across two
GPUs (``gpus``): a cell's kernels by ceiling against its host, and which decided its latency.
"""

from __future__ import annotations

import pandas as pd

from analysis.measures import column, sig

DEVICE = 0.05  # device time moved by more than this: the kernels' own work changed


def causes(m: pd.DataFrame, moved: pd.Series, lat_moved: pd.Series | None = None) -> list[str]:
    """Why a cell's latency or speedup moved between A and B (blank where it did not), the first
    that applies: its kernels changed; its device time changed (real changes); device time
    unknown; the speedup's method changed (cross-process against paired); A's paired speedup
    predates the lead-in fix (no ``pair_lead_in``) and B's, with it, reads higher, while the
    per-call latency (``lat_moved``: past its threshold) held; the host (kernels unchanged, a
    device change too small to carry the latency, and a side timed outside the fast phase or
    host-bound); else the eager side moved, for a compiled cell whose own latency held, and
    otherwise it is unexplained.

    A device time moved only where the trace's GPU busy time a step (``gpu_us_per_step``, the
    kernels' own time) moved with it, when both sides record it: a CUDA-graph mode's device time
    is ``do_bench`` around a whole call, which a slow host stretches (v2 → v3: cuDNN under
    reduce-overhead read 158 → 112 µs so, its kernels 99.4 → 99.2 µs in the trace)."""
    if lat_moved is None:
        lat_moved = pd.Series(False, index=m.index)
    dev = device_ratio(m)
    kern = m["kernels"].fillna(0) != 0
    lead = (
        column(m, "pair_lead_in_a").isna()
        & column(m, "pair_lead_in_b").notna()
        & (m.get("sp_kind_a", pd.Series("", m.index)) == "paired")
        & (column(m, "sp_b") > column(m, "sp_a"))
    )
    dev_us = (column(m, "device_time_us_b") - column(m, "device_time_us_a")).abs()
    lat_us = (column(m, "latency_median_us_b") - column(m, "latency_median_us_a")).abs()
    out = []
    for i in range(len(m)):
        x = m.iloc[i]
        hb = bool(x.get("hbound_a")) or bool(x.get("hbound_b"))
        # a device change is the cause only where it carries the latency: a host-bound cell's
        # few µs of device time can move 20% while its latency moves 40 µs on the host
        carries = not hb or dev_us.iloc[i] >= 0.5 * lat_us.iloc[i]
        eager = str(x.get("compile")) == "off"
        if not bool(moved.iloc[i]):
            out.append("")
        elif bool(kern.iloc[i]):
            a, b = x["kernels_per_step_a"], x["kernels_per_step_b"]
            out.append(f"real: kernels per step {a:g} → {b:g}")
        elif dev.iloc[i] == dev.iloc[i] and abs(dev.iloc[i] - 1) > DEVICE and carries:
            out.append(f"real: device time {dev.iloc[i] - 1:+.0%}")
        elif dev.iloc[i] != dev.iloc[i] and not bool(lead.iloc[i]):
            out.append("unknown: kernels unchanged, device time not recorded on both sides")
        elif not eager and str(x.get("sp_kind_a")) != str(x.get("sp_kind_b")):
            out.append(f"method: A's speedup is {x.get('sp_kind_a')}, B's {x.get('sp_kind_b')}")
        elif bool(lead.iloc[i]) and not bool(lat_moved.iloc[i]):
            out.append("lead-in: A's paired timing had no lead-in call before each block")
        else:
            out.append(_rest(x, eager or bool(lat_moved.iloc[i])))
    return out


def device_ratio(m: pd.DataFrame) -> pd.Series:
    """Device time B/A, 1.0 where the trace's GPU busy time a step says its move is the host's
    (it did not move the same way by more than DEVICE: ``causes``), blank where unknown."""
    dev = column(m, "device_time_us_b") / column(m, "device_time_us_a")
    busy = column(m, "gpu_us_per_step_b") / column(m, "gpu_us_per_step_a")
    return dev.where(busy.isna() | ((busy - 1).abs().gt(DEVICE) & (busy > 1).eq(dev > 1)), 1.0)


def _bound_word(x: pd.Series, k: str) -> str:
    """'host-bound' where the side measured its host time (``host_us``); a row from before host
    timing only shows its latency over its device time, and is called that, not host-bound."""
    host = pd.to_numeric(pd.Series([x.get(f"host_us_{k}")]), errors="coerce").iloc[0]
    return "host-bound" if host == host and host > 0 else "latency over device time"


def _rest(x: pd.Series, own: bool) -> str:
    """Kernels and device time unchanged: the host where a side was timed outside the fast
    phase or measured host-bound ('not the device' where only latency over device time says
    so, no host time measured); else unexplained where the cell's ``own`` latency moved (an eager cell,
    or a compiled one whose per-call latency moved), or its eager side."""
    where = [f"{s} {x.get(f'timing_phase_{k}')}" for s, k in (("A", "a"), ("B", "b"))
             if str(x.get(f"timing_phase_{k}") or "fast") not in ("fast", "nan")]  # fmt: skip
    where += [f"{s} {_bound_word(x, k)}" for s, k in (("A", "a"), ("B", "b"))
              if x.get(f"hbound_{k}")]  # fmt: skip
    if where:
        # no host time measured on either side and both fast: latency alone says nothing of
        # the host, so the cause is named by what it is not
        first = "not the device" if all("latency over" in w for w in where) else "host"
        return f"{first}: kernels unchanged, the device time does not carry it ({', '.join(where)})"
    if own:
        return "unexplained: kernels and device time unchanged, GPU-bound, fast"
    return ("eager's side: this cell's kernels, device time and host-boundness are unchanged "
            "(see its eager cell)")  # fmt: skip


# Across GPUs: each matched ok compiled CUDA cell whose sides ran on different GPUs
# (``device_name``), its change split into its kernels' (by the ceiling that bounds them,
# analysis.tables.predict's model, each side against its own ceilings) and its host's.
SAME = 0.05  # a group's µs or a latency within ±5%: it did not move
GROUP = {"compute": "compute-bound", "memory": "memory-bound", "floor": "launch-bound (floor)",
         "other": "other"}  # fmt: skip
PEAK = {"compute": ("peak_tflops", "compute"), "memory": ("peak_gbps", "bandwidth")}


def gpus(m: pd.DataFrame, da: dict, db: dict) -> pd.DataFrame:
    """Per matched ok compiled CUDA cell of ``m`` whose sides' ``device_name`` differ (``da``,
    ``db``: the sides' loaded tables), the ``gpu_`` columns: the GPUs and their ceilings B/A;
    kernels' µs a step by ceiling A → B (``predict.bound``: each side's kernels against its own
    rows' ridge and the cell's flops / bytes_min), the ratio and how it moved (``gpu_*_moved``);
    device µs, host units, G (``host_gauge_us``) and host µs = units x G each side; and which
    change decided the latency (``gpu_decided``, by host_model's max(device, host)). Empty
    where no such cell is matched; indexed as ``m``."""
    if m.empty or "device_name" not in da["runs"] or "device_name" not in db["runs"]:
        return pd.DataFrame()
    rows = [_by_run(d["runs"]) for d in (da, db)]
    kern = [dict(list(d["kernels"].groupby(["source", "run_id"]))) if len(d["kernels"]) else {}
            for d in (da, db)]  # fmt: skip
    out = {}
    for i, x in m.iterrows():
        if (x.get("status_a"), x.get("status_b")) != ("ok", "ok") or x.get("compile") == "off":
            continue
        sides = [r.get((x[f"source_{s}"], x[f"run_id_{s}"])) for r, s in zip(rows, "ab", strict=True)]  # fmt: skip
        if any(y is None or y.get("device") != "cuda" for y in sides):
            continue
        name = [y.get("device_name") for y in sides]
        if any(not isinstance(n, str) or not n for n in name) or name[0] == name[1]:
            continue
        k = [kn.get((x[f"source_{s}"], x[f"run_id_{s}"])) for kn, s in zip(kern, "ab", strict=True)]  # fmt: skip
        out[i] = _cell(sides, k)
    return pd.DataFrame.from_dict(out, orient="index")


def _by_run(r: pd.DataFrame) -> dict:
    """(source, run_id) -> the cell's row as a dict."""
    r = r.drop_duplicates(["source", "run_id"])
    return {(x["source"], x["run_id"]): x for x in r.to_dict("records")}


def _num(v) -> float:
    v = pd.to_numeric(pd.Series([v]), errors="coerce").iloc[0]
    return float(v) if v == v else float("nan")


def _cell(sides: list[dict], kern: list) -> dict:
    """One cell's ``gpu_`` columns from its two rows and their kernels (None: none)."""
    # deferred: predict loads the ceilings' reader, which only this section needs
    from analysis.tables.predict import CEILINGS, bound
    from study.rows.metrics import device_us

    out = {"gpu_a": sides[0]["device_name"], "gpu_b": sides[1]["device_name"]}
    for col in ("peak_tflops", "peak_gbps"):
        out[f"gpu_{col}_ratio"] = _num(sides[1].get(col)) / _num(sides[0].get(col))
    dev, host = [], []
    for s, y, k in zip("ab", sides, kern, strict=True):
        tf, gb = _num(y.get("peak_tflops")), _num(y.get("peak_gbps"))
        fl, by = _num(y.get("flops")), _num(y.get("bytes_min"))
        if k is not None and len(k) and tf > 0 and gb > 0:  # NaN compares False: no ceilings
            c = bound(k, tf * 1e12 / (gb * 1e9), fl / by if fl > 0 and by > 0 else None)
            us = k["us_per_step"].to_numpy(float)
            out |= {f"gpu_{g}_us_{s}": float(us[c == g].sum()) for g in CEILINGS}
        busy = sum(out.get(f"gpu_{g}_us_{s}", 0) for g in CEILINGS)  # its kernels' own
        dev.append(device_us(y) or busy or float("nan"))
        u, g = _num(y.get("host_units")), _num(y.get("host_gauge_us"))
        out |= {f"gpu_dev_us_{s}": dev[-1], f"gpu_host_units_{s}": u, f"gpu_g_{s}": g,
                f"gpu_host_us_{s}": u * g}  # fmt: skip
        host.append(u * g)
    for g in CEILINGS:
        a, b = out.get(f"gpu_{g}_us_a", float("nan")), out.get(f"gpu_{g}_us_b", float("nan"))
        out[f"gpu_{g}_ratio"] = b / a if a > 0 and b > 0 else float("nan")  # none on a side
        out[f"gpu_{g}_moved"] = _moved(out[f"gpu_{g}_ratio"], g, out)
    out["gpu_decided"] = _decided(dev, host, out)
    return out


def _moved(r: float, g: str, out: dict) -> str:
    """How a group's µs moved: 'did not move' (within ±SAME), 'with bandwidth' / 'with compute'
    (within ±10% of its ceiling's A/B, predict.WITHIN), 'not with bandwidth', or 'moved' for a
    group no ceiling bounds; blank where a side has none of it."""
    from analysis.tables.predict import WITHIN

    if r != r:
        return ""
    if abs(r - 1) <= SAME:
        return "did not move"
    if g not in PEAK:
        return "moved"
    want = 1 / out[f"gpu_{PEAK[g][0]}_ratio"]  # the time ratio the ceiling alone gives
    return f"{'with' if abs(r / want - 1) <= WITHIN else 'not with'} {PEAK[g][1]}"


def _decided(dev: list, host: list, out: dict) -> str:
    """Which change decided the latency, by max(device, host) each side: B's device with A's
    host, and A's device with B's host; the one that alone gives B's latency (within ±SAME)
    decided it, 'both' where neither or each does."""
    near = lambda x, y: abs(x / y - 1) <= SAME  # noqa: E731
    if not all(v == v and v > 0 for v in (*dev, *host)):
        return "unknown (no host figures)" if all(v == v and v > 0 for v in dev) else (
            "unknown (no device time)")  # fmt: skip
    lat_a, lat_b = max(dev[0], host[0]), max(dev[1], host[1])
    if near(lat_b, lat_a):
        return "neither (latency within ±5%)"
    by_dev, by_host = near(max(dev[1], host[0]), lat_b), near(max(dev[0], host[1]), lat_b)
    if by_dev == by_host:
        return "both"
    if by_host:
        u = [out[f"gpu_host_units_{s}"] for s in "ab"]
        units = f"units {sig(u[0])} → {sig(u[1])}, " if abs(u[1] / u[0] - 1) > SAME else ""
        return f"host ({units}G {out['gpu_g_a']:.3g} → {out['gpu_g_b']:.3g} µs)"
    return f"device ({_lead(out)})"


def _lead(out: dict) -> str:
    """The kernel group that moved the device time most, against its ceiling: 'memory-bound
    kernels 1.38x slower, with bandwidth 1.42x lower'."""
    from analysis.tables.predict import CEILINGS

    d = {g: abs(out.get(f"gpu_{g}_us_b", 0) - out.get(f"gpu_{g}_us_a", 0)) for g in CEILINGS}
    if not any(v > 0 for v in d.values()):  # no kernels.csv on a side, or none moved
        return "no kernels to split it by ceiling"
    g = max(d, key=lambda k: d[k] if d[k] == d[k] else -1)
    r = out.get(f"gpu_{g}_ratio", float("nan"))
    if r != r:  # none of them on a side: bound otherwise there (its ridge), or other kernels
        a, b = (out.get(f"gpu_{g}_us_{s}") for s in "ab")
        return f"{GROUP[g]} kernels {sig(a)} → {sig(b)} µs a step"
    said = f"{GROUP[g]} kernels {_times(r, 'slower', 'faster')}"
    if g in PEAK:
        c = out[f"gpu_{PEAK[g][0]}_ratio"]
        word = "with" if out[f"gpu_{g}_moved"].startswith("with") else "while"
        said += f", {word} {PEAK[g][1]} {_times(c, 'higher', 'lower')}"
    return said


def _times(r: float, up: str, down: str) -> str:
    """1.38 -> '1.38x slower', 0.70 -> '1.42x lower' (B against A, the larger over the smaller)."""
    return f"{sig(r)}x {up}" if r >= 1 else f"{sig(1 / r)}x {down}"


def gpus_line(t: pd.DataFrame) -> str:
    """The console's line for ``gpus``' cells: how many, what decided them, and the memory- and
    compute-bound kernels' µs B/A (summed over the cells) against their ceilings' A/B."""
    n = t["gpu_decided"].str.split(" ").str[0].value_counts()
    said = "".join(f", {k} {n[k]}" for k in ("host", "both", "neither", "unknown") if k in n)
    pairs = ", ".join(dict.fromkeys(t["gpu_a"] + " → " + t["gpu_b"]))
    out = f"across GPUs ({pairs}): {len(t)} cells; device decided {n.get('device', 0)}{said}"
    moved = []
    for g in ("memory", "compute"):
        a, b = column(t, f"gpu_{g}_us_a"), column(t, f"gpu_{g}_us_b")
        at = (a > 0) & (b > 0)  # a kernel bound otherwise on B (its ridge) moved groups
        if at.any():
            c = (1 / t.loc[at, f"gpu_{PEAK[g][0]}_ratio"]).median()
            head = f"{GROUP[g]} kernels moved" if not moved else GROUP[g]
            moved.append(f"{head} {sig(b[at].sum() / a[at].sum())}x against {PEAK[g][1]} {sig(c)}x")
    return out + "".join(f"; {', '.join(moved)}" * bool(moved))


def gpus_table(t: pd.DataFrame, labels: list[str]) -> pd.DataFrame:
    """compare.md's table of ``gpus``' cells (``labels``: each one's name), one line a cell."""
    from analysis.tables.predict import CEILINGS

    def arrow(c: str) -> pd.Series:
        a, b = column(t, f"{c}_a"), column(t, f"{c}_b")
        said = [f"{sig(x)} → {sig(y)}" if x == x or y == y else "" for x, y in zip(a, b, strict=True)]  # fmt: skip
        return pd.Series(said, t.index)

    out = pd.DataFrame({"cell": labels, "GPUs A → B": t["gpu_a"] + " → " + t["gpu_b"]})
    out["ceilings B/A"] = [f"TFLOP/s {sig(c)}x, GB/s {sig(m)}x" for c, m in
                           zip(t["gpu_peak_tflops_ratio"], t["gpu_peak_gbps_ratio"], strict=True)]  # fmt: skip
    for g in CEILINGS:
        us = column(t, f"gpu_{g}_us_a").fillna(0) + column(t, f"gpu_{g}_us_b").fillna(0)
        if us.gt(0).any():
            r, w = t[f"gpu_{g}_ratio"], t[f"gpu_{g}_moved"]
            out[f"{GROUP[g]} µs A → B"] = arrow(f"gpu_{g}_us").where(us > 0, "") + [
                f" ({sig(x)}x, {y})" if x == x else "" for x, y in zip(r, w, strict=True)]  # fmt: skip
    out["device µs A → B"] = arrow("gpu_dev_us")
    none = [", ".join(f"no host_units in {s}" for s, u in zip("AB", x, strict=True) if u != u)
            for x in zip(t["gpu_host_units_a"], t["gpu_host_units_b"], strict=True)]  # fmt: skip
    out["host units A → B"] = [n or a for a, n in zip(arrow("gpu_host_units"), none, strict=True)]
    out["G µs A → B"] = arrow("gpu_g")
    out["host µs A → B"] = [a * (not n) for a, n in zip(arrow("gpu_host_us"), none, strict=True)]
    out["decided by"] = t["gpu_decided"]
    return out.reset_index(drop=True)


GPUS_ABOUT = (
    "Cells whose two sides ran on different GPUs (`device_name`): each side's kernels "
    "(kernels.csv) grouped by the ceiling that bounds them, against that side's own "
    "`peak_tflops`/`peak_gbps` ridge and the cell's flops / bytes_min (`analysis.tables.predict`'s "
    "model), their µs a step A → B beside the ceilings' B/A: a group moved with bandwidth or "
    f"compute where its time ratio lies within ±10% of its ceiling's A/B, did not move within "
    f"±{SAME:.0%}. Host µs = host_units × G (`host_gauge_us`). Decided by: latency = max(device, "
    "host) each side; the change (B's device with A's host, or A's device with B's host) that "
    "alone gives B's latency within ±5% decided it; both where neither or each does."
)
