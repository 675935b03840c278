"""A stated vocabulary subset: the tokens that are words of the shipped lexicons, plus a random sample.

Scoring a whole vocabulary with a reward model (a sequence classifier, one
forward per token) is slow on a CPU, and the more so the larger the
vocabulary: SmolLM2 has 49,152 tokens, Gemma 262,144 (``make bench``'s
``chapter_scoring`` section measures the rate). The lexicon analyses
of chapter 3 need only the tokens that match a lexicon word, so the chapters
can ask for ``vocab_slice="words"``:

* every token whose decoded text, lower-cased and stripped of white space
  (the matching rule of :func:`rmlib.stats.lexical.match_lexicon` and
  :func:`rmlib.stats.bigtwo.classify`), is a word of AFINN-111, the Bing
  opinion lexicon or the Big Two agency/communion lists (:func:`word_list`),
  and
* a seeded random sample of ``n_random`` other tokens (:data:`N_RANDOM`,
  seed :data:`SEED`), so the distribution views still see ordinary tokens.

The ids depend on the tokenizer, so :func:`word_subset` resolves them per
model. :func:`describe` is the one sentence the chapters print and the score
tables record in their provenance (``vocab_subset``). The score cache is keyed
by (model, prompt, mode, ...), never by the subset: the rows of a subset are
the same rows a whole-vocabulary run computes, and each reuses the other's.
"""

from __future__ import annotations

import dataclasses
import functools

import numpy as np
from ..errors import InputError

WORDS = "words"
N_RANDOM = 2000
SEED = 0
# The BNC lemma list is left out: it would add ~10k SmolLM2 and ~18k Gemma tokens (measured), too many
# for Gemma on a CPU; the frequency analyses of chapter 3 use the AFINN-matched tokens anyway.
SOURCES = ("AFINN-111", "the Bing opinion lexicon", "the Big Two agency/communion lists")

__all__ = ["N_RANDOM", "SEED", "SOURCES", "WORDS", "Words", "decoded_keys", "describe", "word_list", "word_subset"]


@dataclasses.dataclass(frozen=True)
class Words:
    """A stated subset to score: the tokens whose decoded text, lower-cased and stripped of white space,
    is one of ``words`` (``rmlib.runs.scoring.score_models(..., token_ids=Words(words, "identity terms"))``),
    resolved on each model's tokenizer. ``label`` names the list in the sentence that states the subset;
    ``plus``: a vocabulary slice (``"words"``, ``"0:300"``, ``""`` for all) whose tokens are scored too, in
    the same pass over the tokenizer (a chapter's usual tables and these words in one call)."""

    words: tuple[str, ...]
    label: str = "given words"
    plus: str | None = None  # a vocabulary slice scored as well (e.g. "words", a chapter's stated subset)

    def __post_init__(self):
        if isinstance(self.words, str):
            raise InputError(f"words must be a list of words, not one string: write [{self.words!r}]")
        words = tuple(dict.fromkeys(w.strip().lower() for w in self.words if w.strip()))
        if not words:
            raise InputError("Words needs at least one word")
        object.__setattr__(self, "words", words)

    def describe(self, n_tokens: int, vocab_size: int) -> str:
        """The sentence that states the subset, with its count."""
        return (f"{n_tokens:,} tokens of {vocab_size:,} whose decoded text, lower-cased and stripped of white "
                f"space, is one of {len(self.words):,} {self.label}")


@functools.lru_cache(maxsize=1)
def word_list() -> frozenset[str]:
    """The lower-cased words of the shipped lexicons and word lists (:data:`SOURCES`)."""
    from . import lexicons

    words: set[str] = set(lexicons.afinn111().index.astype(str))
    bing = lexicons.bing_lexicon()
    words |= set(bing["word"].astype(str)) if "word" in bing.columns else set(bing.index.astype(str))
    for pats in lexicons.bigtwo_lists().values():
        words |= {p for p in pats if p and not p.endswith("*")}
    return frozenset(w.strip().lower() for w in words if w.strip())


def decoded_keys(tokenizer, vocab_size: int) -> list[str]:
    """Every token's decoded text, lower-cased and white-space-stripped (the lexicon matching key)."""
    from ..engine.token_tables import token_strings

    return [d.lower().strip() for d in token_strings(tokenizer, range(vocab_size))[1]]


def word_subset(tokenizer, vocab_size: int, n_random: int = N_RANDOM, seed: int = SEED,
                words=None, keys=None) -> tuple[np.ndarray, np.ndarray]:
    """``(word_ids, random_ids)``: the tokens that decode to a word of ``words`` (default
    :func:`word_list`), and ``n_random`` other ids drawn with ``seed`` (all others when fewer).
    ``keys``: :func:`decoded_keys` of the tokenizer when already computed.

    Both sorted, disjoint; their union is the subset to score.
    """
    if isinstance(n_random, bool) or not isinstance(n_random, (int, np.integer)) or n_random < 0:
        raise InputError(f"n_random must be a non-negative whole number of tokens, not {n_random!r}")
    words = word_list() if words is None else frozenset(w.strip().lower() for w in words)
    keys = decoded_keys(tokenizer, vocab_size) if keys is None else keys
    word_ids = np.array([i for i, k in enumerate(keys) if k and k in words], dtype=np.int64)
    others = np.setdiff1d(np.arange(vocab_size, dtype=np.int64), word_ids)
    take = min(int(n_random), len(others))
    random_ids = np.sort(np.random.default_rng(seed).choice(others, size=take, replace=False)).astype(np.int64)
    return word_ids, random_ids


def describe(n_words: int | None = None, n_random: int = N_RANDOM, seed: int = SEED,
             vocab_size: int | None = None) -> str:
    """The one sentence that states the subset (with its counts when given)."""
    words = f"{n_words:,} tokens" if n_words is not None else "every token"
    of = f" of {vocab_size:,}" if vocab_size is not None else ""
    return (f"vocabulary subset 'words': {words}{of} whose decoded text, lower-cased and stripped of white space, "
            f"is a word of {', '.join(SOURCES[:-1])} or {SOURCES[-1]}, plus {n_random:,} other tokens drawn "
            f"at random (seed {seed})")
