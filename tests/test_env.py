"""study.config.env: what a row says about the code and machine that made it."""

from study.config import env


def _tree(root, study="x = 1\n", conf="a: 1\n"):
    (root / "study").mkdir(parents=True, exist_ok=True)
    (root / "conf").mkdir(exist_ok=True)
    (root / "study" / "m.py").write_text(study)
    (root / "conf" / "c.yaml").write_text(conf)
    return root


def test_code_hash_follows_the_measuring_code_and_nothing_else(tmp_path):
    a = env.hash_tree(_tree(tmp_path / "a"))
    assert a == env.hash_tree(_tree(tmp_path / "b"))  # same files, another place
    assert a != env.hash_tree(_tree(tmp_path / "c", study="x = 2\n"))
    assert a != env.hash_tree(_tree(tmp_path / "d", conf="a: 2\n"))
    same = _tree(tmp_path / "e")
    (same / "README.md").write_text("results and notes change between sessions\n")
    (same / "study" / "m.pyc").write_bytes(b"\0")
    assert env.hash_tree(same) == a
    assert env.hash_tree(tmp_path / "empty") is None


def test_this_checkouts_code_hash_is_twelve_hex():
    h = env.code_hash()
    assert len(h) == 12 and int(h, 16) >= 0


def test_boot_id_names_this_boot_and_says_dash_where_unreadable(monkeypatch):
    from pathlib import Path

    from study.config import env

    f = Path("/proc/sys/kernel/random/boot_id")
    if f.exists():
        assert env.boot_id() == f.read_text().strip()[:8] and len(env.boot_id()) == 8

    def unreadable(self, *a, **k):
        raise OSError("no procfs")

    monkeypatch.setattr(Path, "read_text", unreadable)
    assert env.boot_id() == "-"
