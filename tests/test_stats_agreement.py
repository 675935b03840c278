"""rmlib.stats.agreement against scipy, by-hand RBO values and the paper."""

import time
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from scipy.spatial.distance import pdist, squareform

from rmlib import registry
from rmlib.tables import paper_release
from rmlib.stats import mds_embedding, paper_rbo_depth, rank_agreement, rbo, upper_triangle


@pytest.fixture
def table():
    rng = np.random.default_rng(7)
    base = rng.normal(size=300)
    df = pd.DataFrame(
        {
            "a": base + rng.normal(scale=0.5, size=300),
            "b": np.round(base + rng.normal(scale=1.0, size=300), 1),  # ties
            "c": rng.normal(size=300),
        },
        index=[f"item{i}" for i in range(300)],
    )
    df.loc[df.index[:20], "a"] = np.nan
    df.loc[df.index[10:40], "c"] = np.nan
    return df


@pytest.mark.parametrize("method, ref", [
    ("kendall", lambda x, y: stats.kendalltau(x, y).statistic),
    ("spearman", lambda x, y: stats.spearmanr(x, y).statistic),
])
def test_pairwise_complete_matches_scipy(table, method, ref):
    out = rank_agreement(table, method)
    assert list(out.index) == list(out.columns) == ["a", "b", "c"]
    for x in table.columns:
        for y in table.columns:
            both = table[[x, y]].dropna()
            expected = 1.0 if x == y else ref(both[x], both[y])
            assert out.loc[x, y] == pytest.approx(expected, abs=1e-12)
    assert out.attrs["n_items"]["a"]["c"] == len(table[["a", "c"]].dropna())


def test_spearman_fast_path_matches_scipy(table):
    full = table.dropna()
    out = rank_agreement(full, "spearman")
    np.testing.assert_allclose(out.to_numpy(), stats.spearmanr(full.to_numpy()).statistic, atol=1e-12)


def test_kendall_tau_b_with_ties_by_hand():
    # x has a tie; tau-b = (C - D) / sqrt((n0 - n1)(n0 - n2)) with n0 = 6
    df = pd.DataFrame({"x": [1, 2, 2, 3], "y": [1, 3, 2, 4]})
    # pairs: (1,2)C (1,3)C (1,4)C (2,3)tie-x (2,4)C (3,4)C -> C=5, D=0, n1=1, n2=0
    expected = 5 / np.sqrt((6 - 1) * 6)
    assert rank_agreement(df).loc["x", "y"] == pytest.approx(expected)


def test_bad_input_is_rejected(table):
    with pytest.raises(ValueError, match="method"):
        rank_agreement(table, "pearson")
    tiny = pd.DataFrame({"a": [1.0, np.nan, 3.0, 4.0], "b": [np.nan, 2.0, 1.0, np.nan]})
    with pytest.raises(ValueError, match="share only 1"):
        rank_agreement(tiny)


# --------------------------------------------------------------------------
# RBO
# --------------------------------------------------------------------------


def test_rbo_identical_and_disjoint():
    items = list("abcdefghij")
    assert rbo(items, items) == pytest.approx(1.0)
    assert rbo(items, list("klmnopqrst")) == pytest.approx(0.0)
    assert rbo(items, items, variant="truncated", depth=10) == pytest.approx(1 - 0.9**10)


def test_rbo_by_hand_small_lists():
    a, b, p = list("abcd"), list("badc"), 0.5
    # X_d = 0, 2, 2, 4 ; A_d = 0, 1, 2/3, 1
    A = [Fraction(0), Fraction(1), Fraction(2, 3), Fraction(1)]
    P = Fraction(1, 2)
    truncated = (1 - P) * sum(P ** d * A[d] for d in range(4))
    ext = A[3] * P**4 + (1 - P) / P * sum(A[d] * P ** (d + 1) for d in range(4))
    assert truncated == Fraction(19, 48) and ext == Fraction(11, 24)
    assert rbo(a, b, p=p, variant="truncated", depth=4) == pytest.approx(float(truncated))
    assert rbo(a, b, p=p) == pytest.approx(float(ext))
    assert rbo(a, b, p=p) == pytest.approx(rbo(b, a, p=p))


def test_rbo_uneven_lists():
    # A prefix of a longer ranking agrees fully: RBO_ext extrapolates to 1.
    assert rbo(list("ab"), list("abcd"), p=0.5) == pytest.approx(1.0)
    # By hand, Webber et al. eq. (32): S = [a, c], L = [a, b, c, d], p = 0.5, s = 2, l = 4
    # X_1..4 = 1, 1, 2, 2
    p, s, l_ = 0.5, 2, 4
    X = [1, 1, 2, 2]
    first = sum(X[d - 1] / d * p**d for d in range(1, 5))
    second = sum(X[s - 1] * (d - s) / (s * d) * p**d for d in range(s + 1, l_ + 1))
    tail = ((X[l_ - 1] - X[s - 1]) / l_ + X[s - 1] / s) * p**l_
    expected = (1 - p) / p * (first + second) + tail
    assert rbo(list("ac"), list("abcd"), p=p) == pytest.approx(expected)
    assert rbo(list("abcd"), list("ac"), p=p) == pytest.approx(expected)


def test_paper_truncated_rbo_is_within_1e6_of_ext_on_long_rankings():
    rng = np.random.default_rng(0)
    items = np.arange(3000)
    a = items.copy()
    b = items.copy()
    b[:200] = rng.permutation(b[:200])  # disagreement near the top
    depth = paper_rbo_depth(0.9)
    assert 0.9**depth < 1e-6 <= 0.9 ** (depth - 1)  # tail weight below the cut < 1e-6
    ext = rbo(a, b, p=0.9)
    trunc = rbo(a, b, p=0.9, variant="truncated")
    assert trunc <= ext
    assert ext - trunc < 1e-6


def test_rbo_rejects_repeated_items():
    with pytest.raises(ValueError, match="repeat"):
        rbo(list("aab"), list("abc"))


def test_rank_agreement_rbo_uses_descending_rankings(table):
    full = table.dropna()
    out = rank_agreement(full, "rbo")
    ra = full["a"].sort_values(ascending=False).index
    rb = full["b"].sort_values(ascending=False, kind="stable").index
    assert out.loc["a", "b"] == pytest.approx(rbo(list(ra), list(rb)))
    np.testing.assert_allclose(np.diag(out), 1.0)
    np.testing.assert_allclose(out.to_numpy(), out.to_numpy().T)


@pytest.mark.parametrize("variant, depth", [("ext", None), ("ext", 25), ("truncated", None),
                                            ("truncated", 40)])
def test_rank_agreement_rbo_pairwise_complete_matches_rbo(table, variant, depth):
    out = rank_agreement(table, "rbo", p=0.8, depth=depth, rbo_variant=variant)
    for x, y in (("a", "b"), ("a", "c"), ("b", "c")):
        both = table[[x, y]].dropna()
        rx = both[x].sort_values(ascending=False, kind="stable").index
        ry = both[y].sort_values(ascending=False, kind="stable").index
        expected = rbo(list(rx), list(ry), p=0.8, depth=depth, variant=variant)
        assert out.loc[x, y] == pytest.approx(expected, abs=1e-12)


# --------------------------------------------------------------------------
# real data: the paper's human-model agreement on EloEverything
# --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def elo_wide():
    df = paper_release.eloeverything("one_word_greatest").set_index("name")
    return df[["elo_score"] + registry.paper_models()["hub_id"].tolist()]


def test_human_model_kendall_tau_matches_the_paper(elo_wide):
    tau = rank_agreement(elo_wide, "kendall")["elo_score"].drop("elo_score")
    assert len(tau) == 10
    # Published: mean 0.294, SD 0.059 (sample SD, ddof=1; the population SD
    # would be 0.056), range 0.219-0.390.
    assert round(tau.mean(), 3) == 0.294
    assert round(tau.std(ddof=1), 3) == 0.059
    assert round(tau.min(), 3) == 0.219
    assert round(tau.max(), 3) == 0.390


def test_kendall_on_7530_items_by_11_columns_is_fast(elo_wide):
    assert elo_wide.shape == (7530, 11)
    start = time.perf_counter()
    rank_agreement(elo_wide, "kendall")
    assert time.perf_counter() - start < 2.0


# --------------------------------------------------------------------------
# MDS
# --------------------------------------------------------------------------


def test_mds_recovers_a_planar_configuration():
    rng = np.random.default_rng(3)
    pts = rng.uniform(0, 0.3, size=(6, 2))
    d = squareform(pdist(pts))
    labels = [f"m{i}" for i in range(6)]
    agreement = pd.DataFrame(1 - d, index=labels, columns=labels)
    emb = mds_embedding(agreement, seed=0)
    assert list(emb.index) == labels and list(emb.columns) == ["dim1", "dim2"]
    np.testing.assert_allclose(squareform(pdist(emb.to_numpy())), d, atol=2e-3)
    assert emb.attrs["stress"] < 1e-4


def test_mds_rejects_non_square():
    with pytest.raises(ValueError, match="square"):
        mds_embedding(pd.DataFrame(np.ones((2, 3))))


def test_upper_triangle_order():
    m = pd.DataFrame(np.arange(9.0).reshape(3, 3), index=list("xyz"), columns=list("xyz"))
    ut = upper_triangle(m)
    assert ut.tolist() == [1.0, 2.0, 5.0]
    assert list(ut.index) == [("x", "y"), ("x", "z"), ("y", "z")]


def test_upper_triangle_reorders_by_labels_and_names_what_is_missing():
    m = pd.DataFrame(np.arange(9.0).reshape(3, 3), index=list("xyz"), columns=list("xyz"))
    ut = upper_triangle(m, ["z", "x", "y"])  # rows/columns taken in this order first
    assert ut.tolist() == [m.loc["z", "x"], m.loc["z", "y"], m.loc["x", "y"]] == [6.0, 7.0, 1.0]
    assert list(ut.index) == [("z", "x"), ("z", "y"), ("x", "y")]
    with pytest.raises(KeyError, match=r"predictor 'p' lacks rows/columns for \['w'\]"):
        upper_triangle(m, ["x", "w"], what="predictor 'p'")
    with pytest.raises(ValueError, match="square"):
        upper_triangle(m.iloc[:, :2])
    assert upper_triangle(m.iloc[:1, :1]).empty
