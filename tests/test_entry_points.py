"""The entry points readers rely on: the subpackages' public functions, re-exported where documented."""

import subprocess
import sys


def test_stats_reexports_its_modules_functions():
    import rmlib.stats
    from rmlib.stats.agreement import rank_agreement

    assert rmlib.stats.rank_agreement is rank_agreement


def test_the_shims_of_the_first_layout_are_gone():
    import importlib

    import pytest

    for name in ("rmlib.scoring", "rmlib.store", "rmlib.gcg", "rmlib.datasets"):
        with pytest.raises(ModuleNotFoundError):
            importlib.import_module(name)


def test_score_command_still_answers():
    out = subprocess.run([sys.executable, "-m", "rmlib", "score", "--help"], capture_output=True, text=True)
    assert out.returncode == 0 and "--prompt" in out.stdout and "--tokens" in out.stdout
