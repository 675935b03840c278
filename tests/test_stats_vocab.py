"""rmlib.stats.vocab on small hand-made score tables."""

import numpy as np
import pandas as pd
import pytest

from rmlib.stats import top_bottom
from rmlib.tables.vocabulary import duplicate_report, shared_vocabulary


@pytest.fixture
def tables():
    a = pd.DataFrame({
        "token_id": [0, 1, 2, 3, 4, 5],
        "decoded": ["Love", " love", "hate", "x", "x", "only_a"],
        "score": [3.0, 2.0, -1.0, 0.0, 1.0, 9.0],
    })
    b = pd.DataFrame({
        "token_id": [0, 1, 2, 3, 4],
        "decoded": ["love", "hate", "x", "Love", "nan_here"],
        "score": [1.0, -2.0, 0.5, 4.0, np.nan],
    })
    return {"A": a, "B": b}


def test_exact_strings_drop_rule_like_the_paper(tables):
    wide = shared_vocabulary(tables)
    # shared exact strings: Love, hate, x; "x" is duplicated in A -> dropped
    assert list(wide.index) == ["Love", "hate"]
    assert wide.loc["Love"].tolist() == [3.0, 4.0]
    assert wide.loc["hate"].tolist() == [-1.0, -2.0]
    assert wide.attrs["n_dropped_duplicates"] == 1
    assert wide.attrs["duplicates"]["A"]["n_duplicate_strings"] == 1
    assert wide.attrs["duplicates"]["B"]["n_rows"] == 4  # NaN score dropped


@pytest.mark.parametrize("rule, love_a, x_a", [
    ("max", 3.0, 1.0),
    ("mean", 2.5, 0.5),
    ("first", 3.0, 0.0),
])
def test_collapse_rules_after_normalisation(tables, rule, love_a, x_a):
    wide = shared_vocabulary(tables, normalize="strip_lower", duplicates=rule)
    assert list(wide.index) == ["hate", "love", "x"]
    assert wide.loc["love", "A"] == love_a  # "Love" and " love" collide in A
    assert wide.loc["x", "A"] == x_a
    assert wide.loc["love", "B"] == {"max": 4.0, "mean": 2.5, "first": 1.0}[rule]


def test_drop_after_normalisation_removes_new_collisions(tables):
    wide = shared_vocabulary(tables, normalize="strip_lower")
    assert list(wide.index) == ["hate"]
    rep = duplicate_report(tables, normalize="strip_lower")
    assert rep.loc["A", "n_duplicate_strings"] == 2 and rep.loc["A", "n_duplicate_rows"] == 4
    assert rep.loc["B", "n_duplicate_strings"] == 1


def test_callable_normaliser_and_bad_arguments(tables):
    wide = shared_vocabulary(tables, normalize=lambda s: s.upper(), duplicates="max")
    assert "LOVE" in wide.index
    with pytest.raises(ValueError, match="normalize"):
        shared_vocabulary(tables, normalize="casefold!")
    with pytest.raises(ValueError, match="duplicates"):
        shared_vocabulary(tables, duplicates="sum")
    with pytest.raises(KeyError, match="decoded"):
        shared_vocabulary({"A": pd.DataFrame({"score": [1.0]})})


def test_top_bottom_on_a_score_table(tables):
    a = tables["A"]
    tb = top_bottom(a, 2)
    assert tb["end"].tolist() == ["top", "top", "bottom", "bottom"]
    assert tb["rank"].tolist() == [1, 2, 1, 2]
    assert tb["decoded"].tolist() == ["only_a", "Love", "hate", "x"]
    assert tb.loc[tb["end"] == "top", "score"].tolist() == sorted(a["score"], reverse=True)[:2]


def test_top_bottom_on_a_wide_table(tables):
    wide = shared_vocabulary(tables, normalize="strip_lower", duplicates="max")
    tb = top_bottom(wide, 1, score="B")
    assert tb["decoded"].tolist() == ["love", "hate"]
    with pytest.raises(KeyError, match="C"):
        top_bottom(wide, 1, score="C")


def test_side_by_side_lists_top_and_bottom_strings_per_table():
    from rmlib.stats import side_by_side

    a = pd.DataFrame({"decoded": ["w", "x", "y", "z", "v"], "score": [3.0, 1.0, 5.0, -2.0, 0.0]})
    b = pd.DataFrame({"decoded": ["p", "q"], "score": [0.5, 0.7]})
    out = side_by_side({"A": a, "B": b}, n=2)
    assert list(out.index) == ["top-1", "top-2", "bottom-2", "bottom-1"]
    assert out["A"].tolist() == ["y", "w", "v", "z"]  # highest first; the lowest last
    assert out["B"].tolist() == ["q", "p", "q", "p"]
    wide = pd.DataFrame({"m": [1.0, 2.0, 3.0]}, index=pd.Index(["<a>", "b", "c"], name="decoded"))
    assert side_by_side({"m": wide}, n=1, score="m")["m"].tolist() == ["c", "<a>"]
    short = side_by_side({"B": b}, n=3)
    assert short["B"].tolist() == ["q", "p", "", "", "q", "p"]  # fewer rows than n: blanks in the middle


def test_top_bottom_tiebreak_and_disjoint():
    # rows out of token order, ties at both cuts
    t = pd.DataFrame({"token_id": [5, 2, 9, 1, 7, 3], "score": [1.0, 1.0, 0.0, 0.0, 2.0, np.nan]})
    plain = top_bottom(t, 2)  # ties by table order; NaN ignored
    assert plain["token_id"].tolist() == [7, 5, 9, 1]
    by_id = top_bottom(t, 2, tiebreak=["token_id"])
    assert by_id["token_id"].tolist() == [7, 2, 1, 9]
    # 5 scored rows, n=3: overlapping ends by default, each row once with disjoint
    assert top_bottom(t, 3, tiebreak=["token_id"])["token_id"].tolist() == [7, 2, 5, 1, 9, 2]
    assert top_bottom(t, 3, tiebreak=["token_id"], disjoint=True)["token_id"].tolist() == [7, 2, 5, 1, 9]
    with pytest.raises(KeyError, match="token_id"):
        top_bottom(t.drop(columns="token_id"), 2, tiebreak=["token_id"])
    with pytest.raises(ValueError, match="positive"):
        top_bottom(t, 0)


def test_top_bottom_agrees_with_nlargest_nsmallest_on_random_ties():
    rng = np.random.default_rng(0)
    t = pd.DataFrame({"token_id": rng.permutation(500), "score": rng.integers(0, 20, 500).astype(float)})
    tb = top_bottom(t, 25)
    assert tb.loc[tb["end"] == "top", "token_id"].tolist() == t.nlargest(25, "score")["token_id"].tolist()
    assert tb.loc[tb["end"] == "bottom", "token_id"].tolist() == t.nsmallest(25, "score")["token_id"].tolist()
