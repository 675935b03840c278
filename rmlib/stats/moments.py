"""The first three moments of score distributions (the paper's Table 3).

Estimators, chosen to match the paper (``tables/generate_table_3.py``:
``np.mean``, ``np.var``, ``scipy.stats.skew`` with their defaults):

* mean: the sample mean;
* variance: the *population* variance, ``ddof=0`` (``np.var`` default);
* skewness: the biased Fisher-Pearson coefficient ``g1 = m3 / m2**1.5``
  (``scipy.stats.skew(bias=True)``, the default), not the adjusted ``G1``
  that ``pandas.Series.skew`` returns.

Both choices can be changed (``ddof=1``, ``bias=False``); with vocabularies
of 10^5 tokens the difference is negligible.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy import stats
from ..errors import InputError


def distribution_moments(scores, ddof: int = 0, bias: bool = True) -> pd.Series:
    """``n, mean, variance, skewness`` of a 1-D collection of scores.

    Missing values (NaN) are dropped first; an empty input or a non-finite
    value is an error.
    """
    x = np.asarray(scores, dtype=float).ravel()
    x = x[~np.isnan(x)]
    if x.size == 0:
        raise InputError("no scores (all missing or empty input)")
    if not np.isfinite(x).all():
        raise InputError("scores contain infinite values")
    return pd.Series(
        {
            "n": int(x.size),
            "mean": float(np.mean(x)),
            "variance": float(np.var(x, ddof=ddof)),
            "skewness": float(stats.skew(x, bias=bias)),
        }
    )


def moments_table(data: pd.DataFrame, by=None, value: str = "score", ddof: int = 0,
                  bias: bool = True) -> pd.DataFrame:
    """Moments per model (and prompt) of a long or a wide table.

    * ``by`` given (a column name or a list of them, e.g.
      ``["model", "prompt"]``): ``data`` is long, one row per (group, item),
      scores in ``value``; one output row per group, the group keys as
      columns.
    * ``by=None``: ``data`` is wide (one column per model); one output row
      per column, indexed by column name.

    Output columns ``n, mean, variance, skewness``.
    """
    if data.empty:
        raise InputError("moments_table: the table has no rows: give the scores of at least one model")
    if by is None:
        rows = {c: distribution_moments(data[c], ddof=ddof, bias=bias) for c in data.columns}
        out = pd.DataFrame(rows).T
        out.index.name = data.columns.name or "model"
    else:
        keys = [by] if isinstance(by, str) else list(by)
        missing = [c for c in keys + [value] if c not in data.columns]
        if missing:
            raise KeyError(f"columns {missing} not in the table (columns: {list(data.columns)})")
        parts = []
        for key, grp in data.groupby(keys, sort=False, dropna=False):
            key = key if isinstance(key, tuple) else (key,)
            m = distribution_moments(grp[value], ddof=ddof, bias=bias)
            parts.append({**dict(zip(keys, key)), **m.to_dict()})
        out = pd.DataFrame(parts)
    out["n"] = out["n"].astype("int64")
    return out


__all__ = ["distribution_moments", "moments_table"]
