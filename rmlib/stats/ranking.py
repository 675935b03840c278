"""Ranks, medians and cell means of long score tables.

The follow-up study (Christian et al., arXiv 2601.20838) turns each reward
model's raw scores into ranks within one model and one prompt, because RMs
score on unrelated scales; then it summarises a word category by its median
rank. These functions do each step on a long table (one row per model, word,
prompt), so a chapter can show every intermediate table:

* :func:`rank_within`: rank 1 = the highest score within each group, ties
  get their average rank (R's ``rank(-score)``, ``scipy.stats.rankdata``);
* :func:`zscore_within`: the score in standard deviations within each group
  (for comparisons of slopes across models);
* :func:`median_ranks`: the median of a column per group (the authors'
  ``sum_value``);
* :func:`cell_means`: mean, SD, n and standard error per cell;
* :func:`gap`: the difference between two levels of a column (e.g.
  Llama − Gemma), cell by cell.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
from ..errors import InputError


def _by(by) -> list[str]:
    return [by] if isinstance(by, str) else list(by)


def _check(table: pd.DataFrame, columns: Sequence[str], what: str) -> None:
    if not isinstance(table, pd.DataFrame):
        raise TypeError(f"{what}: expected a DataFrame, got {type(table).__name__}")
    missing = [c for c in columns if c not in table.columns]
    if missing:
        raise InputError(f"{what}: the table has no columns {missing} (columns: {list(table.columns)})")


def rank_within(table: pd.DataFrame, by, value: str = "score", *, name: str = "rank",
                ascending: bool = False) -> pd.DataFrame:
    """``table`` with a column ``name``: the rank of ``value`` within each group of ``by``.

    Rank 1 is the highest value (``ascending=False``; ``True``: the lowest),
    tied values share their average rank, as R's ``rank(-x)`` and
    ``scipy.stats.rankdata(-x)`` do. Missing values are refused (a rank among
    an unknown number of items means nothing), and so are rows repeated in
    every column (one item counted twice) when the table names its items.
    """
    by = _by(by)
    _check(table, [*by, value], "rank_within")
    if table[value].isna().any():
        raise InputError(f"rank_within: {value!r} has missing values; drop them first")
    if len(table.columns) > len(set(by)) + 1:  # columns that name the ranked things: a repeated row is one twice
        repeated = table.duplicated()
        if repeated.any():
            raise InputError(f"rank_within: {int(repeated.sum())} row(s) repeat an earlier row in every column (the "
                             f"first at index {table.index[repeated.to_numpy()][0]!r}), so they would be ranked as "
                             "distinct items; drop the repeats first (table.drop_duplicates())")
    out = table.copy()
    out[name] = out.groupby(by, sort=False, observed=True)[value].rank(method="average", ascending=ascending)
    return out


def zscore_within(table: pd.DataFrame, by, value: str = "score", *, name: str = "z") -> pd.DataFrame:
    """``table`` with a column ``name``: ``(value - mean) / sd`` within each group of ``by`` (sd with ddof=1)."""
    by = _by(by)
    _check(table, [*by, value], "zscore_within")
    g = table.groupby(by, sort=False, observed=True)[value]
    out = table.copy()
    out[name] = (table[value] - g.transform("mean")) / g.transform("std")
    return out


def median_ranks(table: pd.DataFrame, by, value: str = "rank", *, name: str = "median_rank") -> pd.DataFrame:
    """The median of ``value`` per group of ``by``, one row per group (columns ``by`` + ``name``, ``n``).

    With ``by = [model, category, prompt]`` this is the authors' ``sum_value``: a
    category's median rank under one prompt for one RM.
    """
    by = _by(by)
    _check(table, [*by, value], "median_ranks")
    g = table.groupby(by, sort=False, observed=True)[value]
    out = pd.DataFrame({name: g.median(), "n": g.size()}).reset_index()
    return out


def cell_means(table: pd.DataFrame, by, value: str) -> pd.DataFrame:
    """Mean, SD (ddof=1), n and standard error (SD / sqrt(n)) of ``value`` per cell of ``by``."""
    by = _by(by)
    _check(table, [*by, value], "cell_means")
    g = table.groupby(by, sort=False, observed=True)[value]
    out = pd.DataFrame({"mean": g.mean(), "sd": g.std(ddof=1), "n": g.size()})
    out["se"] = out["sd"] / np.sqrt(out["n"])
    return out.reset_index()


def gap(table: pd.DataFrame, between: str, first, second, value: str = "mean", by=()) -> pd.DataFrame:
    """``value`` at ``between == first`` minus ``value`` at ``between == second``, per cell of ``by``.

    Columns ``by`` + ``first``, ``second`` (the two values) and ``gap``. Each
    cell must hold exactly one row per level (e.g. the output of
    :func:`cell_means`); a clear error otherwise.
    """
    by = _by(by)
    _check(table, [*by, between, value], "gap")
    sub = table[table[between].isin([first, second])]
    if sub.duplicated([*by, between]).any():
        raise InputError(f"gap: several rows per ({', '.join(by + [between])}); aggregate first (cell_means)")
    wide = sub.pivot_table(index=by or None, columns=between, values=value, aggfunc="first", observed=True) \
        if by else sub.set_index(between)[[value]].T
    for level in (first, second):
        if level not in wide.columns:
            raise InputError(f"gap: no rows with {between} == {level!r}")
    out = pd.DataFrame({str(first): wide[first], str(second): wide[second]})
    out["gap"] = out[str(first)] - out[str(second)]
    return out.reset_index(drop=not by)


__all__ = ["cell_means", "gap", "median_ranks", "rank_within", "zscore_within"]
