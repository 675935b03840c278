"""Scorers: score tokens and texts as the assistant's whole response.

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

import platform
from typing import Iterable, Sequence

import numpy as np
import pandas as pd
import torch

from .. import __version__
from ..options import MODES
from .frames import ChatFrame, TEMPLATES, _resolve_template, chat_frame
from .kernel import PrefixKernel, SCORING_REVISION, _extract, _is_oom
from .models import LoadedModel, load_model


class NonFiniteScoreError(RuntimeError):
    """A score came out NaN or infinite; ``token_ids`` names the offenders."""

    def __init__(self, token_ids: Sequence[int], what: str = "token ids"):
        self.token_ids = list(token_ids)
        super().__init__(
            f"non-finite scores (NaN or inf) for {what} {self.token_ids[:20]}"
            f"{' …' if len(self.token_ids) > 20 else ''}: check the model's dtype (try dtype='float32') "
            "and weights; the scores computed before these are kept."
        )


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
    if mode not in MODES:
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
