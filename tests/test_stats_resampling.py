"""rmlib.stats.resampling against scipy.stats.bootstrap / permutation_test."""

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from rmlib.stats import (
    bootstrap_ci,
    bootstrap_indices,
    bootstrap_weights,
    cohens_d,
    percentile_interval,
    permutation_test,
)


def _diff(x, y, axis=-1):
    return np.mean(x, axis=axis) - np.mean(y, axis=axis)


def test_exact_permutation_test_matches_scipy():
    rng = np.random.default_rng(1)
    a, b = rng.normal(0, 1, 6), rng.normal(0.8, 1, 5)
    ours = permutation_test(a, b, n_perm=10_000)
    for alt in ("two-sided", "less", "greater"):
        ref = stats.permutation_test((a, b), _diff, vectorized=True, n_resamples=10_000,
                                     alternative=alt)
        mine = permutation_test(a, b, n_perm=10_000, alternative=alt)
        assert mine.exact and mine.n_perm == 462
        assert mine.pvalue == pytest.approx(ref.pvalue, abs=1e-12)
    assert ours.statistic == pytest.approx(a.mean() - b.mean())
    np.testing.assert_allclose(np.sort(ours.null_distribution),
                               np.sort(stats.permutation_test((a, b), _diff, vectorized=True,
                                                              n_resamples=10_000).null_distribution))


def test_random_permutation_test_is_close_to_scipy():
    rng = np.random.default_rng(2)
    a, b = rng.normal(0, 1, 40), rng.normal(0.5, 1, 35)
    mine = permutation_test(a, b, n_perm=20_000, seed=3)
    ref = stats.permutation_test((a, b), _diff, vectorized=True, n_resamples=20_000, rng=4)
    assert not mine.exact
    assert mine.pvalue == pytest.approx(ref.pvalue, abs=0.01)
    # (k + 1) / (n + 1): never zero
    far = permutation_test(a + 100, b, n_perm=999, seed=0)
    assert far.pvalue == pytest.approx(2 / 1000)


def test_callable_and_median_statistics():
    a, b = np.array([1.0, 2, 3, 10]), np.array([0.0, 1, 1.5])
    med = permutation_test(a, b, stat="median_diff")
    fn = permutation_test(a, b, stat=lambda x, y: np.median(x) - np.median(y))
    assert med.statistic == pytest.approx(2.5 - 1.0)
    assert med.pvalue == pytest.approx(fn.pvalue)
    ref = stats.permutation_test((a, b), lambda x, y: np.median(x) - np.median(y),
                                 n_resamples=1000, vectorized=False)
    assert med.pvalue == pytest.approx(ref.pvalue)


def test_cohens_d_by_hand():
    a, b = np.array([2.0, 4, 6]), np.array([1.0, 2, 3, 4])
    pooled = ((3 - 1) * 4.0 + (4 - 1) * np.var(b, ddof=1)) / (3 + 4 - 2)
    assert cohens_d(a, b) == pytest.approx((4 - 2.5) / np.sqrt(pooled))
    assert permutation_test(a, b).cohens_d == pytest.approx(cohens_d(a, b))


def test_permutation_input_errors():
    with pytest.raises(ValueError, match="NaN"):
        permutation_test([1.0, np.nan], [1.0, 2.0])
    with pytest.raises(ValueError, match="alternative"):
        permutation_test([1.0, 2.0], [1.0, 2.0], alternative="both")
    with pytest.raises(ValueError, match="stat"):
        permutation_test([1.0, 2.0], [1.0, 2.0], stat="t")


@pytest.mark.parametrize("method", ["percentile", "bca"])
def test_bootstrap_matches_scipy(method):
    x = np.random.default_rng(5).exponential(size=40)
    mine = bootstrap_ci(np.mean, x, n_boot=20_000, seed=1, method=method, vectorized=True)
    ref = stats.bootstrap((x,), np.mean, n_resamples=20_000, method=method, rng=2)
    width = ref.confidence_interval.high - ref.confidence_interval.low
    assert mine.statistic == pytest.approx(x.mean())
    assert mine.low == pytest.approx(ref.confidence_interval.low, abs=0.03 * width)
    assert mine.high == pytest.approx(ref.confidence_interval.high, abs=0.03 * width)
    assert mine.se == pytest.approx(ref.standard_error, rel=0.03)


def test_bootstrap_over_dataframe_rows_matches_vectorized():
    rng = np.random.default_rng(6)
    df = pd.DataFrame({"x": rng.normal(size=50), "y": rng.normal(size=50)})
    df["y"] += df["x"]

    def corr(d):
        return d["x"].corr(d["y"])

    res = bootstrap_ci(corr, df, n_boot=500, seed=0)
    # same seed, same row draws: the by-hand loop gives the same replicates
    idx = np.random.default_rng(0).integers(0, 50, size=(500, 50))
    by_hand = np.array([np.corrcoef(df["x"].to_numpy()[i], df["y"].to_numpy()[i])[0, 1] for i in idx])
    np.testing.assert_allclose(res.distribution, by_hand)
    assert res.low == pytest.approx(np.percentile(by_hand, 2.5))
    s = res.to_series()
    assert s["method"] == "percentile" and s["n_boot"] == 500


def test_bootstrap_vector_statistic():
    x = np.random.default_rng(8).normal(size=(60, 2))
    res = bootstrap_ci(lambda a: a.mean(axis=0), x, n_boot=300, seed=0)
    assert res.low.shape == (2,) and (res.low < res.statistic).all() and (res.statistic < res.high).all()


def test_bootstrap_input_errors():
    with pytest.raises(ValueError, match="ci"):
        bootstrap_ci(np.mean, [1.0, 2.0], ci=95)
    with pytest.raises(ValueError, match="method"):
        bootstrap_ci(np.mean, [1.0, 2.0], method="basic")
    with pytest.raises(ValueError, match="vectorized"):
        bootstrap_ci(np.mean, pd.Series([1.0, 2.0]), vectorized=True)


# ---------------------------------------------------------------- one draw, one interval


def test_bootstrap_weights_count_the_rows_of_bootstrap_indices():
    idx = bootstrap_indices(50, 40, seed=8)
    W = bootstrap_weights(50, 40, seed=8)
    assert idx.shape == W.shape == (40, 50) and (W.sum(axis=1) == 50).all()
    for b in range(40):
        assert (np.bincount(idx[b], minlength=50) == W[b]).all()
    assert not (bootstrap_weights(50, 40, seed=9) == W).all()  # the seed matters
    with pytest.raises(ValueError, match="n_boot"):
        bootstrap_indices(5, 0)


def test_bootstrap_ci_resamples_the_rows_of_bootstrap_indices():
    x = np.random.default_rng(2).normal(size=60)
    res = bootstrap_ci(np.mean, x, n_boot=300, seed=4)
    by_hand = x[bootstrap_indices(60, 300, seed=4)].mean(axis=1)
    assert np.allclose(res.distribution, by_hand)
    assert (res.low, res.high) == percentile_interval(by_hand, 0.95)
    assert res.low == pytest.approx(np.percentile(by_hand, 2.5)) and res.high == pytest.approx(np.percentile(by_hand, 97.5))


def test_percentile_interval_by_hand_drops_nan_and_works_per_column():
    d = np.arange(101.0)  # quantile q of 0..100 is 100 q
    assert percentile_interval(d, 0.9) == pytest.approx((5.0, 95.0))
    with_nan = np.concatenate([d, [np.nan, np.nan]])
    assert percentile_interval(with_nan, 0.9) == pytest.approx((5.0, 95.0))
    lo, hi = percentile_interval(np.stack([d, 2 * d], axis=1), 0.5)
    assert lo.tolist() == [25.0, 50.0] and hi.tolist() == [75.0, 150.0]
    with pytest.raises(ValueError, match="ci"):
        percentile_interval(d, 1.5)


def test_tau_bootstrap_is_built_on_the_same_draws_and_interval():
    from rmlib.stats import elo
    from rmlib.stats.tau import kendall_tau_b

    rng = np.random.default_rng(3)
    wide = pd.DataFrame({"human": rng.integers(0, 9, 80).astype(float)})
    wide["a"] = wide["human"] + rng.integers(0, 5, 80)
    wide["b"] = rng.integers(0, 5, 80).astype(float)
    bs = elo.bootstrap_taus(wide, n_boot=60, seed=6)
    idx = bootstrap_indices(80, 60, seed=6)
    taus = np.array([kendall_tau_b(wide["human"].to_numpy()[i], wide["a"].to_numpy()[i]) for i in idx])
    assert np.allclose(bs.samples[:, 0, 1], taus, atol=1e-12)
    lo, hi = bs.ci(0.9)
    assert (lo.loc["human", "a"], hi.loc["human", "a"]) == pytest.approx(percentile_interval(taus, 0.9))
    tidy = bs.tidy(0.9)
    assert list(tidy.columns) == ["a", "b", "tau", "low", "high"]
    assert tidy[["a", "b"]].values.tolist() == [["human", "a"], ["human", "b"], ["a", "b"]]
    row = tidy.iloc[0]
    assert (row["tau"], row["low"], row["high"]) == pytest.approx(
        (kendall_tau_b(wide["human"], wide["a"]), *percentile_interval(taus, 0.9)))


def test_to_series_holds_every_field_but_the_distribution():
    b = bootstrap_ci(np.mean, np.arange(10.0), n_boot=50).to_series()
    assert b.index.tolist() == ["statistic", "low", "high", "se", "ci", "n_boot", "method"]
    assert b["statistic"] == 4.5 and b["n_boot"] == 50
    p = permutation_test([1.0, 2.0, 3.0], [4.0, 5.0, 6.0]).to_series()
    assert p.index.tolist() == ["statistic", "pvalue", "cohens_d", "n_perm", "exact", "alternative"]
    assert p["statistic"] == -3.0 and p["exact"]
