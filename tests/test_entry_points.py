"""Public entry points that readers rely on keep working after the move into subpackages:
the old paths are the new objects."""

import subprocess
import sys


def test_old_paths_are_the_new_objects():
    import rmlib.datasets
    import rmlib.gcg
    import rmlib.scoring
    import rmlib.stats
    import rmlib.store
    from rmlib.engine import gcg, scorers
    from rmlib.stats.agreement import rank_agreement
    from rmlib.tables import datasets, store

    assert rmlib.scoring.load_scorer is scorers.load_scorer
    assert rmlib.store.score_vocabulary is store.score_vocabulary
    assert rmlib.store.score_texts is store.score_texts
    assert rmlib.gcg.run is gcg.run and rmlib.gcg.GCGConfig is gcg.GCGConfig
    assert rmlib.datasets.eloeverything is datasets.eloeverything
    assert rmlib.stats.rank_agreement is rank_agreement


def test_score_command_still_answers():
    out = subprocess.run([sys.executable, "-m", "rmlib", "score", "--help"], capture_output=True, text=True)
    assert out.returncode == 0 and "--prompt" in out.stdout and "--tokens" in out.stdout
