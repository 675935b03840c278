"""rmlib.stats.text_sentiment: the lexicon sentiment of multi-word texts, by hand and on the shipped lexicons."""

import math

import pandas as pd
import pytest

from rmlib import stats


def test_numeric_lexicon_sums_every_matched_word_as_a_reader_splits_the_text():
    lexicon = {"good": 3, "bad": -3, "well-being": 2, "don't": -1, "some kind": 5}
    out = stats.text_sentiment([" Good good, BAD!", "disperserenewable", "well-being don't", "some kind"], lexicon)
    assert out["text"].tolist()[0] == " Good good, BAD!"
    assert out["n_words"].tolist() == [3, 1, 2, 2]
    assert out["matched"].tolist() == ["good good bad", "", "well-being don't", ""]  # phrases never match
    assert out["n_matched"].tolist() == [3, 0, 2, 0]
    assert out["sentiment"].tolist() == [3.0, 0.0, 1.0, 0.0]
    assert out["mean"].iloc[0] == pytest.approx(1.0) and math.isnan(out["mean"].iloc[1])
    assert out["mean"].iloc[2] == pytest.approx(0.5)


def test_class_lexicon_counts_plus_one_and_minus_one_and_a_word_in_both_lists_nets_zero():
    bing = pd.DataFrame({"word": ["love", "hate", "envious", "envious"],
                         "sentiment": ["positive", "negative", "positive", "negative"]})
    out = stats.text_sentiment(["love love hate", "envious", "nothing"], bing)
    assert out["sentiment"].tolist() == [1.0, 0.0, 0.0]
    assert out["n_matched"].tolist() == [3, 1, 0]
    with pytest.raises(ValueError, match="positive' or 'negative"):
        stats.text_sentiment(["x"], pd.DataFrame({"word": ["x"], "sentiment": ["neutral"]}))
    with pytest.raises(TypeError, match="texts must be strings"):
        stats.text_sentiment([3], bing)


def test_on_the_shipped_lexicons():
    from rmlib.tables import lexicons

    afinn, bing = lexicons.afinn111(), lexicons.bing_lexicon()
    texts = ["joy and love", "war kills"]
    a, b = stats.text_sentiment(texts, afinn), stats.text_sentiment(texts, bing)
    assert a["sentiment"].tolist() == [float(afinn["joy"] + afinn["love"]), float(afinn["war"] + afinn["kills"])]
    assert b["sentiment"].iloc[0] == 2.0 and b["sentiment"].iloc[1] < 0
