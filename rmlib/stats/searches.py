"""Multi-token searches summarised: how sure they are, and the sentiment of what they found.

Pure functions on the tables of :func:`rmlib.engine.search.results_table` (one row per search:
``prompt, length, direction, best_text, best_score, single_swap_optimal, restarts_at_best,
restarts_run, restart_spread, gcg_score, gcg_single_swap_optimal, gain_over_gcg, ...``), and
one sentence-making function per claim, fed with the numbers computed on the page.

* :func:`search_summary`: in how many searches every restart reached the best value, how many
  results are single-swap optimal over their candidates, how often GCG alone was, and what the
  sweeps added to it.
* :func:`framing_sentiment` and :func:`framing_means`: the lexicon sentiment of each response
  (:func:`rmlib.stats.lexical.text_sentiment`) by framing (does the prompt ask for something
  good or bad?), direction (optimal, pessimal) and length; :func:`framing_verdict` says whether
  the difference between optimal and pessimal answers keeps its sign under a negative framing
  (a full reversal would flip it), as chapter 3 asks of single tokens.
* One sentence per finding of a search page, each from the small table that holds its numbers:
  :func:`rescore_sentence` (the reported scores are the scorer's own),
  :func:`retokenize_sentence` (do the found ids survive decoding and re-tokenizing?),
  :func:`optimum_by_prompt_sentence` (do optimal answers to "worst" score lower than to "best"?)
  and :func:`gcg_claim_sentence` (the paper's GCG claim beside what this run can say of it).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping

import numpy as np
import pandas as pd

from .lexical import text_sentiment
from ..errors import InputError

__all__ = ["search_summary", "search_sentences", "framing_sentiment", "framing_means", "framing_verdict",
           "framing_sentences", "rescore_sentence", "retokenize_sentence", "optimum_by_prompt_sentence",
           "gcg_claim_sentence"]

DIRECTION_NAMES = {"max": "optimal", "min": "pessimal"}


def _require(table: pd.DataFrame, columns, what: str) -> None:
    missing = [c for c in columns if c not in table.columns]
    if missing:
        raise InputError(f"{what} needs the columns {missing} (a table of rmlib.engine.search.results_table)")


def search_summary(table: pd.DataFrame, tol: float = 1e-4) -> pd.DataFrame:
    """One row: ``searches``; ``all_agree``: searches with two or more finished restarts that all
    reached the best value; ``some_disagree``: searches whose restarts ended at different values;
    ``single_restart``: searches with fewer than two finished restarts; ``single_swap_optimal``:
    results checked optimal (``checked``: results checked at all); ``gcg_optimal`` of
    ``gcg_known``: GCG's own best was already single-swap optimal; ``sweeps_improved``: searches
    whose sweeps beat GCG by more than ``tol · max(1, |GCG's score|)``; ``median_gain``,
    ``max_gain``: what the sweeps added to GCG there; ``max_spread``: the widest spread of
    restart end values."""
    _require(table, ["restarts_at_best", "restarts_run", "restart_spread", "single_swap_optimal",
                     "gcg_score", "gcg_single_swap_optimal", "gain_over_gcg"], "search_summary")
    run = table["restarts_run"].astype(int)
    agree = table["restarts_at_best"].astype(int) == run
    gcg_known = table["gcg_single_swap_optimal"].notna()
    gain = table["gain_over_gcg"].astype(float)
    scale = np.maximum(1.0, table["gcg_score"].astype(float).abs())
    improved = gain > tol * scale
    checked = table["single_swap_optimal"].notna()
    return pd.DataFrame([{
        "searches": len(table), "all_agree": int((agree & (run >= 2)).sum()),
        "some_disagree": int((~agree).sum()), "single_restart": int((run < 2).sum()),
        "single_swap_optimal": int((table["single_swap_optimal"] == True).sum()),  # noqa: E712 (object column)
        "checked": int(checked.sum()),
        "gcg_optimal": int((table["gcg_single_swap_optimal"][gcg_known] == True).sum()),  # noqa: E712
        "gcg_known": int(gcg_known.sum()), "sweeps_improved": int(improved.sum()),
        "median_gain": float(gain[improved].median()) if improved.any() else 0.0,
        "max_gain": float(gain.max()) if len(gain.dropna()) else 0.0,
        "max_spread": float(table["restart_spread"].astype(float).max()) if len(table) else 0.0,
    }])


def search_sentences(summary: pd.DataFrame, candidates: str) -> list[str]:
    """Sentences for :func:`search_summary`'s row; ``candidates`` names what the searches ran over
    (e.g. "its prompt's 256 shortlisted tokens")."""
    s = summary.iloc[0]
    n = int(s["searches"])
    out = [f"Single-swap optimal over {candidates}: {int(s['single_swap_optimal'])} of {int(s['checked'])} "
           f"checked results ({n} searches)."]
    agree = (f"In {int(s['all_agree'])} of {n} searches every restart reached the same best value; in "
             f"{int(s['some_disagree'])} the restarts ended at different local optima (widest spread "
             f"{float(s['max_spread']):.3g})")
    if int(s["single_restart"]):
        agree += f"; {int(s['single_restart'])} ran fewer than two restarts to their end, so say nothing about it"
    out.append(agree + ". A value that several restarts reach is more likely the best over these candidates; "
               "one that a single restart reaches may be a lucky or an unlucky local optimum.")
    if int(s["gcg_known"]):
        out.append(f"GCG alone ended single-swap optimal in {int(s['gcg_optimal'])} of {int(s['gcg_known'])} "
                   f"searches; the sweeps beat GCG's best in {int(s['sweeps_improved'])} (by a median of "
                   f"{float(s['median_gain']):.3g}, at most {float(s['max_gain']):.3g}).")
    return out


def framing_sentiment(table: pd.DataFrame, lexicons: Mapping[str, object], negative: Collection[str], *,
                      text: str = "best_text") -> pd.DataFrame:
    """``table`` (one row per response) with ``framing`` ("negative" for the prompts in ``negative``,
    else "positive"), ``answer`` (optimal / pessimal, from ``direction``) and, per lexicon name, its
    sentiment (the sum over matched words) and ``<name> words`` (the words that matched)."""
    _require(table, ["prompt", "direction", text], "framing_sentiment")
    out = table.copy()
    out["framing"] = np.where(out["prompt"].isin(list(negative)), "negative", "positive")
    out["answer"] = out["direction"].map(DIRECTION_NAMES)
    for name, lexicon in lexicons.items():
        sent = text_sentiment(out[text].tolist(), lexicon)
        out[name] = sent["sentiment"].to_numpy()
        out[f"{name} words"] = sent["matched"].to_numpy()
    return out


def framing_means(sentiment: pd.DataFrame, lexicon: str) -> pd.DataFrame:
    """Mean ``lexicon`` sentiment per framing and answer (rows, e.g. "negative framing: optimal")
    and length (columns, "1 token", "2 tokens", ...): a matrix for a heatmap."""
    _require(sentiment, ["framing", "answer", "length", lexicon], "framing_means")
    rows = sentiment["framing"] + " framing: " + sentiment["answer"]
    cols = sentiment["length"].map(lambda n: f"{n} token{'s' if n != 1 else ''}")
    means = sentiment.assign(row=rows, column=cols).pivot_table(index="row", columns="column", values=lexicon,
                                                              aggfunc="mean", sort=False)
    order = [f"{f} framing: {a}" for f in ("positive", "negative") for a in ("optimal", "pessimal")]
    means = means.reindex([r for r in order if r in means.index])
    return means[sorted(means.columns, key=lambda c: int(c.split()[0]))].rename_axis(index=None, columns=None)


def framing_verdict(means: pd.DataFrame) -> pd.DataFrame:
    """Per length (a column of :func:`framing_means`): optimal minus pessimal sentiment under each
    framing, and what the negative framing did to it: "flips" (the sign turns), "shrinks" (same
    sign, smaller), "keeps" (same sign, as large or larger), "none" (no difference to flip)."""
    rows = []
    for col in means.columns:
        def diff(framing):
            try:
                return float(means.loc[f"{framing} framing: optimal", col] - means.loc[f"{framing} framing: pessimal", col])
            except KeyError:
                return float("nan")

        pos, neg = diff("positive"), diff("negative")
        if not np.isfinite(pos) or not np.isfinite(neg) or pos == 0:
            what = "none"
        elif np.sign(neg) == -np.sign(pos):
            what = "flips"
        elif abs(neg) < abs(pos):
            what = "shrinks"
        else:
            what = "keeps"
        rows.append({"length": col, "positive framing: optimal - pessimal": pos,
                     "negative framing: optimal - pessimal": neg, "negative framing": what})
    return pd.DataFrame(rows)


def framing_sentences(verdict: pd.DataFrame, lexicon: str) -> list[str]:
    """One sentence per length of :func:`framing_verdict` (``lexicon`` names the sentiment scale)."""
    words = {"flips": "flips it: the optimal answers are the more negative ones, a full reversal",
             "shrinks": "keeps its sign but shrinks it: a partial reversal, as the paper found for single tokens (§3.2)",
             "keeps": "keeps it as large or larger: no reversal"}
    out = []
    for r in verdict.itertuples(index=False):
        length, pos, neg, what = r
        if not np.isfinite(pos):
            out.append(f"{length}: no positive-framing prompt to compare with.")
        elif not np.isfinite(neg):
            out.append(f"{length}: under a positive framing the optimal answers' {lexicon} sentiment minus the "
                       f"pessimal ones' is {pos:+.2f}; no negative-framing prompt to compare it with.")
        elif what == "none":
            out.append(f"{length}: the optimal and pessimal answers' {lexicon} sentiment do not differ under a "
                       f"positive framing, so there is nothing for the negative framing ({neg:+.2f}) to reverse.")
        else:
            out.append(f"{length}: under a positive framing the optimal answers' {lexicon} sentiment minus the "
                       f"pessimal ones' is {pos:+.2f}; a negative framing ({neg:+.2f}) {words[what]}.")
    return out


# --------------------------------------------------------------------------- one claim each
#: The columns of the check table that :func:`rescore_sentence` reads (one row, computed on the page).
RESCORE_COLUMNS = ("searches", "searches that improved on their start", "median |best - start|",
                   "max |reported - rescored|")


def rescore_sentence(check: pd.DataFrame) -> str:
    """How many searches moved from their start (and the median size of the move), and how closely
    re-scoring each best sequence alone agrees with the score the search reported. ``check``: one
    row with the columns :data:`RESCORE_COLUMNS`."""
    _require(check, RESCORE_COLUMNS, "rescore_sentence")
    if len(check) != 1:
        raise InputError(f"rescore_sentence takes the one-row check table, got {len(check)} rows")
    c = check.iloc[0]
    return (f"{int(c['searches'])} searches; {int(c['searches that improved on their start'])} improved on their "
            f"start (median |change| {float(c['median |best - start|']):.2f}); re-scoring each best sequence "
            f"alone agrees with the reported score to {float(c['max |reported - rescored|']):.2g}.")


def retokenize_sentence(table: pd.DataFrame) -> str:
    """How many best sequences give back their own token ids when their text is tokenized again
    (``table``: one row per search with a boolean ``re-tokenizes``)."""
    _require(table, ["re-tokenizes"], "retokenize_sentence")
    return f"{int(table['re-tokenizes'].astype(bool).sum())} of {len(table)} best sequences re-tokenize to their own ids."


#: How each scorer kind's scores read in a finding (``classifier``: the paper's setting, nothing to add).
SCORE_CAVEATS = {
    "logprob": "here the scores are log-probabilities, which say how likely the model is to say a string, "
               "not how much a reward model values it",
    "implicit": "here the scores are implicit rewards (log p_model − log p_reference), not a reward model's",
}


def optimum_by_prompt_sentence(optimal: pd.Series, scorer_kind: str, *, low: str = "worst",
                               high: str = "best") -> str:
    """The mean optimal score under the ``low`` prompt against the ``high`` one (``optimal``: the mean
    best score of the maximizing searches, indexed by prompt label), and whether it is lower, as the
    paper found for R-Gem-2B. ``scorer_kind``: ``classifier``, ``logprob`` or ``implicit`` (the
    provenance's ``scorer``); for the last two the sentence says what the scores are."""
    if not {low, high} <= set(optimal.index):
        return (f"No optimal search for both {high!r} and {low!r} (prompts searched: "
                f"{', '.join(map(str, optimal.index)) or 'none'}): nothing to compare with the paper's R-Gem-2B.")
    lo, hi = float(optimal[low]), float(optimal[high])
    verb = "lower, as the paper found for R-Gem-2B" if lo < hi else "not lower, unlike the paper's finding for R-Gem-2B"
    caveat = SCORE_CAVEATS.get(scorer_kind, "")
    return (f"Mean optimal score for {low!r} {lo:.2f} vs {high!r} {hi:.2f}: {verb} (optimal answers to the "
            f"{low} prompt score lower)" + (f", but {caveat}" if caveat else "") + ".")


def gcg_claim_sentence(claim: str, scorer_kind: str, scorer_words: str) -> str:
    """The paper's GCG claim (§5) and what this run can say of it: with a reward model
    (``scorer_kind == "classifier"``) compare the strings; with another scorer (named in
    ``scorer_words``) it is not comparable. The released data holds no GCG results either way."""
    where = ("compare the strings in the two tables above; " if scorer_kind == "classifier" else
             f"not comparable here: the scores are of another kind ({scorer_words}) than R-Gem-2B's reward, and the "
             "searches are far shorter; ")
    return f"The paper (§5): {claim}. Verdict: {where}the released data has no GCG results to recompute."
