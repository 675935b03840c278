"""rmlib.stats.lexical against hand computations (numpy lstsq, scipy)."""

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from rmlib.tables import lexicons, paper_release, word_frequencies
from rmlib.stats import frequency as F
from rmlib.stats import lexical as L


def score_table(decoded, scores, start=0):
    return pd.DataFrame({
        "token_id": np.arange(start, start + len(decoded)),
        "token": decoded,
        "decoded": decoded,
        "score": np.asarray(scores, dtype=float),
    })


def ols_by_hand(y, X, hc3=False):
    """OLS with an intercept: slopes, SEs (classical or HC3), t, p, df."""
    y = np.asarray(y, float)
    X = np.column_stack([np.ones(len(y))] + [np.asarray(x, float) for x in X])
    beta, *_ = np.linalg.lstsq(X, y, rcond=None)
    e = y - X @ beta
    n, k = X.shape
    xtx_inv = np.linalg.inv(X.T @ X)
    if hc3:
        h = np.einsum("ij,jk,ik->i", X, xtx_inv, X)
        meat = X.T @ (X * (e**2 / (1 - h) ** 2)[:, None])
        cov = xtx_inv @ meat @ xtx_inv
    else:
        cov = xtx_inv * (e @ e) / (n - k)
    se = np.sqrt(np.diag(cov))
    t = beta / se
    p = 2 * stats.t.sf(np.abs(t), n - k)
    return beta, se, t, p, n - k


# ---------------------------------------------------------------- matching


def test_match_lexicon_strip_and_case():
    t = score_table([" Good", "good", "BAD ", "xyz", "Bad", None], [1, 2, 3, 4, 5, 6])
    lex = pd.Series({"good": 3, "bad": -3}, name="afinn")
    m = L.match_lexicon(t, lex)
    assert sorted(m["token_id"]) == [0, 1, 2, 4]
    assert dict(zip(m["token_id"], m["afinn"])) == {0: 3, 1: 3, 2: -3, 4: -3}
    assert m.attrs["n_matched"] == 4 and m.attrs["n_words"] == 2 and m.attrs["n_lexicon"] == 2
    # the paper's join: lower-case only, so " Good" and "BAD " do not match
    m2 = L.match_lexicon(t, lex, strip=False)
    assert sorted(m2["token_id"]) == [1, 4]


def test_match_lexicon_forms_and_wide_index():
    wide = pd.DataFrame({"A": [1.0, 2.0, 3.0], "B": [3.0, 2.0, 1.0]}, index=["Love", "war", "tea"])
    bing = pd.DataFrame({"word": ["love", "war"], "sentiment": ["positive", "negative"]})
    m = L.match_lexicon(wide, bing, on=None)
    assert list(m["item"]) == ["Love", "war"] and list(m["sentiment"]) == ["positive", "negative"]
    assert list(m["A"]) == [1.0, 2.0]
    assert list(L.match_lexicon(wide, {"tea": 1}, on=None)["value"]) == [1]
    assert list(L.match_lexicon(wide, ["tea", "war"], on=None)["item"]) == ["war", "tea"]
    # a word listed twice in the lexicon gives two rows (many-to-many)
    twice = pd.DataFrame({"word": ["war", "war"], "sentiment": ["negative", "positive"]})
    assert len(L.match_lexicon(wide, twice, on=None)) == 2


def test_match_lexicon_errors():
    t = score_table(["a"], [1])
    with pytest.raises(ValueError, match="no column 'text'"):
        L.match_lexicon(t, ["a"], on="text")
    with pytest.raises(TypeError, match="lexicon must be"):
        L.match_lexicon(t, 5)
    with pytest.raises(ValueError, match="value_name"):
        L.match_lexicon(t, pd.DataFrame({"word": ["a"], "x": [1], "y": [2]}))
    with pytest.raises(ValueError, match="'word' column"):
        L.match_lexicon(t, pd.DataFrame({"w": ["a"], "x": [1]}))


# ---------------------------------------------------------------- sentiment


@pytest.fixture
def afinn_like():
    rng = np.random.default_rng(3)
    words = [f"w{i}" for i in range(300)]
    values = rng.choice([-5, -4, -3, -2, -1, 1, 2, 3, 4, 5], size=300)
    lex = pd.Series(values, index=words, name="afinn")
    score = np.where(values > 0, 0.8 * values, 0.3 * values) + rng.normal(0, 1, 300)
    # a second (upper-case, spaced) token for some words: duplicates are kept
    extra = [f" W{i}" for i in range(0, 300, 7)]
    t = score_table(words + extra + ["zzz"], list(score) + list(score[::7] + 0.5) + [9.0])
    return t, lex


def test_valence_slopes_match_lstsq(afinn_like):
    t, lex = afinn_like
    out = L.valence_slopes(t, lex)
    m = L.match_lexicon(t, lex)
    for valence, sel in (("positive", m["afinn"] > 0), ("negative", m["afinn"] < 0)):
        beta, se, tt, p, df = ols_by_hand(m.loc[sel, "score"], [m.loc[sel, "afinn"]])
        row = out.loc[valence]
        assert row["n"] == sel.sum()
        assert row["slope"] == pytest.approx(beta[1], rel=1e-10)
        assert row["intercept"] == pytest.approx(beta[0], rel=1e-10)
        assert row["se"] == pytest.approx(se[1], rel=1e-10)
        assert row["p"] == pytest.approx(p[1], rel=1e-8)
        half = stats.t.ppf(0.975, df) * se[1]
        assert row["ci_low"] == pytest.approx(beta[1] - half, rel=1e-10)
        assert row["ci_high"] == pytest.approx(beta[1] + half, rel=1e-10)
    # HC3 standard errors by hand
    hc = L.valence_slopes(t, lex, cov_type="HC3")
    sel = m["afinn"] > 0
    _, se3, _, p3, _ = ols_by_hand(m.loc[sel, "score"], [m.loc[sel, "afinn"]], hc3=True)
    assert hc.loc["positive", "se"] == pytest.approx(se3[1], rel=1e-10)
    assert hc.loc["positive", "p"] == pytest.approx(p3[1], rel=1e-8)


def test_valence_slopes_rejects_class_lexicon():
    t = score_table(["good", "bad"], [1, 2])
    with pytest.raises(ValueError, match="numeric sentiment"):
        L.valence_slopes(t, pd.DataFrame({"word": ["good", "bad"], "sentiment": ["positive", "negative"]}))


def test_sentiment_by_class_by_hand():
    t = score_table(["good", "great", "bad", "awful", "envious", "x"], [2.0, 4.0, -1.0, -3.0, 10.0, 0.0])
    bing = pd.DataFrame({"word": ["good", "great", "bad", "awful", "envious", "envious"],
                         "sentiment": ["positive", "positive", "negative", "negative", "positive", "negative"]})
    out = L.sentiment_by_class(t, bing)
    assert out.loc["positive", "n"] == 2 and out.loc["positive", "mean"] == 3.0
    assert out.loc["negative", "mean"] == -2.0
    assert out.loc["negative", "sd"] == pytest.approx(np.std([-1, -3], ddof=1))
    kept = L.sentiment_by_class(t, bing, drop_ambiguous=False)
    assert kept.loc["positive", "n"] == 3
    # numeric lexicon: classes by sign
    afinn = pd.Series({"good": 3, "bad": -3}, name="afinn")
    assert list(L.sentiment_by_class(t, afinn).index) == ["negative", "positive"]


def make_slopes(pos, neg, prompt="greatest"):
    rows = []
    for i, (p, n) in enumerate(zip(pos, neg)):
        rows.append({"model": f"m{i}", "prompt": prompt, "valence": "positive", "slope": p, "p": 0.01})
        rows.append({"model": f"m{i}", "prompt": prompt, "valence": "negative", "slope": n, "p": 0.2})
    return pd.DataFrame(rows)


def test_asymmetry_test_is_paired_t_on_absolute_slopes():
    rng = np.random.default_rng(0)
    pos, neg = rng.normal(1, 0.5, 10), rng.normal(-0.6, 0.5, 10)
    slopes = pd.concat([make_slopes(pos, neg), make_slopes(neg * -1, pos * -1, "worst")])
    res = L.asymmetry_test(slopes).set_index("prompt")
    ref = stats.ttest_rel(np.abs(pos), np.abs(neg))
    assert res.loc["greatest", "t"] == pytest.approx(ref.statistic)
    assert res.loc["greatest", "p"] == pytest.approx(ref.pvalue)
    assert res.loc["greatest", "df"] == 9
    assert res.loc["greatest", "n_pos_stronger"] == int((np.abs(pos) > np.abs(neg)).sum())
    asym = L.slope_asymmetry(slopes)
    g = asym[asym["prompt"] == "greatest"]
    assert np.allclose(g["diff"], np.abs(pos) - np.abs(neg))


def test_sentiment_slopes_many_tables(afinn_like):
    t, lex = afinn_like
    tables = {("m1", "greatest"): t, ("m2", "greatest"): t.assign(score=-t["score"])}
    s = L.sentiment_slopes(tables, lex)
    assert list(s["model"]) == ["m1", "m1", "m2", "m2"]
    one = L.valence_slopes(t, lex)
    assert s.iloc[0]["slope"] == pytest.approx(one.loc["negative", "slope"])
    assert s.iloc[2]["slope"] == pytest.approx(-one.loc["negative", "slope"])
    counts = F.count_significant(s, by=("prompt", "valence"))
    assert set(counts["n_models"]) == {2}


# ---------------------------------------------------------------- framing


def test_prompt_correlation_joins_on_token_id():
    rng = np.random.default_rng(1)
    ids = np.arange(50)
    a = pd.DataFrame({"token_id": ids, "decoded": [str(i) for i in ids], "score": rng.normal(size=50)})
    b = a.assign(score=a["score"] + rng.normal(size=50)).sample(frac=1, random_state=2).iloc[:45]
    r = L.prompt_correlation(a, b)
    j = a.merge(b, on="token_id")
    ref = stats.pearsonr(j["score_x"], j["score_y"])
    assert r["n"] == 45 and r["r"] == pytest.approx(ref[0]) and r["p"] == pytest.approx(ref[1])
    assert L.prompt_correlation(a, b, method="kendall")["r"] == pytest.approx(
        stats.kendalltau(j["score_x"], j["score_y"])[0])
    with pytest.raises(ValueError, match="duplicate keys"):
        L.prompt_correlation(pd.concat([a, a]), b)


def test_best_worst_sum_and_diff():
    best = score_table(["a", "b", "c"], [1.0, 5.0, 2.0])
    worst = score_table(["c", "a", "b"], [4.0, -1.0, 0.5]).assign(token_id=[2, 0, 1])
    bw = L.best_worst(best, worst).set_index("decoded")
    assert bw.loc["a", "sum"] == 0.0 and bw.loc["a", "diff"] == 2.0
    assert bw.loc["c", "sum"] == 6.0 and bw.loc["b", "diff"] == 4.5
    wb = pd.DataFrame({"M": [1.0, 2.0]}, index=["x", "y"])
    ww = pd.DataFrame({"M": [0.5, 3.0], "N": [1.0, 1.0]}, index=["y", "x"])
    s, d = L.best_worst_wide(wb, ww)
    assert list(s.columns) == ["M"] and s.loc["x", "M"] == 4.0 and d.loc["y", "M"] == 1.5


def test_prompt_correlations_wide():
    rng = np.random.default_rng(5)
    a = pd.DataFrame(rng.normal(size=(30, 2)), columns=["M1", "M2"], index=[f"w{i}" for i in range(30)])
    b = a + rng.normal(size=(30, 2))
    out = L.prompt_correlations(a, b, method="spearman")
    assert out.loc["M2", "r"] == pytest.approx(stats.spearmanr(a["M2"], b["M2"])[0])


# ---------------------------------------------------------------- frequency


def test_frequency_slope_with_and_without_sentiment(afinn_like):
    t, lex = afinn_like
    rng = np.random.default_rng(9)
    words = list(lex.index[:200])
    freq = pd.DataFrame({"word": words + [words[0], "notinlex"], "freq": list(rng.uniform(0.5, 500, 200)) + [7.0, 3.0]})
    freq.loc[5, "freq"] = 0.0  # dropped: log(0)
    out = F.frequency_slope(t, freq, lex, cov_type="nonrobust").set_index("spec")
    m = L.match_lexicon(t, lex).merge(freq[freq["freq"] > 0], on="word")
    assert out.loc["log_freq", "n"] == len(m) == out.loc["log_freq + sentiment", "n"]
    b1, se1, *_ = ols_by_hand(m["score"], [np.log(m["freq"])])
    b2, se2, *_ = ols_by_hand(m["score"], [np.log(m["freq"]), m["afinn"]])
    assert out.loc["log_freq", "slope"] == pytest.approx(b1[1], rel=1e-10)
    assert out.loc["log_freq + sentiment", "slope"] == pytest.approx(b2[1], rel=1e-10)
    assert out.loc["log_freq + sentiment", "se"] == pytest.approx(se2[1], rel=1e-10)
    hc = F.frequency_slope(t, freq, lex).set_index("spec")  # HC3 by default
    _, se3, *_ = ols_by_hand(m["score"], [np.log(m["freq"]), m["afinn"]], hc3=True)
    assert hc.loc["log_freq + sentiment", "se"] == pytest.approx(se3[1], rel=1e-10)
    # without a lexicon: every token in the frequency list, one spec
    nolex = F.frequency_slope(t, freq)
    assert list(nolex["spec"]) == ["log_freq"]
    m0 = L.match_lexicon(t, freq["word"].drop_duplicates().tolist()).merge(freq[freq["freq"] > 0], on="word")
    assert nolex["n"].iloc[0] == len(m0)


def test_frequency_slopes_counts_models():
    rng = np.random.default_rng(2)
    words = [f"w{i}" for i in range(200)]
    f = rng.uniform(1, 1000, 200)
    freq = pd.DataFrame({"word": words, "freq": f})
    tables = {("up", "p"): score_table(words, np.log(f) + rng.normal(0, 0.1, 200)),
              ("down", "p"): score_table(words, -np.log(f) + rng.normal(0, 0.1, 200)),
              ("flat", "p"): score_table(words, rng.normal(size=200))}
    res = F.frequency_slopes(tables, freq)
    c = F.count_significant(res)
    assert c.loc[0, "n_models"] == 3 and c.loc[0, "n_positive"] == 1 and c.loc[0, "n_negative"] == 1


def test_frequency_errors():
    t = score_table(["a"], [1.0])
    with pytest.raises(ValueError, match="'word' and 'freq'"):
        F.frequency_slope(t, pd.DataFrame({"w": ["a"], "f": [1]}))


def test_wordfreq_frequencies_order():
    pytest.importorskip("wordfreq")
    f = F.wordfreq_frequencies(["the", "love", "qzxqzx", "love"]).set_index("word")
    assert "qzxqzx" not in f.index and len(f) == 2
    assert f.loc["the", "freq"] > f.loc["love", "freq"] > 0
    assert f.loc["love", "log_freq"] == pytest.approx(np.log(f.loc["love", "freq"]))


# ---------------------------------------------------------------- real data


def test_real_afinn_bnc_on_eloeverything_items():
    """AFINN (lexicons) and BNC (word_frequencies) on the published Elo items (one model)."""
    elo = paper_release.eloeverything("one_word_greatest")
    col = "Skywork/Skywork-Reward-Llama-3.1-8B-v0.2"
    t = pd.DataFrame({"token_id": range(len(elo)), "decoded": elo["name"], "score": elo[col]})
    afinn = lexicons.afinn111()
    slopes = L.valence_slopes(t, afinn)
    # independent join: lower-cased names against the AFINN words
    names = elo["name"].str.lower().str.strip()
    j = pd.DataFrame({"word": names, "score": elo[col]}).merge(
        afinn.rename("v").rename_axis("word").reset_index(), on="word")
    pos = j[j["v"] > 0]
    ref = stats.linregress(pos["v"], pos["score"])
    assert slopes.loc["positive", "n"] == len(pos) > 20
    assert slopes.loc["positive", "slope"] == pytest.approx(ref.slope, rel=1e-9)
    assert slopes.loc["positive", "se"] == pytest.approx(ref.stderr, rel=1e-9)
    bnc = word_frequencies.bnc_frequencies()
    fr = F.frequency_slope(t, bnc, afinn, cov_type="nonrobust").set_index("spec")
    jj = j.merge(bnc[bnc["freq"] > 0][["word", "freq"]], on="word")
    b, *_ = ols_by_hand(jj["score"], [np.log(jj["freq"]), jj["v"]])
    assert fr.loc["log_freq + sentiment", "slope"] == pytest.approx(b[1], rel=1e-9)
    bing = L.sentiment_by_class(t, lexicons.bing_lexicon())
    assert set(bing.index) == {"negative", "positive"}
    # reward models score positive items above negative ones
    assert bing.loc["positive", "mean"] > bing.loc["negative", "mean"]


def test_iter_tables_accepts_every_container_form():
    t = pd.DataFrame({"token_id": [0], "score": [1.0]})
    t.attrs["provenance"] = {"model_id": "m", "prompt": "p"}
    u = pd.DataFrame({"token_id": [1], "score": [2.0]})
    assert [(m, p) for m, p, _ in L.iter_tables(t)] == [("m", "p")]
    assert [(m, p) for m, p, _ in L.iter_tables({("a", "q"): u, ("b", "r"): t})] == [("a", "q"), ("b", "r")]
    got = list(L.iter_tables({"x": t, "y": u}))
    assert [(m, p) for m, p, _ in got] == [("x", "p"), ("y", None)] and got[1][2] is u
    with pytest.raises(TypeError, match="mapping"):
        list(L.iter_tables([t]))
    with pytest.raises(TypeError, match=r"tables\['x'\]"):
        list(L.iter_tables({"x": [1, 2]}))
    with pytest.raises(ValueError, match="model, prompt"):
        list(L.iter_tables({("a", "b", "c"): t}))
