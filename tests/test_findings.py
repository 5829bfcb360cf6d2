"""Every number in reference/h200/FINDINGS.md comes from the committed H200 CSVs."""

import pytest

from reference.findings.document import END, START, block, findings, full, write
from tests.conftest import ROOT

RESULTS = ROOT / "reference" / "h200"

# The tests below build on v1's sources (core, scaling, ncu); after the v2 run they live in
# reference/h200/v1, which keeps them.
V1 = ROOT / "reference" / "h200" / "v1"
if not (V1 / "runs.csv").exists():
    V1 = ROOT / "reference" / "h200"


def test_findings_md_matches_committed_results():
    expected = findings(RESULTS)
    assert block(RESULTS / "FINDINGS.md") == expected, (
        "reference/h200/FINDINGS.md is stale: regenerate with `python -m reference.h200 --write`"
    )


def test_the_h100_findings_match_its_rows_and_hold_only_its_sections():
    """reference/h100 holds start-up rows only: its Findings are that section, regenerated
    byte for byte (tables included), with no line for a source it never had."""
    from reference.findings.document import check

    h100 = ROOT / "reference" / "h100"
    assert check(h100) == 0, "reference/h100 is stale: `python -m reference.h100 --write`"
    text = block(h100 / "FINDINGS.md")
    assert text.lstrip().startswith("## What compiling costs before the first fast call")
    assert "needs source" not in text and "H200" not in text


def test_a_users_own_h100_dir_gets_every_section(tmp_path):
    """The start-up-only plan is reference/h100's, by path: a results dir a user names h100
    reads every section, each missing source said in one line."""
    import shutil

    from reference.findings.document import findings

    shutil.copytree(ROOT / "reference" / "h100" / "startup", tmp_path / "h100" / "startup")
    text = findings(tmp_path / "h100")
    assert "needs source" in text and "## What compiling costs before the first fast call" in text


def test_the_readme_links_the_findings_and_no_longer_holds_the_block():
    readme = (ROOT / "README.md").read_text()
    assert "reference/h200/FINDINGS.md" in readme
    assert START not in readme and END not in readme


def test_write_replaces_only_the_block(tmp_path):
    f = tmp_path / "FINDINGS.md"
    write(f, "- new\n")  # a missing file starts from the header
    assert block(f) == "- new\n" and f.read_text().startswith("# Findings\n")
    (tmp_path / "h100").mkdir()  # a user's dir named h100 is not reference/h100
    write(tmp_path / "h100" / "FINDINGS.md", "- new\n")
    head = (tmp_path / "h100" / "FINDINGS.md").read_text()
    assert head.startswith("# Findings\n") and f"reference.findings {tmp_path / 'h100'}" in head
    assert (
        (ROOT / "reference" / "h100" / "FINDINGS.md")
        .read_text()
        .startswith("# Findings on the H100")
    )
    f.write_text(f"intro\n\n{START}\nold\n{END}\n\nafter\n")
    write(f, "- one\n- two\n")
    assert f.read_text() == f"intro\n\n{START}\n- one\n- two\n{END}\n\nafter\n"
    assert block(f) == "- one\n- two\n"


def test_committed_results_are_csv_png_svg_md_only():
    """A GPU's folder of reference/ holds rows, figures and text; its one Python file is the
    entry that rebuilds its Findings (``python -m reference.h200``)."""
    entry = {RESULTS / "__init__.py", RESULTS / "__main__.py"}
    files = [f for f in RESULTS.rglob("*") if f not in entry and "__pycache__" not in f.parts]
    assert files
    # host_machines/m*/ keep each machine's survey, probe and boot id as the tools printed them
    logs = ROOT / "reference" / "h200" / "host_machines"
    assert all(f.suffix in {".csv", ".png", ".svg", ".md"} or (f.suffix == ".txt" and logs in f.parents)
               for f in files if f.is_file())  # fmt: skip


def _with_fake_sources(tmp_path):
    """The committed results plus a two-shape part1 and a scaling sweep, built from real rows."""
    import pandas as pd

    src = V1
    runs = pd.read_csv(src / "runs.csv")
    runs = runs[~runs["source"].isin(["part1", "scaling"])]  # replaced by the fakes below
    core = runs[(runs["source"] == "core") & (runs["variant"] == "matmul_add")]
    fake = []
    for n, scale in ((64, 0.1), (4096, 1.0)):
        for _, r in core.iterrows():
            r = r.copy()
            r["source"], r["n"] = "part1", n
            r["latency_median_us"] *= scale
            r["run_id"] = f"{r['run_id']}-n{n}"
            fake.append(r)
    naive = runs[(runs["source"] == "core") & (runs["variant"] == "naive")]
    eager = naive[naive["compile"] == "off"].iloc[0]
    for seq, status, kernels in ((512, "ok", 7), (16384, "ok", 70), (32768, "oom", None)):
        r = eager.copy()
        r["source"], r["seq_len"], r["status"], r["kernels_per_step"] = (
            "scaling",
            seq,
            status,
            kernels,
        )
        r["latency_median_us"] = 278343.2 if seq == 16384 else r["latency_median_us"]
        r["reason"] = (
            "OutOfMemoryError: CUDA out of memory. Tried to allocate 256.00 GiB."
            if status == "oom"
            else ""
        )
        r["run_id"] = f"scaling-{seq}"
        fake.append(r)
    out = tmp_path / "res"
    out.mkdir()
    pd.concat([runs, pd.DataFrame(fake)]).to_csv(out / "runs.csv", index=False)
    for f in ("kernels.csv", "ncu.csv"):
        (out / f).write_bytes((src / f).read_bytes())
    return out


def test_compile_table_keeps_shapes_apart_and_compares_within_one_sweep(tmp_path):
    text = full(_with_fake_sources(tmp_path))
    assert "| matmul_add (n=64) | default | part1 |" in text
    assert "| matmul_add (n=4096) | default | part1 | 3 → 2 | 217 → 173 | 1.25x | faster |" in text
    assert "| matmul_add | default | core |" not in text  # part1 comes first
    assert "matmul_add (n=4096) after 33,400 calls (default, 1.25x)" in text  # three figures


def test_payback_is_a_range_over_the_interval_and_not_quoted_when_it_spans_over_2x():
    from reference.findings.speed.forward import _payback, payback_text

    # eager 100 us, 1 s of compile: at 2x, 50 us saved a call, 20,000 calls
    def row(sp, lo, hi):
        return {"verdict": "faster", "sp_kind": "paired", "eager_us": 100.0, "compile_s": 1.0,
                "sp": sp, "sp_lo": lo, "sp_hi": hi}  # fmt: skip

    assert _payback(row(2.0, 1.9, 2.1)) == pytest.approx(
        (1e6 / (100 - 100 / 2.1), 1e6 / (100 - 100 / 1.9))
    )
    assert payback_text(_payback(row(2.0, 1.9, 2.1))) == "19,100–21,100"
    # mlp's 1.03x [1.00-1.05]: from 21,000 calls to never; not quoted
    assert _payback(row(1.03, 1.0, 1.05))[1] is None
    assert payback_text(_payback(row(1.03, 1.0, 1.05))) == (
        "may never pay back (its interval reaches 1x)"
    )
    assert "not quoted" in payback_text(_payback(row(1.1, 1.02, 1.2)))  # 60,000 to 510,000 calls
    assert _payback({**row(0.9, 0.8, 0.95), "verdict": "slower"}) is None


def test_scaling_section_gives_the_longest_run_and_the_first_oom(tmp_path):
    text = findings(_with_fake_sources(tmp_path))
    assert "| naive | off | 16384 | 278.34 | 7 → 70 | 32768 (asked for 256.00 GiB) |" in text
    assert "source `scaling`, seq_len 512–32768" in text
    assert "- Eager kernels per forward grow with length: naive 7 → 70 at seq_len 16384." in text


def test_no_scaling_section_without_a_scaling_source(tmp_path):
    import pandas as pd

    src = V1
    runs = pd.read_csv(src / "runs.csv")
    assert "source `scaling`" in findings(src)
    out = tmp_path / "res"
    out.mkdir()
    runs[runs["source"] != "scaling"].to_csv(out / "runs.csv", index=False)
    for f in ("kernels.csv", "ncu.csv"):
        (out / f).write_bytes((src / f).read_bytes())
    text = findings(out)
    assert "Attention over sequence length (source" not in text and "grow with length" not in text
    assert "Attention over sequence length: needs source `scaling`" in text
    # A results dir whose own sweeps lack it falls back to the previous study's, labelled so.
    (out / "v1").mkdir()
    runs.to_csv(out / "v1" / "runs.csv", index=False)
    text = full(out)
    assert "Attention over sequence length (source `v1/scaling`: v1's sweep" in text
    assert "| naive | off | 16384 |" in text


def test_claims_come_from_part3_once_it_has_every_eager_attention_variant():
    import pandas as pd

    from reference.findings.base.claims import claims_source

    runs = pd.read_csv(V1 / "runs.csv")
    assert claims_source(runs) == "part3"
    no_cudnn = (runs["source"] == "part3") & (runs["variant"] == "cudnn")
    assert claims_source(runs[~no_cudnn]) == "core"  # a part3 without cudnn cannot answer


def _claims_with(tmp_path, runs):
    src = V1
    tmp_path.mkdir(exist_ok=True)
    runs.to_csv(tmp_path / "runs.csv", index=False)
    for f in ("kernels.csv", "ncu.csv"):
        (tmp_path / f).write_bytes((src / f).read_bytes())
    return findings(tmp_path)


def test_cudnn_cpu_cost_is_judged_over_every_sweep_that_has_both_cells(tmp_path):
    import pandas as pd

    runs = pd.read_csv(V1 / "runs.csv")
    eager = runs["compile"] == "off"
    cud, fla = eager & (runs["variant"] == "cudnn"), eager & (runs["variant"] == "flash")
    runs.loc[cud, "cpu_us_per_step"], runs.loc[fla, "cpu_us_per_step"] = 300.0, 100.0
    text = _claims_with(tmp_path / "a", runs)
    assert "cuDNN has a CPU-side cost (about 214 µs of CPU a step in the blog" in text
    assert "at 1.2x flash's or more): **holds** in the trace" in text
    assert "300 vs 100 µs (`part3`), 300 vs 100 µs (`core`)" in text
    runs.loc[cud & (runs["source"] == "core"), "cpu_us_per_step"] = 50.0
    assert "**varies** between sweeps" in _claims_with(tmp_path / "b", runs)
    runs.loc[cud, "cpu_us_per_step"] = 50.0
    assert "or more): **differs**" in _claims_with(tmp_path / "c", runs)
    # v3 on the H200: 129 against 127 µs is no CPU-side cost of cuDNN's own; the threshold
    runs.loc[cud, "cpu_us_per_step"], runs.loc[fla, "cpu_us_per_step"] = 129.0, 127.0
    assert "or more): **differs**" in _claims_with(tmp_path / "d", runs)
    runs.loc[cud, "cpu_us_per_step"] = 127.0 * 1.15
    assert "or more): **differs**" in _claims_with(tmp_path / "e", runs)
    runs.loc[cud, "cpu_us_per_step"] = 127.0 * 1.25
    assert "or more): **holds**" in _claims_with(tmp_path / "f", runs)


def test_a_claims_name_comes_out_whole_where_its_verdict_changed_or_differs():
    """findings_v1 and findings_summary take a claim's name up to its first colon."""
    import re

    import pandas as pd

    from reference.findings.base.claims import cudnn_cpu_cost

    runs = pd.read_csv(V1 / "runs.csv")
    line = cudnn_cpu_cost(runs, None, "part3")
    name = re.sub(r"^- ", "", line.split(":", 1)[0])
    assert name.startswith("cuDNN has a CPU-side cost (") and name.endswith("or more)")


def test_math_slowdown_holds_only_near_the_blogs_3_7x(tmp_path):
    import pandas as pd

    src = V1
    for ratio, word in ((3.5, "**holds**"), (2.8, "**differs**"), (4.6, "**differs**")):
        runs = pd.read_csv(src / "runs.csv")
        eager = runs["compile"] == "off"
        for source in runs["source"].unique():
            at = eager & (runs["source"] == source)
            inplace = runs[at & (runs["variant"] == "naive_inplace")]["latency_median_us"]
            if len(inplace):
                runs.loc[at & (runs["variant"] == "math"), "latency_median_us"] = (
                    ratio * inplace.iloc[0]
                )
        out = tmp_path / str(ratio)
        out.mkdir()
        runs.to_csv(out / "runs.csv", index=False)
        for f in ("kernels.csv", "ncu.csv"):
            (out / f).write_bytes((src / f).read_bytes())
        line = next(x for x in findings(out).splitlines() if x.startswith("- math launches"))
        assert f"slowdown {word}: {ratio:.2f}x" in line, line
        assert ("than the blog's 3.7x" in line) is (word == "**differs**"), line


def test_between_sweeps_spread_is_split_into_gpu_and_host_bound():
    from reference.findings.document import _reproducibility

    rows = [
        {"label": "naive", "mode": "default", "all": [3.24, 3.29], "host_bound": False},
        {"label": "cudnn", "mode": "reduce-overhead", "all": [0.25, 0.57], "host_bound": True},
        {"label": "flash", "mode": "default", "all": [0.93], "host_bound": True},  # once only
    ]
    (text,) = [x for x in _reproducibility(rows) if x]
    assert "of the 2 comparisons measured more than once" in text
    assert "1 where the compiled cell is GPU-bound moved by at most 1.5% (naive default" in text
    assert "moved by at most 128.0% (cudnn reduce-overhead: 0.25–0.57x)" in text
    assert _reproducibility(rows[2:]) == []


def test_repeated_cells_with_paired_speedups(tmp_path):
    """part3 as the runtime now writes it: 3 repeats a cell, paired speedups (1.01x the
    cross-process ones here): one row per cell, and the paired number in the table."""
    import shutil

    import pandas as pd

    from tests import synth

    src = V1
    runs = pd.read_csv(src / "runs.csv")
    new = synth.with_new_columns(name="part3")["runs"]
    pd.concat([runs[runs["source"] != "part3"], new]).to_csv(tmp_path / "runs.csv", index=False)
    for f in ("kernels.csv", "ncu.csv"):
        shutil.copy(src / f, tmp_path / f)
    text = full(tmp_path)
    assert "speedup = paired: eager and compiled timed in alternating blocks in one process" in text
    # 1.01x the cross-process 0.933x; each repeat's interval 0.97-1.03x of it; the 3 repeats
    # agree, so the t-interval over them is their own errors alone, t_2 * se / sqrt(3) = 2.48
    # se against one repeat's 1.96 se
    # GPU-bound, per-call latency +7%: neither the host nor the lead-in alone; plain "slower"
    flash = "| flash | default | part3 | 1 → 1 | 96.8 → 104 | 0.942x [0.907–0.979] | slower | 3 runs: 0.942–0.942x |"
    assert flash in text
    assert "| 1.01x [0.973–1.05] | no measurable difference |" in text  # efficient default
    assert text.count("| naive | default | part3 |") == 1


def test_the_scope_names_versions_and_the_gauge_level_from_the_rows():
    import pandas as pd

    from reference.findings import scope

    runs = pd.DataFrame(
        [
            {"device": "cuda", "device_name": "NVIDIA H200", "torch_version": "2.11.0+cu130",
             "triton_version": "3.6.0", "source": "a", "gauge_fast_us": 13.1},
            {"device": "cuda", "device_name": "NVIDIA H200", "torch_version": "2.11.0+cu130",
             "triton_version": "3.6.0", "source": "b", "gauge_fast_us": 16.1},
            {"device": "cuda", "device_name": "NVIDIA H200", "torch_version": "2.12.0",
             "triton_version": "3.6.0", "source": "c", "gauge_fast_us": None},
        ]
    )  # fmt: skip
    (line, _) = scope.section({"runs": runs})
    assert "3 cells measured on NVIDIA H200 (torch 2.11.0+cu130, 2.12.0; Triton 3.6.0)" in line
    assert "read 13.1–16.1 µs in the 2 rows that record it (`a`, `b`)" in line
    assert "of the other rows, 1 ok rows predate the gauge" in line
    # a row that failed has no timing, so no gauge: it is not timed, not old
    failed = runs.assign(status=["ok", "ok", "oom"])
    failed = pd.concat([failed, failed.iloc[[2]].assign(status="unsupported")])
    (line, _) = scope.section({"runs": failed})
    assert "of the other rows, 2 were not timed (1 oom, 1 unsupported)." in line
    assert "predate" not in line


def test_the_summary_matches_committed_results_in_at_most_15_lines():
    from reference.findings import summary as findings_summary
    from reference.findings.base.common import read

    want = findings_summary.summary(read(ROOT / "reference" / "h200"))
    assert (
        findings_summary.block(ROOT / "reference" / "h200" / "SUMMARY.md") == "\n".join(want) + "\n"
    )
    assert 3 <= len(want) <= findings_summary.MAX_LINES
    assert "[FINDINGS.md](FINDINGS.md)" in want[0]  # beside SUMMARY.md


def test_the_summary_write_replaces_only_its_block(tmp_path):
    from reference.findings import summary as findings_summary

    f = tmp_path / "README.md"
    f.write_text(f"intro\n{findings_summary.START}\nold\n{findings_summary.END}\nafter\n")
    findings_summary.write(f, ["one", "- two"])
    assert f.read_text() == (
        f"intro\n{findings_summary.START}\none\n- two\n{findings_summary.END}\nafter\n"
    )


def test_version_facts_are_scoped_inline():
    # "sdpa is fastest" (it picks cuDNN on this torch and GPU), "flex beats flash"
    # (torch's FA2 kernel, not FA3), math's slowdown (FP32 GEMMs): each names its version
    text = block(ROOT / "reference" / "h200" / "FINDINGS.md")
    fastest = next(x for x in text.splitlines() if x.startswith("- flash is the fastest"))
    assert "A fact of torch 2.11.0+cu130 on NVIDIA H200" in fastest
    assert "not FlashAttention-3; unpinned, sdpa picks cudnn_attention" in fastest
    math = next(x for x in text.splitlines() if x.startswith("- math launches"))
    assert "A fact of torch 2.11.0+cu130: its math path runs these matmuls in FP32" in math
    flex = next(x for x in text.splitlines() if x.startswith("- flex latency over flash's"))
    assert "(flash: the FlashAttention-2 kernel built into torch 2.11.0+cu130" in flex


def test_a_cells_spread_names_the_runs_it_covers():
    """v3's cuDNN max-autotune-no-cudagraphs: a third process timed in the slow phase read
    0.452x; load leaves it out, and the spread says so instead of '3 runs'."""
    from reference.findings.base.common import spread_text

    row = {"n_repeats": 3, "n_repeats_ok": 3, "n_repeats_fast": 2, "sp_kind": "paired",
           "speedup_paired_min": 0.968, "speedup_paired_max": 0.994}  # fmt: skip
    assert spread_text(row) == "2 of 3 runs in the host's fast phase: 0.968–0.994x"
    assert spread_text({**row, "n_repeats_fast": 3}) == "3 runs: 0.968–0.994x"
    # none fast: load keeps the ok ones
    assert spread_text({**row, "n_repeats_fast": 0, "n_repeats_ok": 2}).startswith("2 of 3 runs ok")
    assert spread_text({**row, "n_repeats_fast": None}) == "3 runs: 0.968–0.994x"  # older rows
    assert spread_text({**row, "n_repeats": 1}) == ""
    # the third run failed, the other two were fast: left out as not ok, not by phase
    assert spread_text({**row, "n_repeats_ok": 2}) == "2 of 3 runs ok: 0.968–0.994x"
    one = {**row, "n_repeats_fast": 1, "speedup_paired_min": 0.97, "speedup_paired_max": 0.97}
    assert spread_text(one) == "1 of 3 runs in the host's fast phase: 0.970x"


def test_check_says_whether_the_block_is_what_the_csvs_give(tmp_path, capsys):
    from reference.findings import tables
    from reference.findings.document import check, generate

    text, files = generate(tmp_path)
    write(tmp_path / "FINDINGS.md", text)
    tables.write(tmp_path, files)
    assert check(tmp_path) == 0
    if files:  # a linked table edited by hand is stale too
        one = tmp_path / tables.DIR / sorted(files)[0]
        one.write_text(one.read_text() + "x\n")
        assert check(tmp_path) == 1
        tables.write(tmp_path, files)
    f = tmp_path / "FINDINGS.md"
    f.write_text(f.read_text().replace(END, f"one more line\n{END}"))
    assert check(tmp_path) == 1
    assert "is stale" in capsys.readouterr().out
