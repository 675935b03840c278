"""What kind of string a token is: a Latin-script word, another script, code, a number...

A reward model trained on one kind of text can give extreme scores to tokens
it never saw in training: fragments of other scripts, code punctuation, byte
pieces. :func:`token_class` sorts decoded token strings into a few classes
by a stated rule (Unicode character data, no language model); and
:func:`class_shares` counts them among the top and bottom ``n`` of a score
table, to compare a model's extremes with another's (the paper's Table 2).

The rule, on the string with surrounding white space removed:

* ``"space / empty"``: nothing left (white space or empty);
* ``"byte fragment"``: holds U+FFFD (a piece of a multi-byte character that
  decodes alone to the replacement character);
* ``"non-Latin script"``: a letter of any script other than Latin (the first
  word of the letter's Unicode name: CJK, HANGUL, BENGALI, CYRILLIC, ...);
* ``"Latin word"``: Latin letters only, with at most inner apostrophes,
  hyphens or periods (``don't``, ``U.S.``);
* ``"number"``: digits (with ``.,`` separators) only;
* ``"code / symbols"``: no letters and not a number (punctuation, brackets,
  operators: ``});``, ``=>``), or letters joined with characters that words
  do not hold (``_``, ``{``, ``=``, digits...: ``getValue()``, ``x_1``).
"""

from __future__ import annotations

import unicodedata

import pandas as pd

CLASSES = ("Latin word", "non-Latin script", "code / symbols", "number", "byte fragment", "space / empty")
_WORD_INNER = set("'’-.")


def _script(ch: str) -> str:
    try:
        return unicodedata.name(ch).split()[0]
    except ValueError:
        return "UNKNOWN"


def token_class(text) -> str:
    """The class of one decoded string (see the module docstring for the rule)."""
    if not isinstance(text, str):
        return "space / empty"
    s = text.strip()
    if not s:
        return "space / empty"
    if "\ufffd" in s:
        return "byte fragment"
    letters = [c for c in s if unicodedata.category(c).startswith("L")]
    if any(_script(c) != "LATIN" for c in letters):
        return "non-Latin script"
    if letters:
        inner = s.strip("'’-.")
        if inner and all(c.isalpha() or c in _WORD_INNER for c in inner):
            return "Latin word"
        return "code / symbols"
    if all(c.isdigit() or c in ".," for c in s) and any(c.isdigit() for c in s):
        return "number"
    return "code / symbols"


def classify_tokens(strings) -> pd.Series:
    """:func:`token_class` of each string (a Series, same index for a Series input)."""
    s = strings if isinstance(strings, pd.Series) else pd.Series(list(strings))
    return s.map(token_class).rename("token_class")


def class_shares(table: pd.DataFrame, n: int = 100, *, score: str = "score", key: str = "decoded",
                 by=None, end: str | None = None) -> pd.DataFrame:
    """Share of each class among the ``n`` highest (``end = "top"``) and ``n`` lowest (``"bottom"``) rows.

    ``table``: a score table (``decoded``, ``score``), or several with ``by``
    naming the columns that tell them apart (``["model", "prompt"]``). Ties
    are broken by row order. A list that is already split into its top and
    bottom (a published table) gives that split with ``end`` (the column
    holding ``"top"`` / ``"bottom"``; ``n`` and ``score`` are then unused).
    Columns ``by`` + ``end, n`` + one column per class of :data:`CLASSES`
    (fractions summing to 1).
    """
    by = [] if by is None else ([by] if isinstance(by, str) else list(by))
    groups = table.groupby(by, sort=False, observed=True) if by else [((), table)]
    rows = []
    for key_vals, g in groups:
        key_vals = key_vals if isinstance(key_vals, tuple) else (key_vals,)
        if end is not None:
            parts = [(e, g[g[end] == e]) for e in ("top", "bottom")]
        else:
            ordered = g.sort_values(score, ascending=False, kind="mergesort")
            k = min(n, len(ordered))
            parts = [("top", ordered.head(k)), ("bottom", ordered.tail(k))]
        for which, part in parts:
            counts = classify_tokens(part[key]).value_counts()
            rows.append({**dict(zip(by, key_vals)), "end": which, "n": len(part),
                         **{c: float(counts.get(c, 0)) / max(len(part), 1) for c in CLASSES}})
    return pd.DataFrame(rows)


def out_of_distribution_share(shares: pd.DataFrame) -> pd.Series:
    """Per row of :func:`class_shares`: the share that is not a Latin word and not a number."""
    return 1.0 - shares["Latin word"] - shares["number"]


__all__ = ["CLASSES", "class_shares", "out_of_distribution_share", "token_class", "classify_tokens"]
