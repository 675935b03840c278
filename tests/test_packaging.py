"""rmlib installs as a plain (non-editable) wheel and works from another directory.

The wheel is built from this checkout and installed with ``--no-deps`` into a
temporary target folder; the test interpreter (which has the dependencies)
runs ``python -m rmlib`` from an unrelated directory with only that folder on
``PYTHONPATH``, so the package data (registry YAML, Big Two lists) must come
from the wheel, not from the checkout.
"""

import os
import pathlib
import re
import shutil
import subprocess
import sys
import zipfile

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
SUBCOMMANDS = ("score", "import-paper-csv", "chapter", "book", "bench")


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("wheel")
    # Build from a copy of the tracked files, so the checkout gets no build/ folder and an
    # untracked file cannot make the test pass.
    source = tmp / "source"
    files = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
    for name in filter(None, files.decode().split("\0")):
        if (ROOT / name).is_file():
            (source / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, source / name)
    build = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(tmp / "dist"),
         str(source)], capture_output=True, text=True)
    assert build.returncode == 0, build.stderr[-2000:]
    (wheel,) = (tmp / "dist").glob("rmlib-*.whl")
    target = tmp / "site"
    inst = subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "-q", "--target", str(target),
                           str(wheel)], capture_output=True, text=True)
    assert inst.returncode == 0, inst.stderr[-2000:]
    elsewhere = tmp / "elsewhere"
    elsewhere.mkdir()
    env = {**os.environ, "PYTHONPATH": str(target), "RMLIB_SCORES_DIR": str(tmp / "scores")}
    return wheel, target, elsewhere, env


def run(installed, *args):
    _, _, elsewhere, env = installed
    return subprocess.run([sys.executable, *args], cwd=elsewhere, env=env, capture_output=True, text=True,
                          timeout=600)


def test_wheel_holds_the_package_data(installed):
    wheel = installed[0]
    names = set(zipfile.ZipFile(wheel).namelist())
    for needed in ("rmlib/resources/reward_models.yaml", "rmlib/resources/bigtwo/agency.txt",
                   "rmlib/resources/bigtwo/communion.txt", "rmlib/resources/bigtwo/LICENSE",
                   "rmlib/resources/identity_terms/dixon2018.txt", "rmlib/resources/identity_terms/README.md",
                   "rmlib/resources/claims/facct2025.yaml", "rmlib/resources/claims/followup2026.yaml",
                   "rmlib/resources/claims/README.md",
                   "rmlib/engine/scorers.py", "rmlib/tables/store.py", "rmlib/book/sphinx_ext.py",
                   "rmlib/book/templates/static/webpack-macros.html", "rmlib/book/timings.py"):
        assert needed in names, needed
    meta = next(n for n in names if n.endswith(".dist-info/METADATA"))
    requires = [line for line in zipfile.ZipFile(wheel).read(meta).decode().splitlines()
                if line.startswith("Requires-Dist:")]
    assert any("torch" in r for r in requires) and any("transformers" in r for r in requires)


def test_installed_package_is_the_wheel_and_reads_its_data(installed):
    target = installed[1]
    code = ("import os, rmlib, pathlib; from rmlib import registry; from rmlib.tables.lexicons import bigtwo_lists; "
            "from rmlib.tables import findings; os.environ.pop('RMLIB_REFERENCE_DIR', None); "
            "print(pathlib.Path(rmlib.__file__).parent); print(len(registry.paper_models())); "
            "print(sorted(bigtwo_lists())); print(len(findings.load_findings()), len(findings.load_followup_findings()))")
    out = run(installed, "-c", code)
    assert out.returncode == 0, out.stderr
    where, n_models, lists, n_claims = out.stdout.splitlines()
    assert pathlib.Path(where).resolve() == (target / "rmlib").resolve()
    assert n_models == "10" and lists == "['agency', 'communion']" and n_claims == "17 27"  # the FAccT file adds identity_erasure (a Fig. 5B reading)


def test_help_lists_every_subcommand(installed):
    out = run(installed, "-m", "rmlib", "--help")
    assert out.returncode == 0, out.stderr
    usage = re.search(r"\{([a-z,-]+)\}", out.stdout)  # argparse's list of subcommands
    assert usage, out.stdout
    listed = set(usage.group(1).split(","))
    missing = [name for name in SUBCOMMANDS if name not in listed]
    assert not missing, f"{missing} missing from `python -m rmlib --help`"


def test_score_runs_from_the_installed_wheel(installed):
    out = run(installed, "-m", "rmlib", "score", "--model", "tiny:llama-classifier", "--prompt", "hi there",
              "--tokens", "0:8", "--no-progress", "--out", "tiny.parquet")
    assert out.returncode == 0, out.stderr[-2000:]
    import pandas as pd

    table = pd.read_parquet(installed[2] / "tiny.parquet")
    assert list(table["token_id"]) == list(range(8)) and table["score"].notna().all()
