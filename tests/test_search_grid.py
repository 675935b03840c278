"""rmlib.runs.searches.search_grid and the search tables: shortlists from stored single-token scores,
every prompt x length x direction over its own candidates, the result cache, one row per search and restart."""

import pandas as pd
import pytest

from rmlib.engine import gcg, search_tables, sweeps
from rmlib.engine.shortlists import build_shortlist
from rmlib.engine.search_config import SearchConfig
from rmlib.runs import searches
from rmlib.tables import memo
from tests.models_fixture import tiny
from tests.test_gcg import PROMPT

OTHER = "What, in one word, is the worst thing ever?"
SMALL = dict(num_steps=2, search_width=8, topk=8)  # GCG's steps, small


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("RMLIB_SCORES_DIR", str(tmp_path))
    monkeypatch.delenv(memo.RECOMPUTE_ENV_VAR, raising=False)
    return tmp_path / "memo"


def stored_singles(scorer, prompt, n=60):
    """A score table as chapter 1 stores it (token_id, token, decoded, score), of some ids."""
    ids = sweeps.allowed_ids(scorer)[::97][:n]
    return pd.DataFrame({"token_id": ids, "token": "t", "decoded": "d", "score": scorer.token_scores(prompt, ids)})


def test_shortlist_from_stored_scores_scores_nothing_and_keeps_the_extremes(monkeypatch):
    scorer = tiny("llama-classifier")
    table = stored_singles(scorer, PROMPT)
    table.loc[len(table)] = [2, "<s>", "<s>", 99.0]  # a special token: not allowed, never chosen
    monkeypatch.setattr(scorer, "sequence_scores", lambda *a, **k: pytest.fail("scored again"))
    sl = build_shortlist(scorer, PROMPT, k=5, n_random=4, seed=3, singles=table, source="read from the store")
    allowed = table[table["token_id"] != 2].sort_values("score", ascending=False)
    top, bottom = allowed["token_id"].head(5).tolist(), allowed["token_id"].tail(5).tolist()
    assert set(top) | set(bottom) <= set(sl.ids.tolist()) and 2 not in sl.ids
    assert len(sl.ids) == 14 and sl.pool_size == len(allowed) and sl.sample is None
    assert sl.singles["score"].is_monotonic_decreasing and sl.singles["token_id"].iloc[0] == top[0]
    assert "the 5 best and 5 worst single tokens of the 60 ASCII tokens" in sl.description
    assert "read from the store" in sl.description and sl.source == "read from the store"
    again = build_shortlist(scorer, PROMPT, k=5, n_random=4, seed=3, singles=table)
    assert again.ids.tolist() == sl.ids.tolist()  # seeded
    with pytest.raises(ValueError, match="lacks \\['score'\\]"):
        build_shortlist(scorer, PROMPT, singles=table.drop(columns="score"))
    with pytest.raises(ValueError, match="not both"):
        build_shortlist(scorer, PROMPT, singles=table, pool=[5, 6])
    shown = search_tables.shortlist_table([sl])
    assert shown.iloc[0]["candidates"] == 14 and shown.iloc[0]["best score"] == allowed["score"].iloc[0]
    ends = search_tables.extreme_singles([sl], 2)
    assert ends["direction"].tolist() == ["max", "max", "min", "min"] and set(ends["length"]) == {1}
    assert ends["best_score"].tolist() == pytest.approx(
        [*allowed["score"].head(2), *allowed["score"].tail(2).iloc[::-1]])


def test_search_grid_runs_every_search_over_its_shortlist_and_reads_it_back(cache, monkeypatch):
    scorer = tiny("llama-classifier")
    shortlists = {p: build_shortlist(scorer, p, k=4, n_random=2, singles=stored_singles(scorer, p))
                  for p in (PROMPT, OTHER)}
    config = SearchConfig(restarts=2, **SMALL)
    found, first = searches.search_grid(scorer, [PROMPT, OTHER], [2, 3], config, shortlists=shortlists)
    assert [(r.prompt, r.length, r.direction) for r in found] == [
        (p, n, d) for p in (PROMPT, OTHER) for n in (2, 3) for d in ("max", "min")]
    for r in found:
        assert set(r.best_ids) <= set(shortlists[r.prompt].ids.tolist())
        assert r.provenance["n_allowed"] == len(shortlists[r.prompt].ids)
        assert r.start_kind == "singles" and r.start_ids[0] == int(shortlists[r.prompt].singles["token_id"].iloc[
            0 if r.maximize else -1])  # GCG starts from the best (worst) shortlisted single token, repeated
        assert r.local_optimum is True and r.restarts_run == 2
    assert not first.hit and first.path.exists()
    monkeypatch.setattr(searches, "run", lambda *a, **k: pytest.fail("searched again"))
    again, second = searches.search_grid(scorer, [PROMPT, OTHER], [2, 3], config, shortlists=shortlists)
    assert second.hit and second.seconds == first.seconds
    assert [r.best_ids for r in again] == [r.best_ids for r in found]
    assert [r.agreement for r in again] == [r.agreement for r in found]
    table = search_tables.results_table(again, label=lambda p: p[-12:])
    assert table["best_score"].tolist() == [r.best_score for r in found] and table["prompt"].iloc[0] == PROMPT[-12:]
    restarts = search_tables.restarts_table(again, scorer.tokenizer)
    assert len(restarts) == sum(len(r.runs) for r in found) and restarts["run"].iloc[0] == "gcg"
    assert restarts["reached_best"].iloc[0] is None  # GCG's run is not one of the sweeps' restarts


def test_the_cache_key_follows_the_candidates_and_a_budget_is_never_cached(cache):
    scorer = tiny("llama-classifier")
    a = {PROMPT: build_shortlist(scorer, PROMPT, k=3, n_random=0, singles=stored_singles(scorer, PROMPT, 40))}
    b = {PROMPT: build_shortlist(scorer, PROMPT, k=4, n_random=0, singles=stored_singles(scorer, PROMPT, 40))}
    config = SearchConfig(method="sweep", restarts=1)
    facts = [searches.grid_facts(scorer, [PROMPT], [2], config, [True], s) for s in (a, b)]
    assert memo.memo_key("g", 1, facts[0]) != memo.memo_key("g", 1, facts[1])
    assert searches.grid_facts(scorer, [PROMPT], [2], SearchConfig(budget_seconds=5), [True], a) is None
    _, m = searches.search_grid(scorer, [PROMPT], [2], SearchConfig(method="sweep", budget_seconds=5), shortlists=a,
                                directions=[True])
    assert m.path is None and not list(cache.glob("*.json")) if cache.exists() else m.path is None
    with pytest.raises(ValueError, match="no entry for the prompt"):
        searches.search_grid(scorer, [PROMPT, OTHER], [2], config, shortlists=a)


def test_search_grid_can_start_every_search_from_a_repeated_word(cache):
    scorer = tiny("llama-classifier")
    config = SearchConfig(method="gcg", **SMALL)
    found, _ = searches.search_grid(scorer, [PROMPT], [3], config, start_word="x", directions=[False])
    x = gcg.repeated_word_ids(scorer.tokenizer, "x", 3)
    assert found[0].start_ids == x and found[0].start_kind == "given" and found[0].gcg_result.start_ids == x
    assert found[0].agreement == "GCG alone: no restarts" and found[0].restarts_run == 0
    facts = [searches.grid_facts(scorer, [PROMPT], [3], config, [False], None, w) for w in ("x", "the")]
    assert memo.memo_key("g", 1, facts[0]) != memo.memo_key("g", 1, facts[1])
