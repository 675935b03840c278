"""rmlib.stats.tau: the one Kendall tau-b, against scipy.stats.kendalltau (ties included),
and every place that uses it (agreement, elo, lexical) giving the same numbers."""

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from rmlib.stats import agreement, elo, lexical
from rmlib.stats.resampling import bootstrap_weights
from rmlib.stats.tau import kendall_tau_b, kendall_tau_b_matrix


def scipy_tau(x, y):
    return stats.kendalltau(x, y, variant="b").statistic


# ---------------------------------------------------------------- fast tau-b


@pytest.mark.parametrize("n", [2, 3, 8, 31, 257, 2000])
def test_kendall_tau_b_equals_scipy_with_ties(n):
    rng = np.random.default_rng(n)
    for rep in range(6):
        k = max(2, n // (1 + rep))  # from heavy ties to none
        x = rng.integers(0, k, n).astype(float)
        y = x * (rep % 3 - 1) + rng.integers(0, k, n)
        if rep == 5:
            y = rng.normal(size=n)
        a, b = kendall_tau_b(x, y), scipy_tau(x, y)
        assert (np.isnan(a) and np.isnan(b)) or a == b  # bit for bit: SciPy's floating-point steps


def test_kendall_tau_b_weights_are_resamples():
    rng = np.random.default_rng(7)
    n = 400
    x = rng.integers(0, 50, n).astype(float)
    y = x + rng.integers(0, 30, n)
    W = bootstrap_weights(n, 25, seed=3)
    assert W.shape == (25, n) and (W.sum(axis=1) == n).all()
    taus = kendall_tau_b(x, y, W)
    for b in range(25):
        idx = np.repeat(np.arange(n), W[b])
        assert taus[b] == scipy_tau(x[idx], y[idx])
    # 1-D weights give a float; arbitrary multiplicities (not summing to n) work too
    w = rng.integers(0, 4, n)
    idx = np.repeat(np.arange(n), w)
    assert kendall_tau_b(x, y, w) == pytest.approx(scipy_tau(x[idx], y[idx]), abs=1e-12)


def test_kendall_tau_b_edge_cases():
    assert np.isnan(kendall_tau_b([1, 1, 1], [1, 2, 3]))
    assert kendall_tau_b([1, 2, 3], [3, 2, 1]) == -1.0
    with pytest.raises(ValueError, match="NaN"):
        kendall_tau_b([1, np.nan], [1, 2])
    with pytest.raises(ValueError, match="length"):
        kendall_tau_b([1, 2], [1, 2, 3])
    with pytest.raises(ValueError, match="integer"):
        kendall_tau_b([1, 2, 3], [1, 3, 2], [0.5, 1, 1])
    with pytest.raises(ValueError, match="non-negative"):
        kendall_tau_b([1, 2, 3], [1, 3, 2], [-1, 1, 1])


def test_tau_matrix_pairs_equal_scipy():
    rng = np.random.default_rng(11)
    wide = pd.DataFrame(rng.integers(0, 20, size=(300, 4)).astype(float), columns=list("abcd"))
    M = kendall_tau_b_matrix(wide)
    for i in range(4):
        for j in range(4):
            ref = 1.0 if i == j else scipy_tau(wide.iloc[:, min(i, j)], wide.iloc[:, max(i, j)])
            assert M[i, j] == ref  # symmetric; (i, j) with i < j exactly as scipy
    W = bootstrap_weights(300, 5, seed=0)
    S = kendall_tau_b_matrix(wide, W)
    idx = np.repeat(np.arange(300), W[2])
    assert S[2, 1, 3] == scipy_tau(wide.iloc[idx, 1], wide.iloc[idx, 3])


# ---------------------------------------------------------------- one tau-b everywhere


def _tied_wide(seed=5, n=200, k=5, levels=7):
    rng = np.random.default_rng(seed)
    base = rng.integers(0, levels, n)
    cols = {f"m{c}": (base * (c % 2) + rng.integers(0, levels, n)).astype(float) for c in range(k)}
    return pd.DataFrame(cols, index=[f"item{i}" for i in range(n)])


def test_rank_agreement_kendall_is_scipy_with_and_without_missing_values():
    wide = _tied_wide()
    full = agreement.rank_agreement(wide, "kendall")  # all-pairs path (no NaN)
    holey = wide.copy()
    holey.iloc[::7, 1] = np.nan
    holey.iloc[3::11, 3] = np.nan
    pairwise = agreement.rank_agreement(holey, "kendall")  # pairwise-complete path
    cols = list(wide.columns)
    for i, a in enumerate(cols):
        assert full.loc[a, a] == 1.0 and pairwise.loc[a, a] == 1.0
        for b in cols[i + 1:]:
            assert full.loc[a, b] == scipy_tau(wide[a], wide[b])
            m = holey[[a, b]].dropna()
            assert pairwise.loc[a, b] == scipy_tau(m[a], m[b])
            assert pairwise.loc[b, a] == pairwise.loc[a, b]


def test_rank_agreement_kendall_constant_column_gives_nan_like_scipy():
    wide = _tied_wide(n=30, k=3)
    wide["flat"] = 1.0
    tau = agreement.rank_agreement(wide, "kendall")
    assert np.isnan(tau.loc["m0", "flat"]) and np.isnan(scipy_tau(wide["m0"], wide["flat"]))
    assert tau.loc["flat", "flat"] == 1.0


def test_elo_and_lexical_use_the_same_tau():
    wide = _tied_wide(seed=9, k=3).rename(columns={"m0": "human"})
    assert elo.tau_matrix(wide).loc["human", "m1"] == kendall_tau_b(wide["human"], wide["m1"])
    split = elo.split_agreement(wide, fraction=0.5)
    top = wide.iloc[np.argsort(-wide["human"].to_numpy(), kind="stable")[:100]]
    assert split.loc["m2", "tau_top"] == pytest.approx(scipy_tau(top["human"], top["m2"]), abs=1e-12)
    a = pd.DataFrame({"token_id": range(200), "score": wide["m1"].to_numpy()})
    b = pd.DataFrame({"token_id": range(200), "score": wide["m2"].to_numpy()})
    res = lexical.prompt_correlation(a, b, method="kendall")
    ref = stats.kendalltau(a["score"], b["score"])
    assert res["r"] == kendall_tau_b(a["score"], b["score"])
    assert res["r"] == ref.statistic and res["p"] == ref.pvalue
