"""benchmarks/host_check.py: the host-over-latency ratios it prints, raw and at equal host
speed, and a row above its latency p90 that still reports a host figure is caught."""

import pandas as pd

from benchmarks import host_check


def _rows(tmp_path, status: str):
    r = pd.DataFrame(
        {
            "variant": ["resnet18", "gpt2", "naive"],
            "compile": ["default", "off", "default"],
            "status": ["ok", "ok", "ok"],
            "device": ["cuda", "cuda", "cpu"],
            "latency_median_us": [1000.0, 500.0, 100.0],
            "latency_p90_us": [1050.0, 520.0, 110.0],
            "host_units": [80.0, 20.0, 50.0],
            "host_block_us": [1500.0, 300.0, 900.0],  # the blocks ran in a slow phase
            "timing_gauge_us": [15.0, 15.0, 15.0],
            "host_status": [status, "measured", "measured"],
        }
    )
    r.to_csv(tmp_path / "runs.csv", index=False)
    return tmp_path


def test_the_ratios_are_raw_and_at_the_timed_calls_host_speed(tmp_path):
    r = host_check.ratios(host_check.rows([_rows(tmp_path, "above_latency")]))
    assert list(r["variant"]) == ["resnet18", "gpt2"]  # the CPU row has no host figure
    assert r["raw"].tolist() == [1.5, 0.6]
    assert r["equal_speed"].tolist() == [1.2, 0.6]  # 80 x 15 / 1000, 20 x 15 / 500
    assert not r["unflagged"].any()


def test_a_row_above_its_latency_still_reported_fails_the_check(tmp_path, capsys):
    assert host_check.main([str(_rows(tmp_path, "above_latency"))]) == 0
    assert host_check.main([str(_rows(tmp_path, "measured"))]) == 1
    out = capsys.readouterr().out
    assert "at equal host speed 1.2" in out and "still reported: 1" in out
