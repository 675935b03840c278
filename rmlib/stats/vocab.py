"""The ends of a score table: its top and bottom items, and several tables' ends side by side.

Tables of several models are joined on a shared vocabulary by
:func:`rmlib.tables.vocabulary.shared_vocabulary`.
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd
from ..errors import InputError


def top_bottom(table: pd.DataFrame, n: int = 10, score: str = "score", *,
               tiebreak: Sequence[str] = (), disjoint: bool = False) -> pd.DataFrame:
    """The ``n`` highest- and ``n`` lowest-scoring rows of a table (rmlib's one
    top/bottom selector: tables, charts, the explorer and rank differences use it).

    Works on a single-model score table (``score="score"``) or a wide table
    (``score`` = a model column; the index becomes a column). Returns the
    rows with two leading columns: ``end`` (``"top"``/``"bottom"``) and
    ``rank`` (1 = best for ``top``, 1 = worst for ``bottom``). Ties are
    broken by the ``tiebreak`` columns (ascending), then by table order;
    rows with a missing score are ignored. ``disjoint``: the bottom rows are
    chosen among the rows not in the top (a table shorter than ``2 n`` then
    shows each row once, as the charts need).
    """
    if n < 1:
        raise InputError(f"n must be positive, got {n}")
    tiebreak = list(tiebreak)
    for col in [score, *tiebreak]:
        if col not in table.columns:
            raise KeyError(f"no column {col!r} (columns: {list(table.columns)})")
    df = table if isinstance(table.index, pd.RangeIndex) else table.reset_index()
    df = df[df[score].notna()]
    by, later = [score, *tiebreak], [True] * len(tiebreak)
    top = df.sort_values(by, ascending=[False, *later], kind="stable").head(n)
    rest = df.drop(index=top.index) if disjoint else df
    bottom = rest.sort_values(by, ascending=[True, *later], kind="stable").head(n)
    parts = []
    for end, part in (("top", top), ("bottom", bottom)):
        part = part.copy()
        part.insert(0, "rank", range(1, len(part) + 1))
        part.insert(0, "end", end)
        parts.append(part)
    return pd.concat(parts, ignore_index=True)


def side_by_side(tables, n: int = 10, score: str = "score", key: str | None = None) -> pd.DataFrame:
    """The paper's side-by-side layout (Tables 2, A.1-A.9): one column per table.

    ``tables`` maps a column name to a score table (or a wide table with
    ``score`` naming one of its columns). Each column lists the strings
    (``key``; default ``decoded``, else the table's index) of the ``n``
    highest-scoring rows, then the ``n`` lowest with the lowest last. Rows are
    labelled ``top-1`` … ``top-n``, ``bottom-n`` … ``bottom-1``; a table with
    fewer rows leaves ``""``.
    """
    cols = {}
    for name, table in tables.items():
        ends = top_bottom(table, n=n, score=score)
        column = key or ("decoded" if "decoded" in ends.columns else ends.columns[2])
        top = ends.loc[ends["end"] == "top", column].tolist()
        bottom = ends.loc[ends["end"] == "bottom", column].tolist()[::-1]  # the lowest last
        cols[name] = top + [""] * (n - len(top)) + [""] * (n - len(bottom)) + bottom
    rows = [f"top-{r}" for r in range(1, n + 1)] + [f"bottom-{r}" for r in range(n, 0, -1)]
    return pd.DataFrame(cols, index=pd.Index(rows, name="rank"))


__all__ = ["side_by_side", "top_bottom"]
