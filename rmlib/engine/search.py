"""Multi-token search that reaches a single-swap optimum, and says how close it got and how sure it is.

One API, :func:`search` with a :class:`SearchConfig`, runs one of three methods:

* ``"gcg"``: Greedy Coordinate Gradient (:mod:`rmlib.engine.gcg`) from one start.
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

Tables. :func:`results_table` (one row per search: its answer, single-swap check, restarts'
agreement, GCG's answer beside it), :func:`restarts_table` (one row per restart),
:func:`shortlist_table` and :func:`extreme_singles` (a shortlist's best and worst single
tokens, as one-token answers).

``Ctrl-C`` (KeyboardInterrupt) during a search ends it with the best sequence so
far (``stop_reason="interrupted"``, not checked).
"""

from __future__ import annotations

import copy
import dataclasses
import json
import time
from typing import Mapping, Sequence

import numpy as np
import pandas as pd

from ..files import atomic_write
from . import gcg as _gcg
from ..errors import InputError

__all__ = ["SearchConfig", "SearchResult", "search", "single_swap_check", "allowed_ids", "best_singles",
           "compare_methods", "comparison_table", "Shortlist", "build_shortlist", "METHODS", "EXHAUSTIVE_MAX_LEN",
           "RESTART_POLICIES", "GCG_BUDGET_SHARE", "results_table", "restarts_table", "with_batch_size",
           "shortlist_table", "extreme_singles"]

METHODS = ("gcg", "sweep", "both")
ALLOWED = ("ascii", "all")
INITS = ("singles", "random")
CHECKS = ("auto", "always", "never")
RESTART_POLICIES = ("anytime", "fixed")
#: With a budget and ``restart_policy="anytime"``, GCG (method ``"both"``) gets at most this share of it.
GCG_BUDGET_SHARE = 0.5
#: Consecutive already-used starts drawn before the search concludes that no new start is left.
MAX_REPEATED_STARTS = 200
#: The stop reason of a search that scored every sequence it may return (its best is the global optimum).
SPACE_EXHAUSTED = "space exhausted"
#: Up to this length, sweeps scan the whole allowed vocabulary and the single-swap check is exhaustive.
EXHAUSTIVE_MAX_LEN = 4
#: Shortlist size per position for longer responses when ``SearchConfig.shortlist`` is None.
DEFAULT_SHORTLIST = 256
#: The scorer's batch size during a search on a CPU when ``SearchConfig.batch_size`` is None
#: (tiny classifier: 8.7k candidates/s at 64, 17.8k at 256, 23k at 1024; the default model: 7 at 64, 13 at 256).
CPU_BATCH = 512
#: Candidates per call to the scorer (between calls: budget check, progress bar, Ctrl-C).
CHUNK = 4096
#: A search remembers the scores of up to this many sequences (a scan that repeats one, e.g. the
#: last scans of a restart that ends where an earlier one did, reads it back instead of scoring it).
MAX_KNOWN = 500_000
#: Bumped whenever a change here changes what a search or a comparison returns (part of the
#: result-cache key of chapter 5's comparison, :mod:`rmlib.tables.memo`).
SEARCH_REVISION = 3  # 3: GCG alone restarts until its budget is spent; the answer takes the better swaps its check finds


@dataclasses.dataclass
class SearchConfig:
    """Settings of one search.

    method: ``"gcg"``, ``"sweep"`` or ``"both"`` (GCG, then sweeps from its best).
    length: response length in tokens (a given ``start`` must have this many).
    maximize: True for the optimal (highest-scoring) response, False for the pessimal.
    restarts: sweep starts (``sweep``/``both``) without a budget: the first from ``init`` (``both``:
        GCG's best), the others diverse (``restart_policy``). With a budget and the ``anytime``
        policy, restarts (GCG's alone too) go on until the budget is spent or every sequence is
        scored, whatever this number.
    restart_policy: ``"anytime"`` (diverse starts; with a budget, restarts until it is spent) or
        ``"fixed"`` (``restarts`` starts, the others random; a budget only cuts them short).
    budget_seconds: stop starting new scans after this much wall time (None: no limit). The
        GCG part gets what is left (``anytime``: at most ``GCG_BUDGET_SHARE`` of the budget); the
        single-swap check is not counted (reported apart).
    allowed: ``"ascii"`` (tokens that decode to printable ASCII) or ``"all"`` (any token);
        special tokens only with ``allow_special_tokens``.
    seed: seeds the random starts.
    init: first start when none is given: ``"singles"`` (the best single token, repeated;
        costs one scan of the vocabulary) or ``"random"``.
    shortlist: candidates per position. None: every allowed token up to ``length`` 4, the
        ``DEFAULT_SHORTLIST`` gradient-ranked ones beyond; 0: always every allowed token;
        K > 0: always the K gradient-ranked ones.
    max_passes: at most this many passes over all positions per start.
    gcg: settings of the GCG part (its direction and token filters are set from this config).
    check: single-swap check of the result: ``"auto"`` (exhaustive for length <= 4),
        ``"always"`` (exhaustive at any length), ``"never"``.
    tol: relative tolerance; a swap must beat the current score by ``tol * max(1, |score|)``.
    agreement_tol: a restart "reached" the best value when its end is within
        ``agreement_tol * max(1, |best|)`` of it.
    batch_size: the scorer's batch size during the search (None: the scorer's own on a GPU,
        ``CPU_BATCH`` on a CPU).
    progress: show a tqdm progress bar.
    """

    method: str = "both"
    length: int = 2
    maximize: bool = True
    restarts: int = 3
    restart_policy: str = "anytime"
    budget_seconds: float | None = None
    allowed: str = "ascii"
    allow_special_tokens: bool = False
    seed: int = 0
    init: str = "singles"
    shortlist: int | None = None
    max_passes: int = 20
    gcg: _gcg.GCGConfig | None = None
    check: str = "auto"
    tol: float = 1e-5
    agreement_tol: float = 1e-4
    batch_size: int | None = None
    progress: bool = False

    def validate(self) -> "SearchConfig":
        """Raise ``ValueError`` naming the bad setting and its fix; return self."""
        def choice(name, options):
            if getattr(self, name) not in options:
                raise InputError(f"SearchConfig.{name} must be one of {options}, got {getattr(self, name)!r}")

        def integer(name, low, allow_none=False):
            v = getattr(self, name)
            if v is None and allow_none:
                return
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < low:
                raise InputError(f"SearchConfig.{name} must be an int >= {low}{' or None' if allow_none else ''}, "
                                 f"got {v!r}")
            setattr(self, name, int(v))

        choice("method", METHODS)
        choice("allowed", ALLOWED)
        choice("init", INITS)
        choice("check", CHECKS)
        choice("restart_policy", RESTART_POLICIES)
        integer("length", 1)
        integer("restarts", 1)
        integer("max_passes", 1)
        integer("seed", 0)
        integer("shortlist", 0, allow_none=True)
        integer("batch_size", 1, allow_none=True)
        if not isinstance(self.maximize, (bool, np.bool_)):
            raise InputError(f"SearchConfig.maximize must be True (optimal) or False (pessimal), got {self.maximize!r}")
        self.maximize = bool(self.maximize)
        b = self.budget_seconds
        if b is not None and (isinstance(b, bool) or not isinstance(b, (int, float)) or not b > 0):
            raise InputError(f"SearchConfig.budget_seconds must be a number > 0 or None, got {b!r}")
        if isinstance(self.tol, bool) or not isinstance(self.tol, (int, float)) or not 0 <= self.tol < 1:
            raise InputError(f"SearchConfig.tol must be a number in [0, 1), got {self.tol!r}")
        a = self.agreement_tol
        if isinstance(a, bool) or not isinstance(a, (int, float)) or not 0 <= a < 1:
            raise InputError(f"SearchConfig.agreement_tol must be a number in [0, 1), got {a!r}")
        if self.gcg is not None and not isinstance(self.gcg, _gcg.GCGConfig):
            raise InputError(f"SearchConfig.gcg must be a GCGConfig or None, got {type(self.gcg).__name__}")
        return self

    @property
    def direction(self) -> str:
        return "max" if self.maximize else "min"

    def shortlist_size(self) -> int | None:
        """Candidates per position: None for every allowed token, else K gradient-ranked ones."""
        if self.shortlist is None:
            return None if self.length <= EXHAUSTIVE_MAX_LEN else DEFAULT_SHORTLIST
        return self.shortlist or None

    def gcg_config(self) -> _gcg.GCGConfig:
        base = self.gcg or _gcg.GCGConfig(num_steps=50, search_width=256, topk=256, patience=10)
        return dataclasses.replace(base, maximize=self.maximize, ascii_only=self.allowed == "ascii",
                                   allow_special_tokens=self.allow_special_tokens).validate()


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


# --------------------------------------------------------------------------- scoring state
class _Stop(Exception):
    """The budget is spent (raised between scorer calls)."""


class _State:
    """Counts candidates and time, enforces the budget, drives the progress bar."""

    def __init__(self, scorer, prompt: str, config: SearchConfig, reuse: bool = True):
        from ..progress import bar as progress_bar

        self.scorer, self.prompt, self.config = scorer, prompt, config
        self.sign = 1.0 if config.maximize else -1.0
        self.t0 = time.perf_counter()
        self.n_scored = 0
        self.n_reused = 0
        self.known: dict | None = {} if reuse else None
        #: every distinct full-length sequence scored (sweeps and GCG), while there are at most MAX_KNOWN
        #: of them (None beyond): all of the space scored means the best is the global optimum
        self.covered: set | None = set() if reuse else None
        self.best: tuple[int, ...] | None = None
        self.best_score = float("nan")
        self.bar = progress_bar(None, progress=config.progress, unit="cand",
                        desc=f"search {config.method} L={config.length} {config.direction}")

    def __enter__(self) -> "_State":
        return self

    def __exit__(self, *exc) -> None:
        self.bar.close()  # however the work ends: finished, out of budget, interrupted or failed

    def elapsed(self) -> float:
        return time.perf_counter() - self.t0

    def left(self) -> float | None:
        b = self.config.budget_seconds
        return None if b is None else b - self.elapsed()

    def check_budget(self) -> None:
        left = self.left()
        if left is not None and left <= 0:
            raise _Stop

    def offer(self, seq, score: float) -> None:
        if self.best is None or self.sign * (score - self.best_score) > 0:
            self.best, self.best_score = tuple(int(t) for t in seq), float(score)
            self.bar.set_postfix(best=f"{self.best_score:.4f}")

    def score(self, seqs: np.ndarray, budget: bool = True) -> np.ndarray:
        """Scores of the rows of ``seqs`` (n × L ids), in chunks, budget checked between them; rows
        this search has scored before are read back (``n_reused``), not scored again."""
        out = np.empty(len(seqs), dtype=np.float64)
        todo = np.arange(len(seqs))
        if self.known is not None:
            keys = [tuple(r) for r in np.asarray(seqs).tolist()]
            hit = np.fromiter((k in self.known for k in keys), dtype=bool, count=len(keys))
            out[hit] = [self.known[k] for k, h in zip(keys, hit) if h]
            todo = np.flatnonzero(~hit)
            self.n_reused += int(hit.sum())
            if len(self.known) > MAX_KNOWN:
                self.known.clear()
        for start in range(0, len(todo), CHUNK):
            if budget:
                self.check_budget()
            rows = todo[start:start + CHUNK]
            out[rows] = self.scorer.sequence_scores(self.prompt, seqs[rows].tolist())
            if self.known is not None:
                self.known.update(zip((keys[i] for i in rows), out[rows].tolist()))
            self.cover(seqs[rows])
            self.n_scored += len(rows)
            self.bar.update(len(rows))
        return out

    def improves(self, new: float, old: float) -> bool:
        return self.sign * (new - old) > self.config.tol * max(1.0, abs(old))

    def cover(self, seqs) -> None:
        """Record full-length sequences as scored (rows of ids; shorter rows, e.g. single tokens, are not)."""
        if self.covered is None:
            return
        self.covered.update(tuple(int(t) for t in r) for r in seqs if len(r) == self.config.length)
        if len(self.covered) > MAX_KNOWN:
            self.covered = None

    def exhausted(self, n_tokens: int) -> bool:
        """Has this search scored every one of the ``n_tokens ** length`` sequences it may return?"""
        size = n_tokens ** self.config.length
        return self.covered is not None and size <= MAX_KNOWN and len(self.covered) >= size


# --------------------------------------------------------------------------- allowed tokens, checks
def _n_rows(scorer) -> int:
    parts = _gcg.scorer_parts(scorer)
    return min(min(_gcg.embedding_matrix(p).shape[0] for p, _ in parts), len(scorer.tokenizer))


def allowed_ids(scorer, allowed: str = "ascii", allow_special_tokens: bool = False) -> np.ndarray:
    """The token ids a search may use (sorted): ``allowed="ascii"`` or ``"all"``, special tokens on opt-in."""
    if allowed not in ALLOWED:
        raise InputError(f"allowed must be one of {ALLOWED}, got {allowed!r}")
    mask = _gcg.allowed_tokens(scorer.tokenizer, _n_rows(scorer), allow_special_tokens=allow_special_tokens,
                               ascii_only=allowed == "ascii")
    ids = np.flatnonzero(mask)
    if not ids.size:
        raise InputError("the token filters leave no token: use allowed='all' or allow_special_tokens=True")
    return ids


def _search_tokens(scorer, allowed: str, vocabulary: Sequence[int] | None = None,
                   allow_special_tokens: bool = False) -> np.ndarray:
    """The allowed ids, restricted to ``vocabulary`` when one is given."""
    tokens = allowed_ids(scorer, allowed, allow_special_tokens)
    if vocabulary is None:
        return tokens
    vocab = np.unique(scorer.token_ids(vocabulary))
    tokens = vocab[np.isin(vocab, tokens)]
    if not tokens.size:
        raise InputError(f"no token of `vocabulary` passes the token filters (allowed={allowed!r}, "
                         f"allow_special_tokens={allow_special_tokens}): relax them")
    return tokens


def _swaps(current: Sequence[int], pos: int, tokens: np.ndarray) -> np.ndarray:
    seqs = np.tile(np.asarray(current, dtype=np.int64), (len(tokens), 1))
    seqs[:, pos] = tokens
    return seqs


def single_swap_check(scorer, prompt: str, ids: Sequence[int], tokens: np.ndarray, maximize: bool = True,
                      tol: float = 1e-5, progress: bool = False) -> dict:
    """Is ``ids`` a local optimum under single swaps to ``tokens``? Scores all L × len(tokens) swaps.

    Returns ``{"local_optimum", "score", "better_swap", "candidates", "seconds"}``; ``score`` is
    the sequence's own score in the same batches (the reference for "better"), ``better_swap``
    the best improving swap ``{"position", "token_id", "token", "score", "ids"}`` or None.
    """
    cfg = SearchConfig(length=len(ids), maximize=maximize, tol=tol, progress=progress).validate()
    with _State(scorer, prompt, cfg, reuse=False) as state:  # an independent scan: every swap scored afresh
        ids = [int(i) for i in ids]
        tokens = np.asarray(tokens, dtype=np.int64)
        own = float(state.score(np.asarray([ids]), budget=False)[0])
        best = None
        for pos in range(len(ids)):
            scores = state.score(_swaps(ids, pos, tokens), budget=False)
            k = int(np.argmax(state.sign * scores))
            if tokens[k] != ids[pos] and state.improves(scores[k], own) and (
                    best is None or state.sign * (scores[k] - best["score"]) > 0):
                seq = list(ids)
                seq[pos] = int(tokens[k])
                best = {"position": pos, "token_id": int(tokens[k]),
                        "token": scorer.tokenizer.decode([int(tokens[k])]), "score": float(scores[k]), "ids": seq}
    return {"local_optimum": best is None, "score": own, "better_swap": best, "candidates": state.n_scored,
            "seconds": state.elapsed()}


# --------------------------------------------------------------------------- sweeps
def _shortlist(scorer, prompt: str, current, pos: int, allowed_mask: np.ndarray, k: int, sign: float) -> np.ndarray:
    """The ``k`` allowed tokens the score's gradient ranks best at ``pos`` (GCG's proposals), plus the current one."""
    import torch

    grad = _gcg.score_gradient(scorer, prompt, list(current))[pos, : len(allowed_mask)]
    pr = sign * grad.cpu().double()
    pr[~torch.as_tensor(allowed_mask)] = float("-inf")
    k = min(k, int(allowed_mask.sum()))
    top = torch.topk(pr, k).indices.numpy()
    return np.unique(np.append(top, current[pos]))


def _sweep(state: _State, start: Sequence[int], tokens: np.ndarray, allowed_mask: np.ndarray,
           shortlist: int | None, start_score: float | None = None) -> dict:
    """Coordinate sweeps from ``start`` until ``length`` scans in a row change nothing."""
    cfg = state.config
    current = [int(t) for t in start]
    length = len(current)
    t_start, n_start = state.elapsed(), state.n_scored
    row = {"start_ids": list(current), "converged": False, "passes": 0, "scans": 0, "moves": 0,
           "seconds_to_converge": None, "stop": "max_passes", "start_score": None}
    score, stale, pos = float("nan"), 0, 0
    try:
        score = float(state.score(np.asarray([current]))[0]) if start_score is None else float(start_score)
        state.offer(current, score)
        row["start_score"] = score
        while row["scans"] < cfg.max_passes * length:
            cand = tokens if shortlist is None else _shortlist(state.scorer, state.prompt, current, pos,
                                                               allowed_mask, shortlist, state.sign)
            scores = state.score(_swaps(current, pos, cand))
            row["scans"] += 1
            here = np.flatnonzero(cand == current[pos])
            own = float(scores[here[0]]) if here.size else score  # the sequence itself, in the same batches
            k = int(np.argmax(state.sign * scores))
            if cand[k] != current[pos] and state.improves(scores[k], own):
                current[pos], score = int(cand[k]), float(scores[k])
                state.offer(current, score)
                row["moves"] += 1
                stale = 0
            else:
                score = own
                stale += 1
            if stale >= length:
                row["converged"], row["stop"] = True, "converged"
                row["seconds_to_converge"] = state.elapsed()
                break
            pos = (pos + 1) % length
    except _Stop:
        row["stop"] = "budget"
    except KeyboardInterrupt:
        row["stop"] = "interrupted"
    row.update(end_ids=list(current), end_score=score, passes=round(row["scans"] / length, 2),
               candidates=state.n_scored - n_start, seconds=state.elapsed() - t_start)
    return row


# --------------------------------------------------------------------------- the search
def _start_of(scorer, start, length: int) -> list[int]:
    ids = _gcg.start_token_ids(scorer, start)
    if len(ids) != length:
        raise InputError(f"the start has {len(ids)} tokens ({scorer.tokenizer.decode(ids)!r}) but length={length}: "
                         "give a start of exactly `length` tokens, or leave it out")
    return ids


def best_singles(scorer, prompt: str, tokens: np.ndarray) -> pd.DataFrame:
    """Every token of ``tokens`` scored as a one-token response, highest first (token_id, score)."""
    tokens = np.asarray(tokens, dtype=np.int64)
    scores = scorer.token_scores(prompt, tokens)
    order = np.argsort(-scores, kind="stable")
    return pd.DataFrame({"token_id": tokens[order], "score": scores[order]})


def search(scorer, prompt: str, config: SearchConfig | None = None, start: str | Sequence[int] | None = None,
           singles: pd.DataFrame | None = None, vocabulary: Sequence[int] | None = None) -> SearchResult:
    """Search the ``config.length``-token response that maximizes (or minimizes) the score.

    ``scorer``: any rmlib scorer (``classifier``, ``logprob``, ``implicit``); it is not changed.
    ``start``: the first start (a string or ids; default from ``config.init``). ``singles``: a
    :func:`best_singles` table to reuse (saves one vocabulary scan per call). ``vocabulary``:
    search only these token ids (those the filters allow; e.g. a word list, or a small set in
    tests); sweeps, their restarts and the single-swap check then run over them. See the module
    docstring for the methods, the restarts and what the result records.
    """
    config = dataclasses.replace(config or SearchConfig()).validate()
    _gcg.scorer_parts(scorer)
    if not isinstance(prompt, str) or not prompt.strip():
        raise InputError("prompt must be a non-empty string")
    space = _space(scorer, config, vocabulary)
    scorer = with_batch_size(scorer, _batch_size(scorer, config))  # a copy when the size changes
    rng = np.random.default_rng(config.seed)
    runs: list[dict] = []
    gcg_result = None
    first, start_kind = [], "given"
    with _State(scorer, prompt, config) as state:
        try:
            first, start_kind, first_score, singles = _first_start(state, space, start, singles, rng)
            sweep_first = (start_kind, first, first_score)
            if config.method in ("gcg", "both"):
                gcg_result = _run_gcg(state, first, space.tokens if vocabulary is not None else None)
                runs.append(_gcg_run_row(start_kind, first, gcg_result))
                sweep_first = ("gcg", list(gcg_result.best_ids), gcg_result.best_score)
            if config.method in ("sweep", "both"):
                stop_reason = _sweeps(state, space, sweep_first, singles, rng, runs)
            else:
                stop_reason, gcg_result = _gcg_restarts(state, space, first, gcg_result, singles, rng, runs,
                                                        vocabulary)
        except _Stop:
            stop_reason = "budget"
        except KeyboardInterrupt:
            if state.best is None:  # nothing scored yet: nothing to keep
                raise
            stop_reason = "interrupted"
        return _finish(state, space, runs, stop_reason, first, start_kind, gcg_result)


@dataclasses.dataclass(frozen=True)
class _Space:
    """What a search may put at each position: the allowed token ids, as a mask over the embedding
    rows too, how the filters chose them, and what each position's scan covers."""

    tokens: np.ndarray
    mask: np.ndarray
    filters: str
    shortlist: int | None
    per_position: str


def _space(scorer, config: SearchConfig, vocabulary) -> _Space:
    tokens = _search_tokens(scorer, config.allowed, vocabulary, config.allow_special_tokens)
    filters = f"allowed={config.allowed!r}, allow_special_tokens={config.allow_special_tokens}"
    if vocabulary is not None:
        filters += f", vocabulary of {len(tokens)} ids"
    mask = np.zeros(_n_rows(scorer), dtype=bool)
    mask[tokens] = True
    shortlist = config.shortlist_size()
    per_position = (f"all allowed tokens ({len(tokens)})" if shortlist is None
                    else f"shortlist of {shortlist} gradient-ranked tokens (GCG proposals), scored exactly")
    return _Space(tokens, mask, filters, shortlist, per_position)


def _batch_size(scorer, config: SearchConfig) -> int | None:
    """The scorer's batch size for the search: the configured one; on a CPU by default :data:`CPU_BATCH`
    (a scan is thousands of equal-length candidates: larger CPU batches are faster)."""
    if config.batch_size is None and scorer.loaded.device.type != "cuda":
        return CPU_BATCH
    return config.batch_size


def _first_start(state: _State, space: _Space, start, singles, rng) -> tuple[list[int], str, float, object]:
    """The first start (given, the best single token repeated, or random) and its score, offered as the
    best so far; and the singles table (scanned here for ``init="singles"``, reused by the restarts)."""
    config = state.config
    if start is not None:
        first, start_kind = _start_of(state.scorer, start, config.length), "given"
        _gcg.check_start_allowed(state.scorer.tokenizer, first, space.mask, space.filters)
    elif config.init == "singles":
        singles = _singles_in(state, space.tokens, singles, budget=False)  # before anything is kept
        top = int(singles["token_id"].iloc[0 if config.maximize else -1])
        first, start_kind = [top] * config.length, "singles"
    else:
        first, start_kind = rng.choice(space.tokens, config.length).tolist(), "random"
    first_score = float(state.score(np.asarray([first]), budget=False)[0])
    state.offer(first, first_score)
    return first, start_kind, first_score, singles


def _gcg_run_row(start_kind: str, first: list[int], result) -> dict:
    """GCG's row of the search's runs table."""
    return {"run": "gcg", "start_kind": start_kind, "start_ids": list(first), "start_score": result.start_score,
            "end_ids": list(result.best_ids), "end_score": result.best_score, "converged": None, "passes": None,
            "scans": result.steps, "moves": None, "candidates": result.n_evaluated, "seconds": result.seconds,
            "seconds_to_converge": None, "stop": result.stop_reason}


def _sweeps(state: _State, space: _Space, sweep_first: tuple, singles, rng, runs: list) -> str:
    """The sweeps from ``sweep_first`` and their restarts (``config.restart_policy``); the stop reason."""
    config = state.config
    if config.restart_policy == "fixed":
        starts = _fixed_starts(sweep_first, space.tokens, rng, config)
    else:
        starts = _anytime_starts(sweep_first, space.tokens, rng, config,
                                 lambda: _singles_in(state, space.tokens, singles))
    return _restarts(state, starts, space.tokens, space.mask, space.shortlist, runs)


def _singles_in(state: _State, tokens: np.ndarray, singles: pd.DataFrame | None, budget: bool = True) -> pd.DataFrame:
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


def _run_gcg(state: _State, first: list[int], vocabulary) -> object:
    """GCG from ``first``, within the budget (``anytime``: at most ``GCG_BUDGET_SHARE`` of it)."""
    config = state.config
    gcfg = config.gcg_config()
    left = state.left()
    if left is not None:
        if config.restart_policy == "anytime" and config.method == "both":
            left = min(left, GCG_BUDGET_SHARE * config.budget_seconds)
        gcfg = dataclasses.replace(gcfg, max_seconds=max(left, 1e-3))
    result = _gcg.run(state.scorer, state.prompt, first, gcfg, vocabulary=vocabulary, evaluated=state.covered)
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


def _restarts(state: _State, starts, tokens: np.ndarray, mask: np.ndarray, shortlist, runs: list) -> str:
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
        row = _sweep(state, s, tokens, mask, shortlist, s_score)
        runs.append({"run": f"sweep {n}", "start_kind": kind, **row})
        n += 1
        if row["stop"] in ("budget", "interrupted"):
            return row["stop"]
        if state.exhausted(len(tokens)):
            return SPACE_EXHAUSTED
    return "converged" if any(r.get("converged") for r in runs) else "max_passes"


def _gcg_restarts(state: _State, space: _Space, first: list[int], result, singles, rng, runs: list,
                  vocabulary) -> tuple[str, object]:
    """GCG alone under a budget (``anytime``): GCG runs from new starts until the budget is spent or every
    sequence has been scored; (the stop reason, the best GCG run). Without a budget: the one run."""
    config = state.config
    best, reason = result, f"gcg: {result.stop_reason}"
    if config.budget_seconds is None or config.restart_policy != "anytime":
        return reason, best
    starts = _anytime_starts(("gcg", first, None), space.tokens, rng, config,
                             lambda: _singles_in(state, space.tokens, singles))
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
        run = _run_gcg(state, s, space.tokens if vocabulary is not None else None)
        runs.append({**_gcg_run_row(kind, s, run), "run": f"gcg {n}"})
        n += 1
        if state.sign * (run.best_score - best.best_score) > 0:
            best = run


#: How a GCG run that ran to its own end stops (not cut short by the time budget or Ctrl-C).
GCG_ENDS = ("patience", "num_steps", "exhausted")


def _counted(run: str, stop: str, method: str) -> bool:
    """Is this row one of the restarts that ran to their end: a sweep, or for GCG alone a GCG run?"""
    if method == "gcg":
        return run.startswith("gcg") and stop in GCG_ENDS
    return run != "gcg" and stop in ("converged", "max_passes")


def _agreement(runs: list[dict], method: str, best: float, tol: float) -> tuple[list[float], int]:
    """End values of the restarts that ran to their end (the sweeps; for GCG alone its runs, when it
    restarted), and how many are within ``tol`` of ``best``."""
    if method == "gcg" and len(runs) < 2:
        return [], 0  # one GCG run: no restarts
    ends = [float(r["end_score"]) for r in runs if _counted(r["run"], r["stop"], method)]
    return ends, sum(abs(e - best) <= tol * max(1.0, abs(best)) for e in ends)


def _reached(result: "SearchResult") -> list:
    """Per row of ``result.runs``: did that restart end at the best value (None: not counted)."""
    runs = result.runs
    if runs.empty:
        return []
    best, tol = result.search_score, result.config.agreement_tol
    counted = pd.Series([_counted(r, st, result.method) and (result.method != "gcg" or len(runs) > 1)
                         for r, st in zip(runs["run"], runs["stop"])], index=runs.index)
    reached = (runs["end_score"] - best).abs() <= tol * max(1.0, abs(best))
    return [bool(r) if c else None for r, c in zip(reached, counted)]


def _gcg_was_optimal(result: "SearchResult") -> bool | None:
    """For a ``"both"`` search whose sweeps scan every candidate: was GCG's best already single-swap
    optimal (the polish from it ran to its end without a move)? None when that is not known."""
    runs = result.runs
    if result.method != "both" or result.config.shortlist_size() is not None or len(runs) < 2:
        return None
    polish = runs.iloc[1]
    if polish["start_kind"] != "gcg" or not polish["converged"]:
        return None
    return bool(polish["moves"] == 0)


def results_table(results: Sequence["SearchResult"], label=None) -> pd.DataFrame:
    """One row per search: what it found, whether that is single-swap optimal over its candidates,
    how its restarts agreed ("k of n restarts reached this value"), and for a ``"both"`` search
    GCG's own result beside it (``gain_over_gcg``: how much the sweeps added, in the search's direction;
    ``gcg_single_swap_optimal``: whether GCG's best was already single-swap optimal). ``label``: a
    function giving each prompt's name in the ``prompt`` column (default: the prompt)."""
    rows = []
    for r in results:
        g = r.gcg_result
        sign = 1.0 if r.maximize else -1.0
        rows.append({
            "prompt": label(r.prompt) if label else r.prompt, "length": r.length, "direction": r.direction, "best_text": r.best_text,
            "best_score": r.best_score, "candidates_per_position": int(r.provenance.get("n_allowed", 0)),
            "single_swap_optimal": r.local_optimum, "check": r.local_optimum_check, "agreement": r.agreement,
            "restarts_at_best": r.restarts_at_best, "restarts_run": r.restarts_run, "restart_spread": r.restart_spread,
            "gcg_text": None if g is None else g.best_text, "gcg_score": None if g is None else g.best_score,
            "gcg_single_swap_optimal": _gcg_was_optimal(r),
            "gain_over_gcg": None if g is None else max(0.0, sign * (r.best_score - g.best_score)),
            "candidates": r.candidates_scored + r.check_candidates, "seconds": r.seconds + r.check_seconds,
        })
    return pd.DataFrame(rows)


def restarts_table(results: Sequence["SearchResult"], tokenizer=None, label=None) -> pd.DataFrame:
    """One row per start of every search: how it started, where it ended (``end_text`` when a
    ``tokenizer`` is given), and ``reached_best`` (None for a restart cut short, and for GCG's run,
    which is not one of the restarts: they are the sweeps). ``search`` names the search
    ("prompt, L tokens, max"), with ``label`` giving each prompt's name (default: the prompt)."""
    parts = []
    for r in results:
        runs = r.runs.copy()
        if runs.empty:
            continue
        name = label(r.prompt) if label else r.prompt
        runs.insert(0, "search", f"{name}, {r.length} tokens, {r.direction}")
        runs.insert(1, "prompt", name)
        runs.insert(2, "length", r.length)
        runs.insert(3, "direction", r.direction)
        runs["restart"] = range(len(runs))
        runs["reached_best"] = _reached(r)
        if tokenizer is not None:
            runs["end_text"] = [tokenizer.decode(list(ids)) for ids in runs["end_ids"]]
        parts.append(runs)
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()


def _finish(state: _State, space: _Space, runs: list, stop_reason: str, first, start_kind: str,
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
    ends, at_best = _agreement(runs, config.method, search_score, config.agreement_tol)

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


def with_batch_size(scorer, size: int | None):
    """``scorer`` scoring in batches of ``size``: a shallow copy (and copies of both parts of an implicit
    scorer) when that changes anything, the scorer itself otherwise. The copy shares the model and
    the prompt caches; the scorer passed in is never changed."""
    if size is None:
        return scorer
    if getattr(scorer, "kind", None) == "implicit":
        policy, reference = with_batch_size(scorer.policy, size), with_batch_size(scorer.reference, size)
        if policy is scorer.policy and reference is scorer.reference:
            return scorer
        clone = copy.copy(scorer)
        clone.policy, clone.reference = policy, reference
        return clone
    if getattr(scorer, "batch_size", None) == size:
        return scorer
    clone = copy.copy(scorer)
    clone.batch_size = size
    return clone


# --------------------------------------------------------------------------- shortlists and the method comparison
@dataclasses.dataclass
class Shortlist:
    """A stated candidate vocabulary for one prompt (:func:`build_shortlist`).

    ``ids``: the shortlisted token ids (sorted); ``singles``: their single-token scores, highest
    first (a :func:`best_singles` table with the decoded ``text``, reused by the searches); ``pool_size``: how many tokens
    were scored as single tokens to choose them; ``source``: where those scores came from;
    ``description``: one sentence for the page.
    """

    prompt: str
    ids: np.ndarray
    singles: pd.DataFrame
    pool_size: int
    n_allowed: int
    k: int
    n_random: int
    sample: int | None
    seed: int
    description: str
    source: str = ""


def build_shortlist(scorer, prompt: str, *, k: int = 12, n_random: int = 8, sample: int | None = 256,
                    seed: int = 0, allowed: str = "ascii", pool: Sequence[int] | None = None,
                    singles: pd.DataFrame | None = None, source: str | None = None) -> Shortlist:
    """The ``k`` best and ``k`` worst single tokens of a pool, plus ``n_random`` more from it (seeded).

    With ``singles`` (a table with ``token_id`` and ``score`` columns: single-token scores for
    this prompt computed before, e.g. a score table of :mod:`rmlib.tables.results`), the pool is
    its allowed tokens and their scores are used as they are (nothing is scored); ``source``
    says in words where they came from. Otherwise the pool is ``pool`` when given, else a seeded
    random sample of ``sample`` allowed tokens (``sample=None`` or 0: every allowed token, which
    costs a scan of the whole vocabulary), and every pool token is scored once as a one-token
    response. The searches then run over the shortlist only, so "single-swap optimal" holds over
    the shortlist, not the vocabulary. Deterministic for a seed.
    """
    for name, v, low in (("k", k, 1), ("n_random", n_random, 0), ("seed", seed, 0)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < low:
            raise InputError(f"build_shortlist: {name} must be an int >= {low}, got {v!r}")
    if singles is not None and pool is not None:
        raise InputError("build_shortlist: give singles= (scores computed before) or pool= (to score now), not both")
    tokens = allowed_ids(scorer, allowed)
    rng = np.random.default_rng(seed)
    given = None
    if singles is not None:
        missing = {"token_id", "score"} - set(getattr(singles, "columns", []))
        if missing:
            raise InputError(f"build_shortlist: singles needs the columns token_id and score; it lacks {sorted(missing)}")
        given = singles[np.isin(singles["token_id"].to_numpy(), tokens)]
        if not len(given):
            raise InputError("build_shortlist: no token of `singles` passes the token filters "
                             f"(allowed={allowed!r}): relax them, or give scores of other tokens")
        order = np.argsort(-given["score"].to_numpy(dtype=np.float64), kind="stable")
        singles = pd.DataFrame({"token_id": given["token_id"].to_numpy(dtype=np.int64)[order],
                                "score": given["score"].to_numpy(dtype=np.float64)[order]})
        pool_ids = np.sort(singles["token_id"].to_numpy())
    elif pool is not None:
        pool_ids = _search_tokens(scorer, allowed, pool)
    elif sample:
        if isinstance(sample, bool) or not isinstance(sample, (int, np.integer)) or sample < 1:
            raise InputError(f"build_shortlist: sample must be an int >= 1 or None, got {sample!r}")
        pool_ids = np.sort(rng.choice(tokens, min(int(sample), len(tokens)), replace=False))
    else:
        pool_ids = tokens
    if singles is None:
        singles = best_singles(scorer, prompt, pool_ids)
    order = singles["token_id"].to_numpy()
    chosen = list(dict.fromkeys([*order[:k].tolist(), *order[::-1][:k].tolist()]))
    rest = np.setdiff1d(pool_ids, chosen)
    if n_random and rest.size:
        chosen += rng.choice(rest, min(n_random, rest.size), replace=False).tolist()
    ids = np.sort(np.asarray(chosen, dtype=np.int64))
    kept = singles[singles["token_id"].isin(ids)].reset_index(drop=True)
    kept["text"] = [scorer.tokenizer.decode([int(i)]) for i in kept["token_id"]]
    kind = "ASCII" if allowed == "ascii" else "allowed"
    sampled = given is None and pool is None and bool(sample)
    source = source or ("given single-token scores for this prompt" if given is not None
                        else "scored as one-token responses to this prompt")
    if sampled:
        where = f"a seeded random sample of {len(pool_ids):,} of the {len(tokens):,} {kind} tokens (seed {seed})"
    elif len(pool_ids) == len(tokens):
        where = f"all {len(pool_ids):,} {kind} tokens"
    else:
        where = f"{'the' if given is not None else 'a given pool of'} {len(pool_ids):,} {kind} tokens (of {len(tokens):,})"
    desc = (f"{len(ids)} tokens: the {k} best and {k} worst single tokens of {where}, {source}, plus "
            f"{min(n_random, rest.size)} more drawn at random from them (seed {seed})")
    return Shortlist(prompt=prompt, ids=ids, singles=kept, pool_size=int(len(pool_ids)), n_allowed=int(len(tokens)),
                     k=int(k), n_random=int(n_random), sample=sample if sampled else None, seed=int(seed),
                     description=desc, source=source)


def _shortlists(shortlists) -> list:
    """A sequence of :class:`Shortlist` objects, or a mapping whose values they are, as a list."""
    return list(shortlists.values()) if isinstance(shortlists, Mapping) else list(shortlists)


def shortlist_table(shortlists, label=None) -> pd.DataFrame:
    """One row per prompt: its shortlist's size, the pool it was chosen from and where that pool's
    single-token scores came from, its best and worst single tokens. ``shortlists``: Shortlist
    objects, or a ``{prompt: Shortlist}`` mapping; ``label``: each prompt's name."""
    rows = []
    for sl in _shortlists(shortlists):
        s = sl.singles
        rows.append({"prompt": label(sl.prompt) if label else sl.prompt, "candidates": len(sl.ids),
                     "chosen from": sl.pool_size, "of allowed": sl.n_allowed, "scores from": sl.source,
                     "best single": s["text"].iloc[0], "best score": float(s["score"].iloc[0]),
                     "worst single": s["text"].iloc[-1], "worst score": float(s["score"].iloc[-1])})
    return pd.DataFrame(rows)


def extreme_singles(shortlists, n: int, label=None) -> pd.DataFrame:
    """The ``n`` best and ``n`` worst single tokens of each shortlist (as :func:`shortlist_table`
    takes them), in the layout of :func:`results_table` (``length`` 1, ``direction`` max / min,
    ``best_text``, ``best_score``): the one-token answers beside the searches' longer ones."""
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
        raise InputError(f"extreme_singles: n must be an int >= 1, got {n!r}")
    rows = []
    for sl in _shortlists(shortlists):
        s = sl.singles
        name = label(sl.prompt) if label else sl.prompt
        for direction, part in (("max", s.head(n)), ("min", s.tail(n).iloc[::-1])):
            rows += [{"prompt": name, "length": 1, "direction": direction, "best_text": t, "best_score": float(v)}
                     for t, v in zip(part["text"], part["score"])]
    return pd.DataFrame(rows)


def compare_methods(scorer, prompt: str, length: int, maximize: bool, *, restarts: int = 3,
                    gcg: _gcg.GCGConfig | None = None, allowed: str = "ascii", budget_seconds: float | None = None,
                    seed: int = 0, singles: pd.DataFrame | None = None, batch_size: int | None = None,
                    vocabulary: Sequence[int] | None = None, progress: bool = False,
                    results: list | None = None) -> dict:
    """One row: GCG vs coordinate sweeps vs GCG + sweep polish vs the best single token.

    GCG starts from the best single token repeated (as the sweeps' first start does).
    ``both`` is a sweep started from GCG's best (GCG's own run is not repeated: its candidates and
    seconds are GCG's plus the polish's). Every result is checked for single-swap optimality
    (exhaustively over the allowed ``vocabulary`` for length <= 4). ``gap`` columns: how far each method's score is from the best of the three, in the
    search direction (``*_gap_pct``: in % of ``|best|``). ``results``: a list that gets the
    three :class:`SearchResult` objects of this row (``{"gcg", "sweep", "both"}``).
    """
    tokens = _search_tokens(scorer, allowed, vocabulary)
    if singles is None:
        singles = best_singles(scorer, prompt, tokens)
    base = dict(length=length, maximize=maximize, allowed=allowed, seed=seed, batch_size=batch_size,
                budget_seconds=budget_seconds, gcg=gcg, progress=progress)
    g = search(scorer, prompt, SearchConfig(method="gcg", **base), singles=singles, vocabulary=vocabulary)
    s = search(scorer, prompt, SearchConfig(method="sweep", restarts=restarts, **base), singles=singles,
               vocabulary=vocabulary)
    b = search(scorer, prompt, SearchConfig(method="sweep", restarts=1, **base), start=g.best_ids,
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
                     directions: Sequence[bool] = (True, False), *, shortlist: dict | None = None,
                     shortlists: list | None = None, **kwargs) -> pd.DataFrame:
    """:func:`compare_methods` for every prompt × length × direction, one row each.

    The single-token scores are computed once per prompt and shared by its searches. With
    ``shortlist`` (keyword arguments of :func:`build_shortlist`), each prompt's searches run over
    its own shortlist (then ``vocabulary`` must not be given); ``shortlists``: a list that gets
    each prompt's :class:`Shortlist`.
    """
    if shortlist is not None and kwargs.get("vocabulary") is not None:
        raise InputError("give either shortlist= (built per prompt) or vocabulary=, not both")
    rows = []
    for prompt in prompts:
        kw = dict(kwargs)
        if shortlist is not None:
            sl = build_shortlist(scorer, prompt, allowed=kwargs.get("allowed", "ascii"), **shortlist)
            if shortlists is not None:
                shortlists.append(sl)
            kw["vocabulary"], singles = sl.ids, sl.singles
        else:
            singles = best_singles(scorer, prompt, _search_tokens(scorer, kw.get("allowed", "ascii"),
                                                                  kw.get("vocabulary")))
        for length in lengths:
            for maximize in directions:
                rows.append(compare_methods(scorer, prompt, length, bool(maximize), singles=singles, **kw))
    return pd.DataFrame(rows)
