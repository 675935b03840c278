"""Two-group comparisons per panel: Welch's t, permutation tests, effect sizes, Bonferroni.

The follow-up study compares Gemma- and Llama-based RMs in each panel of its
Figure 1 (a Big Two category under one framing): its R code calls
``MKinfer::perm.t.test`` and reads ``$p.value[1]``, which is the *Welch*
t-test's p-value (the permutation p-value is ``$perm.p.value``), then
multiplies by the number of panels (Bonferroni). :func:`panel_tests` gives
both, and a permutation test over the RMs themselves:

* ``p_welch``: Welch's two-sample t-test (unequal variances), the value the
  authors' stars use. Its observations are model x prompt medians, which
  are not independent (27 per RM);
* ``p_perm``: a permutation test of the difference in means over the same
  observations (random relabelings, seeded; exact enumeration when there
  are few splits);
* ``p_perm_units`` (with ``unit``): the same test on one mean per unit (per
  RM), relabelling the units: with 4 Gemma and 6 Llama RMs all
  C(10, 4) = 210 splits are enumerated. This is the test whose unit is the
  thing the claim is about (an RM's base model).

Effect size: ``d_av = (mean_1 - mean_2) / sqrt((sd_1^2 + sd_2^2) / 2)`` (SDs
with ddof = 1), the standardised difference with the average of the two
variances, which the follow-up's reading notes imply (no code for it was
released); ``cohens_d`` (pooled SD) beside it.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
from scipy import stats

from .resampling import cohens_d, permutation_test
from ..errors import InputError


def welch_test(a, b) -> dict:
    """Welch's two-sample t-test of mean(a) - mean(b), two-sided.

    ``t = (mean_a - mean_b) / sqrt(s_a^2/n_a + s_b^2/n_b)``, Welch–Satterthwaite
    ``df = (s_a^2/n_a + s_b^2/n_b)^2 / ((s_a^2/n_a)^2/(n_a-1) + (s_b^2/n_b)^2/(n_b-1))``,
    ``p = 2 * P(T_df > |t|)``. Returns ``t, df, p, diff``.
    """
    a = np.asarray(a, dtype=float)
    b = np.asarray(b, dtype=float)
    if len(a) < 2 or len(b) < 2:
        raise InputError("Welch's test needs at least two values in each group")
    va, vb = a.var(ddof=1) / len(a), b.var(ddof=1) / len(b)
    diff = a.mean() - b.mean()
    se = math.sqrt(va + vb)
    if se == 0:
        return {"t": math.nan, "df": math.nan, "p": math.nan, "diff": float(diff)}
    t = diff / se
    df = (va + vb) ** 2 / (va ** 2 / (len(a) - 1) + vb ** 2 / (len(b) - 1))
    return {"t": float(t), "df": float(df), "p": float(2 * stats.t.sf(abs(t), df)), "diff": float(diff)}


def d_av(a, b) -> float:
    """``(mean_a - mean_b) / sqrt((var_a + var_b) / 2)`` with ddof=1 variances (see the module docstring)."""
    a = np.asarray(a, dtype=float)
    b = np.asarray(b, dtype=float)
    return float((a.mean() - b.mean()) / math.sqrt((a.var(ddof=1) + b.var(ddof=1)) / 2))


def bonferroni(p, m: int | None = None):
    """Bonferroni-adjusted p-values: ``min(p * m, 1)``; ``m`` defaults to the number of p-values."""
    arr = np.asarray(p, dtype=float)
    m = arr.size if m is None else m
    return np.minimum(arr * m, 1.0)


def holm(p):
    """Holm's step-down adjusted p-values (controls the family-wise error like Bonferroni, and is
    never less powerful): the i-th smallest of m p-values is multiplied by ``m - i`` (i from 0),
    made non-decreasing in that order, capped at 1; returned in the input's order. NaN stays NaN
    and does not count in m."""
    arr = np.asarray(p, dtype=float)
    out = np.full(arr.shape, np.nan)
    ok = ~np.isnan(arr)
    vals = arr[ok]
    order = np.argsort(vals, kind="stable")
    m = vals.size
    adjusted = np.minimum(np.maximum.accumulate(vals[order] * (m - np.arange(m))), 1.0)
    back = np.empty(m)
    back[order] = adjusted
    out[ok] = back
    return out


def stars(p) -> str:
    """``***`` p < .001, ``**`` < .01, ``*`` < .05, else ``n.s.`` (the authors' labels)."""
    if p is None or (isinstance(p, float) and math.isnan(p)):
        return ""
    return "***" if p < 0.001 else "**" if p < 0.01 else "*" if p < 0.05 else "n.s."


def panel_tests(table: pd.DataFrame, panels, group: str, value: str, *, first, second, unit: str | None = None,
                n_perm: int = 9999, seed: int | None = 0) -> pd.DataFrame:
    """Compare ``group == first`` with ``group == second`` on ``value`` in every panel (cell of ``panels``).

    One row per panel: ``n_first, n_second, mean_first, mean_second, diff``
    (first − second), ``d_av``, ``cohens_d``, Welch's ``t, df, p_welch``, the
    permutation ``p_perm`` (``n_perm`` relabelings, ``seed``), and with
    ``unit`` (e.g. the RM) ``n_units_first, n_units_second, p_perm_units``
    (the permutation test on one mean per unit, exact when the splits are at
    most ``n_perm``). Each p-value also Bonferroni-adjusted over the panels
    (``*_bonf``), and ``stars`` from the adjusted Welch p, as the authors drew.
    """
    panels = [panels] if isinstance(panels, str) else list(panels)
    need = [*panels, group, value] + ([unit] if unit else [])
    missing = [c for c in need if c not in table.columns]
    if missing:
        raise InputError(f"panel_tests: no columns {missing} (columns: {list(table.columns)})")
    rows = []
    for key, g in table.groupby(panels, sort=False, observed=True):
        key = key if isinstance(key, tuple) else (key,)
        a = g.loc[g[group] == first, value].to_numpy(dtype=float)
        b = g.loc[g[group] == second, value].to_numpy(dtype=float)
        if len(a) < 2 or len(b) < 2:
            raise InputError(f"panel {dict(zip(panels, key))}: fewer than two values for {first!r} or {second!r}")
        w = welch_test(a, b)
        row = {**dict(zip(panels, key)), "n_first": len(a), "n_second": len(b), "mean_first": a.mean(),
               "mean_second": b.mean(), "diff": w["diff"], "d_av": d_av(a, b), "cohens_d": cohens_d(a, b),
               "t": w["t"], "df": w["df"], "p_welch": w["p"],
               "p_perm": permutation_test(a, b, n_perm=n_perm, seed=seed).pvalue}
        if unit:
            means = g.groupby([unit, group], sort=False, observed=True)[value].mean().reset_index()
            ua = means.loc[means[group] == first, value].to_numpy()
            ub = means.loc[means[group] == second, value].to_numpy()
            row.update(n_units_first=len(ua), n_units_second=len(ub),
                       p_perm_units=permutation_test(ua, ub, n_perm=n_perm, seed=seed).pvalue)
        rows.append(row)
    out = pd.DataFrame(rows)
    for col in ("p_welch", "p_perm", "p_perm_units"):
        if col in out.columns:
            out[f"{col}_bonf"] = bonferroni(out[col])
    out["stars"] = out["p_welch_bonf"].map(stars)
    out.attrs = {"first": first, "second": second, "n_panels": len(out), "n_perm": n_perm, "seed": seed}
    return out


def paired_test(table: pd.DataFrame, unit: str, condition: str, value: str, *, first, second,
                n_perm: int = 9999, seed: int | None = 0) -> dict:
    """Within-unit comparison of two conditions (e.g. each RM under positive vs negative prompts).

    ``value`` is averaged per (unit, condition) first; then the paired
    t-test (``scipy.stats.ttest_rel``) and the sign-flip permutation test
    of the mean paired difference (exact: all ``2^n`` sign patterns when
    there are at most ``n_perm``). Returns ``n_units, mean_first,
    mean_second, mean_diff, n_first_higher, t, df, p_t, p_perm``.
    """
    means = table.groupby([unit, condition], sort=False, observed=True)[value].mean().unstack(condition)
    for c in (first, second):
        if c not in means.columns:
            raise InputError(f"paired_test: no rows with {condition} == {c!r}")
    means = means[[first, second]].dropna()
    d = (means[first] - means[second]).to_numpy()
    n = len(d)
    if n < 2:
        raise InputError("paired_test needs at least two units with both conditions")
    t = stats.ttest_rel(means[first], means[second])
    obs = abs(d.mean())
    if 2 ** n <= n_perm:
        signs = np.array(np.meshgrid(*[[-1, 1]] * n)).reshape(n, -1).T
        null = np.abs((signs * d).mean(axis=1))
        p_perm = float(np.mean(null >= obs - 1e-12 * max(obs, 1)))
    else:
        rng = np.random.default_rng(seed)
        null = np.abs((rng.choice([-1, 1], size=(n_perm, n)) * d).mean(axis=1))
        p_perm = float((np.sum(null >= obs - 1e-12 * max(obs, 1)) + 1) / (n_perm + 1))
    return {"n_units": n, "mean_first": float(means[first].mean()), "mean_second": float(means[second].mean()),
            "mean_diff": float(d.mean()), "n_first_higher": int((d > 0).sum()), "t": float(t.statistic),
            "df": n - 1, "p_t": float(t.pvalue), "p_perm": p_perm}


__all__ = ["bonferroni", "d_av", "holm", "paired_test", "panel_tests", "stars", "welch_test"]
