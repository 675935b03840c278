"""Chapter 3 statistics: sentiment and prompt framing (word frequency: :mod:`rmlib.stats.frequency`;
whole texts: :mod:`rmlib.stats.texts`).

Everything here works on score tables (one model, one prompt: columns
``token_id, token, decoded, score``) or on wide tables (index = item, one
float column per model). What the paper (Christian et al. 2025, section 3)
computed, and where this module differs:

* Matching tokens to a lexicon. The paper lower-cased ``token_decoded`` and
  joined it to the lexicon word *without* stripping white space, so ``" good"``
  (a word-initial token) never matched ``good``. Here ``strip=True`` (default)
  also strips white space; ``strip=False`` reproduces the paper.
* Sentiment slopes (Fig. 3C). Separate ordinary least-squares fits of
  ``score ~ sentiment`` for AFINN-positive and AFINN-negative words, per model
  and prompt, classical standard errors as R's ``lm`` (``cov_type`` can ask for
  heteroskedasticity-robust ones). The paper put the one AFINN entry with
  score 0 (``some kind``, a phrase no token matches) with the negatives; here
  it belongs to neither class.
* Frequency slopes (Fig. 3D). ``score ~ log(freq) + sentiment`` on the
  AFINN-matched tokens, with the BNC frequency list. The paper used classical
  standard errors; here the default is HC3 (robust to the unequal variances
  that reward scores show across the frequency range), ``cov_type="nonrobust"``
  reproduces the paper. All intervals and p-values use the t distribution with
  the residual degrees of freedom, as ``lm`` does. The paper's exact sample
  comes from ``word_frequencies.bnc_frequencies(rows="paper")`` with ``strip=False``
  (a word listed under two parts of speech gives two observations); the
  default ``rows="lemma"`` sums a word's frequency over parts of speech.

The paper's Fig. A.3 (score by sentiment class) is :func:`sentiment_by_class`;
Tables A.8/A.9 are :func:`best_worst` plus ``rmlib.stats.vocab.top_bottom``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import numpy as np
import pandas as pd
import statsmodels.api as sm
from scipy import stats

from rmlib.stats.tau import kendall_tau_b
from ..errors import InputError

VALENCES = ("negative", "positive")


# --------------------------------------------------------------------------
# Matching
# --------------------------------------------------------------------------


def normalize_strings(values, strip: bool = True) -> pd.Series:
    """Lower-cased (and, with ``strip``, white-space-stripped) strings.

    Non-string values become NaN, so they never match a lexicon word.
    """
    s = pd.Series(values, dtype="object")
    s = s.where(s.map(lambda v: isinstance(v, str)))
    s = s.str.lower()
    if strip:
        s = s.str.strip()
    return s


def as_lexicon(lexicon, value_name: str | None) -> pd.DataFrame:
    """Any lexicon form as a DataFrame with columns ``word`` and one value.

    Accepted: a Series (index = word, values = score or class, as
    ``lexicons.afinn111()``), a DataFrame with a ``word`` column and one
    other column (as ``lexicons.bing_lexicon()``; with more columns pass
    ``value_name``), a mapping ``word -> value``, or an iterable of words
    (value ``True``).
    """
    if isinstance(lexicon, pd.Series):
        name = value_name or (lexicon.name if isinstance(lexicon.name, str) else "value")
        df = pd.DataFrame({"word": lexicon.index.astype(str), name: lexicon.to_numpy()})
    elif isinstance(lexicon, pd.DataFrame):
        if "word" not in lexicon.columns:
            raise InputError(
                f"lexicon DataFrame needs a 'word' column; it has {list(lexicon.columns)}"
            )
        others = [c for c in lexicon.columns if c != "word"]
        if value_name is None:
            if len(others) != 1:
                raise InputError(
                    f"lexicon DataFrame has value columns {others}; name the one to use with value_name="
                )
            value_name = others[0]
        if value_name not in lexicon.columns:
            raise InputError(f"value_name {value_name!r} is not a column of the lexicon: {others}")
        df = lexicon[["word", value_name]].copy()
    elif isinstance(lexicon, Mapping):
        name = value_name or "value"
        df = pd.DataFrame({"word": list(lexicon.keys()), name: list(lexicon.values())})
    elif isinstance(lexicon, Iterable) and not isinstance(lexicon, (str, bytes)):
        name = value_name or "value"
        words = list(lexicon)
        df = pd.DataFrame({"word": words, name: [True] * len(words)})
    else:
        raise TypeError(
            "lexicon must be a Series (word -> value), a DataFrame with a 'word' column, "
            f"a mapping or an iterable of words; got {type(lexicon).__name__}"
        )
    df["word"] = df["word"].astype(str)
    return df.reset_index(drop=True)


def match_lexicon(
    table: pd.DataFrame,
    lexicon,
    *,
    on: str | None = "decoded",
    strip: bool = True,
    value_name: str | None = None,
) -> pd.DataFrame:
    """Rows of ``table`` whose string is a lexicon word, with that word's value.

    ``table[on]`` (the index when ``on=None``, for wide tables) is
    lower-cased and, with ``strip``, stripped of white space, then joined to
    the lexicon words as given (the loaders in :mod:`rmlib.tables.lexicons` give
    lower-case words). Every match is kept: several tokens can map to one
    word (``"Good"``, ``" good"``), and a word listed twice in the lexicon
    gives two rows, as the paper's ``inner_join`` did.

    Returns the matched rows (all columns of ``table``, its index kept as
    a column named ``item`` when ``on=None``) plus ``word`` and the value
    column (the lexicon's value column name, ``value_name`` or ``value``).
    ``attrs``: ``n_matched`` (rows), ``n_words`` (distinct lexicon words
    matched), ``n_lexicon``, ``n_table``, ``strip``, and the table's
    ``provenance`` if it had one.
    """
    if not isinstance(table, pd.DataFrame):
        raise TypeError(f"table must be a pandas DataFrame, got {type(table).__name__}")
    lex = as_lexicon(lexicon, value_name)
    vname = [c for c in lex.columns if c != "word"][0]
    if on is None:
        left = table.copy()
        left.insert(0, "item", table.index)
        left = left.reset_index(drop=True)
        keys = normalize_strings(left["item"].to_numpy(), strip)
    else:
        if on not in table.columns:
            raise InputError(
                f"table has no column {on!r} (columns: {list(table.columns)}); "
                "pass on=<column> or on=None to match the index"
            )
        left = table.reset_index(drop=True).copy()
        keys = normalize_strings(left[on].to_numpy(), strip)
    if vname in left.columns or "word" in left.columns:
        raise InputError(
            f"table already has a column named {vname!r} or 'word'; rename it or pass value_name="
        )
    left["word"] = keys.to_numpy()
    out = left.dropna(subset=["word"]).merge(lex, on="word", how="inner", sort=False)
    out.attrs = {
        "n_matched": int(len(out)),
        "n_words": int(out["word"].nunique()),
        "n_lexicon": int(lex["word"].nunique()),
        "n_table": int(len(table)),
        "strip": strip,
        "value_column": vname,
    }
    if "provenance" in table.attrs:
        out.attrs["provenance"] = table.attrs["provenance"]
    return out


# --------------------------------------------------------------------------
# Helpers for many (model, prompt) tables
# --------------------------------------------------------------------------


def iter_tables(tables):
    """Yield ``(model, prompt, table)`` from the accepted container forms.

    ``tables`` is a single score table (model and prompt read from
    ``attrs["provenance"]``), a mapping ``{(model, prompt): table}`` or a
    mapping ``{model: table}`` (prompt from the provenance, else None).
    """
    if isinstance(tables, pd.DataFrame):
        prov = tables.attrs.get("provenance", {}) or {}
        yield prov.get("model_id"), prov.get("prompt"), tables
        return
    if not isinstance(tables, Mapping):
        raise TypeError(
            "tables must be a score table or a mapping {(model, prompt): table} / {model: table}; "
            f"got {type(tables).__name__}"
        )
    for key, table in tables.items():
        if not isinstance(table, pd.DataFrame):
            raise TypeError(f"tables[{key!r}] is a {type(table).__name__}, not a DataFrame")
        if isinstance(key, tuple):
            if len(key) != 2:
                raise InputError(f"tuple keys must be (model, prompt); got {key!r}")
            model, prompt = key
        else:
            model = key
            prompt = (table.attrs.get("provenance", {}) or {}).get("prompt")
        yield model, prompt, table


def ols_slopes(y, X, names, cov_type: str, ci: float) -> pd.DataFrame:
    """OLS of y on [1, X] with statsmodels; one row per named slope."""
    if cov_type not in ("nonrobust", "HC0", "HC1", "HC2", "HC3"):
        raise InputError(f"cov_type must be 'nonrobust' or 'HC0'..'HC3', got {cov_type!r}")
    if not 0 < ci < 1:
        raise InputError(f"ci must be in (0, 1), got {ci}")
    y = np.asarray(y, dtype=float)
    X = np.column_stack([np.ones(len(y))] + [np.asarray(x, dtype=float) for x in X])
    k = X.shape[1]
    rows = []
    if len(y) <= k or np.linalg.matrix_rank(X) < k:
        for name in names:
            rows.append({"term": name, "n": len(y), "slope": np.nan, "se": np.nan, "ci_low": np.nan,
                         "ci_high": np.nan, "t": np.nan, "p": np.nan, "intercept": np.nan})
        return pd.DataFrame(rows)
    fit = sm.OLS(y, X).fit(cov_type=cov_type, use_t=True)
    conf = fit.conf_int(alpha=1 - ci)
    for j, name in enumerate(names, start=1):
        rows.append({
            "term": name,
            "n": int(len(y)),
            "slope": float(fit.params[j]),
            "se": float(fit.bse[j]),
            "ci_low": float(conf[j, 0]),
            "ci_high": float(conf[j, 1]),
            "t": float(fit.tvalues[j]),
            "p": float(fit.pvalues[j]),
            "intercept": float(fit.params[0]),
        })
    return pd.DataFrame(rows)


# --------------------------------------------------------------------------
# Sentiment
# --------------------------------------------------------------------------


def valence_classes(values: pd.Series) -> pd.Series:
    """'positive' / 'negative' for numeric scores (> 0 / < 0), class labels as given."""
    if pd.api.types.is_numeric_dtype(values) and not pd.api.types.is_bool_dtype(values):
        v = values.astype(float)
        return pd.Series(np.where(v > 0, "positive", np.where(v < 0, "negative", None)),
                         index=values.index, dtype="object")
    return values.astype("object").str.lower()


def _matched(table: pd.DataFrame, lexicon, on: str | None, strip: bool, score: str):
    """:func:`match_lexicon` rows and the name of the lexicon's value column; the score column must exist."""
    m = match_lexicon(table, lexicon, on=on, strip=strip)
    if score not in m.columns:
        raise InputError(f"table has no score column {score!r}")
    return m, m.attrs["value_column"]


def sentiment_by_class(
    table: pd.DataFrame,
    lexicon,
    *,
    on: str | None = "decoded",
    score: str = "score",
    strip: bool = True,
    drop_ambiguous: bool = True,
) -> pd.DataFrame:
    """Summary of scores per sentiment class (Bing: positive / negative).

    ``lexicon`` holds class labels (``lexicons.bing_lexicon()``) or numeric
    scores (AFINN: sign gives the class, 0 is left out). With
    ``drop_ambiguous`` a word listed in more than one class (Bing's
    ``envious``) is left out. One row per class: ``n`` (matched rows),
    ``n_words``, ``mean``, ``sd`` (ddof=1), ``sem``, ``median``, ``min``,
    ``max``.
    """
    m, vname = _matched(table, lexicon, on, strip, score)
    m["class"] = valence_classes(m[vname])
    m = m.dropna(subset=["class", score])
    if drop_ambiguous:
        n_classes = m.groupby("word")["class"].nunique()
        m = m[~m["word"].isin(n_classes.index[n_classes > 1])]
    g = m.groupby("class")[score]
    out = pd.DataFrame({
        "n": g.size(),
        "n_words": m.groupby("class")["word"].nunique(),
        "mean": g.mean(),
        "sd": g.std(ddof=1),
        "sem": g.sem(ddof=1),
        "median": g.median(),
        "min": g.min(),
        "max": g.max(),
    })
    out.index.name = "class"
    return out


def valence_slopes(
    table: pd.DataFrame,
    lexicon,
    *,
    on: str | None = "decoded",
    score: str = "score",
    strip: bool = True,
    cov_type: str = "nonrobust",
    ci: float = 0.95,
) -> pd.DataFrame:
    """Slopes of score on numeric sentiment, fitted separately per valence.

    For AFINN-matched tokens of one table: OLS ``score ~ sentiment`` on the
    positive words (sentiment > 0) and, separately, on the negative words
    (< 0), as the paper's Fig. 3C. One row per valence (index
    ``negative``, ``positive``): ``n, slope, se, ci_low, ci_high, t, p,
    intercept``. Classical SEs by default (the paper's ``lm``); a valence
    with fewer than three matches or a single distinct sentiment value gets
    NaN.
    """
    m, vname = _matched(table, lexicon, on, strip, score)
    if not pd.api.types.is_numeric_dtype(m[vname]) or pd.api.types.is_bool_dtype(m[vname]):
        raise InputError(
            f"valence_slopes needs numeric sentiment values (AFINN); lexicon column {vname!r} is "
            f"{m[vname].dtype}. For class lexicons (Bing) use sentiment_by_class."
        )
    m = m.dropna(subset=[score, vname])
    rows = []
    for valence in VALENCES:
        sub = m[m[vname] > 0] if valence == "positive" else m[m[vname] < 0]
        r = ols_slopes(sub[score], [sub[vname]], ["sentiment"], cov_type, ci).iloc[0]
        rows.append(r.drop("term").rename(valence))
    out = pd.DataFrame(rows)
    out.index.name = "valence"
    out["n"] = out["n"].astype(int)
    return out


def sentiment_slopes(tables, lexicon, **kwargs) -> pd.DataFrame:
    """:func:`valence_slopes` for many tables, as one long DataFrame.

    ``tables``: a mapping ``{(model, prompt): score_table}`` (or
    ``{model: table}``, prompt from the table's provenance). Columns
    ``model, prompt, valence, n, slope, se, ci_low, ci_high, t, p,
    intercept``. Keyword arguments go to :func:`valence_slopes`.
    """
    parts = []
    for model, prompt, table in iter_tables(tables):
        s = valence_slopes(table, lexicon, **kwargs).reset_index()
        s.insert(0, "prompt", prompt)
        s.insert(0, "model", model)
        parts.append(s)
    if not parts:
        raise InputError("no tables given")
    return pd.concat(parts, ignore_index=True)


def _groupols_slopes(df: pd.DataFrame, by: list, x: str, y: str) -> pd.DataFrame:
    """Closed-form OLS of y on x per group (classical SEs, t with n - 2 df), one row per group."""
    d = df[by + [x, y]].astype({x: float, y: float})
    d = d.assign(_xx=d[x] * d[x], _xy=d[x] * d[y], _yy=d[y] * d[y])
    g = d.groupby(by, sort=False, observed=True)
    n = g.size().astype(float)
    sx, sy, sxx, sxy, syy = (g[c].sum() for c in (x, y, "_xx", "_xy", "_yy"))
    vx = sxx - sx * sx / n
    cov = sxy - sx * sy / n
    vy = syy - sy * sy / n
    slope = cov / vx
    rss = (vy - slope * cov).clip(lower=0)
    se = np.sqrt(rss / (n - 2) / vx)
    ok = (n > 2) & (vx > 1e-12 * n)
    slope, se = slope.where(ok), se.where(ok)
    t = slope / se
    p = pd.Series(2 * stats.t.sf(np.abs(t.to_numpy()), (n - 2).to_numpy()), index=t.index)
    out = pd.DataFrame({"n": n.astype(int), "slope": slope, "se": se, "t": t, "p": p,
                        "intercept": (sy - slope * sx) / n})
    return out.reset_index()


def sentiment_slopes_long(long: pd.DataFrame, lexicon, *, by=("model", "prompt"), on: str = "decoded",
                          score: str = "score", strip: bool = True) -> pd.DataFrame:
    """The numbers of :func:`sentiment_slopes` (classical SEs) for a long table of many groups at once.

    ``long`` holds many (model, prompt) tables stacked (``by`` names the
    columns that tell them apart); one lexicon join and closed-form OLS per
    group and valence, so hundreds of groups take a fraction of a second.
    Columns ``by``, ``valence``, ``n, slope, se, t, p, intercept`` (no
    intervals; ``sentiment_slopes`` has them).
    """
    by = list(by)
    m = match_lexicon(long, lexicon, on=on, strip=strip)
    vname = m.attrs["value_column"]
    if not pd.api.types.is_numeric_dtype(m[vname]) or pd.api.types.is_bool_dtype(m[vname]):
        raise InputError(f"sentiment_slopes_long needs numeric sentiment values (AFINN); {vname!r} is not")
    m = m.dropna(subset=[score, vname])
    m["valence"] = valence_classes(m[vname])
    m = m.dropna(subset=["valence"])
    return _groupols_slopes(m, by + ["valence"], vname, score)


def class_gaps(long: pd.DataFrame, lexicon, *, by=("model", "prompt"), on: str = "decoded",
               score: str = "score", strip: bool = True, positive: str = "positive",
               drop_ambiguous: bool = True) -> pd.DataFrame:
    """Per group: mean score of a class lexicon's positive words minus that of its negative words.

    The slope of ``score`` on a 0/1 indicator of ``positive`` (Bing:
    positive vs negative), with its classical SE and t test, from one join;
    words in both classes are left out with ``drop_ambiguous`` (as
    :func:`sentiment_by_class`). Columns ``by``, ``n, gap, se, t, p``,
    ``mean_negative`` (the intercept).
    """
    by = list(by)
    m = match_lexicon(long, lexicon, on=on, strip=strip)
    vname = m.attrs["value_column"]
    m["class"] = valence_classes(m[vname])
    m = m.dropna(subset=["class", score])
    if drop_ambiguous:
        n_classes = m.groupby("word")["class"].nunique()
        m = m[~m["word"].isin(n_classes.index[n_classes > 1])]
    m["is_positive"] = (m["class"] == positive).astype(float)
    out = _groupols_slopes(m, by, "is_positive", score)
    return out.rename(columns={"slope": "gap", "intercept": "mean_negative"})


def slope_asymmetry(slopes: pd.DataFrame) -> pd.DataFrame:
    """Per model and prompt: |positive slope| minus |negative slope|.

    ``slopes`` is the output of :func:`sentiment_slopes`. Columns
    ``model, prompt, slope_pos, slope_neg, abs_pos, abs_neg, diff``
    (``abs_pos - abs_neg``) and ``pos_stronger`` (``diff > 0``: the model
    separates positive words by their sentiment more than negative words).
    """
    need = {"model", "prompt", "valence", "slope"}
    if not need <= set(slopes.columns):
        raise InputError(f"slopes needs columns {sorted(need)} (output of sentiment_slopes)")
    wide = slopes.pivot_table(index=["model", "prompt"], columns="valence", values="slope",
                              aggfunc="first", dropna=False, sort=False)
    missing = [v for v in VALENCES if v not in wide.columns]
    if missing:
        raise InputError(f"slopes has no rows for valence {missing}")
    out = pd.DataFrame({
        "slope_pos": wide["positive"],
        "slope_neg": wide["negative"],
    })
    out["abs_pos"] = out["slope_pos"].abs()
    out["abs_neg"] = out["slope_neg"].abs()
    out["diff"] = out["abs_pos"] - out["abs_neg"]
    out["pos_stronger"] = out["diff"] > 0
    return out.reset_index()


def asymmetry_test(slopes: pd.DataFrame) -> pd.DataFrame:
    """Across models, per prompt: paired t-test of |slope_pos| vs |slope_neg|.

    ``scipy.stats.ttest_rel(abs_pos, abs_neg)`` over the models with both
    slopes (the paper: t(9) = 2.6, p < .05 for "greatest"). Columns
    ``prompt, n_models, mean_abs_pos, mean_abs_neg, mean_diff, t, df, p,
    n_pos_stronger, n_neg_stronger``.
    """
    asym = slope_asymmetry(slopes).dropna(subset=["abs_pos", "abs_neg"])
    rows = []
    for prompt, g in asym.groupby("prompt", sort=False, dropna=False):
        n = len(g)
        if n >= 2:
            res = stats.ttest_rel(g["abs_pos"], g["abs_neg"])
            t, p = float(res.statistic), float(res.pvalue)
        else:
            t = p = np.nan
        rows.append({
            "prompt": prompt,
            "n_models": n,
            "mean_abs_pos": g["abs_pos"].mean(),
            "mean_abs_neg": g["abs_neg"].mean(),
            "mean_diff": g["diff"].mean(),
            "t": t,
            "df": n - 1,
            "p": p,
            "n_pos_stronger": int((g["diff"] > 0).sum()),
            "n_neg_stronger": int((g["diff"] < 0).sum()),
        })
    return pd.DataFrame(rows)


# --------------------------------------------------------------------------
# Framing: best vs worst vs greatest
# --------------------------------------------------------------------------


def _check_score_table(table: pd.DataFrame, name: str, on: str, score: str) -> None:
    if not isinstance(table, pd.DataFrame):
        raise TypeError(f"{name} must be a DataFrame, got {type(table).__name__}")
    for col in (on, score):
        if col not in table.columns:
            raise InputError(f"{name} has no column {col!r} (columns: {list(table.columns)})")
    if table[on].duplicated().any():
        raise InputError(f"{name}[{on!r}] has duplicate keys; join within one model on a unique key")


def prompt_correlation(
    a: pd.DataFrame,
    b: pd.DataFrame,
    *,
    on: str = "token_id",
    score: str = "score",
    method: str = "pearson",
) -> pd.Series:
    """Correlation of one model's scores under two prompts (e.g. best vs greatest).

    The two score tables are joined on ``on`` (the token id: same model,
    same vocabulary). ``method``: ``pearson``, ``spearman`` or ``kendall``
    (tau-b), via SciPy. Returns a Series ``r, p, n, method``.
    """
    _check_score_table(a, "a", on, score)
    _check_score_table(b, "b", on, score)
    j = a[[on, score]].merge(b[[on, score]], on=on, suffixes=("_a", "_b")).dropna()
    x, y = j[f"{score}_a"].to_numpy(float), j[f"{score}_b"].to_numpy(float)
    return _correlate(x, y, method)


def _correlate(x, y, method):
    """``r, p, n, method`` of one pair. Kendall's r is rmlib's one tau-b
    (:func:`rmlib.stats.tau.kendall_tau_b`); its p-value is SciPy's test."""
    funcs = {"pearson": stats.pearsonr, "spearman": stats.spearmanr, "kendall": stats.kendalltau}
    if method not in funcs:
        raise InputError(f"method must be one of {sorted(funcs)}, got {method!r}")
    if len(x) < 3:
        return pd.Series({"r": np.nan, "p": np.nan, "n": len(x), "method": method})
    res = funcs[method](x, y)
    r = kendall_tau_b(x, y) if method == "kendall" else float(res[0])
    return pd.Series({"r": r, "p": float(res[1]), "n": len(x), "method": method})


def prompt_correlations(a: pd.DataFrame, b: pd.DataFrame, *, method: str = "pearson") -> pd.DataFrame:
    """Per-model correlation of two wide tables (shared vocabulary).

    ``a`` and ``b`` are wide tables (index = item, one column per model)
    for two prompts; items are aligned on the index, models on the column
    names they share. One row per model: ``r, p, n, method``.
    """
    for name, t in (("a", a), ("b", b)):
        if not isinstance(t, pd.DataFrame):
            raise TypeError(f"{name} must be a wide DataFrame, got {type(t).__name__}")
    cols = [c for c in a.columns if c in b.columns]
    if not cols:
        raise InputError("the two wide tables share no model column")
    rows = {}
    for c in cols:
        j = pd.concat([a[c].rename("a"), b[c].rename("b")], axis=1, join="inner").dropna()
        rows[c] = _correlate(j["a"].to_numpy(float), j["b"].to_numpy(float), method)
    out = pd.DataFrame(rows).T
    out.index.name = "model"
    return out.astype({"r": float, "p": float, "n": int})


def best_worst(
    best: pd.DataFrame,
    worst: pd.DataFrame,
    *,
    on: str = "token_id",
    score: str = "score",
) -> pd.DataFrame:
    """One model's best and worst scores side by side, with their sum and difference.

    Joined on ``on`` within one model (raw vocabulary). Columns: ``on``,
    ``decoded`` (when ``best`` has it), ``best``, ``worst``, ``sum``
    (``best + worst``: high for tokens good under both framings, Table
    A.8) and ``diff`` (``best - worst``: framing-sensitive tokens, Table
    A.9). The tables themselves: ``rmlib.stats.vocab.top_bottom(result,
    n, score="sum")`` (or ``"diff"``).
    """
    _check_score_table(best, "best", on, score)
    _check_score_table(worst, "worst", on, score)
    keep = [on] + (["decoded"] if "decoded" in best.columns and on != "decoded" else [])
    left = best[keep + [score]].rename(columns={score: "best"})
    j = left.merge(worst[[on, score]].rename(columns={score: "worst"}), on=on, how="inner")
    j["sum"] = j["best"] + j["worst"]
    j["diff"] = j["best"] - j["worst"]
    return j


def best_worst_wide(best: pd.DataFrame, worst: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """``(best + worst, best - worst)`` for wide tables on a shared vocabulary.

    Items (index) and models (columns) are those the two tables share
    (build the wide tables with ``rmlib.tables.vocabulary.shared_vocabulary``;
    Tables A.8/A.9 are ``vocab.top_bottom(sum_wide, n, score=<model>)``
    per model).
    """
    if not isinstance(best, pd.DataFrame) or not isinstance(worst, pd.DataFrame):
        raise TypeError("best and worst must be wide DataFrames (index = item, columns = models)")
    cols = [c for c in best.columns if c in worst.columns]
    if not cols:
        raise InputError("best and worst share no model column")
    idx = best.index.intersection(worst.index, sort=False)
    b, w = best.loc[idx, cols], worst.loc[idx, cols]
    return b + w, b - w


__all__ = ["VALENCES", "as_lexicon", "asymmetry_test", "best_worst", "best_worst_wide", "class_gaps", "iter_tables",
           "match_lexicon", "normalize_strings", "ols_slopes", "prompt_correlation", "prompt_correlations",
           "sentiment_by_class", "sentiment_slopes", "sentiment_slopes_long", "slope_asymmetry", "valence_classes",
           "valence_slopes"]
