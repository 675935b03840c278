"""rmlib.stats.summaries: the chapters' summaries, checked against SciPy, statsmodels and by hand."""

import itertools

import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps

from rmlib import stats
from rmlib.stats import summaries


def _wide(n=60, models=("A", "B", "C"), seed=0, ties=True):
    rng = np.random.default_rng(seed)
    human = rng.normal(size=n)
    cols = {"human": np.round(human, 1) if ties else human}
    for i, m in enumerate(models):
        cols[m] = np.round(human * (0.5 + 0.2 * i) + rng.normal(size=n), 1 if ties else 6)
    return pd.DataFrame(cols, index=pd.Index([f"item {i:03d}" for i in range(n)], name="item"))


def test_mean_ci_is_the_t_interval():
    rng = np.random.default_rng(1)
    groups = {"positive": rng.normal(1, 2, size=7), "negative": rng.normal(0, 1, size=30)}
    summary = pd.DataFrame({"n": [len(v) for v in groups.values()], "mean": [v.mean() for v in groups.values()],
                            "sem": [sps.sem(v) for v in groups.values()]}, index=list(groups))
    out = summaries.mean_ci(summary, level=0.9)
    for name, v in groups.items():
        lo, hi = sps.t.interval(0.9, len(v) - 1, loc=v.mean(), scale=sps.sem(v))
        assert out.loc[name, "low"] == pytest.approx(lo, rel=1e-12)
        assert out.loc[name, "high"] == pytest.approx(hi, rel=1e-12)
    # wider than the normal approximation the chapter used to draw, for small n
    assert out.loc["positive", "high"] - out.loc["positive", "mean"] > 1.645 * summary.loc["positive", "sem"]
    one = summaries.mean_ci(pd.DataFrame({"n": [1], "mean": [2.0], "sem": [np.nan]}))
    assert np.isnan(one["low"].iloc[0]) and np.isnan(one["high"].iloc[0])


def test_class_cohens_d_leaves_out_words_in_both_classes():
    table = pd.DataFrame({"token_id": range(7), "decoded": ["good", " great", "bad", "awful", "envious", "nice", "x"],
                          "score": [2.0, 3.0, -1.0, -2.0, 100.0, 2.5, 0.0]})
    bing = pd.DataFrame({"word": ["good", "great", "bad", "awful", "envious", "envious", "nice"],
                         "sentiment": ["positive", "positive", "negative", "negative", "positive", "negative",
                                       "positive"]})
    bing.attrs["in_both"] = ["envious"]
    d = summaries.class_cohens_d(table, bing, strip=True)
    pos, neg = np.array([2.0, 3.0, 2.5]), np.array([-1.0, -2.0])
    pooled = np.sqrt(((len(pos) - 1) * pos.var(ddof=1) + (len(neg) - 1) * neg.var(ddof=1)) / (len(pos) + len(neg) - 2))
    assert d == pytest.approx((pos.mean() - neg.mean()) / pooled)
    assert np.isnan(summaries.class_cohens_d(table[table["decoded"] != "bad"], bing))  # one negative token left
    # a graded lexicon (AFINN, VADER): classes by the sign of the value, 0 in neither
    graded = pd.Series({"good": 1.9, "great": 3.1, "bad": -2.5, "awful": -2.0, "nice": 1.8, "x": 0.0}, name="vader")
    assert summaries.class_cohens_d(table, graded) == pytest.approx((pos.mean() - neg.mean()) / pooled)


def test_pair_summary_by_hand_and_human_mean():
    mat = pd.DataFrame([[1, .2, .5], [.2, 1, .9], [.5, .9, 1]], index=list("abc"), columns=list("abc"), dtype=float)
    with_h = pd.DataFrame(np.eye(4), index=["H", *"abc"], columns=["H", *"abc"])
    with_h.loc["H", list("abc")] = with_h.loc[list("abc"), "H"] = [.1, .3, .8]
    values, pairs = summaries.pair_summary({("k", "kendall"): mat}, str.upper, with_humans={("k", "kendall"): with_h},
                                           human="H")
    row = values.iloc[0]
    assert (row["prompt"], row["pairs"]) == ("K", 3)
    assert row["mean"] == pytest.approx((.2 + .5 + .9) / 3)
    assert (row["lowest"], row["highest"]) == (.2, .9)
    assert row["mean with humans"] == pytest.approx(0.4)
    assert pairs.iloc[0]["lowest pair"] == "a / b" and pairs.iloc[0]["highest pair"] == "b / c"


def test_across_prompts_matches_scipy():
    w1, w2 = _wide(seed=1).drop(columns="human"), _wide(seed=2).drop(columns="human")
    out = summaries.across_prompts({"p": w1, "q": w2}).set_index("model")
    assert list(out.columns) == ["p ~ q"]
    for m in w1.columns:
        assert out.loc[m, "p ~ q"] == pytest.approx(sps.kendalltau(w1[m], w2[m]).statistic, abs=1e-12)


def test_framing_and_shared_correlations_match_scipy():
    rng = np.random.default_rng(3)
    t = {("m", r): pd.DataFrame({"token_id": range(50), "decoded": [f"w{i}" for i in range(50)],
                                 "score": rng.normal(size=50)}) for r in ("best", "worst", "greatest")}
    out = summaries.framing_correlations(t, ["m"], [("best", "worst")])
    a, b = t[("m", "best")]["score"], t[("m", "worst")]["score"]
    assert out["pair"].tolist() == ["best vs worst"] and out["n tokens"].tolist() == [50]
    assert out["Pearson r"].iloc[0] == pytest.approx(sps.pearsonr(a, b).statistic)
    assert out["Spearman rho"].iloc[0] == pytest.approx(sps.spearmanr(a, b).statistic)
    shared = {r: pd.DataFrame({"m": t[("m", r)]["score"].to_numpy()}, index=t[("m", r)]["decoded"]) for r in
              ("best", "worst", "greatest")}
    sh = summaries.shared_framing_correlations(shared)
    assert list(sh.columns) == ["model", "pair", "method", "n", "r"] and len(sh) == 4
    row = sh[(sh["pair"] == "best vs worst") & (sh["method"] == "spearman")].iloc[0]
    assert row["r"] == pytest.approx(sps.spearmanr(a, b).statistic)


def test_top_mass_by_hand():
    logp = np.log(np.array([0.5, 0.3, 0.15, 0.05]))
    long = pd.DataFrame({"model": "m", "prompt": "p", "token_id": range(4), "token": list("abcd"),
                         "decoded": list("abcd"), "score": logp})
    out = summaries.top_mass(long, 2, str.upper).iloc[0]
    assert (out["prompt"], out["most likely token"]) == ("P", "a")
    assert out["its probability"] == pytest.approx(0.5)
    assert out["probability of the top 2"] == pytest.approx(0.8)


def test_family_difference_is_the_permutation_test():
    res = pd.DataFrame({"model": list("abcde"), "family": ["llama3", "llama3", "gemma2", "gemma2", "gemma2"],
                        "prompt": "k", "hedges_g": [0.5, 0.7, -0.2, -0.4, np.nan]})
    out = summaries.family_difference(res, n_perm=999).iloc[0]
    ref = stats.permutation_test([0.5, 0.7], [-0.2, -0.4], n_perm=999)
    assert (out["n_llama"], out["n_gemma"]) == (2, 2)
    assert out["difference"] == pytest.approx(0.6 + 0.3) and out["p"] == ref.pvalue and out["exact"]
    # exact enumeration by hand: 6 splits of 4 values, |mean diff| >= 0.9 for 2 of them
    vals = [0.5, 0.7, -0.2, -0.4]
    diffs = [abs(np.mean([vals[i] for i in s]) - np.mean([vals[i] for i in range(4) if i not in s]))
             for s in itertools.combinations(range(4), 2)]
    assert out["p"] == pytest.approx(sum(d >= 0.9 - 1e-12 for d in diffs) / 6)
    assert summaries.family_difference(res[res["family"] != "llama3"]).empty


def test_detectable_effect_has_the_asked_power():
    d = summaries.detectable_effect(12, 20, alpha=0.05, power=0.8)
    df = 12 + 20 - 2
    nc = d / np.sqrt(1 / 12 + 1 / 20)
    crit = sps.t.ppf(0.975, df)
    power = sps.nct.sf(crit, df, nc) + sps.nct.cdf(-crit, df, nc)
    assert power == pytest.approx(0.8, abs=1e-4)
    with pytest.raises(ValueError, match="at least 2"):
        summaries.detectable_effect(1, 5)


def test_bootstrap_point_equals_tau_matrix_and_tau_summary():
    # (moved from chapter 4: the bootstrap's own tau-b must equal the SciPy-based matrix)
    w = _wide(n=80, models=("A", "B", "C", "D"))
    tau = stats.tau_matrix(w)
    boot = stats.bootstrap_taus(w, 30, seed=0)
    np.testing.assert_allclose(boot.point.to_numpy(), tau.to_numpy(), atol=1e-9)
    assert tau.loc["human", "A"] == pytest.approx(sps.kendalltau(w["human"], w["A"]).statistic, abs=1e-12)
    row = summaries.tau_summary({"k": tau}, {"k": boot}).iloc[0]
    hm = tau.loc["human"].drop("human")
    assert row["human-model mean"] == pytest.approx(hm.mean()) and row["SD"] == pytest.approx(hm.std(ddof=1))
    assert row["max model"] == hm.idxmax()
    ci = boot.summary()
    assert row["human-model 95% CI"] == (f"{ci.loc['human_model_mean', 'low']:.3f} to "
                                         f"{ci.loc['human_model_mean', 'high']:.3f}")


def test_split_means_by_hand():
    s = pd.DataFrame({"prompt": ["p", "p", "q"], "model": ["a", "b", "a"], "tau_top": [0.4, 0.1, 0.3],
                      "tau_bottom": [0.2, 0.3, 0.1]})
    out = summaries.split_means(s).set_index("prompt")
    assert out.loc["p", "tau_top"] == pytest.approx(0.25) and out.loc["p", "top minus bottom"] == pytest.approx(0.0)
    assert out.loc["p", "RMs with top > bottom"] == 1 and out.loc["q", "RMs with top > bottom"] == 1


def test_cross_prompt_taus_match_scipy_on_common_items():
    a, b = _wide(seed=4), _wide(seed=5).iloc[10:]
    b.loc[b.index[0], "A"] = np.nan
    out = summaries.cross_prompt_taus({"p": a, "q": b}, 20, seed=0)
    assert out["model"].tolist() == ["A", "B", "C"]
    row = out.iloc[0]
    both = pd.concat([a["A"].rename("p"), b["A"].rename("q")], axis=1, join="inner").dropna()
    assert row["items"] == len(both) == 49
    assert row["tau"] == pytest.approx(sps.kendalltau(both["p"], both["q"]).statistic, abs=1e-12)
    assert row["95% CI low"] <= row["tau"] <= row["95% CI high"]


def test_rank_difference_table_and_sample_items():
    w = _wide(n=40)
    diffs, overlap = summaries.rank_difference_table({"k": w}, 3)
    assert len(diffs) == 6 and set(diffs["prompt"]) == {"k"}
    assert overlap.iloc[0]["items listed"] == 6 and 0 <= overlap.iloc[0]["also listed by the paper's variant"] <= 6
    pd.testing.assert_frame_equal(diffs.drop(columns="prompt"), stats.rank_differences(w, 3))
    s = summaries.sample_items(w.index, 10, seed=3)
    assert len(s) == 10 and s.isin(w.index).all() and list(s) == sorted(s, key=list(w.index).index)
    assert s.equals(summaries.sample_items(w.index, 10, seed=3))
    assert summaries.sample_items(w.index, 100).equals(w.index)


def test_live_taus_against_scipy():
    w = _wide(n=50)
    w.index = pd.Index([f"item {'x' * (i % 5)}{i}" for i in range(50)], name="item")  # names of varied length
    sample = w.index[::2]
    live = {"k": pd.DataFrame({"live A [logprob]": np.arange(len(sample), dtype=float)[::-1]}, index=sample)}
    out = summaries.live_taus({"k": w}, live, 20, seed=0)
    assert list(out["wides"]["k"].columns) == ["human", "A", "B", "C", "live A [logprob]"]
    hm = out["human"].set_index("ranker")
    assert hm.loc["live A [logprob]", "tau"] == pytest.approx(
        sps.kendalltau(w.loc[sample, "human"], live["k"]["live A [logprob]"]).statistic, abs=1e-12)
    assert hm["live"].tolist() == [False, False, False, True]
    length = out["length"].set_index("ranker")
    assert length.loc["human", "tau"] == pytest.approx(
        sps.kendalltau(w.loc[sample, "human"], sample.str.len()).statistic, abs=1e-12)
    assert out["same"]["a"].tolist() == ["A"] and out["live_columns"] == ["live A [logprob]"]


def test_best_worst_views_and_word_lists():
    per = {"m": {"b": pd.DataFrame({"token_id": [0, 1], "token": ["x", "y"], "decoded": ["x", "y"], "score": [1.0, 2.0]}),
                 "w": pd.DataFrame({"token_id": [0, 1], "token": ["x", "y"], "decoded": ["x", "y"], "score": [0.5, -1.0]})}}
    bw, combos = summaries.best_worst_views(per, "b", "w")
    pd.testing.assert_frame_equal(bw["m"], stats.best_worst(per["m"]["b"], per["m"]["w"]))
    assert combos["prompt"].tolist() == ["best + worst"] * 2 + ["best − worst"] * 2
    assert combos["score"].tolist() == [1.5, 1.0, 0.5, 3.0] and combos["token"].tolist() == ["x", "y", "x", "y"]
    lists = {"agency": ["lead*", "win"], "communion": ["care", "kind*", "share"]}
    s = summaries.word_list_summary(lists).set_index("dimension")
    assert s.loc["agency", "wildcards"] == 1 and s.loc["communion", "patterns"] == 3
    assert s.loc["communion", "examples"] == "care, kind*, share"


def test_lexicon_coverage_counts_matches():
    t = pd.DataFrame({"token_id": range(4), "decoded": [" good", "bad", "good", "zzz"], "score": [1.0, 2, 3, 4]})
    afinn = pd.Series({"good": 3, "bad": -3, "nice": 2}, name="afinn")
    afinn.index.name = "word"
    out = summaries.lexicon_coverage({"m": t}, {"AFINN": afinn}, strip=True).iloc[0]
    assert out["tokens scored"] == 4 and out["AFINN: tokens matched"] == 3
    assert out["AFINN: words matched"] == 2 and out["AFINN: words in lexicon"] == 3
    assert summaries.lexicon_coverage({"m": t}, {"AFINN": afinn}, strip=False).iloc[0]["AFINN: tokens matched"] == 2


def test_live_column_round_trips_through_live_taus():
    from rmlib import registry

    hub, nick = registry.paper_models()[["hub_id", "nickname"]].iloc[0]
    assert summaries.live_column(hub, "classifier") == f"live {nick} [classifier]"
    assert summaries.live_column("HuggingFaceTB/SmolLM2-135M-Instruct", "logprob") == "live SmolLM2-135M-Instruct [logprob]"
