"""Kept for readers of earlier versions: scoring lives in :mod:`rmlib.engine` now
(``frames``, ``kernel``, ``scorers``). ``rmlib.scoring.load_scorer`` keeps working."""

from .engine.frames import TEMPLATES, ChatFrame, TemplateSplitError, chat_frame  # noqa: F401
from .engine.kernel import PrefixKernel  # noqa: F401
from .engine.scorers import ImplicitRewardScorer, NonFiniteScoreError, Scorer, load_scorer  # noqa: F401
