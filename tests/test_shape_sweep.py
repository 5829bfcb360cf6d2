"""study.cell.shape_sweep on a stand-in cell: what shapes.csv says of its first shape."""

from __future__ import annotations

from types import SimpleNamespace

from omegaconf import OmegaConf

from study.cell import shape_sweep
from study.rows import io


def _cell(tmp_path, mode):
    cfg = OmegaConf.create({"shape_sweep": {"key": "seq_len", "sizes": [16]},
                            "timing": {"warmup": 1, "calls": 3},
                            "compile": {"dynamic": None}})  # fmt: skip
    row = {"run_id": f"compile={mode},variant=naive", "variant": "naive", "first_call_s": 0.1}
    return SimpleNamespace(cfg=cfg, row=row, step=lambda: None, device="cpu", mode=mode,
                           kind="fwd", run_dir=tmp_path)  # fmt: skip


def test_the_eager_rows_first_shape_is_not_marked_compiled(tmp_path, monkeypatch):
    """shapes.csv said compiled=True for the eager row's own shape: nothing compiles in eager."""
    from study.observe import inductor

    monkeypatch.setattr(
        inductor, "metrics", lambda: {"graphs": 1, "recompiles": 0, "recompile_reasons": ""}
    )
    for mode, want in (("off", "False"), ("default", "True")):
        d = tmp_path / mode
        d.mkdir()
        shape_sweep.run(_cell(d, mode))
        (x,) = io.read_csv(d / "shapes.csv")
        assert x["compiled"] == want, (mode, x)
