"""rmlib.stats.searches: the searches' summary and the framing of their answers, against hand counts."""

import math

import numpy as np
import pandas as pd
import pytest

from rmlib import stats


def results(**cols):
    base = {"prompt": ["best", "best", "worst"], "length": [2, 2, 2], "direction": ["max", "min", "max"],
            "best_text": ["good joy", "bad war", "war"], "best_score": [3.0, -2.0, 1.0],
            "single_swap_optimal": [True, True, None], "restarts_at_best": [3, 1, 1], "restarts_run": [3, 3, 1],
            "restart_spread": [0.0, 2.5, 0.0], "gcg_score": [2.0, -2.0, 1.0],
            "gcg_single_swap_optimal": [False, True, None], "gain_over_gcg": [1.0, 0.0, 0.0]}
    base.update(cols)
    return pd.DataFrame(base)


def test_search_summary_counts_by_hand():
    s = stats.search_summary(results()).iloc[0]
    assert s["searches"] == 3
    assert s["all_agree"] == 1 and s["some_disagree"] == 1 and s["single_restart"] == 1
    assert s["single_swap_optimal"] == 2 and s["checked"] == 2
    assert s["gcg_optimal"] == 1 and s["gcg_known"] == 2
    assert s["sweeps_improved"] == 1 and s["median_gain"] == 1.0 and s["max_gain"] == 1.0 and s["max_spread"] == 2.5
    with pytest.raises(ValueError, match="restarts_run"):
        stats.search_summary(results().drop(columns="restarts_run"))


def test_framing_sentiment_and_means_by_hand():
    lexicon = {"good": 3, "joy": 3, "bad": -3, "war": -2}
    table = results()
    pessimal_worst = table.iloc[[2]].assign(direction="min", best_text="joy", best_score=-1.0)
    table = pd.concat([table, pessimal_worst], ignore_index=True)
    out = stats.framing_sentiment(table, {"AFINN": lexicon}, ["worst"])
    assert out["framing"].tolist() == ["positive", "positive", "negative", "negative"]
    assert out["answer"].tolist() == ["optimal", "pessimal", "optimal", "pessimal"]
    assert out["AFINN"].tolist() == [6.0, -5.0, -2.0, 3.0] and out["AFINN words"].tolist()[0] == "good joy"
    means = stats.framing_means(out, "AFINN")
    assert list(means.columns) == ["2 tokens"]
    assert means.index.tolist() == ["positive framing: optimal", "positive framing: pessimal",
                                    "negative framing: optimal", "negative framing: pessimal"]
    verdict = stats.framing_verdict(means).iloc[0]
    assert verdict["positive framing: optimal - pessimal"] == 11.0
    assert verdict["negative framing: optimal - pessimal"] == -5.0 and verdict["negative framing"] == "flips"


@pytest.mark.parametrize("neg, what", [(4.0, "shrinks"), (12.0, "keeps"), (-1.0, "flips")])
def test_framing_verdict_names_what_the_negative_framing_did(neg, what):
    means = pd.DataFrame({"1 token": [10.0, 0.0, neg, 0.0]},
                         index=["positive framing: optimal", "positive framing: pessimal",
                                "negative framing: optimal", "negative framing: pessimal"])
    assert stats.framing_verdict(means)["negative framing"].tolist() == [what]


def test_framing_without_a_negative_prompt_says_so():
    out = stats.framing_sentiment(results(prompt=["best"] * 3), {"AFINN": {"good": 3}}, [])
    verdict = stats.framing_verdict(stats.framing_means(out, "AFINN"))
    assert verdict["negative framing"].tolist() == ["nothing to flip"]
    assert math.isnan(verdict["negative framing: optimal - pessimal"].iloc[0])
    assert np.isfinite(verdict["positive framing: optimal - pessimal"].iloc[0])


def test_no_difference_under_the_positive_framing_leaves_nothing_to_reverse():
    means = pd.DataFrame({"2 tokens": [0.0, 0.0, 2.0, 0.0]},
                         index=["positive framing: optimal", "positive framing: pessimal",
                                "negative framing: optimal", "negative framing: pessimal"])
    verdict = stats.framing_verdict(means)
    assert verdict["negative framing"].tolist() == ["nothing to flip"]
    assert verdict["negative framing: optimal - pessimal"].tolist() == [2.0]
