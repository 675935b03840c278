"""Which texts name a term: a stated matching rule for word lists (identity terms) in item names.

:func:`term_matches` applies one of two rules, both case-insensitive, to
every text and term (a term of several words, ``"middle eastern"``, matches as
that sequence of words):

* ``rule="word"``: a *form* of the term occurs as whole words anywhere in the
  text. Words are runs of letters and digits (an apostrophe inside a word
  belongs to it), so ``"Jewish-American"`` holds the words ``jewish`` and
  ``american`` and ``"Gays"`` holds ``gays``.
* ``rule="name"``: the whole text names the group: the text, with one trailing
  parenthetical such as ``" (film)"`` dropped, is a form of the term, or a form
  followed by one of ``head_nouns`` (default :data:`PERSON_NOUNS`: ``"Black
  people"``, ``"Gay men"``, ``"Transgender youth"``).

The forms of a term are the term and, with ``plurals``, the term with ``s``
added to its last word (``homosexuals``, ``african americans``).
:func:`term_keys` gives the forms for matching whole strings (token texts).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

import pandas as pd

from ..errors import InputError

__all__ = ["PERSON_NOUNS", "RULES", "term_forms", "term_keys", "term_matches", "words_of"]

#: Nouns that make an identity adjective a name for people (``rule="name"``).
PERSON_NOUNS = ("people", "peoples", "person", "persons", "man", "men", "woman", "women", "youth", "community")
RULES = ("word", "name")
_WORD = re.compile(r"[^\W_]+(?:'[^\W_]+)*")
_PAREN = re.compile(r"\s*\([^()]*\)\s*$")


def words_of(text: str) -> list[str]:
    """The lower-cased words of ``text`` (runs of letters and digits; inner apostrophes kept)."""
    return _WORD.findall(str(text).lower())


def term_forms(term: str, plurals: bool = True) -> list[str]:
    """The term (its words, lower-cased, single-spaced) and, with ``plurals``, its ``s`` plural."""
    words = words_of(term)
    if not words:
        raise InputError(f"term {term!r} has no word (letters or digits): remove it from the list")
    base = " ".join(words)
    forms = [base]
    if plurals and not words[-1].endswith("s"):
        forms.append(base + "s")
    return forms


def term_keys(terms: Iterable[str], plurals: bool = True) -> pd.DataFrame:
    """Every form of every term: columns ``form, term`` (a form claimed by two terms keeps the first)."""
    rows = [(form, term) for term in _terms(terms) for form in term_forms(term, plurals)]
    return pd.DataFrame(rows, columns=["form", "term"]).drop_duplicates("form").reset_index(drop=True)


def _terms(terms) -> list[str]:
    if isinstance(terms, str):
        raise InputError(f"terms must be a list of terms, not one string: write [{terms!r}]")
    terms = [str(t) for t in terms]
    if not terms:
        raise InputError("terms is empty: give at least one term")
    return list(dict.fromkeys(terms))


def term_matches(texts, terms, *, rule: str = "word", plurals: bool = True,
                 head_nouns: Iterable[str] = PERSON_NOUNS) -> pd.DataFrame:
    """One row per (text, term) that matches under ``rule`` (see the module docstring).

    ``texts``: strings (a list, Series or Index; duplicates are matched once).
    Columns ``text, term, form`` (the form found), texts in their given order
    and, within a text, terms in the list's order. ``attrs``: ``rule``,
    ``plurals``, ``head_nouns`` (``rule="name"``), ``n_texts``, ``n_terms``.
    """
    if rule not in RULES:
        raise InputError(f"rule must be one of {RULES}, not {rule!r}")
    texts = list(dict.fromkeys(str(t) for t in texts))
    keys = term_keys(terms, plurals)
    heads = tuple(dict.fromkeys(" ".join(words_of(h)) for h in head_nouns)) if rule == "name" else ()
    if rule == "name" and any(not h for h in heads):
        raise InputError("head_nouns holds an entry without a word")
    form_term = dict(zip(keys["form"], keys["term"]))
    order = {term: i for i, term in enumerate(dict.fromkeys(keys["term"]))}
    if rule == "name":  # every whole name that names a group -> its form
        names = {f: f for f in form_term}
        names.update({f"{f} {h}": f for f in form_term for h in heads if f"{f} {h}" not in names})
    longest = max(len(f.split()) for f in form_term)
    rows = []
    for text in texts:
        if rule == "word":  # every run of 1..longest words of the text that is a form
            ws = words_of(text)
            found = {" ".join(ws[i:i + n]) for n in range(1, longest + 1) for i in range(len(ws) - n + 1)}
            found = [f for f in found if f in form_term]
        else:
            name = " ".join(words_of(_PAREN.sub("", text) or text))
            found = [names[name]] if name in names else []
        best: dict[str, str] = {}
        for form in sorted(found, key=lambda f: (order[form_term[f]], f)):
            best.setdefault(form_term[form], form)
        rows += [(text, term, form) for term, form in best.items()]
    out = pd.DataFrame(rows, columns=["text", "term", "form"])
    out.attrs = {"rule": rule, "plurals": plurals, "head_nouns": list(heads), "n_texts": len(texts),
                 "n_terms": int(keys["term"].nunique())}
    return out
