"""rmlib.files: a file is written whole or not at all, and a failed write leaves nothing behind."""

import pytest

from rmlib.files import atomic_path, atomic_write


def test_atomic_write_replaces_the_file_whole(tmp_path):
    target = tmp_path / "sub" / "record.json"
    assert atomic_write(target, "é first") == target  # the folder is made
    assert target.read_text(encoding="utf-8") == "é first"
    atomic_write(target, b"\x00second")
    assert target.read_bytes() == b"\x00second"
    assert sorted(p.name for p in target.parent.iterdir()) == ["record.json"]  # no temporary file left


def test_a_failed_write_keeps_the_old_file_and_removes_the_temporary_one(tmp_path):
    target = tmp_path / "table.parquet"
    target.write_text("old")
    with pytest.raises(RuntimeError, match="writer failed"):
        with atomic_path(target) as tmp:
            assert tmp.parent == target.parent and tmp != target
            tmp.write_text("half")
            raise RuntimeError("writer failed")
    assert target.read_text() == "old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["table.parquet"]
    with pytest.raises(TypeError):
        atomic_write(target, 3)  # neither text nor bytes: nothing written
    assert target.read_text() == "old" and len(list(tmp_path.iterdir())) == 1


def test_atomic_writes_get_the_mode_an_ordinary_write_gets(tmp_path):
    import os
    import stat

    from rmlib.files import current_umask

    old = os.umask(0o027)
    try:
        assert current_umask() == 0o027
        plain = tmp_path / "plain.txt"
        plain.write_text("x")  # an ordinary write, for comparison
        new = atomic_write(tmp_path / "new.txt", "x")
        assert stat.S_IMODE(new.stat().st_mode) == stat.S_IMODE(plain.stat().st_mode) == 0o640
        with atomic_path(tmp_path / "table.bin") as tmp:
            tmp.write_bytes(b"\x01")
        assert stat.S_IMODE((tmp_path / "table.bin").stat().st_mode) == 0o640
        os.umask(0o022)
        assert stat.S_IMODE(atomic_write(tmp_path / "other.txt", "y").stat().st_mode) == 0o644
        os.chmod(new, 0o600)  # a file the user made private stays private when replaced, as with open(.., "w")
        atomic_write(new, "z")
        assert stat.S_IMODE(new.stat().st_mode) == 0o600 and new.read_text() == "z"
    finally:
        os.umask(old)
