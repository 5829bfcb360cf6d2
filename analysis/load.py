"""Load one or more sweeps' CSVs into tidy DataFrames. CSV only: never imports torch.

A sweep dir holds ``runs.csv`` and run dirs with ``kernels.csv`` (and ``ncu.csv``,
``autotune.csv``). A results dir committed to git (e.g. ``reference/h200``) may hold the
combined ``runs.csv``/``kernels.csv`` directly. Each frame gets a ``source`` column that tells
sweeps apart (machines, torch versions).

A cell run N times in fresh processes (``repeat``/``repeats`` columns) has N rows in runs.csv.
Figures get ONE row per cell (``cells``): numbers are the median over its ok repeats, with
``<col>_min``/``<col>_max`` and ``<col>_spread_pct`` for the headline columns and
``n_repeats``; the raw rows stay in ``load()["repeats"]``. A cell with any repeat not ok is not
ok: its status and reason are its first failed repeat's. A cell is its ``config_hash`` when
the rows have one, else (source, run_id, pass).

A sweep dir's ``runs.csv`` is checked against its run dirs before it is read (``check_sweep``):
a finished cell is a run dir with a ``run.csv``. Where they disagree (a finished cell missing,
a row whose run dir is gone, a file cut short or unparseable, a run.csv written after runs.csv
or saying other than its row there, or no runs.csv at all) it is
rebuilt from the run dirs (``study.rows.io.aggregate``) with one line on stderr saying why; where
it cannot be rebuilt, the analysis stops and says which cells are missing. A results dir of
committed CSVs (no run dirs) is read as it is.
"""

# Long: every way rows are read (sweeps, results dirs, repeats, old columns) behind one load(): the
# analysis reads rows through nothing else.

from __future__ import annotations

import csv
import glob
import os
import sys
from collections import Counter
from pathlib import Path

import numpy as np
import pandas as pd

from study.observe.stats import across_processes
from study.rows import io as study_io
from study.rows import revealed
from study.rows.schema import NON_NUMERIC, columns

NUMERIC = [c for c in columns("runs") if c not in NON_NUMERIC]
# Newer columns: numeric when present, absent in older results.
NEWER_NUMERIC = [
    "repeat",
    "repeats",
    "speedup_paired",
    "speedup_ci_low",
    "speedup_ci_high",
    "pairs",
    "eager_latency_paired_us",
    "compiled_latency_paired_us",
    "peak_mem_alloc_bytes",
    "peak_mem_step_bytes",
    "eager_peak_mem_step_bytes",
    "gauge_own_us",
    "gpu_power_w",
    "gpu_power_capped_share",
    "peak_mem_reserved_bytes",
    "compression_ratio",
    "flops_useful",
    "tflops_useful",
    "overhead_s",
]
# Columns whose spread over repeats a figure or analysis.compare shows.
SPREAD = [
    "latency_median_us",
    "speedup",
    "speedup_paired",
    "speedup_ci_low",
    "speedup_ci_high",
    "compile_s",
    "peak_mem_alloc_bytes",
    "peak_mem_step_bytes",
    "peak_mem_reserved_bytes",
    "device_time_us",
]


def has(df: pd.DataFrame, col: str) -> bool:
    """The column exists and holds at least one value (old results lack the newer columns)."""
    return col in df and df[col].notna().any()


def cell_id(runs: pd.DataFrame) -> pd.Series:
    """One id per cell: config_hash where the row has one, else source/run_id/pass."""
    fallback = runs["source"].astype(str) + "/" + runs["run_id"].astype(str)
    if "pass" in runs:
        fallback = fallback + "/" + runs["pass"].fillna("fwd").astype(str)
    if has(runs, "config_hash"):
        return (
            runs["source"].astype(str)
            + "/"
            + runs["config_hash"].astype(str).where(runs["config_hash"].notna(), fallback)
        )
    return fallback


def cells(raw: pd.DataFrame) -> pd.DataFrame:
    """One row per cell from runs.csv rows that may hold several repeats of it."""
    if raw.empty:
        return raw.copy()
    r = raw.copy()
    r["pass"] = r["pass"].fillna("fwd") if "pass" in r else "fwd"
    r["_cell"] = cell_id(r)
    if not r["_cell"].duplicated().any():
        r["n_repeats"] = 1
        return r.drop(columns="_cell")
    _machines_mixed(r)
    if "repeat" in r:
        r = r.sort_values(["_cell", "repeat"], kind="stable")
    num = [
        c
        for c in r.columns
        if pd.api.types.is_numeric_dtype(r[c])
        and not pd.api.types.is_bool_dtype(r[c])
        and c not in {"repeat", "repeats", "seed"}
    ]
    # Vectorised over cells: the ok repeats timed in the host's fast phase when a cell has
    # any, else its ok repeats, else all of its rows (a cell's figures never mix phases
    # silently: its timing_phase is that of the rows used); the first of them gives the text
    # columns, the median the numbers.
    r["_ok"] = r["status"] == "ok"
    phase = r["timing_phase"] if "timing_phase" in r else pd.Series(None, index=r.index)
    r["_fast"] = r["_ok"] & phase.isin(["fast"])
    by_cell = r.groupby("_cell", sort=False)
    any_fast, any_ok = by_cell["_fast"].transform("any"), by_cell["_ok"].transform("any")
    use = r[np.where(any_fast, r["_fast"], np.where(any_ok, r["_ok"], True))]
    g = use.groupby("_cell", sort=False)
    row = g.head(1).set_index("_cell")
    med = g[num].median()
    row[num] = med
    if "timing_phase" in use:  # a cell of several phases says all of them
        row["timing_phase"] = g["timing_phase"].agg(
            lambda x: "/".join(sorted({str(v) for v in x.dropna()})) or None
        )
    if {"speedup_paired", "speedup_ci_low", "speedup_ci_high"} <= set(use.columns):
        iv = g[["speedup_paired", "speedup_ci_low", "speedup_ci_high"]].apply(_across)
        row.loc[iv.index, ["speedup_paired", "speedup_ci_low", "speedup_ci_high"]] = iv.values
    extra = {}
    for c in SPREAD:
        if c in use and use[c].notna().any():
            lo, hi = g[c].min(), g[c].max()
            extra[f"{c}_min"], extra[f"{c}_max"] = lo, hi
            extra[f"{c}_spread_pct"] = 100 * (hi - lo) / med[c].where(med[c] != 0)
    extra["n_repeats"] = by_cell.size()
    extra["n_repeats_ok"] = by_cell["_ok"].sum()
    extra["n_repeats_fast"] = by_cell["_fast"].sum()
    row = pd.concat([row, pd.DataFrame(extra)], axis=1).reindex(r["_cell"].unique())
    _not_ok(row, r)
    return row.drop(columns=["_ok", "_fast"]).reset_index(drop=True)


def _not_ok(row: pd.DataFrame, r: pd.DataFrame) -> None:
    """A cell with any repeat not ok is not ok (in place): its status is that of its first
    failed repeat, its reason says which repeat and why. Its numbers stay the medians of its ok
    repeats (``n_repeats_ok`` of ``n_repeats``), which no figure of ok cells then draws: a
    crash never disappears into an ok row of the same configuration."""
    bad = r[~r["_ok"]].groupby("_cell", sort=False).head(1).set_index("_cell")
    bad = bad[bad.index.isin(row.index)]
    if bad.empty:
        return
    n = row.loc[bad.index, "n_repeats"].astype(int).astype(str)
    which = (bad["repeat"].astype("Int64").astype(str).replace("<NA>", "?")
             if "repeat" in bad else pd.Series("?", index=bad.index))  # fmt: skip
    why = (bad["reason"] if "reason" in bad else pd.Series("", index=bad.index)).fillna("")
    status = bad["status"].fillna("unknown").astype(str)
    row.loc[bad.index, "status"] = status
    row["reason"] = row["reason"].astype(object) if "reason" in row else None
    row.loc[bad.index, "reason"] = (
        "repeat " + which + " of " + n + " " + status
        + (": " + why.astype(str)).where(why.astype(str) != "", "")
    )  # fmt: skip


def _machines_mixed(r: pd.DataFrame) -> None:
    """One line on stderr where a cell's repeats ran on several machines (boot ids): its medians
    then mix hosts, and host-bound numbers belong to a host. Say it; split such rows into a
    source per machine (a sweep dir each) to keep them apart."""
    if "boot_id" not in r or not r["boot_id"].notna().any():
        return
    by = r.groupby("_cell")
    boots = by["boot_id"].nunique()
    mixed = boots[boots > 1].index
    if len(mixed):
        first = by.head(1).set_index("_cell").loc[mixed]
        names = first["source"].astype(str) + ": " + first["run_id"].astype(str)
        print(f"[analysis] {len(mixed)} cell(s) have repeats from several machines (boot ids), "
              f"so their medians mix hosts: {_names(list(names))}; give each machine's rows a "
              "source of their own (a sweep dir each) to keep them apart",
              file=sys.stderr)  # fmt: skip


def _across(p: pd.DataFrame) -> pd.Series:
    """A cell's paired speedup over its processes, with the interval that covers processes
    (``study.observe.stats.across_processes``: a t-interval on the log ratios, centred on their
    geometric mean); the median and no interval where a process has none."""
    measured = p[p.iloc[:, 0].notna()]
    whole = measured.dropna()
    whole = whole[(whole > 0).all(axis=1)]
    if whole.empty or len(whole) < len(measured):  # a process without an interval: no
        return pd.Series([measured.iloc[:, 0].median(), np.nan, np.nan], index=p.columns)
    p = whole  # interval over a subset of the processes the median covers
    sp, lo, hi = across_processes(p.iloc[:, 0], p.iloc[:, 1], p.iloc[:, 2])
    return pd.Series([sp, lo, hi], index=p.columns)


def newest_sweep(root: Path = Path("outputs")) -> Path:
    sweeps = sorted((root / "sweeps").glob("*/runs.csv")) if (root / "sweeps").exists() else []
    if not sweeps:
        raise FileNotFoundError(
            f"no sweep with a runs.csv under {root}/sweeps: run "
            "`python -m study.run -m ...` first, or pass SWEEP_DIR"
        )
    return sweeps[-1].parent


class NotASweep(FileNotFoundError):
    """A path the analysis cannot read as a sweep or results dir: a user's mistake, said in one
    line (the commands exit 2)."""


def expand(args: list[str]) -> list[Path]:
    out = []
    for a in args:
        hits = sorted(glob.glob(a)) or [a]
        for h in hits:
            p = Path(h)
            if p.is_file() and p.name == "runs.csv":
                p = p.parent
            if not p.is_dir():
                raise NotASweep(f"no such dir: {p}" if not p.exists() else f"{p} is no dir")
            if not (p / "runs.csv").exists() and not study_io.run_csvs(p):
                raise NotASweep(f"{p} has no runs.csv: pass a sweep dir (outputs/sweeps/<time>)")
            out.append(p)
    return out


def _names(ids, n: int = 5) -> str:
    ids = sorted(ids)
    more = f" and {len(ids) - n} more" if len(ids) > n else ""
    return ", ".join(ids[:n]) + more


def finished_cells(d: Path) -> list[str]:
    """The run_id of every finished cell below sweep dir ``d``: each run dir's ``run.csv``
    that reads whole by the rule a resume trusts (``study.rows.io.read_row``; one that does not is
    not finished, and ``study.rows.io`` says why)."""
    ids = []
    for p in study_io.run_csvs(d):
        try:
            ids.append(study_io.read_row(p)["run_id"])
        except study_io.Incomplete:
            continue
    return ids


def _rows(path: Path) -> tuple[list[dict] | None, str]:
    """(rows, "") of a runs.csv that reads whole (``study.rows.io.read_whole``), else (None, what
    is wrong with it)."""
    if not path.exists():
        return None, "missing"
    if path.stat().st_size == 0:
        return None, "empty"
    try:
        rows = study_io.read_whole(path)
    except study_io.Incomplete as e:
        return None, str(e).removeprefix("it is ")
    if rows and "run_id" not in rows[0]:
        return None, "without a run_id column"
    return rows, ""


def _disagreement(d: Path, finished: list[str]) -> str:
    """What is wrong with ``d``'s runs.csv against its finished cells, "" when nothing."""
    rows, wrong = _rows(d / "runs.csv")
    if rows is None:
        return f"{d} has no runs.csv" if wrong == "missing" else f"{d}/runs.csv is {wrong}"
    listed = Counter(r["run_id"] for r in rows)
    have = set(finished)
    missing, extra = have - set(listed), set(listed) - have
    unread = {x for x in extra if (d / x / "run.csv").exists()}  # a run.csv cut short
    said = []
    if missing:
        said.append(f"listed {len(have) - len(missing)} of {len(have)} finished cells")
    for what, ids in (("whose run dir is gone", extra - unread),
                      ("whose run.csv does not read whole", unread),
                      ("whose run.csv changed since", _changed(d, rows)),
                      ("twice", {k for k, n in listed.items() if n > 1})):  # fmt: skip
        if ids:
            said.append(f"listed {_cells(ids)} {what}"
                        + (f" ({_names(ids)})" if what != "twice" else ""))  # fmt: skip
    return f"{d}/runs.csv " + ", and ".join(said) if said else ""


# Columns study.rows.io.aggregate fills in runs.csv (a cell's run.csv does not hold them).
FILLED = ("speedup", "payback_calls", "expectations", "surprises", "surprise_detail")


def _changed(d: Path, rows: list[dict]) -> set[str]:
    """Cells whose run.csv was written after ``d``'s runs.csv, or says other than its row there
    (``python -m study.cell.worker RUN_DIR`` rewrites a cell's run.csv)."""
    built = (d / "runs.csv").stat().st_mtime
    listed = {r["run_id"]: r for r in rows}
    out = set()
    for p in study_io.run_csvs(d):
        try:
            own = study_io.read_row(p)
        except study_io.Incomplete:
            continue  # said as a row that does not read whole
        row = listed.get(own["run_id"])
        keys = [k for k in own if k not in FILLED]
        if row is not None and (
            p.stat().st_mtime > built or not study_io.same_values(own, row, keys)
        ):
            out.add(own["run_id"])
    return out


def _cells(ids) -> str:
    return f"{len(ids)} cell{'s' if len(ids) > 1 else ''}"


def check_sweep(d: Path) -> None:
    """Rebuild ``d``'s runs.csv from its run dirs where they disagree (module doc); a dir
    without run dirs (committed results) is left as it is."""
    runs = study_io.run_csvs(d)
    if not runs:  # committed results: read as they are, if they are the study's rows
        rows, wrong = _rows(d / "runs.csv")
        lacks = [c for c in study_io.REQUIRED if rows and c not in rows[0]]
        if rows is None or lacks:
            why = f"is {wrong}" if rows is None else f"has no {', '.join(lacks)} column"
            raise NotASweep(f"{d}/runs.csv {why}: not rows the study wrote, and no run dir to "
                            "rebuild it from")  # fmt: skip
        return
    finished = finished_cells(d)
    if not finished:  # every run.csv cut short: whatever runs.csv says is no longer theirs
        raise SystemExit(
            f"analysis: no run.csv below {d} reads whole ({_names(p.parent.name for p in runs)}): "
            f"nothing to report; python -m study.rows.io {d} says why, resume=true runs them again"
        )
    why = _disagreement(d, finished)
    if not why:
        return
    verb = "built" if not (d / "runs.csv").exists() else "rebuilt"
    try:
        built = study_io.aggregate(d)
    except (OSError, csv.Error, KeyError, ValueError) as e:
        built, err = None, f"{type(e).__name__}: {e}"
    else:
        err = "no run dir's run.csv could be read"
    if built is None:
        rows, _ = _rows(d / "runs.csv")
        missing = set(finished) - {r["run_id"] for r in rows or ()}
        raise SystemExit(
            f"analysis: {why}, and it cannot be {verb} here ({err}); "
            + (f"missing: {_names(missing)}. " if missing else "")
            + f"Rebuild it where the sweep dir is writable: python -m study.rows.io {d}"
        )
    left = set(finished) - {r["run_id"] for r in _rows(d / "runs.csv")[0] or ()}
    print(f"[analysis] {why}: {verb} it from the run dirs"
          + (f", without {_names(left)} (study.rows.io could not read their files: the lines "
             "above say which)" if left else ""),
          file=sys.stderr)  # fmt: skip


def stop(command: str, e: Exception):
    """A user's mistake (a path that is no sweep, an --out that cannot be): one line, exit 2."""
    name = command if command.startswith("reference.") else f"analysis.{command}"
    print(f"{name}: {e}", file=sys.stderr)
    raise SystemExit(2)


def check_out(out: Path, flag: str = "--out") -> None:
    """Raise NotASweep when ``out`` cannot be a dir of the analysis's output: a file, or below
    one, or in a dir this user cannot write (a read-only sweep dir)."""
    p = Path(out)
    while not p.exists() and p != p.parent:
        p = p.parent
    if not p.is_dir():
        raise NotASweep(f"{flag} {out}: {p} is a file, not a dir: give a dir")
    if not os.access(p, os.W_OK | os.X_OK):
        raise NotASweep(f"cannot write in {p} (read-only): give {flag} DIR where you can write")


def _labels(dirs: list[Path]) -> list[str]:
    names = [d.resolve().name for d in dirs]
    if len(set(names)) == len(names):
        return names
    return ["/".join(d.resolve().parts[-2:]) for d in dirs]


def _tag(df: pd.DataFrame, label: str) -> None:
    if "source" not in df:  # a combined CSV from an earlier report keeps its own sources
        df.insert(0, "source", label)
    return df


# Versions are names, not numbers: CUDA "13.0" stays "13.0", cuDNN 91900 is not "91,900".
TEXT = {c: str for c in ("torch_version", "triton_version", "cuda_version", "cudnn_version",
                         "driver_version", "python_version", "git_rev", "code_hash",
                         "config_hash")}  # fmt: skip


def _read(path: Path) -> pd.DataFrame:
    """A CSV's rows, its text as it was given (``unguarded``)."""
    return unguarded(pd.read_csv(path, keep_default_na=True, dtype=TEXT).copy())


def _would_run(s: pd.Series) -> np.ndarray:
    """Where ``s`` holds text a spreadsheet would run as a formula (``study.rows.io.FORMULA``)
    and no number: the text ``study.rows.io`` writes with a leading '."""
    v = s.to_numpy()
    at = np.array([isinstance(x, str) and x.startswith(study_io.FORMULA) for x in v], bool)
    at[at] = pd.to_numeric(pd.Series(v[at], dtype=object), errors="coerce").isna().to_numpy()
    return at


def unguarded(df: pd.DataFrame) -> pd.DataFrame:
    """``df`` (in place) without the leading ' that guards text a spreadsheet would run: a
    variant named ``=1+1`` reads ``'=1+1`` in the CSVs (SCHEMA.md), ``=1+1`` in the report."""
    for c in df.select_dtypes(include="object").columns:
        v = df[c].to_numpy()
        had = np.array([isinstance(x, str) and x.startswith("'") for x in v], bool)
        bare = pd.Series([x[1:] for x in v[had]], dtype=object)
        had[had] = _would_run(bare)
        if had.any():
            df.loc[had, c] = [x[1:] for x in v[had]]
    return df


def guarded(df: pd.DataFrame) -> pd.DataFrame:
    """A copy of ``df`` with the leading ' back where its text would run in a spreadsheet: the
    CSVs the analysis writes guard it as the study's do."""
    out = df.copy()
    for c in out.select_dtypes(include="object").columns:
        at = _would_run(out[c])
        if at.any():
            out.loc[at, c] = ["'" + x for x in out[c].to_numpy()[at]]
    return out


def _kernels(path: Path, committed: bool) -> pd.DataFrame:
    """A kernels.csv's rows; none where it does not read whole (``study.rows.io.read_part``:
    cut short, garbled, a row without its run), with one line on stderr naming the file: its
    cell stays in the report without its kernels, and the rest of the report builds."""
    try:
        if not committed:  # a cell's own file, trusted as a resume trusts it
            study_io.read_part(path, "kernels")
        return _read(path)
    except (study_io.Incomplete, pd.errors.ParserError, pd.errors.EmptyDataError) as e:
        redo = "its kernels are not reported"
        if not committed:
            redo = "its cell is reported without its kernels; resume=true (or running it again)"
            redo += " rebuilds it"
        print(f"[analysis] leaving out {path}: it is incomplete ({e}); {redo}", file=sys.stderr)
        return pd.DataFrame()


def load(dirs: list[Path]) -> dict[str, pd.DataFrame]:
    """``runs`` (one row per cell), ``repeats`` (every runs.csv row), ``kernels``, ``ncu``,
    ``autotune``, ``shapes`` (shape sweeps, one row per shape), ``revealed``, and
    ``run_dirs``: (source, run_id) -> the cell's own dir, where its generated code and trace lie
    (sweep dirs only)."""
    # Long: every table of a study read and tidied in one pass, so that every figure sees the same
    # rows.
    runs, kernels, ncu, autotune, shapes = [], [], [], [], []
    where: dict[tuple[str, str], Path] = {}
    for d, label in zip(dirs, _labels(dirs), strict=True):
        check_sweep(d)
        r = _read(d / "runs.csv")
        _tag(r, label)
        runs.append(r)
        run_dirs = sorted(
            p.parent for p in d.glob("*/run.csv")
        )  # not report/, which has its own CSVs
        for rd in run_dirs:
            where[(label, rd.name)] = rd
        kfiles = [r / "kernels.csv" for r in run_dirs if (r / "kernels.csv").exists()]
        if not run_dirs and (d / "kernels.csv").exists():  # a committed results dir
            kfiles = [d / "kernels.csv"]
        for kf in kfiles:
            k = _kernels(kf, committed=not run_dirs)
            if len(k):
                _tag(k, label)
                kernels.append(k)
        # shape sweeps: the sweep dir (or a results dir) holds them all; else each cell's own
        sfiles = [d / "shapes.csv"] if (d / "shapes.csv").exists() else [
            r / "shapes.csv" for r in run_dirs if (r / "shapes.csv").exists()]  # fmt: skip
        for f in sfiles:
            x = _read(f)
            if len(x):
                shapes.append(_tag(x, label))
        for name, acc in (("ncu.csv", ncu), ("autotune.csv", autotune)):
            files = [r / name for r in run_dirs if (r / name).exists()]
            if not run_dirs and (d / name).exists():
                files = [d / name]
            for f in files:
                x = _read(f)
                if len(x):
                    _tag(x, label)
                    acc.append(x)
    out = {
        "runs": pd.concat(runs, ignore_index=True) if runs else pd.DataFrame(),
        "kernels": pd.concat(kernels, ignore_index=True) if kernels else pd.DataFrame(),
        "ncu": pd.concat(ncu, ignore_index=True) if ncu else pd.DataFrame(),
        "autotune": pd.concat(autotune, ignore_index=True) if autotune else pd.DataFrame(),
        "shapes": pd.concat(shapes, ignore_index=True) if shapes else pd.DataFrame(),
    }
    r = out["runs"]
    for c in NUMERIC + NEWER_NUMERIC:
        if c in r:
            r[c] = pd.to_numeric(r[c], errors="coerce")
    if "speedup" not in r or r["speedup"].isna().all():
        r = _speedups(r)
    out["repeats"] = r  # every row as written, repeats and all
    out["runs"] = cells(r)  # one row per cell
    k = _one_repeat(out["kernels"], out["runs"])
    out["kernels"] = k
    for c in (
        "calls_per_step",
        "us_per_step",
        "mean_us",
        "share",
        "occupancy_pct",
        "registers_per_thread",
    ):
        if c in k:
            k[c] = pd.to_numeric(k[c], errors="coerce")
    out["revealed"] = blog_table(out["runs"], out["kernels"])
    out["run_dirs"] = where
    return out


def _one_repeat(k: pd.DataFrame, runs: pd.DataFrame) -> pd.DataFrame:
    """Kernels of the repeat that stands for each cell (its first), so counts are not summed
    over repeats."""
    if k.empty or runs.empty:
        return k
    if "repeat" in k and k["repeat"].notna().any():
        first = k.groupby(["source", "run_id"])["repeat"].transform("min")
        k = k[k["repeat"].isna() | (k["repeat"] == first)]
    keep = runs[["source", "run_id"]].drop_duplicates()
    return k.merge(keep, on=["source", "run_id"]).reset_index(drop=True)


def _speedups(r: pd.DataFrame) -> pd.DataFrame:
    if r.empty:
        return r
    recs = r.astype(object).where(r.notna(), "").to_dict("records")
    recs = study_io.with_speedups(
        [{k: ("" if v is None else str(v)) for k, v in x.items()} for x in recs]
    )
    r["speedup"] = [x["speedup"] for x in recs]
    r["payback_calls"] = [x["payback_calls"] for x in recs]
    r["speedup"] = pd.to_numeric(r["speedup"], errors="coerce")
    r["payback_calls"] = pd.to_numeric(r["payback_calls"], errors="coerce")
    return r


def blog_table(runs: pd.DataFrame, kernels: pd.DataFrame) -> pd.DataFrame:
    """variant | compile | kernels per forward | latency | speedup | what the trace revealed."""
    if runs.empty:
        return pd.DataFrame()
    out = []
    for source, r in runs.groupby("source", sort=False):
        recs = r.astype(object).where(r.notna(), None).to_dict("records")
        recs = [{k: ("" if v is None else v) for k, v in x.items()} for x in recs]
        kr = kernels[kernels["source"] == source] if not kernels.empty else kernels
        # a column an older or hand-made kernels.csv lacks reads blank, never a KeyError
        kr = kr.reindex(columns=list(dict.fromkeys([*kr.columns, *columns("kernels")])))
        by_run = {}
        if not kr.empty:
            for x in kr.astype(object).where(kr.notna(), "").to_dict("records"):
                by_run.setdefault(x["run_id"], []).append({k: str(v) for k, v in x.items()})
        for row in revealed.table(recs, by_run):
            row["source"] = source
            out.append(row)
    return pd.DataFrame(out)
