"""Hostile vocabulary strings and a stand-in scorer, to show (and test) that every page escapes them.

Used by the appendix chapter on rendering untrusted strings: each string in
:data:`HOSTILE` would do damage if pasted into a page unescaped.
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence

import numpy as np
import pandas as pd

__all__ = ["HOSTILE", "ORDINARY", "VOCAB", "hostile_scores", "RandomScorer"]

HOSTILE = [
    "<table>",
    "</table>",
    "</script>",
    "<script>window.__pwned=1;alert(1)</script>",
    '"><img/src=x/onerror=window.__pwned=1;alert(1)>',
    "<svg/onload=window.__pwned=1>",
    "<img src=x onerror=alert(1)>",
    "{{x}}",
    "${x}",
    "javascript:alert(1)",
    "<!--",
    "]]>",
    "&amp;",
    " the",
    "\n",
    "\t",
    "",
    "\u200b",
    "\u202eevil",
    "<b>bold?</b>",
    "'; DROP TABLE tokens; --",
]
ORDINARY = ["pizza", "▁sushi", " bread", "soup", "Ġcake", "rice", "salad", "noodles"]
VOCAB = HOSTILE + ORDINARY


def hostile_scores(models: Sequence[str], prompts: Sequence[str], seed: int = 0) -> pd.DataFrame:
    """A long score table (``rmlib.tables.results.LONG_COLUMNS``) over :data:`VOCAB`: standard normal
    scores, seeded, for every model and prompt (in that order)."""
    rng = np.random.default_rng(seed)
    rows = []
    for m in models:
        for p in prompts:
            rows.append(pd.DataFrame({"model": m, "prompt": p, "token_id": np.arange(len(VOCAB)),
                                      "token": VOCAB, "decoded": VOCAB, "score": rng.normal(size=len(VOCAB))}))
    return pd.concat(rows, ignore_index=True)


class RandomScorer:
    """Stand-in for the scoring engine (same ``score_tokens`` interface): random scores over :data:`VOCAB`,
    the same for the same (model, prompt) in every process (seeded by a CRC of the two, not by
    ``hash``, which Python salts per process: the appendix page's tables changed from build to build)."""

    def __init__(self, model: str):
        self.model = model

    def score_tokens(self, prompt: str, token_ids=None) -> pd.DataFrame:
        r = np.random.default_rng(zlib.crc32(f"{self.model}\x00{prompt}".encode("utf-8")))
        return pd.DataFrame({"token_id": np.arange(len(VOCAB)), "token": VOCAB,
                             "decoded": VOCAB, "score": r.normal(size=len(VOCAB))})
