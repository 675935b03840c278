"""The FAccT paper's sentiment claims on the follow-up study's released words.

:func:`asymmetry_on_words` is chapter 3's comparison (verdict rows of
:mod:`rmlib.stats.verdict`); the follow-up's own claims are judged on the pages
of chapters 6 and 10, which write their comparisons out with the general
verdict function.
"""

from __future__ import annotations

from collections.abc import Mapping

import pandas as pd

from .verdict import holds, verdict_table


# --------------------------------------------------------------------------- the FAccT paper's §3 on these words
def asymmetry_on_words(slope_tests: pd.DataFrame, bing_test: Mapping, live_asymmetry: pd.DataFrame | None = None,
                       live_gaps: pd.DataFrame | None = None) -> pd.DataFrame:
    """The FAccT paper's sentiment claims beside the same tests on the follow-up's released words.

    ``slope_tests``: one row per framing (``framing`` + the fields of
    :func:`rmlib.stats.comparisons.paired_test` comparing |positive slope|
    with |negative slope| across RMs, each RM's slopes averaged over the
    framing's prompts). ``bing_test``: the paired test of the Bing class gap
    (positive minus negative words) between positive and negative framing.
    ``live_asymmetry`` / ``live_gaps``: the rows of
    :func:`rmlib.stats.slope_asymmetry` / :func:`rmlib.stats.class_gaps`
    (with ``framing``) of models scored here, summarised in the ``live``
    column (their mean per framing; too few words and prompts for a test).
    Returns a verdict table (FAccT claim ids ``sentiment_asymmetry``,
    ``framing_worst``).
    """
    def per_model(table, col):
        if table is None or table.empty:
            return ""
        m = table.groupby(["model", "framing"], observed=True)[col].mean().unstack("framing")
        return "; ".join(f"{name}: " + (", ".join(f"{f} {v:+.2f}" for f, v in r.dropna().items())
                                        or "no estimate on the words scored")
                         for name, r in m.iterrows())

    t = slope_tests.set_index("framing")
    rows = []
    pos, neg = t.loc["positive"], t.loc["negative"]
    n_pos, n_neg, df_pos, df_neg = (int(x) for x in (pos["n_first_higher"], neg["n_units"] - neg["n_first_higher"],
                                                       pos["df"], neg["df"]))
    rows.append(holds("|positive slope| > |negative slope|: t(9) = 2.6, p < .05, 8/10 RMs ('greatest')",
                      f"t({df_pos}) = {pos['t']:.2f}, p = {pos['p_t']:.2g} (sign-flip p = {pos['p_perm']:.2g}); "
                      f"{n_pos}/{int(pos['n_units'])} RMs", pos["t"] > 0 and pos["p_t"] < 0.05,
                      claim="sentiment_asymmetry", what="27 positive prompts, each RM's mean slopes, AFINN words",
                      because="the asymmetry is not significant on these words",
                      live=per_model(live_asymmetry, "diff")))
    rows.append(holds("'worst': steeper negative than positive slope in 5/10 RMs",
                      f"{n_neg}/{int(neg['n_units'])} RMs steeper for negative words; "
                      f"t({df_neg}) = {neg['t']:.2f}, p = {neg['p_t']:.2g}",
                      n_neg >= neg["n_units"] / 2, claim="framing_worst",
                      what="27 negative prompts, each RM's mean slopes, AFINN words",
                      because="most RMs keep the positive-framing asymmetry", live=per_model(live_asymmetry, "diff")))
    rows.append(holds("'worst': negative words score higher than positive ones",
                      f"Bing gap (positive − negative words, in SDs) {bing_test['mean_first']:+.2f} under positive "
                      f"framing, {bing_test['mean_second']:+.2f} under negative; paired t({bing_test['df']}) = "
                      f"{bing_test['t']:.1f}, {bing_test['n_first_higher']}/{bing_test['n_units']} RMs",
                      bing_test["mean_second"] < 0, claim="framing_worst",
                      what="Bing classes, each RM's mean over the 27 prompts of a framing",
                      because="positive words still score higher under negative framing", live=per_model(live_gaps, "gap")))
    return verdict_table(rows)


__all__ = ["asymmetry_on_words"]
