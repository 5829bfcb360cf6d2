"""Predict, then look: expectations from config, checked against every row, surprises first.

The seed series' method is to predict what the trace should show, look, and treat a mismatch as
the insight. An ``expect`` block (a variant's YAML, or ``+expect.<column>=<value>`` on the
command line) writes the prediction down; the sweep checks it against every row it applies to.

    expect:
      kernels_per_step: 6          # a runs.csv column (SCHEMA.md) and a value
      copies_per_step: ">=1"       # =, <, <=, >, >=
      latency_vs.naive_inplace: 3..4.5   # a range, both ends included
      dominant_kernel: "~flash_fwd"      # a regular expression (searched)
      host_bound: false
      compiled:                    # a scope: eager (compile=off), compiled, a mode, a pass,
        kernels_per_step: "<7"     # a device (cuda, cpu), a shape ("seq_len=1024"); they nest

On the command line, quote what Hydra's grammar would read itself:
``'+expect.generated_per_step=">=1"'``, ``'+expect.dominant_kernel="~flash_fwd"'``.

Besides the columns, two figures that need the sweep's other rows: ``latency_vs.<variant>``,
this row's per-call latency over that variant's in the same sweep (same mode, pass, dtype,
device and shape), and ``latency_rank``, 1 for the fastest ok row of its family among those.

A row gets ``expectations`` (how many were checked), ``surprises`` (how many broke) and
``surprise_detail`` (each broken one: expected, measured, and for kernel counts the classes
behind the count). An expectation on a blank value (ncu columns without ncu, a speedup of an
eager row) is not checked, never broken. Pure: no torch, numbers and strings in and out.
"""

# Long: the prediction language (parse, scopes, derived columns) and its check against rows are one
# grammar sharing its helpers.

from __future__ import annotations

import difflib
import json
import re
from dataclasses import dataclass

from study.rows.schema import NON_NUMERIC, SHAPE_KEYS, columns, unit

EAGER, COMPILED = "eager", "compiled"
PASSES = ("fwd", "fwd_bwd", "train_step")
DEVICES = ("cuda", "cpu")
DERIVED = ("latency_rank",)
DERIVED_PREFIX = "latency_vs."
OPS = ("<=", ">=", "<", ">", "=")
NUMBER = re.compile(r"^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$")


class ExpectError(ValueError):
    """An expectation that cannot be checked: unknown column, or a value of the wrong type."""


@dataclass(frozen=True)
class Expectation:
    column: str
    text: str  # as written
    op: str  # one of OPS, "range" or "regex"
    value: object  # a float, a (low, high) pair, a bool, a str or a compiled pattern
    scope: tuple[str, ...] = ()

    def label(self) -> str:
        return ".".join((*self.scope, self.column))


def shape_scope(key: str) -> tuple[str, str] | None:
    """'seq_len=1024' -> ('seq_len', '1024'): a scope on one shape (YAML keys; not on the
    command line, where Hydra reads the '=')."""
    k, eq, v = key.partition("=")
    return (k, v) if eq and k in SHAPE_KEYS and NUMBER.match(v) else None


def is_scope(key: str, modes) -> bool:
    """eager, compiled, a pass, a device, a shape (``seq_len=1024``) or a compile mode (any
    name when ``modes`` is None: a row's block was checked against the real modes at start)."""
    if key in (EAGER, COMPILED, *PASSES, *DEVICES) or shape_scope(key):
        return True
    return "=" not in key and (modes is None or key in modes)


def is_derived(column: str) -> bool:
    """A figure computed over the sweep's rows (latency_rank, latency_vs.<variant>)."""
    return column in DERIVED or column.startswith(DERIVED_PREFIX)


def kind(column: str) -> str:
    """'bool', 'text' or 'number': how a column's values compare."""
    if is_derived(column):
        return "number"
    if unit("runs", column) == "bool":
        return "bool"
    return "text" if column in NON_NUMERIC else "number"


def _number(s: str, column: str, text: str) -> float:
    if not NUMBER.match(s.strip()):
        raise ExpectError(f"expect.{column}={text!r}: {s.strip()!r} is not a number")
    return float(s)


def one(column: str, value, scope: tuple[str, ...] = ()) -> Expectation:
    """Parse one expectation; raises ExpectError naming the column and, for an unknown one,
    the nearest column names."""
    known = columns("runs")
    if column not in known and not is_derived(column):
        near = difflib.get_close_matches(column, [*known, *DERIVED], n=4, cutoff=0.6)
        hint = f"; nearest: {', '.join(near)}" if near else ""
        raise ExpectError(f"expect.{column}: no such runs.csv column (SCHEMA.md){hint}")
    k, text = kind(column), str(value)
    if isinstance(value, bool):
        if k != "bool":
            raise ExpectError(f"expect.{column}={value}: {column} is a {k} column, not true/false")
        return Expectation(column, text, "=", value, scope)
    if isinstance(value, (int, float)):
        if k != "number":
            raise ExpectError(f"expect.{column}={value}: {column} is a {k} column")
        return Expectation(column, text, "=", float(value), scope)
    s = text.strip()
    if s.startswith("~"):
        try:
            return Expectation(column, text, "regex", re.compile(s[1:]), scope)
        except re.error as e:
            raise ExpectError(f"expect.{column}={text!r}: not a regular expression ({e})") from e
    if ".." in s and not s.startswith(OPS):
        lo, _, hi = s.partition("..")
        if k != "number":
            raise ExpectError(f"expect.{column}={text!r}: a range needs a number column")
        a, b = _number(lo, column, text), _number(hi, column, text)
        if a > b:
            raise ExpectError(f"expect.{column}={text!r}: the range's low end is above its high")
        return Expectation(column, text, "range", (a, b), scope)
    op = next((o for o in OPS if s.startswith(o)), "=")
    rest = s[len(op) :].strip() if s.startswith(op) else s
    if k == "number":
        return Expectation(column, text, op, _number(rest, column, text), scope)
    if op != "=":
        raise ExpectError(f"expect.{column}={text!r}: {column} is a {k} column: use = or ~regex")
    if k == "bool":
        if rest.lower() not in ("true", "false"):
            raise ExpectError(f"expect.{column}={text!r}: {column} is true or false")
        return Expectation(column, text, "=", rest.lower() == "true", scope)
    return Expectation(column, text, "=", rest, scope)


def parse(block: dict | None, modes=None) -> list[Expectation]:
    """Every expectation of an ``expect`` block, with its scope; raises ExpectError."""
    out: list[Expectation] = []

    def walk(d: dict, scope: tuple[str, ...]):
        for key, value in (d or {}).items():
            key = str(key)
            if key == "latency_vs" and isinstance(value, dict):  # +expect.latency_vs.<variant>
                walk({f"{DERIVED_PREFIX}{v}": x for v, x in value.items()}, scope)
            elif isinstance(value, dict):
                if key in columns("runs") or is_derived(key):  # a column given a mapping
                    raise ExpectError(
                        f"expect.{'.'.join((*scope, key))}={_flat(value)}: {key} is a column, "
                        f"and takes {TAKES[kind(key)]}, not a mapping"
                    )
                if not is_scope(key, modes):
                    every = ", ".join([EAGER, COMPILED, *modes, *PASSES, *DEVICES, "seq_len=N"])
                    raise ExpectError(
                        f"expect.{'.'.join((*scope, key))}: {key!r} is no column and no scope; a "
                        f"scope is one of {every}"
                    )
                walk(value, (*scope, key))
            else:
                out.append(one(key, value, scope))

    walk(block or {}, ())
    return out


TAKES = {"number": "a number (e.g. 1, '>=1', '<2.5', '~1.2')", "bool": "true or false",
         "text": "a text (e.g. ok)"}  # fmt: skip


def _flat(d: dict) -> str:
    """A mapping as the user typed it: ``{a:1}``."""
    return "{" + ",".join(f"{k}:{v}" for k, v in d.items()) + "}"


def applies(e: Expectation, row: dict) -> bool:
    mode, step = row.get("compile"), row.get("pass") or "fwd"
    for s in e.scope:
        if s == EAGER and mode != "off":
            return False
        if s == COMPILED and mode == "off":
            return False
        if s in PASSES and step != s:
            return False
        if s in DEVICES and row.get("device") != s:
            return False
        if (shape := shape_scope(s)) is not None:
            if not _same(row.get(shape[0]), shape[1]):
                return False
        elif s not in (EAGER, COMPILED, *PASSES, *DEVICES) and mode != s:
            return False
    return True


def _value(v, k: str):
    if v is None or (isinstance(v, float) and v != v) or (isinstance(v, str) and not v.strip()):
        return None
    if k == "number":
        try:
            x = float(v)
        except (TypeError, ValueError):
            return None
        return None if x != x else x
    if k == "bool":
        return str(v).strip().lower() in ("true", "1", "1.0")
    return str(v)


def holds(e: Expectation, measured) -> bool | None:
    """True, False, or None when the row has no value to check."""
    m = _value(measured, kind(e.column))
    if m is None:
        return None
    if e.op == "regex":
        return bool(e.value.search(str(measured)))
    if e.op == "range":
        return e.value[0] <= m <= e.value[1]
    if isinstance(e.value, float):
        return {
            "=": abs(m - e.value) <= 1e-9 * max(1.0, abs(e.value)),
            "<": m < e.value,
            "<=": m <= e.value,
            ">": m > e.value,
            ">=": m >= e.value,
        }[e.op]
    return m == e.value


SAME = ("source", "repeat", "compile", "pass", "dtype", "device", *SHAPE_KEYS)


def _peers(row: dict, rows: list[dict]) -> list[dict]:
    """ok rows of the same sweep, repeat, mode, pass, dtype, device, family and shape."""
    keys = (*SAME, "family")
    same = [r for r in rows if r.get("status") == "ok"]
    return [r for r in same if all(_same(r.get(k), row.get(k)) for k in keys)]


def _same(a, b) -> bool:
    """Equal as CSV text or as numbers ('1024' and 1024.0), blank and None alike."""
    a, b = (None if x is None or x == "" or x != x else x for x in (a, b))
    if a is None or b is None:
        return a is b
    try:
        return float(a) == float(b)
    except (TypeError, ValueError):
        return str(a) == str(b)


def derived(e: Expectation, row: dict, rows: list[dict]):
    lat = _value(row.get("latency_median_us"), "number")
    if lat is None or row.get("status") != "ok":
        return None
    if e.column == "latency_rank":
        peers = [_value(r.get("latency_median_us"), "number") for r in _peers(row, rows)]
        return 1 + sum(1 for x in peers if x is not None and x < lat)
    other = e.column[len(DERIVED_PREFIX) :]
    twins = [
        r
        for r in rows
        if r.get("variant") == other
        and r.get("status") == "ok"
        and all(_same(r.get(k), row.get(k)) for k in SAME)
    ]
    base = _value(twins[0].get("latency_median_us"), "number") if twins else None
    return lat / base if base else None


def _fmt(v) -> str:
    if isinstance(v, float):
        return f"{v:.4g}"
    return str(v)


def _why(e: Expectation, row: dict, kernels: list[dict]) -> str:
    """What is behind a broken kernel count: the classes of the kernels counted."""
    if e.column not in ("kernels_per_step", "copies_per_step", "generated_per_step"):
        return ""
    by: dict[str, float] = {}
    for k in kernels:
        if e.column == "copies_per_step" and k.get("kernel_class") != "copy":
            continue
        if e.column == "generated_per_step" and str(k.get("generated")) != "True":
            continue
        n = _value(k.get("calls_per_step"), "number") or 0.0
        by[k.get("kernel_class") or "?"] = by.get(k.get("kernel_class") or "?", 0.0) + n
    if not by:
        return f" ({row['kernels_by_class']})" if row.get("kernels_by_class") else ""
    return " (" + ", ".join(f"{c} {n:g}" for c, n in sorted(by.items(), key=lambda x: -x[1])) + ")"


def evaluate(row: dict, rows: list[dict]) -> list[tuple[Expectation, object, bool]]:
    """Each prediction of ``row`` that applies to it and has a value: (expectation, measured,
    held). ``rows``: the sweep's rows, for the figures that need others."""
    spec = row.get("expect")
    if not spec or not isinstance(spec, str):
        return []
    out = []
    for e in parse(json.loads(spec)):
        if not applies(e, row):
            continue
        measured = derived(e, row, rows) if is_derived(e.column) else row.get(e.column)
        ok = holds(e, measured)
        if ok is not None:
            shown = measured if e.op == "regex" else _value(measured, kind(e.column))
            out.append((e, shown, ok))
    return out


def check(rows: list[dict], kernels_by_run: dict[str, list[dict]]) -> list[dict]:
    """Each row with ``expectations``, ``surprises`` and ``surprise_detail`` filled from its
    ``expect`` column (the cell's block, as JSON); rows without one are left as they are."""
    out = []
    for row in rows:
        if not row.get("expect"):
            out.append(row)
            continue
        try:
            seen = evaluate(row, rows)
        except (ValueError, ExpectError) as e:  # checked at start; a hand-edited row says so
            out.append({**row, "surprise_detail": f"expect not readable: {e}"})
            continue
        kernels = kernels_by_run.get(row["run_id"], [])
        broken = [
            f"{e.label()}: expected {e.text}, measured {_fmt(m)}" + _why(e, row, kernels)
            for e, m, ok in seen
            if not ok
        ]
        out.append(
            {
                **row,
                "expectations": len(seen),
                "surprises": len(broken),
                "surprise_detail": "; ".join(broken),
            }
        )
    return out


def block_of(cfg_plain: dict) -> str:
    """The row's ``expect`` column: the cell's block as compact JSON ('' when empty)."""
    block = cfg_plain.get("expect") or {}
    return json.dumps(block, sort_keys=True, separators=(",", ":")) if block else ""
