"""Multi-token search that reaches a single-swap optimum, and says how close it got and how sure it is.

One API, :func:`run` with a :class:`~rmlib.engine.search_config.SearchConfig` (the one config of every
method, GCG's steps included), runs one of three methods:

* ``"gcg"``: Greedy Coordinate Gradient (:mod:`rmlib.engine.gcg`) from one start (restarted under a budget).
* ``"sweep"``: exact **coordinate sweeps**. Fix every position but one, score
  every candidate token at that position with the scorer's batched,
  prefix-cached :meth:`Scorer.sequence_scores`, keep the best, go to the next
  position; repeat until ``length`` scans in a row change nothing. The end is a
  point that no single swap improves (over the candidates scanned).
* ``"both"``: GCG first, then sweeps starting from GCG's best (a final polish),
  plus the remaining restarts.

Restarts (``restart_policy="anytime"``, the default). The first sweep starts from the
best single token repeated (``init="singles"``), a random sequence (``init="random"``), a
given ``start``, or GCG's best (``"both"``); the next ones alternate between sequences drawn
(seeded) from the best single tokens in the search's direction (the best 4, then 8, 16, ...)
and seeded random sequences, never a start already used. Without a budget, ``restarts``
sweeps run; with ``budget_seconds``, restarts go on until the budget is spent (GCG, in
``"both"``, gets at most ``GCG_BUDGET_SHARE`` of it; GCG alone restarts too, from starts
drawn the same way, each run getting what is left), or until every sequence the search may return has
been scored (``stop_reason="space exhausted"``: the best is then the global optimum; a
one-token search over every allowed token is exhausted by its first sweep). ``restart_policy="fixed"`` is the
earlier rule: exactly ``restarts`` starts, the first from ``init`` or GCG's best, the others
random, the budget only cutting them short.

How sure. A search whose restarts end at different values found local optima, and a
reader cannot tell a global optimum from a lucky local one without knowing how often the
restarts agreed. Every result records the restarts that ran to their end
(``restarts_run``), how many of them ended at the best value found, within
``agreement_tol · max(1, |best|)`` (``restarts_at_best``), their end values
(``restart_scores``) and their spread; :attr:`SearchResult.agreement` says it in words
("k of n restarts reached this value"). A restart cut short by the budget or Ctrl-C is not
counted (its row in ``runs`` says so).

Candidates per position. Up to ``EXHAUSTIVE_MAX_LEN`` (4) tokens, every allowed
token of the vocabulary (a scan costs V candidates, a pass L × V). Longer
responses (the paper's 19–20 tokens) scan a **shortlist** per position instead:
the ``shortlist`` tokens that the score's gradient at the current sequence ranks
best for that position (GCG's proposals), scored exactly. Every result says which
(``candidates_per_position``).

How close. Every :class:`SearchResult` records the method, the starts, the
budget spent (candidates scored, wall time), the time to the first local
optimum, and whether the reported sequence is a **single-swap local optimum**:
for ``length <= 4`` this is checked exhaustively over the allowed vocabulary
(free when the final scans of a sweep already covered every swap, otherwise an
explicit scan of all L × V swaps, reported apart as ``check_candidates``). A swap
counts as an improvement only if it beats the sequence by more than
``tol · max(1, |score|)`` (float noise between batches is not an improvement). A better
swap the check finds is taken and the check runs again, so a checked answer is always a
single-swap optimum (``check_swaps_taken`` counts the swaps taken).
The reported ``best_score`` is a fresh re-score of ``best_ids`` alone.

A search remembers the scores it has computed: a scan that meets a sequence again (the
current one, or the last scans of a restart that ends where an earlier one did) reads it
back (``candidates_reused``) instead of scoring it (``candidates_scored``). The caller's
scorer is never changed: a search that needs another batch size scores through a shallow
copy of it.

Tables (:mod:`rmlib.engine.search_tables`). :func:`results_table` (one row per search: its answer, single-swap check, restarts'
agreement, GCG's answer beside it), :func:`restarts_table` (one row per restart),
:func:`shortlist_table` and :func:`extreme_singles` (a shortlist's best and worst single
tokens, as one-token answers).

The parts: :mod:`~rmlib.engine.search_config` (the settings), :mod:`~rmlib.engine.sweeps` (the
scoring state, the sweeps, the single-swap check), :mod:`~rmlib.engine.restarts` (starts, GCG runs,
restarts), :mod:`~rmlib.engine.shortlists`, :mod:`~rmlib.engine.search_tables`, and
:mod:`~rmlib.engine.scorer_batches` (the batch size a search scores with).

``Ctrl-C`` (KeyboardInterrupt) during a search ends it with the best sequence so
far (``stop_reason="interrupted"``, not checked).
"""

from __future__ import annotations

import dataclasses
import json
import pathlib
from typing import Sequence

import numpy as np
import pandas as pd

from ..errors import InputError
from ..files import atomic_write
from . import gcg as _gcg
from .restarts import (SPACE_EXHAUSTED, SearchSpace, first_start, gcg_restarts, gcg_run_row, run_gcg, search_space,
                       sweeps_from)
from .scorer_batches import search_batch_size, with_batch_size
from .search_config import EXHAUSTIVE_MAX_LEN, SearchConfig
from .search_tables import restart_agreement
from .sweeps import BudgetSpent, SearchState, single_swap_check

__all__ = ["SearchResult", "run"]


@dataclasses.dataclass
class SearchResult:
    """The outcome of one search; ``best_score`` is a fresh re-score of ``best_ids``.

    ``local_optimum`` is True/False when checked (``local_optimum_check`` says how), None when
    not. ``better_swap`` names an improving single swap when one was found. ``runs`` has one
    row per start (the GCG run and each sweep). ``restart_scores``: the end values of the
    restarts (the sweeps) that ran to their end, in the order they ran (none for GCG alone); ``restarts_at_best`` of them are within ``config.agreement_tol`` of the
    best value found (:attr:`agreement`); ``restart_spread``: how far apart they ended.
    """

    prompt: str
    method: str
    maximize: bool
    length: int
    best_ids: list[int]
    best_text: str
    best_score: float
    search_score: float  # the score as found inside a batch (equals best_score up to float noise)
    start_ids: list[int]
    start_text: str
    start_kind: str  # "given", "singles" or "random"
    candidates_per_position: str
    local_optimum: bool | None
    local_optimum_check: str
    better_swap: dict | None
    candidates_scored: int
    seconds: float
    time_to_local_optimum: float | None
    check_candidates: int
    check_seconds: float
    stop_reason: str  # "converged", "max_passes", "budget", "space exhausted", "every start tried", "interrupted",
    # "gcg: <GCG's stop reason>" (one GCG run, no budget)
    runs: pd.DataFrame
    config: SearchConfig
    provenance: dict
    gcg_result: object | None = None
    restarts_run: int = 0
    restarts_at_best: int = 0
    restart_scores: list = dataclasses.field(default_factory=list)
    restart_spread: float | None = None
    candidates_reused: int = 0  # sequences a scan met again, read back instead of scored (not in candidates_scored)
    check_swaps_taken: int = 0  # better single swaps the check found and took (the answer is then theirs)

    @property
    def direction(self) -> str:
        return "max" if self.maximize else "min"

    @property
    def agreement(self) -> str:
        """The restarts' agreement in words: "k of n restarts reached this value (within ...)"."""
        if self.method == "gcg" and len(self.runs) < 2:
            return "GCG alone: no restarts"
        if not self.restarts_run:
            return "no restart ran to its end"
        what = "GCG run" if self.method == "gcg" else "restart"
        return (f"{self.restarts_at_best} of {self.restarts_run} {what}{'s' if self.restarts_run != 1 else ''} "
                f"reached this value (within {self.config.agreement_tol:g} relative)")

    def summary(self) -> dict:
        """One row for a results table (JSON-able)."""
        return {
            "prompt": self.prompt, "method": self.method, "direction": self.direction, "length": self.length,
            "best_text": self.best_text, "best_score": self.best_score, "best_ids": list(self.best_ids),
            "local_optimum": self.local_optimum, "local_optimum_check": self.local_optimum_check,
            "start_kind": self.start_kind, "start_text": self.start_text, "start_ids": list(self.start_ids),
            "candidates_per_position": self.candidates_per_position,
            "candidates_scored": self.candidates_scored, "candidates_reused": self.candidates_reused,
            "seconds": round(self.seconds, 3),
            "time_to_local_optimum": None if self.time_to_local_optimum is None else round(self.time_to_local_optimum, 3),
            "check_candidates": self.check_candidates, "check_seconds": round(self.check_seconds, 3),
            "check_swaps_taken": self.check_swaps_taken,
            "stop_reason": self.stop_reason, "runs": len(self.runs),
            "restarts_run": self.restarts_run, "restarts_at_best": self.restarts_at_best,
            "restart_spread": self.restart_spread, "agreement": self.agreement,
        }

    def to_dict(self) -> dict:
        """Everything needed to reproduce and judge the result (JSON-able)."""
        out = self.summary()
        out.pop("runs")
        out.update(search_score=self.search_score, better_swap=self.better_swap, restart_scores=list(self.restart_scores),
                   config=_jsonable(dataclasses.asdict(self.config)),
                   runs=_jsonable(self.runs.to_dict(orient="records")), provenance=_jsonable(self.provenance))
        return out

    def save_json(self, path) -> None:
        """Write :meth:`to_dict` to ``path`` (whole or not at all: :func:`rmlib.files.atomic_write`)."""
        atomic_write(path, json.dumps(self.to_dict(), indent=2, ensure_ascii=False))


def is_search_result(path) -> bool:
    """Whether the file at ``path`` is a search result rmlib wrote (:meth:`SearchResult.save_json`): the one
    kind of file ``rmlib search --out`` replaces."""
    try:
        data = json.loads(pathlib.Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return (isinstance(data, dict) and {"config", "runs", "provenance"} <= data.keys()
            and isinstance(data["provenance"], dict) and "rmlib_version" in data["provenance"])


def _jsonable(x):
    if isinstance(x, dict):
        return {str(k): _jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_jsonable(v) for v in x]
    if isinstance(x, np.generic):
        return x.item()
    if isinstance(x, float) and not np.isfinite(x):
        return None
    return x


def run(scorer, prompt: str, config: SearchConfig | None = None, start: str | Sequence[int] | None = None,
        singles: pd.DataFrame | None = None, vocabulary: Sequence[int] | None = None) -> SearchResult:
    """Search the ``config.length``-token response that maximizes (or minimizes) the score.

    ``scorer``: any rmlib scorer (``classifier``, ``logprob``, ``implicit``); it is not changed.
    ``start``: the first start (a string or ids; default from ``config.init``). ``singles``: a
    :func:`rmlib.engine.shortlists.best_singles` table to reuse (saves one vocabulary scan per call). ``vocabulary``:
    search only these token ids (those the filters allow; e.g. a word list, or a small set in
    tests); sweeps, their restarts and the single-swap check then run over them. See the module
    docstring for the methods, the restarts and what the result records.
    """
    config = dataclasses.replace(config or SearchConfig()).validate()
    _gcg.scorer_parts(scorer)
    if not isinstance(prompt, str) or not prompt.strip():
        raise InputError("prompt must be a non-empty string")
    space = search_space(scorer, config, vocabulary)
    scorer = with_batch_size(scorer, search_batch_size(scorer, config.batch_size))  # a copy when the size changes
    rng = np.random.default_rng(config.seed)
    runs: list[dict] = []
    gcg_result = None
    first, start_kind = [], "given"
    with SearchState(scorer, prompt, config) as state:
        try:
            first, start_kind, first_score, singles = first_start(state, space, start, singles, rng)
            sweep_first = (start_kind, first, first_score)
            if config.method in ("gcg", "both"):
                gcg_result = run_gcg(state, first, space.tokens if vocabulary is not None else None)
                runs.append(gcg_run_row(start_kind, first, gcg_result))
                sweep_first = ("gcg", list(gcg_result.best_ids), gcg_result.best_score)
            if config.method in ("sweep", "both"):
                stop_reason = sweeps_from(state, space, sweep_first, singles, rng, runs)
            else:
                stop_reason, gcg_result = gcg_restarts(state, space, first, gcg_result, singles, rng, runs,
                                                       vocabulary)
        except BudgetSpent:
            stop_reason = "budget"
        except KeyboardInterrupt:
            if state.best is None:  # nothing scored yet: nothing to keep
                raise
            stop_reason = "interrupted"
        return _finish(state, space, runs, stop_reason, first, start_kind, gcg_result)


def _finish(state: SearchState, space: SearchSpace, runs: list, stop_reason: str, first, start_kind: str,
            gcg_result) -> SearchResult:
    """Fresh re-score of the best, the single-swap check, the agreement of the restarts, the result."""
    scorer, prompt, config = state.scorer, state.prompt, state.config
    tokens, shortlist = space.tokens, space.shortlist
    tok = scorer.tokenizer
    seconds = state.elapsed()
    best = list(state.best)
    search_score = state.best_score

    # How close: is the best a single-swap local optimum?
    converged_here = [r for r in runs if r.get("converged") and list(r["end_ids"]) == best]
    exhaustive = config.check == "always" or (config.check == "auto" and config.length <= EXHAUSTIVE_MAX_LEN)
    check_candidates, check_seconds, better_swap, taken = 0, 0.0, None, 0
    if stop_reason == "interrupted":
        local, how = None, "not checked (interrupted)"
    elif stop_reason == SPACE_EXHAUSTED:
        local, how = True, f"exhaustive (every one of the {len(tokens)}^{config.length} sequences was scored)"
    elif converged_here and shortlist is None:
        local, how = True, "exhaustive (the sweep's last scans covered every single swap)"
    elif exhaustive:
        try:
            while True:  # a better swap the check finds is taken: the answer is a single-swap optimum
                chk = single_swap_check(scorer, prompt, best, tokens, config.maximize, config.tol, config.progress)
                check_candidates, check_seconds = check_candidates + chk["candidates"], check_seconds + chk["seconds"]
                if chk["local_optimum"]:
                    break
                best, search_score, taken = list(chk["better_swap"]["ids"]), float(chk["better_swap"]["score"]), taken + 1
        except KeyboardInterrupt:  # Ctrl-C during the check: keep the result, say it is unchecked
            local, how = None, "not checked (interrupted during the check)"
        else:
            local = True
            how = f"exhaustive check of {config.length} x {len(tokens)} swaps"
            if taken:
                how += f" (it found {taken} better swap{'s' if taken > 1 else ''} of the search's answer and took them)"
    elif converged_here:
        local, how = None, f"not checked exhaustively (optimal only among the shortlists; length > {EXHAUSTIVE_MAX_LEN})"
    else:
        local, how = None, f"not checked (length > {EXHAUSTIVE_MAX_LEN}; use check='always')"
    best_score = float(scorer.sequence_scores(prompt, [best])[0])  # fresh, alone in its batch
    firsts = [r["seconds_to_converge"] for r in runs if r.get("seconds_to_converge") is not None]
    ends, at_best = restart_agreement(runs, config.method, search_score, config.agreement_tol)

    try:
        prov = dict(scorer.provenance(prompt, "token"))
    except Exception:  # a scorer without provenance facts still searches
        prov = {"prompt": prompt}
    prov.update(search=config.method, allowed=space.filters, n_allowed=int(len(tokens)))
    return SearchResult(
        prompt=prompt, method=config.method, maximize=config.maximize, length=config.length, best_ids=best,
        best_text=tok.decode(best), best_score=best_score, search_score=search_score, start_ids=list(first),
        start_text=tok.decode(list(first)), start_kind=start_kind, candidates_per_position=space.per_position,
        local_optimum=local, local_optimum_check=how, better_swap=better_swap, candidates_scored=state.n_scored,
        seconds=seconds, time_to_local_optimum=min(firsts) if firsts else None, check_candidates=check_candidates,
        check_seconds=check_seconds, stop_reason=stop_reason, runs=pd.DataFrame(runs), config=config,
        provenance=prov, gcg_result=gcg_result, restarts_run=len(ends), restarts_at_best=int(at_best),
        restart_scores=ends, restart_spread=float(max(ends) - min(ends)) if ends else None,
        candidates_reused=state.n_reused, check_swaps_taken=taken,
    )
