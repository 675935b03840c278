"""Word frequency (mere exposure, the paper's Fig. 3D): ``score ~ log(freq) + sentiment`` on the
lexicon-matched tokens, per model and prompt, and the frequencies themselves (BNC tables come from
:func:`rmlib.tables.word_frequencies.bnc_frequencies`; :func:`wordfreq_frequencies` asks the
``wordfreq`` package). How the fit differs from the paper's: :mod:`rmlib.stats.lexical`."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..errors import InputError
from .lexical import iter_tables, match_lexicon, ols_slopes


def _as_frequencies(frequencies) -> pd.DataFrame:
    """``word, freq`` rows with freq > 0 (duplicates kept: many-to-many join)."""
    if isinstance(frequencies, pd.Series):
        df = pd.DataFrame({"word": frequencies.index.astype(str), "freq": frequencies.to_numpy(float)})
    elif isinstance(frequencies, pd.DataFrame):
        if not {"word", "freq"} <= set(frequencies.columns):
            raise InputError(
                "frequencies DataFrame needs columns 'word' and 'freq' "
                f"(as word_frequencies.bnc_frequencies() or wordfreq_frequencies()); it has {list(frequencies.columns)}"
            )
        df = frequencies[["word", "freq"]].copy()
        df["freq"] = pd.to_numeric(df["freq"], errors="coerce")
    else:
        raise TypeError(f"frequencies must be a Series or DataFrame, got {type(frequencies).__name__}")
    return df[df["freq"] > 0].reset_index(drop=True)


def frequency_slope(
    table: pd.DataFrame,
    frequencies,
    lexicon=None,
    *,
    on: str | None = "decoded",
    score: str = "score",
    strip: bool = True,
    cov_type: str = "HC3",
    ci: float = 0.95,
) -> pd.DataFrame:
    """Slope of score on log word frequency, with and without sentiment.

    ``frequencies``: ``word, freq`` (per million; ``word_frequencies.bnc_frequencies``
    or :func:`wordfreq_frequencies`); words listed more than once (the
    paper's ``rows="paper"`` BNC form, one row per part of speech) give one
    observation each, as the paper's many-to-many join did. Frequencies of 0
    are dropped.

    With a numeric ``lexicon`` (AFINN) the sample is the tokens matched to
    both the lexicon and the frequency list, and two models are fitted on
    that same sample: ``log_freq`` (``score ~ log f``) and ``log_freq +
    sentiment`` (``score ~ log f + sentiment``, the paper's Fig. 3D).
    Without a lexicon the sample is every token in the frequency list and
    only ``log_freq`` is fitted. One row per model spec: ``spec, n, slope,
    se, ci_low, ci_high, t, p, intercept`` for the log-frequency term.
    ``cov_type``: ``"HC3"`` (default) or ``"nonrobust"`` (the paper).
    """
    freq = _as_frequencies(frequencies)
    if lexicon is not None:
        m = match_lexicon(table, lexicon, on=on, strip=strip)
        vname = m.attrs["value_column"]
        if not pd.api.types.is_numeric_dtype(m[vname]) or pd.api.types.is_bool_dtype(m[vname]):
            raise InputError(f"the sentiment covariate needs a numeric lexicon; {vname!r} is {m[vname].dtype}")
    else:
        m = match_lexicon(table, freq.assign(_f=1)[["word", "_f"]].drop_duplicates("word"),
                          on=on, strip=strip).drop(columns="_f")
        vname = None
    if score not in m.columns:
        raise InputError(f"table has no score column {score!r}")
    j = m.merge(freq, on="word", how="inner")
    j = j.dropna(subset=[score] + ([vname] if vname else []))
    logf = np.log(j["freq"].to_numpy(float))
    rows = [ols_slopes(j[score], [logf], ["log_freq"], cov_type, ci).assign(spec="log_freq")]
    if vname:
        rows.append(ols_slopes(j[score], [logf, j[vname]], ["log_freq", "sentiment"], cov_type, ci)
                    .iloc[[0]].assign(spec="log_freq + sentiment"))
    out = pd.concat(rows, ignore_index=True).drop(columns="term")
    out["cov_type"] = cov_type
    return out[["spec", "n", "slope", "se", "ci_low", "ci_high", "t", "p", "intercept", "cov_type"]]


def frequency_slopes(tables, frequencies, lexicon=None, **kwargs) -> pd.DataFrame:
    """:func:`frequency_slope` for many tables: columns ``model, prompt, spec, ...``."""
    parts = []
    for model, prompt, table in iter_tables(tables):
        s = frequency_slope(table, frequencies, lexicon, **kwargs)
        s.insert(0, "prompt", prompt)
        s.insert(0, "model", model)
        parts.append(s)
    if not parts:
        raise InputError("no tables given")
    return pd.concat(parts, ignore_index=True)


def count_significant(results: pd.DataFrame, *, alpha: float = 0.05, by=("prompt", "spec")) -> pd.DataFrame:
    """Number of models with a significant positive / negative slope per group.

    ``results``: output of :func:`frequency_slopes` (grouped by ``prompt``
    and ``spec``) or :func:`sentiment_slopes` (pass ``by=("prompt",
    "valence")``). Columns ``n_models, n_positive, n_negative`` (slope > 0
    resp. < 0 with p < alpha).
    """
    by = [b for b in by if b in results.columns]
    if not {"slope", "p"} <= set(results.columns):
        raise InputError("results needs columns 'slope' and 'p'")
    sig = results["p"] < alpha
    tmp = results.assign(_pos=sig & (results["slope"] > 0), _neg=sig & (results["slope"] < 0))
    g = tmp.groupby(by, sort=False, dropna=False) if by else tmp.groupby(lambda _: "all")
    return pd.DataFrame({
        "n_models": g.size(),
        "n_positive": g["_pos"].sum().astype(int),
        "n_negative": g["_neg"].sum().astype(int),
    }).reset_index()


def wordfreq_frequencies(words, *, lang: str = "en", wordlist: str = "best") -> pd.DataFrame:
    """Word frequencies per million from the ``wordfreq`` package (offline data).

    An alternative to the BNC list: ``wordfreq`` (Speer 2022) pools
    subtitles, Wikipedia, books, web and social-media text; its data ship
    inside the package. ``words`` are looked up as given (pass the
    normalized strings, e.g. ``normalize_strings(table["decoded"])``);
    words wordfreq does not know (frequency 0) are left out. Columns
    ``word, freq, log_freq``.
    """
    try:
        import wordfreq
    except ImportError as e:  # pragma: no cover - depends on the environment
        raise ImportError("wordfreq is not installed: pip install wordfreq==3.1.1") from e
    uniq = pd.unique(pd.Series(list(words), dtype="object").dropna())
    freqs = np.array([wordfreq.word_frequency(w, lang, wordlist=wordlist) for w in uniq], dtype=float) * 1e6
    df = pd.DataFrame({"word": uniq, "freq": freqs})
    df = df[df["freq"] > 0].reset_index(drop=True)
    df["log_freq"] = np.log(df["freq"])
    return df


__all__ = ["count_significant", "frequency_slope", "frequency_slopes", "wordfreq_frequencies"]
