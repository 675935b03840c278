"""The stated vocabulary subset 'words' (rmlib.tables.subsets): exact ids, seeds, cache reuse, provenance."""

import numpy as np
import pandas as pd
import pytest

from tests.models_fixture import tiny
from rmlib.stats import bigtwo, lexical
from rmlib.runs import scoring
from rmlib.tables import lexicons, results, store, subsets


@pytest.fixture(scope="module")
def scorer():
    return tiny("llama-classifier")  # built on the default (SmolLM2) tokenizer


def test_word_ids_are_exactly_the_lexicon_matched_tokens(scorer):
    """Brute force over the tokenizer with the chapter-3 matching functions themselves."""
    tok, size = scorer.tokenizer, scorer.vocab_size
    table = pd.DataFrame({"token_id": np.arange(size), "decoded": [tok.decode([i]) for i in range(size)]})
    hits = set(lexical.match_lexicon(table, lexicons.afinn111())["token_id"])
    hits |= set(lexical.match_lexicon(table, lexicons.bing_lexicon())["token_id"])
    hits |= set(table.loc[bigtwo.classify(table["decoded"], lexicons.bigtwo_lists()).notna().to_numpy(), "token_id"])
    words, sample = subsets.word_subset(tok, size)
    assert words.tolist() == sorted(hits)
    assert 3000 < len(words) < 12000  # measured 4,868 on SmolLM2's vocabulary
    # the paper's unstripped matching is a subset of the stripped one: covered too
    assert set(lexical.match_lexicon(table, lexicons.afinn111(), strip=False)["token_id"]) <= set(words)


def test_random_part_is_seeded_and_disjoint(scorer):
    tok, size = scorer.tokenizer, scorer.vocab_size
    words, a = subsets.word_subset(tok, size)
    _, again = subsets.word_subset(tok, size)
    _, other = subsets.word_subset(tok, size, seed=1)
    assert len(a) == subsets.N_RANDOM and np.array_equal(a, again) and not np.array_equal(a, other)
    assert not set(a) & set(words) and np.all(np.diff(a) > 0)
    ids = results.resolve_token_ids("words", size, tok)
    assert np.array_equal(ids, np.concatenate([words, a]))
    # fewer other tokens than asked: all of them
    w, rest = subsets.word_subset(tok, size, n_random=10 ** 6, words=["good"])
    assert len(w) + len(rest) == size
    with pytest.raises(ValueError, match="tokenizer"):
        results.resolve_token_ids("words", size)
    with pytest.raises(ValueError, match="n_random"):
        subsets.word_subset(tok, size, n_random=-1)
    assert results.vocab_slice(" Words ") == "words"


def test_explicit_ids_reuse_cached_rows(scorer, tmp_path, monkeypatch):
    """Score ids A, then A and B: only B is computed; a shard's rows are filled, not rewritten."""
    computed = []
    real = scorer.token_scores

    def counting(prompt, ids, mode="token", progress=False, **kw):
        computed.append(np.asarray(ids).tolist())
        return real(prompt, ids, mode=mode, progress=progress, **kw)

    monkeypatch.setattr(scorer, "token_scores", counting)
    a, b = [3, 17, 900, 5000], [4, 901, 9000, 20000]
    first = store.score_vocabulary(scorer, "Best?", a, cache_dir=tmp_path, progress=False, shard_size=1024)
    assert sorted(sum(computed, [])) == a
    computed.clear()
    both = store.score_vocabulary(scorer, "Best?", a + b, cache_dir=tmp_path, progress=False, shard_size=1024)
    assert sorted(sum(computed, [])) == b
    assert np.allclose(both.set_index("token_id").loc[a, "score"], first.set_index("token_id")["score"])
    computed.clear()
    again = store.score_vocabulary(scorer, "Best?", b, cache_dir=tmp_path, progress=False, shard_size=1024)
    assert computed == [] and again["token_id"].tolist() == sorted(b)


def test_score_models_words_full_vocab_and_provenance(tmp_path, monkeypatch):
    spec = "tiny:llama-classifier"
    long = scoring.score_models([spec], ["Best?", "Worst?"], token_ids="words", progress=False,
                                cache_dir=tmp_path, full_vocab={spec: 1})
    n = long.groupby("prompt", sort=False).size()
    size = tiny("llama-classifier").vocab_size
    words, sample = subsets.word_subset(tiny("llama-classifier").tokenizer, size)
    assert n["Best?"] == size and n["Worst?"] == len(words) + len(sample)
    prov = {p["prompt"]: p["vocab_subset"] for p in long.attrs["provenance"]}
    assert prov["Best?"] == f"the whole vocabulary ({size:,} tokens)"
    assert prov["Worst?"].startswith("vocabulary subset 'words'") and f"{len(words):,} tokens" in prov["Worst?"]
    # the subset of the prompt scored whole is read back from its table: nothing is scored
    monkeypatch.setattr(store, "_score_blocks", lambda *a, **k: pytest.fail("rescored a cached subset"))
    sub = scoring.score_models([spec], ["Best?"], token_ids="words", progress=False, cache_dir=tmp_path)
    assert len(sub) == len(words) + len(sample)
    with pytest.raises(ValueError, match="full_vocab names models"):
        scoring.score_models([spec], ["Best?"], token_ids="words", cache_dir=tmp_path, full_vocab={"x": 1})


def test_compare_modes_counts_bos_tokens(tmp_path):
    modes = scoring.compare_modes(["tiny:llama-classifier"], "Best?", [5, 6], progress=False, cache_dir=tmp_path)
    # SmolLM2's BOS is <|im_start|>: the chat template writes it before each turn, in both modes alike
    assert set(modes["bos_token_mode"]) == set(modes["bos_paper_mode"]) and modes["bos_token_mode"].iloc[0] >= 2


def test_cli_tokens_words(scorer, tmp_path, monkeypatch):
    """``--tokens words`` parses, and ``rmlib score`` scores exactly the stated subset's ids."""
    from rmlib import cli

    parser = cli.build_parser()
    base = ["score", "--model", "tiny:llama-classifier", "--prompt", "What is best?"]
    assert parser.parse_args([*base, "--tokens", "words"]).tokens == "words"
    assert parser.parse_args([*base, "--tokens", "0:3"]).tokens == slice(0, 3)
    with pytest.raises(SystemExit):
        parser.parse_args([*base, "--tokens", "wordz"])
    monkeypatch.setenv("RMLIB_SCORES_DIR", str(tmp_path / "store"))
    out = tmp_path / "words.parquet"
    assert cli.main([*base, "--tokens", "words", "--no-progress", "--out", str(out)]) == 0
    got = np.sort(pd.read_parquet(out)["token_id"].to_numpy())
    want = np.sort(results.resolve_token_ids("words", scorer.vocab_size, scorer.tokenizer))
    assert np.array_equal(got, want)


def test_words_subset_scores_the_tokens_that_decode_to_given_words(scorer, tmp_path):
    from rmlib.errors import InputError

    words = subsets.Words(["Gay", "black ", "gay"], "identity terms")
    assert words.words == ("gay", "black")
    long = scoring.score_models(["tiny:llama-classifier"], ["What is the best food?"], token_ids=words,
                                progress=False, cache_dir=tmp_path)
    prov = long.attrs["provenance"][0]
    assert prov["vocab_subset"] == f"{len(long):,} tokens of {scorer.vocab_size:,} whose decoded text, lower-cased " \
                                   "and stripped of white space, is one of 2 identity terms"
    # every token of the vocabulary that decodes to those words, and no other
    keys = subsets.decoded_keys(scorer.tokenizer, scorer.vocab_size)
    expected = [i for i, k in enumerate(keys) if k in ("gay", "black")]
    assert len(expected) >= 2 and np.array_equal(np.sort(long["token_id"].to_numpy()), expected)
    assert np.array_equal(results.resolve_token_ids(words, scorer.vocab_size, scorer.tokenizer), expected)
    # plus: a chapter's stated slice and the words in one pass
    both = scoring.score_models(["tiny:llama-classifier"], ["What is the best food?"], progress=False,
                                cache_dir=tmp_path, token_ids=subsets.Words(words.words, "identity terms", plus="0:50"))
    assert set(both["token_id"]) == set(range(50)) | set(expected)
    assert both.attrs["provenance"][0]["vocab_subset"].startswith("token ids 0 to 49 (50 of ")
    assert both.attrs["provenance"][0]["vocab_subset"].endswith("; and " + prov["vocab_subset"])
    with pytest.raises(InputError, match="no token"):
        scoring.score_models(["tiny:llama-classifier"], ["q"], token_ids=subsets.Words(["zzqxqzzq"]),
                             progress=False, cache_dir=tmp_path)
    with pytest.raises(ValueError, match="one string"):
        subsets.Words("gay")
