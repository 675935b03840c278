"""Real-sized reward models with random weights, for speed measurements (``random:<shape>``).

Speed does not depend on weight values, so a model of a paper RM's exact shape
(layers, widths, heads, vocabulary, attention kind) with seeded random weights
times what the real one would. Two sources of shape:

* ``smollm2-135m-classifier``: the embedded default model's own config and
  tokenizer (a CPU-sized benchmark model);
* the paper RMs' bases (:data:`PAPER_SHAPES`, from their public ``config.json``
  files): Gemma-2-2B, Llama-3.1-8B and Gemma-2-27B. No hub is needed, so their
  tokenizer is :func:`synthetic_tokenizer`: byte-level, exactly the real
  vocabulary size, the real ids of the chat template's special tokens, and a
  chat template of the family's form. Its prompts tokenize into bytes (a longer
  cached prefix than the real tokenizer's, which costs little: the prefix runs
  once), and its filler tokens decode to ``" w<id>"``.

Scores of these models mean nothing; only their timings do.
"""

from __future__ import annotations

import dataclasses

import torch

from .. import registry
from ..options import RANDOM_SHAPES
from .frames import TEMPLATES

_GEMMA_SPECIALS = {"<pad>": 0, "<eos>": 1, "<bos>": 2, "<unk>": 3, "<start_of_turn>": 106, "<end_of_turn>": 107}
_LLAMA3_SPECIALS = {"<|begin_of_text|>": 128000, "<|end_of_text|>": 128001, "<|finetune_right_pad_id|>": 128004,
                    "<|start_header_id|>": 128006, "<|end_header_id|>": 128007, "<|eot_id|>": 128009}
_GEMMA2 = dict(model_type="gemma2", vocab_size=256000, max_position_embeddings=8192, rope_theta=10000.0,
               sliding_window=4096, attn_logit_softcapping=50.0, final_logit_softcapping=30.0,
               hidden_activation="gelu_pytorch_tanh", rms_norm_eps=1e-6, pad_token_id=0, eos_token_id=1,
               bos_token_id=2)


@dataclasses.dataclass(frozen=True)
class PaperShape:
    """A paper RM's base: its config (``config.json``'s fields) and its tokenizer's facts."""

    model_id: str  # the base whose config.json this is
    config: dict
    specials: dict  # special token -> its real id
    bos: str
    eos: str
    pad: str
    spec: str  # random:<shape>: its registry entry names its chat template

    @property
    def chat_template(self) -> str:
        """The chat template its tokenizer carries: the one its registry entry names."""
        return TEMPLATES[registry.lookup(self.spec)["template"]]

    @property
    def vocab_size(self) -> int:
        return self.config["vocab_size"]


PAPER_SHAPES = {
    "gemma2-2b-rm": PaperShape(
        "google/gemma-2-2b-it",
        dict(_GEMMA2, hidden_size=2304, intermediate_size=9216, num_hidden_layers=26, num_attention_heads=8,
             num_key_value_heads=4, head_dim=256, query_pre_attn_scalar=256),
        _GEMMA_SPECIALS, "<bos>", "<eos>", "<pad>", "random:gemma2-2b-rm"),
    "llama3.1-8b-rm": PaperShape(
        "meta-llama/Llama-3.1-8B-Instruct",
        dict(model_type="llama", vocab_size=128256, hidden_size=4096, intermediate_size=14336, num_hidden_layers=32,
             num_attention_heads=32, num_key_value_heads=8, head_dim=128, max_position_embeddings=131072,
             rope_theta=500000.0, rms_norm_eps=1e-5, hidden_act="silu", tie_word_embeddings=False,
             rope_scaling={"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                           "original_max_position_embeddings": 8192},
             bos_token_id=128000, eos_token_id=128009, pad_token_id=128004),
        _LLAMA3_SPECIALS, "<|begin_of_text|>", "<|eot_id|>", "<|finetune_right_pad_id|>", "random:llama3.1-8b-rm"),
    "gemma2-27b-rm": PaperShape(
        "google/gemma-2-27b-it",
        dict(_GEMMA2, hidden_size=4608, intermediate_size=36864, num_hidden_layers=46, num_attention_heads=32,
             num_key_value_heads=16, head_dim=128, query_pre_attn_scalar=144),
        _GEMMA_SPECIALS, "<bos>", "<eos>", "<pad>", "random:gemma2-27b-rm"),
}
assert set(PAPER_SHAPES) == {k for k, v in RANDOM_SHAPES.items() if v is None}


def synthetic_tokenizer(vocab_size: int, specials: dict, *, bos: str, eos: str, pad: str, chat_template: str):
    """A byte-level tokenizer of exactly ``vocab_size`` ids: the 256 byte symbols, ``specials`` at their
    ids, and filler tokens (``" w<id>"``) in every other id. No merges: text tokenizes into bytes, so a
    chat template's pieces re-assemble exactly (what :func:`rmlib.engine.frames.chat_frame` checks)."""
    from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    taken = set(specials.values())
    free = (i for i in range(vocab_size) if i not in taken)
    vocab = {symbol: next(free) for symbol in sorted(pre_tokenizers.ByteLevel.alphabet())}
    vocab.update({f"\u0120w{i}": i for i in free})  # "\u0120" is the byte-level symbol of a space
    vocab.update(specials)
    tok = Tokenizer(models.BPE(vocab=vocab, merges=[]))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.add_special_tokens([AddedToken(s, special=True, normalized=False) for s in specials])
    return PreTrainedTokenizerFast(tokenizer_object=tok, bos_token=bos, eos_token=eos, pad_token=pad,
                                   chat_template=chat_template)


def shape_config(shape: str, **overrides):
    """The transformers config of ``PAPER_SHAPES[shape]`` as a one-score classifier (``overrides``:
    smaller sizes for tests, e.g. ``num_hidden_layers=1``)."""
    from transformers import AutoConfig

    fields = dict(PAPER_SHAPES[shape].config, **overrides)
    cfg = AutoConfig.for_model(fields.pop("model_type"), **fields)
    cfg.num_labels = 1
    return cfg


def build_random(shape: str, dtype: torch.dtype, device: str = "cpu", **overrides):
    """``(model, tokenizer, "classifier")`` for ``random:<shape>`` of :data:`PAPER_SHAPES`: seed-0 weights
    drawn on ``device`` (a 27B model is built far sooner on a GPU than on a CPU); the
    caller's random state is left as it was."""
    from transformers import AutoModelForSequenceClassification

    s = PAPER_SHAPES[shape]
    cfg = shape_config(shape, **overrides)
    tok = synthetic_tokenizer(cfg.vocab_size, s.specials, bos=s.bos, eos=s.eos, pad=s.pad, chat_template=s.chat_template)
    where = torch.device(device)
    gpus = [where.index or 0] if where.type == "cuda" else []
    with torch.random.fork_rng(devices=gpus), where:
        torch.manual_seed(0)
        model = AutoModelForSequenceClassification.from_config(cfg, dtype=dtype)
    return model, tok, "classifier"
