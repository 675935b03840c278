"""Lexicons and word lists: the sentiment lexicons (AFINN-111, Hu & Liu, VADER), the identity terms,
the Big Two lists.

* :func:`afinn111`: AFINN-111 (Nielsen 2011, ODbL 1.0), the file the paper used;
* :func:`bing_lexicon`: Hu & Liu's (2004) opinion lexicon ("Bing", CC BY 4.0);
  both pinned files of :mod:`rmlib.tables.data_files`, fetched and checked by
  :func:`rmlib.tables.downloads.fetch`.
* :func:`vader_lexicon`: the lexicon of VADER (Hutto & Gilbert 2014, "VADER: A
  Parsimonious Rule-based Model for Sentiment Analysis of Social Media Text",
  ICWSM), read from the file the PyPI package ``vaderSentiment`` installs
  (``vaderSentiment/vader_lexicon.txt``, MIT licence): 7,520 entries, each the
  mean of ten human ratings from -4 (extremely negative) to +4 (extremely
  positive). A third sentiment lexicon beside AFINN-111 and Bing; no
  network is needed.
* :func:`identity_terms`: the 50 identity terms of Dixon et al. (2018), shipped
  with rmlib (``rmlib/resources/identity_terms``; source and licence in its
  README).
* :func:`bigtwo_lists`: the agency and communion word lists (the shipped
  WordNet-derived lists, or any dictionary :func:`read_dictionary` reads: a
  list folder, JSON, LIWC ``.dic``), scored by :mod:`rmlib.stats.bigtwo`.
"""

from __future__ import annotations

import hashlib
import json
import pathlib
from collections.abc import Mapping

import pandas as pd

from .. import resources
from ..errors import DataFileError, InputError
from ..options import BIGTWO_DIMENSIONS
from .data_files import REGISTRY
from .downloads import fetch, sha256sum

__all__ = [
    "BING_WORDS_SHA256", "IDENTITY_TERMS_SOURCE", "VADER_SHA256", "VADER_VERSION", "afinn111",
    "bigtwo_lists", "bing_lexicon", "identity_terms", "read_dictionary", "vader_lexicon", "vader_path",
]

#: The ``vaderSentiment`` release whose lexicon file is pinned by :data:`VADER_SHA256`.
VADER_VERSION = "3.3.2"
#: SHA-256 of ``vader_lexicon.txt`` in ``vaderSentiment`` 3.3.2 (7,520 lines, CRLF line ends).
VADER_SHA256 = "1ec9c6e9ee19aade328f8beb393a6afa71a5bb3acf7d3cc22d4ef568df374bf5"
#: Where the identity terms come from (one line for pages and provenance).
IDENTITY_TERMS_SOURCE = ("Dixon, Li, Sorensen, Thain & Vasserman (2018), Measuring and Mitigating Unintended Bias "
                         "in Text Classification, AIES 2018: the 50 identity terms of its synthetic test set "
                         "(conversationai/unintended-ml-bias-analysis, Apache-2.0)")


# --------------------------------------------------------------------------
# AFINN-111 and Hu & Liu (pinned files)
# --------------------------------------------------------------------------


def _afinn_package_file() -> pathlib.Path | None:
    try:
        import afinn
    except ImportError:
        return None
    path = pathlib.Path(afinn.__file__).resolve().parent / "data" / "AFINN-111.txt"
    return path if path.is_file() else None


def afinn111() -> pd.Series:
    """AFINN-111: ``word -> score`` (int, -5..+5), 2,477 entries.

    Read from the file shipped in the PyPI package ``afinn``
    (``afinn/data/AFINN-111.txt``; ``afinn.Afinn()`` itself would load
    AFINN-165), checked against the registry hash; falls back to
    :func:`fetch` when the package is absent or its copy differs.
    Some entries are multi-word phrases (e.g. ``"does not work"``).
    """
    entry = REGISTRY["afinn_111"]
    path = _afinn_package_file()
    if path is None or sha256sum(path) != entry.sha256:
        path = fetch(entry.name)
    words, scores = [], []
    with open(path, encoding="utf-8") as f:
        for lineno, line in enumerate(f, 1):
            line = line.rstrip("\n").rstrip("\r")
            if not line:
                continue
            word, _, score = line.rpartition("\t")
            if not word:
                raise DataFileError(f"{path}:{lineno}: expected 'word<TAB>score', got {line!r}")
            words.append(word)
            scores.append(int(score))
    s = pd.Series(scores, index=pd.Index(words, name="word"), name="afinn", dtype="int64")
    s.attrs["source"] = str(path)
    return s


def _read_bing_list(path: pathlib.Path) -> list[str]:
    """Words of one Hu & Liu list: one per line, ``;`` comment lines skipped.

    The original files are Latin-1 (``naïve``); the mirrored ones UTF-8.
    Both decode here.
    """
    raw = path.read_bytes()
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        text = raw.decode("latin-1")
    return [w.strip() for w in text.splitlines() if w.strip() and not w.lstrip().startswith(";")]


#: SHA-256 of the word lists (words joined by "\n", UTF-8), whatever the file
#: form (mirrored text files or the upstream zip, whose own hash is not pinned).
BING_WORDS_SHA256 = {
    "bing_positive": "775b12ffb42af6840d30679695d27a79f17e8303b2ba3acd150d6e7bdcea421c",
    "bing_negative": "a7e3eda33fa47ee7a0a2176744e149437a37becf31ea273911b095501f665198",
}


def _bing_words(name: str) -> list[str]:
    path = fetch(name)
    words = _read_bing_list(path)
    digest = hashlib.sha256("\n".join(words).encode("utf-8")).hexdigest()
    if digest != BING_WORDS_SHA256[name]:
        raise DataFileError(
            f"{name}: the word list read from {path} ({len(words)} words) differs from the "
            f"pinned Hu & Liu list (word-list SHA-256 {BING_WORDS_SHA256[name]}, got {digest}). "
            f"Replace the file with the upstream list ({REGISTRY[name].url})."
        )
    return words


def bing_lexicon() -> pd.DataFrame:
    """Hu & Liu (2004) opinion lexicon ("Bing"): columns ``word, sentiment``.

    ``sentiment`` is ``"positive"`` (2,006 words) or ``"negative"``
    (4,783). Words present in both lists (``envious``, ``enviously``,
    ``enviousness`` in the released lists) are kept in both, as in the
    original, and named in ``df.attrs["in_both"]`` so that callers can
    drop them. Either file form is accepted (see :func:`fetch`); the words
    read are checked against :data:`BING_WORDS_SHA256`.
    """
    pos = _bing_words("bing_positive")
    neg = _bing_words("bing_negative")
    df = pd.DataFrame(
        {"word": pos + neg, "sentiment": ["positive"] * len(pos) + ["negative"] * len(neg)}
    )
    df.attrs["in_both"] = sorted(set(pos) & set(neg))
    return df


# --------------------------------------------------------------------------
# VADER (the installed package's file) and the identity terms (shipped)
# --------------------------------------------------------------------------


def vader_path() -> pathlib.Path:
    """The lexicon file of the installed ``vaderSentiment`` package (not imported: its module pulls in
    ``requests``); :class:`DataFileError` naming the fix when the package is absent."""
    import importlib.util

    spec = importlib.util.find_spec("vaderSentiment")
    if spec is None or not spec.submodule_search_locations:
        raise DataFileError(f"the VADER lexicon ships in the PyPI package vaderSentiment, which is not installed: "
                            f"pip install vaderSentiment=={VADER_VERSION}")
    path = pathlib.Path(next(iter(spec.submodule_search_locations))) / "vader_lexicon.txt"
    if not path.is_file():
        raise DataFileError(f"{path} is missing: reinstall vaderSentiment=={VADER_VERSION}")
    return path


def vader_lexicon(path=None) -> pd.Series:
    """VADER's lexicon: ``word -> mean valence`` (float, -4..+4), named ``vader``.

    Read from :func:`vader_path` (or ``path``), whose SHA-256 must be
    :data:`VADER_SHA256` when no ``path`` is given (another release of the
    package would change the numbers silently). Each line is
    ``token<TAB>mean<TAB>sd<TAB>[ten ratings]``; the tokens keep their case
    (they are lower case except some emoticons, e.g. ``:D``), and include
    emoticons and a few multi-word entries. Fourteen tokens are listed twice
    with different ratings (e.g. ``lol``, ``ok``): the later line is kept, as
    VADER's own analyser does. ``attrs``: ``source`` (the file), ``sd`` (the
    standard deviation of the ten ratings, per word), ``n_lines``.
    """
    pinned = path is None
    path = vader_path() if pinned else pathlib.Path(path)
    data = path.read_bytes()
    if pinned and hashlib.sha256(data).hexdigest() != VADER_SHA256:
        raise DataFileError(f"{path} is not the lexicon of vaderSentiment {VADER_VERSION} (SHA-256 differs): "
                            f"pip install vaderSentiment=={VADER_VERSION}")
    words, means, sds = [], [], []
    for lineno, line in enumerate(data.decode("utf-8").splitlines(), 1):
        if not line.strip():
            continue
        fields = line.split("\t")
        try:
            words.append(fields[0])
            means.append(float(fields[1]))
            sds.append(float(fields[2]))
        except (IndexError, ValueError):
            raise DataFileError(f"{path}:{lineno}: expected 'token<TAB>mean<TAB>sd<TAB>ratings', got {line!r}") from None
    s = pd.Series(means, index=pd.Index(words, name="word"), name="vader", dtype="float64")
    keep = ~s.index.duplicated(keep="last")
    out = s[keep]
    out.attrs = {"source": str(path), "sd": dict(zip(words, sds)), "n_lines": len(words)}
    return out


def identity_terms() -> list[str]:
    """The 50 identity terms of Dixon et al. (2018), lower case, in the source's order
    (``rmlib/resources/identity_terms/dixon2018.txt``; see its README for source and licence)."""
    path = resources.path("identity_terms") / "dixon2018.txt"
    terms = [line.strip() for line in path.read_text(encoding="utf-8").splitlines()
             if line.strip() and not line.startswith("#")]
    return terms


# --------------------------------------------------------------------------
# Big Two word lists (rmlib.stats.bigtwo scores with them)
# --------------------------------------------------------------------------



def _read_list(path: pathlib.Path) -> list[str]:
    lines = path.read_text(encoding="utf-8").splitlines()
    return [w.strip().lower() for w in lines if w.strip() and not w.lstrip().startswith("#")]


def read_dictionary(path) -> dict[str, list[str]]:
    """Read a word-list dictionary: ``{category: [patterns]}``.

    Formats, by what ``path`` is:

    * a folder holding ``agency.txt`` and ``communion.txt`` (one word or
      pattern per line, ``#`` comments), as ``rmlib/resources/bigtwo/``;
    * a ``.json`` file ``{"category": ["word", "prefix*", ...], ...}``;
    * a LIWC ``.dic`` file: a header between two ``%`` lines mapping
      category numbers to names, then lines ``pattern<TAB>num<TAB>num...``.

    Patterns are lower-cased. Category names are returned as written; use
    :func:`bigtwo_lists` to map them onto agency/communion.
    """
    p = pathlib.Path(path)
    if p.is_dir():
        out = {}
        for dim in BIGTWO_DIMENSIONS:
            f = p / f"{dim}.txt"
            if not f.is_file():
                raise FileNotFoundError(f"{p} has no {dim}.txt; a list folder needs agency.txt and communion.txt")
            out[dim] = _read_list(f)
        return out
    if not p.is_file():
        raise FileNotFoundError(f"no dictionary file at {p}")
    if p.suffix.lower() == ".json":
        data = json.loads(p.read_text(encoding="utf-8"))
        if not isinstance(data, dict) or not all(isinstance(v, list) for v in data.values()):
            raise InputError(f"{p}: a JSON dictionary must map category names to lists of words")
        return {k: [str(w).strip().lower() for w in v] for k, v in data.items()}
    if p.suffix.lower() == ".dic":
        return _read_liwc(p)
    raise InputError(f"{p}: unknown dictionary format; use a list folder, .json or a LIWC .dic file")


def _read_liwc(p: pathlib.Path) -> dict[str, list[str]]:
    raw = p.read_bytes()
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        text = raw.decode("latin-1")
    lines = [ln.rstrip() for ln in text.splitlines() if ln.strip()]
    marks = [i for i, ln in enumerate(lines) if ln.strip() == "%"]
    if len(marks) < 2:
        raise InputError(f"{p}: a LIWC .dic file starts with a category block between two '%' lines")
    names = {}
    for ln in lines[marks[0] + 1:marks[1]]:
        parts = ln.split()
        if len(parts) < 2:
            raise InputError(f"{p}: bad category line {ln!r} (expected 'number name')")
        names[parts[0]] = parts[1]
    out: dict[str, list[str]] = {n: [] for n in names.values()}
    for ln in lines[marks[1] + 1:]:
        parts = ln.split("\t") if "\t" in ln else ln.split()
        word, cats = parts[0].strip().lower(), [c.strip() for c in parts[1:] if c.strip()]
        for c in cats:
            if c not in names:
                raise InputError(f"{p}: word {word!r} refers to undefined category {c!r}")
            out[names[c]].append(word)
    return out


def bigtwo_lists(source=None, *, agency: str | None = None, communion: str | None = None) -> dict[str, list[str]]:
    """The agency and communion lists: ``{"agency": [...], "communion": [...]}``.

    ``source``: None for the shipped WordNet-derived lists, a path for
    :func:`read_dictionary`, or a mapping ``{category: [patterns]}``.
    ``agency`` / ``communion`` name the source's categories when they are
    not literally ``agency`` and ``communion`` (e.g. a LIWC dictionary's
    ``Agency`` / ``Communion``); by default a category whose name contains
    ``agen`` resp. ``comm`` is taken when there is exactly one.
    """
    if source is None:
        d = read_dictionary(resources.path("bigtwo"))
    elif isinstance(source, Mapping):
        d = {k: [str(w).strip().lower() for w in v] for k, v in source.items()}
    else:
        d = read_dictionary(source)
    out = {}
    for dim, name, stem in (("agency", agency, "agen"), ("communion", communion, "comm")):
        if name is None:
            hits = [k for k in d if k == dim] or [k for k in d if stem in k.lower()]
            if len(hits) != 1:
                raise InputError(
                    f"cannot tell which category is {dim} among {list(d)}; pass {dim}=<category name>"
                )
            name = hits[0]
        if name not in d:
            raise InputError(f"category {name!r} not in the dictionary (categories: {list(d)})")
        out[dim] = list(d[name])
    return out
