"""A compiled-only sweep still gets an answer (analysis.tables.swept): issue 68's
'compile=default start=cold,artifacts' report had no "The answer" section. No process."""

import pandas as pd

from analysis.tables import swept


def _rows():
    base = {"source": "s", "variant": "block", "family": "block", "compile": "default",
            "status": "ok", "pass": "fwd", "device": "cpu", "speedup_ci_low": 0.9,
            "speedup_ci_high": 1.1, "eager_latency_paired_us": 600.0,
            "compiled_latency_paired_us": 580.0, "timing_phase": "fast"}  # fmt: skip
    return pd.DataFrame([
        {**base, "run_id": f"start={s},regional={g}", "start": s, "regional": g,
         "speedup_paired": 600 / 580, "first_call_s": f, "compile_s": f - 0.5}
        for s, g, f in (("cold", False, 20.0), ("artifacts", False, 11.8),
                        ("cold", True, 6.0), ("artifacts", True, 3.0))
    ])  # fmt: skip


def test_a_compiled_only_sweep_sets_each_cell_against_its_default_in_one_axis():
    a = swept.answer(_rows())
    assert len(a) == 4 and a["cell"].is_unique
    art = a[a["cell"].str.contains("start artifacts") & a["cell"].str.contains("regional off")]
    (text,) = art["against"]
    assert text.startswith("start artifacts against cold: first call 20.0 s → 11.8 s")
    both = a[a["cell"].str.contains("start artifacts") & a["cell"].str.contains("regional on")]
    (text,) = both["against"]
    assert "start artifacts against cold: first call 6.00 s → 3.00 s" in text
    assert "regional on against off: first call 11.8 s → 3.00 s" in text
    assert set(a["µs a call"]) == {"600 eager → 580 compiled (paired blocks)"}


def test_cells_the_eager_twin_answer_gave_are_left_out():
    r = _rows()
    assert len(swept.answer(r, skip=list(r["run_id"][:3]))) == 1
    assert swept.answer(r[r["compile"] == "off"]).empty
