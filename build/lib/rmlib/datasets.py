"""Kept for readers of earlier versions: public data is :mod:`rmlib.tables.datasets`."""

from .tables.datasets import *  # noqa: F401,F403
from .tables.datasets import afinn111, bing_lexicon, bnc_frequencies, eloeverything, fetch  # noqa: F401
