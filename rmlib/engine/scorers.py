"""Scorers: score tokens and texts as the assistant's whole response.

The one obvious way
-------------------
* **uncached** (computed now, nothing written): ``scorer = load_scorer(model)``,
  then ``scorer.score_tokens(prompt, token_ids)`` and
  ``scorer.score_texts(prompt, texts)``; both return a table with its
  provenance in ``df.attrs["provenance"]``;
* **cached** (read from / written to the score store, resumable):
  :func:`rmlib.tables.store.score_vocabulary` and
  :func:`rmlib.tables.store.score_texts` with the same scorer; many models x
  prompts: :func:`rmlib.runs.scoring.score_models`.

``token_scores`` and ``sequence_scores`` are the array-level steps under
those two (what the store and GCG call); readers rarely need them. Every
scorer satisfies :class:`ScorerProtocol`.

Three scorer kinds share that interface:

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
forward, read where a padded batch reads). Where the two differ:

* templates that strip the message (``| trim`` in Llama-3 and Gemma templates)
  turn the token ``" hello"`` into ``"hello"`` in paper mode;
* tokenizers that add BOS by default add a second BOS in paper mode when the
  template already renders one;
* a decoded token can re-tokenize into other ids (byte-level pieces, tokens
  that decode to the same string, merges across the template boundary).

Speed. The prompt prefix is run once and its KV cache reused; candidates are
(token + suffix) only, batched, and a score never depends on what else a
call scores for a score table: single tokens need no padding at all (each at
place ``id % slots`` of a forward of exactly ``slots``: :meth:`Scorer.token_scores`),
and mode "paper" places its candidates the same way (below). Texts
(``score_texts``) run in forwards of their own length with a row count that
depends on that length alone, each at a hashed place (``ForwardPlan.text_rows``:
few positions per forward on a CPU, where hashed places collide), so a text's
score is the same whatever else is scored. The searches' step
(``sequence_scores``) sorts its candidates by length and right-pads them (exact:
a causal model never attends to later positions; a candidate's last bits follow
its batch). Batches halve on
out-of-memory instead of crashing (for the rest of that call; the next call
starts again at ``batch_size``). For ``logprob`` the whole vocabulary comes
from one forward pass. Mode "paper" feeds the published inputs the same way
where that is the published computation (``paper_forward="shared-prefix"``,
the default; see :meth:`Scorer.paper_shared_prefix`): the prompt's part of
the published inputs runs once, each read position is the padded batch's, and
candidates sit at fixed places; ``paper_forward="full"`` runs the padded
batches whole, as the paper's code did (the benchmarks' baseline), token ids
in the vocabulary's own consecutive batches.
"""

from __future__ import annotations

import os
import platform
from typing import Iterable, Protocol, Sequence, runtime_checkable

import numpy as np
import pandas as pd
import torch

from .. import __version__
from ..errors import InputError, NonFiniteScoreError  # noqa: F401 (re-exported)
from ..options import PAPER_FORWARDS, check_chat_template, check_mode
from .frames import ChatFrame, chat_frame, check_prompt_text, choose_template, resolve_template, special_token_texts
from .kernel import SCORING_REVISION, PrefixKernel, is_oom
from .paper_mode import PaperMode
from .placement import PlacedScoring, finite_scores, to_device
from .models import LoadedModel, check_model_spec, load_model
from .scorer_batches import with_batch_size
from .token_tables import stored_token_table, token_strings
from .tokenizer_facts import TokenizerFacts, read_facts, read_frame, remember


@runtime_checkable
class ScorerProtocol(Protocol):
    """What every scorer offers (:class:`Scorer`, :class:`ImplicitRewardScorer`):
    what the store, the results tables and GCG rely on."""

    kind: str
    tokenizer: object
    loaded: LoadedModel

    @property
    def vocab_size(self) -> int: ...

    def frame(self, prompt: str) -> ChatFrame: ...

    def token_ids(self, token_ids: Iterable[int] | None = None) -> np.ndarray: ...

    def provenance(self, prompt: str, mode: str) -> dict: ...

    def score_tokens(self, prompt: str, token_ids: Iterable[int] | None = None, mode: str = "token",
                     progress: bool = False) -> pd.DataFrame: ...

    def score_texts(self, prompt: str, texts: Sequence[str], mode: str = "token",
                    progress: bool = False) -> pd.DataFrame: ...

    def token_scores(self, prompt: str, ids: np.ndarray, mode: str = "token",
                     progress: bool = False, slots: int | None = None) -> np.ndarray: ...

    def token_slots(self, prompt: str, mode: str = "token") -> int | None: ...

    def sequence_scores(self, prompt: str, seqs: Sequence[Sequence[int]], progress: bool = False,
                        labels: Sequence[int] | None = None) -> np.ndarray: ...

    def token_table(self, ids: np.ndarray, scores: np.ndarray, provenance: dict) -> pd.DataFrame: ...


class Scorer(PlacedScoring, PaperMode):
    """Scores tokens and texts as the assistant's whole response to a prompt."""

    def __init__(self, loaded: LoadedModel, chat_template: str | None = None, batch_size: int | None = None,
                 paper_forward: str = "shared-prefix", shared_attention: bool | None = None):
        """``shared_attention``: classifier candidates attend the cached prefix at batch 1
        (:mod:`rmlib.engine.shared_attention`); None: on a GPU (the same scores to float rounding)."""
        if paper_forward not in PAPER_FORWARDS:
            raise InputError(f"paper_forward must be 'shared-prefix' (the texts' common prefix run once) or 'full' "
                             f"(a padded forward per batch, as the paper ran it), not {paper_forward!r}")
        self.paper_forward = paper_forward
        self.shared_attention = shared_attention
        if batch_size is not None and (isinstance(batch_size, bool) or not isinstance(batch_size, (int, np.integer))
                                       or batch_size < 1):
            raise InputError(f"batch size must be a positive whole number, not {batch_size!r}")
        self.loaded = loaded
        self.chat_template = chat_template if chat_template is not None else loaded.chat_template
        self.kind = loaded.kind
        # The model's plan (rmlib.engine.plan, decided at load) sizes the default batch; a batch size given
        # here is kept as given (``sized`` False).
        self.batch_size = batch_size or loaded.plan.default_batch
        self.sized = batch_size is None
        self._kernels: dict[str, tuple[ChatFrame, PrefixKernel]] = {}
        self._frames: dict[str, ChatFrame] = {}
        self._facts: TokenizerFacts | bool | None = None  # None: not looked up yet; False: none cached
        self._stored_table = None  # the token table the facts name, once read
        self.template()  # fail early, before heavy work

    @property
    def tokenizer(self):
        """The model's tokenizer (one loaded with rmlib's lite forward is read here, on first use)."""
        return self.loaded.tokenizer

    def tokenizer_facts(self) -> TokenizerFacts | None:
        """What token-mode scoring reads from a tokenizer not read yet, from the cache
        (:mod:`rmlib.engine.tokenizer_facts`); None once it is read, or when nothing is cached."""
        if self.loaded.tokenizer_reader is None or self.loaded.tokenizer_read:
            return None
        if self._facts is None:
            self._facts = read_facts(self.loaded.tokenizer_reader) or False
        return self._facts or None

    def template(self) -> str:
        """The chat template scored with (:func:`rmlib.engine.frames.resolve_template`)."""
        facts = self.tokenizer_facts()
        if facts is not None:
            return choose_template(self.chat_template, facts.chat_template, self.loaded.model_id)
        return resolve_template(self.tokenizer, self.chat_template, self.loaded.model_id)

    def special_texts(self) -> list[str] | None:
        """The special tokens' texts, when known without reading the tokenizer (else None: it tells)."""
        facts = self.tokenizer_facts()
        return None if facts is None else list(facts.special_texts)

    @property
    def vocab_size(self) -> int:
        facts = self.tokenizer_facts()
        return facts.vocab_size if facts is not None else len(self.tokenizer)

    def frame(self, prompt: str) -> ChatFrame:
        """The prompt's verified prefix/suffix ids (cheap: no forward pass). A model whose tokenizer is read
        on first use takes a frame seen before from the cache, and records a new one."""
        if prompt not in self._frames:
            facts, reader = self.tokenizer_facts(), self.loaded.tokenizer_reader
            frame = None if facts is None else read_frame(reader, self.template(), prompt)
            if frame is None:
                frame = chat_frame(self.tokenizer, prompt, self.chat_template, self.loaded.model_id)
                if reader is not None:
                    remember(reader, self.tokenizer, frame)
            _check_context(frame, self.context_length(), self.loaded.model_id)
            self._frames[prompt] = frame
        return self._frames[prompt]

    def context_length(self) -> int | None:
        """The most positions the model takes (``max_position_embeddings``), or None when unknown."""
        cfg = getattr(self.loaded.model, "config", None)
        if cfg is None:  # a custom module without a config: nothing to check against
            return None
        cfg = cfg.get_text_config(decoder=True) if hasattr(cfg, "get_text_config") else cfg
        n = getattr(cfg, "max_position_embeddings", None)
        return int(n) if isinstance(n, int) and n > 0 else None

    def kernel(self, prompt: str) -> tuple[ChatFrame, PrefixKernel]:
        """The prompt's frame and its prefix-cached kernel (the prefix runs once;
        one prompt's KV cache is kept at a time). GCG differentiates through it."""
        if prompt not in self._kernels:
            specials = self.special_texts()
            check_prompt_text(None if specials is not None else self.tokenizer, prompt, specials)  # stays text
            frame = self.frame(prompt)
            self._kernels = {prompt: (frame, PrefixKernel(self.loaded, frame.prefix_ids, self.shared_attention))}
        return self._kernels[prompt]

    def provenance(self, prompt: str, mode: str) -> dict:
        check_mode(mode)
        if mode == "token":
            specials = self.special_texts()
            check_prompt_text(None if specials is not None else self.tokenizer, prompt, specials)
        facts = self.tokenizer_facts()
        frame = self.frame(prompt)
        if facts is None:
            import transformers

        prov = {
            "model_id": self.loaded.model_id, "revision": self.loaded.revision, "dtype": self.loaded.dtype,
            "scorer": self.kind, "score_from": self.loaded.score_from if self.kind == "classifier" else None,
            "mode": mode, "prompt": prompt, "chat_template": frame.chat_template,
            "prefix_text": frame.prefix_text, "suffix_text": frame.suffix_text,
            "prefix_ids": list(frame.prefix_ids), "suffix_ids": list(frame.suffix_ids),
            "rmlib_version": __version__, "scoring_revision": SCORING_REVISION,
            "forward": self.loaded.plan.provenance,
            "prefix_attention": self.prefix_attention(),
            "transformers_version": transformers.__version__ if facts is None else facts.transformers_version,
            "torch_version": torch.__version__, "python_version": platform.python_version(),
        }
        control = special_token_texts(self.tokenizer, prompt) if mode == "paper" else []
        if mode == "paper":
            prov["paper_forward"] = self.paper_forward
        if control:  # the published path parses them as control tokens: say so
            prov["prompt_special_tokens_parsed_as_control"] = control
        return prov

    def prefix_attention(self) -> str | None:
        """How classifier candidates in token mode attend the cached prefix: ``"shared"`` (batch 1,
        :mod:`rmlib.engine.shared_attention`), ``"per-candidate"`` (packed or an expanded cache), or None
        (rmlib's lite forward, which always shares it, or no cached prefix). A model whose attention turns
        the shared path down falls back at its first call (the same scores to float rounding)."""
        if self.kind != "classifier" or self.loaded.plan.lite or self.loaded.score_from != "logits0":
            return None
        return "shared" if self.loaded.plan.shared_attention(self.shared_attention) else "per-candidate"

    # ---- public API -------------------------------------------------------------------
    def token_ids(self, token_ids: Iterable[int] | None = None) -> np.ndarray:
        """Validate token ids (all of the vocabulary when None)."""
        if token_ids is None:
            return np.arange(self.vocab_size, dtype=np.int64)
        try:
            raw = np.asarray(list(token_ids))
        except TypeError:
            raise InputError(f"token ids must be a list of integers, got {token_ids!r}") from None
        if raw.size == 0:
            raise InputError("no token ids to score: pass at least one id (or None for the whole vocabulary)")
        if raw.ndim != 1 or not (np.issubdtype(raw.dtype, np.integer)
                                 or (np.issubdtype(raw.dtype, np.floating) and np.all(raw == np.round(raw)))):
            raise InputError(f"token ids must be whole numbers, got {raw[:5].tolist()}")
        ids = raw.astype(np.int64)
        bad = ids[(ids < 0) | (ids >= self.vocab_size)]
        if bad.size:
            raise InputError(f"token ids out of range 0..{self.vocab_size - 1}: {bad[:10].tolist()}; "
                             f"{self.loaded.model_id} has {self.vocab_size} tokens")
        return ids

    def score_tokens(self, prompt: str, token_ids: Iterable[int] | None = None, mode: str = "token",
                     progress: bool = False) -> pd.DataFrame:
        """Score each token id as the whole response: columns token_id, token, decoded, score."""
        ids = self.token_ids(token_ids)
        scores = self.token_scores(prompt, ids, mode=mode, progress=progress)
        return self.token_table(ids, scores, self.provenance(prompt, mode))

    def token_table(self, ids: np.ndarray, scores: np.ndarray, provenance: dict) -> pd.DataFrame:
        tokens, decoded = self.token_texts(ids)
        df = pd.DataFrame({
            "token_id": ids.astype(np.int64),
            "token": tokens,
            "decoded": decoded,
            "score": np.asarray(scores, dtype=np.float64),
        })
        df.attrs["provenance"] = provenance
        return df

    def token_texts(self, ids: np.ndarray) -> tuple[list[str], list[str]]:
        """Each id's token and decoded text (:func:`rmlib.engine.token_tables.token_strings`; from the cached
        token table while the tokenizer is unread and its facts are cached)."""
        facts = self.tokenizer_facts()
        if facts is not None and self._stored_table is None:  # read once (a table is scored in many shards)
            self._stored_table = stored_token_table(facts.token_table, facts.vocab_size)
        table = None if facts is None else self._stored_table
        if table is None:
            return token_strings(self.tokenizer, ids)
        lst = [int(i) for i in ids]
        return table["token"].take(lst).to_pylist(), table["decoded"].take(lst).to_pylist()

    def score_texts(self, prompt: str, texts: Sequence[str], mode: str = "token",
                    progress: bool = False) -> pd.DataFrame:
        """Score each text as the whole response: columns text, score. In token mode each text runs after
        the cached prefix in forwards of its own length at a place a hash of it picks
        (:meth:`placed_scores`, :meth:`rmlib.engine.plan.ForwardPlan.text_rows` rows), so its score is
        the same whichever other texts a call scores, in whatever order."""
        texts = list(texts)
        for i, t in enumerate(texts):
            if not isinstance(t, str) or not t:
                raise InputError(f"texts[{i}] is {t!r}: every response must be a non-empty string")
        if mode == "paper":
            scores = self.paper_scores(prompt, texts, progress)
        else:
            check_mode(mode)
            seqs = [list(self.tokenizer(t, add_special_tokens=False).input_ids) for t in texts]
            frame, kernel = self.kernel(prompt)
            suffix = list(frame.suffix_ids) if self.kind == "classifier" else []
            scores = self.placed_scores(kernel, [s + suffix for s in seqs], progress,
                                        rows_for=self.loaded.plan.text_rows)
        df = pd.DataFrame({"text": texts, "score": np.asarray(scores, dtype=np.float64)})
        df.attrs["provenance"] = self.provenance(prompt, mode)
        return df

    # ---- numeric paths ----------------------------------------------------------------
    def token_scores(self, prompt: str, ids: np.ndarray, mode: str = "token", progress: bool = False,
                     slots: int | None = None) -> np.ndarray:
        """Scores (float64 array) of single-token responses, in the order of ``ids``.

        In token mode a classifier scores them in batches of exactly ``slots`` candidates (default
        :meth:`token_slots`), token ``i`` always at place ``i % slots``: a forward's float sums depend on
        its shape and on a row's place in it (never on the other rows' tokens), so a token's score is the
        same whichever other ids a call asks for (a slice, a subset, the rest of a table after an
        interruption). A logprob model reads every token from one forward.
        """
        check_mode(mode)
        if mode == "paper":  # at the batch size a table recorded (``slots``: see token_slots)
            scorer = self if slots is None or slots == self.batch_size else with_batch_size(self, int(slots))
            texts = token_strings(self.tokenizer, ids)[1]
            return scorer.paper_scores(prompt, texts, progress, token_ids=ids)
        frame, kernel = self.kernel(prompt)
        if self.kind == "logprob":
            out = kernel.last_logprobs[torch.as_tensor(ids, device=kernel.last_logprobs.device)]
            return finite_scores(out.double().cpu().numpy(), ids)
        slots = self.token_slots(prompt, mode) if slots is None else slots
        if isinstance(slots, bool) or not isinstance(slots, (int, np.integer)) or slots < 1:
            raise InputError(f"slots must be a positive whole number of candidates per forward, not {slots!r}")
        return self.slotted_scores(kernel, frame, np.asarray(ids, dtype=np.int64), int(slots), progress)

    def token_slots(self, prompt: str, mode: str = "token") -> int | None:
        """Candidates per forward when single tokens are scored by a classifier: in token mode the batch the
        default rule gives candidates of their length (or ``batch_size``); in mode "paper" ``batch_size``
        (its batches and places follow from it); None where no batches are formed (a logprob model). A score
        table records it, and a run that adds to the table scores with it
        (:func:`rmlib.tables.store.score_vocabulary`)."""
        if self.kind != "classifier":
            return None
        check_mode(mode)
        if mode == "paper":
            return int(self.batch_size)
        length = 1 + len(self.frame(prompt).suffix_ids)
        return int(self.chunk_size(np.full(self.loaded.plan.lookahead(self.batch_size), length)))

    def sequence_scores(self, prompt: str, seqs: Sequence[Sequence[int]], progress: bool = False,
                        labels: Sequence[int] | None = None) -> np.ndarray:
        """Scores of responses given as token-id lists (prefix cached, sorted by length, batched: as fast as
        batching allows; a score's last bits follow its batch)."""
        frame, kernel = self.kernel(prompt)
        suffix = list(frame.suffix_ids) if self.kind == "classifier" else []
        return self._kernel_scores(kernel, [list(s) + suffix for s in seqs], progress, labels)

    def _kernel_scores(self, kernel: PrefixKernel, cands: Sequence[Sequence[int]], progress: bool,
                       labels: Sequence[int] | None = None, last: Sequence[int] | None = None) -> np.ndarray:
        """Scores of token-id candidates that follow ``kernel``'s cached prefix. A classifier reads
        candidate ``j`` at its position ``last[j]`` (default: its last token)."""
        sizes = np.array([len(c) for c in cands], dtype=np.int64)
        order = np.argsort(sizes, kind="stable")
        result = np.empty(len(cands), dtype=np.float64)
        device = self.loaded.device
        pad = self.tokenizer.pad_token_id if self.tokenizer.pad_token_id is not None else 0
        reads = sizes - 1 if last is None else np.array(last, dtype=np.int64)

        def run(chunk):
            length = int(sizes[chunk].max())
            if sizes[chunk].min() == length:  # equal lengths (single tokens + suffix): one array, no loop
                ids = np.array([cands[j] for j in chunk], dtype=np.int64).reshape(len(chunk), length)
            else:
                ids = np.full((len(chunk), length), pad, dtype=np.int64)
                for r, j in enumerate(chunk):
                    ids[r, : sizes[j]] = cands[j]
            ids = to_device(ids, device)
            if self.kind == "logprob":
                return kernel.logprob(ids, to_device(sizes[chunk], device))
            return kernel.classifier(ids, to_device(reads[chunk], device))

        def finish(chunk, out):
            result[chunk] = out.double().cpu().numpy()
            bad = ~np.isfinite(result[chunk])
            if bad.any() and len(chunk) > 1:
                # A NaN in one packed candidate can spread to the whole batch: score the
                # non-finite ones alone to name only the offenders.
                for j in chunk[bad]:
                    result[j] = run(np.array([j])).double().cpu().numpy()[0]
                bad = ~np.isfinite(result[chunk])
            if bad.any():
                names = np.asarray(labels if labels is not None else np.arange(len(cands)))[chunk[bad]]
                raise NonFiniteScoreError(names.tolist(), "token ids" if labels is not None else "texts at")

        with torch.no_grad():
            # A batch's scores are read back once the next batch is queued: on a GPU the next
            # forward runs while this one's results are copied and checked.
            pending = None
            for chunk, out in self._batched(order, run, progress, sizes):
                if pending is not None:
                    finish(*pending)
                pending = (chunk, out)
            if pending is not None:
                finish(*pending)
        return result

    def _batched(self, order: np.ndarray, run, progress: bool, lengths: np.ndarray | None = None):
        """Yield (index chunk, scores), halving the batch on out-of-memory for the
        rest of this call (``self.batch_size`` is left as it is). ``lengths``: each
        candidate's length in tokens, ``order`` sorted by it; with the default batch,
        a chunk's positions (count x its longest) set its size (:meth:`chunk_size`)."""
        from ..progress import bar as progress_bar

        bar = progress_bar(len(order), progress=progress, unit="seq", desc="scoring")
        size = self.batch_size
        start = 0
        while start < len(order):
            ahead = None if lengths is None else lengths[order[start:start + self.loaded.plan.lookahead(size)]]
            n = size if ahead is None else self.chunk_size(ahead, size)
            chunk = order[start:start + n]
            try:
                out = run(chunk)
            except (RuntimeError, torch.OutOfMemoryError) as err:
                if not is_oom(err) or size == 1 or not self.loaded.plan.halve_on_oom:
                    raise
                if torch.cuda.is_available():
                    torch.cuda.empty_cache()
                size = max(1, size // 2)
                continue
            yield chunk, out
            bar.update(len(chunk))
            start += len(chunk)
        bar.close()

    def chunk_size(self, ahead: np.ndarray, size: int | None = None) -> int:
        """How many candidates one call scores, ``ahead``: the lengths (tokens) of the next candidates,
        ascending; ``size``: the batch size now (default ``batch_size``): the model's plan decides
        (:meth:`rmlib.engine.plan.ForwardPlan.chunk_size`; a batch size given to the scorer is kept)."""
        size = self.batch_size if size is None else size
        return self.loaded.plan.chunk_size(ahead, size, self.sized)

def _check_context(frame: ChatFrame, context: int | None, model_id: str) -> None:
    """The prompt's frame plus a one-token response must fit the model's context."""
    need = len(frame.prefix_ids) + len(frame.suffix_ids) + 1
    if context is not None and need > context:
        raise InputError(
            f"the prompt is too long for {model_id}: its chat frame is {need - 1} tokens plus the response, "
            f"over the model's context of {context} positions; shorten the prompt"
        )


class ImplicitRewardScorer:
    """log p_policy(response | prompt) − log p_reference(response | prompt).

    Both models must share a tokenizer (the same vocabulary). A reference
    without a chat template of its own sees the policy's, as in DPO, where
    the reference is scored on the same inputs as the policy: it is then
    wrapped in a new :class:`Scorer` over the same loaded model with that
    template passed explicitly; the ``reference`` passed in is not changed.
    """

    kind = "implicit"

    def __init__(self, policy: Scorer, reference: Scorer):
        if policy.kind != "logprob" or reference.kind != "logprob":
            raise InputError("an implicit reward needs two causal LMs (logprob scorers)")
        if policy.tokenizer.get_vocab() != reference.tokenizer.get_vocab():
            raise InputError(
                f"{policy.loaded.model_id} and {reference.loaded.model_id} have different vocabularies: "
                "an implicit reward needs a policy and a reference that share one tokenizer"
            )
        if reference.chat_template is None:
            template = resolve_template(policy.tokenizer, policy.chat_template, policy.loaded.model_id)
            reference = Scorer(reference.loaded, chat_template=template, batch_size=reference.batch_size)
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

    def token_scores(self, prompt, ids, mode="token", progress=False, slots=None):
        return self.policy.token_scores(prompt, ids, mode, progress) - self.reference.token_scores(prompt, ids, mode, progress)

    def token_slots(self, prompt, mode="token"):
        return None  # two logprob models: every token read from one forward each

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
                batch_size: int | None = None, paper_forward: str = "shared-prefix", **load_kwargs):
    """A scorer for a model spec; with ``reference``, the implicit reward of ``model`` over it (a reference
    that is the model itself is refused: every reward would be exactly 0)."""
    same = ("the reference is the model itself ({}), so every implicit reward log π(y) − log π_ref(y) would be "
            "exactly 0; give a different reference, e.g. the policy's base model")
    if reference is not None and isinstance(model, str) and isinstance(reference, str) \
            and os.path.expanduser(reference.strip()) == os.path.expanduser(model.strip()):
        raise InputError(same.format(repr(model)))  # before either loads
    if chat_template is not None:
        check_chat_template(chat_template)  # a misspelt name refused before anything loads
    if reference is not None:
        check_model_spec(reference)  # a misspelt reference refused before the model loads, as a misspelt model is
    policy = Scorer(load_model(model, **load_kwargs), chat_template=chat_template, batch_size=batch_size,
                    paper_forward=paper_forward)
    if reference is None:
        return policy
    ref_kwargs = {k: v for k, v in load_kwargs.items() if k not in ("revision", "trust_remote_code")}
    ref = Scorer(load_model(reference, **ref_kwargs), chat_template=chat_template, batch_size=batch_size)
    if (ref.loaded.model_id, ref.loaded.revision) == (policy.loaded.model_id, policy.loaded.revision) \
            and policy.loaded.revision is not None:
        raise InputError(same.format(f"{reference!r} and {model!r} are both {policy.loaded.model_id} at revision "
                                     f"{policy.loaded.revision}"))
    return ImplicitRewardScorer(policy, ref)
