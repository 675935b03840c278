"""Token-level tables of the paper (rmlib.stats.paper) from synthetic released files.

Ten synthetic per-token files in the upstream format (one per reward model of
the paper, shared and private strings, one duplicated string, a "\\r" token)
go through the registry (git blob ids pinned by ``git hash-object``); the
recomputed Tables 2, 3, A.6-A.9 are checked against computations by hand, and
a recomputed table written the authors' way reads back through
``published_table`` identical.
"""

import dataclasses
import hashlib

import numpy as np
import pandas as pd
import pytest
from scipy.stats import skew

from rmlib import registry
from rmlib.stats import paper
from rmlib.stats.agreement import rank_agreement
from rmlib.tables import data_files, lexicons, paper_release, word_frequencies
from tests.released_files import write_pinned

SHARED = [" love", "Love", " joy", "peace", " war", "hate", " pizza", "nan", "\r", " the", "ok", " hope"]


@pytest.fixture
def ten(tmp_path, monkeypatch):
    monkeypatch.setenv("RMLIB_DATA_DIR", str(tmp_path))
    rng = np.random.default_rng(7)
    frames = {}
    for i, hub in enumerate(registry.paper_models()["hub_id"]):
        decoded = SHARED + [f" own{i}_{j}" for j in range(3)]
        if i == 3:
            decoded = decoded + [" love"]  # a second id decoding to " love": out of the shared vocabulary
        k = len(decoded)
        df = pd.DataFrame({"token_id": np.arange(k), "token_name": [f"t{j}" for j in range(k)],
                           "token_decoded": decoded})
        for c in ("greatest", "best", "worst"):
            df[c] = rng.normal(size=k).round(4)
        key = data_files.rm_scores_key(hub)
        write_pinned(df, key, tmp_path, monkeypatch)
        frames[hub] = df
    return tmp_path, frames


def _shared_by_hand(frames):
    sets = [set(f["token_decoded"]) for f in frames.values()]
    dup = set().union(*[set(f["token_decoded"][f["token_decoded"].duplicated()]) for f in frames.values()])
    return set.intersection(*sets) - dup


def test_shared_vocabulary_and_table3_by_hand(ten):
    _, frames = ten
    long = paper_release.paper_token_scores(progress=False)
    vocab = paper.paper_shared_vocabulary(long)
    assert set(vocab) == _shared_by_hand(frames) == set(SHARED) - {" love"}
    t3 = paper.table3(long)
    assert list(t3["Model"]) == list(registry.paper_models()["nickname"])
    for (hub, f), (_, row) in zip(frames.items(), t3.iterrows()):
        x = f.loc[f["token_decoded"].isin(vocab), "greatest"].to_numpy()
        assert row["n"] == len(x)
        assert row["Mean"] == pytest.approx(x.mean()) and row["Variance"] == pytest.approx(x.var())
        assert row["Skewness"] == pytest.approx(skew(x))


def test_table2_and_appendix_tables_by_hand(ten):
    _, frames = ten
    long = paper_release.paper_token_scores(progress=False)
    gem = frames["Ray2333/GRM-gemma2-2B-rewardmodel-ft"]
    t2 = paper.table2(long, "R-Gem-2B", n=4)
    order = gem.sort_values("greatest", ascending=False)
    assert t2.loc[t2["part"] == "top", "token_id"].tolist() == order["token_id"].head(4).tolist()
    assert t2.loc[t2["part"] == "bottom", "score"].tolist() == order["greatest"].tail(4).tolist()
    a6 = paper.appendix_table(long, "A.6", n=3)
    assert list(a6.columns) == ["part", "rank"] + list(registry.paper_models()["nickname"])
    assert a6["R-Gem-2B"].tolist() == (order["token_decoded"].head(3).tolist() + order["token_decoded"].tail(3).tolist())
    vocab = _shared_by_hand(frames)
    a9 = paper.appendix_table(long, "a9", n=2)
    f = frames["nicolinho/QRM-Gemma-2-27B"]
    f = f[f["token_decoded"].isin(vocab)]
    diff = (f["best"] - f["worst"]).to_numpy()
    expect = f["token_decoded"].to_numpy()[np.argsort(-diff)]
    assert a9["N-Gem-27B"].tolist() == list(expect[:2]) + list(expect[-2:])
    with pytest.raises(KeyError, match="A.9"):
        paper.appendix_table(long, "A.10")


def test_recomputed_table_reads_back_identical_through_published_table(ten, monkeypatch):
    root, _ = ten
    long = paper_release.paper_token_scores(progress=False)
    a7 = paper.appendix_table(long, "A.7", n=4)
    # written the way the authors wrote theirs: top rows, a '...' row, bottom rows, to_csv(index=False)
    cols = [c for c in a7.columns if c not in ("part", "rank")]
    top, bottom = a7[a7["part"] == "top"][cols], a7[a7["part"] == "bottom"][cols]
    out = pd.concat([top, pd.DataFrame([["..."] * len(cols)], columns=cols), bottom], ignore_index=True)
    entry = data_files.REGISTRY["paper_table_A.7"]
    path = root / entry.path
    path.parent.mkdir(parents=True, exist_ok=True)
    out.to_csv(path, index=False)
    sha = hashlib.sha256(path.read_bytes()).hexdigest()
    monkeypatch.setitem(data_files.REGISTRY, entry.name, dataclasses.replace(entry, sha256=sha))
    published = paper_release.published_table("A.7")
    cmp = paper.compare_top_bottom(a7, published)
    assert cmp["identical"].all() and (cmp["same_position"] == 1).all()
    # one cell changed: caught, but still in the set when it is a swap of two ranks
    swapped = published.copy()
    swapped.loc[[0, 1], "R-Gem-2B"] = swapped.loc[[1, 0], "R-Gem-2B"].to_numpy()
    row = paper.compare_top_bottom(a7, swapped).set_index("model").loc["R-Gem-2B"]
    assert not row["identical"] and row["same_position"] == pytest.approx(6 / 8) and row["same_set"] == 1


def test_token_wide_feeds_the_agreement_statistics(ten):
    _, frames = ten
    long = paper_release.paper_token_scores(prompts="greatest", progress=False)
    wide = paper.token_wide(long)
    assert list(wide.columns) == list(registry.paper_models()["nickname"])
    assert "\r" in wide.index and "nan" in wide.index
    tau = rank_agreement(wide, "kendall")
    from scipy.stats import kendalltau

    a, b = frames["nicolinho/QRM-Gemma-2-27B"], frames["Ray2333/GRM-gemma2-2B-rewardmodel-ft"]
    m = a.merge(b, on="token_decoded")
    m = m[m["token_decoded"].isin(wide.index)]
    assert tau.loc["N-Gem-27B", "R-Gem-2B"] == pytest.approx(kendalltau(m["greatest_x"], m["greatest_y"]).statistic)
    rsa_tok = paper.fig2a_rsa(tau)  # Fig. 2C on the token-level matrix
    assert set(rsa_tok["cells"]) == {"pairs", "full"}
    from rmlib.stats import mds_embedding

    assert mds_embedding(tau).shape[0] == 10
    tables = paper.score_tables(long)
    assert ("R-Gem-2B", "greatest") in tables and list(tables[("R-Gem-2B", "greatest")].columns)[-1] == "score"


def test_the_authors_reader_loses_what_the_exact_reader_keeps(ten):
    long = paper_release.paper_token_scores(["R-Gem-2B"], "greatest", progress=False)
    authors = paper_release.paper_token_scores(["R-Gem-2B"], "greatest", progress=False, reader="authors")
    assert "\r" in set(long["decoded"]) and "nan" in set(long["decoded"])
    assert "\r" not in set(authors["decoded"].dropna()) and "nan" not in set(authors["decoded"].dropna())
    assert authors.attrs["provenance"][0]["reader"] == "authors"
    vocab = paper.paper_shared_vocabulary(authors)  # missing strings (the lost "nan") are never shared
    assert vocab.notna().all() and "nan" not in vocab and " love" in vocab
    assert len(paper.table3(authors)) == 1
    with pytest.raises(ValueError, match="exact"):
        paper_release.paper_token_scores(["R-Gem-2B"], progress=False, reader="pandas")


@pytest.fixture
def afinn_files(tmp_path, monkeypatch):
    """Ten synthetic RM files whose tokens are AFINN words, positives scored with a steeper slope."""
    afinn = lexicons.afinn111()  # read before RMLIB_DATA_DIR moves (the package copy or the shared folder)
    bnc = word_frequencies.bnc_frequencies(rows="paper")
    single = afinn[~afinn.index.str.contains(" ")]
    words = list(single[single > 0].index[:40]) + list(single[single < 0].index[:40])
    monkeypatch.setenv("RMLIB_DATA_DIR", str(tmp_path))
    rng = np.random.default_rng(3)
    frames = {}
    for i, hub in enumerate(registry.paper_models()["hub_id"]):
        sent = single.loc[words].to_numpy(float)
        df = pd.DataFrame({"token_id": np.arange(len(words)), "token_name": words,
                           "token_decoded": [" " + w if j % 2 else w for j, w in enumerate(words)]})
        for c in ("greatest", "best", "worst"):
            slope = np.where(sent > 0, 1.0 + 0.2 * i, 0.5)
            df[c] = (slope * sent + rng.normal(scale=0.5, size=len(words))).round(5)
        key = data_files.rm_scores_key(hub)
        write_pinned(df, key, tmp_path, monkeypatch)
        frames[registry.nickname(hub)] = df
    return frames, afinn, bnc


def test_sentiment_asymmetry_on_released_format_vs_polyfit_and_scipy(afinn_files):
    from scipy.stats import ttest_rel

    frames, afinn, _ = afinn_files
    long = paper_release.paper_token_scores(prompts="greatest", progress=False)
    out = paper.sentiment_asymmetry(long, prompts=("greatest",), lexicon=afinn)
    pos, neg = [], []
    for nick, df in frames.items():
        # the paper's match: lower-cased, not stripped, so " word" tokens do not match
        m = df[df["token_decoded"].str.lower().isin(afinn.index)]
        sent = afinn.loc[m["token_decoded"].str.lower()].to_numpy(float)
        y = m["greatest"].to_numpy()
        pos.append(abs(np.polyfit(sent[sent > 0], y[sent > 0], 1)[0]))
        neg.append(abs(np.polyfit(sent[sent < 0], y[sent < 0], 1)[0]))
    expect = ttest_rel(pos, neg)
    test = out["test"].iloc[0]
    assert test["n_models"] == 10 and test["df"] == 9
    assert test["t"] == pytest.approx(expect.statistic, rel=1e-9)
    assert test["n_pos_stronger"] == sum(p > n for p, n in zip(pos, neg))


def test_frequency_counts_on_released_format_vs_least_squares(afinn_files):
    import statsmodels.api as sm

    frames, afinn, bnc = afinn_files
    long = paper_release.paper_token_scores(prompts=("best",), progress=False)
    out = paper.frequency_counts(long, prompts=("best",), frequencies=bnc, lexicon=afinn)
    counts = out["counts"].set_index("spec")
    assert (counts["n_models"] == 10).all() and set(counts.index) == {"log_freq", "log_freq + sentiment"}
    df = frames["R-Gem-2B"]
    lower = df["token_decoded"].str.lower()
    m = df.assign(word=lower)[lower.isin(afinn.index)].merge(bnc[["word", "freq"]], on="word")  # many-to-many
    fit = sm.OLS(m["best"].to_numpy(), sm.add_constant(np.log(m["freq"].to_numpy()))).fit()
    row = out["slopes"].query("model == 'R-Gem-2B' and spec == 'log_freq'").iloc[0]
    assert row["n"] == len(m) and row["slope"] == pytest.approx(fit.params[1], rel=1e-9)
    assert row["p"] == pytest.approx(fit.pvalues[1], rel=1e-6)


def test_logit_tables_a1_to_a5_by_hand(tmp_path, monkeypatch):
    monkeypatch.setenv("RMLIB_DATA_DIR", str(tmp_path))
    rng = np.random.default_rng(11)
    frames = {}
    for hub in ("google/gemma-2b", "google/gemma-2b-it"):
        k = 30
        df = pd.DataFrame({"token_id": np.arange(k), "token_name": [f"t{j}" for j in range(k)],
                           "token_decoded": [f" w{j}" for j in range(k)]})
        for c in ("greatest", "best", "worst"):
            df[c] = rng.normal(scale=3, size=k).round(4)
        key = data_files.base_logits_key(hub)
        write_pinned(df, key, tmp_path, monkeypatch)
        frames[hub] = df
    logits = paper_release.paper_base_logits(list(frames), progress=False)
    a4 = paper.appendix_table(logits, "A.4", n=5)
    assert list(a4.columns) == ["part", "rank", "google/gemma-2b", "google/gemma-2b-it"]
    for hub, df in frames.items():
        s = (df["best"] + df["worst"]).to_numpy()
        order = df["token_decoded"].to_numpy()[np.argsort(-s)]
        assert a4[hub].tolist() == list(order[:5]) + list(order[-5:])
    # ranking by log-probabilities gives the same table (a constant per model and prompt)
    a4_lp = paper.appendix_table(logits, "A.4", n=5, value="log_prob")
    pd.testing.assert_frame_equal(a4.reset_index(drop=True), a4_lp.reset_index(drop=True), check_like=False)
    a1 = paper.appendix_table(logits, "A.1", n=3)
    g = frames["google/gemma-2b"].sort_values("greatest", ascending=False)["token_decoded"]
    assert a1["google/gemma-2b"].tolist() == g.head(3).tolist() + g.tail(3).tolist()
