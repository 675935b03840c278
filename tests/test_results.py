"""rmlib.tables.results: scores across models and prompts, and the wide tables built from them."""

import weakref

import numpy as np
import pandas as pd
import pytest

from rmlib.engine import scorers
from rmlib.runs import scoring
from rmlib.tables import results
from tests.models_fixture import tiny

BEST = "What, in one word, is the best thing ever?"
WORST = "What, in one word, is the worst thing ever?"
IDS = range(5, 60)


@pytest.fixture(scope="module")
def long(tmp_path_factory):
    cache = tmp_path_factory.mktemp("scores")
    out = scoring.score_models(["tiny:llama-classifier", "tiny:llama-lm"], [BEST, WORST], token_ids="5:60",
                               progress=False, cache_dir=cache)
    out.attrs["cache"] = cache
    return out


# --------------------------------------------------------------------------- score_models
def test_long_table_holds_the_scorers_own_scores(long):
    assert list(long.columns) == list(results.LONG_COLUMNS)
    assert long["token_id"].dtype == np.int64 and long["score"].dtype == np.float64
    # models and prompts in the order given, tokens by id
    blocks = list(dict.fromkeys(zip(long["model"], long["prompt"])))
    assert blocks == [("tiny:llama-classifier", BEST), ("tiny:llama-classifier", WORST),
                      ("tiny:llama-lm", BEST), ("tiny:llama-lm", WORST)]
    for (model, prompt), block in long.groupby(["model", "prompt"], sort=False):
        direct = tiny(model.split(":", 1)[1]).score_tokens(prompt, IDS)  # no store, no cache
        got = block.drop(columns=["model", "prompt"]).reset_index(drop=True)
        assert got["token_id"].tolist() == list(IDS)
        assert got["token"].tolist() == direct["token"].tolist()
        assert got["decoded"].tolist() == direct["decoded"].tolist()
        np.testing.assert_allclose(got["score"], direct["score"], rtol=0, atol=1e-6)
    # the two prompts really give different scores (the prompt reached the model)
    a = long[(long.model == "tiny:llama-lm") & (long.prompt == BEST)]["score"].to_numpy()
    b = long[(long.model == "tiny:llama-lm") & (long.prompt == WORST)]["score"].to_numpy()
    assert not np.allclose(a, b)


def test_provenance_of_every_table(long):
    prov = long.attrs["provenance"]
    assert [(p["spec"], p["prompt"]) for p in prov] == [
        ("tiny:llama-classifier", BEST), ("tiny:llama-classifier", WORST),
        ("tiny:llama-lm", BEST), ("tiny:llama-lm", WORST)]
    assert {p["scorer"] for p in prov[:2]} == {"classifier"} and {p["scorer"] for p in prov[2:]} == {"logprob"}
    for p in prov:
        assert p["mode"] == "token" and p["model_id"] == p["spec"] and p["rmlib_version"]


def test_second_run_is_served_from_the_cache(long, monkeypatch):
    def no_scoring(*args, **kwargs):
        raise AssertionError("scored again although every table is cached")

    monkeypatch.setattr(scorers.Scorer, "token_scores", no_scoring)
    again = scoring.score_models(["tiny:llama-classifier", "tiny:llama-lm"], [BEST, WORST], token_ids="5:60",
                                 progress=False, cache_dir=long.attrs["cache"])
    pd.testing.assert_frame_equal(again, long)


def test_each_model_loaded_once_and_freed_before_the_next(tmp_path, monkeypatch):
    loaded, seen = [], {}

    def tracking_load(spec, **kwargs):
        for ref in loaded:
            assert ref() is None, "the previous model is still alive when the next one loads"
        seen[spec] = kwargs
        scorer = scorers.load_scorer(spec, **kwargs)
        loaded.append(weakref.ref(scorer.loaded.model))
        return scorer

    monkeypatch.setattr(scoring, "load_scorer", tracking_load)
    out = scoring.score_models(["tiny:llama-lm", "tiny:llama-classifier", "tiny:gemma2-classifier"],
                               [BEST, WORST], token_ids=[3, 7, 11], progress=False, cache_dir=tmp_path,
                               batch_size=7, model_kwargs={"tiny:llama-classifier": {"batch_size": 2}})
    assert len(loaded) == 3  # once per model, not once per (model, prompt)
    assert all(ref() is None for ref in loaded)
    assert len(out) == 3 * 2 * 3
    # load_kwargs reach every model, model_kwargs override them for one
    # (token mode asks for rmlib's lite forward, which a checkpoint it does not reproduce ignores)
    assert seen == {"tiny:llama-lm": {"lite": True, "batch_size": 7}, "tiny:llama-classifier": {"lite": True, "batch_size": 2},
                    "tiny:gemma2-classifier": {"lite": True, "batch_size": 7}}


@pytest.mark.parametrize("kwargs, error, message", [
    ({"models": "tiny:llama-lm"}, TypeError, "not one string"),
    ({"models": []}, ValueError, "models is empty"),
    ({"models": ["tiny:llama-lm", "tiny:llama-lm"]}, ValueError, "more than once"),
    ({"prompts": [BEST, BEST]}, ValueError, "more than once"),
    ({"prompts": {"a": BEST}}, TypeError, "not a mapping"),  # a dict's keys would be scored as prompts
    ({"prompts": ["  "]}, ValueError, "non-empty strings"),
    ({"mode": "exact"}, ValueError, "mode must be 'token'"),
    ({"model_kwargs": {"tiny:gemma2-classifier": {}}}, ValueError, "not in models"),
])
def test_bad_arguments_fail_before_any_model_loads(kwargs, error, message, monkeypatch):
    def no_load(*a, **k):
        raise AssertionError("a model was loaded for invalid arguments")

    monkeypatch.setattr(scoring, "load_scorer", no_load)
    args = {"models": ["tiny:llama-lm"], "prompts": [BEST], **kwargs}
    with pytest.raises(error, match=message):
        scoring.score_models(**args, progress=False)


def test_out_of_range_ids_are_the_scorers_error(tmp_path):
    with pytest.raises(ValueError, match="token ids out of range"):
        scoring.score_models(["tiny:llama-lm"], [BEST], token_ids=[0, 10**7], progress=False, cache_dir=tmp_path)


# --------------------------------------------------------------------------- slices
@pytest.mark.parametrize("text, expected", [
    ("", None), ("  ", None), (None, None), ("0:300", slice(0, 300)), (":10", slice(None, 10)),
    ("40:", slice(40, None)), (" 2 : 5 ", slice(2, 5)),
])
def test_vocab_slice_reads_start_stop(text, expected):
    assert results.vocab_slice(text) == expected


@pytest.mark.parametrize("text, message", [
    ("300", "not START:STOP"), ("a:b", "not START:STOP"), ("1:2:3", "not START:STOP"),
    ("-5:10", "non-negative"), ("10:10", "is empty"), ("10:3", "is empty"),
])
def test_vocab_slice_rejects(text, message):
    with pytest.raises(ValueError, match=message):
        results.vocab_slice(text)


def test_resolve_token_ids_cuts_each_vocabulary():
    assert results.resolve_token_ids(None, 50) is None
    assert results.resolve_token_ids("", 50) is None
    assert results.resolve_token_ids("45:", 50).tolist() == [45, 46, 47, 48, 49]
    assert results.resolve_token_ids("45:", 47).tolist() == [45, 46]  # a smaller vocabulary
    assert results.resolve_token_ids(slice(0, 3), 10).tolist() == [0, 1, 2]
    assert results.resolve_token_ids(range(2, 4), 10).tolist() == [2, 3]
    with pytest.raises(ValueError, match="selects no token"):
        results.resolve_token_ids("60:70", 50)
    with pytest.raises(ValueError, match="must be integers"):
        results.resolve_token_ids([0.5, 1.5], 10)
    with pytest.raises(ValueError, match="is empty"):
        results.resolve_token_ids([], 10)


# --------------------------------------------------------------------------- wide tables
def hand_long():
    """Two models with different tokenizers, one prompt, plus a second prompt for model A."""
    rows = [
        # model, prompt, token_id, token, decoded, score
        ("A", "p", 0, "x", "x", 1.0), ("A", "p", 1, "y", "y", 2.0), ("A", "p", 2, "Ġy", "y", 5.0),
        ("A", "p", 3, "z", "z", 3.0),
        ("B", "p", 0, "w", "w", 9.0), ("B", "p", 1, "z", "z", -1.0), ("B", "p", 2, "y", "y", 4.0),
        ("B", "p", 3, "x", "x", 0.5),
        ("A", "q", 0, "x", "x", 10.0), ("A", "q", 1, "y", "y", 20.0), ("A", "q", 2, "Ġy", "y", 50.0),
        ("A", "q", 3, "z", "z", 30.0),
    ]
    return pd.DataFrame(rows, columns=list(results.LONG_COLUMNS))


def test_wide_by_decoded_drops_strings_duplicated_anywhere():
    w = results.wide(hand_long(), by="decoded", prompt="p")
    # shared strings: x, y, z; y decodes from two tokens of A -> dropped (the paper's rule)
    expected = pd.DataFrame({"A": [1.0, 3.0], "B": [0.5, -1.0]}, index=pd.Index(["x", "z"], name="decoded"))
    pd.testing.assert_frame_equal(w, expected, check_names=False)
    assert list(w.columns) == ["A", "B"] and w.columns.name == "model"
    assert w.attrs["n_dropped_duplicates"] == 1
    assert w.attrs["duplicates"]["A"]["n_duplicate_strings"] == 1


def test_wide_by_decoded_other_duplicate_rules():
    w = results.wide(hand_long(), by="decoded", prompt="p", duplicates="max")
    assert w.loc["y", "A"] == 5.0 and w.loc["y", "B"] == 4.0
    w = results.wide(hand_long(), by="decoded", prompt="p", duplicates="mean")
    assert w.loc["y", "A"] == 3.5


def test_wide_across_prompts_by_token_id():
    w = results.wide(hand_long(), by="token_id", across="prompt", model="A")
    assert list(w.columns) == ["p", "q"] and w.index.tolist() == [0, 1, 2, 3]
    assert w["p"].tolist() == [1.0, 2.0, 5.0, 3.0] and w["q"].tolist() == [10.0, 20.0, 50.0, 30.0]
    assert w.attrs["decoded"] == {0: "x", 1: "y", 2: "y", 3: "z"}


def test_wide_by_token_id_refuses_two_tokenizers():
    with pytest.raises(ValueError, match="different tokenizers .* by='decoded'"):
        results.wide(hand_long(), by="token_id", prompt="p")


def test_wide_needs_a_choice_when_the_table_holds_several():
    with pytest.raises(ValueError, match="holds 2 prompts"):
        results.wide(hand_long(), by="decoded")
    with pytest.raises(ValueError, match="holds 2 models"):
        results.wide(hand_long(), across="prompt")
    with pytest.raises(ValueError, match="'r' is not in the table"):
        results.wide(hand_long(), prompt="r")
    with pytest.raises(ValueError, match="by must be"):
        results.wide(hand_long(), by="token", prompt="p")
    with pytest.raises(ValueError, match="missing columns"):
        results.wide(hand_long().drop(columns="decoded"), prompt="p")


def test_tables_split_single_model_tables():
    parts = results.tables(hand_long(), across="prompt", model="A")
    assert list(parts) == ["p", "q"]
    assert list(parts["q"].columns) == ["token_id", "token", "decoded", "score"]
    assert parts["q"]["score"].tolist() == [10.0, 20.0, 50.0, 30.0]


# --------------------------------------------------------------------------- compare_modes
def test_compare_modes_against_each_mode_scored_directly(tmp_path):
    ids = [150, 171, 198, 260, 1000, 5195]
    out = scoring.compare_modes(["tiny:llama-classifier"], BEST, ids, progress=False, cache_dir=tmp_path)
    scorer = tiny("llama-classifier")
    exact = scorer.token_scores(BEST, np.array(ids), mode="token")
    paper = scorer.token_scores(BEST, np.array(ids), mode="paper")
    assert out["token_id"].tolist() == ids and set(out["model"]) == {"tiny:llama-classifier"}
    np.testing.assert_allclose(out["token_mode"], exact, atol=1e-6)
    np.testing.assert_allclose(out["paper_mode"], paper, atol=1e-6)
    np.testing.assert_allclose(out["delta"], paper - exact, atol=1e-6)
    # round trip, by hand with the tokenizer: byte tokens (150 and 171, single bytes of multi-byte
    # characters, decode to U+FFFD) do not come back; whole words do
    tok = scorer.tokenizer
    expected = [tok(tok.decode([i]), add_special_tokens=False).input_ids == [i] for i in ids]
    assert out["roundtrips"].tolist() == expected
    assert expected[:2] == [False, False] and all(expected[2:])
    assert [p["mode"] for p in out.attrs["provenance"]] == ["token", "paper"]


def test_compare_modes_rejects_bad_input(monkeypatch):
    monkeypatch.setattr(scoring, "load_scorer", lambda *a, **k: pytest.fail("loaded a model"))
    with pytest.raises(ValueError, match="non-empty"):
        scoring.compare_modes(["tiny:llama-lm"], " ", [1])
    with pytest.raises(ValueError, match="not in models"):
        scoring.compare_modes(["tiny:llama-lm"], BEST, [1], model_kwargs={"x": {}})


def test_column_checks_name_what_is_missing_and_how_to_make_it():
    from rmlib.tables.schema import LONG_COLUMNS, check_columns

    with pytest.raises(ValueError, match=r"missing columns \['decoded'\].*score_models"):
        results.wide(hand_long().drop(columns="decoded"), prompt="p")
    with pytest.raises(TypeError, match="long score table must be a pandas DataFrame"):
        results.wide([1, 2], prompt="p")
    check_columns(pd.DataFrame(columns=list(LONG_COLUMNS)), LONG_COLUMNS, "x")  # empty is fine by default
    with pytest.raises(ValueError, match="x: the table is empty"):
        check_columns(pd.DataFrame(columns=list(LONG_COLUMNS)), LONG_COLUMNS, "x", allow_empty=False)
