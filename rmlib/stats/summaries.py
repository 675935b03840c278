"""Summaries the chapters report: of agreement matrices, sentiment classes, framings and families.

Pure functions on DataFrames, built on the other :mod:`rmlib.stats` modules
(one Kendall tau, one permutation test, the t distribution for intervals).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import numpy as np
import pandas as pd
from scipy import stats as sps

from .agreement import mds_embedding, rank_agreement, upper_triangle
from .elo import human_model_summary
from .lexical import match_lexicon, prompt_correlation
from .resampling import cohens_d, permutation_test
from .rsa import rsa_regression
from ..errors import InputError

__all__ = ["pair_summary", "pair_groups", "across_prompts", "mds_maps", "rsa_tables", "mean_ci", "class_cohens_d",
           "lexicon_coverage", "framing_correlations", "top_mass", "family_difference", "detectable_effect",
           "tau_summary", "split_means", "cross_prompt_taus",
           "rank_difference_table", "sample_items", "best_worst_views", "word_list_summary", "live_taus", "live_column",
           "shared_framing_correlations"]


def pair_summary(matrices: Mapping[tuple, pd.DataFrame], label: Callable = lambda k: k,
                 with_humans: Mapping[tuple, pd.DataFrame] | None = None,
                 human: str = "Human (Elo)") -> tuple[pd.DataFrame, pd.DataFrame]:
    """Mean, lowest and highest agreement over the model pairs of each matrix, and which pairs.

    ``matrices``: ``(prompt key, method) -> models x models``. ``with_humans``
    (same keys, ``human`` as one more ranker) adds the column ``mean with
    humans``: the mean human-model agreement (:func:`rmlib.stats.human_model_summary`).
    Returns ``(values, pairs)``.
    """
    values, pairs = [], []
    for (key, m), mat in matrices.items():
        tri = upper_triangle(mat)
        lo, hi = tri.idxmin(), tri.idxmax()
        values.append({"prompt": label(key), "method": m, "pairs": len(tri), "mean": tri.mean(),
                       "lowest": tri.min(), "highest": tri.max()})
        pairs.append({"prompt": label(key), "method": m, "lowest pair": f"{lo[0]} / {lo[1]}",
                      "highest pair": f"{hi[0]} / {hi[1]}"})
    values = pd.DataFrame(values)
    if with_humans is not None:
        values["mean with humans"] = [human_model_summary(with_humans[k], human=human)["mean"] for k in matrices]
    return values, pd.DataFrame(pairs)


def pair_groups(matrix: pd.DataFrame, groups: Mapping[str, str]) -> pd.DataFrame:
    """Agreement within and between groups of models: one row per pair of groups.

    ``matrix``: a models x models agreement matrix; ``groups``: model -> group
    name (models left out are ignored). Columns ``groups`` (``"A"`` for pairs
    within A, ``"A / B"`` between A and B, in the order the groups first
    appear), ``pairs``, ``mean``, ``lowest``, ``highest``.
    """
    tri = upper_triangle(matrix)
    names = list(dict.fromkeys(groups[m] for m in matrix.index if m in groups))
    rows = []
    for i, ga in enumerate(names):
        for gb in names[i:]:
            pick = [(groups.get(a), groups.get(b)) in ((ga, gb), (gb, ga)) for a, b in tri.index]
            v = tri[pick]
            if len(v):
                rows.append({"groups": ga if ga == gb else f"{ga} / {gb}", "pairs": len(v), "mean": float(v.mean()),
                             "lowest": float(v.min()), "highest": float(v.max())})
    return pd.DataFrame(rows, columns=["groups", "pairs", "mean", "lowest", "highest"])


def across_prompts(wides: Mapping[str, pd.DataFrame], method: str = "kendall") -> pd.DataFrame:
    """Each model's agreement with itself across prompts: one row per model, one column per prompt pair.

    ``wides``: prompt key -> items x models (the same models in each).
    """
    rows = {}
    for model in next(iter(wides.values())).columns:
        per_prompt = pd.DataFrame({key: w[model] for key, w in wides.items()})
        rows[model] = upper_triangle(rank_agreement(per_prompt, method))
    out = pd.DataFrame(rows).T
    out.columns = [f"{a} ~ {b}" for a, b in out.columns]
    return out.rename_axis("model").reset_index()


def mds_maps(matrices: Mapping[str, pd.DataFrame], facts: pd.DataFrame,
             seed: int = 0) -> tuple[dict[str, pd.DataFrame], pd.DataFrame]:
    """Metric MDS of each agreement matrix, models coloured by the registry's ``family``.

    ``facts``: :func:`rmlib.registry.paper_models` (models not in it
    get family ``other``). Returns ``(coordinates per key, stress table)``.
    The stress table has one row per key: ``stress`` (the raw sum, over model
    pairs, of squared misfits between map distance and 1 - agreement),
    ``rms misfit`` = sqrt(stress / pairs), the typical error of one map
    distance, beside ``mean distance`` (the mean 1 - agreement it distorts),
    and Kruskal's ``stress-1`` = sqrt(stress / sum of squared distances)
    (below 0.1 a faithful map, above 0.2 a poor one).
    """
    coords, stress = {}, []
    for key, mat in matrices.items():
        c = mds_embedding(mat, seed=seed)
        info = facts.set_index("nickname").reindex(c.index)
        coords[key] = c.assign(family=info["family"].fillna("other").to_numpy())
        d = 1 - upper_triangle(mat).to_numpy(float)
        raw = float(c.attrs["stress"])
        stress.append({"prompt": key, "models": len(c), "stress": raw, "rms misfit": float(np.sqrt(raw / len(d))),
                       "mean distance": float(d.mean()), "stress-1": float(np.sqrt(raw / (d ** 2).sum()))})
    return coords, pd.DataFrame(stress)


def rsa_tables(agreement: pd.DataFrame, predictors: Mapping[str, pd.DataFrame]) -> dict[str, pd.DataFrame]:
    """The three RSA regressions of the paper in their reported columns: ``single`` (one predictor
    each, the constant left out), ``multiple`` (all predictors) and ``stepwise`` (forward, AIC;
    ``attrs["path"]`` names the predictors in the order they entered)."""
    single = rsa_regression(agreement, predictors, kind="single")
    single = single[single["term"] != "const"][["model", "coef", "se", "t", "p", "r2", "adj_r2", "aic", "n_pairs"]]
    multiple = rsa_regression(agreement, predictors, kind="multiple")
    step = rsa_regression(agreement, predictors, kind="stepwise")
    stepwise = step[["term", "entered_step", "coef", "se", "t", "p", "r2", "adj_r2", "aic"]]
    stepwise.attrs["path"] = [s["added"] for s in step.attrs["steps"]]
    return {"single": single.rename(columns={"model": "predictor"}),
            "multiple": multiple[["term", "coef", "se", "t", "p", "r2", "adj_r2", "aic", "n_pairs"]],
            "stepwise": stepwise}


def mean_ci(summary: pd.DataFrame, level: float = 0.95) -> pd.DataFrame:
    """``summary`` (columns ``n, mean, sem``, as :func:`rmlib.stats.sentiment_by_class` gives) with
    the t-based interval of the mean: ``low``/``high`` = mean -/+ t(level, n - 1) * sem (NaN for n < 2)."""
    n = summary["n"].to_numpy(dtype=float)
    with np.errstate(invalid="ignore"):
        t = np.where(n > 1, sps.t.ppf(0.5 + level / 2, np.maximum(n - 1, 1)), np.nan)
    half = t * summary["sem"].to_numpy(dtype=float)
    return summary.assign(low=summary["mean"] - half, high=summary["mean"] + half)


def class_cohens_d(table: pd.DataFrame, lexicon, *, strip: bool = True) -> float:
    """Cohen's d of the scores of positive minus negative tokens: Bing's two classes, or the sign of a
    graded lexicon's value (AFINN, VADER; 0 in neither class).

    Words listed in both classes (``lexicon.attrs["in_both"]``) are left
    out; NaN unless each class has at least two tokens.
    """
    matched = match_lexicon(table, lexicon, strip=strip)
    matched = matched[~matched["word"].isin(set(lexicon.attrs.get("in_both", ())))]
    value = matched[matched.attrs["value_column"]]
    if pd.api.types.is_numeric_dtype(value) and not pd.api.types.is_bool_dtype(value):
        value = pd.Series(np.where(value > 0, "positive", np.where(value < 0, "negative", "")), index=value.index)
    pos = matched.loc[value == "positive", "score"]
    neg = matched.loc[value == "negative", "score"]
    return cohens_d(pos, neg) if len(pos) > 1 and len(neg) > 1 else np.nan


def lexicon_coverage(tables: Mapping[str, pd.DataFrame], lexicons: Mapping[str, pd.DataFrame], *,
                     strip: bool = True) -> pd.DataFrame:
    """Per model (``tables``: model -> score table): tokens scored, and per lexicon the tokens matched,
    the lexicon words matched and the words in the lexicon."""
    rows = []
    for model, t in tables.items():
        row = {"model": model, "tokens scored": len(t)}
        for name, lex in lexicons.items():
            a = match_lexicon(t, lex, strip=strip)
            row.update({f"{name}: tokens matched": a.attrs["n_matched"], f"{name}: words matched": a.attrs["n_words"],
                        f"{name}: words in lexicon": a.attrs["n_lexicon"]})
        rows.append(row)
    rows = pd.DataFrame(rows)
    names = list(lexicons)  # columns grouped by lexicon, as the chapters show them
    return rows[["model", "tokens scored"] + [c for n in names for c in rows.columns if c.startswith(f"{n}: ")]]


def framing_correlations(tables: Mapping[tuple, pd.DataFrame], models: Sequence[str],
                         pairs: Sequence[tuple[str, str]], label: Callable = lambda p: p) -> pd.DataFrame:
    """Pearson r and Spearman rho of one model's scores under two prompts (own vocabulary).

    ``tables``: ``(model, prompt) -> score table``; ``pairs``: ``(prompt a, prompt b)``.
    One row per model and pair: ``model, pair, n tokens, Pearson r, Spearman rho``.
    """
    rows = []
    for m in models:
        for a, b in pairs:
            r = {meth: prompt_correlation(tables[(m, a)], tables[(m, b)], method=meth)
                 for meth in ("pearson", "spearman")}
            rows.append({"model": m, "pair": f"{label(a)} vs {label(b)}", "n tokens": int(r["pearson"]["n"]),
                         "Pearson r": r["pearson"]["r"], "Spearman rho": r["spearman"]["r"]})
    return pd.DataFrame(rows)


def top_mass(long: pd.DataFrame, n_top: int, label: Callable = lambda p: p) -> pd.DataFrame:
    """Per (model, prompt) of a long table of log-probabilities: the most likely token, its
    probability and the probability of the ``n_top`` most likely tokens together."""
    rows = []
    for (m, p), g in long.groupby(["model", "prompt"], sort=False):
        best = g.loc[g["score"].idxmax()]
        rows.append({"model": m, "prompt": label(p), "most likely token": best["decoded"],
                     "its probability": float(np.exp(best["score"])),
                     f"probability of the top {n_top}": float(np.exp(g["score"].nlargest(n_top)).sum())})
    return pd.DataFrame(rows)


def family_difference(results: pd.DataFrame, *, n_perm: int = 9999, seed: int | None = 0,
                      a: str = "llama", b: str = "gemma") -> pd.DataFrame:
    """Permutation test of mean Hedges' g between two base-model families, per prompt.

    ``results``: :func:`rmlib.stats.bigtwo_scores` rows with ``family`` and
    ``prompt`` columns; families are matched by prefix (``a``, ``b``).
    One row per prompt where both families have a g.
    """
    rows = []
    name_a, name_b = a.capitalize(), b.capitalize()
    for key, grp in results.groupby("prompt", sort=False):
        g_a = grp.loc[grp["family"].str.startswith(a), "hedges_g"].dropna()
        g_b = grp.loc[grp["family"].str.startswith(b), "hedges_g"].dropna()
        if len(g_a) and len(g_b):
            res = permutation_test(g_a, g_b, n_perm=n_perm, seed=seed)
            rows.append({"prompt": key, f"n_{a}": len(g_a), f"n_{b}": len(g_b),
                         f"mean g ({name_a})": g_a.mean(), f"mean g ({name_b})": g_b.mean(),
                         "difference": res.statistic, "p": res.pvalue, "exact": res.exact})
    return pd.DataFrame(rows)


def detectable_effect(n_a: int, n_b: int, *, alpha: float = 0.05, power: float = 0.8) -> float:
    """The smallest |Cohen's d| a two-sided two-sample t-test on ``n_a`` and ``n_b`` values
    detects with probability ``power`` at level ``alpha`` (statsmodels' ``TTestIndPower``)."""
    from statsmodels.stats.power import TTestIndPower

    if min(n_a, n_b) < 2:
        raise InputError(f"a two-sample t-test needs at least 2 values per group, got {n_a} and {n_b}")
    return float(TTestIndPower().solve_power(nobs1=n_a, ratio=n_b / n_a, alpha=alpha, power=power))


# --------------------------------------------------------------------------- EloEverything (chapter 4)


def tau_summary(taus: Mapping[str, pd.DataFrame], boots: Mapping) -> pd.DataFrame:
    """Per prompt: the human-model taus (mean with its bootstrap interval, SD, extremes) and the
    mean model-model tau (off-diagonal with its interval; with the diagonal, as the paper averaged).
    ``boots``: prompt -> :class:`rmlib.stats.elo.TauBootstrap` of the same table."""
    from .elo import model_model_mean

    rows = []
    for key, tau in taus.items():
        hm = human_model_summary(tau)
        mm = model_model_mean(tau)
        ci = boots[key].summary()
        rows.append({"prompt": key, "human-model mean": hm["mean"],
                     "human-model 95% CI": (f"{ci.loc['human_model_mean', 'low']:.3f} to "
                                            f"{ci.loc['human_model_mean', 'high']:.3f}"),
                     "SD": hm["sd"], "min": hm["min"], "min model": hm["min_model"], "max": hm["max"],
                     "max model": hm["max_model"], "model-model mean (off-diagonal)": mm["mean_offdiag"],
                     "model-model 95% CI": (f"{ci.loc['model_model_mean_offdiag', 'low']:.3f} to "
                                            f"{ci.loc['model_model_mean_offdiag', 'high']:.3f}"),
                     "model-model mean with diagonal": mm["mean_with_diagonal"]})  # paper's 0.55: one-word prompt
    return pd.DataFrame(rows)


def split_means(splits: pd.DataFrame) -> pd.DataFrame:
    """Per prompt, the mean over the RMs of the within-group taus (:func:`rmlib.stats.bootstrap_split_agreement`
    rows with a ``prompt`` column), their difference and how many RMs agree more on the top items."""
    means = splits.groupby("prompt", sort=False)[["tau_top", "tau_bottom"]].mean()
    means["top minus bottom"] = means["tau_top"] - means["tau_bottom"]
    means["RMs with top > bottom"] = splits.assign(up=splits["tau_top"] > splits["tau_bottom"]).groupby(
        "prompt", sort=False)["up"].sum()
    return means.reset_index()


def cross_prompt_taus(wides: Mapping[str, pd.DataFrame], n_boot: int, *, seed: int | None = 0,
                      human: str = "human") -> pd.DataFrame:
    """Each RM's Kendall tau-b between every two prompts over the items both score, bootstrap 95% CI
    (:func:`rmlib.stats.bootstrap_taus`). ``wides``: prompt -> :func:`rmlib.stats.elo_wide` table."""
    from .elo import bootstrap_taus

    keys, rows = list(wides), []
    for i, a in enumerate(keys):
        for b in keys[i + 1:]:
            for m in wides[a].columns.drop(human):
                both = pd.concat([wides[a][m].rename(a), wides[b][m].rename(b)], axis=1, join="inner").dropna()
                t = bootstrap_taus(both, n_boot, seed=seed, human=None).tidy().iloc[0]
                rows.append({"model": m, "prompt A": a, "prompt B": b, "items": len(both), "tau": t["tau"],
                             "95% CI low": t["low"], "95% CI high": t["high"]})
    return pd.DataFrame(rows)


def rank_difference_table(wides: Mapping[str, pd.DataFrame], n: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The ``n`` largest human-model rank differences each way per prompt (:func:`rmlib.stats.rank_differences`,
    median over the RMs), and how many of them the paper's variant (median over all rankers) also lists."""
    from .elo import rank_differences

    diffs, overlap = [], []
    for key, w in wides.items():
        d = rank_differences(w, n)
        p = rank_differences(w, n, include_human_in_average=True)
        diffs.append(d.assign(prompt=key))
        overlap.append({"prompt": key, "items listed": len(d),
                        "also listed by the paper's variant": int(d["item"].isin(p["item"]).sum())})
    return pd.concat(diffs, ignore_index=True), pd.DataFrame(overlap)


def sample_items(index: pd.Index, n: int, seed: int = 0) -> pd.Index:
    """``n`` items of ``index`` (all when fewer), drawn without replacement with ``seed``, in index order."""
    pick = np.sort(np.random.default_rng(seed).choice(len(index), size=min(n, len(index)), replace=False))
    return index[pick]


# --------------------------------------------------------------------------- base-model biases (chapter 6)
def best_worst_views(per_model: Mapping[str, Mapping[str, pd.DataFrame]], best: str, worst: str,
                     names: tuple[str, str] = ("best + worst", "best − worst")) -> tuple[dict, pd.DataFrame]:
    """Per model (``per_model``: model -> prompt -> score table), :func:`rmlib.stats.best_worst` of its
    ``best`` and ``worst`` tables, and both combinations as a long table (``prompt`` = ``names``)."""
    from .lexical import best_worst

    bw, combos = {}, []
    for m, per in per_model.items():
        bw[m] = best_worst(per[best], per[worst])
        tokens = per[best].set_index("token_id")["token"]
        for col, name in zip(("sum", "diff"), names):
            combos.append(pd.DataFrame({"model": m, "prompt": name, "token_id": bw[m]["token_id"],
                                        "token": tokens.reindex(bw[m]["token_id"]).to_numpy(),
                                        "decoded": bw[m]["decoded"], "score": bw[m][col]}))
    return bw, pd.concat(combos, ignore_index=True)


def word_list_summary(lists: Mapping[str, Sequence[str]]) -> pd.DataFrame:
    """Per list: how many patterns, how many wildcards (``*``), the first ten patterns."""
    return pd.DataFrame([{"dimension": d, "patterns": len(lists[d]), "wildcards": sum(w.endswith("*") for w in lists[d]),
                          "examples": ", ".join(lists[d][:10])} for d in lists])


LENGTH = "name length"


def live_column(model_id: str, kind: str) -> str:
    """The name of a live scorer's column beside the released RM columns: ``live <short name> [<kind>]``
    (short name: :func:`rmlib.registry.model_label`); :func:`live_taus` reads the name back."""
    from ..registry import model_label

    return f"live {model_label(model_id)} [{kind}]"


def live_taus(wides: Mapping[str, pd.DataFrame], live: Mapping[str, pd.DataFrame], n_boot: int, *,
              seed: int | None = 0, human: str = "human") -> dict:
    """Kendall tau-b, with bootstrap 95% intervals, between every column of the released tables on
    the sampled items (``live[key].index``), the live columns and the item name's length.

    One bootstrap per prompt over all columns (:func:`rmlib.stats.bootstrap_taus`). Returns a dict:
    ``wides`` (released + live, per prompt), ``boots``, ``tidy`` (every pair), ``human`` (humans vs each
    ranker, ``live`` flag), ``vs_live`` (each released RM vs each live column), ``length`` (each
    ranker vs the name's length), ``same`` (a live column vs the released scores of the same RM,
    matched by the name inside ``live <name> [<kind>]``), ``live_columns``.
    """
    from .elo import bootstrap_taus

    out = {"wides": {key: pd.concat([wides[key].loc[live[key].index], live[key]], axis=1) for key in wides}}
    out["boots"] = {}
    for key, w in out["wides"].items():
        lengths = pd.Series(w.index.str.len().astype(float), index=w.index, name=LENGTH)
        out["boots"][key] = bootstrap_taus(w.join(lengths), n_boot, seed=seed)
    tidy = pd.concat([b.tidy().assign(prompt=key) for key, b in out["boots"].items()], ignore_index=True)
    tidy = tidy.rename(columns={"low": "95% CI low", "high": "95% CI high"})
    hm = tidy[(tidy["a"] == human) & (tidy["b"] != LENGTH)].rename(columns={"b": "ranker"})
    hm["live"] = hm["ranker"].str.startswith("live ")
    live_cols = sorted({c for key in live for c in live[key]})
    vs_live = tidy[tidy["b"].isin(live_cols) & (tidy["a"] != human)]
    released = {c: c.split(" [")[0].removeprefix("live ") for c in live_cols}
    out.update(tidy=tidy, human=hm, vs_live=vs_live, length=tidy[tidy["b"] == LENGTH].rename(columns={"a": "ranker"}),
               same=vs_live[vs_live["a"] == vs_live["b"].map(released)], live_columns=live_cols)
    return out


def shared_framing_correlations(shared: Mapping[str, pd.DataFrame], base: str = "best",
                                others: Sequence[str] = ("greatest", "worst")) -> pd.DataFrame:
    """Per model, Pearson and Spearman correlation of its scores under ``base`` and each of ``others``
    on the shared vocabulary (``shared``: prompt role -> strings x models,
    :func:`rmlib.stats.prompt_correlations`). Columns ``model, pair, method, n, r``."""
    from .lexical import prompt_correlations

    rows = []
    for other in others:
        for meth in ("pearson", "spearman"):
            c = prompt_correlations(shared[base], shared[other], method=meth)
            rows.append(c.reset_index().assign(pair=f"{base} vs {other}", method=meth))
    return pd.concat(rows, ignore_index=True)[["model", "pair", "method", "n", "r"]]
