"""Mode "paper": the published method (decode the token, template the text, tokenize with the tokenizer's
defaults, pad, forward, read where a padded batch reads), as :class:`rmlib.engine.scorers.Scorer` runs it:
the prompt's part of the published inputs runs once where that is the same computation
(:meth:`PaperMode.paper_shared_prefix`, candidates at fixed places), or the padded batches whole
(``paper_forward="full"``, token ids in the vocabulary's own consecutive batches).
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
import torch

from ..errors import InputError
from .frames import resolve_template
from .kernel import PrefixKernel, extract_score
from .placement import finite_scores
from .token_tables import token_strings


class PaperMode:
    """The published method's steps of a :class:`rmlib.engine.scorers.Scorer`."""

    def paper_prompt(self, prompt: str) -> dict:
        """The paper's next-token method (logprob): the generation prompt, tokenized by the template."""
        template = resolve_template(self.tokenizer, self.chat_template, self.loaded.model_id)
        return self.tokenizer.apply_chat_template([{"role": "user", "content": prompt}], chat_template=template,
                                                  add_generation_prompt=True, return_dict=True, return_tensors="pt")

    def paper_conversations(self, prompt: str, texts: Sequence[str]) -> list[str]:
        """The published method (classifier): each text as the assistant's turn, the template rendered as text."""
        template = resolve_template(self.tokenizer, self.chat_template, self.loaded.model_id)
        return [self.tokenizer.apply_chat_template([{"role": "user", "content": prompt},
                                                    {"role": "assistant", "content": t}],
                                                   tokenize=False, chat_template=template) for t in texts]

    def paper_input_ids(self, prompt: str, text: str) -> list[int]:
        """The ids ``mode="paper"`` feeds the model for one response ``text`` (a logprob model: the prompt
        alone, whose next-token distribution is read), tokenized exactly as :meth:`paper_scores` does."""
        if self.kind == "logprob":
            return self.paper_prompt(prompt)["input_ids"][0].tolist()
        enc = padded_batch(self.tokenizer, self.paper_conversations(prompt, [text]), self.loaded.model_id)
        return enc["input_ids"][0].tolist()

    def paper_scores(self, prompt: str, texts: Sequence[str], progress: bool,
                      token_ids: np.ndarray | None = None) -> np.ndarray:
        """The published method: template the text, tokenize with defaults, pad, forward (``paper_forward``)."""
        if not self.loaded.plan.paper_mode:
            raise InputError(f"{self.loaded.model_id} was loaded with lite=True (rmlib's plain forward for the "
                             "token path); mode='paper' is the published method and runs through transformers: "
                             "load the model without lite")
        tok = self.tokenizer
        device = self.loaded.device
        if self.kind == "logprob":
            enc = self.paper_prompt(prompt)
            with torch.no_grad():
                logits = self.loaded.model(**{k: v.to(device) for k, v in enc.items()}).logits[0, -1]
            lp = torch.log_softmax(logits.double(), dim=-1).cpu().numpy()
            if token_ids is None:
                raise InputError("mode='paper' scores texts only with classifier reward models")
            return finite_scores(lp[token_ids], token_ids)
        convs = self.paper_conversations(prompt, texts)
        labels = np.asarray(token_ids if token_ids is not None else np.arange(len(texts)))
        result = np.full(len(convs), np.nan)
        full = np.arange(len(convs))
        shared = self.paper_shared_prefix(prompt, convs) if self.paper_forward == "shared-prefix" else None
        if shared is not None:  # the same inputs and read positions, the prompt's prefix run once
            kernel, rows, last = shared
            on = np.array([r is not None for r in rows], dtype=bool)
            if on.any():
                result[on] = self.placed_scores(kernel, [r for r in rows if r is not None], progress, labels[on],
                                                 [k for k in last if k is not None])
            full = np.flatnonzero(~on)  # rows whose tokens leave the prompt's prefix: each its own forward

        def run(chunk):
            enc = padded_batch(tok, [convs[j] for j in chunk], self.loaded.model_id)
            return extract_score(self.loaded.model(**{k: v.to(device) for k, v in enc.items()}), self.loaded.score_from)

        with torch.no_grad():
            if shared is not None:  # rows off the prefix: each alone (no padding, nothing else in its forward)
                for j in full:
                    result[j] = run(np.array([j])).double().cpu().numpy()[0]
            elif token_ids is None:  # texts (the paper scored token ids only): each alone, never padded,
                for j in full:  # so that a score never follows a batch's neighbours
                    result[j] = run(np.array([j])).double().cpu().numpy()[0]
            else:  # token ids in the paper's batches: consecutive ids, each batch run whole (see below)
                result[:] = self.paper_vocab_batches(prompt, np.asarray(token_ids), run, progress)
        return finite_scores(result, labels)

    def paper_vocab_batches(self, prompt: str, ids: np.ndarray, run_texts, progress: bool) -> np.ndarray:
        """``paper_forward="full"`` on token ids: the vocabulary in consecutive batches of ``batch_size`` ids
        (batch ``b`` holds ids ``b * batch_size`` to ``(b + 1) * batch_size - 1``), each padded batch run whole
        as the paper's code ran it, so that an id's score never depends on which other ids a call asks for."""
        from ..progress import bar as progress_bar

        size, vocab = self.batch_size, self.vocab_size
        out = np.empty(len(ids), dtype=np.float64)
        batches = ids // size
        bar = progress_bar(len(np.unique(batches)), progress=progress, unit="batch", desc="scoring")
        for b in np.unique(batches):
            members = np.flatnonzero(batches == b)
            whole = np.arange(b * size, min((b + 1) * size, vocab))
            texts = token_strings(self.tokenizer, whole)[1]
            convs = self.paper_conversations(prompt, texts)
            enc = padded_batch(self.tokenizer, convs, self.loaded.model_id)
            with torch.no_grad():
                scores = extract_score(self.loaded.model(**{k: v.to(self.loaded.device) for k, v in enc.items()}),
                                       self.loaded.score_from).double().cpu().numpy()
            out[members] = scores[ids[members] - b * size]
            bar.update(1)
        bar.close()
        return out

    def paper_shared_prefix(self, prompt: str, convs: Sequence[str]):
        """The published inputs as (kernel, candidates, read positions) after the prompt's prefix, which is
        run once; None where that would not be the published computation. The prefix is the longest common
        prefix of two probe conversations (:data:`PREFIX_PROBES`: the prompt's alone, whichever texts a call
        scores); a row whose tokens leave it (a response merging with the template's last token) or whose
        read position falls inside it gets None for candidate and read position (run whole, alone).

        A padded batch with a standard head (transformers' ``*ForSequenceClassification``) reads each
        row at its rightmost token that is not ``config.pad_token_id``. Padded by that same id, that
        position is one of the row's own tokens, and a causal model scores it alike with or without
        padding and with or without a cached prefix: right padding comes after it; left padding
        masks the pads and shifts the row's positions, which standard rotary embeddings do not see
        (attention depends on position differences). Other position encodings under left padding,
        padding by another id (the read can land on padding), a row of pad ids only and custom heads
        keep the full forward per text.
        """
        tok, model = self.tokenizer, self.loaded.model
        cfg = getattr(model, "config", None)
        text_cfg = cfg.get_text_config() if cfg is not None else None
        pad = getattr(text_cfg, "pad_token_id", None)
        fill = tok.pad_token_id if tok.pad_token_id is not None else tok.eos_token_id
        if (self.loaded.score_from != "logits0" or pad is None or fill != pad or not len(convs)
                or not (tok.padding_side == "right" or plain_rotary(text_cfg))):
            return None
        probes = self.paper_conversations(prompt, PREFIX_PROBES)
        a, b = ([int(t) for t in r] for r in tok(list(probes), truncation=True)["input_ids"])
        common = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
        if common < 1:
            return None
        prefix = a[:common]
        rows = [list(r) for r in tok(list(convs), truncation=True)["input_ids"]]
        reads = [max((i for i, t in enumerate(r) if t != pad), default=-1) for r in rows]
        kernel = PrefixKernel(self.loaded, prefix, self.shared_attention)
        if not kernel.cached:
            return None
        keep = [r[:common] == prefix and k >= common for r, k in zip(rows, reads)]
        return (kernel, [r[common:k + 1] if ok else None for r, k, ok in zip(rows, reads, keep)],
                [k - common if ok else None for k, ok in zip(reads, keep)])


#: Two responses whose conversations share exactly the prompt's part of the published inputs: their longest
#: common prefix is the prefix mode "paper" runs once (``paper_forward="shared-prefix"``).
PREFIX_PROBES = ("A", "z")


def plain_rotary(cfg) -> bool:
    """Whether positions enter the model only through standard rotary embeddings (``rope_type``
    "default" for every attention kind), so that shifting all of a row's positions changes nothing."""
    rope = getattr(cfg, "rope_parameters", None)
    if not isinstance(rope, dict) or not rope:
        return False
    kinds = list(rope.values()) if all(isinstance(v, dict) for v in rope.values()) else [rope]
    return all(k.get("rope_type", "default") == "default" for k in kinds)


def padded_batch(tok, texts: Sequence[str], what: str) -> dict[str, torch.Tensor]:
    """``tok(texts, padding=True, truncation=True, return_tensors="pt")`` without a pad token
    set on the (shared) tokenizer: a tokenizer with none pads with EOS, as the paper did."""
    pad_id = tok.pad_token_id if tok.pad_token_id is not None else tok.eos_token_id
    if pad_id is None:
        raise InputError(f"the tokenizer of {what} has neither a pad nor an EOS token: paper mode cannot pad a batch; "
                         "use mode='token' or batch_size=1")
    enc = tok(list(texts), truncation=True)
    length = max(len(ids) for ids in enc["input_ids"])
    left = tok.padding_side == "left"
    out = {}
    for key, rows in enc.items():
        fill = pad_id if key == "input_ids" else 0
        padded = [[fill] * (length - len(r)) + list(r) if left else list(r) + [fill] * (length - len(r))
                  for r in rows]
        out[key] = torch.tensor(padded, dtype=torch.long)
    return out
