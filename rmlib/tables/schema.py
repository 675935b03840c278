"""Column names of rmlib's tables, defined once (light: no imports).

* :data:`SCORE_COLUMNS`: one model's score table (``Scorer.score_tokens``,
  ``store.score_vocabulary``), one row per token id;
* :data:`LONG_COLUMNS`: the long models x prompts table
  (``results.score_models``), what :mod:`rmlib.viz.charts` takes.
"""

SCORE_COLUMNS = ("token_id", "token", "decoded", "score")
LONG_COLUMNS = ("model", "prompt", *SCORE_COLUMNS)

__all__ = ["LONG_COLUMNS", "SCORE_COLUMNS"]
