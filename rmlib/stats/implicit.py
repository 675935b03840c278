"""The follow-up study's implicit reward between two language models: the MWLR.

Christian et al. (arXiv 2601.20838, §3) compare two LMs' next-token
log-probabilities for a prompt and read their difference as an implicit
reward. A plain log ratio is dominated by tokens that both models find
nearly impossible, so they weight it by the two models' mean probability,
the *mixture-weighted log ratio*::

    MWLR(s) = 0.5 * (p_A(s) + p_B(s)) * (log p_A(s) - log p_B(s))

Positive = model A prefers the string ``s``. As in the authors' code
(``generate_figure_3.py``, ``generate_table_1.py``):

* each model's probabilities are its own softmax over its whole vocabulary
  (no renormalisation to the shared strings);
* tokens are matched on their *decoded strings*; when several tokens of one
  vocabulary decode to the same string, the one with the highest
  log-probability is kept (sort descending, keep the first);
* only strings that both vocabularies contain are scored (inner join).

:func:`mwlr` is the formula; :func:`mwlr_table` the whole procedure on two
score tables; :func:`variant_mean` the authors' Figure 3 score of a word (the
mean MWLR over the strings that strip and lower-case to it).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from ..errors import InputError


def mwlr(logprob_a, logprob_b) -> np.ndarray:
    """``0.5 * (p_a + p_b) * (log p_a - log p_b)`` elementwise, from natural-log probabilities."""
    la = np.asarray(logprob_a, dtype=float)
    lb = np.asarray(logprob_b, dtype=float)
    return 0.5 * (np.exp(la) + np.exp(lb)) * (la - lb)


def best_per_string(table: pd.DataFrame, key: str = "decoded", value: str = "score") -> pd.Series:
    """One log-probability per decoded string: the highest among the tokens that decode to it.

    Rows whose string is missing are dropped (as the authors' ``dropna``).
    Returns a Series indexed by the string.
    """
    for col in (key, value):
        if col not in table.columns:
            raise InputError(f"table has no column {col!r} (columns: {list(table.columns)})")
    t = table[[key, value]].dropna(subset=[key])
    t = t.sort_values(value, ascending=False, kind="mergesort").drop_duplicates(key, keep="first")
    return t.set_index(key)[value]


def mwlr_table(a: pd.DataFrame, b: pd.DataFrame, *, key: str = "decoded", value: str = "score",
               names=("a", "b")) -> pd.DataFrame:
    """MWLR of every decoded string both tables contain, highest first.

    ``a`` and ``b``: one model's log-probabilities for one prompt (rmlib's
    score tables of a ``logprob`` scorer: ``decoded`` and ``score``).
    Columns ``mwlr_rank`` (1 = most preferred by ``a``; the last = by ``b``,
    as Table 1 numbers them), ``key``, ``logprob_<a>``,
    ``logprob_<b>``, ``log_ratio`` (a − b), ``weight`` (0.5 (p_a + p_b)),
    ``mwlr``. ``attrs``: ``n_common``, ``n_a``, ``n_b`` (distinct strings of
    each), ``duplicates_a``, ``duplicates_b`` (tokens dropped as duplicates).
    """
    na, nb = names
    sa, sb = best_per_string(a, key, value), best_per_string(b, key, value)
    joined = pd.concat([sa.rename(f"logprob_{na}"), sb.rename(f"logprob_{nb}")], axis=1, join="inner")
    la, lb = joined[f"logprob_{na}"].to_numpy(), joined[f"logprob_{nb}"].to_numpy()
    out = joined.rename_axis(key).reset_index()
    out["log_ratio"] = la - lb
    out["weight"] = 0.5 * (np.exp(la) + np.exp(lb))
    out["mwlr"] = mwlr(la, lb)
    out = out.sort_values("mwlr", ascending=False, kind="mergesort").reset_index(drop=True)
    out.insert(0, "mwlr_rank", np.arange(1, len(out) + 1))
    out.attrs = {"n_common": len(out), "n_a": len(sa), "n_b": len(sb),
                 "duplicates_a": int(a[key].notna().sum() - len(sa)),
                 "duplicates_b": int(b[key].notna().sum() - len(sb)), "names": list(names)}
    return out


def variant_mean(table: pd.DataFrame, words, *, key: str = "decoded", value: str = "mwlr") -> pd.Series:
    """Per word, the mean ``value`` over the strings that strip and lower-case to it (NaN if none).

    The authors' Figure 3 score of ``freedom`` and ``love`` (``" Freedom"``,
    ``"freedom"``, ... averaged).
    """
    norm = table[key].astype(str).str.strip().str.lower()
    return pd.Series({w: float(table.loc[norm == w.lower(), value].mean()) if (norm == w.lower()).any()
                      else float("nan") for w in words}, name=value)


__all__ = ["best_per_string", "mwlr", "mwlr_table", "variant_mean"]
