"""Linear mixed models with a random intercept per group (statsmodels ``MixedLM``).

The follow-up study fitted ``nlme::lme(sum_value ~ base_model * Category *
prompt_framing, random = ~1 | model_id)`` in R (REML). :func:`mixed_model`
fits the same model with statsmodels and returns a tidy table of the fixed
effects. Reference levels are set with ``levels`` (the first level of each
factor is the reference, as R's treatment contrasts).

Degrees of freedom. statsmodels reports z statistics (normal reference);
nlme reports t statistics with its "between/within" degrees of freedom.
``df="nlme"`` (default) gives the latter for one grouping level: a term whose
design column is constant within every group is a *between-group* term, with
``n_groups - p_between - 1`` degrees of freedom (``p_between`` = the number of
between-group columns, the intercept not counted); every other term, and the
intercept, is *within-group*, with ``n_obs - n_groups - p_within`` (``p_within``
= the number of within-group columns). For the follow-up's Big Two model (10
RMs, 1,080 rows) that gives 8 for the base-model term and 1,064 for the rest,
as nlme printed. ``df="normal"`` keeps statsmodels' z.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd
from scipy import stats
from ..errors import InputError

COLUMNS = ("term", "estimate", "se", "df", "t", "p", "ci_low", "ci_high", "level")


def _with_levels(data: pd.DataFrame, levels: Mapping[str, Sequence] | None) -> pd.DataFrame:
    out = data.copy()
    for col, order in (levels or {}).items():
        if col not in out.columns:
            raise InputError(f"levels names {col!r}, which is not a column ({list(out.columns)})")
        unknown = sorted(set(out[col].dropna().astype(str)) - {str(v) for v in order})
        if unknown:
            raise InputError(f"levels[{col!r}] = {list(order)} misses values present in the data: {unknown}")
        out[col] = pd.Categorical(out[col].astype(str), categories=[str(v) for v in order])
    return out


def _levels_of_terms(exog: pd.DataFrame, groups: np.ndarray) -> pd.Series:
    """'between' for columns constant within every group, else 'within' (the intercept: within)."""
    codes = pd.factorize(groups)[0]
    out = {}
    for col in exog.columns:
        if col == "Intercept":
            out[col] = "within"
            continue
        spread = pd.Series(exog[col].to_numpy()).groupby(codes).nunique()
        out[col] = "between" if (spread <= 1).all() else "within"
    return pd.Series(out)


def _check_variables(data: pd.DataFrame, formula: str, groups: str) -> None:
    """The formula's response has no missing values, and every factor in it and ``groups`` has two levels
    or more (else the fit fails inside statsmodels with a message that names neither)."""
    import re

    if not isinstance(formula, str) or "~" not in formula:
        raise InputError(f"formula must be a patsy formula 'response ~ terms', got {formula!r}")
    response, terms = (part.strip() for part in formula.split("~", 1))
    if response in data.columns:
        y = pd.to_numeric(data[response], errors="coerce")
        if y.isna().any() or not np.isfinite(y.to_numpy(float)).all():
            bad = data.index[~np.isfinite(y.to_numpy(float))].tolist()
            raise InputError(f"the response {response!r} has {len(bad)} missing or non-finite value(s) (rows "
                             f"{bad[:5]}): drop those rows or fill them in")
    names = [w for w in dict.fromkeys(re.findall(r"[A-Za-z_][A-Za-z0-9_.]*", terms)) if w in data.columns]
    for name in [*names, groups]:
        col = data[name]
        if not pd.api.types.is_numeric_dtype(col) or name == groups:
            present = col.dropna().unique()
            if len(present) < 2:
                what = "group" if name == groups else "level"
                raise InputError(f"the column {name!r} has one {what} only ({list(present)!r}): a mixed model needs "
                                 f"at least two to estimate {'a random intercept' if name == groups else 'its effect'};"
                                 f" give data with more, or leave {name!r} out of the formula")


def mixed_model(data: pd.DataFrame, formula: str, groups: str, *, levels: Mapping[str, Sequence] | None = None,
                reml: bool = True, df: str = "nlme", ci: float = 0.95) -> pd.DataFrame:
    """Fit ``formula`` with a random intercept per ``groups``; one row per fixed effect.

    ``formula``: a patsy formula, e.g. ``"median_rank ~ family * category * framing"``.
    ``groups``: the column whose levels get a random intercept (e.g. the RM).
    ``levels``: column -> ordered levels (the first is the reference).
    ``reml``: restricted maximum likelihood (nlme's default) or ML.
    ``df``: ``"nlme"`` (t tests with nlme's between/within degrees of freedom,
    see the module docstring) or ``"normal"`` (z tests).

    Columns :data:`COLUMNS` (``level``: between / within group). ``attrs``:
    ``group_var`` (random-intercept variance), ``residual_var``, ``n_obs``,
    ``n_groups``, ``loglike``, ``converged``, ``method`` (REML / ML),
    ``formula``, ``groups``, ``df``.
    """
    import statsmodels.formula.api as smf

    if df not in ("nlme", "normal"):
        raise InputError(f"df must be 'nlme' or 'normal', got {df!r}")
    if groups not in data.columns:
        raise InputError(f"groups {groups!r} is not a column ({list(data.columns)})")
    _check_variables(data, formula, groups)
    d = _with_levels(data, levels)
    model = smf.mixedlm(formula, d, groups=d[groups])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        # BFGS first: L-BFGS can stop at a degenerate point when the group variance is near zero
        # (a finite-looking fit with an infinite log-likelihood); Nelder-Mead as the fallback.
        fit = None
        for method in ("bfgs", "nm"):
            fit = model.fit(reml=reml, method=method, maxiter=2000)
            if fit.converged and np.isfinite(fit.llf):
                break
    if not np.isfinite(fit.llf):
        raise InputError(f"the mixed model {formula!r} did not converge to a finite likelihood; check the data "
                         "(a group with one row, a constant outcome, a factor level without rows)")
    exog = pd.DataFrame(model.exog, columns=model.exog_names)
    fe = fit.fe_params
    se = pd.Series(np.sqrt(np.diag(fit.cov_params().loc[fe.index, fe.index].to_numpy())), index=fe.index)
    level = _levels_of_terms(exog, np.asarray(d[groups]))
    n_obs, n_groups = int(model.nobs), int(len(model.group_labels))
    p_between = int((level == "between").sum())
    p_within = int((level == "within").sum()) - 1  # the intercept does not count
    dfs = level.map({"between": n_groups - p_between - 1, "within": n_obs - n_groups - p_within}).astype(float)
    t = fe / se
    if df == "nlme":
        p = 2 * stats.t.sf(np.abs(t), dfs)
        q = stats.t.ppf(0.5 + ci / 2, dfs)
    else:
        dfs = pd.Series(np.inf, index=fe.index)
        p = 2 * stats.norm.sf(np.abs(t))
        q = np.full(len(fe), stats.norm.ppf(0.5 + ci / 2))
    out = pd.DataFrame({"term": fe.index, "estimate": fe.to_numpy(), "se": se.to_numpy(), "df": dfs.to_numpy(),
                        "t": t.to_numpy(), "p": np.asarray(p, dtype=float),
                        "ci_low": fe.to_numpy() - q * se.to_numpy(), "ci_high": fe.to_numpy() + q * se.to_numpy(),
                        "level": level.reindex(fe.index).to_numpy()})
    out.attrs = {"group_var": float(fit.cov_re.iloc[0, 0]), "residual_var": float(fit.scale), "n_obs": n_obs,
                 "n_groups": n_groups, "loglike": float(fit.llf), "converged": bool(fit.converged),
                 "method": "REML" if reml else "ML", "formula": formula, "groups": groups, "df": df,
                 "warnings": sorted({str(w.message) for w in caught})}
    return out


__all__ = ["COLUMNS", "mixed_model"]
