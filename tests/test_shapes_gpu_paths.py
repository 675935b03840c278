"""The paper RMs' shapes (``random:<shape>``), the shared-prefix attention the GPU path uses, and GCG on
a bf16 Gemma-2 with a scaled embedding. All on the CPU: the GPU path's computation is the same code,
asked for with ``shared_attention=True``."""

import numpy as np
import pytest
import torch

from rmlib.engine import gcg
from rmlib.engine.search_config import SearchConfig
from rmlib.engine.frames import chat_frame
from rmlib.engine.kernel import PrefixKernel
from rmlib.engine.models import LoadedModel, check_model_spec
from rmlib.engine.scorers import Scorer
from rmlib.engine.shapes import PAPER_SHAPES, build_random, shape_config, synthetic_tokenizer
from rmlib.options import RANDOM_SHAPES

PROMPT = "What, in one word, is the greatest thing ever?"
SMALL = dict(num_hidden_layers=2, hidden_size=64, intermediate_size=128, num_attention_heads=4, num_key_value_heads=2,
             head_dim=16)


def small_scorer(shape, dtype=torch.float32, **kw):
    model, tok, kind = build_random(shape, dtype, "cpu", **dict(SMALL, **kw))
    return Scorer(LoadedModel(f"random:{shape}", shape, "random-init-seed-0", kind, model.eval(), tok,
                              str(dtype).removeprefix("torch.")))


@pytest.mark.parametrize("shape", sorted(PAPER_SHAPES))
def test_synthetic_tokenizer_has_the_real_size_and_special_ids(shape):
    s = PAPER_SHAPES[shape]
    tok = synthetic_tokenizer(s.vocab_size, s.specials, bos=s.bos, eos=s.eos, pad=s.pad, chat_template=s.chat_template)
    assert len(tok) == s.vocab_size == shape_config(shape).vocab_size
    assert tok.convert_tokens_to_ids(list(s.specials)) == list(s.specials.values())
    assert tok.pad_token_id == s.config["pad_token_id"] and tok.bos_token_id == s.config["bos_token_id"]
    # every id decodes, and text round-trips through the byte-level pieces
    assert tok.decode(tok(" café 1", add_special_tokens=False).input_ids) == " café 1"
    assert tok.decode([s.vocab_size - 1]).strip()
    frame = chat_frame(tok, PROMPT)  # the template splits cleanly at the response
    assert frame.prefix_ids[0] == tok.bos_token_id
    assert tok.decode(frame.suffix_ids) == ("<|eot_id|>" if "llama" in shape else "<end_of_turn>\n")


def test_random_shapes_are_model_specs():
    for shape in RANDOM_SHAPES:
        assert check_model_spec(f"random:{shape}") == "random"


def test_shape_config_is_the_published_size():
    # Gemma-2-2B: 2.61B parameters with its 256,000 x 2,304 embedding (Google's model card: 2.6B)
    cfg = shape_config("gemma2-2b-rm")
    with torch.device("meta"):
        from transformers import AutoModelForSequenceClassification

        model = AutoModelForSequenceClassification.from_config(cfg)
    n = sum(p.numel() for p in model.parameters())
    assert 2.60e9 < n < 2.62e9


@pytest.mark.parametrize("shape", ["gemma2-2b-rm", "llama3.1-8b-rm"])
def test_shared_attention_equals_the_expanded_cache(shape):
    scorer = small_scorer(shape)
    frame = scorer.frame(PROMPT)
    cache = PrefixKernel(scorer.loaded, frame.prefix_ids, shared_attention=False)
    shared = PrefixKernel(scorer.loaded, frame.prefix_ids, shared_attention=True)
    impl = scorer.loaded.model.config._attn_implementation
    gen = torch.Generator().manual_seed(1)
    for batch, length in ((1, 1), (9, 3), (300, 4)):
        ids = torch.randint(300, scorer.vocab_size, (batch, length), generator=gen)
        last = torch.randint(0, length, (batch,), generator=gen)
        with torch.no_grad():
            want, got = cache.classifier(ids, last), shared.classifier(ids, last)
        torch.testing.assert_close(got, want, atol=1e-5 * float(want.abs().max()), rtol=0)
    assert shared.shared_attention  # every layer ran it
    assert scorer.loaded.model.config._attn_implementation == impl  # the model's setting is restored


def test_shared_attention_gradient_equals_the_expanded_cache():
    scorer = small_scorer("gemma2-2b-rm")
    frame = scorer.frame(PROMPT)
    emb = scorer.loaded.model.get_input_embeddings()
    ids = torch.tensor([[500, 900, 1300]])
    grads = []
    for flag in (False, True):
        kernel = PrefixKernel(scorer.loaded, frame.prefix_ids, shared_attention=flag)
        embeds = emb(ids).detach().requires_grad_()
        kernel.classifier(None, torch.tensor([2]), embeds).sum().backward()
        grads.append(embeds.grad)
    torch.testing.assert_close(grads[1], grads[0], atol=1e-6, rtol=1e-4)


def test_a_model_whose_attention_does_not_dispatch_falls_back():
    """A model that never calls the registered attention must not be scored with candidates blind to the
    prefix: the kernel notices the missing calls and uses the expanded cache."""
    scorer = small_scorer("llama3.1-8b-rm")
    frame = scorer.frame(PROMPT)
    want = PrefixKernel(scorer.loaded, frame.prefix_ids, shared_attention=False)
    kernel = PrefixKernel(scorer.loaded, frame.prefix_ids, shared_attention=True)
    for layer in scorer.loaded.model.model.layers:  # attention that ignores config._attn_implementation
        attn = layer.self_attn
        attn.config = type(attn.config).from_dict(attn.config.to_dict())
        attn.config._attn_implementation = "sdpa"
    ids, last = torch.tensor([[400, 401], [500, 501]]), torch.tensor([1, 1])
    with torch.no_grad():
        got = kernel.classifier(ids, last)
    assert not kernel.shared_attention
    torch.testing.assert_close(got, want.classifier(ids, last), atol=1e-6, rtol=0)


def test_scorer_tables_agree_across_attention_paths():
    """Whole-vocabulary token scores (the scorer's batching and read-back) equal on both paths."""
    scorer = small_scorer("gemma2-2b-rm", vocab_size=3000)
    ids = np.arange(scorer.vocab_size)
    want = scorer.token_scores(PROMPT, ids)
    shared = Scorer(scorer.loaded, shared_attention=True)
    got = shared.token_scores(PROMPT, ids)
    assert shared.kernel(PROMPT)[1].shared_attention and not scorer.kernel(PROMPT)[1].shared_attention
    assert shared.provenance(PROMPT, "token")["prefix_attention"] == "shared"  # the table says which path ran
    assert scorer.provenance(PROMPT, "token")["prefix_attention"] == "per-candidate"
    np.testing.assert_allclose(got, want, atol=1e-5 * np.abs(want).max(), rtol=0)


def test_gcg_runs_on_a_bf16_gemma2_with_a_rounded_embedding_scale():
    # hidden 72: sqrt(72) = 8.485..., which bf16 rounds to 8.5 inside the embedding module
    scorer = small_scorer("gemma2-2b-rm", dtype=torch.bfloat16, hidden_size=72, head_dim=18, vocab_size=3000)
    module = scorer.loaded.model.get_input_embeddings()
    assert float(module.embed_scale.to(torch.bfloat16)) == 8.5
    result = gcg.descend(scorer, PROMPT, [700, 800], SearchConfig(allowed="all", num_steps=2, search_width=16, topk=8))
    assert result.best_score >= result.start_score
    assert result.best_score == pytest.approx(float(scorer.sequence_scores(PROMPT, [result.best_ids])[0]), abs=1e-6)


def test_gpu_default_batch_keeps_to_its_position_budget():
    """On a GPU the default batch is 4,096 single tokens and fewer long candidates (GPU_POSITIONS per
    call). The device is only read, so a model that reports a GPU stands in for one."""
    from rmlib.engine import plan

    class OnGPU(LoadedModel):
        @property
        def device(self):
            return torch.device("cuda")

    base = small_scorer("gemma2-2b-rm").loaded
    scorer = Scorer(OnGPU(**{f: getattr(base, f) for f in base.__dataclass_fields__}))
    assert scorer.batch_size == 4096
    assert scorer.chunk_size(np.full(5000, 3)) == plan.GPU_POSITIONS // 3 == 4096
    assert scorer.chunk_size(np.full(5000, 40)) == plan.GPU_POSITIONS // 40
    # sorted ascending: the longest candidate in the call decides (245 of them: 245 x 50 <= 12,288)
    counted = np.arange(1, 5011) * np.array([3] * 10 + [50] * 5000)
    assert scorer.chunk_size(np.array([3] * 10 + [50] * 5000)) == int(np.count_nonzero(counted <= plan.GPU_POSITIONS))
    assert Scorer(base, batch_size=100).chunk_size(np.full(5000, 3)) == 100  # a batch the caller set is kept
