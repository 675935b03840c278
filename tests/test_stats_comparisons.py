"""rmlib.stats.comparisons.holm against a hand computation and statsmodels."""

import numpy as np
import pytest

from rmlib.stats import comparisons


def test_holm_by_hand():
    # sorted p: .01, .02, .03, .04 with m = 4 -> .04, .06, .06 (made non-decreasing from .06), .04 -> .06
    p = [0.03, 0.01, 0.04, 0.02]
    assert np.allclose(comparisons.holm(p), [0.06, 0.04, 0.06, 0.06])
    # one tiny p: Holm multiplies it by m like Bonferroni; the others by fewer
    assert np.allclose(comparisons.holm([0.001, 0.5, 0.9]), [0.003, 1.0, 1.0])
    out = comparisons.holm([0.01, np.nan, 0.04])
    assert np.isnan(out[1]) and np.allclose(out[[0, 2]], [0.02, 0.04])  # m = 2, NaN not counted


def test_holm_matches_statsmodels_and_is_never_above_bonferroni():
    multitest = pytest.importorskip("statsmodels.stats.multitest")
    p = np.random.default_rng(0).uniform(0, 0.2, 10)
    ours = comparisons.holm(p)
    assert np.allclose(ours, multitest.multipletests(p, method="holm")[1])
    assert (ours <= comparisons.bonferroni(p) + 1e-12).all()
