"""Multi-token searches summarised: how sure they are, and the sentiment of what they found.

Pure functions on the tables of :func:`rmlib.engine.search_tables.results_table` (one row per search:
``prompt, length, direction, best_text, best_score, single_swap_optimal, restarts_at_best,
restarts_run, restart_spread, gcg_score, gcg_single_swap_optimal, gain_over_gcg, ...``). They
return tables; a chapter writes its sentences from them with f-strings.

* :func:`search_summary`: in how many searches every restart reached the best value, how many
  results are single-swap optimal over their candidates, how often GCG alone was, and what the
  sweeps added to it.
* :func:`framing_sentiment` and :func:`framing_means`: the lexicon sentiment of each response
  (:func:`rmlib.stats.texts.text_sentiment`) by framing (does the prompt ask for something
  good or bad?), direction (optimal, pessimal) and length; :func:`framing_verdict` says whether
  the difference between optimal and pessimal answers keeps its sign under a negative framing
  (a full reversal would flip it), as one asks of single tokens.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping

import numpy as np
import pandas as pd

from .texts import text_sentiment
from ..errors import InputError

__all__ = ["search_summary", "framing_sentiment", "framing_means", "framing_verdict"]

DIRECTION_NAMES = {"max": "optimal", "min": "pessimal"}


def _require(table: pd.DataFrame, columns, what: str) -> None:
    missing = [c for c in columns if c not in table.columns]
    if missing:
        raise InputError(f"{what} needs the columns {missing} (a table of rmlib.engine.search_tables.results_table)")


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
    sign, smaller), "keeps" (same sign, as large or larger), "nothing to flip" (no difference under
    the positive framing, or no negative prompt)."""
    rows = []
    for col in means.columns:
        def diff(framing):
            try:
                return float(means.loc[f"{framing} framing: optimal", col] - means.loc[f"{framing} framing: pessimal", col])
            except KeyError:
                return float("nan")

        pos, neg = diff("positive"), diff("negative")
        if not np.isfinite(pos) or not np.isfinite(neg) or pos == 0:
            what = "nothing to flip"
        elif np.sign(neg) == -np.sign(pos):
            what = "flips"
        elif abs(neg) < abs(pos):
            what = "shrinks"
        else:
            what = "keeps"
        rows.append({"length": col, "positive framing: optimal - pessimal": pos,
                     "negative framing: optimal - pessimal": neg, "negative framing": what})
    return pd.DataFrame(rows)
