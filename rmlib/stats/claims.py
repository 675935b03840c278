"""Finding sentences: one small template per claim, filled with numbers a page has computed.

Each function takes the tables of :func:`rmlib.stats.matched.compare_matched` (one row per
measure: ``measure, diff, low, high, p``, optionally group columns) or of
:mod:`rmlib.stats.lexical`, and returns one sentence (a string); nothing is computed here
beyond counting and picking the extremes, so that the sentence says exactly what the table
shows.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..errors import InputError

__all__ = ["asymmetry_summary", "class_contrast", "contamination_effect", "erasure_verdict", "framing_agreement",
           "frequency_summary", "human_vs_models", "lexicon_agreement", "matched_summary"]


def _fmt(x: float, unit: str) -> str:
    return f"{x:,.0f}" if unit == "places" else f"{x:.1f}"


def _p(p: float) -> str:
    return "p < 0.001" if p < 0.001 else f"p = {p:.3f}"


def _need(result: pd.DataFrame, cols) -> None:
    missing = [c for c in cols if c not in result.columns]
    if missing:
        raise InputError(f"the result table lacks columns {missing}: pass the output of stats.compare_matched")


STATS = ("measure", "n_sets", "n_controls", "mean_target", "mean_control", "diff", "low", "high", "p", "cohens_d")


def _label(row: pd.Series) -> str:
    """A row's name: its group columns (``by`` of compare_matched) and its measure."""
    groups = [str(row[c]) for c in row.index if c not in STATS]
    return ", ".join(groups + [str(row["measure"])])


def matched_summary(result: pd.DataFrame, *, what: str, unit: str = "places", alpha: float = 0.05,
                    better: str = "lower") -> str:
    """How many rows (rankers, or rankers x prompts) put the targets below their controls, how many
    significantly, the range of the differences and the row furthest from zero. ``better``: whether a
    lower value (a rank: ``diff > 0`` is below) or a higher value (a percentile or a score: ``diff < 0``
    is below) is the better place."""
    _need(result, ["measure", "diff", "p"])
    if better not in ("lower", "higher"):
        raise InputError(f"better must be 'lower' (ranks) or 'higher' (percentiles, scores), not {better!r}")
    if result.empty:
        raise InputError("the result table is empty")
    below = result["diff"] > 0 if better == "lower" else result["diff"] < 0
    sig = below & (result["p"] < alpha)
    big = result.loc[result["diff"].abs().idxmax()]
    big_below = (big["diff"] > 0) == (better == "lower")
    return (f"{what}: {int(below.sum())} of {len(result)} put them below their matched controls "
            f"({int(sig.sum())} significantly, permutation test at {alpha}); differences from "
            f"{_fmt(result['diff'].min(), unit)} to {_fmt(result['diff'].max(), unit)} {unit}, the largest "
            f"{_fmt(abs(big['diff']), unit)} {unit} {'below' if big_below else 'above'} ({_label(big)}).")


def human_vs_models(levels: pd.DataFrame, *, human: str = "human", what: str = "the identity-group items") -> str:
    """People's ranks against the rankers' ranks of the same targets and controls (``diff`` in rank
    places, 1 = best: positive = further down than the controls)."""
    _need(levels, ["measure", "diff", "low", "high", "p"])
    if human not in set(levels["measure"]):
        raise InputError(f"levels has no {human!r} row: compare the ranks of the human column too")
    h = levels[levels["measure"] == human].iloc[0]
    models = levels[levels["measure"] != human]
    if models.empty:
        raise InputError("levels has only the human row")
    side = "lower" if h["diff"] > 0 else "higher"
    further = int((models["diff"] > h["diff"]).sum())
    return (f"People rank {what} {_fmt(abs(h['diff']), 'places')} places {side} than comparable items (rank "
            f"difference {_fmt(h['diff'], 'places')}, 95% CI {_fmt(h['low'], 'places')} to "
            f"{_fmt(h['high'], 'places')}, {_p(h['p'])}); the reward models rank them "
            f"{_fmt(models['diff'].mean(), 'places')} places lower than comparable items on average (from "
            f"{_fmt(models['diff'].min(), 'places')} to {_fmt(models['diff'].max(), 'places')}), and {further} of "
            f"{len(models)} rank them lower than people do.")


def contamination_effect(result: pd.DataFrame, *, what: str, unit: str = "places", clean: str = "clean",
                         contaminated: str = "contaminated", measure: str = "measure") -> str:
    """The clean and the contaminated run side by side: targets minus controls in each, with intervals.

    ``result`` holds one row per run (``measure`` names it, or contains the run name as
    ``"<run> | <prompt>"``); with several prompts, one clause per prompt."""
    _need(result, [measure, "diff", "low", "high", "p"])
    names = result[measure].astype(str)
    parts = names.str.partition(" | ")
    run, rest = parts[0], parts[2]
    if not {clean, contaminated} <= set(run):
        raise InputError(f"result needs rows for {clean!r} and {contaminated!r}; it has {sorted(set(run))}")
    clauses = []
    for prompt in dict.fromkeys(rest):
        c = result[(run == clean) & (rest == prompt)].iloc[0]
        d = result[(run == contaminated) & (rest == prompt)].iloc[0]
        where = f" ({prompt})" if prompt else ""
        clauses.append(f"{_fmt(c['diff'], unit)} {unit} (95% CI {_fmt(c['low'], unit)} to {_fmt(c['high'], unit)}, "
                       f"{_p(c['p'])}) after clean training and {_fmt(d['diff'], unit)} (95% CI "
                       f"{_fmt(d['low'], unit)} to {_fmt(d['high'], unit)}, {_p(d['p'])}) after contamination{where}")
    return f"{what} minus matched controls: " + "; ".join(clauses) + "."


def lexicon_agreement(d_by_lexicon: pd.DataFrame, asymmetry: pd.DataFrame) -> str:
    """Do the sentiment conclusions hold with every lexicon?

    ``d_by_lexicon``: index = (model, prompt) cells, one column per lexicon, Cohen's d of positive
    minus negative words. ``asymmetry``: columns ``lexicon, model, prompt, diff``
    (:func:`rmlib.stats.lexical.slope_asymmetry` per graded lexicon)."""
    signs = np.sign(d_by_lexicon.dropna())
    same_d = int((signs.nunique(axis=1) == 1).sum())
    wide = asymmetry.pivot_table(index=["model", "prompt"], columns="lexicon", values="diff", aggfunc="first")
    wide = wide.dropna()
    same_a = int((np.sign(wide).nunique(axis=1) == 1).sum())
    lex = ", ".join(d_by_lexicon.columns)
    graded = ", ".join(wide.columns) or "the graded lexicons"
    if signs.empty and wide.empty:
        return (f"No (model, prompt) cell has enough matched tokens in every lexicon ({lex}) to compare them: "
                "score more tokens (vocab_slice).")
    return (f"The sign of Cohen's d (positive minus negative words) is the same with {lex} in {same_d} of "
            f"{len(signs)} (model, prompt) cells; the sign of |positive slope| - |negative slope| is the same with "
            f"{graded} in {same_a} of {len(wide)}.")


def erasure_verdict(vs_humans: pd.DataFrame, levels: pd.DataFrame, *, alpha: float = 0.05,
                    human: str = "human") -> str:
    """A plain verdict on the paper's claim that reward models devalue identity-group references
    relative to people: ``vs_humans`` compares RM-minus-human rank gaps with human-matched controls,
    ``levels`` the ranks themselves (humans included)."""
    _need(vs_humans, ["measure", "diff", "p"])
    n = len(vs_humans)
    sig = int(((vs_humans["diff"] > 0) & (vs_humans["p"] < alpha)).sum())
    down = int((vs_humans["diff"] > 0).sum())
    h = levels[levels["measure"] == human]
    people = ("people themselves rank these items no lower than comparable items"
              if h.empty or h.iloc[0]["diff"] <= 0 or h.iloc[0]["p"] >= alpha
              else "but people, too, rank these items below comparable items")
    what = "put the identity-group items further below the human ranking than items people rate alike"
    if sig > n / 2:
        head = f"Reproduces on the released data: {sig} of {n} reward models significantly {what}"
    elif down > n / 2:
        head = f"Partly: {down} of {n} reward models {what}, {sig} significantly"
    else:
        head = f"Does not reproduce: {down} of {n} reward models {what} ({sig} significantly)"
    return f"{head}; {people}."


# --------------------------------------------------------------------------- sentiment, framing, frequency
def class_contrast(d_matrix: pd.DataFrame, *, flip: str = "worst") -> str:
    """Positive minus negative words, per model: Cohen's d under each prompt, and whether the prompt
    ``flip`` (where a reader of the question would prefer the negative words) turns the sign.

    ``d_matrix``: index = models, one column per prompt (Cohen's d, positive minus negative)."""
    if d_matrix.empty:
        raise InputError("d_matrix is empty: compute Cohen's d for at least one model and prompt")
    per = "; ".join(f"{m} " + ", ".join(f"{v:+.2f} ({p})" for p, v in row.dropna().items())
                    for m, row in d_matrix.iterrows())
    if flip not in d_matrix.columns:
        return f"Cohen's d, positive minus negative words: {per}."
    others = d_matrix.drop(columns=flip)
    kept = int((np.sign(others).eq(np.sign(d_matrix[flip]), axis=0).all(axis=1) & d_matrix[flip].notna()).sum())
    n = int(d_matrix[flip].notna().sum())
    return (f"Cohen's d, positive minus negative words: {per}. Under '{flip}' {kept} of {n} models keep the sign "
            f"of the other prompts" + (": they prefer the positive words whatever the question." if kept == n else "."))


def asymmetry_summary(test: pd.DataFrame) -> str:
    """Per prompt: in how many models |positive slope| exceeds |negative slope|, with the paired
    t-test across models when there are at least three (``test``: :func:`rmlib.stats.asymmetry_test`)."""
    _need(test, ["prompt", "n_models", "n_pos_stronger", "t", "df", "p"])
    if test.empty:
        raise InputError("the test table is empty")
    parts = []
    for r in test.itertuples():
        clause = f"'{r.prompt}' {int(r.n_pos_stronger)} of {int(r.n_models)}"
        if r.n_models >= 3 and pd.notna(r.t):
            clause += f" (paired t({int(r.df)}) = {r.t:.2f}, {_p(r.p)})"
        parts.append(clause)
    few = int(test["n_models"].max()) < 3
    return ("|positive slope| exceeds |negative slope| in " + "; ".join(parts) + " models"
            + (" (too few models for a test across models: read the signs)." if few else "."))


def framing_agreement(corr: pd.DataFrame, pair: str = "best vs worst") -> str:
    """How alike each model ranks its tokens under two prompts (``corr``: columns ``model, pair,
    Spearman rho``, :func:`rmlib.stats.summaries.framing_correlations`)."""
    _need(corr, ["model", "pair", "Spearman rho"])
    rho = corr.loc[corr["pair"] == pair, "Spearman rho"]
    if rho.empty:
        raise InputError(f"corr has no rows for {pair!r}; it has {sorted(set(corr['pair']))}")
    span = f"{rho.min():.2f}" if round(rho.min(), 2) == round(rho.max(), 2) else f"{rho.min():.2f} to {rho.max():.2f}"
    if (rho > 0).all():
        tail = "every model ranks its tokens alike under both: the framing moves little of the score."
    elif (rho < 0).all():
        tail = "every model ranks its tokens in opposite orders under the two."
    else:
        tail = "the models disagree on the sign."
    return f"{pair}: Spearman rho {span} across {len(rho)} model(s); {tail}"


def frequency_summary(counts: pd.DataFrame, *, source: str = "BNC", spec: str = "log_freq + sentiment") -> str:
    """How many models have a significantly positive (and negative) frequency slope per prompt
    (``counts``: :func:`rmlib.stats.count_significant` by ``source, spec, prompt``)."""
    _need(counts, ["spec", "prompt", "n_models", "n_positive", "n_negative"])
    rows = counts[(counts["spec"] == spec) & ((counts["source"] == source) if "source" in counts.columns else True)]
    if rows.empty:
        raise InputError(f"counts has no rows for {source} / {spec!r}")
    parts = "; ".join(f"'{r.prompt}' {int(r.n_positive)} of {int(r.n_models)} positive, {int(r.n_negative)} negative"
                      for r in rows.itertuples())
    return f"Frequency slopes ({source}, {spec}), significant at the chosen alpha: {parts}."
