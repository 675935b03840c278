"""Kept for readers of earlier versions: the score store is :mod:`rmlib.tables.store`."""

from .tables.store import *  # noqa: F401,F403
from .tables.store import import_paper_csv, load_scores, score_texts, score_vocabulary  # noqa: F401
