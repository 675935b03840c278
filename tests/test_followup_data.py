"""The follow-up study's released files: synthetic files in the released formats, end to end.

Each test writes small files the way the authors' did (pandas ``to_csv`` /
``to_parquet``, R's ``write.csv`` for the rank summaries, the prompts YAML),
pins them in the registry by their git blob id (``git hash-object``, an
independent implementation) and SHA-256 (hashlib), and reads them through
``rmlib.tables.followup``. The real shared copies are read in the last tests.
"""

import dataclasses
import hashlib
import itertools
import os
import pathlib

import numpy as np
import pandas as pd
import pytest

from rmlib.errors import DataFileError, InputError
from rmlib.runs import scoring
from rmlib.tables import data_files, downloads, followup
from tests.released_files import git_blob

GEM, LLA = "Ray2333/GRM-gemma2-2B-rewardmodel-ft", "Ray2333/GRM-Llama3.2-3B-rewardmodel-ft"
ADJ = ["best", "greatest", "good", "worst", "bad", "terrible"]
KEYS = [f"{a}_{s}_{c}" for a in ADJ for s in ("ever", "world", "time") for c in ("one", "single", "please")]
BIG2 = pd.DataFrame({"Category": ["Agency", "Communion", "Agency", "Communion", "Communion"],
                     "token_decoded": ["power", "love", "null", "care", "kindness"]})
MFD_TERMS = ["care", "harm", "fair", "cheat", "loyal", "traitor", "obey", "defy", "pure", "filth"]
MFD_COLS = ["Care_Virtue", "Care_Vice", "Fairness_Virtue", "Fairness_Vice", "Loyalty_Virtue", "Loyalty_Vice",
            "Authority_Virtue", "Authority_Vice", "Sanctity_Virtue", "Sanctity_Vice"]


def _pin(folder: pathlib.Path, name: str, monkeypatch) -> pathlib.Path:
    key = data_files.followup_key(name)
    path = folder / data_files.REGISTRY[key].path
    sha = hashlib.sha256(path.read_bytes()).hexdigest()
    monkeypatch.setitem(data_files.REGISTRY, key, dataclasses.replace(data_files.REGISTRY[key], git_blob=git_blob(path),
                                                                    sha256=sha))
    return path


def _target(folder: pathlib.Path, name: str) -> pathlib.Path:
    path = folder / data_files.REGISTRY[data_files.followup_key(name)].path
    path.parent.mkdir(parents=True, exist_ok=True)
    return path


def _scores(words, seed):
    rng = np.random.default_rng(seed)
    df = pd.DataFrame({"response": words})
    for k in KEYS:
        df[k] = rng.normal(size=len(words)).round(6)
    return df


@pytest.fixture
def released(tmp_path, monkeypatch):
    monkeypatch.setenv("RMLIB_DATA_DIR", str(tmp_path))
    _target(tmp_path, "prompts").write_text(
        "# 54 prompts\n" + "".join(f'{k}: "What is the {k.split("_")[0]} thing ({k})?"\n' for k in KEYS),
        encoding="utf-8")
    _pin(tmp_path, "prompts", monkeypatch)
    BIG2.to_csv(_target(tmp_path, "big2_nouns"), index=False)
    _pin(tmp_path, "big2_nouns", monkeypatch)
    mfd = pd.DataFrame({"DicTerm": MFD_TERMS})
    for i, col in enumerate(MFD_COLS):
        mfd[col] = ["X" if j == i else "" for j in range(len(MFD_TERMS))]
    mfd.to_csv(_target(tmp_path, "mfd20"), index=False)
    _pin(tmp_path, "mfd20", monkeypatch)
    frames = {}
    for seed, hub in enumerate((GEM, LLA)):
        safe = hub.replace("/", "--")
        # the Big Two files hold two words that are in no category, as upstream
        b = _scores(list(BIG2["token_decoded"]) + ["discussion", "eagerness"], seed)
        b.to_csv(_target(tmp_path, f"big2_scores:{safe}"), index=False)
        _pin(tmp_path, f"big2_scores:{safe}", monkeypatch)
        m = _scores(MFD_TERMS, 10 + seed)
        m.loc[m["response"] == "care", KEYS] = b.loc[b["response"] == "care", KEYS].to_numpy() + 0.01
        m.to_parquet(_target(tmp_path, f"mfd_scores:{safe}"), index=False)
        _pin(tmp_path, f"mfd_scores:{safe}", monkeypatch)
        frames[hub] = (b, m)
    return tmp_path, frames


def test_prompts_have_their_factors_and_framing(released):
    p = followup.prompts()
    assert len(p) == 54 and list(p["prompt"]) == KEYS
    assert p["framing"].value_counts().to_dict() == {"positive": 27, "negative": 27}
    row = p.set_index("prompt").loc["good_world_please"]
    assert (row["adjective"], row["scope"], row["concision"], row["framing"]) == ("good", "world", "please",
                                                                                 "positive")
    with pytest.raises(InputError, match="greatest_ever_one"):
        followup.prompt_keys(["greatest_forever_one"])


def test_big2_long_table_matches_the_files_cell_by_cell(released):
    _, frames = released
    long = followup.scores("big2", ["R-Gem-2B", LLA])
    assert list(long.columns) == list(followup.LONG_COLUMNS)
    assert len(long) == 2 * 5 * 54  # the two extra rows are dropped
    assert long.attrs["not_in_dictionary"] == ["discussion", "eagerness"]
    assert set(long["nickname"]) == {"R-Gem-2B", "R-Lla-3B"}
    assert dict(zip(long["nickname"], long["family"])) == {"R-Gem-2B": "Gemma", "R-Lla-3B": "Llama"}
    assert "null" in set(long["word"])  # a word that a default CSV reader would make missing
    for hub, (b, _) in frames.items():
        wide = b.set_index("response")
        sub = long[long["model"] == hub]
        for w, k in itertools.product(["power", "null", "kindness"], ["best_ever_one", "terrible_time_please"]):
            got = sub[(sub["word"] == w) & (sub["prompt"] == k)]
            assert len(got) == 1 and got["score"].iloc[0] == wide.loc[w, k]
    row = long[(long["word"] == "love") & (long["prompt"] == "bad_world_single")].iloc[0]
    assert (row["category"], row["adjective"], row["scope"], row["concision"], row["framing"]) == (
        "Communion", "bad", "world", "single", "negative")


def test_mfd_all_terms_and_the_authors_1652_rule(released):
    full = followup.scores("mfd", [GEM])
    assert full["word"].nunique() == 10
    assert set(zip(full["category"], full["polarity"])) == {tuple(c.split("_")) for c in MFD_COLS}
    authors = followup.scores("mfd", [GEM], mfd_terms="authors")
    assert set(authors["word"]) == set(MFD_TERMS) - {"filth"}  # the Sanctity_Vice term
    assert authors.attrs["dropped_terms"] == ["filth"]
    with pytest.raises(InputError):
        followup.scores("mfd", [GEM], mfd_terms="some")


def test_value_words_average_the_shared_word(released):
    _, frames = released
    v = followup.value_word_scores([GEM])
    assert v["word"].nunique() == 5 + 10 - 1 and v.attrs["n_shared_words"] == 1
    care = v[(v["word"] == "care") & (v["prompt"] == "worst_ever_one")].iloc[0]
    b, m = frames[GEM]
    want = (b.set_index("response").loc["care", "worst_ever_one"] + m.set_index("response").loc["care", "worst_ever_one"]) / 2
    assert care["score"] == pytest.approx(want) and care["corpus"] == "both"
    assert care["category"] == "Communion / Care"


def test_tampered_score_file_fails_its_hash(released):
    root, _ = released
    path = root / data_files.REGISTRY[data_files.followup_key("big2_scores:" + GEM.replace("/", "--"))].path
    path.write_bytes(path.read_bytes().replace(b"power", b"powers"))
    with pytest.raises(DataFileError, match="mismatch"):
        followup.scores("big2", [GEM])


def test_missing_model_and_corpus_are_clear(released):
    with pytest.raises(InputError, match="no released scores"):
        followup.scores("big2", ["my-rm"])
    with pytest.raises(InputError, match="big2"):
        followup.scores("liwc")
    with pytest.raises(DataFileError, match="is not here .*RMLIB_OFFLINE=1 forbids downloading"):
        followup.scores("big2", ["N-Gem-27B"])  # not written here


def _rank_csv(path, rows, r_index=True):
    df = pd.DataFrame(rows, columns=["model_id", "Category", "checkpoint", "base_model", "sum_value"])
    df.insert(0, "", range(1, len(df) + 1))  # R's write.csv row names
    path.parent.mkdir(parents=True, exist_ok=True)
    df.to_csv(path, index=False)


def test_training_ranks_drop_duplicates_and_name_identical_files(released, monkeypatch):
    root, _ = released
    rows27 = [("gemma2b_unified27k_lora", c, s, "Gemma", v) for c, s, v in
              [("Agency", 1000, 700.0), ("Communion", 1000, 650.5), ("Agency", 3314, 690.0), ("Communion", 3314, 640.0)]]
    rows27 += [("llama3b_unified27k_lora", c, s, "Llama", v) for c, s, v in
               [("Agency", 1000, 600.0), ("Communion", 1000, 800.0), ("Agency", 3314, 610.0), ("Communion", 3314, 790.0)]]
    for run in ("uf_13", "uf_27"):
        _rank_csv(_target(root, f"training:{run}"), rows27)
        _pin(root, f"training:{run}", monkeypatch)
    rows100 = [("Qwen2.5-3B-Instruct", "Agency", 1000, None, 816.0)] * 3 + [
        ("google--gemma-2b-it-Unified", "Agency", 1000, "Gemma", 700.0)]
    _rank_csv(_target(root, "training:uf_100"), rows100)
    _pin(root, "training:uf_100", monkeypatch)
    t = followup.training_ranks(["uf_13", "uf_27", "uf_100"])
    assert list(t.columns) == list(followup.TRAINING_COLUMNS)
    assert len(t) == 8 + 8 + 2 and t.attrs["duplicates_dropped"] == {"uf_100": 2}
    assert t.attrs["identical_files"] == [["uf_13", "uf_27"]]
    assert t.loc[t["model_id"] == "Qwen2.5-3B-Instruct", "family"].tolist() == ["Qwen"]  # empty in the file
    assert t.set_index("run").loc["uf_100", "data_size"].tolist() == [106, 106]
    one = followup.distinct_runs(t)  # identical files: one run, rows once (a dropdown option that redraws)
    assert list(dict.fromkeys(one["run"])) == ["uf_13 = uf_27", "uf_100"] and len(one) == 8 + 2
    assert one.attrs["identical_files"] == [["uf_13", "uf_27"]]
    # the copy's size is the one its model ids name (unified27k), not the first file's label (13k)
    assert set(one.loc[one["run"] == "uf_13 = uf_27", "data_size"]) == {27}
    assert t.set_index("run").loc["uf_13", "data_size"].unique().tolist() == [13]  # the manifest, as read
    assert followup.distinct_runs(t[t["run"] == "uf_100"].pipe(lambda d: setattr(d, "attrs", {}) or d)).equals(
        t[t["run"] == "uf_100"])
    conflict = rows100 + [("Qwen2.5-3B-Instruct", "Agency", 1000, None, 900.0)]
    _rank_csv(_target(root, "training:uf_100"), conflict)
    _pin(root, "training:uf_100", monkeypatch)
    with pytest.raises(DataFileError, match="two different values"):
        followup.training_ranks("uf_100")


def test_live_subset_words_by_prompt(released):
    per = followup.words_by_prompt({"big2": ["best_ever_one", "greatest_ever_one"], "mfd": ["greatest_ever_one"]})
    assert per["best_ever_one"] == list(BIG2["token_decoded"])
    assert per["greatest_ever_one"] == list(BIG2["token_decoded"]) + [w for w in MFD_TERMS if w != "care"]


def test_live_scores_through_the_text_cache(released, tmp_path_factory, monkeypatch):
    monkeypatch.setenv("RMLIB_SCORES_DIR", str(tmp_path_factory.mktemp("scores")))
    subset = {"big2": ["best_ever_one"], "mfd": ["best_ever_one", "worst_ever_one"]}
    live = scoring.live_scores(["tiny:llama-classifier"], subset)
    assert list(live.columns) == list(followup.LONG_COLUMNS)
    assert len(live) == 5 + 10 + 10 and set(live["source"]) == {"scored here"}
    again = scoring.live_scores(["tiny:llama-classifier"], subset)
    pd.testing.assert_series_equal(live["score"], again["score"])
    prov = pd.DataFrame(again.attrs["provenance"])
    assert set(prov["prompt"]) == {"best_ever_one", "worst_ever_one"}
    care = live[(live["word"] == "care") & (live["prompt"] == "best_ever_one")]["score"]
    assert care.nunique() == 1  # the same text under one prompt: one cached score


# --------------------------------------------------------------------------- the shared copies
SHARED = pathlib.Path(os.environ.get("RMLIB_DATA_DIR", "")) / "followup"


@pytest.mark.skipif(not (SHARED / "config" / "prompts.yaml").is_file(), reason="shared follow-up data not here")
def test_real_release_sizes():
    assert len(followup.dictionary("big2")) == 263 and len(followup.dictionary("mfd")) == 2040
    expanded = followup.dictionary("big2_expanded")
    assert len(expanded) == 900 and expanded.attrs["duplicate_rows"] == 36
    big2 = followup.scores("big2", prompts_subset=["greatest_ever_one", "worst_ever_one"])
    assert len(big2) == 10 * 263 * 2 and big2.attrs["not_in_dictionary"] == ["discussion", "eagerness"]
    assert followup.scores("mfd", ["R-Gem-2B"], mfd_terms="authors", prompts_subset="best_ever_one")["word"].nunique() == 1652
    t = followup.training_ranks()
    assert t.attrs["identical_files"] == [["uf_13", "uf_27"]] and t.attrs["duplicates_dropped"]["uf_100"] == 60872


def test_paper_data_lists_the_followup_files():
    status = downloads.paper_data_status(list(data_files.FOLLOWUP_GROUPS))
    assert len(status) == 36 and set(status["group"]) == set(data_files.FOLLOWUP_GROUPS)
    absent = status.loc[~status["present"], "path"].tolist()
    if absent:  # the three checkpoint parquets are not in the shared copy; the note names the follow-up's home
        note = downloads.paper_data_note(status)
        assert "brchristian/reward_models_inherit_value_biases_from_pretraining at commit 5d8d2e9" in note


def test_live_scores_of_a_local_model_are_memoized(released, tmp_path_factory, monkeypatch):
    """A model known by its folder is read back from the result cache: no scoring, no loading."""
    monkeypatch.setenv("RMLIB_SCORES_DIR", str(tmp_path_factory.mktemp("scores")))
    monkeypatch.setattr(scoring, "model_identity", lambda spec: {"spec": spec, "folder": "fingerprint-1"})
    calls = []
    real = scoring.score_texts_models

    def counting(*args, **kwargs):
        calls.append(args[0])
        return real(*args, **kwargs)

    monkeypatch.setattr(scoring, "score_texts_models", counting)
    subset = {"big2": ["greatest_ever_one"]}
    first = scoring.live_scores(["tiny:llama-classifier"], subset)
    again = scoring.live_scores(["tiny:llama-classifier"], subset)
    assert calls == [["tiny:llama-classifier"]]
    pd.testing.assert_frame_equal(first.astype(str), again.astype(str))
    monkeypatch.setattr(scoring, "model_identity", lambda spec: {"spec": spec, "folder": "fingerprint-2"})
    scoring.live_scores(["tiny:llama-classifier"], subset)  # another folder: computed again
    assert len(calls) == 2


@pytest.mark.skipif(not (SHARED / "BLOBS").is_file(), reason="shared follow-up data not here")
def test_registry_blob_ids_match_the_published_list():
    blobs = {}
    for line in (SHARED / "BLOBS").read_text().splitlines():
        blob, path = line.split()[:2]
        blobs["followup/" + path] = blob
    registered = {e.path: e.git_blob for e in data_files.REGISTRY.values() if e.name.startswith("followup:")}
    assert registered == blobs
    url = data_files.REGISTRY["followup:big2_nouns"].url
    assert url == ("https://raw.githubusercontent.com/brchristian/reward_models_inherit_value_biases_from_pretraining/"
                   "5d8d2e9d879bf0060c791b11300f0efda42c9bcf/data/corpora/dict_big2_nouns.csv")


def test_as_score_table_with_no_live_scores_is_the_released_table():
    """Chapter 1 with ``live_models=[]`` (none scored here) stacks the released words with an empty table."""
    words = followup.scores("big2", models=["R-Gem-2B"], prompts_subset=["greatest_ever_one"])
    empty = scoring.live_scores([], {"big2": ["greatest_ever_one"]})
    assert len(empty) == 0
    alone = followup.as_score_table(words)
    pd.testing.assert_frame_equal(followup.as_score_table(words, empty), alone)
    assert len(alone) == len(words) and alone["score"].tolist() == words["score"].tolist()


def test_distinct_runs_keeps_the_first_size_when_the_model_ids_name_none():
    t = pd.DataFrame({"run": ["a", "b"], "data_source": "uf", "data_size": [13, 27], "method": "BT",
                      "model_id": ["gemma_lora", "gemma_lora"], "family": "Gemma", "category": "Agency",
                      "checkpoint": 10, "median_rank": 5.0})
    t.attrs = {"identical_files": [["a", "b"]]}
    one = followup.distinct_runs(t)
    assert one[["run", "data_size"]].values.tolist() == [["a = b", 13]]
    t["model_id"] = "gemma_unified99k_lora"  # a size no run of the group has: not trusted
    assert followup.distinct_runs(t)["data_size"].tolist() == [13]
