"""GCG search: gradient against plain autograd, search direction, true scores, visited set, filters.

The direction tests use a reward model whose score is a known linear function
of token identity (``LinearRM``: reward = Σ over the sequence of u[token]), so
the optimum and the first step's candidates are known by hand.
"""

import types

import numpy as np
import pytest
import torch

from rmlib.engine import gcg
from rmlib.engine.search_config import SearchConfig
from rmlib.engine.models import LoadedModel
from rmlib.engine.scorers import Scorer
from tests.models_fixture import tiny, tiny_implicit

PROMPT = "What, in one word, is the greatest thing ever?"


# --------------------------------------------------------------------------- a reward linear in the tokens
class LinearRM(torch.nn.Module):
    """reward(sequence) = Σ_t u[token_t] with u = E @ w; a custom head (``score_from='score'``)."""

    def __init__(self, vocab: int, hidden: int = 8, seed: int = 0):
        super().__init__()
        g = torch.Generator().manual_seed(seed)
        self.embed = torch.nn.Embedding(vocab, hidden)
        with torch.no_grad():
            self.embed.weight.copy_(torch.randn(vocab, hidden, generator=g))
        self.w = torch.nn.Parameter(torch.randn(hidden, generator=g))

    def get_input_embeddings(self):
        return self.embed

    def set_value(self, token_id: int, value: float) -> None:
        """Move E[token_id] along w so that u[token_id] == value."""
        with torch.no_grad():
            e, w = self.embed.weight, self.w
            e[token_id] += (value - e[token_id] @ w) * w / (w @ w)

    def u(self) -> np.ndarray:
        with torch.no_grad():
            return (self.embed.weight @ self.w).double().numpy()

    def forward(self, input_ids=None, inputs_embeds=None, attention_mask=None):
        x = self.embed(input_ids) if inputs_embeds is None else inputs_embeds
        if attention_mask is not None:
            x = x * attention_mask[..., None].to(x.dtype)
        return types.SimpleNamespace(score=(x @ self.w).sum(dim=1))


def linear_scorer(seed: int = 0) -> tuple[Scorer, LinearRM]:
    tok = tiny("llama-classifier").tokenizer
    model = LinearRM(len(tok), seed=seed).eval()
    loaded = LoadedModel(spec="test:linear", model_id="test:linear", revision=None, kind="classifier",
                         model=model, tokenizer=tok, dtype="float32", score_from="score")
    return Scorer(loaded, batch_size=512), model


def plain_ids(scorer, mask_kwargs=None) -> np.ndarray:
    """Allowed ids computed independently of gcg.allowed_tokens: not special, (optionally) ASCII."""
    tok = scorer.tokenizer
    special = set(tok.all_special_ids) | {i for i, t in tok.added_tokens_decoder.items() if t.special}
    ids = [i for i in range(len(tok)) if i not in special]
    if (mask_kwargs or {}).get("ascii_only"):
        ids = [i for i in ids if all(32 <= ord(c) < 127 for c in tok.decode([i])) and tok.decode([i])]
    return np.array(ids)


class Recorder:
    """Wraps scorer.sequence_scores to record every batch of sequences it is asked to score."""

    def __init__(self, scorer):
        self.calls = []
        self.real = scorer.sequence_scores
        scorer.sequence_scores = self

    def __call__(self, prompt, seqs, *args, **kwargs):
        self.calls.append([tuple(s) for s in seqs])
        return self.real(prompt, seqs, *args, **kwargs)


# --------------------------------------------------------------------------- gradient
def autograd_reference(scorer, prompt, ids):
    """∂score/∂onehot from one whole-sequence forward (no cache), the score written by hand."""
    frame, model = scorer.frame(prompt), scorer.loaded.model
    emb = model.get_input_embeddings()
    scale = float(getattr(emb, "embed_scale", torch.tensor(1.0)))
    onehot = torch.zeros(len(ids), emb.weight.shape[0])
    onehot[range(len(ids)), ids] = 1.0
    onehot.requires_grad_(True)
    parts = [emb(torch.tensor(frame.prefix_ids)).detach(), (onehot @ emb.weight) * scale]
    if scorer.kind == "classifier":
        parts.append(emb(torch.tensor(frame.suffix_ids)).detach())
        score = model(inputs_embeds=torch.cat(parts)[None]).logits[0, 0]
    else:
        logp = torch.log_softmax(model(inputs_embeds=torch.cat(parts)[None]).logits[0], -1)
        p = len(frame.prefix_ids)
        score = sum((logp[p - 1 + j] * onehot[j]).sum() for j in range(len(ids)))
    return torch.autograd.grad(score, onehot)[0]


@pytest.mark.parametrize("arch", ["llama-classifier", "gemma2-classifier", "llama-lm"])
@pytest.mark.parametrize("text", ["hello", "hello world again"])
def test_gradient_equals_whole_sequence_autograd(arch, text):
    # Gemma-2: sliding window shorter than the sequence, and embeddings scaled inside the module.
    scorer = tiny(arch)
    ids = scorer.tokenizer(text, add_special_tokens=False).input_ids
    got = gcg.score_gradient(scorer, PROMPT, ids)
    ref = autograd_reference(scorer, PROMPT, ids)
    assert got.shape == ref.shape == (len(ids), len(scorer.tokenizer))
    torch.testing.assert_close(got, ref, atol=1e-5 * float(ref.abs().max()), rtol=1e-4)


def test_implicit_gradient_is_policy_minus_reference():
    implicit = tiny_implicit()
    policy, reference = implicit.policy, implicit.reference
    ids = policy.tokenizer("hello world", add_special_tokens=False).input_ids
    got = gcg.score_gradient(implicit, PROMPT, ids)
    expect = autograd_reference(policy, PROMPT, ids) - autograd_reference(reference, PROMPT, ids)
    torch.testing.assert_close(got, expect, atol=1e-4, rtol=1e-4)
    result = gcg.descend(implicit, PROMPT, ids, SearchConfig(allowed="all", num_steps=2, search_width=16, topk=16))
    recomputed = (policy.sequence_scores(PROMPT, [result.best_ids])
                  - reference.sequence_scores(PROMPT, [result.best_ids]))[0]
    assert result.best_score == pytest.approx(recomputed, abs=1e-6)
    assert result.best_score > result.start_score


def test_gradient_of_a_linear_reward_is_u():
    scorer, model = linear_scorer()
    grad = gcg.score_gradient(scorer, PROMPT, [100, 200]).numpy()
    np.testing.assert_allclose(grad, np.tile(model.u(), (2, 1)), rtol=1e-5, atol=1e-5)


# --------------------------------------------------------------------------- direction
@pytest.mark.parametrize("maximize", [True, False])
def test_first_step_candidates_follow_the_sign_of_the_search(maximize):
    scorer, model = linear_scorer()
    u, start_tok, length, per_pos = model.u(), 1000, 3, 5
    rec = Recorder(scorer)
    cfg = SearchConfig(allowed="all", num_steps=1, search_width=length * per_pos, topk=50, maximize=maximize)
    gcg.descend(scorer, PROMPT, [start_tok] * length, cfg)
    start_call, step_call = rec.calls
    assert start_call == [(start_tok,) * length]
    swapped = set()
    for cand in step_call:
        diff = [(p, t) for p, t in enumerate(cand) if t != start_tok]
        assert len(diff) == 1  # one swap per candidate
        swapped.add(diff[0][1])
    allowed = plain_ids(scorer)
    # Independent: the per_pos allowed tokens with the highest u (maximize) or the lowest u (minimize).
    order = allowed[np.argsort(-u[allowed] if maximize else u[allowed], kind="stable")]
    assert swapped == set(order[:per_pos].tolist())
    assert len(step_call) == length * per_pos
    # ...and every one of them moves the score the right way (the bug: a pessimal search that climbs).
    sign = 1 if maximize else -1
    assert all(sign * (u[t] - u[start_tok]) > 0 for t in swapped)


def test_the_real_models_first_step_follows_the_negative_gradient_when_minimizing():
    scorer = tiny("llama-classifier")
    ids = scorer.tokenizer("hello world", add_special_tokens=False).input_ids
    grad = autograd_reference(scorer, PROMPT, ids).numpy()
    rec = Recorder(Scorer(scorer.loaded))
    local = rec.real.__self__
    gcg.descend(local, PROMPT, ids, SearchConfig(allowed="all", num_steps=1, search_width=8, topk=8, maximize=False))
    allowed = np.zeros(grad.shape[1], dtype=bool)
    allowed[plain_ids(scorer)] = True
    gain = -(grad - grad[np.arange(len(ids)), ids][:, None])  # first-order decrease of the score
    gain[:, ~allowed] = -np.inf
    gain[np.arange(len(ids)), ids] = -np.inf
    flat = np.argsort(-gain, axis=None, kind="stable")[:8]
    expect = set()
    for k in flat:
        pos, tok = divmod(int(k), grad.shape[1])
        seq = list(ids)
        seq[pos] = tok
        expect.add(tuple(seq))
    assert set(rec.calls[1]) == expect
    assert all(g > 0 for g in gain.ravel()[flat])  # all predicted to lower the score


@pytest.mark.parametrize("maximize", [True, False])
def test_linear_reward_reaches_the_known_optimum(maximize):
    scorer, model = linear_scorer()
    u, length = model.u(), 3
    start = [1000, 2000, 3000]
    result = gcg.descend(scorer, PROMPT, start, SearchConfig(allowed="all", num_steps=length + 1, search_width=64,
                                                             topk=16, maximize=maximize, patience=None))
    allowed = plain_ids(scorer)
    target = allowed[np.argmax(u[allowed])] if maximize else allowed[np.argmin(u[allowed])]
    assert result.best_ids == [int(target)] * length
    const = result.start_score - u[start].sum()  # prompt and template part of the score
    assert result.best_score == pytest.approx(const + length * u[target], abs=1e-3)
    assert (result.best_score > result.start_score) == maximize


@pytest.mark.parametrize("arch, maximize", [("llama-lm", True), ("llama-lm", False),
                                            ("gemma2-classifier", False), ("llama-classifier", True)])
def test_best_so_far_moves_only_in_the_search_direction(arch, maximize):
    scorer = tiny(arch)
    result = gcg.descend(scorer, PROMPT, "hello world", SearchConfig(allowed="all", num_steps=4, search_width=32,
                                                                     topk=32, maximize=maximize))
    h = result.history
    assert h["step"].tolist() == list(range(len(h)))
    steps = h["score"].to_numpy()
    expect = np.maximum.accumulate(steps) if maximize else np.minimum.accumulate(steps)
    np.testing.assert_allclose(h["best_so_far"].to_numpy(), expect)
    assert result.best_score == expect[-1]
    sign = 1 if maximize else -1
    assert sign * (result.best_score - result.start_score) > 0
    assert result.improvement > 0


def test_one_token_search_gets_near_the_exhaustive_optimum(monkeypatch):
    # A tenth of the vocabulary (every 10th allowed id) keeps the exhaustive scoring fast.
    scorer = Scorer(tiny("llama-classifier").loaded, batch_size=2048)
    subset = plain_ids(scorer)[::10]
    only = np.zeros(len(scorer.tokenizer), dtype=bool)
    only[subset] = True
    monkeypatch.setattr(gcg, "allowed_tokens", lambda *a, **k: only)
    every = scorer.token_scores(PROMPT, subset)  # exhaustive over the search space
    start = int(subset[np.argsort(every)[len(every) // 2]])  # a median token
    result = gcg.descend(scorer, PROMPT, [start], SearchConfig(allowed="all", num_steps=3, search_width=64, topk=64))
    assert result.best_ids[0] in set(subset.tolist())
    assert every.min() - 1e-6 <= result.best_score <= every.max() + 1e-6
    rank = int((every > result.best_score + 1e-6).sum())
    assert rank <= 2, f"GCG's best is rank {rank} of {len(every)} (192 of them evaluated)"
    assert result.best_score > result.start_score


# --------------------------------------------------------------------------- the reported score is the true score
@pytest.mark.parametrize("arch", ["llama-classifier", "gemma2-classifier", "llama-lm"])
def test_best_score_is_the_plain_scorers_score(arch):
    scorer = tiny(arch)
    result = gcg.descend(scorer, PROMPT, "x x", SearchConfig(allowed="all", num_steps=2, search_width=16, topk=16))
    frame, model = scorer.frame(PROMPT), scorer.loaded.model
    ids = result.best_ids
    with torch.no_grad():  # a whole-sequence forward, no cache
        if scorer.kind == "classifier":
            ref = model(input_ids=torch.tensor([[*frame.prefix_ids, *ids, *frame.suffix_ids]])).logits[0, 0].item()
        else:
            logp = torch.log_softmax(model(input_ids=torch.tensor([[*frame.prefix_ids, *ids]])).logits[0].double(), -1)
            p = len(frame.prefix_ids)
            ref = sum(logp[p - 1 + j, t].item() for j, t in enumerate(ids))
    assert result.best_score == pytest.approx(ref, abs=1e-4)
    assert result.best_score == pytest.approx(scorer.sequence_scores(PROMPT, [ids])[0], abs=1e-5)  # batch of 1 vs 16
    assert result.best_text == scorer.tokenizer.decode(ids)
    assert result.history["best_so_far"].iloc[-1] == result.best_score
    assert result.provenance["search"] == "gcg" and result.provenance["prompt"] == PROMPT


# --------------------------------------------------------------------------- visited set, patience, seed
def test_no_sequence_is_scored_twice():
    scorer = Scorer(tiny("llama-classifier").loaded)
    rec = Recorder(scorer)
    result = gcg.descend(scorer, PROMPT, [1000], SearchConfig(allowed="all", num_steps=6, search_width=4, topk=4))
    seen = [s for call in rec.calls for s in call]
    assert len(seen) == len(set(seen)) == result.n_evaluated == 1 + 6 * 4


def test_visited_sequences_are_skipped_by_propose():
    cfg = SearchConfig(allowed="all", search_width=3, topk=3, patience=None)
    priority = torch.full((2, 10), float("-inf"))
    priority[0, 5], priority[0, 6], priority[1, 7], priority[1, 8] = 4.0, 3.0, 2.0, 1.0
    current = (1, 2)
    assert gcg.propose(priority, current, set(), cfg) == [(5, 2), (6, 2), (1, 7)]
    assert gcg.propose(priority, current, {(5, 2), (1, 7)}, cfg) == [(6, 2), (1, 8)]
    assert gcg.propose(priority, current, {(5, 2), (6, 2), (1, 7), (1, 8)}, cfg) == []


def test_search_stops_when_every_candidate_was_visited(monkeypatch):
    scorer, _ = linear_scorer()
    only = np.zeros(len(scorer.tokenizer), dtype=bool)
    only[[10, 11, 12]] = True
    monkeypatch.setattr(gcg, "allowed_tokens", lambda *a, **k: only)
    result = gcg.descend(scorer, PROMPT, [10], SearchConfig(allowed="all", num_steps=10, search_width=8, topk=8,
                                                            patience=None))
    assert result.stop_reason == "exhausted"
    assert result.n_evaluated == 3  # the start and its two neighbours, each once


def test_patience_stops_a_search_that_no_longer_improves():
    scorer, model = linear_scorer()
    result = gcg.descend(scorer, PROMPT, [1000], SearchConfig(allowed="all", num_steps=50, search_width=8, topk=8,
                                                              patience=3))
    # One swap reaches the optimum of a 1-token linear reward; three steps without a new best follow.
    assert result.stop_reason == "patience"
    assert len(result.history) == 1 + 1 + 3
    assert result.history["best_so_far"].iloc[1:].nunique() == 1


def test_random_sampling_is_reproducible_with_its_seed():
    def candidates(seed):
        scorer = Scorer(tiny("llama-classifier").loaded)
        rec = Recorder(scorer)
        cfg = SearchConfig(allowed="all", num_steps=2, search_width=12, topk=16, n_replace=2, sampling="random",
                           seed=seed)
        result = gcg.descend(scorer, PROMPT, "hello world again", cfg)
        return rec.calls, result

    a, ra = candidates(1)
    b, rb = candidates(1)
    c, _ = candidates(2)
    assert a == b and ra.best_ids == rb.best_ids and ra.best_score == rb.best_score
    assert a[1] != c[1]
    for cand in a[1]:  # n_replace=2: exactly two positions changed
        assert sum(x != y for x, y in zip(cand, a[0][0])) == 2


def test_greedy_sampling_is_deterministic_whatever_the_seed():
    scorer = tiny("llama-lm")
    cfg = SearchConfig(allowed="all", num_steps=2, search_width=16, topk=16)
    r1 = gcg.descend(scorer, PROMPT, "hello world", cfg)
    r2 = gcg.descend(scorer, PROMPT, "hello world", dataclasses_replace(cfg))
    assert r1.history["ids"].tolist() == r2.history["ids"].tolist()
    # the seed seeds a search's random starts and the random sampling; greedy steps never draw
    r3 = gcg.descend(scorer, PROMPT, "hello world", dataclasses_replace(cfg, seed=5))
    assert r3.history["ids"].tolist() == r1.history["ids"].tolist()


def test_run_leaves_the_global_torch_random_state_alone():
    scorer, _ = linear_scorer()
    torch.manual_seed(1234)
    expect = torch.rand(3)
    torch.manual_seed(1234)
    gcg.descend(scorer, PROMPT, [1000, 2000], SearchConfig(allowed="all", num_steps=2, search_width=8, topk=8,
                                                           n_replace=2, sampling="random", seed=7))
    assert torch.equal(torch.rand(3), expect)


def test_numpy_bool_direction_is_accepted():
    scorer, model = linear_scorer()
    cfg = SearchConfig(allowed="all", num_steps=2, search_width=8, topk=8, maximize=np.bool_(False)).validate()
    assert cfg.maximize is False
    result = gcg.descend(scorer, PROMPT, [1000], cfg)
    assert result.best_score < result.start_score  # it minimized
    import json

    json.dumps(result.provenance["config"])  # plain bool, JSON-able


def test_start_tokens_must_be_allowed_by_the_filters():
    scorer, _ = linear_scorer()
    tok = scorer.tokenizer
    special = tok.convert_tokens_to_ids("<|im_end|>")
    with pytest.raises(ValueError, match=r"start token\(s\) 2 .*not allowed.*allow_special_tokens=False"):
        gcg.descend(scorer, PROMPT, [special, special], SearchConfig(allowed="all", num_steps=1, search_width=4,
                                                                     topk=4))
    non_ascii = next(i for i in range(1000, len(tok)) if not tok.decode([i]).isascii())
    with pytest.raises(ValueError, match="ascii_only=True"):
        gcg.descend(scorer, PROMPT, [1000, non_ascii], SearchConfig(allowed="ascii", num_steps=1, search_width=4,
                                                                    topk=4))
    ok = gcg.descend(scorer, PROMPT, [special], SearchConfig(allowed="all", num_steps=1, search_width=4, topk=4,
                                                             allow_special_tokens=True))
    assert ok.start_ids == [special]


def dataclasses_replace(cfg, **kw):
    import dataclasses

    return dataclasses.replace(cfg, **kw)


# --------------------------------------------------------------------------- filters
def test_allowed_tokens_masks_special_and_non_ascii_ids():
    tok = tiny("llama-classifier").tokenizer
    n = len(tok)
    base = gcg.allowed_tokens(tok, n + 7)
    assert base.shape == (n + 7,) and not base[n:].any()  # embedding rows beyond the tokenizer
    assert not base[tok.all_special_ids].any()
    assert base[tok.convert_tokens_to_ids("Ġhello")]
    ascii_ids = gcg.allowed_tokens(tok, n, ascii_only=True)
    scorer = tiny("llama-classifier")
    np.testing.assert_array_equal(np.flatnonzero(ascii_ids), plain_ids(scorer, {"ascii_only": True}))
    assert not ascii_ids[tok.convert_tokens_to_ids("Ċ")]  # "\n" is not printable
    with_special = gcg.allowed_tokens(tok, n, allow_special_tokens=True)
    assert with_special[tok.all_special_ids].all()


def test_filters_keep_special_and_non_ascii_tokens_out_of_the_search():
    scorer, model = linear_scorer()
    tok = scorer.tokenizer
    special = tok.convert_tokens_to_ids("<|im_end|>")
    non_ascii = next(i for i in range(1000, len(tok)) if not tok.decode([i]).isascii())
    top = model.u().max()
    model.set_value(special, top + 20.0)  # the best token of all
    model.set_value(non_ascii, top + 10.0)  # the best ordinary token
    cfg = dict(num_steps=2, search_width=8, topk=8)
    assert gcg.descend(scorer, PROMPT, [1000], SearchConfig(**cfg, allowed="all")).best_ids == [non_ascii]
    ascii_best = gcg.descend(scorer, PROMPT, [1000], SearchConfig(**cfg, allowed="ascii"))
    assert ascii_best.best_ids != [non_ascii] and ascii_best.best_text.isascii()
    assert gcg.descend(scorer, PROMPT, [1000], SearchConfig(**cfg, allowed="all",
                                                            allow_special_tokens=True)).best_ids == [special]


# --------------------------------------------------------------------------- distance penalty
def test_a_large_distance_penalty_proposes_the_nearest_embeddings():
    scorer, model = linear_scorer()
    rec = Recorder(scorer)
    start = 1000
    gcg.descend(scorer, PROMPT, [start], SearchConfig(allowed="all", num_steps=1, search_width=5, topk=5,
                                                      distance_penalty=1e6))
    emb = model.embed.weight.detach().numpy()
    allowed = plain_ids(scorer)
    allowed = allowed[allowed != start]
    dist = np.linalg.norm(emb[allowed] - emb[start], axis=1)
    nearest = set(allowed[np.argsort(dist)[:5]].tolist())
    assert {c[0] for c in rec.calls[1]} == nearest


# --------------------------------------------------------------------------- bad input
def test_bad_inputs_give_clear_errors():
    scorer = tiny("llama-classifier")
    with pytest.raises(ValueError, match="non-empty"):
        gcg.descend(scorer, PROMPT, "")
    with pytest.raises(ValueError, match="out of range"):
        gcg.descend(scorer, PROMPT, [10**8])
    with pytest.raises(ValueError, match="prompt must be"):
        gcg.descend(scorer, "  ", "hi")
    with pytest.raises(ValueError, match="sampling='random'"):
        SearchConfig(n_replace=2).validate()
    with pytest.raises(ValueError, match="search_width must be an int >= 1"):
        SearchConfig(search_width=0).validate()
    with pytest.raises(ValueError, match="distance_penalty"):
        SearchConfig(distance_penalty=-1).validate()
    with pytest.raises(ValueError, match="maximize must be True"):
        SearchConfig(maximize="min").validate()
    with pytest.raises(ValueError, match="patience"):
        SearchConfig(patience=0).validate()
    with pytest.raises(ValueError, match="kind"):
        gcg.descend(types.SimpleNamespace(kind="embedding"), PROMPT, "hi")


def test_results_table_has_one_row_per_search():
    scorer = tiny("llama-lm")
    results = [gcg.descend(scorer, PROMPT, "x", SearchConfig(allowed="all", num_steps=1, search_width=4, topk=4,
                                                             maximize=m))
               for m in (True, False)]
    table = gcg.results_table(results)
    assert table["direction"].tolist() == ["maximize", "minimize"]
    assert table["best_score"].tolist() == [r.best_score for r in results]
    assert table.loc[0, "best_score"] > table.loc[1, "best_score"]


def test_bench_gcg_reports_steps_per_second():
    from rmlib.bench.gcg_speed import bench_gcg

    out = bench_gcg(model="tiny:llama-lm", num_steps=2, search_width=8, response_len=2)
    assert out["model"] == "tiny:llama-lm" and out["search_width"] == 8 and out["response_len"] == 2
    assert out["gcg_steps_per_s"] > 0


def test_a_non_finite_gradient_is_an_error_not_an_empty_search(monkeypatch):
    scorer, _ = linear_scorer()
    real = gcg.part_gradient

    def poisoned(*args):
        g = real(*args)
        g[0, 5] = float("nan")  # e.g. an overflow in float16 during the backward pass
        return g

    monkeypatch.setattr(gcg, "part_gradient", poisoned)
    with pytest.raises(FloatingPointError, match="NaN or infinite"):
        gcg.descend(scorer, PROMPT, [1000], SearchConfig(allowed="all", num_steps=1))


def test_vocabulary_restricts_the_swaps_and_the_budget_stops_the_search():
    scorer, model = linear_scorer()
    vocab = [10, 500, 1000, 2000, 3000]
    rec = Recorder(scorer)
    result = gcg.descend(scorer, PROMPT, [1000, 1000], SearchConfig(allowed="all", num_steps=3, search_width=8, topk=8),
                         vocabulary=vocab)
    assert all(set(s) <= set(vocab) for call in rec.calls for s in call)
    u = model.u()
    assert result.best_ids == [max(vocab, key=lambda t: u[t])] * 2
    slow = gcg.descend(scorer, PROMPT, [1000, 1000], SearchConfig(allowed="all", num_steps=1000, search_width=4, topk=4,
                                                                  budget_seconds=1e-9, patience=None))
    assert slow.stop_reason == "budget" and slow.steps == 1
    with pytest.raises(ValueError, match="budget_seconds"):
        SearchConfig(budget_seconds=0).validate()
