"""rmlib.stats.moments against numpy/scipy/pandas."""

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from rmlib.stats import distribution_moments, moments_table


@pytest.fixture
def scores():
    return np.random.default_rng(11).gamma(2.0, 1.5, size=500)


def test_paper_estimators(scores):
    m = distribution_moments(scores)
    assert m["n"] == 500
    assert m["mean"] == pytest.approx(scores.sum() / 500)
    dev = scores - scores.mean()
    assert m["variance"] == pytest.approx((dev**2).mean())  # population variance
    g1 = (dev**3).mean() / (dev**2).mean() ** 1.5  # biased Fisher-Pearson
    assert m["skewness"] == pytest.approx(g1)
    assert m["skewness"] == pytest.approx(stats.skew(scores))


def test_unbiased_options_match_pandas(scores):
    m = distribution_moments(scores, ddof=1, bias=False)
    s = pd.Series(scores)
    assert m["variance"] == pytest.approx(s.var())
    assert m["skewness"] == pytest.approx(s.skew())


def test_missing_values_are_dropped_and_empty_is_an_error(scores):
    with_nan = np.concatenate([scores, [np.nan, np.nan]])
    pd.testing.assert_series_equal(distribution_moments(with_nan), distribution_moments(scores))
    with pytest.raises(ValueError, match="no scores"):
        distribution_moments([np.nan])
    with pytest.raises(ValueError, match="infinite"):
        distribution_moments([1.0, np.inf])


def test_long_and_wide_tables_agree(scores):
    rng = np.random.default_rng(2)
    wide = pd.DataFrame({"m1": scores, "m2": rng.normal(size=500)})
    long = wide.melt(var_name="model", value_name="score")
    long["prompt"] = "greatest"
    by_long = moments_table(long, by=["model", "prompt"])
    by_wide = moments_table(wide)
    assert list(by_long.columns) == ["model", "prompt", "n", "mean", "variance", "skewness"]
    for model in ("m1", "m2"):
        row = by_long.set_index("model").loc[model]
        assert row["n"] == 500
        assert row["skewness"] == pytest.approx(stats.skew(wide[model]))
        assert row["variance"] == pytest.approx(np.var(wide[model]))
        assert by_wide.loc[model, "mean"] == pytest.approx(wide[model].mean())


def test_an_empty_table_is_an_error_that_says_so():
    empty = pd.DataFrame(columns=["model", "prompt", "token_id", "decoded", "score"])
    with pytest.raises(ValueError, match="the table has no rows"):
        moments_table(empty, by="model")
    with pytest.raises(ValueError, match="the table has no rows"):
        moments_table(pd.DataFrame(columns=["a", "b"]))


def test_missing_group_column_is_named():
    with pytest.raises(KeyError, match="prompt"):
        moments_table(pd.DataFrame({"model": ["a"], "score": [1.0]}), by=["model", "prompt"])
