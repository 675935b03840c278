"""The prefix-cached kernel: the prompt prefix runs once, candidates reuse its KV cache.

Candidates are (token + suffix) only, batched; single tokens need no padding,
texts are right-padded (exact: a causal model never attends to later positions).
Tokenizer-free and differentiable through ``embeds`` (GCG uses that).

How a classifier's candidates meet the prefix is one small protocol,
:class:`CandidateForward`, with one implementation per way; a kernel asks its
list in order and the first that takes the call answers:

* :class:`LitePrefix`: rmlib's plain Llama forward (:mod:`rmlib.engine.lite_llama`),
  the prefix attended at batch 1 (where the model's plan, :mod:`rmlib.engine.plan`, runs it);
* :class:`SharedAttention`: a transformers model whose attention layers attend the
  prefix at batch 1 (:mod:`rmlib.engine.shared_attention`; the GPU default);
* :class:`PackedSequence`: small batches packed into one sequence after the
  prefix, a block-diagonal mask keeping them apart (a CPU's short candidates);
* :class:`ExpandedCache`: transformers' cache with the prefix as a broadcast view
  per candidate;
* :class:`WholeSequence`: prefix and candidate as one sequence, for custom heads
  that need whole sequences (no cache).
"""

from __future__ import annotations

from typing import Protocol, Sequence

import torch

from ..errors import ModelLoadError
from .models import LoadedModel

#: Bumped whenever a change to this module changes the numbers it computes, so that
#: score tables cached by an older kernel are not reused (it is part of the store's key).
SCORING_REVISION = 5  # 5: texts at fixed places too (Scorer.score_texts); 4: mode paper at fixed places
#: Largest batch x candidate length scored as one packed sequence (:class:`PackedSequence`).
PACK_MAX_TOKENS = 1024


def is_oom(err: BaseException) -> bool:
    """Whether ``err`` is an out-of-memory error (scorers then halve their batch)."""
    return isinstance(err, torch.OutOfMemoryError) or "out of memory" in str(err).lower()


def extract_score(outputs, score_from: str) -> torch.Tensor:
    """The registry's rule for where the scalar reward lives."""
    field = "score" if score_from == "score" else "logits"
    s = getattr(outputs, field, None)
    if s is None:  # a custom head (remote code) whose output holds the reward elsewhere
        fields = [k for k in (outputs.keys() if hasattr(outputs, "keys") else vars(outputs))]
        raise ModelLoadError(
            f"the model's output has no {field!r} (it has {fields}): rmlib reads a reward model's scalar from "
            "logits[:, 0], or from 'score' for the custom-head RMs of its registry (score_from in "
            "rmlib/resources/reward_models.yaml); this model's own code puts it elsewhere")
    if score_from == "score":
        return (s[:, 0] if s.dim() == 2 else s).float()
    return s[:, 0].float()


class PrefixKernel:
    """A prompt prefix run once; candidates (response + suffix) scored against its KV cache.

    Tokenizer-free, so the GCG search and the benchmarks reuse it. For
    classifiers with a standard head (``score_from='logits0'``) it runs the base
    transformer on the candidates with the cached prefix and applies the head
    to the hidden state of each candidate's last real token. Custom heads
    (``score_from='score'``, remote code) see whole sequences instead.
    """

    def __init__(self, loaded: LoadedModel, prefix_ids: Sequence[int], shared_attention: bool | None = None):
        """``shared_attention``: classifier candidates attend the prefix at batch 1 (None: on a GPU,
        where copying it per candidate costs more than the model's matrix products)."""
        self.loaded = loaded
        self.model = loaded.model
        self.prefix_ids = torch.tensor([list(prefix_ids)], dtype=torch.long, device=loaded.device)
        self.base = getattr(self.model, getattr(self.model, "base_model_prefix", "model"), None)
        self.head = getattr(self.model, "score", None)
        self.cached = (loaded.kind == "logprob") or (
            loaded.score_from == "logits0" and self.base is not None and self.head is not None
        )
        self.layers: list[tuple[torch.Tensor, torch.Tensor]] = []
        self.last_logprobs = None
        if self.cached:
            # A config-less cache keeps every layer's full prefix (a sliding-window layer would
            # keep only its window and lose the prefix length that positions are counted from);
            # rmlib's lite forward keeps it in its own (no transformers import).
            if loaded.plan.lite:
                from .lite_llama import PrefixCache as DynamicCache
            else:
                from transformers import DynamicCache
            full = DynamicCache()
            with torch.no_grad():
                if loaded.kind == "logprob":
                    out = self.model(input_ids=self.prefix_ids, past_key_values=full, use_cache=True)
                    self.last_logprobs = torch.log_softmax(out.logits[0, -1].double(), dim=-1)  # float64: one vector
                else:
                    out = self.base(input_ids=self.prefix_ids, past_key_values=full, use_cache=True)
            self.layers = [(layer.keys, layer.values) for layer in full.layers]
        self.forwards = candidate_forwards(loaded, self.cached, shared_attention)

    @property
    def shared_attention(self) -> bool:
        """Whether classifier candidates attend the prefix through :class:`SharedAttention` (still
        enabled: a model whose layers do not all run it turns it off at the first call)."""
        return any(isinstance(f, SharedAttention) and f.enabled for f in self.forwards)

    @property
    def prefix_len(self) -> int:
        return self.prefix_ids.shape[1]

    def prefix_cache(self, batch: int):
        """The prefix's KV cache for ``batch`` candidates, as broadcast views (no copy).

        The layers are the ones ``DynamicCache(config=...)`` makes for this model
        (full or sliding-window); each is filled the way its ``update`` would fill
        it, but with an expanded view of the prefix instead of a per-candidate copy.
        """
        from transformers import DynamicCache
        from transformers.cache_utils import DynamicLayer, DynamicSlidingWindowLayer

        cache = DynamicCache(config=self.model.config)
        if len(cache.layers) != len(self.layers) or any(
                type(layer) not in (DynamicLayer, DynamicSlidingWindowLayer) for layer in cache.layers):
            data = [(k.expand(batch, -1, -1, -1), v.expand(batch, -1, -1, -1)) for k, v in self.layers]
            return DynamicCache(data, config=self.model.config)  # other layer kinds: their own update
        for layer, (k, v) in zip(cache.layers, self.layers):
            layer.lazy_initialization(k, v)
            if isinstance(layer, DynamicSlidingWindowLayer):
                layer.cumulative_length = k.shape[-2]
                k, v = k[..., -layer.sliding_window + 1:, :], v[..., -layer.sliding_window + 1:, :]
            layer.keys, layer.values = k.expand(batch, -1, -1, -1), v.expand(batch, -1, -1, -1)
        return cache

    def classifier(self, ids: torch.Tensor | None, last: torch.Tensor, embeds: torch.Tensor | None = None):
        """Rewards of candidates (B, L) whose last real token is at ``last`` (B,).

        Pass ``embeds`` (B, L, H) instead of ``ids`` for a differentiable call.
        """
        for forward in self.forwards:
            out = forward.rewards(self, ids, last, embeds)
            if out is not None:
                return out
        raise RuntimeError(f"no candidate forward took a call of shape {tuple((ids if ids is not None else embeds).shape)}")

    def fits_window(self, length: int) -> bool:
        """Whether prefix + a candidate of ``length`` stays inside every sliding window of the model."""
        cfg = self.model.config.get_text_config(decoder=True)
        window = getattr(cfg, "sliding_window", None)
        return not window or self.prefix_len + length <= window

    def head_rewards(self, hidden: torch.Tensor, last: torch.Tensor) -> torch.Tensor:
        """The score head on each candidate's hidden state at ``last``: (B, L, H) -> (B,) float32."""
        rows = torch.arange(hidden.shape[0], device=last.device)
        return self.head(hidden[rows, last])[:, 0].float()

    def logprob(self, ids: torch.Tensor, lengths: torch.Tensor, embeds: torch.Tensor | None = None,
                onehot: torch.Tensor | None = None):
        """Summed log p of each candidate's first ``lengths`` tokens given the prefix.

        For a gradient in the token identities (GCG) pass ``onehot`` (B, L, V) and
        ``embeds = onehot @ E``: the targets are then read from the one-hot rows as
        well, so the sum is differentiable in every token, the first one included.
        """
        batch, length = ids.shape
        if onehot is None:
            first = self.last_logprobs[ids[:, 0]]
        else:
            first = onehot[:, 0].to(self.last_logprobs.dtype) @ self.last_logprobs
        if length == 1:
            return first
        inp = ids[:, :-1] if embeds is None else None
        emb = embeds[:, :-1] if embeds is not None else None
        out = self.model(input_ids=inp, inputs_embeds=emb, past_key_values=self.prefix_cache(batch), use_cache=True)
        logp = torch.log_softmax(out.logits.float(), dim=-1)
        if onehot is None:
            lp = logp.gather(-1, ids[:, 1:, None])[..., 0]
        else:
            lp = (logp * onehot[:, 1:].float()).sum(dim=-1)
        keep = torch.arange(1, length, device=ids.device)[None, :] < lengths[:, None]
        return first + (lp * keep).sum(dim=1)




class CandidateForward(Protocol):
    """One way a :class:`PrefixKernel` turns classifier candidates after its cached prefix into rewards:
    ``rewards`` returns (B,) float32, or None when this way cannot take the call (the kernel asks the
    next one)."""

    def rewards(self, kernel: PrefixKernel, ids: torch.Tensor | None, last: torch.Tensor,
                embeds: torch.Tensor | None) -> torch.Tensor | None: ...


class LitePrefix:
    """rmlib's plain Llama forward: the prefix attended at batch 1 (no copy, no packing)."""

    def rewards(self, kernel, ids, last, embeds):
        from .lite_llama import SharedPrefix

        out = kernel.base(input_ids=ids, inputs_embeds=embeds, past_key_values=SharedPrefix(kernel.layers))
        return kernel.head_rewards(out.last_hidden_state, last)


class SharedAttention:
    """A transformers model whose attention layers attend the prefix at batch 1
    (:mod:`rmlib.engine.shared_attention`), positions counted on from the prefix. Declines a candidate
    that would outgrow a sliding window, and turns itself off when not every layer ran it (a model whose
    attention does not dispatch on ``config._attn_implementation``): no call is answered wrongly."""

    def __init__(self):
        self.enabled = True

    def rewards(self, kernel, ids, last, embeds):
        from .shared_attention import shared_prefix_attention

        batch, length = (ids if ids is not None else embeds).shape[:2]
        if not self.enabled or not kernel.fits_window(length):
            return None
        positions = (kernel.prefix_len + torch.arange(length, device=last.device)).expand(batch, -1)
        with shared_prefix_attention(kernel.model, kernel.layers) as active:
            out = kernel.base(input_ids=ids, inputs_embeds=embeds, position_ids=positions, use_cache=False)
        if active.calls != len(kernel.layers):
            self.enabled = False
            return None
        return kernel.head_rewards(out.last_hidden_state, last)


class PackedSequence:
    """All candidates as one sequence after the prefix, each seeing only the prefix and itself.

    Batched candidates normally need the prefix's keys and values copied once per candidate; packed,
    the prefix is cached once (batch 1) and a block-diagonal causal mask keeps candidates apart, with
    each candidate's positions starting after the prefix. On a CPU this removes the copies that
    dominate short candidates. Only where it is exact and cheap: no sliding window that prefix +
    candidate could outgrow (a packed call applies its own mask), and at most ``PACK_MAX_TOKENS``
    tokens (the block-diagonal attention grows with their square).
    """

    @staticmethod
    def takes(kernel: PrefixKernel, batch: int, length: int) -> bool:
        """Whether a call of ``batch`` candidates of ``length`` tokens is packed."""
        return batch * length <= PACK_MAX_TOKENS and kernel.fits_window(length)

    def rewards(self, kernel, ids, last, embeds):
        from transformers import DynamicCache

        batch, length = (ids if ids is not None else embeds).shape[:2]
        if not self.takes(kernel, batch, length):
            return None
        device = last.device
        n, prefix = batch * length, kernel.prefix_len
        block = torch.arange(batch, device=device).repeat_interleave(length)
        offset = torch.arange(length, device=device).repeat(batch)
        sees = (block[:, None] == block[None, :]) & (offset[None, :] <= offset[:, None])
        allowed = torch.cat([torch.ones(n, prefix, dtype=torch.bool, device=device), sees], dim=1)
        dtype = kernel.model.dtype
        mask = torch.zeros(allowed.shape, dtype=dtype, device=device).masked_fill_(~allowed, torch.finfo(dtype).min)
        cache = DynamicCache(kernel.layers)  # plain full-length layers: the mask above is the whole story
        out = kernel.base(input_ids=None if ids is None else ids.reshape(1, n),
                          inputs_embeds=None if embeds is None else embeds.reshape(1, n, -1),
                          position_ids=(prefix + offset)[None, :], attention_mask=mask[None, None],
                          past_key_values=cache, use_cache=True)
        return kernel.head_rewards(out.last_hidden_state[0].reshape(batch, length, -1), last)


class ExpandedCache:
    """transformers' own cache, the prefix a broadcast view per candidate (:meth:`PrefixKernel.prefix_cache`)."""

    def rewards(self, kernel, ids, last, embeds):
        batch = (ids if ids is not None else embeds).shape[0]
        out = kernel.base(input_ids=ids, inputs_embeds=embeds, past_key_values=kernel.prefix_cache(batch),
                          use_cache=True)
        return kernel.head_rewards(out.last_hidden_state, last)


class WholeSequence:
    """Prefix and candidate as one sequence through the whole model (custom heads need them; no cache)."""

    def rewards(self, kernel, ids, last, embeds):
        batch = (ids if ids is not None else embeds).shape[0]
        pre = kernel.prefix_ids.expand(batch, -1)
        if embeds is not None:
            pre_emb = kernel.model.get_input_embeddings()(pre).to(embeds.dtype)
            kw = {"inputs_embeds": torch.cat([pre_emb, embeds], dim=1)}
        else:
            kw = {"input_ids": torch.cat([pre, ids], dim=1)}
        length = kernel.prefix_len + (ids if ids is not None else embeds).shape[1]
        mask = (torch.arange(length, device=last.device)[None, :] <= (last[:, None] + kernel.prefix_len)).long()
        return extract_score(kernel.model(attention_mask=mask, **kw), kernel.loaded.score_from)


def candidate_forwards(loaded: LoadedModel, cached: bool, shared_attention: bool | None = None) -> list:
    """The ways a kernel of ``loaded`` tries, in order (see the module docstring)."""
    if not cached:
        return [WholeSequence()]
    if loaded.plan.lite:
        return [LitePrefix()]
    shared = [SharedAttention()] if loaded.plan.shared_attention(shared_attention) and loaded.kind == "classifier" \
        else []
    return [*shared, PackedSequence(), ExpandedCache()]
