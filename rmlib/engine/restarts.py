"""Where a search starts and starts again: the first start (given, the best single token repeated,
or random), GCG's runs within the budget, and the restarts (``restart_policy``: ``"anytime"``, diverse
starts until the budget is spent or every sequence is scored; ``"fixed"``) of the sweeps and of GCG alone."""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd

from ..errors import InputError
from . import gcg as _gcg
from .search_config import GCG_BUDGET_SHARE, SearchConfig
from .sweeps import MAX_KNOWN, SearchState, embedding_rows, search_tokens, sweep

#: Consecutive already-used starts drawn before the search concludes that no new start is left.
MAX_REPEATED_STARTS = 200
#: The stop reason of a search that scored every sequence it may return (its best is the global optimum).
SPACE_EXHAUSTED = "space exhausted"


def start_of(scorer, start, length: int) -> list[int]:
    ids = _gcg.start_token_ids(scorer, start)
    if len(ids) != length:
        raise InputError(f"the start has {len(ids)} tokens ({scorer.tokenizer.decode(ids)!r}) but length={length}: "
                         "give a start of exactly `length` tokens, or leave it out")
    return ids


@dataclasses.dataclass(frozen=True)
class SearchSpace:
    """What a search may put at each position: the allowed token ids, as a mask over the embedding
    rows too, how the filters chose them, and what each position's scan covers."""

    tokens: np.ndarray
    mask: np.ndarray
    filters: str
    shortlist: int | None
    per_position: str


def search_space(scorer, config: SearchConfig, vocabulary) -> SearchSpace:
    tokens = search_tokens(scorer, config.allowed, vocabulary, config.allow_special_tokens)
    filters = f"allowed={config.allowed!r}, allow_special_tokens={config.allow_special_tokens}"
    if vocabulary is not None:
        filters += f", vocabulary of {len(tokens)} ids"
    mask = np.zeros(embedding_rows(scorer), dtype=bool)
    mask[tokens] = True
    shortlist = config.shortlist_size()
    per_position = (f"all allowed tokens ({len(tokens)})" if shortlist is None
                    else f"shortlist of {shortlist} gradient-ranked tokens (GCG proposals), scored exactly")
    return SearchSpace(tokens, mask, filters, shortlist, per_position)


def first_start(state: SearchState, space: SearchSpace, start, singles, rng) -> tuple[list[int], str, float, object]:
    """The first start (given, the best single token repeated, or random) and its score, offered as the
    best so far; and the singles table (scanned here for ``init="singles"``, reused by the restarts)."""
    config = state.config
    if start is not None:
        first, start_kind = start_of(state.scorer, start, config.length), "given"
        _gcg.check_start_allowed(state.scorer.tokenizer, first, space.mask, space.filters)
    elif config.init == "singles":
        singles = singles_in(state, space.tokens, singles, budget=False)  # before anything is kept
        top = int(singles["token_id"].iloc[0 if config.maximize else -1])
        first, start_kind = [top] * config.length, "singles"
    else:
        first, start_kind = rng.choice(space.tokens, config.length).tolist(), "random"
    first_score = float(state.score(np.asarray([first]), budget=False)[0])
    state.offer(first, first_score)
    return first, start_kind, first_score, singles


def gcg_run_row(start_kind: str, first: list[int], result) -> dict:
    """GCG's row of the search's runs table."""
    return {"run": "gcg", "start_kind": start_kind, "start_ids": list(first), "start_score": result.start_score,
            "end_ids": list(result.best_ids), "end_score": result.best_score, "converged": None, "passes": None,
            "scans": result.steps, "moves": None, "candidates": result.n_evaluated, "seconds": result.seconds,
            "seconds_to_converge": None, "stop": result.stop_reason}


def sweeps_from(state: SearchState, space: SearchSpace, sweep_first: tuple, singles, rng, runs: list) -> str:
    """The sweeps from ``sweep_first`` and their restarts (``config.restart_policy``); the stop reason."""
    config = state.config
    if config.restart_policy == "fixed":
        starts = _fixed_starts(sweep_first, space.tokens, rng, config)
    else:
        starts = _anytime_starts(sweep_first, space.tokens, rng, config,
                                 lambda: singles_in(state, space.tokens, singles))
    return _restarts(state, starts, space.tokens, space.mask, space.shortlist, runs)


def singles_in(state: SearchState, tokens: np.ndarray, singles: pd.DataFrame | None, budget: bool = True) -> pd.DataFrame:
    """The single-token scores of ``tokens`` (best first): the given table restricted to them, else one
    scan (counted; within the budget when ``budget``)."""
    if singles is None:
        scores = state.score(tokens[:, None], budget=budget)
        order = np.argsort(-scores, kind="stable")
        singles = pd.DataFrame({"token_id": tokens[order], "score": scores[order]})
    singles = singles[np.isin(singles["token_id"], tokens)]
    if not len(singles):
        raise InputError("the singles table has no allowed token: pass singles=None")
    return singles


def run_gcg(state: SearchState, first: list[int], vocabulary) -> object:
    """GCG from ``first``, within the budget (``anytime``: at most ``GCG_BUDGET_SHARE`` of it)."""
    config = state.config
    gcfg = config
    left = state.left()
    if left is not None:  # the run's own budget: what the search has left
        if config.restart_policy == "anytime" and config.method == "both":
            left = min(left, GCG_BUDGET_SHARE * config.budget_seconds)
        gcfg = dataclasses.replace(config, budget_seconds=max(left, 1e-3))
    result = _gcg.descend(state.scorer, state.prompt, first, gcfg, vocabulary=vocabulary, evaluated=state.covered)
    if state.covered is not None and len(state.covered) > MAX_KNOWN:
        state.covered = None
    state.n_scored += result.n_evaluated
    state.bar.update(result.n_evaluated)
    state.offer(result.best_ids, result.best_score)
    return result


def _fixed_starts(sweep_first: tuple, tokens: np.ndarray, rng, config: SearchConfig):
    """``restart_policy="fixed"``: the first start, then ``restarts - 1`` random ones."""
    yield sweep_first
    for _ in range(config.restarts - 1):
        yield "random", rng.choice(tokens, config.length).tolist(), None


def _anytime_starts(sweep_first: tuple, tokens: np.ndarray, rng, config: SearchConfig, get_singles):
    """``restart_policy="anytime"``: the first start, then, alternating without end, sequences
    drawn from the best single tokens (the best one repeated, then the best 4, 8, 16, ...) and
    random ones (the caller skips starts already used and decides when to stop)."""
    yield sweep_first
    j, order = 0, None
    while True:
        if order is None:  # best first in the search's direction (a scan of the tokens if not known yet)
            order = get_singles()["token_id"].to_numpy()
            order = order if config.maximize else order[::-1]
        if j == 0:
            yield "singles", [int(order[0])] * config.length, None
        else:
            top = order[:min(len(order), 2 ** (j + 1))]
            yield f"singles (best {len(top)})", rng.choice(top, config.length).tolist(), None
        j += 1
        yield "random", rng.choice(tokens, config.length).tolist(), None


def _restarts(state: SearchState, starts, tokens: np.ndarray, mask: np.ndarray, shortlist, runs: list) -> str:
    """Sweeps from ``starts`` until the restarts are done or the budget is spent; the stop reason."""
    config = state.config
    anytime, budget = config.restart_policy == "anytime", config.budget_seconds
    seen: set = set()
    repeated = n = 0
    while True:
        if (budget is None or not anytime) and n >= config.restarts:
            break
        if anytime and budget is not None and state.left() <= 0:
            return "budget"
        kind, s, s_score = next(starts)  # drawn only when a restart will run (a draw may scan the singles)
        if anytime and tuple(s) in seen:
            repeated += 1
            if repeated > MAX_REPEATED_STARTS:
                return "every start tried"
            continue
        repeated = 0
        seen.add(tuple(s))
        row = sweep(state, s, tokens, mask, shortlist, s_score)
        runs.append({"run": f"sweep {n}", "start_kind": kind, **row})
        n += 1
        if row["stop"] in ("budget", "interrupted"):
            return row["stop"]
        if state.exhausted(len(tokens)):
            return SPACE_EXHAUSTED
    return "converged" if any(r.get("converged") for r in runs) else "max_passes"


def gcg_restarts(state: SearchState, space: SearchSpace, first: list[int], result, singles, rng, runs: list,
                  vocabulary) -> tuple[str, object]:
    """GCG alone under a budget (``anytime``): GCG runs from new starts until the budget is spent or every
    sequence has been scored; (the stop reason, the best GCG run). Without a budget: the one run."""
    config = state.config
    best, reason = result, f"gcg: {result.stop_reason}"
    if config.budget_seconds is None or config.restart_policy != "anytime":
        return reason, best
    starts = _anytime_starts(("gcg", first, None), space.tokens, rng, config,
                             lambda: singles_in(state, space.tokens, singles))
    next(starts)  # the first start, already run
    seen, repeated, n = {tuple(first)}, 0, 1
    while True:
        if state.exhausted(len(space.tokens)):
            return SPACE_EXHAUSTED, best
        if state.left() <= 0:
            return "budget", best
        kind, s, _ = next(starts)
        if tuple(s) in seen:
            repeated += 1
            if repeated > MAX_REPEATED_STARTS:
                return "every start tried", best
            continue
        repeated = 0
        seen.add(tuple(s))
        state.offer(s, float(state.score(np.asarray([s]), budget=False)[0]))
        run = run_gcg(state, s, space.tokens if vocabulary is not None else None)
        runs.append({**gcg_run_row(kind, s, run), "run": f"gcg {n}"})
        n += 1
        if state.sign * (run.best_score - best.best_score) > 0:
            best = run
