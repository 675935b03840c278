"""Chapter 3's general steps: §3's statistics (stats.paper.sentiment_asymmetry, frequency_counts), the
published top/bottom tables in side-by-side layout and the provenance table, checked against scipy and
hand computations on synthetic scores and the shared data."""

import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps

from rmlib import prompts
from rmlib.errors import InputError
from rmlib.stats import paper
from rmlib.tables import lexicons, paper_release, word_frequencies
from rmlib.tables.provenance import provenance_table, template_fingerprint

AFINN = lexicons.afinn111()
HUBS = ["Ray2333/GRM-gemma2-2B-rewardmodel-ft", "Ray2333/GRM-Llama3.2-3B-rewardmodel-ft",
        "Skywork/Skywork-Reward-Gemma-2-27B"]


def _synthetic_long(pos_slopes, neg_slopes, seed=0):
    """Three paper RMs' scores for AFINN words (no leading space: the paper's matching keeps them)."""
    rng = np.random.default_rng(seed)
    words = [w for w in AFINN.index if " " not in w and AFINN[w] != 0][:600]
    a = AFINN[words].to_numpy(float)
    rows = []
    for hub, bp, bn in zip(HUBS, pos_slopes, neg_slopes):
        for text in prompts.PAPER_PROMPTS.values():
            score = np.where(a > 0, bp * a, bn * a) + rng.normal(0, 0.5, len(a))
            rows.append(pd.DataFrame({"model": hub, "prompt": text, "token_id": np.arange(len(words)),
                                      "token": words, "decoded": words, "score": score}))
    return pd.concat(rows, ignore_index=True)


def _scipy_asymmetry(long, prompt_key):
    text = prompts.PAPER_PROMPTS[prompt_key]
    pos, neg = [], []
    for _, g in long[long["prompt"] == text].groupby("model", sort=False):
        a = AFINN.reindex(g["decoded"].str.lower()).to_numpy(float)
        s = g["score"].to_numpy(float)
        pos.append(abs(sps.linregress(a[a > 0], s[a > 0]).slope))
        neg.append(abs(sps.linregress(a[a < 0], s[a < 0]).slope))
    return sps.ttest_rel(pos, neg).statistic, int((np.array(pos) > np.array(neg)).sum())


def test_sentiment_asymmetry_and_counts_recompute_the_papers_statistics():
    long = _synthetic_long([2.0, 1.5, 1.2], [1.0, 1.4, 0.3])
    test = paper.sentiment_asymmetry(long, lexicon=AFINN)["test"].set_index("prompt")
    t, n_pos = _scipy_asymmetry(long, "greatest")
    assert test.loc["greatest", "t"] == pytest.approx(t) and test.loc["greatest", "n_pos_stronger"] == n_pos
    counts = paper.frequency_counts(long, lexicon=AFINN, frequencies=word_frequencies.bnc_frequencies(rows="paper"))["counts"]
    assert len(counts) == 6 and set(counts["spec"]) == {"log_freq", "log_freq + sentiment"}


def test_published_side_by_side_keeps_every_cell_in_rank_order():
    pub = paper_release.published_table("A.8")
    out = paper.published_side_by_side(pub)
    top, bottom = pub[pub["part"] == "top"], pub[pub["part"] == "bottom"]
    assert len(out) == len(pub) and out.index[0] == "top-1" and out.index[-1] == "bottom-1"
    model = [c for c in pub.columns if c not in ("part", "rank")][0]
    col = "paper: " + model.rsplit("/", 1)[-1]
    assert out.loc["top-1", col] == top.loc[top["rank"] == 1, model].iloc[0]
    assert out.loc["bottom-1", col] == bottom.loc[bottom["rank"] == bottom["rank"].max(), model].iloc[0]
    with pytest.raises(ValueError, match="published_table layout"):
        paper.published_side_by_side(pub.drop(columns="rank"))


def test_provenance_table_one_row_per_model_and_per_released_source():
    scored = pd.DataFrame({"model": ["m1"] * 4 + ["m2"] * 2, "prompt": ["p", "p", "q", "q", "p", "p"], "score": 0.0})
    scored.attrs["provenance"] = [
        {"model_id": "org/m1", "spec": "m1", "prompt": p, "revision": "abc", "scorer": "classifier", "mode": "token",
         "dtype": "float32", "chat_template": "{{x}}", "rmlib_version": "1.0"} for p in ("p", "q")] + [
        {"model_id": "org/m2", "spec": "m2", "prompt": "p", "revision": "def", "scorer": "logprob", "mode": "token",
         "dtype": "float32", "chat_template": None, "rmlib_version": "1.0"}]
    url = "https://raw.githubusercontent.com/owner/repo/0123456789abcdef0123456789abcdef01234567/x.csv"
    released = pd.DataFrame({"model": ["A", "B"], "prompt": ["p", "p"], "word": ["w1", "w2"], "score": 1.0})
    released.attrs["provenance"] = [{"model_id": m, "source": url, "sha256": "00"} for m in ("A", "B")]
    out = provenance_table({"tokens": scored, "words": released, "none": scored.iloc[:0]})
    assert list(out["data"]) == ["tokens", "tokens", "words"]
    m1 = out.iloc[0]
    assert (m1["model"], m1["revision"], m1["prompts"], m1["items"]) == ("org/m1", "abc", 2, 2)
    assert m1["answer in template"] == template_fingerprint("{{x}}") and out.iloc[1]["answer in template"] == "–"
    assert m1["scorer"] == "classifier, token, float32" and m1["source"] == "scored on this machine, rmlib 1.0"
    assert out.iloc[1]["items"] == 2
    words = out.iloc[2]
    assert words["model"] == "2 models" and words["source"] == "owner/repo@0123456 (2 files, SHA-256 checked)"
    assert not out.isna().any().any()
    with pytest.raises(InputError, match="attrs"):
        provenance_table({"x": pd.DataFrame({"a": [1]})})
