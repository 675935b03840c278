"""Many searches as one cached computation: every prompt × length × direction under one setting.

:func:`search_grid` runs :func:`rmlib.engine.search.run` for each prompt, response length and
direction (optimal, then pessimal) with one :class:`~rmlib.engine.search_config.SearchConfig`, each
prompt over its own stated candidates when ``shortlists`` gives them (a
:class:`~rmlib.engine.shortlists.Shortlist` per prompt, whose single-token scores also give the
first start). The searches are deterministic for their inputs (GCG's greedy sampling, seeded
restarts), so the results go through the result cache (:mod:`rmlib.tables.memo`): a second run
with the same scorer, prompts, candidates and settings reads them back, and the returned
:class:`~rmlib.tables.memo.Memo` says so and keeps the original computation's seconds. Never
stored: a search under a time budget (its result depends on the machine's speed) and one
stopped by Ctrl-C.

The results become tables with :func:`rmlib.engine.search_tables.results_table` (one row per search)
and :func:`rmlib.engine.search_tables.restarts_table` (one row per restart).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence

from ..engine import gcg
from ..engine.search import run
from ..engine.search_config import GCG_REVISION, SEARCH_REVISION, SearchConfig
from ..engine.shortlists import build_shortlist
from ..errors import InputError
from ..options import vocab_slice
from ..tables import memo as rmemo
from ..tables import results
from .scoring import score_models

__all__ = ["SEARCH_GRID_VERSION", "search_grid", "grid_facts"]

#: Bumped when what :func:`search_grid` computes changes (part of its result-cache key).
SEARCH_GRID_VERSION = 1


def _shortlist_ids(shortlists: Mapping | None, prompts: Sequence[str]) -> dict | None:
    if shortlists is None:
        return None
    missing = [p for p in prompts if p not in shortlists]
    if missing:
        raise InputError(f"shortlists has no entry for the prompt(s) {missing}: give one per prompt, or none")
    return {p: [int(i) for i in shortlists[p].ids] for p in prompts}


def grid_facts(scorer, prompts: Sequence[str], lengths: Sequence[int], config, directions: Sequence[bool],
               shortlists: Mapping | None, start_word: str | None = None) -> dict | None:
    """Everything the searches depend on (the result-cache key's facts), or None when they cannot be
    cached: a scorer without provenance, or a time budget (the result would depend on the machine's speed)."""
    who = rmemo.scorer_facts(scorer, prompts)
    if who is None or config.budget_seconds is not None:
        return None
    return {"scorer": who, "prompts": list(prompts), "lengths": [int(n) for n in lengths],
            "directions": [bool(d) for d in directions], "config": dataclasses.replace(config, progress=False),
            "candidates": _shortlist_ids(shortlists, prompts), "start_word": start_word,
            "search_revision": SEARCH_REVISION, "gcg_revision": GCG_REVISION}


def search_grid(scorer, prompts: Sequence[str], lengths: Sequence[int], config=None, *,
                shortlists: Mapping | None = None, directions: Sequence[bool] = (True, False),
                start_word: str | None = None, cache: bool = True, recompute: bool | None = None) -> tuple[list, rmemo.Memo]:
    """``(results, memo)``: one :class:`~rmlib.engine.search.SearchResult` per prompt, length and
    direction (in that nesting order; ``config.length`` and ``config.maximize`` are set for each).

    ``shortlists``: ``{prompt: Shortlist}``; each prompt's searches then run over its shortlist
    (``vocabulary``) and start from its single-token scores. ``start_word``: every search starts
    from this word repeated (nanoGCG's ``x x x ...``; its first ``length`` tokens) instead of
    ``config.init``. ``cache=False`` skips the result
    cache; ``recompute=True`` (or ``RMLIB_RECOMPUTE=1``) searches afresh and overwrites the record.
    """
    config = config or SearchConfig()
    prompts, lengths, directions = list(prompts), list(lengths), [bool(d) for d in directions]
    _shortlist_ids(shortlists, prompts)  # a missing prompt fails before any search

    def compute():
        out = []
        for prompt in prompts:
            sl = None if shortlists is None else shortlists[prompt]
            for length in lengths:
                for maximize in directions:
                    cfg = dataclasses.replace(config, length=int(length), maximize=maximize)
                    start = None if start_word is None else gcg.repeated_word_ids(scorer.tokenizer, start_word, length)
                    out.append(run(scorer, prompt, cfg, start=start, singles=None if sl is None else sl.singles,
                                   vocabulary=None if sl is None else sl.ids))
        return out

    facts = grid_facts(scorer, prompts, lengths, config, directions, shortlists, start_word)
    return rmemo.cached("searches.search_grid", SEARCH_GRID_VERSION, facts, compute, recompute=recompute,
                        keep=lambda results: not any(r.stop_reason == "interrupted" or "interrupted" in
                                                     r.local_optimum_check for r in results),
                        enabled=cache)


def stored_shortlists(scorer, model: str, pools: Sequence[str] | Mapping[str, str], *, token_ids="words",
                      full_vocab: Mapping[str, int] | None = None, k: int = 100, n_random: int = 56, seed: int = 0,
                      allowed: str = "ascii", **load_kwargs) -> dict:
    """``{prompt: Shortlist}`` for the searches of ``scorer`` (the loaded ``model``), each prompt's
    candidates chosen from the single-token scores of its pool prompt (``pools``: ``{prompt: pool
    prompt}``, or a list of prompts, each its own pool).

    The scores are :func:`rmlib.runs.scoring.score_models` of ``model`` for the pool prompts, in
    order, with ``token_ids`` and ``full_vocab`` as there (the arguments chapter 1 scored with read its
    tables back from the score store; tables not there yet are scored and stored);
    ``load_kwargs`` go to its ``load_scorer``. Then :func:`rmlib.engine.shortlists.build_shortlist`
    takes the ``k`` best and ``k`` worst allowed tokens plus ``n_random`` more (seeded); each
    shortlist's ``source`` says which table and subset its scores came from.
    """
    pools = dict(pools) if isinstance(pools, Mapping) else {p: p for p in pools}
    pool_prompts = list(dict.fromkeys(pools.values()))
    scored = score_models([model], pool_prompts, token_ids=vocab_slice(token_ids)
                          if isinstance(token_ids, str) else token_ids, progress=False,
                          full_vocab={model: dict(full_vocab or {}).get(model, 0)}, **load_kwargs)
    subset = {p["prompt"]: p["vocab_subset"] for p in scored.attrs["provenance"]}
    singles = results.tables(scored, "prompt")
    return {p: build_shortlist(scorer, p, k=k, n_random=n_random, seed=seed, allowed=allowed, singles=singles[q],
                               source=f"read from the score store ({subset[q]}, prompt {q!r})")
            for p, q in pools.items()}


__all__ += ["stored_shortlists"]
