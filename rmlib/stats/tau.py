"""Kendall's tau-b: the one implementation rmlib uses (fast, ties handled, bootstrap weights).

:func:`kendall_tau_b` equals ``scipy.stats.kendalltau(x, y, variant="b").statistic``
(ties in either variable included; checked in ``tests/test_stats_tau.py``) and runs
in O(n log^2 n) with NumPy only. It takes bootstrap resamples as integer weights
(item multiplicities, :func:`rmlib.stats.resampling.bootstrap_weights`), so all
resamples of a pair share one merge-sort plan and run as a handful of array
operations. :func:`kendall_tau_b_matrix` does every column pair of a wide table,
sharing the per-column tie counts. Users: :mod:`rmlib.stats.agreement`
(``rank_agreement(method="kendall")``), :mod:`rmlib.stats.elo` (bootstrap
intervals), :mod:`rmlib.stats.lexical` (``prompt_correlation(method="kendall")``).
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd
from ..errors import InputError


@dataclasses.dataclass(frozen=True)
class _TauPlan:
    """What tau-b of one (x, y) pair needs, independent of the weights.

    The items sorted by x (ties by y) give a sequence of y-ranks whose
    weighted inversion count is the number of discordant pairs. A bottom-up
    merge sort splits every inversion into exactly one (left half, right
    half) pair of one block at one level; at each level the left halves are
    sorted by (block, y), so "left items of my block with a larger y" is a
    contiguous run ``[start, end)``. Concatenating the levels gives one
    gather list ``left`` and, per right item ``right``, its run.
    """

    left: np.ndarray
    right: np.ndarray
    start: np.ndarray
    end: np.ndarray
    x_groups: np.ndarray  # items in groups of equal x (groups of 2+ only) ...
    x_bounds: np.ndarray  # ... and the group starts in that order
    y_groups: np.ndarray
    y_bounds: np.ndarray
    xy_groups: np.ndarray
    xy_bounds: np.ndarray


def _groups(keys: list[np.ndarray]):
    """Items in groups of equal keys, multi-item groups only.

    Returns the items of those groups, sorted by the keys, and the start
    index of each group in that order. Single items need no grouping:
    their tied pairs (copies of one item) are counted once for all pairs.
    """
    order = np.lexsort(keys[::-1])
    sorted_keys = [k[order] for k in keys]
    change = np.zeros(len(order), dtype=bool)
    change[0] = True
    for k in sorted_keys:
        change[1:] |= k[1:] != k[:-1]
    gid = np.cumsum(change) - 1
    sizes = np.bincount(gid)
    keep = sizes[gid] > 1
    order, change = order[keep], change[keep]
    return order, np.flatnonzero(change)


def _dense_rank(v: np.ndarray) -> np.ndarray:
    _, inv = np.unique(v, return_inverse=True)
    return inv.astype(np.int64)


def _tau_plan(rx: np.ndarray, ry: np.ndarray, margins: bool = True) -> _TauPlan:
    """The plan for dense ranks ``rx``, ``ry``; ``margins=False`` skips the x and y tie
    groups (a caller that has them per column)."""
    n = len(rx)
    order = np.lexsort((ry, rx))  # by x, ties by y: tied-x pairs never count as inversions
    r = ry[order]
    m = int(r.max()) + 1 if n else 1
    pos = np.arange(n)
    cur = pos  # the positions, sorted by r (stably) within each block of w: a bottom-up merge sort
    lefts, rights, starts, ends = [], [], [], []
    offset = 0
    w = 1
    while w < n:
        blk = pos // (2 * w)
        is_left = (pos // w) % 2 == 0
        lp, rp = cur[is_left], pos[~is_left]  # left halves come sorted from the level below
        lkey = blk[lp] * m + r[lp]
        s = np.searchsorted(lkey, blk[rp] * m + r[rp], side="right")
        e = (blk[rp] + 1) * w  # a block with a right half has a full left half of w
        keep = e > s
        lefts.append(order[lp])
        rights.append(order[rp[keep]])
        starts.append(s[keep] + offset)
        ends.append(e[keep] + offset)
        offset += len(lp)
        if 2 * w < n:  # merge: two sorted runs per block of 2w, cheap for a stable sort
            cur = cur[np.argsort(blk * m + r[cur], kind="stable")]
        w *= 2
    cat = (lambda a: np.concatenate(a) if a else np.zeros(0, dtype=np.int64))
    none = (np.zeros(0, dtype=np.int64),) * 2
    xg, xb = _groups([rx]) if margins else none
    yg, yb = _groups([ry]) if margins else none
    xyg, xyb = _groups([rx, ry])
    return _TauPlan(cat(lefts), cat(rights), cat(starts), cat(ends), xg, xb, yg, yb, xyg, xyb)


def _self_pairs(Wt: np.ndarray) -> np.ndarray:
    """Pairs among copies of the same item, sum of C(w_i, 2), per column of Wt."""
    w = Wt.astype(np.float64)
    return (w * (w - 1) / 2).sum(axis=0)


def _tied_pairs(Wt: np.ndarray, order: np.ndarray, bounds: np.ndarray, self_pairs: np.ndarray) -> np.ndarray:
    """Sum over groups of equal value of C(weight of group, 2), per column of Wt (n, B).

    ``order``/``bounds`` list the multi-item groups (:func:`_groups`);
    single items contribute their copies' pairs, already in ``self_pairs``.
    """
    if not len(order):
        return self_pairs.copy()
    members = Wt[order].astype(np.float64)
    g = np.add.reduceat(members, bounds, axis=0)
    return self_pairs + (g * (g - 1) / 2).sum(axis=0) - (members * (members - 1) / 2).sum(axis=0)


def _discordant(plan: _TauPlan, Wt: np.ndarray, chunk: int = 16) -> np.ndarray:
    """Weighted number of discordant pairs, per column of Wt (shape (n, B)).

    Items are rows so that every gather copies contiguous rows of counts;
    columns go in chunks of ``chunk`` resamples so the working arrays stay
    in cache.
    """
    B = Wt.shape[1]
    if not len(plan.right):
        return np.zeros(B)
    out = np.empty(B)
    for c0 in range(0, B, chunk):
        w = np.ascontiguousarray(Wt[:, c0:c0 + chunk])
        cs = np.zeros((len(plan.left) + 1, w.shape[1]), dtype=w.dtype)
        np.cumsum(w[plan.left], axis=0, out=cs[1:])
        runs = cs[plan.end] - cs[plan.start]
        runs *= w[plan.right]
        out[c0:c0 + chunk] = runs.sum(axis=0, dtype=np.int64)
    return out


def _tau_from_counts(n0, n1, n2, n3, dis):
    """tau-b from pair counts (all, tied in x, in y, in both; discordant), NaN when x or y is
    constant. The counts are exact integers in float64; the division and the clip take
    SciPy's floating-point steps, so the result is bit-for-bit ``scipy.stats.kendalltau``."""
    num = n0 - n1 - n2 + n3 - 2 * dis
    ok = (n0 - n1 > 0) & (n0 - n2 > 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        tau = np.clip(num / np.sqrt(n0 - n1) / np.sqrt(n0 - n2), -1.0, 1.0)
    return np.where(ok, tau, np.nan)


def _transposed(W: np.ndarray) -> np.ndarray:
    """Weights as an (n, B) C-contiguous array, int32 when sums cannot overflow."""
    small = W.sum(axis=1).max() * max(int(W.max()), 1) < 2**31 - 1
    return np.ascontiguousarray(W.T, dtype=np.int32 if small else np.int64)


def _tau_weighted(plan: _TauPlan, W: np.ndarray) -> np.ndarray:
    """tau-b for each row of integer weights W (shape (B, n))."""
    Wt = _transposed(W)
    N = W.sum(axis=1).astype(np.float64)
    n0 = N * (N - 1) / 2
    sp = _self_pairs(Wt)
    n1 = _tied_pairs(Wt, plan.x_groups, plan.x_bounds, sp)
    n2 = _tied_pairs(Wt, plan.y_groups, plan.y_bounds, sp)
    n3 = _tied_pairs(Wt, plan.xy_groups, plan.xy_bounds, sp)
    return _tau_from_counts(n0, n1, n2, n3, _discordant(plan, Wt))


def kendall_tau_b(x, y, weights=None):
    """Kendall's tau-b of x and y, equal to ``scipy.stats.kendalltau(x, y)[0]``.

    O(n log^2 n) with NumPy only. ``weights`` are non-negative integer
    multiplicities of the items: ``weights = np.bincount(idx, minlength=n)``
    gives tau-b of the resample ``x[idx], y[idx]`` (each duplicate pair tied
    in both variables, as in the resample itself). A 2-D ``weights`` of
    shape ``(B, n)`` returns B values at once, sharing one sort plan: this
    is how bootstrap intervals of tau stay fast. NaN in x or y is an error
    (drop them first). Returns a float, or an array for 2-D weights; NaN
    when one variable is constant.
    """
    x = np.asarray(x, dtype=float).ravel()
    y = np.asarray(y, dtype=float).ravel()
    if len(x) != len(y):
        raise InputError(f"x and y differ in length ({len(x)} vs {len(y)})")
    if len(x) < 2:
        raise InputError("kendall_tau_b needs at least two items")
    if np.isnan(x).any() or np.isnan(y).any():
        raise InputError("x or y contains NaN; drop incomplete items first")
    one = weights is None or np.ndim(weights) == 1
    W = _as_weights(weights, len(x))
    tau = _tau_weighted(_tau_plan(_dense_rank(x), _dense_rank(y)), W)
    return float(tau[0]) if one else tau


def _as_weights(weights, n: int) -> np.ndarray:
    if weights is None:
        return np.ones((1, n), dtype=np.int64)
    W = np.asarray(weights)
    if W.ndim == 1:
        W = W[None, :]
    if W.ndim != 2 or W.shape[1] != n:
        raise InputError(f"weights must have shape (n,) or (B, n) with n = {n}; got {np.shape(weights)}")
    if not np.issubdtype(W.dtype, np.integer):
        if not np.all(np.equal(np.mod(W, 1), 0)):
            raise InputError("weights must be integer multiplicities (bootstrap counts)")
        W = W.astype(np.int64)
    if (W < 0).any():
        raise InputError("weights must be non-negative")
    return W.astype(np.int64, copy=False)


def kendall_tau_b_matrix(wide: pd.DataFrame, weights=None) -> np.ndarray:
    """tau-b of every pair of columns of ``wide`` (rows with NaN dropped).

    Returns a ``(k, k)`` array, or ``(B, k, k)`` for 2-D ``weights``
    (bootstrap counts over the complete rows). The diagonal is 1 (NaN for
    a column constant in that resample). Symmetric: entry ``(j, i)`` is
    entry ``(i, j)``, for ``i < j`` bit for bit ``kendall_tau_b(col_i, col_j)``. Per-column tie counts are shared
    by all pairs of that column.
    """
    X = wide.dropna().to_numpy(dtype=float)
    n, k = X.shape
    if n < 2:
        raise InputError("need at least two complete rows")
    W = _as_weights(weights, n)
    Wt = _transposed(W)
    N = W.sum(axis=1).astype(np.float64)
    n0 = N * (N - 1) / 2
    sp = _self_pairs(Wt)
    ranks = [_dense_rank(X[:, i]) for i in range(k)]
    ties = [_tied_pairs(Wt, *_groups([r]), sp) for r in ranks]
    out = np.empty((W.shape[0], k, k))
    for i in range(k):
        out[:, i, i] = np.where(n0 - ties[i] > 0, 1.0, np.nan)  # a column with itself
        for j in range(i + 1, k):
            plan = _tau_plan(ranks[i], ranks[j], margins=False)
            n3 = _tied_pairs(Wt, plan.xy_groups, plan.xy_bounds, sp)
            out[:, i, j] = out[:, j, i] = _tau_from_counts(n0, ties[i], ties[j], n3, _discordant(plan, Wt))
    return out[0] if weights is None or np.ndim(weights) == 1 else out


__all__ = ["kendall_tau_b", "kendall_tau_b_matrix"]
