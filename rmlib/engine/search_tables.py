"""Tables of searches for a page: one row per search (:func:`results_table`), per restart
(:func:`restarts_table`), per shortlist (:func:`shortlist_table`) and a shortlist's extreme single tokens as
one-token answers (:func:`extreme_singles`); and how many restarts ended at the best value."""

from __future__ import annotations

from typing import Mapping, Sequence

import numpy as np
import pandas as pd

from ..errors import InputError

#: How a GCG run that ran to its own end stops (not cut short by the time budget or Ctrl-C).
GCG_ENDS = ("patience", "num_steps", "exhausted")


def _counted(run: str, stop: str, method: str) -> bool:
    """Is this row one of the restarts that ran to their end: a sweep, or for GCG alone a GCG run?"""
    if method == "gcg":
        return run.startswith("gcg") and stop in GCG_ENDS
    return run != "gcg" and stop in ("converged", "max_passes")


def restart_agreement(runs: list[dict], method: str, best: float, tol: float) -> tuple[list[float], int]:
    """End values of the restarts that ran to their end (the sweeps; for GCG alone its runs, when it
    restarted), and how many are within ``tol`` of ``best``."""
    if method == "gcg" and len(runs) < 2:
        return [], 0  # one GCG run: no restarts
    ends = [float(r["end_score"]) for r in runs if _counted(r["run"], r["stop"], method)]
    return ends, sum(abs(e - best) <= tol * max(1.0, abs(best)) for e in ends)


def _reached(result) -> list:
    """Per row of ``result.runs``: did that restart end at the best value (None: not counted)."""
    runs = result.runs
    if runs.empty:
        return []
    best, tol = result.search_score, result.config.agreement_tol
    counted = pd.Series([_counted(r, st, result.method) and (result.method != "gcg" or len(runs) > 1)
                         for r, st in zip(runs["run"], runs["stop"])], index=runs.index)
    reached = (runs["end_score"] - best).abs() <= tol * max(1.0, abs(best))
    return [bool(r) if c else None for r, c in zip(reached, counted)]


def _gcg_was_optimal(result) -> bool | None:
    """For a ``"both"`` search whose sweeps scan every candidate: was GCG's best already single-swap
    optimal (the polish from it ran to its end without a move)? None when that is not known."""
    runs = result.runs
    if result.method != "both" or result.config.shortlist_size() is not None or len(runs) < 2:
        return None
    polish = runs.iloc[1]
    if polish["start_kind"] != "gcg" or not polish["converged"]:
        return None
    return bool(polish["moves"] == 0)


def results_table(results: Sequence, label=None) -> pd.DataFrame:
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


def restarts_table(results: Sequence, tokenizer=None, label=None) -> pd.DataFrame:
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
