"""``tiny:<arch>`` and ``random:<shape>`` models: built from a config with weights drawn from seed 0 (the
caller's random state left as it was), for tests and speed measurements; their scores mean nothing.
"""

from __future__ import annotations

import torch

from ..options import RANDOM_SHAPES
from .embedded import default_tokenizer, embedded_model_folder
from .tokenizer_files import load_tokenizer


def tiny_model(arch: str, dtype: torch.dtype):
    """A ``tiny:<arch>`` model (two layers, width 32) on the default model's tokenizer, seeded random weights."""
    from transformers import (AutoModelForCausalLM, AutoModelForSequenceClassification,
                              Gemma2Config, LlamaConfig)

    tok = default_tokenizer()
    common = dict(vocab_size=len(tok), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                  num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=512,
                  pad_token_id=tok.pad_token_id, bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id)
    if arch == "gemma2-classifier":  # its chat template: the registry's entry
        cfg = Gemma2Config(head_dim=8, sliding_window=16, num_labels=1, **common)
        return _seeded(AutoModelForSequenceClassification, cfg, dtype), tok, "classifier"
    cfg = LlamaConfig(num_labels=1, **common)
    if arch == "llama-classifier":
        return _seeded(AutoModelForSequenceClassification, cfg, dtype), tok, "classifier"
    return _seeded(AutoModelForCausalLM, cfg, dtype), tok, "logprob"


def _seeded(auto_class, config, dtype: torch.dtype):
    """``auto_class.from_config`` with weights drawn from seed 0, the caller's random state left as it was."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        return auto_class.from_config(config, dtype=dtype)


def random_model(shape: str, dtype: torch.dtype, device: str = "cpu"):
    """A classifier of the size of ``RANDOM_SHAPES[shape]``'s config, seeded random weights (a paper RM's
    shape: :mod:`rmlib.engine.shapes`, built on ``device``)."""
    from transformers import AutoConfig, AutoModelForSequenceClassification

    if RANDOM_SHAPES[shape] is None:
        from .shapes import build_random

        return build_random(shape, dtype, device)
    folder = embedded_model_folder(RANDOM_SHAPES[shape])
    cfg = AutoConfig.from_pretrained(str(folder))
    cfg.num_labels = 1
    cfg.architectures = [cfg.architectures[0].replace("ForCausalLM", "ForSequenceClassification")]
    tok = load_tokenizer(folder)
    return _seeded(AutoModelForSequenceClassification, cfg, dtype), tok, "classifier"
