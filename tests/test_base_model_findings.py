"""Chapter 6's finding templates (stats.followup_claims.*_finding), fed with hand-made test tables
and, for the training runs, with the authors' released training summaries."""

import pandas as pd
import pytest

from rmlib.stats import followup_claims as fc

TESTS = pd.DataFrame({"category": ["Agency", "Agency", "Communion", "Communion"],
                      "framing": ["positive", "negative"] * 2, "diff": [3.25, -1.5, -2.0, 0.5],
                      "p_welch_bonf": [0.001, 0.04, 0.2, 0.0004], "p_perm_units_bonf": [0.08, 0.5, 1.0, 0.04]})
LMM = pd.DataFrame({"term": ["Intercept", "family[T.Llama]", "family[T.Llama]:category[T.Communion]",
                             "family[T.Llama]:category[T.Communion]:framing[T.negative]"],
                    "t": [10.0, 1.0, -2.0, 7.25], "df": [1064, 8, 1064, 1064], "p": [0, 0.3, 0.04, 1e-6]})


def test_direction_finding_names_the_better_family_and_the_three_way_term():
    text = fc.direction_finding(TESTS, LMM)
    assert "Agency/positive: Llama ranks them better by 3.2" in text  # diff > 0: Llama's ranks better
    assert "Communion/positive: Gemma ranks them better by 2.0" in text
    assert text.endswith("t(1064) = 7.25, p < 0.001.")


def test_unit_finding_counts_each_unit_of_analysis():
    text = fc.unit_finding(TESTS)
    assert "3 of 4 panels differ by family after Bonferroni (Welch p from 0.0004 to 0.2)" in text
    assert "with the RM as the unit, 1 of 4 do (smallest adjusted p 0.04)" in text
    assert "0 of 4 do" in fc.unit_finding(TESTS, alpha=0.01)


def test_mfd_finding_lists_the_panels_whose_verdict_changes():
    other = TESTS.assign(p_welch_bonf=[0.001, 0.5, 0.01, 0.0004])
    text = fc.mfd_finding({"authors": TESTS, "all": other})
    assert "3 of 4 panels with the authors terms; 3 of 4 panels with the all terms" in text
    assert text.endswith("changes with the term set in Agency/negative, Communion/positive.")
    assert fc.mfd_finding({"a": TESTS, "b": TESTS}).endswith("in no panel.")


def test_training_finding_on_the_released_runs():
    from rmlib.tables import followup

    gaps = fc.training_gaps(fc.final_checkpoints(followup.training_ranks()))
    text = fc.training_finding(gaps)
    bt = gaps[gaps["method"] == "BT"]
    turned = sorted(set(bt.loc[bt["gap"] <= 0, "run"]))
    for run in set(bt["run"]):
        assert run in text
    assert ("turns over in" in text) == bool(turned)
    for run in turned:
        assert text.index(run) > text.index("turns over in")
    assert text.startswith("Last checkpoint of the authors' Bradley-Terry runs")


def test_training_finding_by_hand():
    gaps = pd.DataFrame({"run": ["a", "a", "b", "b"], "method": "BT", "data_size": [10, 10, 100, 100],
                         "category": ["Agency", "Communion"] * 2, "gap": [1.0, 2.0, -3.0, 0.5]})
    assert fc.training_finding(gaps) == ("Last checkpoint of the authors' Bradley-Terry runs: each family ahead on "
                                         "its category in a (10k pairs); the gap turns over in b (100k pairs: "
                                         "Agency -3.0, Communion +0.5).")
