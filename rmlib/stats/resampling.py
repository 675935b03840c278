"""Resampling: the one bootstrap and permutation framework of rmlib.

* :func:`bootstrap_indices` is the one random draw of every bootstrap here
  (``n_boot`` resamples of ``n`` rows, ``numpy.random.default_rng(seed)``);
  :func:`bootstrap_weights` gives the same draws as item multiplicities, the
  form :func:`rmlib.stats.tau.kendall_tau_b` takes (so ``elo.bootstrap_taus``
  resamples exactly the rows ``bootstrap_ci`` would for the same seed);
* :func:`percentile_interval` is the one percentile interval (NaN replicates,
  a statistic undefined on a resample, are left out);
* :func:`bootstrap_ci` (any statistic of a table) and
  :func:`permutation_test` (two independent samples) are built on them;
  :func:`matched_permutation_test` permutes within matched sets (a target
  and its own controls).

Both follow the conventions of :func:`scipy.stats.bootstrap` and
:func:`scipy.stats.permutation_test` (percentile / BCa intervals; p-values
with the +1 correction for random permutations, exact enumeration when the
number of distinct splits is at most ``n_perm``) so that results can be
checked against SciPy, but they resample *rows* of a table, which is what the
book needs (items of a score table, tokens of a vocabulary).
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from collections.abc import Callable

import numpy as np
import pandas as pd
from scipy import special
from ..errors import InputError


def _to_series(self) -> pd.Series:
    """The result's fields as a pandas Series, all but the resampled distribution
    (scalar statistics only)."""
    return pd.Series({f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.repr})


@dataclasses.dataclass(frozen=True)
class BootstrapResult:
    """Result of :func:`bootstrap_ci`.

    ``statistic`` is ``func(data)``; ``low``/``high`` the interval ends;
    ``se`` the standard deviation (ddof=1) of the bootstrap distribution;
    ``distribution`` the ``n_boot`` bootstrap replicates (shape
    ``(n_boot,)`` or ``(n_boot, k)`` for a vector-valued ``func``).
    """

    statistic: float | np.ndarray
    low: float | np.ndarray
    high: float | np.ndarray
    se: float | np.ndarray
    ci: float
    n_boot: int
    method: str
    distribution: np.ndarray = dataclasses.field(repr=False)

    to_series = _to_series


def _n_rows(data) -> int:
    if isinstance(data, (pd.DataFrame, pd.Series)):
        return len(data)
    arr = np.asarray(data)
    if arr.ndim == 0:
        raise InputError("data must have at least one dimension (rows to resample)")
    return arr.shape[0]


def _take(data, idx):
    if isinstance(data, (pd.DataFrame, pd.Series)):
        return data.iloc[idx]
    return np.asarray(data)[idx]


def bootstrap_indices(n: int, n_boot: int, seed: int | None = 0) -> np.ndarray:
    """``(n_boot, n)`` row indices drawn with replacement: the draw every bootstrap in rmlib uses."""
    if n < 1 or n_boot < 1:
        raise InputError(f"need n >= 1 rows and n_boot >= 1 resamples, got n={n}, n_boot={n_boot}")
    return np.random.default_rng(seed).integers(0, n, size=(n_boot, n))


def bootstrap_weights(n: int, n_boot: int, seed: int | None = 0) -> np.ndarray:
    """``(n_boot, n)`` multinomial counts: how often each row appears in each resample
    of :func:`bootstrap_indices` (same ``seed``, same resamples)."""
    idx = bootstrap_indices(n, n_boot, seed)
    W = np.zeros((n_boot, n), dtype=np.int64)
    np.add.at(W, (np.repeat(np.arange(n_boot), n), idx.ravel()), 1)
    return W


def percentile_interval(dist, ci: float = 0.95, axis: int = 0):
    """Percentile interval ``(low, high)`` of bootstrap replicates along ``axis``.

    Linear interpolation (NumPy's default); NaN replicates are left out.
    Scalars for 1-D ``dist``, arrays otherwise.
    """
    if not 0 < ci < 1:
        raise InputError(f"ci must be in (0, 1), got {ci}")
    alpha = (1 - ci) / 2
    low, high = np.nanquantile(np.asarray(dist, dtype=float), [alpha, 1 - alpha], axis=axis)
    return _scalar(low), _scalar(high)


def bootstrap_ci(
    func: Callable,
    data,
    n_boot: int = 2000,
    seed: int | None = 0,
    ci: float = 0.95,
    method: str = "percentile",
    vectorized: bool = False,
) -> BootstrapResult:
    """Bootstrap confidence interval of ``func(data)``, resampling rows.

    Parameters
    ----------
    func
        Called on a resample of ``data`` (same type: DataFrame, Series or
        array, rows drawn with replacement); returns a scalar or a 1-D
        array. With ``vectorized=True`` and array ``data``, ``func`` is
        called once as ``func(samples, axis=1)`` on an array of shape
        ``(n_boot, n, ...)`` and must return ``n_boot`` values (e.g.
        ``np.mean``, ``np.median``): much faster than one call per resample.
    data
        DataFrame, Series or array; its first axis holds the items.
    n_boot, seed
        Number of resamples and the seed of a ``numpy.random.default_rng``.
    ci
        Confidence level, in (0, 1).
    method
        ``"percentile"`` or ``"bca"`` (bias-corrected and accelerated,
        acceleration from the jackknife, as in SciPy).
    """
    if not 0 < ci < 1:
        raise InputError(f"ci must be in (0, 1), got {ci}")
    if method not in ("percentile", "bca"):
        raise InputError(f"method must be 'percentile' or 'bca', got {method!r}")
    if n_boot < 1:
        raise InputError(f"n_boot must be positive, got {n_boot}")
    n = _n_rows(data)
    if n < 2:
        raise InputError(f"need at least 2 rows to bootstrap, got {n}")
    if vectorized and isinstance(data, (pd.DataFrame, pd.Series)):
        raise InputError("vectorized=True needs array data; pass data.to_numpy() or vectorized=False")

    idx = bootstrap_indices(n, n_boot, seed)
    theta = np.asarray(func(data), dtype=float)
    if vectorized:
        dist = np.asarray(func(np.asarray(data)[idx], axis=1), dtype=float)
        if dist.shape[0] != n_boot:
            raise InputError(
                f"vectorized func returned shape {dist.shape}; expected {n_boot} values along axis 0"
            )
    else:
        dist = np.array([np.asarray(func(_take(data, i)), dtype=float) for i in idx])

    alpha = (1 - ci) / 2
    if method == "percentile":
        low, high = percentile_interval(dist, ci)
    else:
        # Bias correction z0 from the share of replicates below theta
        # (ties counted half, as SciPy does); acceleration from the jackknife.
        below = (dist < theta).mean(axis=0) + 0.5 * (dist == theta).mean(axis=0)
        z0 = special.ndtri(below)
        jack = np.array(
            [np.asarray(func(_take(data, np.delete(np.arange(n), i))), dtype=float) for i in range(n)]
        )
        d = jack.mean(axis=0) - jack
        num = (d**3).sum(axis=0)
        den = 6 * ((d**2).sum(axis=0)) ** 1.5
        with np.errstate(divide="ignore", invalid="ignore"):
            a_hat = num / den
        z_low, z_high = special.ndtri(alpha), special.ndtri(1 - alpha)
        q_low = special.ndtr(z0 + (z0 + z_low) / (1 - a_hat * (z0 + z_low)))
        q_high = special.ndtr(z0 + (z0 + z_high) / (1 - a_hat * (z0 + z_high)))
        low = _percentile_each(dist, q_low)
        high = _percentile_each(dist, q_high)
    se = dist.std(axis=0, ddof=1)
    return BootstrapResult(
        statistic=_scalar(theta),
        low=_scalar(low),
        high=_scalar(high),
        se=_scalar(se),
        ci=ci,
        n_boot=n_boot,
        method=method,
        distribution=dist,
    )


def _percentile_each(dist: np.ndarray, q) -> np.ndarray:
    q = np.atleast_1d(q)
    if dist.ndim == 1:
        return np.percentile(dist, 100 * q[0])
    return np.array([np.percentile(dist[:, j], 100 * q[j]) for j in range(dist.shape[1])])


def _scalar(x):
    x = np.asarray(x, dtype=float)
    return float(x) if x.ndim == 0 else x


# --------------------------------------------------------------------------
# Permutation test
# --------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class PermutationResult:
    """Result of :func:`permutation_test`.

    ``statistic`` is the observed statistic (``stat(a, b)``); ``pvalue``
    follows SciPy's conventions; ``cohens_d`` is the standardised mean
    difference of ``a`` minus ``b`` with the pooled (ddof=1) standard
    deviation; ``exact`` says whether all splits were enumerated.
    """

    statistic: float
    pvalue: float
    cohens_d: float
    n_perm: int
    exact: bool
    alternative: str
    null_distribution: np.ndarray = dataclasses.field(repr=False)

    to_series = _to_series


def cohens_d(a, b) -> float:
    """Cohen's d of ``a`` minus ``b``: mean difference over the pooled SD.

    Pooled variance ``((na-1) var_a + (nb-1) var_b) / (na + nb - 2)`` with
    ddof=1 variances (no small-sample Hedges correction).
    """
    a = np.asarray(a, dtype=float)
    b = np.asarray(b, dtype=float)
    na, nb = len(a), len(b)
    if na + nb < 3:
        raise InputError("Cohen's d needs at least 3 observations in total")
    pooled = ((na - 1) * a.var(ddof=1 if na > 1 else 0) + (nb - 1) * b.var(ddof=1 if nb > 1 else 0)) / (
        na + nb - 2
    )
    return float((a.mean() - b.mean()) / np.sqrt(pooled))


def _group_stats(stat: str | Callable):
    """A function of (pooled, index-matrix of group a, na) -> statistic per row."""
    if stat == "mean_diff":

        def f(pooled, mask):
            na = mask.sum(axis=1)
            nb = mask.shape[1] - na
            sa = mask @ pooled
            return sa / na - (pooled.sum() - sa) / nb

        return f
    if stat == "median_diff":

        def f(pooled, mask):
            out = np.empty(mask.shape[0])
            for r, m in enumerate(mask):
                out[r] = np.median(pooled[m]) - np.median(pooled[~m])
            return out

        return f
    if callable(stat):

        def f(pooled, mask):
            return np.array([float(stat(pooled[m], pooled[~m])) for m in mask])

        return f
    raise InputError(f"stat must be 'mean_diff', 'median_diff' or a callable(a, b), got {stat!r}")


def permutation_test(
    a,
    b,
    n_perm: int = 9999,
    seed: int | None = 0,
    stat: str | Callable = "mean_diff",
    alternative: str = "two-sided",
) -> PermutationResult:
    """Two-sample permutation test of ``stat(a, b)`` (independent samples).

    The null distribution relabels the pooled values at random (``n_perm``
    random splits, p-value ``(k + 1) / (n_perm + 1)``) or, when the number of
    distinct splits ``C(na + nb, na)`` is at most ``n_perm``, enumerates
    them all (exact p-value ``k / C``). Two-sided p-values are twice the
    smaller one-sided p-value, capped at 1, and comparisons allow a relative
    tolerance of ``100 * eps`` — both as in :func:`scipy.stats.permutation_test`.

    ``stat``: ``"mean_diff"`` (mean of a minus mean of b; vectorised),
    ``"median_diff"`` or a callable ``stat(a, b) -> float``.
    ``alternative``: ``"two-sided"``, ``"greater"`` or ``"less"``.
    """
    if alternative not in ("two-sided", "greater", "less"):
        raise InputError(f"alternative must be 'two-sided', 'greater' or 'less', got {alternative!r}")
    a = np.asarray(a, dtype=float).ravel()
    b = np.asarray(b, dtype=float).ravel()
    if len(a) < 1 or len(b) < 1:
        raise InputError("both samples need at least one value")
    if np.isnan(a).any() or np.isnan(b).any():
        raise InputError("samples contain NaN; drop missing values first")
    if n_perm < 1:
        raise InputError(f"n_perm must be positive, got {n_perm}")
    f = _group_stats(stat)
    pooled = np.concatenate([a, b])
    na, n = len(a), len(pooled)
    observed_mask = np.zeros((1, n), dtype=bool)
    observed_mask[0, :na] = True
    observed = float(f(pooled, observed_mask)[0])

    n_splits = math.comb(n, na)
    exact = n_splits <= n_perm
    if exact:
        nulls = []
        for chunk in _batched(itertools.combinations(range(n), na), 4096):
            mask = np.zeros((len(chunk), n), dtype=bool)
            rows = np.repeat(np.arange(len(chunk)), na)
            mask[rows, np.asarray(chunk).ravel()] = True
            nulls.append(f(pooled, mask))
        null = np.concatenate(nulls)
    else:
        rng = np.random.default_rng(seed)
        nulls = []
        for start in range(0, n_perm, 1024):
            m = min(1024, n_perm - start)
            order = rng.permuted(np.tile(np.arange(n), (m, 1)), axis=1)
            mask = np.zeros((m, n), dtype=bool)
            np.put_along_axis(mask, order[:, :na], True, axis=1)
            nulls.append(f(pooled, mask))
        null = np.concatenate(nulls)
    d = cohens_d(a, b) if n >= 3 else float("nan")
    return _permutation_result(observed, null, exact, alternative, d)


def _permutation_result(observed: float, null: np.ndarray, exact: bool, alternative: str,
                        d: float) -> PermutationResult:
    """The p-value of ``observed`` against its null distribution, SciPy's conventions: +1 correction
    for random permutations, a relative tolerance of ``100 * eps``, two-sided = twice the smaller side."""
    n_used = len(null)
    adj = 0 if exact else 1
    gamma = abs(np.finfo(float).eps * 100 * observed)
    p_less = (np.count_nonzero(null <= observed + gamma) + adj) / (n_used + adj)
    p_greater = (np.count_nonzero(null >= observed - gamma) + adj) / (n_used + adj)
    p = {"less": p_less, "greater": p_greater, "two-sided": 2 * min(p_less, p_greater)}[alternative]
    return PermutationResult(
        statistic=observed,
        pvalue=float(min(max(p, 0.0), 1.0)),
        cohens_d=d,
        n_perm=n_used,
        exact=exact,
        alternative=alternative,
        null_distribution=null,
    )


def matched_permutation_test(sets, n_perm: int = 9999, seed: int | None = 0,
                             alternative: str = "two-sided") -> PermutationResult:
    """Permutation test for matched sets: each set is one target and its own controls.

    ``sets``: a sequence of 1-D arrays, the target's value first, then its
    controls' values (at least one control per set). The statistic is the mean
    over sets of *target minus the mean of its controls*. Under the null
    hypothesis the target is exchangeable with its controls within its set, so
    the null distribution draws, in every set independently, one member to play
    the target: ``n_perm`` random draws (p-value ``(k + 1) / (n_perm + 1)``),
    or all ``prod(set sizes)`` assignments when that is at most ``n_perm``
    (exact, ``k / N``). Two-sided p-values and the tolerance follow
    :func:`permutation_test`. ``cohens_d``: targets against all controls,
    pooled SD (:func:`cohens_d`).
    """
    if alternative not in ("two-sided", "greater", "less"):
        raise InputError(f"alternative must be 'two-sided', 'greater' or 'less', got {alternative!r}")
    if n_perm < 1:
        raise InputError(f"n_perm must be positive, got {n_perm}")
    groups = [np.asarray(g, dtype=float).ravel() for g in sets]
    if not groups:
        raise InputError("no matched sets given")
    for i, g in enumerate(groups):
        if len(g) < 2:
            raise InputError(f"set {i} has {len(g)} value(s): each set needs its target and at least one control")
        if np.isnan(g).any():
            raise InputError(f"set {i} contains NaN; drop missing values first")
    sizes = np.array([len(g) for g in groups])
    # the difference when member j plays the target: (m x_j - sum) / (m - 1)
    diffs = [(len(g) * g - g.sum()) / (len(g) - 1) for g in groups]
    observed = float(np.mean([d[0] for d in diffs]))
    n_assign = math.prod(int(m) for m in sizes)
    exact = n_assign <= n_perm
    if exact:
        null = np.array([np.mean(c) for c in itertools.product(*diffs)])
    else:
        rng = np.random.default_rng(seed)
        picks = (rng.random((n_perm, len(groups))) * sizes).astype(np.int64)
        table = np.full((len(groups), int(sizes.max())), np.nan)
        for i, d in enumerate(diffs):
            table[i, :len(d)] = d
        null = table[np.arange(len(groups)), picks].mean(axis=1)
    targets = np.array([g[0] for g in groups])
    controls = np.concatenate([g[1:] for g in groups])
    with np.errstate(divide="ignore", invalid="ignore"):  # no spread at all: d is NaN
        d = cohens_d(targets, controls) if len(targets) + len(controls) >= 3 else float("nan")
    return _permutation_result(observed, null, exact, alternative, d)


def _batched(iterable, size):
    it = iter(iterable)
    while chunk := list(itertools.islice(it, size)):
        yield chunk


__all__ = [
    "BootstrapResult",
    "PermutationResult",
    "bootstrap_ci",
    "bootstrap_indices",
    "bootstrap_weights",
    "cohens_d",
    "matched_permutation_test",
    "percentile_interval",
    "permutation_test",
]
