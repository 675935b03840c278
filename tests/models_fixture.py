"""Tiny models built from configs, shared by the engine tests (loaded once per session)."""

import copy
import functools

import torch

from rmlib.engine.scorers import ImplicitRewardScorer, Scorer, load_scorer


@functools.lru_cache(maxsize=None)
def tiny(arch: str, batch_size: int = 64):
    return load_scorer(f"tiny:{arch}", batch_size=batch_size)


def scaled_reference(policy: Scorer, scale: float = 0.5) -> Scorer:
    """A second LM on the policy's tokenizer: a copy with every weight multiplied by ``scale``."""
    loaded = copy.copy(policy.loaded)
    loaded.model = copy.deepcopy(policy.loaded.model)
    with torch.no_grad():
        for p in loaded.model.parameters():
            p.mul_(scale)
    return Scorer(loaded)


def tiny_implicit(scale: float = 0.5) -> ImplicitRewardScorer:
    policy = tiny("llama-lm")
    return ImplicitRewardScorer(policy, scaled_reference(policy, scale))


def poisoned_classifier(prompt: str, token_id: int, value: float) -> Scorer:
    """A fresh tiny-classifier scorer whose score for ``token_id`` comes out as ``value`` (NaN, inf)."""
    scorer = Scorer(tiny("llama-classifier").loaded)
    kernel = scorer.kernel(prompt)[1]
    real = kernel.classifier

    def poisoned(ids, last, embeds=None):
        out = real(ids, last, embeds)
        out[ids[:, 0] == token_id] = value
        return out

    kernel.classifier = poisoned
    return scorer
