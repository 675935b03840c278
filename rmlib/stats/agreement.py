"""Rank agreement between rankers (models, humans) and its MDS embedding.

Input is a *wide* table: index = item (decoded token string or item name),
one float column per ranker. Agreement is computed over pairwise-complete
rows (items both rankers scored).

Rank-biased overlap
-------------------
:func:`rbo` implements Webber, Moffat & Zobel (2010), "A similarity measure
for indefinite rankings", ACM TOIS 28(4). With ``X_d`` the size of the
overlap of the two top-``d`` prefixes and ``A_d = X_d / d``:

* ``variant="ext"`` (default): the extrapolated RBO_ext of their eq. (32),
  which assumes the agreement seen at the evaluation depth continues below
  it; for two complete rankings of the same items evaluated at full depth it
  is the exact (infinite-sum) RBO. Uneven list lengths are handled as in
  eq. (32).
* ``variant="truncated"``: ``(1 - p) * sum_{d=1..k} p^(d-1) A_d``, the sum cut
  at depth ``k``: the quantity the paper's ``rbo_matrix`` computed, with
  ``k = int(log(1e-6) / log(p)) + 1`` (132 for ``p = 0.9``), the smallest
  depth whose tail weight ``p^k`` is below ``1e-6``. It is a lower bound
  that misses at most that tail weight, so with the paper's settings it is
  within 1e-6 of RBO_ext on full rankings.

The paper used ``p = 0.9`` (the weight of the top 10 ranks is about 86%).
Rankings from a table are the items sorted by descending score; ties are
broken by table order (a stable sort).
"""

from __future__ import annotations


import numpy as np
import pandas as pd
from scipy import stats

from rmlib.stats.tau import kendall_tau_b, kendall_tau_b_matrix
from ..errors import InputError

METHODS = ("kendall", "spearman", "rbo")

PAPER_RBO_P = 0.9
PAPER_RBO_THRESHOLD = 1e-6


def paper_rbo_depth(p: float = PAPER_RBO_P, threshold: float = PAPER_RBO_THRESHOLD) -> int:
    """The evaluation depth of the paper's truncated RBO, ``int(log(t)/log(p)) + 1``:
    the smallest ``k`` with ``p**k < t``."""
    return int(np.log(threshold) / np.log(p)) + 1


def _overlaps(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``X_d`` for ``d = 1..max(len(a), len(b))`` (index ``d - 1``).

    An item in both lists enters both prefixes at depth
    ``max(pos_a, pos_b) + 1``; for ``d`` beyond the shorter list the shorter
    list counts whole, which this also gives.
    """
    la, lb = len(a), len(b)
    ia = pd.Index(a)
    ib = pd.Index(b)
    if not ia.is_unique or not ib.is_unique:
        raise InputError("rankings must not repeat an item")
    pos_b = ib.get_indexer(ia)
    shared = pos_b >= 0
    depth = np.maximum(np.arange(la)[shared], pos_b[shared])  # 0-based
    counts = np.bincount(depth, minlength=max(la, lb))
    return np.cumsum(counts)


def rbo(ranking_a, ranking_b, p: float = PAPER_RBO_P, depth: int | None = None,
        variant: str = "ext") -> float:
    """Rank-biased overlap of two rankings (best first), in [0, 1].

    ``ranking_a``/``ranking_b``: sequences of distinct items, best first
    (they may have different lengths and need not hold the same items).
    ``depth``: evaluate on the top ``depth`` of each list (default: the
    whole lists for ``"ext"``, :func:`paper_rbo_depth` for ``"truncated"``).
    See the module docstring for the variants.
    """
    if not 0 < p < 1:
        raise InputError(f"p must be in (0, 1), got {p}")
    if variant not in ("ext", "truncated"):
        raise InputError(f"variant must be 'ext' or 'truncated', got {variant!r}")
    a = np.asarray(list(ranking_a), dtype=object)
    b = np.asarray(list(ranking_b), dtype=object)
    if depth is None and variant == "truncated":
        depth = paper_rbo_depth(p)
    if depth is not None:
        if depth < 1:
            raise InputError(f"depth must be positive, got {depth}")
        a, b = a[:depth], b[:depth]
    if len(a) == 0 or len(b) == 0:
        raise InputError("rankings must not be empty")
    return _rbo_from_overlaps(_overlaps(a, b), len(a), len(b), p, variant)


def _rbo_from_overlaps(x: np.ndarray, la: int, lb: int, p: float, variant: str) -> float:
    """RBO from the overlaps ``X_1..X_l`` of lists of lengths ``la``, ``lb``."""
    x = np.asarray(x, dtype=float)
    d = np.arange(1, len(x) + 1, dtype=float)
    if variant == "truncated":
        k = min(la, lb)
        w = (1 - p) * p ** (d[:k] - 1)
        return float(np.dot(w, x[:k] / d[:k]))
    s, l_ = min(la, lb), max(la, lb)
    x_s, x_l = x[s - 1], x[l_ - 1]
    pd_ = p**d
    term1 = np.dot(x / d, pd_)  # d = 1..l
    dd = d[s:]  # d = s+1..l
    term2 = np.dot(x_s * (dd - s) / (s * dd), pd_[s:])
    tail = ((x_l - x_s) / l_ + x_s / s) * p**l_
    return float((1 - p) / p * (term1 + term2) + tail)


def _positions(values: np.ndarray) -> np.ndarray:
    """0-based position of each row in the descending ranking (ties: row order)."""
    order = np.argsort(-values, kind="stable")
    pos = np.empty(len(values), dtype=np.int64)
    pos[order] = np.arange(len(values))
    return pos


def _rbo_same_items(pos_a: np.ndarray, pos_b: np.ndarray, p: float, depth: int | None,
                    variant: str) -> float:
    """RBO of two rankings of the same n items given as positions (fast path
    of :func:`rbo`: identical to ranking the items and calling it)."""
    n = len(pos_a)
    if depth is None and variant == "truncated":
        depth = paper_rbo_depth(p)
    k = n if depth is None else min(depth, n)
    x = np.cumsum(np.bincount(np.maximum(pos_a, pos_b), minlength=n))[:k]
    return _rbo_from_overlaps(x, k, k, p, variant)


def rank_agreement(table: pd.DataFrame, method: str = "kendall", *, p: float = PAPER_RBO_P,
                   depth: int | None = None, rbo_variant: str = "ext",
                   min_items: int = 3) -> pd.DataFrame:
    """Pairwise rank agreement between the columns of a wide table.

    Returns a square DataFrame (index and columns = the table's columns)
    with 1 on the diagonal (for RBO: the RBO of a column with itself, 1 up
    to the truncation of ``"truncated"``). Each pair uses the rows where both
    columns are non-missing; ``df.attrs["n_items"]`` holds the pairwise
    counts.

    ``method``: ``"kendall"`` (τ-b, ties handled; :func:`rmlib.stats.tau.kendall_tau_b`,
    equal to :func:`scipy.stats.kendalltau`; all pairs share per-column tie
    counts when there is no missing value), ``"spearman"`` (Pearson on average ranks; all pairs
    in one matrix product when there is no missing value) or ``"rbo"``
    (:func:`rbo` of the two descending rankings; ``p``, ``depth`` and
    ``rbo_variant`` passed on).
    """
    if method not in METHODS:
        raise InputError(f"method must be one of {METHODS}, got {method!r}")
    if not isinstance(table, pd.DataFrame):
        raise TypeError("table must be a wide DataFrame (index = item, one column per ranker)")
    if not table.columns.is_unique:
        raise InputError("table has duplicate column names")
    if not table.index.is_unique and method == "rbo":
        raise InputError("RBO needs unique items: the table index has duplicates")
    values = table.apply(pd.to_numeric, errors="raise").to_numpy(dtype=float)
    cols = list(table.columns)
    k = len(cols)
    finite = ~np.isnan(values)
    n_items = finite.T.astype(int) @ finite.astype(int)
    small = n_items < min_items
    if small.any():
        i, j = map(int, np.argwhere(small)[0])
        raise InputError(
            f"columns {cols[i]!r} and {cols[j]!r} share only {n_items[i, j]} scored items "
            f"(need at least {min_items})"
        )
    out = np.ones((k, k))
    if method == "rbo":
        if not 0 < p < 1:
            raise InputError(f"p must be in (0, 1), got {p}")
        if rbo_variant not in ("ext", "truncated"):
            raise InputError(f"rbo_variant must be 'ext' or 'truncated', got {rbo_variant!r}")
        if depth is not None and depth < 1:
            raise InputError(f"depth must be positive, got {depth}")
        positions = [_positions(values[:, c]) if finite[:, c].all() else None for c in range(k)]
    if method == "spearman" and finite.all():
        ranks = np.apply_along_axis(stats.rankdata, 0, values)
        out = np.corrcoef(ranks, rowvar=False)
    elif method == "kendall" and finite.all():
        out = kendall_tau_b_matrix(pd.DataFrame(values))
        np.fill_diagonal(out, 1.0)
    else:
        for i in range(k):
            for j in range(i, k):
                m = finite[:, i] & finite[:, j]
                if method == "kendall":
                    v = 1.0 if i == j else kendall_tau_b(values[m, i], values[m, j])
                elif method == "spearman":
                    v = 1.0 if i == j else float(stats.spearmanr(values[m, i], values[m, j]).statistic)
                else:
                    if m.all():
                        pa, pb = positions[i], positions[j]
                    else:
                        pa, pb = _positions(values[m, i]), _positions(values[m, j])
                    v = _rbo_same_items(pa, pb, p, depth, rbo_variant)
                out[i, j] = out[j, i] = v
    result = pd.DataFrame(out, index=pd.Index(cols, name=table.columns.name), columns=list(cols))
    result.attrs["method"] = method
    result.attrs["n_items"] = pd.DataFrame(n_items, index=cols, columns=cols).to_dict()
    return result


def mds_embedding(agreement: pd.DataFrame, n_components: int = 2, seed: int = 0,
                  n_init: int = 4) -> pd.DataFrame:
    """Metric MDS of an agreement matrix, on dissimilarity ``1 - agreement``.

    Uses :class:`sklearn.manifold.MDS` (SMACOF, precomputed
    dissimilarities, random initialisation, best of ``n_init`` runs; the
    paper used scikit-learn's then-default ``n_init=4`` with
    ``random_state=42``). Returns a DataFrame indexed like ``agreement``
    with columns ``dim1..dimN``; ``df.attrs["stress"]`` holds the final
    (raw) stress. Coordinates are defined up to rotation and reflection.
    """
    from sklearn.manifold import MDS

    if agreement.shape[0] != agreement.shape[1] or list(agreement.index) != list(agreement.columns):
        raise InputError("agreement must be a square matrix with the same labels on both axes")
    diss = 1.0 - agreement.to_numpy(dtype=float)
    if np.isnan(diss).any():
        raise InputError("agreement contains NaN")
    if not np.allclose(diss, diss.T):
        raise InputError("agreement must be symmetric")
    np.fill_diagonal(diss, 0.0)
    mds = MDS(n_components=n_components, metric_mds=True, metric="precomputed",
              n_init=n_init, init="random", random_state=seed, normalized_stress=False)
    coords = mds.fit_transform(diss)
    out = pd.DataFrame(coords, index=agreement.index,
                       columns=[f"dim{i + 1}" for i in range(n_components)])
    out.attrs["stress"] = float(mds.stress_)
    return out


def upper_triangle(matrix: pd.DataFrame, labels=None, *, what: str = "matrix") -> pd.Series:
    """The strictly-upper-triangle entries of a square matrix as a Series
    indexed by (row label, column label) pairs, row-major.

    ``labels``: take the rows and columns in this order first (a ``KeyError``
    naming ``what`` and the missing labels when the matrix lacks some);
    default: the matrix as it is, which must then have the same labels on
    both axes. The one triangle helper (:mod:`rmlib.stats.rsa`,
    :class:`rmlib.stats.elo.TauBootstrap` and the chapters use it).
    """
    if labels is None:
        if matrix.shape[0] != matrix.shape[1] or list(matrix.index) != list(matrix.columns):
            raise InputError(f"{what} must be square with the same labels on both axes (or pass labels=)")
        labels = matrix.index
    else:
        labels = pd.Index(labels)
        missing = [x for x in labels if x not in matrix.index or x not in matrix.columns]
        if missing:
            raise KeyError(f"{what} lacks rows/columns for {missing}")
        matrix = matrix.loc[labels, labels]
    arr = matrix.to_numpy()
    i, j = np.triu_indices(len(labels), k=1)
    idx = pd.MultiIndex.from_arrays([labels[i], labels[j]], names=["a", "b"])
    return pd.Series(arr[i, j], index=idx)


def _require_prompts(long: pd.DataFrame, column: str, wanted, what: str) -> None:
    """A prompt the table does not hold is a typo, not an empty answer: say which prompts it holds."""
    held = list(dict.fromkeys(long[column].astype(str)))
    missing = [p for p in wanted if str(p) not in set(held)]
    if missing:
        raise InputError(f"{what}: no rows for prompt {missing[0]!r}; the table's prompts: {held}")


def prompt_taus(long: pd.DataFrame, first: str, second: str, *, by: str = "model", key: str = "token_id",
                prompt: str = "prompt", value: str = "score") -> pd.DataFrame:
    """Per ``by`` (a model): Kendall's tau-b between its scores under prompt ``first`` and under ``second``.

    Items are matched on ``key`` (those scored under both). Near 1: the
    prompt hardly changes the ranking (e.g. a positive and a negative
    question ranked alike); near -1: the second prompt reverses it.
    Columns ``by, n, tau``.
    """
    from .tau import kendall_tau_b

    for col in (by, key, prompt, value):
        if col not in long.columns:
            raise InputError(f"prompt_taus: no column {col!r} (columns: {list(long.columns)})")
    _require_prompts(long, prompt, (first, second), "prompt_taus")
    rows = []
    for name, g in long.groupby(by, sort=False, observed=True):
        a = g[g[prompt] == first].groupby(key, observed=True)[value].mean()
        b = g[g[prompt] == second].groupby(key, observed=True)[value].mean()
        common = a.index.intersection(b.index)
        if len(common) < 2:
            continue
        rows.append({by: name, "n": len(common),
                     "tau": float(kendall_tau_b(a.loc[common].to_numpy(), b.loc[common].to_numpy()))})
    return pd.DataFrame(rows, columns=[by, "n", "tau"])


def prompt_overlap(long: pd.DataFrame, first: str, second: str, n: int = 10, *, end: str = "top", by: str = "model",
                   key: str = "token_id", text: str = "decoded", prompt: str = "prompt",
                   value: str = "score") -> pd.DataFrame:
    """Per ``by`` (a model): the items among its ``n`` highest-scoring (``end="top"``) or lowest
    (``"bottom"``) under prompt ``first`` that are also there under ``second``.

    Items are matched on ``key``; only items scored under both prompts take
    part. Columns ``by, n`` (the list length), ``shared`` (how many) and
    ``items`` (the list of their ``text``, in ``first``'s order: a table
    shows each item on its own, so ``" Great"`` and ``"Great"`` stay apart). A
    positive and a negative question whose lists share most items are read
    alike: the prompt hardly moves the ranking.
    """
    if end not in ("top", "bottom"):
        raise InputError(f"end must be 'top' or 'bottom', got {end!r}")
    if n < 1:
        raise InputError(f"n must be positive, got {n}")
    for col in (by, key, text, prompt, value):
        if col not in long.columns:
            raise InputError(f"prompt_overlap: no column {col!r} (columns: {list(long.columns)})")
    _require_prompts(long, prompt, (first, second), "prompt_overlap")
    rows = []
    for name, g in long.groupby(by, sort=False, observed=True):
        a, b = g[g[prompt] == first], g[g[prompt] == second]
        both = set(a[key]) & set(b[key])
        a, b = a[a[key].isin(both)], b[b[key].isin(both)]
        if a.empty:
            continue
        ascending = end == "bottom"  # ties keep table order
        listed = a.sort_values(value, ascending=ascending, kind="stable").head(n)
        other = set(b.sort_values(value, ascending=ascending, kind="stable").head(n)[key])
        shared = listed[listed[key].isin(other)]
        rows.append({by: name, "n": len(listed), "shared": len(shared), "items": list(map(str, shared[text]))})
    return pd.DataFrame(rows, columns=[by, "n", "shared", "items"])


__all__ = ["METHODS", "mds_embedding", "paper_rbo_depth", "prompt_overlap", "prompt_taus", "rank_agreement", "rbo",
           "upper_triangle"]
