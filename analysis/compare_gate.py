"""The regression gate of ``python -m analysis.compare A B --fail-on-regression``: B must hold
every cell of A, each ok, none regressed, and B must be a finished sweep.

- ``unfinished(arg)``: a sweep dir whose lock a running sweep holds (study.sweep.sweepdir's
  ``.sweep.lock``), or with fewer finished cells than its ``sweep.yaml`` planned, is refused
  before anything is compared: 3 of 8 rows read as "0 regressions" while the rest still ran.
- ``failures(m, only_a)``: one line per cell of A that B lacks (a renamed variant matches
  nothing) and per matched cell not ok in B with another status than A's (unsupported ->
  error); a cell ok in A and not in B is a regression, said with the regressions, so it is not
  said twice here. A cell with the same failure on both sides (math's oom at the largest shape,
  flex's unsupported backends in reference/h200) is counted "still not ok", and passes: the
  study did not change there.
- ``apart_lines``: a line about a cell that the gate takes for one with others of its side (a
  ``+variant.kwargs`` value no column records; their config_hash differs) names what tells them
  apart: the items of their run dir names, a column only that side records, else config_hash.
- ``own_shape_keys``: a crash row is matched on the shape keys of its variant's ok rows.
- ``verdicts``: each matched cell in exactly one bucket, so the summary adds up.
"""

from __future__ import annotations

import fcntl
from pathlib import Path

import numpy as np
import pandas as pd

from analysis.load import finished_cells
from study.rows.schema import SHAPE_KEYS
from study.sweep.sweepdir import LOCK, clock


def _running(d: Path) -> str:
    """What holds ``d``'s sweep lock ('pid 123: python -m study.run ...'), "" when nothing."""
    lock = d / LOCK
    if not lock.exists():
        return ""
    with open(lock) as f:
        try:
            fcntl.flock(f, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return f.read().strip() or "a process that did not say which"
        fcntl.flock(f, fcntl.LOCK_UN)
    return ""


def unfinished(arg: str) -> str:
    """Why the side ``arg`` (a dir, or DIR:SOURCE) cannot be compared yet, "" when it can."""
    d = Path(arg)
    if not d.exists() and ":" in arg:
        d = Path(arg.rsplit(":", 1)[0])
    if not d.is_dir():
        return ""
    total, _ = clock(d)
    done = len(finished_cells(d))
    have = f"{done} of its {total} cells" if total else f"{done} cells"
    holder = _running(d)
    if holder:
        return (f"{d} is still running ({holder}; {have} finished): compare it when the sweep "
                "has ended")  # fmt: skip
    if total and done < total:
        return (f"{d} is unfinished ({have} finished, and no sweep is running in it): resume it "
                "with its command and resume=true, then compare")  # fmt: skip
    return ""


def _name(r, source: str = "source") -> str:
    """'suite: gpt2 · default', with a suite row's regime: 'suite: gpt2 (latency) · default'."""
    reg = r.get("regime")
    reg = f" ({reg})" if isinstance(reg, str) and reg not in ("", "none") else ""
    return f"{r[source]}: {r['variant']}{reg} · {r['compile']}"


def failures(m: pd.DataFrame, only_a: pd.DataFrame) -> list[str]:
    """What fails the gate besides the regressions: every cell of A missing in B, every matched
    cell not ok in B whose status is not A's; each with what tells it apart from cells the gate
    takes for one (``apart_lines``)."""
    out = [f"missing in B: {_name(r)} ({r['status'] or '?'} in A){r.get('_apart', '')}"
           for _, r in only_a.iterrows()]  # fmt: skip
    if len(m):
        a, b = m["status_a"].fillna(""), m["status_b"].fillna("")
        still = m[(b != "ok") & (b != a) & ~m["lost"]]
        for _, r in still.iterrows():
            out.append(f"not ok in B: {_name(r, 'source_a')} ({r['status_a'] or '?'} in A, "
                       f"{r['status_b'] or '?'} in B){r.get('_apart', '')}")  # fmt: skip
    return out


def _items(run_id) -> dict[str, str]:
    """A run dir name's ``key=value`` items (``study.sweep.names``); {} for a name not made so."""
    split = (item.partition("=") for item in str(run_id).split(","))
    return {k: v for k, eq, v in split if eq}


def _differ(values: list[dict]) -> list[str]:
    """The keys whose value is not the same in every dict (absent counts as a value)."""
    keys = sorted({k for v in values for k in v})
    return [k for k in keys if len({str(v.get(k)) for v in values}) > 1]


def told_by(cells: pd.DataFrame, recorded: tuple[str, ...]) -> tuple[str, list[str]]:
    """(what tells apart cells of one source the gate takes for one, ``compare.untold``; each
    cell's value of it): the ``recorded`` columns whose values differ (timing_overrides against
    a side without it), else the items of their run dir names that do (``+variant.kwargs.*``),
    else their config_hash, a setting no column records."""
    cols = [c for c in recorded if c in cells]
    ways = [cells[cols].astype(object).where(cells[cols].notna(), "").to_dict("records")]
    items = [_items(r) for r in cells["run_id"]] if "run_id" in cells else []
    ways += [items] if items and all(items) else []
    for values in ways:
        if keys := _differ(values):
            own = [[str(v.get(k, "unset")) or "blank" for k in keys] for v in values]
            if len(keys) > 1:
                own = [[f"{k}={x}" for k, x in zip(keys, o, strict=True)] for o in own]
            return ", ".join(keys), [" ".join(o) for o in own]
    return "config_hash, a setting no column records", list(cells["config_hash"].astype(str))


def apart_lines(same: pd.DataFrame, recorded: tuple[str, ...], side: str) -> dict:
    """(source, key, run_id) -> what a gate line adds for each cell of ``side`` that ``same``
    (``compare.untold``) holds: '; in B one of 2 cells told apart only by variant.kwargs.bias:
    this one false, the other true'."""
    out = {}
    for (src, key), g in [] if same.empty else same.groupby(["source", "_key"], sort=False):
        what, own = told_by(g, recorded)
        for i, rid in enumerate(g["run_id"]):
            rest = own[:i] + own[i + 1 :]
            out[(src, key, rid)] = (
                f"; in {side} one of {len(g)} cells told apart only by {what}: this one {own[i]}, "
                f"the other{'s' if len(rest) > 1 else ''} {', '.join(rest)}"
            )
    return out


def own_shape_keys(ra: pd.DataFrame, rb: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """A row that is not ok keeps only the shape keys its variant's ok rows carry (on either
    side): the sweep writes every ``shape.*`` of the config into a crash or timeout row, a cell
    only its variant's own, so under +experiment=tiny a crash never matched its ok cell."""
    keys = [c for c in SHAPE_KEYS if c in ra or c in rb]
    if not keys or "status" not in ra or "status" not in rb:
        return ra, rb
    ok = pd.concat([r[r["status"] == "ok"] for r in (ra, rb)], ignore_index=True)
    own = {v: [c for c in keys if c in g and g[c].notna().any()]
           for v, g in ok.groupby("variant")}  # fmt: skip
    out = []
    for r in (ra, rb):
        r = r.copy()
        for v, have in own.items():
            at = (r["variant"] == v) & (r["status"] != "ok")
            r.loc[at, [c for c in keys if c in r and c not in have]] = np.nan
        out.append(r)
    return out[0], out[1]


BUCKETS = ("regressed", "improved", "within noise", "now ok", "still not ok", "unchanged")


def verdicts(m: pd.DataFrame) -> list[str]:
    """Each matched cell in exactly one of BUCKETS, the first that applies, so the
    counts add up to the matched cells."""
    out = []
    for i in range(len(m)):
        x = m.iloc[i]
        b_ok = str(x.get("status_b") or "") == "ok"
        out.append("regressed" if x["regressed"] else "now ok" if x["now_ok"]
                   else "still not ok" if not b_ok else "improved" if x["improved"]
                   else "within noise" if x["within_noise"] else "unchanged")  # fmt: skip
    return out
