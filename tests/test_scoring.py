"""The scoring kernel against full-sequence forwards, the template's own tokenization and the paper path."""

import copy

import numpy as np
import pytest
import torch

from rmlib.engine.frames import TemplateSplitError, chat_frame
from rmlib.engine.kernel import PackedSequence
from rmlib.engine.scorers import ImplicitRewardScorer, NonFiniteScoreError, Scorer, ScorerProtocol, load_scorer
from rmlib.engine.paper_mode import padded_batch
from tests.models_fixture import poisoned_classifier, scaled_reference, tiny, tiny_implicit

PROMPT = "What, in one word, is the greatest thing ever?"
IDS = np.r_[0:40, 500:540, 20000:20040, 49100:49152]


def full_sequence_scores(scorer, prompt, ids):
    """Reference: one whole sequence (prefix + token + suffix) per forward, no cache, no batching."""
    frame = scorer.frame(prompt)
    model = scorer.loaded.model
    out = []
    with torch.no_grad():
        for i in ids:
            x = torch.tensor([[*frame.prefix_ids, int(i), *frame.suffix_ids]])
            out.append(model(input_ids=x).logits[0, 0].item())
    return np.array(out)


@pytest.mark.parametrize("arch", ["llama-classifier", "gemma2-classifier"])
def test_cached_scores_equal_full_sequence_scores(arch):
    scorer = tiny(arch)
    fast = scorer.token_scores(PROMPT, IDS)
    ref = full_sequence_scores(scorer, PROMPT, IDS)
    # The tiny Gemma-2 has a 16-token sliding window, shorter than prefix + token + suffix:
    # the cache must keep the exact positions and window.
    assert len(scorer.frame(PROMPT).prefix_ids) > 16 or arch != "gemma2-classifier"
    np.testing.assert_allclose(fast, ref, atol=1e-5, rtol=0)


def test_scores_do_not_depend_on_batch_size_or_order():
    from rmlib.engine.kernel import PACK_MAX_TOKENS

    scorer = tiny("llama-classifier")
    base = scorer.token_scores(PROMPT, IDS)
    other = Scorer(scorer.loaded, batch_size=7)
    perm = np.random.default_rng(0).permutation(len(IDS))
    shuffled = other.token_scores(PROMPT, IDS[perm])
    np.testing.assert_allclose(shuffled, base[perm], atol=1e-5, rtol=0)
    # small batches are packed into one sequence, large ones use a per-candidate cache: both exact
    length = 1 + len(scorer.frame(PROMPT).suffix_ids)
    kernel = scorer.kernel(PROMPT)[1]
    many = np.arange(0, 49152, 120)
    assert PackedSequence.takes(kernel, 64, length) and not PackedSequence.takes(kernel, len(many), length)
    assert len(many) * length > PACK_MAX_TOKENS
    unpacked = Scorer(scorer.loaded, batch_size=len(many)).token_scores(PROMPT, many)
    np.testing.assert_allclose(unpacked, full_sequence_scores(scorer, PROMPT, many), atol=1e-5, rtol=0)
    np.testing.assert_allclose(unpacked, scorer.token_scores(PROMPT, many), atol=1e-5, rtol=0)


def test_token_ids_equal_the_templates_own_tokenization_for_plain_words():
    for arch in ("llama-classifier", "gemma2-classifier"):
        tok = tiny(arch).tokenizer
        frame = tiny(arch).frame(PROMPT)
        for word in ("hello", "love", "Water", "world"):
            ids = tok(word, add_special_tokens=False).input_ids
            assert len(ids) == 1, word
            text = tok.apply_chat_template([{"role": "user", "content": PROMPT},
                                            {"role": "assistant", "content": word}], tokenize=False)
            assert list(frame.prefix_ids) + ids + list(frame.suffix_ids) == tok(text, add_special_tokens=False).input_ids


def test_paper_mode_is_the_decode_retokenize_path():
    scorer = tiny("gemma2-classifier")
    tok, model = scorer.tokenizer, scorer.loaded.model
    ids = np.array([tok.convert_tokens_to_ids("Ġhello"), tok("love", add_special_tokens=False).input_ids[0], 28120])
    paper = scorer.token_scores(PROMPT, ids, mode="paper")
    # Independent: decode, template, tokenize with the tokenizer's defaults, forward one at a time.
    by_hand = []
    with torch.no_grad():
        for i in ids:
            text = tok.apply_chat_template([{"role": "user", "content": PROMPT},
                                            {"role": "assistant", "content": tok.decode([int(i)])}], tokenize=False)
            by_hand.append(model(**tok(text, return_tensors="pt")).logits[0, 0].item())
    np.testing.assert_allclose(paper, by_hand, atol=1e-5, rtol=0)
    exact = scorer.token_scores(PROMPT, ids)
    # " hello" loses its space to the Gemma template's trim in the paper path: the scores differ.
    assert abs(exact[0] - paper[0]) > 1e-4
    # a plain word with no space goes through both paths alike
    np.testing.assert_allclose(exact[1], paper[1], atol=1e-5)


def test_score_texts_matches_full_sequences_and_padding_is_exact():
    scorer = tiny("llama-classifier")
    texts = ["Universe", "Water", "the love of my life", "a", "Mount Everest in winter"]
    got = scorer.score_texts(PROMPT, texts)["score"].to_numpy()
    frame, tok, model = scorer.frame(PROMPT), scorer.tokenizer, scorer.loaded.model
    ref = []
    with torch.no_grad():
        for t in texts:
            ids = [*frame.prefix_ids, *tok(t, add_special_tokens=False).input_ids, *frame.suffix_ids]
            ref.append(model(input_ids=torch.tensor([ids])).logits[0, 0].item())
    np.testing.assert_allclose(got, ref, atol=1e-5, rtol=0)


def test_logprob_tokens_and_texts_match_a_plain_forward():
    scorer = tiny("llama-lm")
    frame, tok, model = scorer.frame(PROMPT), scorer.tokenizer, scorer.loaded.model
    with torch.no_grad():
        logits = model(input_ids=torch.tensor([frame.prefix_ids])).logits[0, -1]
    ref = torch.log_softmax(logits.double(), -1).numpy()
    np.testing.assert_allclose(scorer.token_scores(PROMPT, IDS), ref[IDS], atol=1e-5)
    text = "hello world again"
    ids = tok(text, add_special_tokens=False).input_ids
    with torch.no_grad():
        lp = torch.log_softmax(model(input_ids=torch.tensor([[*frame.prefix_ids, *ids]])).logits[0].double(), -1)
    P = len(frame.prefix_ids)
    expect = sum(lp[P - 1 + j, ids[j]].item() for j in range(len(ids)))
    got = scorer.score_texts(PROMPT, [text, "hi"])["score"].to_numpy()
    assert got[0] == pytest.approx(expect, abs=1e-4)


def test_implicit_reward_is_policy_minus_reference():
    implicit = tiny_implicit()
    policy, reference = implicit.policy, implicit.reference
    got = implicit.score_tokens(PROMPT, IDS)["score"].to_numpy()
    expect = policy.token_scores(PROMPT, IDS) - reference.token_scores(PROMPT, IDS)
    np.testing.assert_allclose(got, expect, atol=1e-9)
    assert np.abs(got).max() > 1e-3  # the two models differ
    assert implicit.provenance(PROMPT, "token")["scorer"] == "implicit"


def test_implicit_reward_needs_a_shared_vocabulary():
    policy = tiny("llama-lm")
    other = copy.copy(policy.loaded)
    other.tokenizer = copy.deepcopy(policy.tokenizer)
    other.tokenizer.add_tokens(["<brand-new-token>"])
    with pytest.raises(ValueError, match="share one tokenizer"):
        ImplicitRewardScorer(policy, Scorer(other))


def test_cpu_default_batch_grows_to_packed_positions_for_short_candidates():
    from rmlib.engine.kernel import PACK_MAX_TOKENS
    from rmlib.engine.plan import CPU_PACKED_POSITIONS

    loaded = tiny("llama-classifier").loaded
    auto, fixed = Scorer(loaded), Scorer(loaded, batch_size=64)
    length = 1 + len(auto.frame(PROMPT).suffix_ids)
    kernel = auto.kernel(PROMPT)[1]
    real, sizes = kernel.classifier, []

    def counting(ids, last, embeds=None):
        sizes.append(ids.shape[0])
        return real(ids, last, embeds)

    kernel.classifier = counting
    many = np.arange(0, 3000, 3)
    np.testing.assert_allclose(auto.token_scores(PROMPT, many), fixed.token_scores(PROMPT, many), atol=1e-5, rtol=0)
    grown = CPU_PACKED_POSITIONS // length
    assert grown > 64 and sizes[0] == grown and PackedSequence.takes(kernel, grown, length)
    assert grown * length <= PACK_MAX_TOKENS
    sizes.clear()
    texts = [f"a response of many words, number {i}, " * 3 for i in range(100)]
    seqs = [list(auto.tokenizer(t, add_special_tokens=False).input_ids) for t in texts]
    np.testing.assert_allclose(auto.sequence_scores(PROMPT, seqs), fixed.sequence_scores(PROMPT, seqs),
                               atol=1e-5, rtol=0)
    assert sizes[0] == 64  # long candidates (a search's) keep the default batch
    assert Scorer(loaded, batch_size=16).chunk_size(np.full(500, length)) == 16  # an explicit batch size is kept

def test_oom_backs_off_and_keeps_scores():
    scorer = Scorer(tiny("llama-classifier").loaded, batch_size=64)
    expect = scorer.token_scores(PROMPT, IDS)
    kernel = scorer.kernel(PROMPT)[1]
    real = kernel.classifier

    def picky(ids, last, embeds=None):
        if ids.shape[0] > 8:
            raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2 GiB")
        return real(ids, last, embeds)

    sizes = []

    def counting(ids, last, embeds=None):
        sizes.append(ids.shape[0])
        return picky(ids, last, embeds)

    kernel.classifier = counting
    with pytest.warns(UserWarning, match="out of memory with") as warned:
        got = scorer.token_scores(PROMPT, IDS)
    assert [str(w.message).split(":")[0] for w in warned] == [
        f"out of memory with {n} candidates per forward on cpu" for n in (64, 32, 16)]
    np.testing.assert_allclose(got, expect, atol=1e-5)
    assert sizes[:4] == [64, 32, 16, 8] and max(sizes[4:]) == 8  # halves, then stays small for this call
    assert scorer.batch_size == 64  # ... but the scorer's setting is not changed for good
    sizes.clear()
    with pytest.warns(UserWarning, match="out of memory with") as warned:
        scorer.token_scores(PROMPT, IDS[:10])
    assert str(warned[0].message).startswith("out of memory with 64 candidates per forward")
    assert sizes[0] == 64  # the next call starts again at batch_size (forwards of a fixed size: 10 ids, 64 rows)


def test_non_finite_scores_name_the_offending_tokens():
    scorer = poisoned_classifier(PROMPT, 505, float("nan"))
    with pytest.raises(NonFiniteScoreError) as err:
        scorer.token_scores(PROMPT, IDS)
    assert err.value.token_ids == [505]


def test_bad_inputs_give_clear_errors():
    scorer = tiny("llama-classifier")
    with pytest.raises(ValueError, match="non-empty"):
        scorer.token_scores("   ", IDS)
    with pytest.raises(ValueError, match="out of range"):
        scorer.token_ids([0, 10**7])
    with pytest.raises(ValueError, match="non-empty string"):
        scorer.score_texts(PROMPT, ["ok", ""])
    with pytest.raises(ValueError, match="mode must be"):
        scorer.token_scores(PROMPT, IDS, mode="fast")
    tok = copy.deepcopy(scorer.tokenizer)
    tok.chat_template = None
    with pytest.raises(ValueError, match="no chat template"):
        chat_frame(tok, PROMPT)
    twice = "{% for m in messages %}{{ m['content'] }}{{ m['content'] }}{% endfor %}"
    with pytest.raises(TemplateSplitError, match="not once"):
        chat_frame(tok, PROMPT, twice)
    glued = "{% for m in messages %}{{ m['content'] }}{% endfor %}ing"  # 'hello' + 'ing' merge
    with pytest.raises(TemplateSplitError, match="does not split cleanly"):
        chat_frame(tok, PROMPT, glued)
    double_bos = "<|im_start|><|im_start|>{% for m in messages %}{{ m['content'] + '\n' }}{% endfor %}"
    with pytest.raises(TemplateSplitError, match="BOS twice"):
        chat_frame(tok, PROMPT, double_bos)


def test_model_specs_and_loading_errors(tmp_path, monkeypatch):
    from rmlib.engine.models import check_model_spec, load_model

    with pytest.raises(ValueError, match="unknown model"):
        check_model_spec("not a model")
    with pytest.raises(ValueError, match="unknown tiny model"):
        check_model_spec("tiny:gpt5")
    # Remote code: refused before any download unless the user opts in for this model.
    with pytest.raises(ValueError, match="trust_remote_code"):
        load_model("RLHFlow/ArmoRM-Llama3-8B-v0.1")
    # Unreachable hub: says how to point at local weights.
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(ValueError, match="local folder"):
        load_model("Ray2333/GRM-gemma2-2B-rewardmodel-ft")
    # A local folder in safetensors loads like a hub model; a pickle-only folder is refused.
    loaded = tiny("llama-classifier").loaded
    good, bad = tmp_path / "good", tmp_path / "bad"
    loaded.model.save_pretrained(good, safe_serialization=True)
    loaded.tokenizer.save_pretrained(good)
    again = load_scorer(str(good))
    assert again.kind == "classifier"
    np.testing.assert_allclose(again.token_scores(PROMPT, IDS[:20]), tiny("llama-classifier").token_scores(PROMPT, IDS[:20]), atol=1e-6)
    loaded.model.save_pretrained(bad, safe_serialization=False)
    loaded.tokenizer.save_pretrained(bad)
    (bad / "model.safetensors").unlink(missing_ok=True)
    torch.save(loaded.model.state_dict(), bad / "pytorch_model.bin")
    with pytest.raises(ValueError, match="safetensors only"):
        load_model(str(bad))
    with pytest.raises(ValueError, match="is a classifier model, not logprob"):
        load_model("tiny:llama-classifier", kind="logprob")


class _CustomHead(torch.nn.Module):
    """An ArmoRM/QRM-style model: the reward is ``outputs.score`` and needs whole sequences."""

    def __init__(self, inner):
        super().__init__()
        self.inner = inner
        self.config = inner.config

    def get_input_embeddings(self):
        return self.inner.get_input_embeddings()

    def forward(self, input_ids=None, attention_mask=None, inputs_embeds=None, **kw):
        from types import SimpleNamespace

        out = self.inner(input_ids=input_ids, attention_mask=attention_mask, inputs_embeds=inputs_embeds)
        return SimpleNamespace(score=out.logits[:, :1] * 2.0 + 1.0)  # (B, 1), as the custom heads return


def test_custom_heads_score_whole_sequences_by_the_registry_rule():
    base = tiny("llama-classifier")
    loaded = copy.copy(base.loaded)
    loaded.model, loaded.score_from = _CustomHead(base.loaded.model), "score"
    custom = Scorer(loaded)
    assert not custom.kernel(PROMPT)[1].cached  # no prefix cache for a custom head
    got = custom.token_scores(PROMPT, IDS)
    np.testing.assert_allclose(got, full_sequence_scores(base, PROMPT, IDS) * 2.0 + 1.0, atol=1e-5)
    texts = ["Universe", "the love of my life"]
    np.testing.assert_allclose(custom.score_texts(PROMPT, texts)["score"],
                               base.score_texts(PROMPT, texts)["score"] * 2.0 + 1.0, atol=1e-5)


def test_device_map_auto_loads_through_accelerate(tmp_path, monkeypatch):
    from transformers import AutoModelForSequenceClassification

    loaded = tiny("llama-classifier").loaded
    loaded.model.save_pretrained(tmp_path, safe_serialization=True)
    loaded.tokenizer.save_pretrained(tmp_path)
    seen = {}
    real = AutoModelForSequenceClassification.from_pretrained

    def spy(*args, **kwargs):
        seen.update(kwargs)
        return real(*args, **kwargs)

    monkeypatch.setattr(AutoModelForSequenceClassification, "from_pretrained", spy)
    spread = load_scorer(str(tmp_path), device_map="auto")
    assert seen["device_map"] == "auto" and seen["use_safetensors"] is True
    np.testing.assert_allclose(spread.token_scores(PROMPT, IDS[:30]), tiny("llama-classifier").token_scores(PROMPT, IDS[:30]),
                               atol=1e-6)


# ---------------------------------------------------------------- API: protocol, no hidden side effects


def test_every_scorer_satisfies_the_protocol():
    assert isinstance(tiny("llama-classifier"), ScorerProtocol)
    assert isinstance(tiny("llama-lm"), ScorerProtocol)
    assert isinstance(tiny_implicit(), ScorerProtocol)
    assert not isinstance(object(), ScorerProtocol)
    assert not isinstance(tiny("llama-lm").loaded, ScorerProtocol)


def test_implicit_reward_leaves_the_reference_scorer_as_it_was():
    policy = Scorer(tiny("llama-lm").loaded, chat_template="plain")
    reference = scaled_reference(policy)
    assert reference.chat_template is None  # the reference's tokenizer template would apply
    implicit = ImplicitRewardScorer(policy, reference)
    assert reference.chat_template is None  # not overwritten
    assert reference.frame(PROMPT).chat_template != policy.frame(PROMPT).chat_template
    # the implicit reward scores the reference on the policy's inputs, as in DPO
    assert implicit.reference is not reference and implicit.reference.loaded is reference.loaded
    assert implicit.reference.frame(PROMPT) == policy.frame(PROMPT)
    got = implicit.token_scores(PROMPT, IDS[:20])
    expect = policy.token_scores(PROMPT, IDS[:20]) - Scorer(reference.loaded, chat_template="plain").token_scores(
        PROMPT, IDS[:20])
    np.testing.assert_allclose(got, expect, atol=1e-9)


def test_paper_padding_equals_the_tokenizers_and_leaves_it_alone():
    scorer = tiny("gemma2-classifier")
    texts = ["a", "the love of my life", "Water and fire"]
    for side in ("right", "left"):
        tok = copy.deepcopy(scorer.tokenizer)
        tok.padding_side = side
        tok.pad_token = None  # a tokenizer without a pad token (as many reward models ship)
        got = padded_batch(tok, texts, "tiny")
        assert tok.pad_token is None  # not set on the caller's tokenizer
        ref_tok = copy.deepcopy(tok)
        ref_tok.pad_token = ref_tok.eos_token  # what the paper did to the shared tokenizer
        ref = ref_tok(texts, return_tensors="pt", padding=True, truncation=True)
        assert set(got) == set(ref)
        for key in ref:
            assert torch.equal(got[key], ref[key]), (side, key)
    # the scorer's paper path keeps the shared tokenizer as it found it
    other = copy.copy(scorer.loaded)
    other.tokenizer = copy.deepcopy(scorer.tokenizer)
    other.tokenizer.pad_token = None
    paper = Scorer(other, batch_size=2)
    one_by_one = Scorer(other, batch_size=1)
    ids = np.array([20, 500, 20000])
    np.testing.assert_allclose(paper.token_scores(PROMPT, ids, mode="paper"),
                               one_by_one.token_scores(PROMPT, ids, mode="paper"), atol=1e-5)
    assert other.tokenizer.pad_token is None


def test_paper_input_ids_are_what_the_paper_path_scores():
    """Scorer.paper_input_ids (which the chapter-1 BOS note counts) is the input mode='paper' feeds the model:
    a forward of those ids alone gives the paper-mode score, for a classifier and for a logprob model."""
    import torch

    from rmlib.engine.kernel import extract_score
    from rmlib.engine.scorers import load_scorer

    prompt, text = "What is best?", " hello"
    rm = load_scorer("tiny:gemma2-classifier")
    ids = rm.paper_input_ids(prompt, text)
    with torch.no_grad():
        direct = float(extract_score(rm.loaded.model(input_ids=torch.tensor([ids])), rm.loaded.score_from)[0])
    assert abs(direct - float(rm.score_texts(prompt, [text], mode="paper")["score"].iloc[0])) < 1e-5
    lm = load_scorer("tiny:llama-lm")
    tok_id = int(lm.tokenizer(text, add_special_tokens=False).input_ids[0])
    with torch.no_grad():
        logits = lm.loaded.model(input_ids=torch.tensor([lm.paper_input_ids(prompt, text)])).logits[0, -1]
    expected = float(torch.log_softmax(logits.double(), -1)[tok_id])
    assert abs(expected - float(lm.token_scores(prompt, np.array([tok_id]), mode="paper")[0])) < 1e-6


def _full_forward_paper(scorer, prompt, ids):
    """mode='paper' as the paper ran it: one padded full forward per batch, no shared prefix."""
    full = Scorer(scorer.loaded, batch_size=scorer.batch_size, paper_forward="full")
    with pytest.MonkeyPatch.context() as m:  # and never through the shared prefix
        m.setattr(Scorer, "paper_shared_prefix", lambda self, prompt, convs: pytest.fail("shared prefix used"))
        scores = full.token_scores(prompt, ids, mode="paper")
    assert full.provenance(prompt, "paper")["paper_forward"] == "full"
    return scores


@pytest.mark.parametrize("arch", ["llama-classifier", "gemma2-classifier"])
def test_paper_mode_with_a_shared_prefix_equals_the_full_forward(arch, monkeypatch):
    scorer = tiny(arch)
    tok = scorer.tokenizer
    # byte pieces, a leading-space word (trimmed by Gemma's template), specials and plain words
    ids = np.r_[0:30, 250:260, 20000:20030, tok.convert_tokens_to_ids(["Ġhello", "hello", "\u0120"])]
    convs = scorer.paper_conversations(PROMPT, [tok.decode([int(i)]) for i in ids])
    kernel, cands, last = scorer.paper_shared_prefix(PROMPT, convs)
    assert kernel.prefix_len >= len(scorer.frame(PROMPT).prefix_ids) - 1  # the prompt runs once
    rows = tok(convs, truncation=True)["input_ids"]
    on = [(c, r, k) for c, r, k in zip(cands, rows, last) if c is not None]  # rows on the prompt's prefix
    assert len(on) >= 0.9 * len(rows)  # a response merging with the template's last token runs whole, alone
    assert [kernel.prefix_ids[0].tolist() + c for c, _, _ in on] == [r[:len(kernel.prefix_ids[0]) + k + 1]
                                                                      for _, r, k in on]
    for batch in (3, 64, 512):  # packed, packed and per-candidate caches
        fast = Scorer(scorer.loaded, batch_size=batch).token_scores(PROMPT, ids, mode="paper")
        np.testing.assert_allclose(fast, _full_forward_paper(scorer, PROMPT, ids), atol=1e-5, rtol=0)


def test_paper_mode_shared_prefix_reads_where_transformers_reads(monkeypatch):
    """When the template's last tokens are the pad id, transformers reads the rightmost other token:
    the shared-prefix path reads there too; padding by another id or on the left keeps the full forward."""
    base = tiny("llama-classifier")
    loaded = copy.copy(base.loaded)
    loaded.tokenizer = copy.deepcopy(base.tokenizer)
    loaded.model = copy.deepcopy(base.loaded.model)
    tok = loaded.tokenizer
    end = tok(tok.apply_chat_template([{"role": "user", "content": PROMPT}, {"role": "assistant", "content": "a"}],
                                      tokenize=False))["input_ids"][-1]
    tok.pad_token = tok.convert_ids_to_tokens(end)
    loaded.model.config.pad_token_id = end
    scorer = Scorer(loaded, batch_size=4)
    ids = np.r_[100:120, 3000:3010]
    convs = scorer.paper_conversations(PROMPT, [tok.decode([int(i)]) for i in ids])
    rows = tok(convs)["input_ids"]
    _, cands, last = scorer.paper_shared_prefix(PROMPT, convs)
    assert all(r[-1] == end for r in rows) and all(len(c) < len(r) for c, r in zip(cands, rows))
    np.testing.assert_allclose(scorer.token_scores(PROMPT, ids, mode="paper"),
                               _full_forward_paper(scorer, PROMPT, ids), atol=1e-5, rtol=0)
    loaded.model.config.pad_token_id = end + 1  # padded with one id, read by another
    assert scorer.paper_shared_prefix(PROMPT, convs) is None


def test_paper_mode_shared_prefix_under_left_padding(monkeypatch):
    """Left padding shifts a row's positions: plain rotary embeddings do not see the shift (the shared
    prefix gives the padded batch's scores); other position encodings keep the full forward."""
    from transformers import GPT2Config, LlamaConfig

    from rmlib.engine.paper_mode import plain_rotary

    base = tiny("gemma2-classifier")
    loaded = copy.copy(base.loaded)
    loaded.tokenizer = copy.deepcopy(base.tokenizer)
    loaded.tokenizer.padding_side = "left"
    scorer = Scorer(loaded, batch_size=8)
    ids = np.r_[0:12, 300:312, 20000:20012]  # texts of different lengths: the batches are padded
    convs = scorer.paper_conversations(PROMPT, [loaded.tokenizer.decode([int(i)]) for i in ids])
    assert len({len(r) for r in loaded.tokenizer(convs)["input_ids"]}) > 1
    assert scorer.paper_shared_prefix(PROMPT, convs) is not None
    np.testing.assert_allclose(scorer.token_scores(PROMPT, ids, mode="paper"),
                               _full_forward_paper(scorer, PROMPT, ids), atol=1e-5, rtol=0)
    assert plain_rotary(base.loaded.model.config) and not plain_rotary(GPT2Config())
    assert not plain_rotary(LlamaConfig(rope_parameters={"rope_type": "linear", "factor": 2.0, "rope_theta": 1e4}))
    with monkeypatch.context() as m:
        m.setattr("rmlib.engine.paper_mode.plain_rotary", lambda cfg: False)
        assert scorer.paper_shared_prefix(PROMPT, convs) is None


def test_paper_forward_is_checked_and_recorded():
    scorer = tiny("llama-classifier")
    with pytest.raises(ValueError, match="paper_forward must be 'shared-prefix'.*or 'full'"):
        Scorer(scorer.loaded, paper_forward="fast")
    assert scorer.provenance(PROMPT, "paper")["paper_forward"] == "shared-prefix"
    assert "paper_forward" not in scorer.provenance(PROMPT, "token")


def test_building_a_tiny_model_leaves_the_callers_random_state_alone():
    """tiny: weights come from seed 0 in a forked generator: the same weights each time, and the global
    torch random stream the caller seeded goes on as if no model had been built."""
    import torch

    from rmlib.engine.models import load_model

    torch.manual_seed(123)
    expected = torch.rand(3)
    torch.manual_seed(123)
    a = load_model("tiny:llama-classifier")
    assert torch.equal(torch.rand(3), expected)
    b = load_model("tiny:llama-classifier")
    assert all(torch.equal(x, y) for x, y in zip(a.model.state_dict().values(), b.model.state_dict().values()))


WORDS = ["hello", "The cat sat on the mat.", "x", "I love you so much, really", "4", "peace", "war and peace",
         "a much longer answer, with several clauses, that no other text here shares", "hello", "¿qué?"]


@pytest.mark.parametrize("spec", ["tiny:llama-classifier", "tiny:gemma2-classifier", "tiny:llama-lm"])
def test_a_texts_score_is_the_same_bits_whatever_else_is_scored(spec):
    """score_texts places each text at fixed places of forwards of its own length: in any subset or order a
    text's score is the same bits, and equals one forward of that text alone to float rounding."""
    scorer = load_scorer(spec)
    seqs = [list(scorer.tokenizer(t, add_special_tokens=False).input_ids) for t in WORDS]
    one = np.array([Scorer(scorer.loaded, batch_size=1).sequence_scores(PROMPT, [q])[0] for q in seqs])
    whole = scorer.score_texts(PROMPT, WORDS)["score"].to_numpy()
    np.testing.assert_allclose(whole, one, atol=1e-5, rtol=0)
    for part in (WORDS[::2], WORDS[::-1], [WORDS[7]], WORDS[3:] * 3):
        got = scorer.score_texts(PROMPT, part)["score"].to_numpy()
        np.testing.assert_array_equal(got, [whole[WORDS.index(t)] for t in part])
    other = Scorer(scorer.loaded, batch_size=3)  # the batch size given does not change a text's forward
    np.testing.assert_array_equal(other.score_texts(PROMPT, WORDS[::-1])["score"].to_numpy(), whole[::-1])


@pytest.mark.parametrize("forward", ["shared-prefix", "full"])
def test_paper_mode_texts_are_the_same_bits_whatever_else_is_scored(forward):
    """Mode "paper" on texts: after the prompt's prefix at fixed places, or (full forwards) each text alone,
    so that no text's score follows its neighbours' padding."""
    scorer = Scorer(tiny("llama-classifier").loaded, batch_size=4, paper_forward=forward)
    texts = [t for t in dict.fromkeys(WORDS)]
    whole = scorer.score_texts(PROMPT, texts, mode="paper")["score"].to_numpy()
    for part in (texts[::2], texts[::-1], [texts[6]]):
        got = scorer.score_texts(PROMPT, part, mode="paper")["score"].to_numpy()
        np.testing.assert_array_equal(got, [whole[texts.index(t)] for t in part])
    alone = [float(scorer.score_texts(PROMPT, [t], mode="paper")["score"].iloc[0]) for t in texts]
    np.testing.assert_array_equal(whole, alone)


@pytest.mark.parametrize("forward", ["shared-prefix", "full"])
def test_paper_mode_scores_do_not_depend_on_the_ids_asked_with(forward):
    """Mode "paper" on token ids: the prefix is the prompt's (not the asked texts' common prefix), the
    shared-prefix candidates sit at fixed places, and the full forward runs the vocabulary's own batches."""
    scorer = Scorer(tiny("llama-classifier").loaded, batch_size=16, paper_forward=forward)
    ids = np.r_[0:40, 500:540, 20000:20040]
    whole = scorer.token_scores(PROMPT, ids, mode="paper")
    for part in (ids[::3], ids[[5]], ids[::-1], np.r_[500:503]):
        np.testing.assert_array_equal(scorer.token_scores(PROMPT, part, mode="paper"),
                                      whole[np.searchsorted(ids, part)])
    assert scorer.token_slots(PROMPT, "paper") == 16
    other = Scorer(scorer.loaded, batch_size=5, paper_forward=forward)  # a table's recorded batch is kept
    np.testing.assert_array_equal(other.token_scores(PROMPT, ids[::3], mode="paper", slots=16), whole[::3])
