"""The lexicon sentiment of whole texts (multi-token responses: chapter 5's search answers)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..errors import InputError
from .lexical import VALENCES, as_lexicon, valence_classes


#: A word of a text: letters, with inner apostrophes or hyphens (``don't``, ``well-being``).
WORD_PATTERN = r"[a-z]+(?:['-][a-z]+)*"


def text_sentiment(texts, lexicon, *, value_name: str | None = None) -> pd.DataFrame:
    """The lexicon sentiment of whole texts (e.g. multi-token responses), one row per text.

    Each text is lower-cased and split into words (:data:`WORD_PATTERN`; a token boundary inside a
    word, as in ``"disperserenewable"``, is not a word boundary: the text is read as a reader sees
    it). Every word that is a lexicon entry counts with its value: a numeric lexicon (AFINN) as
    given, a class lexicon (Bing) as +1 for ``positive`` and -1 for ``negative``; a word listed in
    both classes counts +1 and -1 (net 0). Multi-word lexicon entries never match.

    Columns: ``text``, ``n_words``, ``matched`` (the matched words, space-separated, in order, a
    repeated word as often as it occurs), ``n_matched`` (matched words, repeats counted),
    ``sentiment`` (the sum of their values; 0 when none matched) and ``mean`` (``sentiment /
    n_matched``; NaN when none matched).
    """
    import re

    lex = as_lexicon(lexicon, value_name)
    vname = [c for c in lex.columns if c != "word"][0]
    values = lex[vname]
    if not (pd.api.types.is_numeric_dtype(values) and not pd.api.types.is_bool_dtype(values)):
        classes = valence_classes(values)
        unknown = sorted(set(classes.dropna()) - set(VALENCES))
        if unknown:
            raise InputError(f"lexicon classes must be 'positive' or 'negative', got {unknown}")
        values = classes.map({"positive": 1.0, "negative": -1.0})
    per_word = pd.Series(values.to_numpy(dtype=float), index=lex["word"].str.lower()).groupby(level=0).sum()
    rows = []
    for text in texts:
        if not isinstance(text, str):
            raise TypeError(f"texts must be strings, got {type(text).__name__}: {text!r}")
        words = re.findall(WORD_PATTERN, text.lower())
        hits = [(w, float(per_word[w])) for w in words if w in per_word.index]
        vals = [v for _, v in hits]
        rows.append({"text": text, "n_words": len(words), "matched": " ".join(w for w, _ in hits),
                     "n_matched": len(hits), "sentiment": float(sum(vals)),
                     "mean": float(np.mean(vals)) if vals else float("nan")})
    return pd.DataFrame(rows, columns=["text", "n_words", "matched", "n_matched", "sentiment", "mean"])


__all__ = ["WORD_PATTERN", "text_sentiment"]
