"""Column names of rmlib's tables, defined once (light: no imports).

* :data:`SCORE_COLUMNS`: one model's score table (``Scorer.score_tokens``,
  ``store.score_vocabulary``), one row per token id;
* :data:`LONG_COLUMNS`: the long models x prompts table
  (``rmlib.runs.scoring.score_models``), what :mod:`rmlib.viz.charts` takes.
"""

from ..errors import InputError

SCORE_COLUMNS = ("token_id", "token", "decoded", "score")
LONG_COLUMNS = ("model", "prompt", *SCORE_COLUMNS)



def check_columns(df, columns, what: str, *, hint: str = "", allow_empty: bool = True) -> None:
    """A TypeError unless ``df`` is a DataFrame, a ValueError naming the missing ``columns``
    (with ``hint``: how to make such a table), and with ``allow_empty=False`` one for no rows."""
    import pandas as pd

    if not isinstance(df, pd.DataFrame):
        raise TypeError(f"{what} must be a pandas DataFrame, got {type(df).__name__}")
    missing = [c for c in columns if c not in df.columns]
    if missing:
        raise InputError(f"{what}: missing columns {missing}; it needs {list(columns)}, got {list(df.columns)}"
                         + (f"; {hint}" if hint else ""))
    if not allow_empty and df.empty:
        raise InputError(f"{what}: the table is empty")


__all__ = ["LONG_COLUMNS", "SCORE_COLUMNS", "check_columns"]
