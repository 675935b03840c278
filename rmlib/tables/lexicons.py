"""Word lists that ship inside installed packages: VADER's sentiment lexicon, the identity terms.

* :func:`vader_lexicon`: the lexicon of VADER (Hutto & Gilbert 2014, "VADER: A
  Parsimonious Rule-based Model for Sentiment Analysis of Social Media Text",
  ICWSM), read from the file the PyPI package ``vaderSentiment`` installs
  (``vaderSentiment/vader_lexicon.txt``, MIT licence): 7,520 entries, each the
  mean of ten human ratings from -4 (extremely negative) to +4 (extremely
  positive). A third sentiment lexicon beside AFINN-111 and Bing
  (:mod:`rmlib.tables.datasets`); no network is needed.
* :func:`identity_terms`: the 50 identity terms of Dixon et al. (2018), shipped
  with rmlib (``rmlib/resources/identity_terms``; source and licence in its
  README).
"""

from __future__ import annotations

import hashlib
import pathlib

import pandas as pd

from .. import resources
from ..errors import DataFileError

__all__ = ["IDENTITY_TERMS_SOURCE", "VADER_SHA256", "VADER_VERSION", "identity_terms", "vader_lexicon",
           "vader_path"]

#: The ``vaderSentiment`` release whose lexicon file is pinned by :data:`VADER_SHA256`.
VADER_VERSION = "3.3.2"
#: SHA-256 of ``vader_lexicon.txt`` in ``vaderSentiment`` 3.3.2 (7,520 lines, CRLF line ends).
VADER_SHA256 = "1ec9c6e9ee19aade328f8beb393a6afa71a5bb3acf7d3cc22d4ef568df374bf5"
#: Where the identity terms come from (one line for pages and provenance).
IDENTITY_TERMS_SOURCE = ("Dixon, Li, Sorensen, Thain & Vasserman (2018), Measuring and Mitigating Unintended Bias "
                         "in Text Classification, AIES 2018: the 50 identity terms of its synthetic test set "
                         "(conversationai/unintended-ml-bias-analysis, Apache-2.0)")


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
