"""Word frequencies: the British National Corpus list the paper used (Leech, Rayson & Wilson 2001,
list 1.1, alphabetical, all; a pinned file of :mod:`rmlib.tables.data_files`).

:func:`bnc_frequencies` reads it per lemma, per inflected form, as the paper's
R code read it, or line by line. Frequencies of any word from the ``wordfreq``
package are :func:`rmlib.stats.wordfreq_frequencies`.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..errors import DataFileError, InputError
from .downloads import fetch

__all__ = ["bnc_frequencies"]


def _bnc_number(value: str) -> tuple[float, bool]:
    """A numeric field of the BNC list: (value, carried a # or && mark)."""
    value = value.strip()
    number = value.rstrip("#&")
    marked = number != value
    return (float(number) if number else np.nan), marked


def _bnc_raw() -> pd.DataFrame:
    """The BNC list 1.1, one row per line of the file (18,088 rows).

    A line is ``<TAB>Word<TAB>PoS<TAB>x<TAB>Freq<TAB>Ra<TAB>Disp``. On a
    lemma line ``x`` is ``:`` (no inflections listed) or ``%`` (inflected
    forms follow). On a ``@`` line (Word and PoS both ``@``) ``x`` is the
    inflected form itself; its lemma and PoS are those of the nearest lemma
    line above. Irregularities of the released file handled here: 11 lines
    (the two ``lie`` verbs) lack the leading tab; one line is a
    cross-reference without numbers (``further*  Adj  [see far]``: numbers
    NaN); some numbers carry a trailing ``#`` or ``&&`` mark, or are just
    ``&&`` (kept as ``*_marked`` flags, value parsed without the mark, NaN
    when nothing is left).
    """
    path = fetch("bnc_1_1_all_alpha")
    with open(path, encoding="latin-1", newline="") as f:
        lines = f.read().split("\n")
    header = lines[0].rstrip("\r").split("\t")
    if [h for h in header if h] != ["Word", "PoS", "Freq", "Ra", "Disp"]:
        raise DataFileError(f"{path}: unexpected header {header!r}")
    recs = []
    for lineno, line in enumerate(lines[1:], 2):
        line = line.rstrip("\r")
        if not line:
            continue
        fields = line.split("\t")
        if fields[0] == "":
            fields = fields[1:]
        fields = (fields + [""] * 6)[:6]
        word, pos, form = fields[0], fields[1], fields[2]
        freq, freq_m = _bnc_number(fields[3])
        rng, rng_m = _bnc_number(fields[4])
        disp, disp_m = _bnc_number(fields[5])
        recs.append((lineno, word, pos, form, freq, rng, disp, freq_m, rng_m, disp_m))
    df = pd.DataFrame(
        recs,
        columns=["line", "word", "pos", "form", "freq", "range", "disp",
                 "freq_marked", "range_marked", "disp_marked"],
    )
    is_form = df["word"].eq("@")
    df["is_form"] = is_form
    df["lemma"] = df["word"].where(~is_form).ffill()
    df["lemma_pos"] = df["pos"].where(~is_form).ffill()
    return df


def bnc_frequencies(rows: str = "lemma") -> pd.DataFrame:
    """BNC word frequencies (Leech, Rayson & Wilson 2001, list 1.1).

    ``Freq`` is per million words (rounded to integers, so some are 0);
    ``log_freq`` is its natural log (``-inf`` where ``freq == 0``: filter
    ``freq > 0`` before regressing).

    ``rows="lemma"`` (default): lemma lines only (``Word != "@"``),
    aggregated over part of speech by summing ``freq`` per lower-cased
    ``Word``. Columns ``word, freq, n_pos, log_freq``, one row per distinct
    lower-cased lemma (multi-word entries such as ``a bit`` included, the
    one cross-reference line without a frequency excluded).

    ``rows="forms"``: the inflected-form lines (``Word == "@"``), one row
    each, with the form string (third field of the line) as ``word``, its
    ``lemma`` and the lemma's ``pos``; columns ``word, lemma, pos, freq,
    range, disp, log_freq``. Lemmas without inflections have no such lines.

    ``rows="paper"``: what the paper's R code (``figures/generate_figure_3.R``)
    used: ``read.delim`` of the file, then a join of the lower-cased token on
    the ``Word`` column exactly as written (not lower-cased, so capitalised
    entries never match), many-to-many (a word listed under two PoS gives two
    observations with their own ``Freq``), ``as.numeric(Freq)`` (values
    marked ``#`` become NA) and ``freq > 0``. Returned here: lemma lines
    with ``word`` as in the file, one row per PoS, ``freq`` NaN where the
    source value is ``#``-marked or missing, rows with NaN or 0 ``freq``
    dropped; columns ``word, pos, freq, log_freq``. (The 11 lines without a
    leading tab shift columns in ``read.delim`` and so never match in the
    paper; they are lemma ``lie`` lines and are kept here, a negligible
    difference for tokens that are in AFINN.)

    ``rows="raw"``: every line as parsed (see :func:`_bnc_raw`).
    """
    df = _bnc_raw()
    if rows == "raw":
        return df
    if rows == "lemma":
        lem = df.loc[~df["is_form"] & df["freq"].notna(), ["word", "pos", "freq"]].copy()
        lem["word"] = lem["word"].str.lower()
        out = (
            lem.groupby("word", sort=True)
            .agg(freq=("freq", "sum"), n_pos=("pos", "size"))
            .reset_index()
        )
    elif rows == "forms":
        out = df.loc[df["is_form"], ["form", "lemma", "lemma_pos", "freq", "range", "disp"]]
        out = out.rename(columns={"form": "word", "lemma_pos": "pos"}).reset_index(drop=True)
    elif rows == "paper":
        out = df.loc[~df["is_form"], ["word", "pos", "freq"]].copy()
        out.loc[df["freq_marked"], "freq"] = np.nan
        out = out[out["freq"] > 0].reset_index(drop=True)
    else:
        raise InputError(f"rows must be 'lemma', 'forms', 'paper' or 'raw', got {rows!r}")
    with np.errstate(divide="ignore"):
        out["log_freq"] = np.log(out["freq"].to_numpy(dtype="float64"))
    return out
