"""rmlib.engine.search: coordinate sweeps reach known optima, scores are true scores, checks are honest.

Known optima come from two constructions: a reward linear in the tokens (``LinearRM``
from ``tests/test_gcg.py``: the optimum is the best allowed token at every position),
and two-token responses over a small vocabulary scored exhaustively (every pair). A
"rugged" tiny classifier (large random weights) has a landscape where coordinate
sweeps from every start stop at the same local optimum below the exact one; there the
tests check the local optimum is honest and that GCG + sweeps (``method="both"``) get
the exact optimum.
"""

import dataclasses
import itertools
import json
import time

import numpy as np
import pytest
import torch

from rmlib.engine import restarts, scorer_batches, search_tables, shortlists, sweeps
from rmlib.engine import search as S
from rmlib.engine.search_config import DEFAULT_SHORTLIST, SearchConfig
from rmlib.runs import comparisons
from rmlib.engine.models import LoadedModel
from rmlib.engine.scorers import Scorer
from tests.models_fixture import tiny
from tests.test_gcg import PROMPT, linear_scorer, plain_ids


def rugged_scorer(init_range: float = 1.0, seed: int = 0) -> Scorer:
    """A tiny Llama classifier RM with large random weights (scores about ±12), on the default tokenizer."""
    from transformers import AutoModelForSequenceClassification, LlamaConfig

    tok = tiny("llama-classifier").tokenizer
    cfg = LlamaConfig(vocab_size=len(tok), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                      num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=512,
                      pad_token_id=tok.pad_token_id, bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id,
                      num_labels=1, initializer_range=init_range)
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        model = AutoModelForSequenceClassification.from_config(cfg).eval()
    loaded = LoadedModel(spec="test:rugged", model_id="test:rugged", revision=None, kind="classifier",
                         model=model, tokenizer=tok, dtype="float32")
    return Scorer(loaded, batch_size=1024)


_RUGGED = {}


def rugged():
    if "s" not in _RUGGED:
        _RUGGED["s"] = rugged_scorer()
    return _RUGGED["s"]


def small_vocab(scorer, n: int, step: int = 160) -> np.ndarray:
    return sweeps.allowed_ids(scorer)[::step][:n]


def exhaustive_pairs(scorer, vocab):
    grid = np.array(list(itertools.product(vocab.tolist(), repeat=2)))
    return grid, scorer.sequence_scores(PROMPT, grid.tolist())


def whole_sequence_score(scorer, ids) -> float:
    """The classifier's score from one whole-sequence forward, no cache, no batching."""
    frame = scorer.frame(PROMPT)
    with torch.no_grad():
        return scorer.loaded.model(input_ids=torch.tensor([[*frame.prefix_ids, *ids, *frame.suffix_ids]])).logits[0, 0].item()


# --------------------------------------------------------------------------- known optima
@pytest.mark.parametrize("maximize", [True, False])
def test_sweep_finds_the_optimum_of_a_linear_reward(maximize):
    scorer, model = linear_scorer()
    u, length = model.u(), 3
    vocab = np.arange(0, len(scorer.tokenizer), 7)  # a seventh of the vocabulary keeps it fast
    allowed = np.intersect1d(plain_ids(scorer, {"ascii_only": True}), vocab)  # independent of the search's filter
    target = int(allowed[np.argmax(u[allowed])] if maximize else allowed[np.argmin(u[allowed])])
    cfg = SearchConfig(method="sweep", length=length, maximize=maximize, restarts=1, init="random", seed=3)
    result = S.run(scorer, PROMPT, cfg, vocabulary=vocab)
    assert result.best_ids == [target] * length
    const = result.runs["start_score"].iloc[0] - u[result.start_ids].sum()  # prompt + template part
    assert result.best_score == pytest.approx(const + length * u[target], abs=1e-3)
    assert result.local_optimum is True and result.stop_reason == "converged"
    assert result.start_kind == "random" and result.start_ids != result.best_ids
    assert result.candidates_per_position == f"all allowed tokens ({len(allowed)})"
    assert result.provenance["n_allowed"] == len(allowed)
    # A linear reward: one pass sets every position; a second finds nothing to change.
    assert result.runs["scans"].iloc[0] == 2 * length
    # Each scan meets one sequence scored before (the current one), and the last scan of the second
    # pass repeats the last scan of the first exactly: those are read back, not scored again.
    n = len(allowed)
    assert result.candidates_scored == 1 + (2 * length - 1) * (n - 1)
    assert result.candidates_scored + result.candidates_reused == 1 + 2 * length * n


@pytest.mark.parametrize("maximize", [True, False])
def test_two_tokens_over_a_small_vocabulary_reach_the_exhaustive_optimum(maximize):
    scorer = tiny("llama-classifier")
    vocab = small_vocab(scorer, 100)
    grid, every = exhaustive_pairs(scorer, vocab)  # the known optimum: all 10,000 pairs
    k = int(np.argmax(every) if maximize else np.argmin(every))
    cfg = SearchConfig(method="sweep", length=2, maximize=maximize, restarts=2, init="random")
    result = S.run(scorer, PROMPT, cfg, vocabulary=vocab)
    assert result.best_ids == grid[k].tolist()
    assert result.best_score == pytest.approx(every[k], abs=1e-6)
    assert result.local_optimum is True
    assert result.candidates_scored < len(grid) / 4  # far cheaper than scoring every pair


@pytest.mark.parametrize("maximize", [True, False])
def test_gcg_then_sweeps_reach_the_exhaustive_optimum_of_a_rugged_rm(maximize):
    # Here sweeps from random starts mostly stop at other local optima (up to 6 below the best).
    scorer = rugged()
    vocab = small_vocab(scorer, 150)
    grid, every = exhaustive_pairs(scorer, vocab)
    k = int(np.argmax(every) if maximize else np.argmin(every))
    result = S.run(scorer, PROMPT, SearchConfig(method="both", length=2, maximize=maximize), vocabulary=vocab)
    assert result.best_ids == grid[k].tolist()
    assert result.best_score == pytest.approx(every[k], abs=1e-5)
    assert result.local_optimum is True


def test_a_sweeps_local_optimum_is_one_no_single_swap_improves_exhaustively():
    # Independent check on the full grid: neither the row nor the column of the result has a better pair.
    scorer = rugged()
    vocab = small_vocab(scorer, 100)
    grid, every = exhaustive_pairs(scorer, vocab)
    table = every.reshape(len(vocab), len(vocab))
    for maximize in (True, False):
        result = S.run(scorer, PROMPT, SearchConfig(method="sweep", length=2, maximize=maximize, restarts=2,
                                                    init="random", seed=1), vocabulary=vocab)
        i, j = (int(np.flatnonzero(vocab == t)[0]) for t in result.best_ids)
        sign = 1 if maximize else -1
        assert sign * (table[:, j] - table[i, j]).max() <= 1e-5  # no better first token
        assert sign * (table[i, :] - table[i, j]).max() <= 1e-5  # no better second token
        assert result.local_optimum is True
        assert result.local_optimum_check.startswith("exhaustive")


# --------------------------------------------------------------------------- the reported score is the true score
@pytest.mark.parametrize("method", ["gcg", "sweep", "both"])
def test_reported_score_equals_a_fresh_rescore(method):
    scorer = tiny("llama-classifier")
    vocab = small_vocab(scorer, 300)
    result = S.run(scorer, PROMPT, SearchConfig(method=method, length=2, restarts=2), vocabulary=vocab)
    ids = result.best_ids
    assert result.best_score == scorer.sequence_scores(PROMPT, [ids])[0]
    assert result.best_score == pytest.approx(whole_sequence_score(scorer, ids), abs=1e-5)
    assert result.search_score == pytest.approx(result.best_score, abs=1e-5)
    assert result.best_text == scorer.tokenizer.decode(ids)
    assert set(ids) <= set(vocab.tolist())
    assert result.provenance["search"] == method and result.provenance["prompt"] == PROMPT
    assert result.method == method and result.candidates_scored > 0 and result.seconds > 0


# --------------------------------------------------------------------------- honest local-optimality checks
def test_check_finds_a_planted_better_swap():
    scorer, model = linear_scorer()
    allowed = sweeps.allowed_ids(scorer)[::5]
    u = model.u()
    best = int(allowed[np.argmax(u[allowed])])
    ids = [best, best]
    clean = sweeps.single_swap_check(scorer, PROMPT, ids, allowed)
    assert clean["local_optimum"] is True and clean["better_swap"] is None
    assert clean["candidates"] == 1 + 2 * len(allowed)
    planted = int(allowed[len(allowed) // 2])
    model.set_value(planted, u.max() + 5.0)  # now swapping either position to `planted` gains 5 - (u_best - u_max) = 5
    found = sweeps.single_swap_check(scorer, PROMPT, ids, allowed)
    assert found["local_optimum"] is False
    swap = found["better_swap"]
    assert swap["token_id"] == planted and swap["position"] in (0, 1)
    assert swap["score"] == pytest.approx(found["score"] + 5.0, abs=1e-3)
    assert swap["score"] == pytest.approx(scorer.sequence_scores(PROMPT, [swap["ids"]])[0], abs=1e-5)
    # ...and minimizing, the same sequence (the highest) is far from a local minimum.
    assert sweeps.single_swap_check(scorer, PROMPT, ids, allowed, maximize=False)["local_optimum"] is False


def test_gcg_answer_takes_the_better_swaps_its_check_finds():
    # GCG stopped after one step from a random start: its own best is not single-swap optimal (an
    # independent check finds a better swap); the search's answer must take such swaps until none is left.
    scorer = rugged()
    vocab = small_vocab(scorer, 200)
    cfg = SearchConfig(method="gcg", length=3, init="random", seed=2,
                       num_steps=1, search_width=2, topk=2)
    result = S.run(scorer, PROMPT, cfg, vocabulary=vocab)
    own = sweeps.single_swap_check(scorer, PROMPT, result.gcg_result.best_ids, vocab)
    assert own["local_optimum"] is False  # the premise: GCG's answer alone is not optimal
    assert result.local_optimum is True and result.check_swaps_taken >= 1
    assert "better swap" in result.local_optimum_check
    assert result.best_score >= own["better_swap"]["score"] - 1e-5
    again = sweeps.single_swap_check(scorer, PROMPT, result.best_ids, vocab)
    assert again["local_optimum"] is True and again["score"] == pytest.approx(result.best_score, abs=1e-5)
    assert result.check_candidates == (1 + 3 * len(vocab)) * (result.check_swaps_taken + 1)
    polished = S.run(scorer, PROMPT, dataclasses.replace(cfg, method="both", restarts=1), vocabulary=vocab)
    assert polished.local_optimum is True and polished.best_score >= own["better_swap"]["score"] - 1e-5
    assert polished.runs["run"].tolist() == ["gcg", "sweep 0"]
    assert polished.runs["start_ids"].iloc[1] == polished.runs["end_ids"].iloc[0]  # the sweep polishes GCG's best


def test_a_search_stops_when_it_has_scored_every_sequence():
    # one token: the first sweep scans the whole space; a budget of 1e12 s must not run identical restarts
    scorer = rugged()
    vocab = small_vocab(scorer, 60)
    t = time.perf_counter()
    one = S.run(scorer, PROMPT, SearchConfig(method="sweep", length=1, budget_seconds=1e12), vocabulary=vocab)
    assert time.perf_counter() - t < 120
    singles = scorer.sequence_scores(PROMPT, [[int(i)] for i in vocab])
    assert one.stop_reason == restarts.SPACE_EXHAUSTED and len(one.runs) == 1
    assert one.best_ids == [int(vocab[np.argmax(singles)])] and one.local_optimum is True
    # two tokens over six: 36 sequences, restarts until all are scored, the best is the exhaustive one
    vocab = small_vocab(scorer, 6)
    grid, scores = exhaustive_pairs(scorer, vocab)
    for method in ("sweep", "gcg"):
        cfg = SearchConfig(method=method, length=2, budget_seconds=1e12, init="random",
                           num_steps=3, search_width=2, topk=2)
        two = S.run(scorer, PROMPT, cfg, vocabulary=vocab)
        assert two.stop_reason == restarts.SPACE_EXHAUSTED, (method, two.stop_reason)
        assert two.best_ids == grid[np.argmax(scores)].tolist(), method
        assert two.local_optimum is True and "every one of the 6^2 sequences" in two.local_optimum_check


def test_gcg_alone_restarts_until_its_budget_is_spent():
    scorer = rugged()
    vocab = small_vocab(scorer, 200)
    cfg = SearchConfig(method="gcg", length=3, budget_seconds=15.0, init="random",
                       num_steps=1, search_width=4, topk=4)
    result = S.run(scorer, PROMPT, cfg, vocabulary=vocab)
    assert result.stop_reason == "budget" and result.seconds >= 15.0
    runs = result.runs
    assert len(runs) > 1 and runs["run"].tolist() == ["gcg", *(f"gcg {k}" for k in range(1, len(runs)))]
    assert len({tuple(s) for s in runs["start_ids"]}) == len(runs)  # every run from a new start
    assert result.search_score >= runs["end_score"].max() - 1e-9
    ended = runs["stop"].isin(search_tables.GCG_ENDS).sum()
    assert result.restarts_run == ended and result.agreement.endswith(
        f"of {ended} GCG run{'s' if ended != 1 else ''} reached this value (within 0.0001 relative)")
    plain = S.run(scorer, PROMPT, dataclasses.replace(cfg, budget_seconds=None), vocabulary=vocab)
    assert len(plain.runs) == 1 and plain.agreement == "GCG alone: no restarts"  # no budget: one run, as before


# --------------------------------------------------------------------------- goal: single-swap optimal, within 1 % of 20 restarts
@pytest.mark.parametrize("length", [2, 3])
@pytest.mark.parametrize("maximize", [True, False])
def test_default_search_is_single_swap_optimal_and_within_one_percent_of_twenty_restarts(length, maximize, capsys):
    scorer = rugged()
    vocab = small_vocab(scorer, 150)
    t = time.perf_counter()
    result = S.run(scorer, PROMPT, SearchConfig(length=length, maximize=maximize), vocabulary=vocab)
    seconds = time.perf_counter() - t
    long = S.run(scorer, PROMPT, SearchConfig(method="sweep", length=length, maximize=maximize, restarts=20,
                                              init="random", seed=11), vocabulary=vocab)
    assert result.local_optimum is True
    sign = 1 if maximize else -1
    reference = max(sign * long.best_score, sign * result.best_score)
    assert sign * result.best_score >= reference - 0.01 * abs(reference)
    with capsys.disabled():  # reported, not asserted
        print(f"\n[search] L={length} {'max' if maximize else 'min'}: {result.best_score:.4f} in {seconds:.2f} s "
              f"({result.candidates_scored} candidates); 20 random restarts: {long.best_score:.4f} "
              f"in {long.seconds:.2f} s")


# --------------------------------------------------------------------------- anytime restarts and their agreement
class PlantedRM(Scorer):
    """A two-token landscape with two basins over a small vocabulary, scores set by hand.

    Broad basin: ``u[a] + u[b]`` (u in [0.1, 1]), whose optimum every sweep from almost any start
    reaches. Narrow basin: the pair ``(p, q)`` scores 10, and a pair with only one of them scores
    -10 (a moat). A sweep scans position 0 first, so it reaches ``(p, q)`` only from a start whose
    second token is ``q``: one random start in ``len(vocab)``. ``p`` and ``q`` are the worst single
    tokens, so the starts drawn from the best single tokens never hold them. ``delay`` seconds per
    call make a restart cost time, as a real model does.
    """

    def __init__(self, vocab: np.ndarray, seed: int = 0, delay: float = 0.0):
        super().__init__(linear_scorer()[0].loaded, batch_size=64)
        rng = np.random.default_rng(seed)
        self.vocab = np.asarray(vocab)
        self.u = dict(zip(self.vocab.tolist(), rng.uniform(0.1, 1.0, len(self.vocab)).tolist()))
        self.p, self.q = int(self.vocab[3]), int(self.vocab[7])
        self.u[self.p] = self.u[self.q] = 0.0
        self.delay = delay

    def value(self, seq) -> float:
        if len(seq) == 1:
            return self.u[int(seq[0])]
        a, b = (int(t) for t in seq)
        if (a, b) == (self.p, self.q):
            return 10.0
        if a == self.p or b == self.q:
            return -10.0
        return self.u[a] + self.u[b]

    def sequence_scores(self, prompt, seqs, progress=False, labels=None):
        if self.delay:
            time.sleep(self.delay)
        return np.array([self.value(s) for s in seqs], dtype=np.float64)

    def token_scores(self, prompt, ids, mode="token", progress=False):
        return self.sequence_scores(prompt, [[int(i)] for i in ids])


def planted(n: int = 40, delay: float = 0.0) -> PlantedRM:
    scorer = linear_scorer()[0]
    return PlantedRM(sweeps.allowed_ids(scorer)[::15][:n], delay=delay)


def test_three_fixed_restarts_miss_the_narrow_basin_and_a_budgeted_search_finds_it():
    rm = planted(delay=0.002)
    base = dict(method="sweep", length=2, seed=0)
    fixed = S.run(rm, PROMPT, SearchConfig(restart_policy="fixed", **base), vocabulary=rm.vocab)
    broad = 2 * max(v for t, v in rm.u.items())
    assert fixed.restarts_run == 3 and fixed.best_score == pytest.approx(broad)  # the broad optimum
    assert [tuple(ids)[1] for ids in fixed.runs["start_ids"]].count(rm.q) == 0
    anytime = S.run(rm, PROMPT, SearchConfig(budget_seconds=4.0, **base), vocabulary=rm.vocab)
    assert anytime.best_ids == [rm.p, rm.q] and anytime.best_score == 10.0
    # It stops when the budget is spent, or earlier when every one of the 40 x 40 sequences has been
    # scored (the scores a search has seen are read back, so late restarts over a small grid are fast).
    assert anytime.stop_reason in ("budget", restarts.SPACE_EXHAUSTED) and anytime.restarts_run > 3
    # The agreement: exactly the restarts that started with q second reached 10, none from the singles.
    runs = anytime.runs[anytime.runs["stop"] == "converged"]
    from_q = [tuple(ids)[1] == rm.q for ids in runs["start_ids"]]
    assert anytime.restarts_at_best == sum(from_q) >= 1
    assert (runs["end_score"] == 10.0).tolist() == from_q
    assert anytime.restart_spread == pytest.approx(10.0 - broad)
    assert sorted(anytime.restart_scores) == sorted(runs["end_score"].tolist())
    assert anytime.agreement.startswith(f"{sum(from_q)} of {anytime.restarts_run} restarts reached this value")
    kinds = set(anytime.runs["start_kind"])
    assert {"singles", "random"} <= kinds and any(k.startswith("singles (best") for k in kinds)  # diverse starts
    starts = [tuple(ids) for ids in anytime.runs["start_ids"]]
    assert len(starts) == len(set(starts))  # no start used twice


def test_the_restart_count_grows_with_the_budget():
    rm = planted(n=400, delay=0.003)  # 160,000 starts: the budget, not the starts, ends the search
    counts = {b: S.run(rm, PROMPT, SearchConfig(method="sweep", length=2, budget_seconds=b),
                       vocabulary=rm.vocab).restarts_run for b in (0.3, 1.5)}
    assert counts[0.3] >= 1 and counts[1.5] >= 2 * counts[0.3]


def test_without_a_budget_the_default_number_of_restarts_runs():
    rm = planted()
    result = S.run(rm, PROMPT, SearchConfig(method="sweep", length=2, restarts=4), vocabulary=rm.vocab)
    assert result.stop_reason == "converged"
    assert len(result.runs) == result.restarts_run == 4 and result.stop_reason == "converged"
    assert result.runs["start_kind"].tolist()[:3] == ["singles", "random", "singles (best 4)"]


def test_every_restart_agrees_on_a_landscape_with_one_optimum():
    scorer, model = linear_scorer()
    vocab = sweeps.allowed_ids(scorer)[::300]
    result = S.run(scorer, PROMPT, SearchConfig(method="sweep", length=3, restarts=5, init="random", seed=1),
                   vocabulary=vocab)
    best = int(vocab[np.argmax(model.u()[vocab])])
    assert result.best_ids == [best] * 3
    assert result.restarts_run == result.restarts_at_best == 5 and result.restart_spread < 1e-4
    assert result.agreement == "5 of 5 restarts reached this value (within 0.0001 relative)"
    table = search_tables.restarts_table([result], scorer.tokenizer)
    assert table["reached_best"].tolist() == [True] * 5 and set(table["end_text"]) == {result.best_text}
    row = search_tables.results_table([result]).iloc[0]
    assert row["agreement"] == result.agreement and row["candidates_per_position"] == len(vocab)
    assert row["single_swap_optimal"] is True or row["single_swap_optimal"] == True  # noqa: E712


def test_the_agreement_counts_only_restarts_that_ran_to_their_end():
    rm = planted(n=400, delay=0.002)
    result = S.run(rm, PROMPT, SearchConfig(method="sweep", length=2, budget_seconds=0.5), vocabulary=rm.vocab)
    cut = result.runs["stop"] == "budget"
    assert result.restarts_run == int((~cut).sum())
    assert search_tables.restarts_table([result])["reached_best"][cut].isna().all()


def test_the_search_leaves_the_callers_scorer_as_it_was():
    scorer = Scorer(tiny("llama-classifier").loaded, batch_size=7)
    sizes = []
    real = Scorer.sequence_scores

    class Spy(Scorer):
        def sequence_scores(self, prompt, seqs, *a, **k):
            sizes.append(self.batch_size)
            return real(self, prompt, seqs, *a, **k)

    spy = Spy(scorer.loaded, batch_size=7)
    S.run(spy, PROMPT, SearchConfig(method="sweep", length=2, restarts=1, batch_size=256),
          vocabulary=small_vocab(spy, 20))
    assert spy.batch_size == 7 and set(sizes) == {256}  # scored in batches of 256 through a copy
    assert scorer_batches.with_batch_size(scorer, 7) is scorer and scorer_batches.with_batch_size(scorer, None) is scorer


# --------------------------------------------------------------------------- long responses, budget, interrupt
def test_long_responses_use_gradient_shortlists_and_say_so():
    scorer, model = linear_scorer()
    result = S.run(scorer, PROMPT, SearchConfig(method="sweep", length=6, restarts=1, init="random"))
    assert result.candidates_per_position.startswith(f"shortlist of {DEFAULT_SHORTLIST} gradient-ranked")
    assert result.local_optimum is None and "not checked" in result.local_optimum_check
    allowed = sweeps.allowed_ids(scorer)
    best = int(allowed[np.argmax(model.u()[allowed])])
    assert result.best_ids == [best] * 6  # the gradient of a linear reward ranks the best token first
    vocab = allowed[::8]
    checked = S.run(scorer, PROMPT, SearchConfig(method="sweep", length=6, restarts=1, init="random",
                                                 check="always"), vocabulary=vocab)
    assert checked.local_optimum is True and checked.check_candidates == 1 + 6 * len(vocab)
    assert checked.best_ids == [int(vocab[np.argmax(model.u()[vocab])])] * 6


def test_budget_stops_the_search_and_keeps_the_best_so_far():
    scorer = Scorer(tiny("llama-classifier").loaded, batch_size=256)
    vocab = sweeps.allowed_ids(scorer)[::4]  # CHUNK candidates per call: a scan is 3 calls, the budget ends it
    cfg = SearchConfig(method="sweep", length=3, restarts=5, init="random", budget_seconds=0.3)
    result = S.run(scorer, PROMPT, cfg, vocabulary=vocab)
    assert result.stop_reason == "budget"
    assert result.seconds < 0.3 + 10  # the scorer call running when the budget ran out finishes
    assert result.candidates_scored < 5 * 3 * len(vocab)  # not all five restarts ran
    assert result.best_score == scorer.sequence_scores(PROMPT, [result.best_ids])[0]
    assert result.local_optimum in (True, False)  # checked exhaustively even so (length <= 4)


def test_the_progress_bars_close_however_a_search_ends(monkeypatch):
    """Finished, cut short by Ctrl-C before anything is kept, or failed: every bar opened is closed."""
    import rmlib.progress

    opened, closed, real_bar = [], [], rmlib.progress.bar

    def recorded(*a, **k):
        bar = real_bar(*a, **k)
        if k.get("desc", "").startswith("search "):  # the search's bars (the scorer has bars of its own)
            close = bar.close
            bar.close = lambda: (closed.append(bar), close())
            opened.append(bar)
        return bar

    monkeypatch.setattr(rmlib.progress, "bar", recorded)
    scorer, _ = linear_scorer()
    config = SearchConfig(method="sweep", length=2, restarts=1, init="random", seed=1)
    S.run(scorer, PROMPT, config)
    n = len(opened)
    for error in (KeyboardInterrupt, RuntimeError):
        def failing(prompt, seqs, *a, error=error, **k):
            raise error("stop")

        monkeypatch.setattr(scorer, "sequence_scores", failing)
        with pytest.raises(error):
            S.run(scorer, PROMPT, config)
        with pytest.raises(error):
            sweeps.single_swap_check(scorer, PROMPT, [5, 6], sweeps.allowed_ids(scorer)[:10])
    assert n >= 1 and len(opened) == n + 4
    assert all(any(c is b for c in closed) for b in opened)


def test_ctrl_c_keeps_the_best_so_far(monkeypatch):
    scorer, model = linear_scorer()
    real, calls = scorer.sequence_scores, []

    allowed = sweeps.allowed_ids(scorer)

    def interrupted(prompt, seqs, *a, **k):
        calls.append(len(seqs))
        if sum(calls) > 1 + len(allowed) and not interrupted.done:  # the start and a scan, then Ctrl-C
            interrupted.done = True
            raise KeyboardInterrupt
        return real(prompt, seqs, *a, **k)

    interrupted.done = False

    monkeypatch.setattr(scorer, "sequence_scores", interrupted)
    result = S.run(scorer, PROMPT, SearchConfig(method="sweep", length=3, restarts=1, init="random", seed=4))
    assert result.stop_reason == "interrupted" and result.local_optimum is None
    u = model.u()
    best = int(allowed[np.argmax(u[allowed])])
    assert result.best_ids[0] == best  # the first scan's move is kept
    assert result.best_ids != result.start_ids


def test_to_dict_is_json_and_records_what_reproduces_the_result(tmp_path):
    scorer = tiny("llama-classifier")
    result = S.run(scorer, PROMPT, SearchConfig(method="both", length=2, restarts=1, num_steps=2, search_width=8,
                                                topk=8), vocabulary=small_vocab(scorer, 50))
    path = tmp_path / "r.json"
    result.save_json(path)
    back = json.loads(path.read_text())
    assert back["best_ids"] == result.best_ids and back["best_score"] == result.best_score
    assert back["method"] == "both" and back["config"]["num_steps"] == 2
    assert back["provenance"]["model_id"] == "tiny:llama-classifier" and back["provenance"]["prompt"] == PROMPT
    assert [r["run"] for r in back["runs"]] == ["gcg", "sweep 0"]
    for key in ("candidates_scored", "seconds", "local_optimum", "start_ids", "start_kind", "time_to_local_optimum"):
        assert key in back


def test_comparison_table_has_gcg_sweeps_and_singles_per_search():
    scorer = rugged()
    vocab = small_vocab(scorer, 100)
    config = SearchConfig(restarts=2, allowed="ascii", num_steps=3, search_width=16, topk=16)
    table = comparisons.comparison_table(scorer, [PROMPT], lengths=(2,), config=config, vocabulary=vocab)
    assert len(table) == 2 and table["direction"].tolist() == ["max", "min"]
    singles = shortlists.best_singles(scorer, PROMPT, vocab)
    assert table["single_score"].tolist() == pytest.approx([singles["score"].iloc[0], singles["score"].iloc[-1]])
    for row in table.itertuples():
        sign = 1 if row.direction == "max" else -1
        assert min(row.gcg_gap, row.sweep_gap) == 0 and row.gcg_gap >= 0 and row.sweep_gap >= 0
        assert row.gcg_gap == pytest.approx(sign * (max(sign * row.gcg_score, sign * row.sweep_score) * sign
                                                    - row.gcg_score))
        for ids, score in ((row.gcg_ids, row.gcg_score), (row.sweep_ids, row.sweep_score)):
            assert score == scorer.sequence_scores(PROMPT, [ids])[0] and set(ids) <= set(vocab.tolist())
        assert row.sweep_single_swap_optimal is True and row.gcg_single_swap_optimal in (True, False)


# --------------------------------------------------------------------------- bad input
def test_bad_settings_give_clear_errors():
    scorer = tiny("llama-classifier")
    with pytest.raises(ValueError, match="method must be one of"):
        SearchConfig(method="beam").validate()
    with pytest.raises(ValueError, match="allowed must be one of"):
        SearchConfig(allowed="unicode").validate()
    with pytest.raises(ValueError, match="length must be an int >= 1"):
        SearchConfig(length=0).validate()
    with pytest.raises(ValueError, match="budget_seconds"):
        SearchConfig(budget_seconds=-1).validate()
    assert SearchConfig(maximize=np.bool_(False)).validate().maximize is False
    with pytest.raises(ValueError, match="has 1 tokens .* but length=2"):
        S.run(scorer, PROMPT, SearchConfig(length=2), start=[1000])
    with pytest.raises(ValueError, match="not allowed by the token filters"):
        S.run(scorer, PROMPT, SearchConfig(length=2), start=[2, 2])
    with pytest.raises(ValueError, match="prompt must be"):
        S.run(scorer, " ", SearchConfig())
    with pytest.raises(ValueError, match="no token of `vocabulary`"):
        S.run(scorer, PROMPT, SearchConfig(), vocabulary=[0, 1, 2])


# --------------------------------------------------------------------------- CLI
def test_cli_search_prints_and_writes_the_best(tmp_path, capsys):
    from rmlib.cli import main

    out = tmp_path / "best.json"
    rc = main(["search", "--model", "tiny:llama-classifier", "--prompt", PROMPT, "--length", "1", "--direction", "min",
               "--method", "sweep", "--restarts", "1", "--batch-size", "1024", "--out", str(out), "--no-progress"])
    assert rc == 0
    printed = capsys.readouterr().out
    back = json.loads(out.read_text())
    scorer = tiny("llama-classifier")
    every = scorer.token_scores(PROMPT, sweeps.allowed_ids(scorer))  # one token: the exhaustive minimum is known
    assert back["best_score"] == pytest.approx(every.min(), abs=1e-6)
    assert back["best_score"] == scorer.sequence_scores(PROMPT, [back["best_ids"]])[0]
    assert f"best ids:   {back['best_ids']}" in printed and repr(back["best_text"]) in printed
    assert f"{back['best_score']:.6f}" in printed and "single-swap local optimum: yes" in printed
    assert back["direction"] == "min" and back["method"] == "sweep" and back["local_optimum"] is True
    # One token has one optimum: the restart agrees with itself, and the JSON and the page say so.
    assert back["restarts_run"] == back["restarts_at_best"] == 1 and back["restart_spread"] == 0
    assert back["restart_scores"] == [pytest.approx(back["search_score"])]
    assert back["agreement"] == "1 of 1 restart reached this value (within 0.0001 relative)"
    assert back["config"]["restart_policy"] == "anytime" and back["config"]["agreement_tol"] == 1e-4
    assert "restarts:   1 of 1 restart reached this value" in printed


def test_cli_ctrl_c_writes_the_best_so_far(tmp_path, capsys, monkeypatch):
    from rmlib.cli import main

    real, seen = Scorer.sequence_scores, []

    def interrupted(self, prompt, seqs, *a, **k):
        seen.append(len(seqs))
        if len(seen) == 3:  # the start, one chunk of the first scan, then Ctrl-C
            raise KeyboardInterrupt
        return real(self, prompt, seqs, *a, **k)

    monkeypatch.setattr(Scorer, "sequence_scores", interrupted)
    out = tmp_path / "partial.json"
    rc = main(["search", "--model", "tiny:llama-classifier", "--prompt", PROMPT, "--length", "2", "--direction", "max",
               "--method", "sweep", "--start", "hello world", "--out", str(out), "--no-progress"])
    assert rc == 130
    back = json.loads(out.read_text())
    assert back["stop_reason"] == "interrupted" and back["local_optimum"] is None
    assert back["start_kind"] == "given" and back["start_text"] == "hello world"
    assert "stopped: interrupted" in capsys.readouterr().out


def test_cli_rejects_bad_settings_before_loading_a_model(capsys):
    from rmlib.cli import main

    assert main(["search", "--model", "tiny:llama-classifier", "--prompt", PROMPT, "--length", "0",
                 "--direction", "max"]) == 2
    assert "--length must be a whole number >= 1, got 0" in capsys.readouterr().err


# --------------------------------------------------------------------------- bench
def test_bench_search_reports_sweep_speed_beside_gcg():
    from rmlib.bench.search_speed import bench_search

    out = bench_search(model="tiny:llama-classifier", lengths=(2,), vocab=64, gcg_steps=2, gcg_width=8)
    row = out["lengths"]["2"]
    assert out["candidates_per_position"].startswith("64 of ")
    assert row["sweep_candidates_per_s"] > 0 and row["gcg_steps_per_s"] > 0
    assert row["local_optimum"] is True and row["time_to_local_optimum_s"] is not None
    assert row["candidates_to_local_optimum"] >= 2 * 63  # one scan of each position, the current token read back
    assert row["scans"] >= 2
    json.dumps(out)
    assert "stride of 64" in out["vocabulary"] and out["dtype"] == "float32"


def test_bench_search_goal_reports_time_optimality_and_gap_per_cell():
    from rmlib.bench.search_speed import bench_search_goal

    out = bench_search_goal(lengths=(2,), reference_restarts=3, vocab=80)
    assert set(out["cells"]) == {"L=2 max", "L=2 min"} and out["vocabulary"].startswith("80 of ")
    for name, cell in out["cells"].items():
        assert cell["single_swap_optimal"] is True and cell["gap_pct"] >= 0
        sign = 1 if name.endswith("max") else -1
        best = sign * max(sign * cell["best_score"], sign * cell["reference_score"])
        assert cell["gap_pct"] == pytest.approx(100 * sign * (best - cell["best_score"]) / abs(best), abs=1e-3)
        assert cell["goal_met"] == (cell["gap_pct"] <= 1 and cell["seconds"] <= 60)
    assert out["goal_met_everywhere"] == all(c["goal_met"] for c in out["cells"].values())
    json.dumps(out)


def test_bench_search_anytime_reports_the_share_within_the_reference_before_and_after():
    from rmlib.bench.search_speed import bench_search_anytime

    out = bench_search_anytime(seeds=(0,), lengths=(2,), vocab=40, reference_restarts=3)
    assert set(out["cells"]) == {"seed 0 L=2 max", "seed 0 L=2 min"} and "stride of 40" in out["vocabulary"]
    for name, cell in out["cells"].items():
        sign = 1 if name.endswith("max") else -1
        for when in ("before", "after"):
            gap = sign * (cell["reference_score"] - cell[f"{when}_score"]) / abs(cell["reference_score"])
            assert cell[f"{when}_within"] == (gap <= 0.01)
        assert cell["budget_seconds"] == cell["reference_seconds"]  # equal effort by default
        assert cell["before_restarts"] <= 3  # the earlier rule: three starts at most, whatever the budget
        assert "reached this value" in cell["after_agreement"] or cell["after_agreement"] == "no restart ran to its end"
    cells = list(out["cells"].values())
    assert out["share_within_after"] == sum(c["after_within"] for c in cells) / 2
    assert out["share_within_before"] == sum(c["before_within"] for c in cells) / 2
    assert out["goal_met"] == (out["share_within_after"] >= 0.9)
    json.dumps(out)


def test_bench_cli_only_runs_the_named_sections(monkeypatch, capsys):
    import rmlib.bench as bench
    from rmlib.cli import main

    called = []
    monkeypatch.setattr(bench, "SECTIONS", {n: bench.Section(lambda args, n=n: called.append(n) or {"ran": n})
                                            for n in bench.SECTIONS})
    assert main(["bench", "--only", "search_goal,gcg"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert called == ["gcg", "search_goal"] and report["search_goal"] == {"ran": "search_goal"}
    assert "startup" not in report and "search" not in report
    rc = main(["bench", "--only", "nope,search"])
    assert rc != 0 and "unknown section(s) ['nope']" in capsys.readouterr().err and called == ["gcg", "search_goal"]


def test_rugged_tiny_is_the_tiny_model_with_larger_weights():
    from rmlib.bench.search_speed import bench_search_goal, rugged_tiny

    r = rugged_tiny()
    ids = sweeps.allowed_ids(r)[::500][:40]
    spread = np.ptp(r.token_scores(PROMPT, ids))
    assert spread > 20 * np.ptp(tiny("llama-classifier").token_scores(PROMPT, ids))
    assert r.token_scores(PROMPT, ids[:5]).tolist() == rugged_tiny().token_scores(PROMPT, ids[:5]).tolist()  # seeded
    out = bench_search_goal(lengths=(2,), directions=(True,), reference_restarts=2, vocab=40, init_range=1.0)
    assert "initializer_range=1.0" in out["model_id"] and out["cells"]["L=2 max"]["single_swap_optimal"] is True
