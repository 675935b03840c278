"""The Makefile points at the reference data folder only where it exists (``make -n``: nothing runs)."""

import pathlib
import shutil
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]


def _dry_run(tmp_path: pathlib.Path, target: str, with_shared: bool) -> str:
    make = shutil.which("make")
    if make is None:
        pytest.skip("make not installed")
    repo = tmp_path / ("with" if with_shared else "without") / "repo"
    repo.mkdir(parents=True)
    shutil.copy(ROOT / "Makefile", repo / "Makefile")
    for name in ("requirements.txt", "pyproject.toml"):  # the venv's prerequisites (nothing installs: -n)
        (repo / name).write_text("")
    if with_shared:
        (repo.parent / "shared" / "data").mkdir(parents=True)
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}  # no RMLIB_* from the test run
    out = subprocess.run([make, "-n", target], cwd=repo, env=env, capture_output=True, text=True)
    return out.stdout + out.stderr


@pytest.mark.parametrize("with_shared", [False, True])
def test_book_uses_the_reference_folder_only_where_it_exists(tmp_path, with_shared):
    out = _dry_run(tmp_path, "book", with_shared)
    line = next(ln for ln in out.splitlines() if "rmlib.book all" in ln)
    shared = tmp_path / "with" / "shared" / "data"
    expected = f'RMLIB_DATA_DIR="${{RMLIB_DATA_DIR:-{shared if with_shared else ""}}}"'
    assert line.startswith(expected)
    assert "RMLIB_OFFLINE" not in line  # a user's book downloads what is missing


def test_test_names_the_reference_folder_and_offline_mode(tmp_path):
    out = _dry_run(tmp_path, "test", False)
    line = next(ln for ln in out.splitlines() if "pytest" in ln)
    assert f"RMLIB_DATA_DIR={tmp_path / 'without' / 'shared' / 'data'} RMLIB_OFFLINE=1 " in line
