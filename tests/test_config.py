"""Every config group composes; bad input fails at start with a message naming the key."""

import pytest
from omegaconf import OmegaConf

from study.config.cell_config import COMPILE_MODES
from study.config.rules import validate
from study.errors import ConfigError
from study.workloads.registry import get, names, variant_yaml
from tests.conftest import ROOT, TINY, cli, compose

VARIANTS = sorted(p.stem for p in (ROOT / "conf" / "variant").glob("*.yaml"))
MODES = sorted(p.stem for p in (ROOT / "conf" / "compile").glob("*.yaml"))


def _custom(stem: str) -> bool:
    """A YAML for the user's own factory (it has variant.target), not a registered variant."""
    return "target" in OmegaConf.load(ROOT / "conf" / "variant" / f"{stem}.yaml").variant


def test_variant_yaml_and_registry_agree():
    yamls = {v for v in VARIANTS if not _custom(v)}
    missing = [n for n in names() if n not in yamls]
    assert not missing, "\n\n".join(
        f"variant {n!r} is registered but has no YAML: add conf/variant/{n}.yaml with\n"
        + variant_yaml(get(n))
        for n in missing
    )
    stray = sorted(yamls - set(names()))
    assert not stray, (
        f"conf/variant/{stray[0]}.yaml names variant {stray[0]!r}, which no family module "
        "registers: register a builder with @register in study/workloads/, or name your own "
        "factory with variant.target (docs/workloads.md, 'Add a workload')"
    )
    assert {
        "matmul_add",
        "linear",
        "mlp",
        "naive",
        "naive_inplace",
        "math",
        "efficient",
        "flash",
        "cudnn",
        "sdpa",
        "block",
    } <= set(VARIANTS)
    assert sorted(MODES) == sorted(COMPILE_MODES)


def test_the_missing_yaml_message_gives_the_file_and_its_content():
    text = variant_yaml(get("block"))
    assert text == (ROOT / "conf" / "variant" / "block.yaml").read_text()
    assert "- /family: block" in text and "name: block" in text


def _pairs():
    """Every variant under eager and Inductor, and every compile target on one variant: the
    groups compose independently, so the full cross (14 x 10) would test nothing more."""
    return sorted(
        {(v, m) for v in VARIANTS for m in ("off", "default")} | {("naive", m) for m in MODES}
    )


@pytest.mark.parametrize("variant, mode", _pairs())
def test_every_group_composes(variant, mode):
    bare = (
        OmegaConf.load(ROOT / "conf" / "variant" / f"{variant}.yaml").variant.get("target") is None
    )
    extra = ["variant.target=examples.norm_mlp.NormMLP", *TINY] if _custom(variant) and bare else []
    cfg = compose(f"variant={variant}", f"compile={mode}", *extra)
    validate(cfg)
    assert cfg.compile.mode == mode
    if _custom(variant):
        return
    assert cfg.variant.name == variant and cfg.family.name == get(variant).family
    assert cfg.family.shapes.cpu is not None and cfg.family.shapes.cuda is not None


def test_overrides_reach_the_config():
    cfg = compose(
        "variant=flash",
        "shape.seq_len=512",
        "dtype=fp16",
        "device=cpu",
        "+compile.inductor.coordinate_descent_tuning=true",
        "compile=default",
    )
    assert cfg.shape.seq_len == 512 and cfg.dtype.name == "fp16" and cfg.device.name == "cpu"
    assert cfg.compile.inductor == {"coordinate_descent_tuning": True}


@pytest.mark.parametrize(
    "override,key",
    [
        ("shape.seq_len=0", "shape.seq_len"),
        ("shape.head_dim=-8", "shape.head_dim"),
        ("compile.mode=turbo", "compile.mode"),
        ("timing.calls=1", "timing.calls"),
        ("timing.graph_calls=0", "timing.graph_calls"),
        ("tolerance=0", "tolerance"),
        ("ncu.top_n=0", "ncu.top_n"),
        ("shape_sweep.key=n", "shape_sweep.sizes"),
    ],
)
def test_bad_values_raise_config_error_naming_the_key(override, key):
    cfg = compose(override)
    with pytest.raises(ConfigError, match=key.replace(".", r"\.")):
        validate(cfg)


@pytest.mark.parametrize(
    "override, said",
    [
        ("timeout_s=nan", "timeout_s=nan is not allowed: it must be a finite number."),
        ("timeout_s=1e9", "timeout_s=1000000000.0 is not allowed: it must be > 0 and at most"),
        ("cpu_mem_limit_gb=nan", "cpu_mem_limit_gb=nan is not allowed: it must be a finite"),
        ("cpu_mem_limit_gb=1e30", "cpu_mem_limit_gb=1e+30 is not allowed: it must be 0 (no cap)"),
        ("cpu_mem_limit_gb=-5", "cpu_mem_limit_gb=-5.0 is not allowed: it must be 0 (no cap)"),
        ("seed=99999999999999999999", "seed=99999999999999999999 is not allowed: it must be an "),
        ("seed=-1", "seed=-1 is not allowed"),
        ("timing.block_ms=inf", "timing.block_ms=inf is not allowed: it must be a finite number"),
        ("timing.block_ms=9000", "timing.block_ms=9000.0 is not allowed: one block must fit in"),
        ("timing.max_s=1000", "timing.max_s=1000.0 is not allowed: it must be under timeout_s"),
        ("pass.lr=nan", "pass.lr=nan is not allowed: it must be a finite number."),
        ("pass.lr=-1", "pass.lr=-1.0 is not allowed: AdamW's learning rate must be > 0."),
        ("repeats=100000000", "repeats=100000000 is not allowed: from 1 to 1000 fresh"),
        ("timing.calls=10000000000", "timing.calls=10000000000 is too large: at most 2147483647"),
        ("family.softcap=inf", "family.softcap=inf is not allowed: it must be a finite number."),
        ("shape.layers=100000000", "shape.layers=100000000 is not allowed: from 1 to 1024 blocks"),
    ],
)
def test_every_value_is_finite_and_in_range_naming_the_key(override, said):
    with pytest.raises(ConfigError) as e:
        validate(compose("+experiment=tiny", "variant=naive", override))
    assert str(e.value).startswith(said) and "\n" not in str(e.value)


def test_the_bounds_leave_a_default_and_a_no_cap_alone():
    for ok in ("cpu_mem_limit_gb=0", "cpu_mem_limit_gb=2", "seed=4294967295", "pass=train_step"):
        assert validate(compose("+experiment=tiny", "variant=naive", ok)) is None


def test_a_shape_sweep_over_a_key_the_variant_lacks_is_refused():
    cfg = compose("variant=flash", "shape_sweep.key=n", "shape_sweep.sizes=[64,128]")
    from study.workloads.check import check_config

    assert "variant 'flash' has no such shape key" in check_config(cfg)


@pytest.mark.slow
def test_cli_unknown_variant_lists_the_choices():
    r = cli("variant=nope")
    assert r.returncode != 0
    assert "variant" in r.stderr and "flash" in r.stderr and "naive_inplace" in r.stderr


@pytest.mark.slow
def test_cli_bad_dtype_and_wrong_type_fail_at_start():
    r = cli("dtype=fp64")
    assert r.returncode != 0 and "dtype" in r.stderr and "bf16" in r.stderr
    r = cli("shape.batch=abc")
    assert r.returncode != 0 and "shape.batch" in r.stderr


@pytest.mark.slow
def test_cli_zero_size_fails_before_any_cell_runs(tmp_path):
    r = cli("shape.seq_len=0", f"out_root={tmp_path}")
    assert r.returncode != 0
    assert "shape.seq_len=0 is not allowed" in r.stderr
    assert not list(tmp_path.rglob("run.csv"))


@pytest.mark.slow
def test_cli_unknown_inductor_key_fails_at_start(tmp_path):
    r = cli("compile=default", "+compile.inductor.no_such_knob=1", f"out_root={tmp_path}")
    assert r.returncode != 0 and "no_such_knob" in r.stderr


def test_resolved_config_round_trips(tmp_path):
    from study.config.cell_config import load_cell_config, to_plain

    cfg = compose("variant=mlp", "compile=max-autotune")
    p = tmp_path / "cell.yaml"
    OmegaConf.save(OmegaConf.create(to_plain(cfg)), p)
    back = load_cell_config(str(p))
    assert back.variant.name == "mlp" and back.compile.mode == "max-autotune"


REMOVED_KEYS = [
    ("timing.repeat=7", "timing.repeat was removed: give timing.calls instead."),
    ("step.kind=fwd_bwd", "step was removed: give pass.kind and pass.lr instead"),
    ("step.lr=0.01", "step was removed: give pass.kind and pass.lr instead"),
    ("isolation=inline", "isolation was removed: every cell runs in its own process"),
]


@pytest.mark.parametrize("override, says", REMOVED_KEYS)
def test_a_removed_key_is_refused_naming_what_replaced_it(override, says):
    """timing.repeat (now timing.calls), step.* (now pass.*) and isolation are out of the
    schema: given, set or added, each is one line naming its replacement."""
    from study.config.check import composition_error
    from study.workloads.check import check_config

    with pytest.raises(Exception) as e:
        compose(override)
    assert composition_error(e.value).startswith(says), composition_error(e.value)
    assert (check_config(compose(f"+{override}")) or "").startswith(says)


@pytest.mark.slow
def test_cli_removed_key_exits_2_with_one_line():
    r = cli("-m", "isolation=inline")
    assert r.returncode == 2, r.stderr[-800:]
    line = "[study] config error: isolation was removed: every cell runs in its own process"
    assert line in r.stderr and "python -m pdb -m study.cell.worker RUN_DIR" in r.stderr
    assert "Traceback" not in r.stderr


def test_a_cell_keeps_its_identity_under_the_names_it_was_first_hashed_by():
    """config_hash hashes timing.calls as timing.repeat and pass.* as step.*, the names cells
    were first hashed by: a resume of a sweep made before the renames keeps its finished
    cells, and reference/h200's rows keep their config_hash."""
    from study.config.cell_config import to_plain
    from study.config.identity import config_hash

    new = to_plain(compose("timing.calls=7", "pass=fwd_bwd"))
    old = to_plain(compose("timing.calls=7", "pass=fwd_bwd"))
    old["timing"]["repeat"] = old["timing"].pop("calls")  # as a cell.yaml before the renames
    old["step"] = old.pop("pass")
    assert config_hash(new) == config_hash(old)
    assert config_hash(to_plain(compose("timing.calls=8", "pass=fwd_bwd"))) != config_hash(new)
    assert config_hash(to_plain(compose("timing.calls=7", "pass=fwd"))) != config_hash(new)
    # the hash of the default cell, as every release since the renames has given it
    assert config_hash(to_plain(compose())) == "3e528f280c2f4889"


def test_the_pass_is_pass_kind():
    """pass=... sets pass.kind; a bad kind is said by its key."""
    cfg = compose("pass=train_step")
    assert cfg["pass"].kind == "train_step" and cfg["pass"].lr == 1e-3
    validate(cfg)
    with pytest.raises(ConfigError, match=r"^pass\.kind='bwd' is not a pass"):
        validate(compose("pass.kind=bwd"))
    with pytest.raises(ConfigError, match=r"^timing\.calls=2 is too few"):
        validate(compose("timing.calls=2"))


def test_a_resume_may_change_exactly_the_keys_a_cells_identity_leaves_out():
    """One list (identity.NOT_IDENTITY) says both what config_hash skips and which overrides a
    resume may change; the sweep dir kept a second list, which had drifted from it."""
    from hydra.core.override_parser.overrides_parser import OverridesParser

    from study.config.identity import NOT_IDENTITY, changed_overrides, fixed_overrides, measured

    assert not any(measured(k) for k in NOT_IDENTITY)
    assert not any(measured(k) for k in ("hydra/launcher", "+expect.status", "expect.flash.x"))
    assert all(measured(k) for k in ("variant", "compile", "shape.n", "+family.window"))
    parse = OverridesParser.create().parse_overrides
    old = fixed_overrides(parse(["variant=naive,flash", "dtype=bf16", "timeout_s=60"]))
    assert old == {"variant": ["<swept>"], "dtype": ["bf16"]}
    new = fixed_overrides(parse(["variant=math", "dtype=fp16", "resume=true", "cores=0-3"]))
    assert changed_overrides(old, new) == ["dtype was bf16, is fp16 now"]
    assert changed_overrides(old, {}) == [
        "dtype=bf16 is missing now",
        "variant=<swept> is missing now",
    ]
    # a sweep.yaml written before the one list kept calibration_file, which changes nothing
    saved = {**old, "calibration_file": ["/tmp/c.json"]}
    assert changed_overrides(saved, old) == []


def test_a_row_names_the_timing_settings_its_cell_changed():
    """timing.host_sleep_ms=5,40 makes two cells whose other columns match: the row's
    timing_overrides tells them apart, and reads empty at the defaults."""
    from study.config.cell_config import first_row

    row = first_row(compose(*TINY, "variant=naive", "timing.host_sleep_ms=40", "timing.pairs=12"),
                    "r")  # fmt: skip
    assert row["timing_overrides"] == "calls=5;host_sleep_ms=40.0;max_s=0.25;pairs=12;warmup=1"
    assert first_row(compose("variant=naive"), "r")["timing_overrides"] == ""  # the defaults


def test_a_timing_key_the_cpu_never_reads_does_not_split_a_cpu_cell():
    """Issue 68: timing.host_sleep_ms=10 made another CPU cell than 5 (the CPU measures no host
    time), and its row another timing_overrides; on CUDA it is another cell."""
    from study.config.cell_config import first_row, to_plain
    from study.config.identity import config_hash

    def cell(*o):
        plain = to_plain(compose("+experiment=tiny", "variant=naive", *o))
        return config_hash(plain), first_row(OmegaConf.create(plain), "x")["timing_overrides"]

    base, sleep = cell("device=cpu"), cell("device=cpu", "timing.host_sleep_ms=10")
    assert base == sleep and "host_sleep_ms" not in sleep[1]
    assert cell("device=cpu", "timing.host_blocks=3") == base
    assert cell("device=cuda")[0] != cell("device=cuda", "timing.host_sleep_ms=10")[0]
    assert cell("device=cpu", "timing.calls=7")[0] != base[0]  # a key the CPU reads still does
