"""The scoring kernel: score tokens and texts as the assistant's whole response.

Three scorer kinds share one interface, ``score_tokens(prompt, token_ids)`` and
``score_texts(prompt, texts)``:

* ``classifier``: a reward model's scalar for (prompt, response);
* ``logprob``: log p(response | chat prompt) from a causal LM;
* ``implicit``: log p_policy − log p_reference (the DPO-style implicit reward).

Exactness (``mode="token"``, the default). The model input is built from token
ids: the model's own chat template is rendered around a sentinel, split into
prefix ids and suffix ids, and each vocabulary id is put between them. A token
is never decoded and re-tokenized. The split is verified (sentinel rendered
once, no sentinel leaking into prefix or suffix, no duplicated BOS, the pieces
re-assemble the template's own tokenization) and fails loudly otherwise.

``mode="paper"`` is the published method (decode the token, apply the chat
template to the text, tokenize the string with the tokenizer's defaults, pad,
full forward). Where the two differ:

* templates that strip the message (``| trim`` in Llama-3 and Gemma templates)
  turn the token ``" hello"`` into ``"hello"`` in paper mode;
* tokenizers that add BOS by default add a second BOS in paper mode when the
  template already renders one;
* a decoded token can re-tokenize into other ids (byte-level pieces, tokens
  that decode to the same string, merges across the template boundary).

Speed. The prompt prefix is run once and its KV cache reused; candidates are
(token + suffix) only, batched; single tokens need no padding at all, texts
are sorted by length and right-padded (exact: a causal model never attends to
later positions). Batches halve on out-of-memory instead of crashing. For
``logprob`` the whole vocabulary comes from one forward pass.
"""

from __future__ import annotations

import dataclasses
import platform
from typing import Iterable, Sequence

import numpy as np
import pandas as pd
import torch

from . import __version__
from .models import LoadedModel, load_model

SENTINEL = "RMLIBSENTINEL"
#: Bumped whenever a change to this module changes the numbers it computes, so that
#: score tables cached by an older kernel are not reused (it is part of the store's key).
SCORING_REVISION = 2
#: Largest batch x candidate length scored as one packed sequence (``PrefixKernel._packed_classifier``).
PACK_MAX_TOKENS = 1024

# Named templates for tokenizers that have none (pass chat_template=NAME).
TEMPLATES = {
    "chatml": (
        "{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\n' + message['content'] "
        "+ '<|im_end|>\n' }}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
    ),
    "llama3": (
        "{{ bos_token }}{% for message in messages %}{{ '<|start_header_id|>' + message['role'] + "
        "'<|end_header_id|>\n\n' + message['content'] | trim + '<|eot_id|>' }}{% endfor %}"
        "{% if add_generation_prompt %}{{ '<|start_header_id|>assistant<|end_header_id|>\n\n' }}{% endif %}"
    ),
    # The paper's format for pretrained (base) models, "User: {prompt}\nAssistant:". The
    # response follows the colon directly: its tokens carry their own leading space
    # (" Love"), as the model's next token after "Assistant:" does.
    "plain": (
        "{% for message in messages %}{% if message['role'] == 'user' %}{{ 'User: ' + message['content'] + '\n' }}"
        "{% else %}{{ 'Assistant:' + message['content'] }}{% endif %}{% endfor %}"
        "{% if add_generation_prompt %}{{ 'Assistant:' }}{% endif %}"
    ),
}


class TemplateSplitError(ValueError):
    """The chat template cannot be split into prefix and suffix ids exactly."""


class NonFiniteScoreError(RuntimeError):
    """A score came out NaN or infinite; ``token_ids`` names the offenders."""

    def __init__(self, token_ids: Sequence[int], what: str = "token ids"):
        self.token_ids = list(token_ids)
        super().__init__(
            f"non-finite scores (NaN or inf) for {what} {self.token_ids[:20]}"
            f"{' …' if len(self.token_ids) > 20 else ''}: check the model's dtype (try dtype='float32') "
            "and weights; the scores computed before these are kept."
        )


@dataclasses.dataclass(frozen=True)
class ChatFrame:
    """The prompt's chat template around the response, as token ids."""

    prompt: str
    chat_template: str
    prefix_text: str
    suffix_text: str
    prefix_ids: tuple[int, ...]
    suffix_ids: tuple[int, ...]


def _resolve_template(tokenizer, chat_template: str | None, what: str) -> str:
    if chat_template is not None:
        return TEMPLATES.get(chat_template, chat_template)
    if getattr(tokenizer, "chat_template", None):
        return tokenizer.chat_template
    raise ValueError(
        f"the tokenizer of {what} has no chat template: pass chat_template= a Jinja template string or "
        f"one of {sorted(TEMPLATES)} (CLI: --chat-template); rmlib never guesses one"
    )


def _adds_bos(tokenizer) -> bool:
    bos = tokenizer.bos_token_id
    if bos is None:
        return False
    ids = tokenizer("a").input_ids
    return bool(ids) and ids[0] == bos and tokenizer("a", add_special_tokens=False).input_ids[:1] != [bos]


def chat_frame(tokenizer, prompt: str, chat_template: str | None = None, what: str = "this model") -> ChatFrame:
    """Render the template around a sentinel and split it into prefix/suffix ids (verified)."""
    if not isinstance(prompt, str) or not prompt.strip():
        raise ValueError("prompt must be a non-empty string")
    if SENTINEL in prompt:
        raise ValueError(f"the prompt may not contain the reserved string {SENTINEL!r}")
    template = _resolve_template(tokenizer, chat_template, what)
    messages = [{"role": "user", "content": prompt}, {"role": "assistant", "content": SENTINEL}]
    text = tokenizer.apply_chat_template(messages, tokenize=False, chat_template=template)
    if text.count(SENTINEL) != 1:
        raise TemplateSplitError(
            f"the chat template renders the assistant message {text.count(SENTINEL)} times, not once; "
            "pass a chat_template that renders each message once"
        )
    prefix_text, suffix_text = text.split(SENTINEL)

    def ids(s):
        return list(tokenizer(s, add_special_tokens=False).input_ids) if s else []

    prefix, sentinel, suffix = ids(prefix_text), ids(SENTINEL), ids(suffix_text)
    # The pieces must re-assemble the template's own tokenization, for the sentinel and for a
    # real word (a tokenizer can merge a word with the text after it: 'hello' + 'ing').
    probe = "hello"
    probe_text = tokenizer.apply_chat_template(
        [messages[0], {"role": "assistant", "content": probe}], tokenize=False, chat_template=template)
    if ids(text) != prefix + sentinel + suffix or ids(probe_text) != ids(prefix_text) + ids(probe) + suffix:
        raise TemplateSplitError(
            "the chat template does not split cleanly at the response: tokenizing the whole rendered "
            "conversation gives different ids than prefix + response + suffix (the tokenizer merges across "
            f"the boundary). prefix ends {prefix_text[-20:]!r}, suffix starts {suffix_text[:20]!r}. Pass a "
            "chat_template whose response is delimited by special tokens or newlines"
        )
    bos = tokenizer.bos_token_id
    if _adds_bos(tokenizer) and prefix[:1] != [bos]:
        prefix = [bos] + prefix  # the model was trained with BOS first; the template lacks it
    if bos is not None and prefix[:2] == [bos, bos]:
        raise TemplateSplitError("the template renders BOS twice; pass a chat_template without the extra BOS")
    for name, part in (("prefix", prefix), ("suffix", suffix)):
        if SENTINEL in tokenizer.decode(part):
            raise TemplateSplitError(f"the sentinel leaked into the {name}; the template is not splittable")
    return ChatFrame(prompt, template, prefix_text, suffix_text, tuple(prefix), tuple(suffix))


def _is_oom(err: BaseException) -> bool:
    return isinstance(err, torch.OutOfMemoryError) or "out of memory" in str(err).lower()


class PrefixKernel:
    """A prompt prefix run once; candidates (response + suffix) scored against its KV cache.

    Tokenizer-free, so the GCG search and the benchmarks reuse it. For
    classifiers with a standard head (``score_from='logits0'``) it runs the base
    transformer on the candidates with the cached prefix and applies the head
    to the hidden state of each candidate's last real token. Custom heads
    (``score_from='score'``, remote code) see whole sequences instead.
    """

    def __init__(self, loaded: LoadedModel, prefix_ids: Sequence[int]):
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
            from transformers import DynamicCache

            # A config-less cache keeps every layer's full prefix (a sliding-window layer would
            # keep only its window and lose the prefix length that positions are counted from).
            full = DynamicCache()
            with torch.no_grad():
                if loaded.kind == "logprob":
                    out = self.model(input_ids=self.prefix_ids, past_key_values=full, use_cache=True)
                    self.last_logprobs = torch.log_softmax(out.logits[0, -1].double(), dim=-1)  # float64: one vector
                else:
                    out = self.base(input_ids=self.prefix_ids, past_key_values=full, use_cache=True)
            self.layers = [(layer.keys, layer.values) for layer in full.layers]

    @property
    def prefix_len(self) -> int:
        return self.prefix_ids.shape[1]

    def _cache(self, batch: int):
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
        batch, length = (ids if ids is not None else embeds).shape[:2]
        rows = torch.arange(batch, device=last.device)
        if self.cached and self._packable(batch, length):
            return self._packed_classifier(ids, last, embeds)
        if self.cached:
            out = self.base(input_ids=ids, inputs_embeds=embeds, past_key_values=self._cache(batch), use_cache=True)
            return self.head(out.last_hidden_state[rows, last])[:, 0].float()
        # Whole sequences: the custom head needs them.
        pre = self.prefix_ids.expand(batch, -1)
        if embeds is not None:
            pre_emb = self.model.get_input_embeddings()(pre).to(embeds.dtype)
            kw = {"inputs_embeds": torch.cat([pre_emb, embeds], dim=1)}
        else:
            kw = {"input_ids": torch.cat([pre, ids], dim=1)}
        length = self.prefix_len + (ids if ids is not None else embeds).shape[1]
        mask = (torch.arange(length, device=last.device)[None, :] <= (last[:, None] + self.prefix_len)).long()
        out = self.model(attention_mask=mask, **kw)
        return _extract(out, self.loaded.score_from)

    def _packable(self, batch: int, length: int) -> bool:
        """Pack small batches into one sequence (see ``_packed_classifier``).

        Only where it is exact and cheap: no sliding window that prefix + candidate
        could outgrow (a packed call applies its own mask), and few enough tokens that
        the block-diagonal attention costs little beside the saved copies.
        """
        if batch * length > PACK_MAX_TOKENS:
            return False
        cfg = self.model.config.get_text_config(decoder=True)
        window = getattr(cfg, "sliding_window", None)
        return not window or self.prefix_len + length <= window

    def _packed_classifier(self, ids, last, embeds=None):
        """All candidates as one sequence after the prefix, each seeing only the prefix and itself.

        Batched candidates normally need the prefix's keys and values copied once per
        candidate; packed, the prefix is cached once (batch 1) and a block-diagonal causal
        mask keeps candidates apart, with each candidate's positions starting after the
        prefix. On a CPU this removes the copies that dominate short candidates.
        """
        from transformers import DynamicCache

        batch, length = (ids if ids is not None else embeds).shape[:2]
        device = last.device
        n, prefix = batch * length, self.prefix_len
        block = torch.arange(batch, device=device).repeat_interleave(length)
        offset = torch.arange(length, device=device).repeat(batch)
        sees = (block[:, None] == block[None, :]) & (offset[None, :] <= offset[:, None])
        allowed = torch.cat([torch.ones(n, prefix, dtype=torch.bool, device=device), sees], dim=1)
        dtype = self.model.dtype
        mask = torch.zeros(allowed.shape, dtype=dtype, device=device).masked_fill_(~allowed, torch.finfo(dtype).min)
        cache = DynamicCache(self.layers)  # plain full-length layers: the mask above is the whole story
        out = self.base(input_ids=None if ids is None else ids.reshape(1, n),
                        inputs_embeds=None if embeds is None else embeds.reshape(1, n, -1),
                        position_ids=(prefix + offset)[None, :], attention_mask=mask[None, None],
                        past_key_values=cache, use_cache=True)
        hidden = out.last_hidden_state[0].reshape(batch, length, -1)
        return self.head(hidden[torch.arange(batch, device=device), last])[:, 0].float()

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
        out = self.model(input_ids=inp, inputs_embeds=emb, past_key_values=self._cache(batch), use_cache=True)
        logp = torch.log_softmax(out.logits.float(), dim=-1)
        if onehot is None:
            lp = logp.gather(-1, ids[:, 1:, None])[..., 0]
        else:
            lp = (logp * onehot[:, 1:].float()).sum(dim=-1)
        keep = torch.arange(1, length, device=ids.device)[None, :] < lengths[:, None]
        return first + (lp * keep).sum(dim=1)


def _extract(outputs, score_from: str) -> torch.Tensor:
    """The registry's rule for where the scalar reward lives."""
    if score_from == "score":
        s = outputs.score
        return (s[:, 0] if s.dim() == 2 else s).float()
    return outputs.logits[:, 0].float()


class Scorer:
    """Scores tokens and texts as the assistant's whole response to a prompt."""

    def __init__(self, loaded: LoadedModel, chat_template: str | None = None, batch_size: int | None = None):
        self.loaded = loaded
        self.tokenizer = loaded.tokenizer
        self.chat_template = chat_template if chat_template is not None else loaded.chat_template
        self.kind = loaded.kind
        self.batch_size = batch_size or (1024 if loaded.device.type == "cuda" else 64)
        self._kernels: dict[str, tuple[ChatFrame, PrefixKernel]] = {}
        self._frames: dict[str, ChatFrame] = {}
        _resolve_template(self.tokenizer, self.chat_template, loaded.model_id)  # fail early, before heavy work

    @property
    def vocab_size(self) -> int:
        return len(self.tokenizer)

    def frame(self, prompt: str) -> ChatFrame:
        """The prompt's verified prefix/suffix ids (cheap: no forward pass)."""
        if prompt not in self._frames:
            self._frames[prompt] = chat_frame(self.tokenizer, prompt, self.chat_template, self.loaded.model_id)
        return self._frames[prompt]

    def _kernel(self, prompt: str):
        if prompt not in self._kernels:  # one prompt's KV cache is kept at a time
            frame = self.frame(prompt)
            self._kernels = {prompt: (frame, PrefixKernel(self.loaded, frame.prefix_ids))}
        return self._kernels[prompt]

    def provenance(self, prompt: str, mode: str) -> dict:
        frame = self.frame(prompt)
        import transformers

        return {
            "model_id": self.loaded.model_id, "revision": self.loaded.revision, "dtype": self.loaded.dtype,
            "scorer": self.kind, "score_from": self.loaded.score_from if self.kind == "classifier" else None,
            "mode": mode, "prompt": prompt, "chat_template": frame.chat_template,
            "prefix_text": frame.prefix_text, "suffix_text": frame.suffix_text,
            "prefix_ids": list(frame.prefix_ids), "suffix_ids": list(frame.suffix_ids),
            "rmlib_version": __version__, "scoring_revision": SCORING_REVISION,
            "transformers_version": transformers.__version__,
            "torch_version": torch.__version__, "python_version": platform.python_version(),
        }

    # ---- public API -------------------------------------------------------------------
    def token_ids(self, token_ids: Iterable[int] | None = None) -> np.ndarray:
        """Validate token ids (all of the vocabulary when None)."""
        if token_ids is None:
            return np.arange(self.vocab_size, dtype=np.int64)
        ids = np.asarray(list(token_ids), dtype=np.int64)
        bad = ids[(ids < 0) | (ids >= self.vocab_size)]
        if bad.size:
            raise ValueError(f"token ids out of range 0..{self.vocab_size - 1}: {bad[:10].tolist()}")
        return ids

    def score_tokens(self, prompt: str, token_ids: Iterable[int] | None = None, mode: str = "token",
                     progress: bool = False) -> pd.DataFrame:
        """Score each token id as the whole response: columns token_id, token, decoded, score."""
        ids = self.token_ids(token_ids)
        scores = self.token_scores(prompt, ids, mode=mode, progress=progress)
        return self.token_table(ids, scores, self.provenance(prompt, mode))

    def token_table(self, ids: np.ndarray, scores: np.ndarray, provenance: dict) -> pd.DataFrame:
        lst = ids.tolist()
        df = pd.DataFrame({
            "token_id": ids.astype(np.int64),
            "token": self.tokenizer.convert_ids_to_tokens(lst),
            "decoded": [self.tokenizer.decode([i]) for i in lst],
            "score": np.asarray(scores, dtype=np.float64),
        })
        df.attrs["provenance"] = provenance
        return df

    def score_texts(self, prompt: str, texts: Sequence[str], mode: str = "token",
                    progress: bool = False) -> pd.DataFrame:
        """Score each text as the whole response: columns text, score."""
        texts = list(texts)
        for i, t in enumerate(texts):
            if not isinstance(t, str) or not t:
                raise ValueError(f"texts[{i}] is {t!r}: every response must be a non-empty string")
        if mode == "paper":
            scores = self._paper_scores(prompt, texts, progress)
        else:
            _check_mode(mode)
            seqs = [list(self.tokenizer(t, add_special_tokens=False).input_ids) for t in texts]
            scores = self.sequence_scores(prompt, seqs, progress=progress)
        df = pd.DataFrame({"text": texts, "score": np.asarray(scores, dtype=np.float64)})
        df.attrs["provenance"] = self.provenance(prompt, mode)
        return df

    # ---- numeric paths ----------------------------------------------------------------
    def token_scores(self, prompt: str, ids: np.ndarray, mode: str = "token", progress: bool = False) -> np.ndarray:
        """Scores (float64 array) of single-token responses, in the order of ``ids``."""
        _check_mode(mode)
        if mode == "paper":
            texts = [self.tokenizer.decode([int(i)]) for i in ids]
            return self._paper_scores(prompt, texts, progress, token_ids=ids)
        frame, kernel = self._kernel(prompt)
        if self.kind == "logprob":
            out = kernel.last_logprobs[torch.as_tensor(ids, device=kernel.last_logprobs.device)]
            return _finite(out.double().cpu().numpy(), ids)
        return self.sequence_scores(prompt, [[int(i)] for i in ids], progress=progress, labels=ids)

    def sequence_scores(self, prompt: str, seqs: Sequence[Sequence[int]], progress: bool = False,
                        labels: Sequence[int] | None = None) -> np.ndarray:
        """Scores of responses given as token-id lists (prefix cached, sorted by length, batched)."""
        frame, kernel = self._kernel(prompt)
        suffix = list(frame.suffix_ids) if self.kind == "classifier" else []
        cands = [list(s) + suffix for s in seqs]
        order = np.argsort([len(c) for c in cands], kind="stable")
        result = np.empty(len(cands), dtype=np.float64)
        device = self.loaded.device
        pad = self.tokenizer.pad_token_id if self.tokenizer.pad_token_id is not None else 0

        def run(chunk):
            length = max(len(cands[j]) for j in chunk)
            ids = torch.full((len(chunk), length), pad, dtype=torch.long)
            for r, j in enumerate(chunk):
                ids[r, : len(cands[j])] = torch.tensor(cands[j])
            ids = ids.to(device)
            lens = torch.tensor([len(cands[j]) for j in chunk], device=device)
            if self.kind == "logprob":
                return kernel.logprob(ids, lens)
            return kernel.classifier(ids, lens - 1)

        with torch.no_grad():
            for chunk, out in self._batched(order, run, progress):
                result[chunk] = out.double().cpu().numpy()
                bad = ~np.isfinite(result[chunk])
                if bad.any():
                    names = np.asarray(labels if labels is not None else np.arange(len(seqs)))[chunk[bad]]
                    raise NonFiniteScoreError(names.tolist(), "token ids" if labels is not None else "texts at")
        return result

    def _batched(self, order: np.ndarray, run, progress: bool):
        """Yield (index chunk, scores), halving the batch on out-of-memory."""
        from tqdm.auto import tqdm

        bar = tqdm(total=len(order), disable=not progress, unit="seq", desc="scoring")
        start = 0
        while start < len(order):
            chunk = order[start:start + self.batch_size]
            try:
                out = run(chunk)
            except (RuntimeError, torch.OutOfMemoryError) as err:
                if not _is_oom(err) or self.batch_size == 1:
                    raise
                if torch.cuda.is_available():
                    torch.cuda.empty_cache()
                self.batch_size = max(1, self.batch_size // 2)
                continue
            yield chunk, out
            bar.update(len(chunk))
            start += len(chunk)
        bar.close()

    def _paper_scores(self, prompt: str, texts: Sequence[str], progress: bool,
                      token_ids: np.ndarray | None = None) -> np.ndarray:
        """The published method: template the text, tokenize with defaults, pad, full forward."""
        tok = self.tokenizer
        template = _resolve_template(tok, self.chat_template, self.loaded.model_id)
        device = self.loaded.device
        if self.kind == "logprob":
            # The paper's next-token method: the generation prompt, tokenized by the template.
            enc = tok.apply_chat_template([{"role": "user", "content": prompt}], chat_template=template,
                                          add_generation_prompt=True, return_dict=True, return_tensors="pt")
            with torch.no_grad():
                logits = self.loaded.model(**{k: v.to(device) for k, v in enc.items()}).logits[0, -1]
            lp = torch.log_softmax(logits.double(), dim=-1).cpu().numpy()
            if token_ids is None:
                raise ValueError("mode='paper' scores texts only with classifier reward models")
            return _finite(lp[token_ids], token_ids)
        convs = [tok.apply_chat_template([{"role": "user", "content": prompt}, {"role": "assistant", "content": t}],
                                         tokenize=False, chat_template=template) for t in texts]
        result = np.empty(len(convs), dtype=np.float64)
        order = np.arange(len(convs))
        if tok.pad_token is None:
            tok.pad_token = tok.eos_token

        def run(chunk):
            enc = tok([convs[j] for j in chunk], return_tensors="pt", padding=True, truncation=True)
            return _extract(self.loaded.model(**{k: v.to(device) for k, v in enc.items()}), self.loaded.score_from)

        with torch.no_grad():
            for chunk, out in self._batched(order, run, progress):
                result[chunk] = out.double().cpu().numpy()
        labels = token_ids if token_ids is not None else np.arange(len(texts))
        return _finite(result, labels)


def _finite(scores: np.ndarray, labels) -> np.ndarray:
    bad = ~np.isfinite(scores)
    if bad.any():
        raise NonFiniteScoreError(np.asarray(labels)[bad].tolist())
    return scores


def _check_mode(mode: str) -> None:
    if mode not in ("token", "paper"):
        raise ValueError(f"mode must be 'token' (exact, from token ids) or 'paper' (the published method), not {mode!r}")


class ImplicitRewardScorer:
    """log p_policy(response | prompt) − log p_reference(response | prompt).

    Both models must share a tokenizer (the same vocabulary); both see the
    policy's chat template, as in DPO, where the reference is scored on the
    same inputs as the policy.
    """

    kind = "implicit"

    def __init__(self, policy: Scorer, reference: Scorer):
        if policy.kind != "logprob" or reference.kind != "logprob":
            raise ValueError("an implicit reward needs two causal LMs (logprob scorers)")
        if policy.tokenizer.get_vocab() != reference.tokenizer.get_vocab():
            raise ValueError(
                f"{policy.loaded.model_id} and {reference.loaded.model_id} have different vocabularies: "
                "an implicit reward needs a policy and a reference that share one tokenizer"
            )
        if reference.chat_template is None:
            reference.chat_template = _resolve_template(policy.tokenizer, policy.chat_template, policy.loaded.model_id)
        self.policy, self.reference = policy, reference
        self.tokenizer = policy.tokenizer
        self.loaded = policy.loaded

    @property
    def vocab_size(self) -> int:
        return self.policy.vocab_size

    def frame(self, prompt):
        return self.policy.frame(prompt)

    def token_ids(self, token_ids=None):
        return self.policy.token_ids(token_ids)

    def provenance(self, prompt: str, mode: str) -> dict:
        prov = self.policy.provenance(prompt, mode)
        ref = self.reference.provenance(prompt, mode)
        prov.update(scorer="implicit", reference_model_id=ref["model_id"], reference_revision=ref["revision"],
                    reference_dtype=ref["dtype"])
        return prov

    def token_scores(self, prompt, ids, mode="token", progress=False):
        return self.policy.token_scores(prompt, ids, mode, progress) - self.reference.token_scores(prompt, ids, mode, progress)

    def sequence_scores(self, prompt, seqs, progress=False, labels=None):
        return (self.policy.sequence_scores(prompt, seqs, progress, labels)
                - self.reference.sequence_scores(prompt, seqs, progress, labels))

    def token_table(self, ids, scores, provenance):
        return self.policy.token_table(ids, scores, provenance)

    def score_tokens(self, prompt, token_ids=None, mode="token", progress=False):
        ids = self.token_ids(token_ids)
        return self.token_table(ids, self.token_scores(prompt, ids, mode, progress), self.provenance(prompt, mode))

    def score_texts(self, prompt, texts, mode="token", progress=False):
        a = self.policy.score_texts(prompt, texts, mode, progress)
        b = self.reference.score_texts(prompt, texts, mode, progress)
        a["score"] = a["score"] - b["score"]
        a.attrs["provenance"] = self.provenance(prompt, mode)
        return a


def load_scorer(model: str = "default", *, reference: str | None = None, chat_template: str | None = None,
                batch_size: int | None = None, **load_kwargs):
    """A scorer for a model spec; with ``reference``, the implicit reward of ``model`` over it."""
    policy = Scorer(load_model(model, **load_kwargs), chat_template=chat_template, batch_size=batch_size)
    if reference is None:
        return policy
    ref_kwargs = {k: v for k, v in load_kwargs.items() if k not in ("revision", "trust_remote_code")}
    ref = Scorer(load_model(reference, **ref_kwargs), chat_template=chat_template, batch_size=batch_size)
    return ImplicitRewardScorer(policy, ref)
