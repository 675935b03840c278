"""Exact coordinate sweeps: a search's scoring state (candidates counted, scores remembered, the budget
enforced, the progress bar), the tokens a search may use, one sweep from a start to a point no single
swap improves, and the single-swap check of any sequence."""

from __future__ import annotations

import time
from typing import Sequence

import numpy as np

from ..errors import InputError
from . import gcg as _gcg
from .search_config import ALLOWED, SearchConfig

#: Candidates per call to the scorer (between calls: budget check, progress bar, Ctrl-C).
CHUNK = 4096
#: A search remembers the scores of up to this many sequences (a scan that repeats one, e.g. the
#: last scans of a restart that ends where an earlier one did, reads it back instead of scoring it).
MAX_KNOWN = 500_000


class BudgetSpent(Exception):
    """The budget is spent (raised between scorer calls)."""


class SearchState:
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

    def __enter__(self) -> "SearchState":
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
            raise BudgetSpent

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


def embedding_rows(scorer) -> int:
    parts = _gcg.scorer_parts(scorer)
    return min(min(_gcg.embedding_matrix(p).shape[0] for p, _ in parts), len(scorer.tokenizer))


def allowed_ids(scorer, allowed: str = "ascii", allow_special_tokens: bool = False) -> np.ndarray:
    """The token ids a search may use (sorted): ``allowed="ascii"`` or ``"all"``, special tokens on opt-in."""
    if allowed not in ALLOWED:
        raise InputError(f"allowed must be one of {ALLOWED}, got {allowed!r}")
    mask = _gcg.allowed_tokens(scorer.tokenizer, embedding_rows(scorer), allow_special_tokens=allow_special_tokens,
                               ascii_only=allowed == "ascii")
    ids = np.flatnonzero(mask)
    if not ids.size:
        raise InputError("the token filters leave no token: use allowed='all' or allow_special_tokens=True")
    return ids


def search_tokens(scorer, allowed: str, vocabulary: Sequence[int] | None = None,
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


def single_swaps(current: Sequence[int], pos: int, tokens: np.ndarray) -> np.ndarray:
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
    with SearchState(scorer, prompt, cfg, reuse=False) as state:  # an independent scan: every swap scored afresh
        ids = [int(i) for i in ids]
        tokens = np.asarray(tokens, dtype=np.int64)
        own = float(state.score(np.asarray([ids]), budget=False)[0])
        best = None
        for pos in range(len(ids)):
            scores = state.score(single_swaps(ids, pos, tokens), budget=False)
            k = int(np.argmax(state.sign * scores))
            if tokens[k] != ids[pos] and state.improves(scores[k], own) and (
                    best is None or state.sign * (scores[k] - best["score"]) > 0):
                seq = list(ids)
                seq[pos] = int(tokens[k])
                best = {"position": pos, "token_id": int(tokens[k]),
                        "token": scorer.tokenizer.decode([int(tokens[k])]), "score": float(scores[k]), "ids": seq}
    return {"local_optimum": best is None, "score": own, "better_swap": best, "candidates": state.n_scored,
            "seconds": state.elapsed()}


def gradient_shortlist(scorer, prompt: str, current, pos: int, allowed_mask: np.ndarray, k: int, sign: float) -> np.ndarray:
    """The ``k`` allowed tokens the score's gradient ranks best at ``pos`` (GCG's proposals), plus the current one."""
    import torch

    grad = _gcg.score_gradient(scorer, prompt, list(current))[pos, : len(allowed_mask)]
    pr = sign * grad.cpu().double()
    pr[~torch.as_tensor(allowed_mask)] = float("-inf")
    k = min(k, int(allowed_mask.sum()))
    top = torch.topk(pr, k).indices.numpy()
    return np.unique(np.append(top, current[pos]))


def sweep(state: SearchState, start: Sequence[int], tokens: np.ndarray, allowed_mask: np.ndarray,
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
            cand = tokens if shortlist is None else gradient_shortlist(state.scorer, state.prompt, current, pos,
                                                               allowed_mask, shortlist, state.sign)
            scores = state.score(single_swaps(current, pos, cand))
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
    except BudgetSpent:
        row["stop"] = "budget"
    except KeyboardInterrupt:
        row["stop"] = "interrupted"
    row.update(end_ids=list(current), end_score=score, passes=round(row["scans"] / length, 2),
               candidates=state.n_scored - n_start, seconds=state.elapsed() - t_start)
    return row
