"""GCG, coordinate sweeps and GCG followed by a sweep polish, set side by side on the same prompts,
lengths and directions, against the best single token: one row per search setting."""

from __future__ import annotations

import dataclasses
from typing import Sequence

import pandas as pd

from ..engine.search import run
from ..engine.search_config import SearchConfig
from ..engine.shortlists import best_singles, build_shortlist
from ..engine.sweeps import search_tokens
from ..errors import InputError


def compare_methods(scorer, prompt: str, length: int, maximize: bool, config: SearchConfig | None = None, *,
                    singles: pd.DataFrame | None = None, vocabulary: Sequence[int] | None = None,
                    results: list | None = None) -> dict:
    """One row: GCG vs coordinate sweeps vs GCG + sweep polish vs the best single token.

    GCG starts from the best single token repeated (as the sweeps' first start does).
    ``both`` is a sweep started from GCG's best (GCG's own run is not repeated: its candidates and
    seconds are GCG's plus the polish's). Every result is checked for single-swap optimality
    (exhaustively over the allowed ``vocabulary`` for length <= 4). ``gap`` columns: how far each method's score is from the best of the three, in the
    search direction (``*_gap_pct``: in % of ``|best|``). ``results``: a list that gets the
    three :class:`~rmlib.engine.search.SearchResult` objects of this row (``{"gcg", "sweep", "both"}``).
    ``config``: every other setting (GCG's steps, ``restarts`` of the sweeps, the token filters, seed,
    budget, batch size); its ``method``, ``length`` and ``maximize`` are set here.
    """
    config = dataclasses.replace(config or SearchConfig(), length=length, maximize=maximize).validate()
    tokens = search_tokens(scorer, config.allowed, vocabulary)
    if singles is None:
        singles = best_singles(scorer, prompt, tokens)
    g = run(scorer, prompt, dataclasses.replace(config, method="gcg"), singles=singles, vocabulary=vocabulary)
    s = run(scorer, prompt, dataclasses.replace(config, method="sweep"), singles=singles, vocabulary=vocabulary)
    b = run(scorer, prompt, dataclasses.replace(config, method="sweep", restarts=1), start=g.best_ids,
            singles=singles, vocabulary=vocabulary)
    if results is not None:
        results.append({"gcg": g, "sweep": s, "both": b})
    sign = 1 if maximize else -1
    top = singles.iloc[0 if maximize else -1]
    best = sign * max(sign * g.best_score, sign * s.best_score, sign * b.best_score)
    row = {"prompt": prompt, "length": length, "direction": "max" if maximize else "min",
           "single_text": scorer.tokenizer.decode([int(top["token_id"])]), "single_score": float(top["score"]),
           "n_tokens": int(len(tokens))}
    for name, r, cands, secs in (("gcg", g, g.candidates_scored, g.seconds),
                                 ("sweep", s, s.candidates_scored, s.seconds),
                                 ("both", b, g.candidates_scored + b.candidates_scored, g.seconds + b.seconds)):
        gap = max(0.0, sign * (best - r.best_score))  # never -0.0
        row.update({f"{name}_text": r.best_text, f"{name}_ids": list(r.best_ids), f"{name}_score": r.best_score,
                    f"{name}_single_swap_optimal": r.local_optimum, f"{name}_gap": gap,
                    f"{name}_gap_pct": 100 * gap / max(abs(best), 1e-12),
                    f"{name}_candidates": int(cands + r.check_candidates), f"{name}_seconds": secs + r.check_seconds})
    row["sweep_restarts"] = len(s.runs)
    row["sweep_agreement"] = s.agreement
    row["checked"] = s.local_optimum_check if s.local_optimum is not None else g.local_optimum_check
    return row


def comparison_table(scorer, prompts: Sequence[str], lengths: Sequence[int] = (2, 3),
                     directions: Sequence[bool] = (True, False), config: SearchConfig | None = None, *,
                     shortlist: dict | None = None, shortlists: list | None = None,
                     vocabulary: Sequence[int] | None = None) -> pd.DataFrame:
    """:func:`compare_methods` for every prompt × length × direction, one row each (``config`` as there).

    The single-token scores are computed once per prompt and shared by its searches. With
    ``shortlist`` (keyword arguments of :func:`build_shortlist`), each prompt's searches run over
    its own shortlist (then ``vocabulary`` must not be given); ``shortlists``: a list that gets
    each prompt's :class:`Shortlist`.
    """
    if shortlist is not None and vocabulary is not None:
        raise InputError("give either shortlist= (built per prompt) or vocabulary=, not both")
    config = config or SearchConfig()
    rows = []
    for prompt in prompts:
        if shortlist is not None:
            sl = build_shortlist(scorer, prompt, allowed=config.allowed, **shortlist)
            if shortlists is not None:
                shortlists.append(sl)
            vocab, singles = sl.ids, sl.singles
        else:
            vocab, singles = vocabulary, best_singles(scorer, prompt, search_tokens(scorer, config.allowed, vocabulary))
        for length in lengths:
            for maximize in directions:
                rows.append(compare_methods(scorer, prompt, length, bool(maximize), config, singles=singles,
                                            vocabulary=vocab, results=None))
    return pd.DataFrame(rows)


__all__ = ["compare_methods", "comparison_table"]
