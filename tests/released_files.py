"""Synthetic files in the paper's released format, pinned in rmlib's data registry for a test.

``git hash-object`` is the independent implementation of the git blob id that
pins each released file upstream.
"""

import dataclasses
import pathlib
import shutil
import subprocess

import pytest

from rmlib.tables import data_files


def git_blob(path: pathlib.Path) -> str:
    git = shutil.which("git")
    if git is None:
        pytest.skip("git not installed (needed as the independent blob-id implementation)")
    return subprocess.run([git, "hash-object", "--no-filters", str(path)], check=True,
                          capture_output=True, text=True).stdout.strip()


def write_pinned(df, key: str, folder: pathlib.Path, monkeypatch) -> pathlib.Path:
    """Write ``df`` as the authors did (``to_csv(index=False)``) where registry entry ``key`` expects it
    under ``folder`` (the test's RMLIB_DATA_DIR), and pin the entry to the file's git blob id."""
    path = folder / data_files.REGISTRY[key].path
    path.parent.mkdir(parents=True, exist_ok=True)
    df.to_csv(path, index=False)
    monkeypatch.setitem(data_files.REGISTRY, key, dataclasses.replace(data_files.REGISTRY[key], git_blob=git_blob(path)))
    return path
