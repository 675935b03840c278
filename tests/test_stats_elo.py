"""rmlib.stats.elo: the paper's EloEverything numbers (tau-b itself: test_stats_tau.py)."""

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from rmlib.tables import paper_release
from rmlib.stats import elo


def scipy_tau(x, y):
    return stats.kendalltau(x, y).statistic


# ---------------------------------------------------------------- real data


@pytest.fixture(scope="module")
def greatest():
    return elo.elo_wide(paper_release.eloeverything("one_word_greatest"))


def test_elo_wide_shape(greatest):
    assert greatest.shape == (7530, 11)
    assert greatest.columns[0] == "human" and "S-Lla-8B-v0.2" in greatest.columns
    assert greatest.attrs["prompt"] == "What, in one word, is the greatest thing ever?"
    with pytest.raises(ValueError, match="eloeverything"):
        elo.elo_wide(pd.DataFrame({"x": [1]}))


def test_human_model_tau_matches_paper(greatest):
    tau = elo.tau_matrix(greatest)
    s = elo.human_model_summary(tau)
    # published: mean 0.294, SD 0.059, range 0.219-0.390
    assert round(s["mean"], 3) == 0.294
    assert round(s["sd"], 3) == 0.059
    assert round(s["min"], 3) == 0.219 and round(s["max"], 3) == 0.390
    # independent: scipy on the raw columns
    raw = paper_release.eloeverything("one_word_greatest")
    models = [c for c in raw.columns if "/" in c]
    ref = [scipy_tau(raw["elo_score"], raw[m]) for m in models]
    assert s["mean"] == pytest.approx(np.mean(ref)) and s["sd"] == pytest.approx(np.std(ref, ddof=1))


def test_model_model_mean_with_and_without_diagonal(greatest):
    tau = elo.tau_matrix(greatest)
    mm = elo.model_model_mean(tau)
    block = tau.drop(index="human", columns="human").to_numpy()
    k = block.shape[0]
    assert mm["mean_with_diagonal"] == pytest.approx(block.mean())
    assert mm["mean_offdiag"] == pytest.approx((block.sum() - k) / (k * k - k))
    # the paper's 0.55 is the mean with the diagonal of ones averaged in
    assert round(mm["mean_with_diagonal"], 2) == 0.55
    assert mm["mean_offdiag"] < 0.52


def test_split_agreement_by_hand(greatest):
    out = elo.split_agreement(greatest, fraction=0.1)
    k = int(0.1 * 7530)
    srt = greatest.sort_values("human", ascending=False, kind="stable")
    top, bottom = srt.iloc[:k], srt.iloc[-k:]
    m = "R-Lla-3B"
    assert out.loc[m, "tau_top"] == pytest.approx(scipy_tau(top["human"], top[m]))
    assert out.loc[m, "tau_bottom"] == pytest.approx(scipy_tau(bottom["human"], bottom[m]))
    assert out.attrs["n_per_group"] == k
    with pytest.raises(ValueError, match="fraction"):
        elo.split_agreement(greatest, fraction=0.7)


def test_bootstrap_taus_fast_and_exact(greatest):
    import time

    t0 = time.perf_counter()
    bs = elo.bootstrap_taus(greatest, n_boot=200, seed=1)
    elapsed = time.perf_counter() - t0
    assert bs.samples.shape == (200, 11, 11)
    assert elapsed < 60  # a generous bound (seconds) that the weighted computation stays far below
    # one resample recomputed with scipy on the resampled items
    W = elo.bootstrap_weights(7530, 200, seed=1)
    idx = np.repeat(np.arange(7530), W[123])
    d = greatest.iloc[idx]
    assert bs.samples[123, 0, 4] == pytest.approx(scipy_tau(d["human"], d.iloc[:, 4]), abs=1e-12)
    lo, hi = bs.ci()
    point = elo.tau_matrix(greatest)
    assert np.allclose(bs.point.to_numpy(), point.to_numpy())
    assert (lo.to_numpy() <= point.to_numpy() + 1e-12).all() and (point.to_numpy() <= hi.to_numpy() + 1e-12).all()
    summ = bs.summary()
    assert summ.loc["human_model_mean", "estimate"] == pytest.approx(0.2936, abs=1e-4)
    assert summ.loc["human_model_mean", "low"] < 0.2936 < summ.loc["human_model_mean", "high"]
    assert len(bs.tidy()) == 55


def test_bootstrap_split_agreement_intervals(greatest):
    out = elo.bootstrap_split_agreement(greatest, n_boot=30, fraction=0.1, seed=0)
    assert (out["tau_top_low"] <= out["tau_top"]).all() and (out["tau_top"] <= out["tau_top_high"]).all()


# ---------------------------------------------------------------- ranks


def test_rank_differences_by_hand():
    wide = pd.DataFrame(
        {"human": [10.0, 9, 8, 7, 6], "m1": [1.0, 2, 3, 4, 5], "m2": [2.0, 1, 3, 5, 4]},
        index=list("abcde"),
    )
    out = elo.rank_differences(wide, n=2).set_index("item")
    # human ranks a..e = 1..5; model ranks a: (5, 4) -> median 4.5
    assert out.loc["a", "human_rank"] == 1 and out.loc["a", "model_rank"] == 4.5
    assert out.loc["a", "diff"] == 3.5 and out.loc["a", "side"] == "humans_better"
    assert out.loc["e", "diff"] == pytest.approx(np.median([1, 2]) - 5)
    # the paper's median also took the human column
    paper = elo.rank_differences(wide, n=2, include_human_in_average=True).set_index("item")
    assert paper.loc["a", "model_rank"] == np.median([1, 5, 4])
    assert list(out["diff"]) == sorted(out["diff"], reverse=True)


def test_rank_trajectories_groups(greatest):
    tr = elo.rank_trajectories(greatest)
    assert set(tr["ranker"]) == set(greatest.columns)
    top = tr[(tr["group"] == "human_top") & (tr["ranker"] == "human")]
    assert sorted(top["rank"]) == [1, 2, 3, 4, 5]
    bottom = tr[(tr["group"] == "human_bottom") & (tr["ranker"] == "human")]
    assert bottom["rank"].min() >= 7530 - 5
    fav = tr[tr["group"] == "model_top"]
    ranks = elo.ranks(greatest)
    for item in fav["item"].unique():
        assert ranks.loc[item].drop("human").min() == 1
