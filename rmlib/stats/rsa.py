"""RSA-style regression: which model facts explain model-model agreement?

Representational similarity analysis here regresses the strictly-upper
triangle of an observed model x model agreement matrix (e.g. Kendall's τ
from :func:`rmlib.stats.agreement.rank_agreement`) on the same triangle of
theoretical similarity matrices built from facts about the models.

Theoretical matrices (:func:`similarity_matrices`) follow the paper's
``figures/generate_figure_2.py`` (Figure 2C):

* ``base_model``: 1 if the two models share a base-model family (the
  paper's ``base_model`` field, "Gemma" / "Llama": the registry's
  ``family`` column), else 0;
* ``developer``: 1 if the same developer, else 0;
* ``params``: ``1 / (1 + |Δ parameters in billions|)``;
* ``rewardbench_rank``: ``1 / (1 + |Δ RewardBench rank|)``.

Regressions (:func:`rsa_regression`) are ordinary least squares
(statsmodels) with an intercept: ``"single"`` fits one model per predictor,
``"multiple"`` one model with all of them, ``"stepwise"`` forward selection
by AIC (start from the intercept-only model; at each step add the predictor
that lowers AIC most; stop when no addition lowers it) or, with
``criterion="pvalue"``, by the smallest p-value below ``alpha_enter``.
The pairs of a similarity matrix are not independent (each model enters
``k - 1`` pairs), so OLS p-values are descriptive and anti-conservative; a
Mantel-style permutation of model labels is the stricter test.

Which cells to regress (``cells=``)
-----------------------------------
``"pairs"`` (default): the ``k (k - 1) / 2`` distinct model pairs, the
strictly-upper triangle (45 for the paper's 10 models). ``"full"``: every
cell of the ``k x k`` matrix, the diagonal included and each pair twice
(``n = k^2 = 100``). The paper's §2.2 numbers for Figure 2A (base model +
RewardBench rank, betas 0.05 / 0.69, R^2 = .80, every single predictor
p < .001) come out only with ``"full"`` (R^2 = .806, 0.050 / 0.692); on the
45 distinct pairs R^2 = .366 and developer alone has p = .59.

The 45 pairs are the defensible analysis: (1) the diagonal is not data —
a model's agreement with itself is 1 by definition, and on the diagonal
every predictor is at its maximum too (same base model, same developer,
no difference in size or rank), so the ten diagonal cells are ten
guaranteed high-high points that fit any predictor equal to 1 on the
diagonal and inflate R^2; (2) a symmetric matrix holds each pair twice, so
regressing both triangles duplicates every observation, doubling ``n``
without new information and shrinking standard errors by about sqrt(2),
which makes p-values far too small. ``"full"`` is kept only to show where
the published numbers come from.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd

from rmlib.stats.agreement import upper_triangle
from ..errors import InputError


def _same(values: np.ndarray) -> np.ndarray:
    return (values[:, None] == values[None, :]).astype(float)


def _inverse_distance(values: np.ndarray) -> np.ndarray:
    v = values.astype(float)
    return 1.0 / (1.0 + np.abs(v[:, None] - v[None, :]))


def similarity_matrices(facts: pd.DataFrame, id_col: str | None = "hub_id",
                        base_col: str = "family", developer_col: str = "developer",
                        params_col: str = "params_b",
                        rank_col: str = "rewardbench_rank") -> dict[str, pd.DataFrame]:
    """Theoretical model x model similarity matrices from a table of facts.

    ``facts``: one row per model, e.g. :func:`rmlib.registry.paper_models`.
    Labels come from ``id_col`` (``None``: the index). Returns
    ``{"base_model", "developer", "params", "rewardbench_rank"}`` -> square
    DataFrames with 1 on the diagonal (see the module docstring).
    """
    needed = [c for c in (base_col, developer_col, params_col, rank_col) if c not in facts.columns]
    if id_col is not None and id_col not in facts.columns:
        needed.append(id_col)
    if needed:
        raise KeyError(f"facts lacks columns {needed} (has {list(facts.columns)})")
    labels = pd.Index(facts[id_col] if id_col is not None else facts.index)
    if not labels.is_unique:
        raise InputError("model labels in facts are not unique")
    mats = {
        "base_model": _same(facts[base_col].to_numpy()),
        "developer": _same(facts[developer_col].to_numpy()),
        "params": _inverse_distance(facts[params_col].to_numpy()),
        "rewardbench_rank": _inverse_distance(facts[rank_col].to_numpy()),
    }
    return {k: pd.DataFrame(m, index=labels, columns=labels) for k, m in mats.items()}


def _cells(matrix: pd.DataFrame, labels: pd.Index, what: str) -> np.ndarray:
    missing = [x for x in labels if x not in matrix.index or x not in matrix.columns]
    if missing:
        raise KeyError(f"{what} lacks rows/columns for {missing}")
    return matrix.loc[labels, labels].to_numpy(dtype=float).ravel()


CELLS = ("pairs", "full")


def design(agreement: pd.DataFrame, predictors: Mapping[str, pd.DataFrame], cells: str = "pairs") -> pd.DataFrame:
    """The regression data: column ``agreement`` and one column per predictor.

    ``cells="pairs"``: one row per model pair (upper triangle, row major in
    ``agreement``'s order). ``cells="full"``: one row per cell of the whole
    matrix, diagonal included, each pair twice (see the module docstring for
    why ``"pairs"`` is the defensible one).
    """
    if cells not in CELLS:
        raise InputError(f"cells must be 'pairs' (distinct model pairs) or 'full' (whole matrix), got {cells!r}")
    if agreement.shape[0] != agreement.shape[1] or list(agreement.index) != list(agreement.columns):
        raise InputError("agreement must be square with the same labels on both axes")
    labels = agreement.index
    if len(labels) < 3:
        raise InputError("need at least 3 models (3 pairs) for an RSA regression")
    if cells == "full":
        k = len(labels)
        i, j = np.repeat(np.arange(k), k), np.tile(np.arange(k), k)
        data = {"agreement": _cells(agreement, labels, "agreement")}
        for name, m in predictors.items():
            data[name] = _cells(m, labels, f"predictor {name!r}")
        out = pd.DataFrame(data, index=pd.MultiIndex.from_arrays([labels[i], labels[j]], names=["a", "b"]))
    else:
        out = pd.DataFrame({"agreement": upper_triangle(agreement, labels, what="agreement").astype(float)})
        for name, m in predictors.items():
            out[name] = upper_triangle(m, labels, what=f"predictor {name!r}").astype(float)
    if out.isna().any().any():
        raise InputError("agreement or a predictor has missing values on the upper triangle")
    return out


def _fit(y: pd.Series, X: pd.DataFrame):
    import statsmodels.api as sm

    Xc = sm.add_constant(X, has_constant="add")
    if np.linalg.matrix_rank(Xc.to_numpy()) < Xc.shape[1]:
        raise InputError(
            f"predictors {list(X.columns)} are collinear (or constant) over the model pairs; "
            "drop one of them"
        )
    return sm.OLS(y, Xc).fit()


def _tidy(res, label: str, **extra) -> pd.DataFrame:
    out = pd.DataFrame(
        {
            "model": label,
            "term": res.params.index,
            "coef": res.params.to_numpy(),
            "se": res.bse.to_numpy(),
            "t": res.tvalues.to_numpy(),
            "p": res.pvalues.to_numpy(),
        }
    )
    out["r2"] = res.rsquared
    out["adj_r2"] = res.rsquared_adj
    out["aic"] = res.aic
    out["n_pairs"] = int(res.nobs)
    for k, v in extra.items():
        out[k] = v
    return out


def rsa_regression(agreement: pd.DataFrame, predictors: Mapping[str, pd.DataFrame],
                   kind: str = "single", *, criterion: str = "aic",
                   alpha_enter: float = 0.05, standardize: bool = False,
                   cells: str = "pairs") -> pd.DataFrame:
    """OLS of the agreement triangle on predictor triangles (see module doc).

    Returns a tidy DataFrame, one row per (model, term): ``model`` (the
    predictor name for ``"single"``, ``"multiple"``, ``"stepwise"``),
    ``term`` (``const`` or a predictor), ``coef, se, t, p, r2, adj_r2, aic,
    n_pairs``; stepwise adds ``entered_step`` (0 for ``const``) and its
    selection path is in ``df.attrs["steps"]`` (list of dicts: step, added,
    aic, p). ``standardize=True`` z-scores the response and every predictor
    first (coefficients become standardised betas). ``cells``: ``"pairs"``
    (default, the distinct pairs) or ``"full"`` (the whole matrix, as the
    paper did; see the module docstring); ``attrs["cells"]`` records it.
    """
    if kind not in ("single", "multiple", "stepwise"):
        raise InputError(f"kind must be 'single', 'multiple' or 'stepwise', got {kind!r}")
    if criterion not in ("aic", "pvalue"):
        raise InputError(f"criterion must be 'aic' or 'pvalue', got {criterion!r}")
    if len(predictors) == 0:
        raise InputError("no predictors given")
    data = design(agreement, predictors, cells=cells)
    if standardize:
        sd = data.std(ddof=1)
        if (sd == 0).any():
            raise InputError(f"cannot standardise constant columns {list(sd.index[sd == 0])}")
        data = (data - data.mean()) / sd
    y = data["agreement"]
    names = [c for c in data.columns if c != "agreement"]

    if kind == "single":
        out = pd.concat([_tidy(_fit(y, data[[n]]), n) for n in names], ignore_index=True)
        out.attrs["cells"] = cells
        return out
    if kind == "multiple":
        out = _tidy(_fit(y, data[names]), "multiple")
        out.attrs["cells"] = cells
        return out

    chosen: list[str] = []
    current = _fit(y, data[[]])
    steps = [{"step": 0, "added": "const", "aic": float(current.aic), "p": float("nan")}]
    while len(chosen) < len(names):
        best = None
        for n in names:
            if n in chosen:
                continue
            try:
                res = _fit(y, data[chosen + [n]])
            except ValueError:
                continue  # collinear with what is already in
            score = res.aic if criterion == "aic" else res.pvalues[n]
            if best is None or score < best[0]:
                best = (score, n, res)
        if best is None:
            break
        score, n, res = best
        improves = res.aic < current.aic if criterion == "aic" else res.pvalues[n] < alpha_enter
        if not improves:
            break
        chosen.append(n)
        current = res
        steps.append({"step": len(chosen), "added": n, "aic": float(res.aic), "p": float(res.pvalues[n])})
    out = _tidy(current, "stepwise")
    entered = {s["added"]: s["step"] for s in steps}
    out["entered_step"] = out["term"].map(entered).astype("int64")
    out.attrs["steps"] = steps
    out.attrs["criterion"] = criterion
    out.attrs["cells"] = cells
    return out


def rsa_both_ways(agreement: pd.DataFrame, predictors: Mapping[str, pd.DataFrame],
                  kinds=("single", "multiple", "stepwise"), **kwargs) -> pd.DataFrame:
    """:func:`rsa_regression` on the distinct pairs and on the full matrix, side by side.

    One tidy table: the columns of :func:`rsa_regression` plus ``cells``
    (``"pairs"`` first, the defensible one; then ``"full"``, the paper's)
    and ``kind``. ``kwargs`` go to every :func:`rsa_regression` call.
    """
    parts = []
    for cells in ("pairs", "full"):
        for kind in kinds:
            t = rsa_regression(agreement, predictors, kind, cells=cells, **kwargs)
            t.insert(0, "kind", kind)
            t.insert(0, "cells", cells)
            parts.append(t)
    return pd.concat(parts, ignore_index=True)


def matrix_correlation(a: pd.DataFrame, b: pd.DataFrame, *, method: str = "spearman", n_perm: int = 9999,
                       seed: int | None = 0) -> dict:
    """How alike two model x model matrices are: the correlation of their distinct pairs, with a Mantel test.

    Both matrices are taken on the labels they share (in ``a``'s order). The
    statistic is Pearson's or Spearman's correlation of the upper triangles;
    the p-value relabels the rows and columns of ``b`` together at random
    (``n_perm`` times, seeded; two-sided, ``(k + 1) / (n_perm + 1)``), which
    respects that the pairs of one model are not independent. Returns
    ``r, p, n_models, n_pairs, method``.
    """
    from scipy import stats as sps

    from .agreement import upper_triangle

    if method not in ("pearson", "spearman"):
        raise InputError(f"method must be 'pearson' or 'spearman', got {method!r}")
    labels = [x for x in a.index if x in b.index]
    if len(labels) < 3:
        raise InputError(f"the matrices share {len(labels)} labels; at least 3 are needed")
    x = upper_triangle(a, labels).to_numpy(dtype=float)
    bm = b.loc[labels, labels].to_numpy(dtype=float)
    i, j = np.triu_indices(len(labels), k=1)
    if method == "spearman":  # ranks do not change when the labels are permuted: rank once
        x = sps.rankdata(x)
        ranked = np.zeros_like(bm)
        ranked[i, j] = sps.rankdata(bm[i, j])
        bm = ranked + ranked.T
    rng = np.random.default_rng(seed)
    orders = np.argsort(rng.random((n_perm, len(labels))), axis=1)
    y = bm[i, j]
    null_y = bm[orders[:, i], orders[:, j]]  # (n_perm, pairs): b with its models relabelled

    def corr(xv, ys):
        xc = xv - xv.mean()
        yc = ys - ys.mean(axis=-1, keepdims=True)
        return (yc @ xc) / np.sqrt((xc @ xc) * (yc * yc).sum(axis=-1))

    r = float(corr(x, y[None, :])[0])
    null = corr(x, null_y)
    p = float((np.sum(np.abs(null) >= abs(r) - 1e-12) + 1) / (n_perm + 1))
    return {"r": r, "p": p, "n_models": len(labels), "n_pairs": len(x), "method": method}


__all__ = ["CELLS", "design", "matrix_correlation", "rsa_both_ways", "rsa_regression", "similarity_matrices"]
