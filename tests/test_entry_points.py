"""The entry points readers rely on: the subpackages' public functions, re-exported where documented."""

import subprocess
import sys


def test_stats_reexports_its_modules_functions():
    import rmlib.stats
    from rmlib.stats.agreement import rank_agreement

    assert rmlib.stats.rank_agreement is rank_agreement


def test_stats_exports_every_public_name_of_every_module_and_nothing_else():
    """The package's names are its submodules' ``__all__`` (imported here, independently of the map it
    reads from their source): none left out, none that no submodule exports."""
    import importlib
    import pathlib

    import rmlib.stats

    expected = {}
    for path in sorted(pathlib.Path(rmlib.stats.__file__).parent.glob("*.py")):
        if path.stem != "__init__":
            module = importlib.import_module(f"rmlib.stats.{path.stem}")
            expected.update({name: getattr(module, name) for name in module.__all__})
    assert sorted(expected) == rmlib.stats.__all__
    assert all(getattr(rmlib.stats, name) is value for name, value in expected.items())
    assert {"compare_printed", "table2", "live_taus", "text_sentiment"} <= set(expected)  # once left out by hand


def test_the_shims_of_the_first_layout_are_gone():
    import importlib

    import pytest

    for name in ("rmlib.scoring", "rmlib.store", "rmlib.gcg", "rmlib.datasets"):
        with pytest.raises(ModuleNotFoundError):
            importlib.import_module(name)


def test_score_command_still_answers():
    out = subprocess.run([sys.executable, "-m", "rmlib", "score", "--help"], capture_output=True, text=True)
    assert out.returncode == 0 and "--prompt" in out.stdout and "--tokens" in out.stdout
