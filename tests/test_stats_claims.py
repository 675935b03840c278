"""rmlib.stats.claims: the finding sentences say what their tables show."""

import numpy as np
import pandas as pd
import pytest

from rmlib.errors import InputError
from rmlib.stats import claims


def result(diffs, ps, measures=None, **groups):
    n = len(diffs)
    return pd.DataFrame({**groups, "measure": measures or [f"RM{i}" for i in range(n)], "n_sets": 12,
                         "n_controls": 60, "mean_target": 0.0, "mean_control": 0.0, "diff": diffs,
                         "low": [d - 100 for d in diffs], "high": [d + 100 for d in diffs], "p": ps,
                         "cohens_d": 0.5})


def test_matched_summary_counts_and_extremes():
    r = result([500.0, 2500.0, -30.0, 800.0], [0.01, 0.001, 0.8, 0.2])
    s = claims.matched_summary(r, what="Identity items")
    assert s.startswith("Identity items: 3 of 4 put them below their matched controls (2 significantly")
    assert "from -30 to 2,500 places" in s and "the largest 2,500 places below (RM1)" in s
    # percentiles: higher is better, so a negative difference is below; group columns name the row
    t = result([-12.0, 3.0], [0.001, 0.5], measures=["greatest", "best"], model=["m1", "m2"])
    s = claims.matched_summary(t, what="Tokens", unit="percentile points", better="higher")
    assert "1 of 2 put them below" in s and "(1 significantly" in s
    assert "the largest 12.0 percentile points below (m1, greatest)" in s
    with pytest.raises(InputError, match="better"):
        claims.matched_summary(t, what="x", better="up")


def test_human_vs_models():
    levels = result([-1035.0, 1200.0, 2600.0, -1500.0], [0.21, 0.01, 0.001, 0.03],
                    measures=["human", "A", "B", "C"])
    s = claims.human_vs_models(levels)
    assert s.startswith("People rank the identity-group items 1,035 places higher than comparable items")
    assert "(rank difference -1,035, 95% CI -1,135 to -935, p = 0.210)" in s
    assert "767 places lower than comparable items on average (from -1,500 to 2,600)" in s
    assert "and 2 of 3 rank them lower than people do" in s
    with pytest.raises(InputError, match="human"):
        claims.human_vs_models(levels[levels["measure"] != "human"])


def test_contamination_effect_per_prompt():
    r = result([1.0, -0.5, -9.0, -8.0], [0.9, 0.95, 0.001, 0.0004],
               measures=["clean | greatest", "clean | best", "contaminated | greatest", "contaminated | best"])
    s = claims.contamination_effect(r, what="Identity tokens", unit="percentile points")
    assert s.startswith("Identity tokens minus matched controls: 1.0 percentile points (95% CI -99.0 to 101.0, "
                        "p = 0.900) after clean training and -9.0")
    assert "after contamination (greatest); -0.5" in s and s.endswith("p < 0.001) after contamination (best).")
    items = result([50.0, 673.0], [0.59, 0.0001], measures=["clean", "contaminated"])
    assert "673 (95% CI 573 to 773, p < 0.001) after contamination." in claims.contamination_effect(items, what="x")
    with pytest.raises(InputError, match="contaminated"):
        claims.contamination_effect(items.iloc[:1], what="x")


def test_lexicon_agreement():
    d = pd.DataFrame({"AFINN": [0.8, 0.5, -0.2], "Bing": [0.9, 0.4, 0.1], "VADER": [0.7, np.nan, -0.3]},
                     index=pd.MultiIndex.from_tuples([("m", "greatest"), ("m", "best"), ("m", "worst")]))
    asym = pd.DataFrame({"lexicon": ["AFINN", "VADER"] * 3, "model": "m",
                         "prompt": ["greatest", "greatest", "best", "best", "worst", "worst"],
                         "diff": [0.2, 0.1, -0.1, 0.3, 0.05, np.nan]})
    s = claims.lexicon_agreement(d, asym)
    assert "is the same with AFINN, Bing, VADER in 1 of 2 (model, prompt) cells" in s
    assert "is the same with AFINN, VADER in 1 of 2." in s
    empty = claims.lexicon_agreement(d.iloc[:0], asym.iloc[:0])
    assert empty.startswith("No (model, prompt) cell")


def test_erasure_verdict():
    levels = result([-900.0, 100.0], [0.3, 0.5], measures=["human", "A"])
    strong = result([2000.0] * 8 + [100.0, -50.0], [0.001] * 8 + [0.5, 0.7])
    assert claims.erasure_verdict(strong, levels).startswith("Reproduces on the released data: 8 of 10")
    assert "people themselves rank these items no lower" in claims.erasure_verdict(strong, levels)
    partly = result([300.0] * 7 + [-10.0] * 3, [0.01, 0.02] + [0.3] * 8)
    assert claims.erasure_verdict(partly, levels).startswith("Partly: 7 of 10 reward models")
    none = result([-300.0] * 7 + [10.0] * 3, [0.3] * 10)
    people_low = result([900.0, 100.0], [0.001, 0.5], measures=["human", "A"])
    v = claims.erasure_verdict(none, people_low)
    assert v.startswith("Does not reproduce: 3 of 10") and "but people, too, rank these items below" in v
