"""The finding templates about RMs trained on EloEverything ratings (rmlib.stats.elo_claims), fed with
tables computed as chapter 7 computes them."""

import pandas as pd
import pytest

from rmlib.errors import InputError
from rmlib.stats import elo_claims


def _taus(trained_low=0.40):
    return pd.DataFrame({"ranker": ["rm", "rm, other prompt", "P1", "P2", "length", "untrained"],
                         "source": [elo_claims.TRAINED, elo_claims.OTHER_PROMPT, elo_claims.PAPER, elo_claims.PAPER,
                                    elo_claims.BASELINE, elo_claims.BASELINE],
                         "tau": [0.45, 0.44, 0.30, 0.20, -0.25, 0.05], "low": [trained_low, 0.41, 0.27, 0.17, -0.28, 0.0],
                         "high": [0.50, 0.47, 0.33, 0.23, -0.22, 0.1], "n_items": 3765})


def test_heldout_alignment_labels_the_comparison_in_distribution():
    lines = elo_claims.heldout_alignment(_taus())
    assert lines[0] == ("rm, trained here: held-out tau 0.450 [0.400, 0.500] on 3,765 test items; 0.440 "
                        "[0.410, 0.470] with the other prompt wording.")
    assert "An in-distribution comparison" in lines[1] and "lies above 2 of their 2 intervals" in lines[1]
    assert "0.200 to 0.300" in lines[1]
    assert "strongest baseline (by |tau|) is length" in lines[2] and "every RM trained here" in lines[2]
    low = elo_claims.heldout_alignment(_taus(trained_low=0.25))
    assert "lies above 1 of their 2" in low[1] and "0 of the 1 RMs trained here clear it" in low[2]
    with pytest.raises(InputError, match="no ranker has the source"):
        elo_claims.heldout_alignment(_taus().assign(source=elo_claims.BASELINE))


def test_family_gaps_compares_the_two_intervals():
    gaps = pd.DataFrame({"RM": ["a", "b"], "hedges_g": [0.3, -0.2], "g_low": [0.1, -0.4], "g_high": [0.5, 0.0],
                         "p": [0.01, 0.2], "n_agency": 40, "n_communion": 38})
    lines = elo_claims.family_gaps(gaps)
    assert lines[0] == "a: agency minus communion, Hedges' g = 0.300 [0.100, 0.500], permutation p = 0.010."
    assert "do not overlap: the families differ (on 40 agentic and 38 communal words)" in lines[2]
    assert "overlap, so these runs show no difference" in elo_claims.family_gaps(gaps.assign(g_low=[-0.1, -0.4]))[2]
    assert len(elo_claims.family_gaps(gaps.iloc[:1])) == 1


def test_data_quantity_orders_by_pairs_and_compares_the_ends():
    abl = pd.DataFrame({"base": "m", "fraction": [1.0, 0.1], "n_pairs": [1000, 100], "tau": [0.45, 0.30],
                        "tau_low": [0.43, 0.25], "tau_high": [0.47, 0.35]})
    (line,) = elo_claims.data_quantity(abl)
    assert line == "m: held-out tau by training pairs 100 0.300, 1,000 0.450; the largest run's interval lies apart from the smallest's."
    (flat,) = elo_claims.data_quantity(abl.assign(tau_high=[0.47, 0.44]))
    assert flat.endswith("the intervals of the smallest and the largest run overlap.")
    with pytest.raises(InputError, match="is empty"):
        elo_claims.data_quantity(abl.iloc[:0])
