"""The finding templates about EloEverything rankings (rmlib.stats.elo_claims), fed with tables
computed as chapters 4 and 7 compute them and checked against independent scipy computations."""

import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps

from rmlib import stats
from rmlib.errors import InputError
from rmlib.stats import elo_claims, paper, summaries
from rmlib.tables import paper_release


@pytest.fixture(scope="module")
def elo():
    return {k: stats.elo_wide(paper_release.eloeverything(k)) for k in ("one_word_greatest", "greatest_ever")}


def _scipy_split(w, k):
    d = w.dropna()
    order = np.argsort(-d["human"].to_numpy(float), kind="stable")
    top, bottom = d.iloc[order[:k]], d.iloc[order[-k:]]
    models = [c for c in d.columns if c != "human"]
    return (np.mean([sps.kendalltau(top["human"], top[m]).statistic for m in models]),
            np.mean([sps.kendalltau(bottom["human"], bottom[m]).statistic for m in models]))


def test_top_vs_bottom_from_the_pages_split_means_matches_scipy(elo):
    splits = pd.concat([stats.bootstrap_split_agreement(w, 5, n_items=100, seed=0).rename_axis("model")
                        .reset_index().assign(prompt=key) for key, w in elo.items()], ignore_index=True)
    means = summaries.split_means(splits)
    for key, w in elo.items():
        top, bottom = _scipy_split(w, 100)
        row = means.set_index("prompt").loc[key]
        assert row["tau_top"] == pytest.approx(top, abs=1e-9) and row["tau_bottom"] == pytest.approx(bottom, abs=1e-9)
    text = elo_claims.top_vs_bottom(means)
    top, bottom = _scipy_split(elo["greatest_ever"], 100)
    assert f"'greatest_ever' {top:.3f} vs {bottom:.3f}" in text and "(0.19 vs 0.08)" in text
    assert text.count("RMs higher on top") == 2
    flipped = means.assign(tau_top=means["tau_bottom"], tau_bottom=means["tau_top"])
    assert "Unlike the paper" in elo_claims.top_vs_bottom(flipped)


def test_split_sizes_says_whether_any_size_gives_both_printed_numbers():
    sizes = pd.DataFrame({"prompt": ["a", "a"], "items per group": [50, "half"], "tau_top": [0.191, 0.25],
                          "tau_bottom": [0.12, 0.05]})
    text = elo_claims.split_sizes(sizes)
    assert "'a', 50 per group: 0.191 vs 0.120" in text
    assert "No size tried gives both printed numbers at two decimals; 1 give one of them" in text
    assert "in every row" in text
    both = sizes.assign(tau_bottom=[0.081, 0.3])
    text = elo_claims.split_sizes(both)
    assert "Gives both printed numbers: 'a' with 50 per group" in text and "in some rows only" in text
    with pytest.raises(InputError, match="missing columns"):
        elo_claims.split_sizes(sizes.drop(columns="tau_top"))


def test_elo_agreement_quotes_the_summary_of_the_tau_matrix(elo):
    w = elo["one_word_greatest"]
    taus = {"one_word_greatest": stats.tau_matrix(w)}
    summary = summaries.tau_summary(taus, {"one_word_greatest": stats.bootstrap_taus(w, 3, seed=0)})
    d = w.dropna()
    hm = np.array([sps.kendalltau(d["human"], d[m]).statistic for m in d.columns if m != "human"])
    (line,) = elo_claims.elo_agreement(summary)
    assert f"human-RM Kendall tau {hm.mean():.2f} on average (SD {hm.std(ddof=1):.2f}" in line
    assert f"{hm.min():.2f} to {hm.max():.2f}" in line
    mm = taus["one_word_greatest"].drop(index="human", columns="human").to_numpy()
    off = mm[~np.eye(len(mm), dtype=bool)].mean()
    assert f"{off:.2f} over the distinct RM pairs ({mm.mean():.2f} with each RM's tau of 1" in line


def test_verdict_count_counts_the_papers_verdicts():
    v = paper.elo_verdicts()
    text = elo_claims.verdict_count(v)
    n_ok = int((v["verdict"] == "reproduces").sum())
    assert text.startswith(f"{n_ok} of the {len(v)} values §4 prints reproduce")
    dataset = v[v["claim"] == "elo_dataset"]
    assert f"data set {int((dataset['verdict'] == 'reproduces').sum())} of {len(dataset)}" in text


def test_rank_gap_reads_ranks_computed_on_the_page(elo):
    w = elo["greatest_ever"]
    r = stats.ranks(w).loc["The Holocaust"]
    by_hand = w.rank(ascending=False, method="average").loc["The Holocaust"]
    assert r["human"] == by_hand["human"] and r.drop("human").median() == by_hand.drop("human").median()
    text = elo_claims.rank_gap("The Holocaust", r["human"], r.drop("human").median(), len(w), "greatest_ever")
    assert f"people rank The Holocaust {by_hand['human']:,.0f} of 7,530" in text
    assert f"median rank is {np.median(by_hand.drop('human')):,.0f}" in text


def test_live_agreement_places_each_live_column_beside_the_released_rms():
    table = pd.DataFrame({"prompt": "p", "ranker": ["human", "A", "B", "live x [logprob]"],
                          "live": [False, False, False, True], "tau with people": [np.nan, 0.2, 0.35, 0.1],
                          "tau with length": [-0.3, -0.1, 0.0, -0.6]})
    (line,) = elo_claims.live_agreement(table)
    assert line == ("'p': live x [logprob] has tau 0.10 with people on the sampled items (the released RMs: 0.20 "
                    "to 0.35) and -0.60 with the item name's length (people: -0.30).")
    with pytest.raises(InputError, match="'human' row"):
        elo_claims.live_agreement(table[table["ranker"] != "human"])
