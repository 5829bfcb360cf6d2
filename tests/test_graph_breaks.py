"""Graph breaks by registry code (study.observe.graph_breaks, analysis.report.graph_breaks):
a reason gets the code of its type, counts add up by code, and a torch without the registry
leaves the reasons as they were. No compile."""

import pandas as pd

from analysis.report import graph_breaks as by_code
from study.observe import graph_breaks

KINDS = {"Failed to trace builtin operator": "GB0059", "Unsupported method call": "GB0156"}
PRINT = "Failed to trace builtin operator\n  Explanation: Dynamo does not know how to trace print"


def test_a_reason_gets_the_code_of_its_type_and_codes_add_up():
    cols = graph_breaks.columns({PRINT: 2, "Unsupported method call\n  x": 1, "other": 3}, KINDS)
    assert cols["graph_break_codes"] == "GB0059 (x2) | GB0156 (x1)"
    reasons = cols["graph_break_reasons"].split(" | ")
    assert (
        reasons[0].startswith("GB0059: Failed to trace builtin operator") and "(x2)" in reasons[0]
    )
    assert reasons[2] == "other (x3)"  # no code: the reason as it was


def test_without_the_registry_nothing_is_coded():
    cols = graph_breaks.columns({PRINT: 1}, {})
    assert cols == {"graph_break_reasons": f"{PRINT} (x1)", "graph_break_codes": ""}


def test_this_torchs_registry_names_the_print_break():
    kinds = graph_breaks.registry()
    assert not kinds or graph_breaks.code(PRINT) == kinds["Failed to trace builtin operator"]


def test_the_report_sums_breaks_by_code_over_the_rows():
    a = {"variant": "naive_break", "compile": "default", **graph_breaks.columns({PRINT: 2}, KINDS)}
    b = {"variant": "mlp", "compile": "default", **graph_breaks.columns({PRINT: 1}, KINDS)}
    t = by_code(pd.DataFrame([a, b, {"variant": "x", "compile": "off"}]))
    (line,) = t.to_dict("records")
    assert line == {"code": "GB0059", "type": "Failed to trace builtin operator", "breaks": 3,
                    "cells": "mlp default, naive_break default"}  # fmt: skip
