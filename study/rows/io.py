"""CSV writing and sweep aggregation. Every write is atomic: a temp file, then a rename.

A run dir's ``run.csv`` is written last, so its presence means the cell finished (with any
status). The sweep's ``runs.csv`` is rebuilt from the run dirs' ``run.csv`` files under a
file lock each time a cell ends; it can always be rebuilt again (``python -m study.rows.io DIR``).
Speedup and payback are filled in here, against the eager row of the same configuration.
"""

# Long: writing a row and trusting one read back are one concern (what read_whole accepts is
# what write_csv writes), shared by the sweep, resume and the analysis.

from __future__ import annotations

import csv
import fcntl
import os
import sys
from contextlib import contextmanager
from io import StringIO
from pathlib import Path

from study.rows import expect, metrics, revealed
from study.rows.schema import SHAPE_KEYS, columns

# Columns that must match for a compiled row to be compared with an eager one.
PAIR_KEYS = (
    "variant",
    "device",
    "dtype",
    "pass",
    "regime",
    *SHAPE_KEYS,
    "layers",
    "causal",
    "mask",
    "score_mod",
    "host",
)


def base_row(p: dict, run_id: str) -> dict:
    """A cell's row before it is measured, from its config alone, as plain data
    (study.config.cell_config.to_plain; no torch: the sweep writes it for a cell that wrote
    none, in the sweep's own process, which never imports torch)."""
    c = p["compile"]
    return {
        "run_id": run_id,
        "variant": p["variant"]["name"],
        "family": p["family"]["name"],
        "compile": c["mode"],
        "fullgraph": c["fullgraph"],
        "dynamic": c["dynamic"],
        "inductor_patches": ";".join(f"{k}={v}" for k, v in sorted(c["inductor"].items())),
        "compile_threads": c.get("threads"),
        "pass": p["pass"]["kind"],
        "regime": regime if (regime := (p.get("regime") or {}).get("name")) != "none" else None,
        "model_kind": p["variant"].get("kind"),
        "model_library": p["variant"].get("library"),
        "compiled_autograd": c.get("compiled_autograd"),
        "freezing": c.get("freezing"),
        "compile_stance": c.get("stance", "default") if c["mode"] != "off" else None,
        "regional": True if c.get("regional") and c["mode"] != "off" else None,
        "layers": depth(p),
        "device": p["device"],
        "dtype": p["dtype"],
        "cache": p["cache"],
        "start": p.get("start", "cold") if c["mode"] != "off" else None,
        "seed": p["seed"],
        "repeat": p.get("repeat"),
        "causal": p["family"]["causal"] if p["family"]["name"] == "attention" else None,
        "status": "error",
        "reason": "",
        "expect": expect.block_of(p),
    }


def depth(p: dict) -> int | None:
    """The depth a cell's config asks for: the block's shape.layers, a model's
    variant.kwargs.layers; None where it asks for none, or for one block (a workload's own
    default depth, as every cell before depths was)."""
    n = (p["variant"].get("kwargs") or {}).get("layers")
    if p["family"].get("name") == "block":
        n = (p.get("shape") or {}).get("layers")
    return n if isinstance(n, int) and n > 1 else None


FORMULA = ("=", "+", "-", "@", "\t", "\r")  # what a spreadsheet runs as a formula


def _cell(v):
    if v is None:
        return ""
    if isinstance(v, float):
        return repr(v) if v == v else ""
    if isinstance(v, str) and v.startswith(FORMULA) and _num(v) is None:
        return "'" + v  # text, not a formula, where a spreadsheet opens it (SCHEMA.md)
    return v


def write_csv(path: Path, rows: list[dict], table: str) -> Path:
    """Write rows atomically with the schema's columns; unknown keys are a bug and raise."""
    cols = columns(table)
    for r in rows:
        extra = set(r) - set(cols)
        if extra:
            raise KeyError(f"{table}: columns not in study/rows/schema.py: {sorted(extra)}")
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with open(tmp, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=cols)
        w.writeheader()
        for r in rows:
            w.writerow({k: _cell(r.get(k)) for k in cols})
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    return path


def same_values(a: dict, b: dict, keys) -> bool:
    """Two rows agree on ``keys``, as numbers where they are numbers (a CSV pandas wrote says
    1024.0 where the study wrote 1024)."""

    def norm(v):
        try:
            return float(v)
        except (TypeError, ValueError):
            return v or ""

    return all(norm(a.get(k)) == norm(b.get(k)) for k in keys)


def read_csv(path: Path) -> list[dict]:
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


# What a run.csv row must hold to be trusted: every row, and by status. (A cell writes its
# row before the sweep adds config_hash: a resume asks for that too, study.sweep.rundir.why_rerun.)
REQUIRED = ("run_id", "status", "variant", "compile")
REQUIRED_BY_STATUS = {"ok": ("latency_median_us",)}  # any other status: ``reason``


class Incomplete(ValueError):
    """A run.csv that does not parse whole: cut short, or missing what its status needs."""


def read_whole(path: Path) -> list[dict]:
    """The rows of a CSV, trusted only if it parses whole: it ends with its line break and
    every row has as many fields as the header. Raises Incomplete, saying why."""
    try:
        text = Path(path).read_text()
    except (OSError, UnicodeDecodeError) as e:
        raise Incomplete(f"unreadable ({e})") from None
    if not text.endswith("\n"):
        raise Incomplete("it is cut short (no line break at its end)")
    try:
        rows = list(csv.DictReader(StringIO(text), restkey="\0extra", restval=None))
    except csv.Error as e:
        raise Incomplete(f"it does not parse ({e})") from None
    for i, row in enumerate(rows, start=2):
        if "\0extra" in row or None in row.values():
            raise Incomplete(f"its row {i} has another number of fields than its header")
    return rows


def read_row(path: Path) -> dict:
    """The one row of a cell's ``run.csv``, trusted only if it reads whole (``read_whole``)
    and every column its status needs is filled (``REQUIRED``; ok: a latency, any other
    status: a reason). Columns the schema no longer has (rows of older versions) are dropped.
    Raises Incomplete, saying why."""
    rows = read_whole(path)
    if len(rows) != 1:
        raise Incomplete(f"it holds {len(rows)} rows, not one")
    (row,) = rows
    need = REQUIRED + REQUIRED_BY_STATUS.get(row.get("status") or "", ("reason",))
    empty = [c for c in need if not row.get(c)]
    if empty:
        raise Incomplete(f"its {row.get('status') or 'row'} row has no {', '.join(empty)}")
    lat = _num(row.get("latency_median_us")) if row["status"] == "ok" else 1.0
    if lat is None or not 0 < lat < float("inf"):
        raise Incomplete(f"its latency_median_us {row['latency_median_us']!r} is no time")
    known = set(columns("runs"))
    return {k: v for k, v in row.items() if k in known}


def _num(v):
    try:
        return float(v)
    except (TypeError, ValueError):
        return None


@contextmanager
def locked(path: Path):
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def run_csvs(sweep_dir: Path) -> list[Path]:
    """Every finished cell's run.csv below a sweep dir (job dirs are one level down)."""
    sweep_dir = Path(sweep_dir)
    found = sorted(sweep_dir.glob("*/run.csv"))
    if (sweep_dir / "run.csv").exists():
        found.insert(0, sweep_dir / "run.csv")
    return found


def _key(r: dict):
    """The eager twin's identity: its config_hash where rows have one (eager_hash on compiled
    rows), else the columns that must match (older rows)."""
    if r.get("config_hash"):
        return r["config_hash"] if r.get("compile") == "off" else r.get("eager_hash")
    return tuple(r.get(k, "") for k in PAIR_KEYS)


def with_speedups(rows: list[dict]) -> list[dict]:
    """Fill speedup from the eager row with the same configuration (the median over its
    repeats): a ratio across processes, unlike speedup_paired; and payback_calls, from the
    paired blocks' µs where the row has them, else from that ratio's two latencies."""
    import statistics

    lat: dict = {}
    for r in rows:
        if r.get("compile") == "off" and r.get("status") == "ok":
            lat.setdefault(_key(r), []).append(_num(r.get("latency_median_us")))
    eager = {k: statistics.median(v) for k, v in lat.items() if None not in v}
    for r in rows:
        base = eager.get(_key(r))
        mine = _num(r.get("latency_median_us"))
        ok = r.get("status") == "ok"
        r["speedup"] = metrics.speedup(base, mine) if ok else None
        pe, pc = _num(r.get("eager_latency_paired_us")), _num(r.get("compiled_latency_paired_us"))
        if pe and pc:  # the paired blocks' µs: the ones the speedup comes from
            base, mine = pe, pc
        r["payback_calls"] = (
            metrics.payback_calls(_num(r.get("compile_s")), base, mine)
            if ok and r.get("compile") != "off"
            else None
        )
    return rows


def read_part(path: Path, table: str) -> list[dict]:
    """A cell's ``kernels.csv`` or ``shapes.csv`` (none: []), trusted only if it reads whole and
    every row names its run: the schema's columns only. Raises Incomplete, saying why."""
    if not Path(path).exists():
        return []
    rows = read_whole(path)
    if rows and not all(r.get("run_id") for r in rows):
        raise Incomplete("its rows have no run_id (a header cut or garbled?)")
    known = set(columns(table))
    return [{k: v for k, v in r.items() if k in known} for r in rows]


def read_cell(run_csv: Path) -> tuple[dict, list[dict], list[dict]]:
    """A finished cell's row, kernels and shapes. Raises Incomplete, naming the bad file."""
    parts = []
    for name, read in (("run.csv", read_row), ("kernels.csv", lambda p: read_part(p, "kernels")),
                       ("shapes.csv", lambda p: read_part(p, "shapes"))):  # fmt: skip
        try:
            parts.append(read(Path(run_csv).with_name(name)))
        except Incomplete as e:
            raise Incomplete(f"its {name} is incomplete ({e})") from None
    return tuple(parts)


def aggregate(sweep_dir: Path) -> Path | None:
    """``rebuild``'s runs.csv: its path, or None when no cell's files read whole."""
    return rebuild(sweep_dir)[0]


def rebuild(sweep_dir: Path) -> tuple[Path | None, list[Path]]:
    """Rebuild ``<sweep>/runs.csv`` from the run dirs (atomic, under a lock); (its path or None,
    the run dirs left out). A cell whose run.csv, kernels.csv or shapes.csv does not read whole
    is left out, with a line naming the file (the sweep's summary names it again; resume runs
    it again). With no cell left, an older runs.csv keeps its header only: its rows are no
    longer those of the run dirs."""
    sweep_dir = Path(sweep_dir)
    with locked(sweep_dir / ".runs.lock"):
        rows, kernels, shapes, skipped = [], {}, [], []
        for p in run_csvs(sweep_dir):
            try:
                row, ks, sh = read_cell(p)
            except Incomplete as e:
                print(f"[study] skipping {p.parent}: {e}; resume=true runs it again",
                      file=sys.stderr)  # fmt: skip
                skipped.append(p.parent)
                continue
            rows.append(row)
            for k in ks:
                kernels.setdefault(k["run_id"], []).append(k)
            shapes += sh
        if not rows:
            if (sweep_dir / "runs.csv").exists():
                write_csv(sweep_dir / "runs.csv", [], "runs")
            return None, skipped
        rows = with_speedups(rows)  # read_row kept the schema's columns only
        rows = expect.check(rows, kernels)  # predictions need the sweep's other rows
        out = write_csv(sweep_dir / "runs.csv", rows, "runs")
        write_csv(sweep_dir / "revealed.csv", revealed.table(rows, kernels), "revealed")
        if shapes or (sweep_dir / "shapes.csv").exists():
            write_csv(sweep_dir / "shapes.csv", shapes, "shapes")
        return out, skipped


def main(argv: list[str]) -> int:
    """``python -m study.rows.io SWEEP_DIR``: 0 when every finished cell is in runs.csv, else 1
    (each cell left out is named)."""
    if len(argv) != 1 or argv[0].startswith("-") or not Path(argv[0]).is_dir():
        print("usage: python -m study.rows.io SWEEP_DIR   (rebuilds SWEEP_DIR/runs.csv from its "
              "run dirs; SWEEP_DIR is an existing dir such as outputs/sweeps/<time>)",
              file=sys.stderr)  # fmt: skip
        return 2
    out, skipped = rebuild(Path(argv[0]))
    if skipped:
        print(f"[study] {len(skipped)} cell(s) left out of {argv[0]}/runs.csv (named above): "
              "resume=true runs them again", file=sys.stderr)  # fmt: skip
    print(out or f"no run.csv below {argv[0]}")
    return 1 if skipped else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
