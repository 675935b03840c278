"""The result cache (rmlib.tables.memo) and the searches' and chapter 7's use of it.

A cached result must be exactly what the computation returns (frames with their dtypes,
index and attrs; the search result dataclasses field by field), read back without running
the computation; the key must change with every input; a damaged record is recomputed with
a warning naming it; RMLIB_RECOMPUTE / recompute=True bypass the cache; records are JSON.
"""

import copy
import dataclasses
import json
import math
import os
import warnings

import numpy as np
import pandas as pd
import pytest

from rmlib.engine import search as S
from rmlib.engine import shortlists, sweeps
from rmlib.engine.gcg import GCGResult
from rmlib.engine.search_config import GCG_REVISION, SEARCH_REVISION, SearchConfig
from rmlib.errors import InputError
from rmlib.runs import searches
from rmlib.tables import memo
from tests.models_fixture import tiny
from tests.test_gcg import PROMPT

OTHER = "What, in one word, is the worst thing ever?"
SMALL = SearchConfig(num_steps=2, search_width=8, topk=8)  # GCG's steps, small


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("RMLIB_SCORES_DIR", str(tmp_path))
    monkeypatch.delenv(memo.RECOMPUTE_ENV_VAR, raising=False)
    return tmp_path / "memo"


def assert_same(a, b, where="value"):
    """Deep equality that also compares types, frames (dtypes, index, attrs) and arrays (dtype).
    A str subclass (torch's version string in a provenance) comes back as a plain str."""
    if isinstance(a, str):
        assert type(b) is str and a == b, f"{where}: {a!r} != {b!r}"
        return
    assert type(a) is type(b), f"{where}: {type(a).__name__} != {type(b).__name__}"
    if isinstance(a, pd.DataFrame):
        pd.testing.assert_frame_equal(a, b, check_exact=True)
        assert a.attrs == b.attrs, where
        for c in a.columns:  # object cells: lists stay lists, ints stay ints, None stays None
            for x, y in zip(a[c], b[c]):
                if a[c].dtype == object:
                    assert_same(x, y, f"{where}[{c}]")
    elif isinstance(a, pd.Series):
        pd.testing.assert_series_equal(a, b, check_exact=True)
        assert a.attrs == b.attrs, where
    elif isinstance(a, np.ndarray):
        assert a.dtype == b.dtype and a.shape == b.shape and np.array_equal(a, b), where
    elif dataclasses.is_dataclass(a):
        for f in dataclasses.fields(a):
            assert_same(getattr(a, f.name), getattr(b, f.name), f"{where}.{f.name}")
    elif isinstance(a, dict):
        assert list(a) == list(b), where
        for k in a:
            assert_same(a[k], b[k], f"{where}[{k!r}]")
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b), where
        for i, (x, y) in enumerate(zip(a, b)):
            assert_same(x, y, f"{where}[{i}]")
    elif isinstance(a, float) and math.isnan(a):
        assert math.isnan(b), where
    else:
        assert a == b, f"{where}: {a!r} != {b!r}"


# --------------------------------------------------------------------------- the codec
def test_frames_arrays_scalars_round_trip_with_their_types():
    df = pd.DataFrame({
        "i": np.array([1, 2, 3], dtype=np.int64), "f": [0.1, float("nan"), float("inf")],
        "f32": np.array([1.5, -2.25, 3e-8], dtype=np.float32), "b": [True, False, True],
        "ids": [[1, 2], [3], []], "maybe": [None, True, False], "text": ["a", "␣ b\n", "é"],
        "mixed": [1, None, "x"], "nullable": pd.array([1, None, 3], dtype="Int64"),
    }, index=pd.Index(["x", "y", "z"], name="name"))
    df.attrs["provenance"] = {"model_id": "m", "prefix_ids": [1, 2], "t": (1, 2)}
    value = {"frame": df, "ranged": df.reset_index(), "ids": np.array([5, 7], dtype=np.int64),
             "grid": np.arange(6, dtype=np.float32).reshape(2, 3), "scalar": np.float64(0.1), "n": np.int64(3),
             "flag": np.bool_(True), "pair": (1, "a"), 3: "int key", "nan": float("nan"),
             "series": pd.Series([1.0, 2.0], index=pd.RangeIndex(2), name="s")}
    text = json.dumps(memo.encode(value), allow_nan=True)
    back = memo.decode(json.loads(text))
    assert_same(value, back)
    assert isinstance(back["scalar"], np.float64) and isinstance(back["pair"], tuple)
    assert back["frame"]["nullable"].dtype == "Int64" and back["frame"]["f32"].dtype == np.float32


def test_the_search_dataclasses_round_trip_field_by_field():
    scorer = tiny("llama-classifier")
    vocab = sweeps.allowed_ids(scorer)[::400][:24]
    res = S.run(scorer, PROMPT, dataclasses.replace(SMALL, method="both", length=2, restarts=2), vocabulary=vocab)
    assert isinstance(res.gcg_result, GCGResult) and len(res.runs) == 3  # GCG, then two sweeps
    sl = shortlists.build_shortlist(scorer, PROMPT, k=2, n_random=1, sample=40, seed=3)
    back = memo.decode(json.loads(json.dumps(memo.encode([res, sl]))))
    assert_same([res, sl], back)
    assert back[0].summary() == res.summary() and back[0].to_dict() == res.to_dict()
    assert back[0].gcg_result.steps == res.gcg_result.steps


def test_only_known_classes_are_rebuilt_and_unknown_types_are_refused():
    @dataclasses.dataclass
    class Local:
        x: int

    with pytest.raises(TypeError, match="not registered"):
        memo.encode(Local(1))
    with pytest.raises(TypeError, match="cannot store a set"):
        memo.encode({1, 2})
    # A record cannot make the decoder import or call anything else (no pickle, no import by name).
    with pytest.raises(ValueError, match="not registered"):
        memo.decode({"__rmlib__": "dataclass", "cls": "os.system", "fields": {}})
    memo.register(Local)
    assert memo.decode(memo.encode(Local(4))) == Local(4)


# --------------------------------------------------------------------------- keys
def test_the_key_changes_with_every_input():
    base = {"scorer": [{"model_id": "m", "revision": "r1"}], "prompts": [PROMPT], "lengths": [2, 3],
            "gcg": SMALL, "seed": 0}
    k = memo.memo_key("f", 1, base)
    assert k == memo.memo_key("f", 1, copy.deepcopy(base))  # stable
    assert k == memo.memo_key("f", 1, dict(reversed(list(base.items()))))  # order of facts does not matter
    changed = [
        memo.memo_key("f", 2, base),  # the version constant
        memo.memo_key("g", 1, base),  # the function
        memo.memo_key("f", 1, {**base, "gcg": dataclasses.replace(SMALL, num_steps=3)}),  # a config field
        memo.memo_key("f", 1, {**base, "gcg": dataclasses.replace(SMALL, distance_penalty=0.5)}),
        memo.memo_key("f", 1, {**base, "prompts": [OTHER]}),  # a prompt
        memo.memo_key("f", 1, {**base, "scorer": [{"model_id": "m", "revision": "r2"}]}),  # the model revision
        memo.memo_key("f", 1, {**base, "lengths": [2]}),
        memo.memo_key("f", 1, {**base, "seed": 1}),
    ]
    assert len({k, *changed}) == len(changed) + 1
    with pytest.raises(TypeError, match="cannot key"):
        memo.memo_key("f", 1, {"x": object()})


def test_search_facts_name_the_scorer_and_every_setting():
    scorer = tiny("llama-classifier")
    config = dataclasses.replace(SMALL, restarts=2)

    def facts(sc=scorer, prompts=(PROMPT,), cfg=config):
        return searches.grid_facts(sc, list(prompts), [2], cfg, [True, False], None)

    who = facts()["scorer"][0]
    assert who["model_id"] == scorer.loaded.model_id and who["scorer"] == "classifier"
    assert who["dtype"] == scorer.loaded.dtype and who["scoring_revision"] is not None and who["device"] == "cpu"
    assert facts()["search_revision"] == SEARCH_REVISION and facts()["gcg_revision"] == GCG_REVISION
    key = memo.memo_key("x", 1, facts())
    other = copy.copy(scorer.loaded)
    other.revision = "another-revision"
    moved = type(scorer)(other, batch_size=scorer.batch_size)
    assert memo.memo_key("x", 1, facts(sc=moved)) != key
    assert memo.memo_key("x", 1, facts(prompts=(OTHER,))) != key
    assert memo.memo_key("x", 1, facts(cfg=dataclasses.replace(config, topk=9))) != key
    assert facts(cfg=dataclasses.replace(config, budget_seconds=30.0)) is None


# --------------------------------------------------------------------------- the cache
def test_hit_returns_the_stored_value_without_computing(cache):
    calls = []

    def compute():
        calls.append(1)
        return pd.DataFrame({"a": [1.5, 2.5]})

    v1, m1 = memo.cached("demo", 1, {"x": 1}, compute)
    v2, m2 = memo.cached("demo", 1, {"x": 1}, compute)
    assert calls == [1] and not m1.hit and m2.hit
    assert_same(v1, v2)
    assert m2.seconds == m1.seconds and m2.computed_at == m1.computed_at  # the original computation's
    assert "read from the result cache" in m2.sentence() and m1.computed_at[:10] in m2.sentence()
    record = json.loads(m2.path.read_text())  # plain JSON, with its facts and timing
    assert record["facts"] == {"x": 1} and record["seconds"] == m1.seconds and m2.path.parent == cache
    memo.cached("demo", 1, {"x": 2}, compute)  # other facts: computed
    memo.cached("demo", 2, {"x": 1}, compute)  # other version: computed
    assert calls == [1, 1, 1]


@pytest.mark.parametrize("damage", ["truncate", "garbage", "foreign", "bad payload"])
def test_a_damaged_record_is_recomputed_with_a_warning_naming_it(cache, damage):
    calls = []
    value, m = memo.cached("demo", 1, {"x": 1}, lambda: calls.append(1) or [1, 2, 3])
    text = m.path.read_text()
    if damage == "truncate":
        m.path.write_text(text[: len(text) // 2])
    elif damage == "garbage":
        m.path.write_bytes(b"\xff\xfe\x00 not json")
    elif damage == "foreign":
        m.path.write_text(text.replace(m.key, "0" * 64))
    else:
        rec = json.loads(text)
        rec["result"] = {"__rmlib__": "dataclass", "cls": "builtins.eval", "fields": {}}
        m.path.write_text(json.dumps(rec))
    with pytest.warns(UserWarning, match=f"recomputing {m.path}"):
        again, m2 = memo.cached("demo", 1, {"x": 1}, lambda: calls.append(1) or [1, 2, 3])
    assert again == value and not m2.hit and calls == [1, 1]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # overwritten: the next read is a clean hit
        assert memo.cached("demo", 1, {"x": 1}, lambda: calls.append(1))[1].hit and calls == [1, 1]


def test_recompute_bypasses_the_cache_and_overwrites(cache, monkeypatch):
    n = iter(range(100))
    first, _ = memo.cached("demo", 1, {}, lambda: next(n))
    assert memo.cached("demo", 1, {}, lambda: next(n))[0] == first == 0
    assert memo.cached("demo", 1, {}, lambda: next(n), recompute=True)[0] == 1
    monkeypatch.setenv(memo.RECOMPUTE_ENV_VAR, "1")
    assert memo.cached("demo", 1, {}, lambda: next(n))[0] == 2
    monkeypatch.setenv(memo.RECOMPUTE_ENV_VAR, "0")
    assert memo.cached("demo", 1, {}, lambda: next(n))[0] == 2  # the last fresh value was stored
    monkeypatch.setenv(memo.RECOMPUTE_ENV_VAR, "perhaps")
    with pytest.raises(InputError, match="RMLIB_RECOMPUTE"):
        memo.cached("demo", 1, {}, lambda: next(n))


@pytest.mark.parametrize("how", ["disabled", "no facts"])
def test_a_disabled_or_unidentified_computation_is_timed_and_never_stored(cache, how):
    calls = []
    kw = {"facts": {"x": 1}, "enabled": False} if how == "disabled" else {"facts": None}
    for _ in range(2):
        value, m = memo.cached("demo", 1, compute=lambda: calls.append(1) or [1, 2], **kw)
        assert value == [1, 2] and not m.hit and m.path is None
    assert calls == [1, 1] and not list(cache.glob("*"))


def test_keep_false_returns_the_value_without_storing_it(cache):
    n = iter(range(10))
    value, m = memo.cached("demo", 1, {}, lambda: next(n), keep=lambda v: v > 0)
    assert value == 0 and not m.hit and m.path is None
    assert not cache.exists() or not list(cache.iterdir())  # 0 was not kept
    assert memo.cached("demo", 1, {}, lambda: next(n), keep=lambda v: v > 0)[0] == 1  # computed again, kept
    assert memo.cached("demo", 1, {}, lambda: next(n))[1].hit


def test_an_unwritable_cache_warns_and_still_returns(tmp_path, monkeypatch):
    blocker = tmp_path / "file"
    blocker.write_text("")
    monkeypatch.delenv(memo.RECOMPUTE_ENV_VAR, raising=False)
    with pytest.warns(UserWarning, match="cannot write"):
        value, m = memo.cached("demo", 1, {}, lambda: 7, cache_dir=blocker)
    assert value == 7 and not m.hit


# --------------------------------------------------------------------------- chapter 7 through the cache
@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """A tiny RM trained on 80 EloEverything items, in its own rmlib cache (built once for this module)."""
    from rmlib.training import configuration, train

    folder = tmp_path_factory.mktemp("rmlib-cache")
    mp = pytest.MonkeyPatch()
    from tests.test_train import fresh_cache

    fresh_cache(folder, mp)
    config = {"tiny:llama-lm": configuration.TrainConfig(base="tiny:llama-lm", epochs=2, lr=0.01, unfreeze_blocks=0,
                                                 pairs_per_item=5, split_seed=0, test_fraction=0.5, max_items=80,
                                                 seed=0).validate()}
    runs = {b: train.train_reward_model(c, progress=False) for b, c in config.items()}
    yield runs, config
    mp.undo()


def chapter_7_tables(runs, config, n_boot=20, fractions=(0.5, 1.0)):
    """The three cached tables of chapter 7, through the same calls as the page: ``(values, memos)``."""
    from rmlib.training import evaluate as train_eval
    from rmlib.training.configuration import ALT_PROMPT

    folders = {b: r.folder for b, r in runs.items()}
    held = memo.cached("heldout_comparison", 1,
                       train_eval.cache_facts(runs, n_boot=n_boot, seed=0, alt_prompt=ALT_PROMPT),
                       lambda: train_eval.heldout_comparison(folders, n_boot=n_boot, seed=0, alt_prompt=ALT_PROMPT))
    gaps = memo.cached("family_gaps", 1, train_eval.cache_facts(runs, n_boot=n_boot, seed=0),
                       lambda: train_eval.family_gaps(runs, n_boot=n_boot, seed=0))
    abl = memo.cached("data_ablation", 1,
                      train_eval.cache_facts(training_keys=train_eval.training_keys(config, fractions),
                                             n_boot=n_boot, seed=0, fractions=list(fractions)),
                      lambda: pd.concat([train_eval.data_ablation(config[b], fractions, n_boot=n_boot, seed=0)
                                         .assign(base=b) for b in config], ignore_index=True))
    return [held[0][1], gaps[0], abl[0]], [held[1], gaps[1], abl[1]]


def test_chapter_7_tables_hit_equal_the_fresh_computation(cache, trained, monkeypatch):
    from rmlib.training import evaluate as train_eval
    from rmlib.training.configuration import ALT_PROMPT

    runs, config = trained
    (taus, gaps, abl), memos = chapter_7_tables(runs, config)
    assert not any(m.hit for m in memos)
    assert set(taus.index) >= {"tiny:llama-lm", "tiny:llama-lm, other prompt", "length", "bnc_log_freq"}
    assert len(abl) == 2 and list(gaps["RM"]) == ["tiny:llama-lm"]
    _, fresh = train_eval.heldout_comparison({b: r.folder for b, r in runs.items()}, n_boot=20, seed=0,
                                             alt_prompt=ALT_PROMPT)
    assert_same(fresh, taus)  # what was stored is what the computation returns
    for name in ("heldout_comparison", "gap_with_ci", "data_ablation"):
        monkeypatch.setattr(train_eval, name, lambda *a, **k: pytest.fail("a hit must not compute again"))
    again, memos = chapter_7_tables(runs, config)
    assert all(m.hit for m in memos) and all("read from the result cache" in m.sentence() for m in memos)
    for a, b in zip(again, (taus, gaps, abl)):
        assert_same(a, b)
    # Another setting, or the model retrained in place (new weights file), is computed again.
    with pytest.raises(pytest.fail.Exception, match="must not compute again"):
        chapter_7_tables(runs, config, n_boot=21)
    with pytest.raises(pytest.fail.Exception, match="must not compute again"):
        chapter_7_tables(runs, config, fractions=(1.0,))
    weights = runs["tiny:llama-lm"].folder / "model.safetensors"
    st = weights.stat()
    os.utime(weights, ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))
    with pytest.raises(pytest.fail.Exception, match="must not compute again"):
        chapter_7_tables(runs, config)
