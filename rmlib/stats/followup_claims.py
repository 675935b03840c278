"""The follow-up study's claims, each beside the value recomputed from its released data.

One small function per claim of the follow-up's claims file (the claim ids,
:func:`rmlib.tables.findings.load_followup_findings`),
each taking the tables a chapter computed (ranks, median ranks, mixed models,
panel tests, training summaries) and returning verdict rows
(:mod:`rmlib.stats.verdict`). :func:`verdicts` runs them all in the file's
order; a claim whose inputs are not given, or that needs files the release
does not hold, gets "not recomputed here" with the reason.

What the paper reports is quoted from the claims file's ``reported``
field, each number under its source (the abstract, secondary write-ups of
the paper, which are approximate, the authors' code or files).

Table conventions (what the chapter computes with :mod:`rmlib.stats.ranking`,
:mod:`rmlib.stats.mixed` and :mod:`rmlib.stats.comparisons`):

* ``medians``: one row per RM x category x prompt, ``median_rank`` (1 = best),
  with ``nickname, family, category, framing``;
* ``lmm``: a :func:`rmlib.stats.mixed.mixed_model` table;
* ``tests``: a :func:`rmlib.stats.comparisons.panel_tests` table comparing
  ``first = "Gemma"`` with ``second = "Llama"`` (``diff`` = Gemma − Llama:
  positive means Llama's words rank better, i.e. lower);
* ``training``: :func:`rmlib.tables.followup.training_ranks`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import numpy as np
import pandas as pd

from ..errors import InputError
from .verdict import holds, unreported, verdict, verdict_table

RECOMPUTABLE = {}  # claim id -> function giving its verdict rows, filled by the decorator below
LIVE = {}  # claim id -> function giving the text of the live column (an analogue computed here)


def _claim(fn: Callable) -> Callable:
    RECOMPUTABLE[fn.__name__] = fn
    return fn


def _live(claim_id: str) -> Callable:
    def register(fn: Callable) -> Callable:
        LIVE[claim_id] = fn
        return fn
    return register


def _fmt(x, d: int = 1) -> str:
    return f"{x:,.{d}f}"


def _term(lmm: pd.DataFrame, *parts: str) -> pd.Series:
    """The row of the fixed effect whose name contains every one of ``parts`` (and no other ``:``)."""
    n = len(parts)
    hit = lmm[lmm["term"].map(lambda t: all(p in t for p in parts) and t.count(":") == n - 1)]
    if len(hit) != 1:
        raise KeyError(f"no single term with {parts} in {lmm['term'].tolist()}")
    return hit.iloc[0]


# --------------------------------------------------------------------------- design
@_claim
def n_rms_and_families(big2: pd.DataFrame) -> list[dict]:
    fam = big2.drop_duplicates("model")["family"].value_counts()
    n = int(big2["model"].nunique())
    text = f"{n} RMs: {int(fam.get('Gemma', 0))} Gemma-based, {int(fam.get('Llama', 0))} Llama-based"
    return [holds("10 RMs (4 Gemma, 6 Llama in the data)", text,
                  n == 10 and fam.get("Gemma") == 4 and fam.get("Llama") == 6,
                  claim="n_rms_and_families", what="released Big Two score files")]


@_claim
def prompt_design_54(prompts: pd.DataFrame) -> list[dict]:
    f = prompts["framing"].value_counts()
    text = f"{len(prompts)} prompts: {int(f.get('positive', 0))} positive, {int(f.get('negative', 0))} negative"
    return [holds("54 prompts; 27 positive + 27 negative", text,
                  len(prompts) == 54 and f.get("positive") == 27 and f.get("negative") == 27,
                  claim="prompt_design_54", what="config/prompts.yaml")]


@_claim
def corpus_sizes(big2: pd.DataFrame, mfd_all: pd.DataFrame, mfd_authors: pd.DataFrame) -> list[dict]:
    cats = big2.drop_duplicates("word")["category"].value_counts()
    b = (f"{big2['word'].nunique()} nouns ({int(cats.get('Agency', 0))} Agency, "
         f"{int(cats.get('Communion', 0))} Communion)")
    m, k = mfd_all["word"].nunique(), mfd_authors["word"].nunique()
    return [
        holds("Big Two: 263 words", b, big2["word"].nunique() == 263, claim="corpus_sizes", what="Big Two nouns"),
        holds("MFD 2.0: 2,040 words", f"{m:,} terms in the dictionary; {k:,} in the authors' analysis",
              m == 2040, claim="corpus_sizes", what="MFD 2.0 terms",
              because=None),
        holds("2,040 terms analysed", f"the authors' code ranks {k:,} (Sanctity_Vice left out)", k == m,
              claim="corpus_sizes", what="MFD terms that enter the authors' ranks",
              because=f"their R code pivots Care_Virtue:Sanctity_Virtue, leaving out the {m - k} Sanctity_Vice terms"),
    ]


# --------------------------------------------------------------------------- Big Two (Fig 1a)
def _direction_text(tests: pd.DataFrame) -> str:
    parts = []
    for r in tests.itertuples():
        better = "Llama" if r.diff > 0 else "Gemma"
        parts.append(f"{r.category}/{r.framing}: {better} ranks them better by {abs(r.diff):.1f}")
    return "; ".join(parts)


@_claim
def big2_direction(tests: pd.DataFrame) -> list[dict]:
    t = tests.set_index(["category", "framing"])["diff"]
    ok = (t[("Agency", "positive")] > 0 and t[("Communion", "positive")] < 0
          and t[("Agency", "negative")] < 0 and t[("Communion", "negative")] > 0)
    return [holds("positive prompts: Llama favours agency, Gemma communion; inverted on negative prompts",
                  _direction_text(tests), ok, claim="big2_direction",
                  what="mean median rank, Gemma − Llama, per panel (positive = Llama's ranks better)")]


@_claim
def big2_framing_descriptives(medians: pd.DataFrame) -> list[dict]:
    g = medians.groupby("framing", observed=True)["median_rank"]
    text = "; ".join(f"{f}: M = {m:.1f}, SD = {s:.1f}" for (f, m), s in zip(g.mean().items(), g.std()))
    return [unreported(text, claim="big2_framing_descriptives", what="per-prompt median ranks by framing")]


@_claim
def big2_avg_rank_difference(avg_gap: pd.DataFrame) -> list[dict]:
    text = "; ".join(f"{r.category}/{r.framing}: {r.gap:+.1f}" for r in avg_gap.itertuples())
    return [unreported(text, claim="big2_avg_rank_difference",
                       what="Llama − Gemma, family mean of each RM's median rank pooled over words and prompts")]


@_claim
def big2_lme_three_way(lmm: pd.DataFrame) -> list[dict]:
    r = _term(lmm, "family", "category", "framing")
    return [verdict("< .001", r["p"], claim="big2_lme_three_way",
                    what=f"family x category x framing, t({r['df']:.0f}) = {r['t']:.2f}, REML, "
                         "random intercept per RM")]


@_claim
def big2_effect_size(tests: pd.DataFrame) -> list[dict]:
    pos = tests[tests["framing"] == "positive"]
    d = np.sort(pos["d_av"].abs().to_numpy())
    return [verdict("0.40-0.43", (d[0], d[-1]), claim="big2_effect_size",
                    what="|d_av| of the two positive-framing panels (Gemma vs Llama), range",
                    because="the formula is not in the released code; d_av = diff / sqrt((var_G + var_L) / 2) here")]


@_claim
def big2_panel_significance(tests: pd.DataFrame) -> list[dict]:
    welch = ", ".join(f"{r.category}/{r.framing} {r.p_welch_bonf:.2g}" for r in tests.itertuples())
    rows = [holds("all four panels significant after Bonferroni (stars; the code uses Welch p)",
                  f"Welch p x 4: {welch}", bool((tests["p_welch_bonf"] < 0.05).all()),
                  claim="big2_panel_significance", what="Welch t-test, Bonferroni over 4 panels (as the code)")]
    if "p_perm_units_bonf" in tests.columns:
        units = ", ".join(f"{r.category}/{r.framing} {r.p_perm_units_bonf:.2g}" for r in tests.itertuples())
        rows.append(holds("all four panels significant", f"exact permutation over RMs (4 vs 6), x 4: {units}",
                          bool((tests["p_perm_units_bonf"] < 0.05).all()), claim="big2_panel_significance",
                          what="permutation test with the RM as the unit (210 splits), Bonferroni",
                          because="with ten RMs the smallest possible two-sided p is 2/210, and RMs of one "
                                  "family differ among themselves"))
    return rows


@_claim
def big2_per_model_profiles(medians: pd.DataFrame) -> list[dict]:
    pos = medians[medians["framing"] == "positive"]
    prof = pos.groupby(["nickname", "family", "category"], observed=True)["median_rank"].mean().unstack("category")
    prof["prefers"] = np.where(prof["Agency"] < prof["Communion"], "agency", "communion")
    expect = {"Llama": "agency", "Gemma": "communion"}
    against = [f"{n} ({fam})" for (n, fam), p in prof["prefers"].items() if expect.get(fam) != p]
    text = (f"{len(prof) - len(against)} of {len(prof)} RMs follow their family on positive prompts; against it: "
            + (", ".join(against) or "none"))
    return [holds("not every RM follows its family (e.g. N-Lla-8B Gemma-like on positive prompts)", text,
                  any(a.startswith("N-Lla-8B") for a in against), claim="big2_per_model_profiles",
                  what="each RM's mean median rank, agency vs communion, positive prompts")]


@_claim
def mfd_base_model_differences(mfd_tests_all: pd.DataFrame, mfd_tests_authors: pd.DataFrame,
                               mfd_lmm_all: pd.DataFrame, mfd_lmm_authors: pd.DataFrame) -> list[dict]:
    rows = []
    for label, tests, lmm in (("1,652 terms (the authors' code)", mfd_tests_authors, mfd_lmm_authors),
                              ("all 2,040 terms", mfd_tests_all, mfd_lmm_all)):
        sig = tests[tests["p_welch_bonf"] < 0.05]
        three = lmm[lmm["term"].str.count(":") == 2]
        text = (f"{len(sig)} of {len(tests)} panels differ (Welch, Bonferroni x {len(tests)}): "
                + ", ".join(f"{r.category}/{r.framing}" for r in sig.itertuples())
                + f"; {int((three['p'] < 0.05).sum())} of {len(three)} three-way terms p < .05")
        rows.append(holds("Gemma and Llama RMs differ on several foundations, depending on framing", text,
                          len(sig) >= 2 and bool((three["p"] < 0.05).any()), claim="mfd_base_model_differences",
                          what=label))
    return rows


# --------------------------------------------------------------------------- the authors' RM training
def final_checkpoints(training: pd.DataFrame) -> pd.DataFrame:
    """The rows of each run's last checkpoint (the authors' Fig 4b keeps the largest checkpoint per run)."""
    last = training.groupby("run")["checkpoint"].transform("max")
    return training[training["checkpoint"] == last]


def training_gaps(training: pd.DataFrame) -> pd.DataFrame:
    """Per run, checkpoint and category: Gemma's and Llama's median ranks and the gap.

    ``gap`` is oriented so that positive = the family the follow-up expects
    is ahead: Gemma − Llama for Agency (Llama ahead), Llama − Gemma for
    Communion (Gemma ahead). Also Qwen's rank where the run has one.
    """
    keys = ["run", "data_source", "data_size", "method", "checkpoint", "category"]
    missing = [c for c in [*keys, "family", "median_rank"] if c not in training.columns]
    if missing:
        raise InputError(f"training_gaps: the table has no columns {missing}; pass followup's training rank summaries")
    ranks = pd.to_numeric(training["median_rank"], errors="coerce")
    if ranks.isna().any():
        bad = training.index[ranks.isna()].tolist()
        raise InputError(f"training_gaps: {len(bad)} median rank(s) are missing (rows {bad[:5]}): a gap needs both "
                         "families' ranks; drop those rows or recompute them")
    absent = {"Gemma", "Llama"} - set(training["family"])
    if absent:
        raise InputError(f"training_gaps: no rows of the family {sorted(absent)}: a gap compares Gemma with Llama")
    wide = training.pivot_table(index=keys, columns="family", values="median_rank", aggfunc="first").reset_index()
    sign = np.where(wide["category"] == "Agency", 1.0, -1.0)
    wide["gap"] = sign * (wide["Gemma"] - wide["Llama"])
    return wide


@_claim
def training_setup(training: pd.DataFrame) -> list[dict]:
    final = training[training["method"] == "BT"].groupby("run")["checkpoint"].max()
    pairs = {r: s * 16 / 2 for r, s in final.items()}
    text = "; ".join(f"{r}: final step {final[r]:,} -> {pairs[r] / 1000:.1f}k pairs" for r in final.index)
    ok = all(abs(pairs[r] / 1000 - k) / k < 0.05 for r, k in (("uf_27", 27), ("uf_54", 53), ("uf_100", 106),
                                                             ("sky_80k", 77)) if r in pairs)
    return [holds("2 epochs, effective batch 16 (hyperparameters not recomputable)", text, ok,
                  claim="training_setup", what="pairs implied by the final step (step x 16 / 2 epochs)")]


@_claim
def fig4a_training_dynamics(training: pd.DataFrame) -> list[dict]:
    g = training_gaps(training[training["run"] == "sky_80k"]).sort_values("checkpoint")
    rows = []
    for cat, part in g.groupby("category"):
        gaps = part["gap"].to_numpy()
        steps = part["checkpoint"].to_numpy()
        text = (f"{cat}: gap {gaps[0]:.0f} at step {steps[0]:,}, largest {gaps.max():.0f} at step "
                f"{steps[gaps.argmax()]:,}, {gaps[-1]:.0f} at the end (step {steps[-1]:,}); never closes: "
                f"{bool((gaps > 0).all())}")
        ok = bool((gaps > 0).all()) and gaps[-1] < gaps.max()
        rows.append(holds("gap largest early, narrows, levels off, does not close", text, ok,
                          claim="fig4a_training_dynamics",
                          what="rank_results_sky_80k.csv (the per-token checkpoint files are not here)",
                          because="the gap does not follow that course in this summary"))
    return rows


@_claim
def fig4b_data_source_effect_small(training: pd.DataFrame) -> list[dict]:
    g = training_gaps(final_checkpoints(training))
    g = g[g["method"] == "BT"]
    rows = []
    for cat, part in g.groupby("category"):
        by = part.set_index(["data_source", "data_size"])["gap"]
        sky = by.get(("skywork", 77))
        uf = by.xs("uf", level="data_source")
        text = (f"{cat}: Skywork 77k gap {sky:.0f}; Unified-Feedback "
                + ", ".join(f"{k}k {v:.0f}" for k, v in uf.items()))
        lo, hi = sorted((uf.get(53, np.nan), uf.get(106, np.nan)))
        rows.append(holds("data source makes little difference", text, bool(lo <= sky <= hi),
                          claim="fig4b_data_source_effect_small", what="final-checkpoint gap by source and size",
                          because="the Skywork run's gap is not between the neighbouring Unified-Feedback sizes"))
    return rows


@_claim
def fig4b_quantity_100k(training: pd.DataFrame) -> list[dict]:
    g = training_gaps(final_checkpoints(training))
    g = g[(g["method"] == "BT") & (g["data_source"] == "uf")].sort_values("data_size")
    rows = []
    for cat, part in g.groupby("category"):
        text = ", ".join(f"{r.data_size}k {r.gap:+.0f}" for r in part.itertuples())
        at_106 = part.loc[part["data_size"] == part["data_size"].max(), "gap"].iloc[0]
        rows.append(holds("more data shrinks the gap; about 100k pairs close it", f"{cat} gap by size: {text}",
                          abs(at_106) < 15, claim="fig4b_quantity_100k",
                          what="final-checkpoint gap, Unified-Feedback runs (13k is a copy of the 27k file)",
                          because=(f"at 106k the gap reverses ({at_106:+.0f}: the other family is ahead), "
                                   "rather than closing" if at_106 < 0 else f"a gap of {at_106:+.0f} remains")))
    return rows


@_claim
def qwen_gap_persists(training: pd.DataFrame) -> list[dict]:
    f = final_checkpoints(training)
    f = f[f["run"] == "uf_100"].pivot_table(index="family", columns="category", values="median_rank", aggfunc="first")
    f["agency_minus_communion"] = f["Agency"] - f["Communion"]
    text = "; ".join(f"{fam}: agency {r.Agency:.0f}, communion {r.Communion:.0f}" for fam, r in f.iterrows())
    others = f.drop(index="Qwen", errors="ignore")["agency_minus_communion"]
    ok = "Qwen" in f.index and f.loc["Qwen", "agency_minus_communion"] > others.max() + 50
    return [holds("Qwen's gap to Gemma/Llama remains after ~100k pairs", text, bool(ok), claim="qwen_gap_persists",
                  what="median ranks at the last checkpoint of the 106k Unified-Feedback run")]


@_claim
def grm_gap_persists_630k(training: pd.DataFrame) -> list[dict]:
    g = training_gaps(training[training["run"] == "grm_80k"])
    text = "; ".join(f"{r.category}: Gemma {r.Gemma:.0f}, Llama {r.Llama:.0f} (gap {r.gap:+.0f})"
                     for r in g.itertuples())
    return [holds("GRM RMs (630k+ pairs) keep a clear gap (the paper: significant)",
                  text + "; one value per model: no test possible",
                  bool((g["gap"] > 0).all()), claim="grm_gap_persists_630k",
                  what="rank_results_grm_80k.csv (off-the-shelf R-Gem-2B and R-Lla-3B); size labelled 85 in the "
                       "file, 550 in the manifest, 632k on the axis",
                  because="the gap is not in the expected direction in both categories")]


@_claim
def scale_robustness(medians: pd.DataFrame, sizes: Mapping[str, float]) -> list[dict]:
    pos = medians[medians["framing"] == "positive"]
    prof = pos.groupby(["nickname", "family", "category"], observed=True)["median_rank"].mean().unstack("category")
    follows = {n: (fam == "Llama") == (r.Agency < r.Communion) for (n, fam), r in prof.iterrows()}
    by_size = {}
    for n, ok in follows.items():
        by_size.setdefault(sizes.get(n), []).append(ok)
    text = "; ".join(f"{s:g}B: {sum(v)}/{len(v)} follow their family" for s, v in sorted(by_size.items()))
    return [holds("the family difference holds across model sizes", text,
                  all(sum(v) > len(v) / 2 for v in by_size.values()),
                  claim="scale_robustness", what="positive prompts, per RM size (2B-27B RMs; the LMs need hub files)",
                  because="at some size most RMs go against their family")]


# --------------------------------------------------------------------------- live analogues
@_live("big2_direction")
def live_direction(live_medians: pd.DataFrame) -> str:
    """Per model scored here: which Big Two category ranks better under each framing."""
    if live_medians is None or live_medians.empty:
        return ""
    m = (live_medians.groupby(["nickname", "framing", "category"], observed=True)["median_rank"].mean()
         .unstack("category"))
    return "; ".join(f"{n}, {f}: {'agency' if r.Agency < r.Communion else 'communion'} ranks better "
                     f"({r.Agency:.0f} vs {r.Communion:.0f})" for (n, f), r in m.iterrows())


@_live("mwlr_definition")
def live_mwlr_pairs(mwlr: Mapping) -> str:
    """The pairs whose MWLR this page computed (``rmlib.stats.mwlr_table``, the authors' rules)."""
    return "; ".join(f"computed for {a} vs {b} on {len(t):,} shared decoded strings" for (a, b), t in mwlr.items())


@_live("table1_freedom_love")
def live_mwlr_extremes(mwlr: Mapping) -> str:
    """Per pair scored here: the string each model of the pair prefers most by MWLR."""
    return "; ".join(f"{a} vs {b}: top {t['decoded'].iloc[0]!r}, bottom {t['decoded'].iloc[-1]!r} "
                     f"({len(t):,} shared strings)" for (a, b), t in mwlr.items())


@_live("fig3_freedom_gt_love_21_pairs")
def live_freedom_love(mwlr: Mapping) -> str:
    """Per pair scored here: the MWLR of freedom and of love (mean over their case/space variants)."""
    from .implicit import variant_mean

    out = []
    for (a, b), t in mwlr.items():
        v = variant_mean(t, ["freedom", "love"])
        out.append(f"{a} vs {b}: freedom {v['freedom']:.2g}, love {v['love']:.2g}")
    return "; ".join(out)


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


# --------------------------------------------------------------------------- findings of the chapter
def direction_finding(tests: pd.DataFrame, lmm: pd.DataFrame) -> str:
    """Which family ranks each category better under each framing (``tests``: Gemma vs Llama panel
    tests), and the mixed model's family x category x framing term (``lmm``)."""
    r = _term(lmm, "family", "category", "framing")
    p = "p < 0.001" if r["p"] < 0.001 else f"p = {r['p']:.3f}"
    return (f"Mean median rank per panel: {_direction_text(tests)}. The family x category x framing term of the "
            f"mixed model: t({r['df']:.0f}) = {r['t']:.2f}, {p}.")


def unit_finding(tests: pd.DataFrame, alpha: float = 0.05) -> str:
    """How many panels are significant after Bonferroni with RM x prompt medians as observations
    (Welch, as the study's stars) and with the RM as the unit (``p_perm_units_bonf``)."""
    n = len(tests)
    welch = int((tests["p_welch_bonf"] < alpha).sum())
    units = int((tests["p_perm_units_bonf"] < alpha).sum())
    return (f"With each RM x prompt median as an observation, {welch} of {n} panels differ by family after "
            f"Bonferroni (Welch p from {tests['p_welch_bonf'].min():.2g} to {tests['p_welch_bonf'].max():.2g}); "
            f"with the RM as the unit, {units} of {n} do (smallest adjusted p {tests['p_perm_units_bonf'].min():.2g}).")


def mfd_finding(tests: Mapping[str, pd.DataFrame], alpha: float = 0.05) -> str:
    """The MFD panels significant after Bonferroni (Welch) with each term set, and those whose verdict
    changes with the term set (``tests``: term set name -> panel tests)."""
    sig = {k: set(map(tuple, t.loc[t["p_welch_bonf"] < alpha, ["category", "framing"]].to_numpy()))
           for k, t in tests.items()}
    counts = "; ".join(f"{len(sig[k])} of {len(t)} panels with the {k} terms" for k, t in tests.items())
    changed = sorted(set.union(*sig.values()) - set.intersection(*sig.values()))
    return (f"MFD panels where Gemma and Llama RMs differ (Welch, Bonferroni): {counts}; the verdict changes with "
            "the term set in " + (", ".join(f"{c}/{f}" for c, f in changed) or "no panel") + ".")


def training_finding(gaps: pd.DataFrame) -> str:
    """The authors' training runs at their last checkpoint (``gaps``: :func:`training_gaps` of
    :func:`final_checkpoints`, Bradley-Terry runs): the runs where each family is ahead on its
    category, and those where the gap turns over."""
    bt = gaps[gaps["method"] == "BT"].sort_values("data_size")
    ok = bt.groupby("run", sort=False)["gap"].apply(lambda g: bool((g > 0).all()))
    sizes = bt.groupby("run", sort=False)["data_size"].first()
    pos = [r for r in ok.index if ok[r]]
    neg = bt[bt["run"].isin([r for r in ok.index if not ok[r]])]
    text = ("Last checkpoint of the authors' Bradley-Terry runs: each family ahead on its category in "
            + (", ".join(f"{r} ({sizes[r]}k pairs)" for r in pos) or "no run"))
    if len(neg):
        text += "; the gap turns over in " + ", ".join(
            f"{run} ({sizes[run]}k pairs: " + ", ".join(f"{r.category} {r.gap:+.1f}" for r in g.itertuples()) + ")"
            for run, g in neg.groupby("run", sort=False))
    return text + "."


# --------------------------------------------------------------------------- the table
def _inputs(fn: Callable) -> list[str]:
    import inspect

    return list(inspect.signature(fn).parameters)


def verdicts(findings: pd.DataFrame, **tables) -> pd.DataFrame:
    """Every claim of ``findings`` (:func:`rmlib.tables.findings.load_followup_findings`) in its order.

    ``tables``: the inputs the claim functions name (``big2``, ``prompts``,
    ``mfd_all``, ``mfd_authors``, ``tests``, ``medians``, ``lmm``,
    ``avg_gap``, ``mfd_tests_all``, ``mfd_tests_authors``, ``mfd_lmm_all``,
    ``mfd_lmm_authors``, ``training``, ``sizes``) and, for the ``live``
    column (analogues computed here), ``live_medians`` (median ranks of
    models scored here) and ``mwlr`` (``{(a, b): mwlr_table}``); or
    ``live``: ``{claim id: text}`` directly. A claim without a function here, or
    whose inputs are missing, is "not recomputed here" with the file's
    ``released_data_enough`` as the reason.
    """
    live = dict(tables.pop("live", {}) or {})
    for cid, fn in LIVE.items():
        args = _inputs(fn)
        if cid not in live and all(tables.get(a) is not None for a in args):
            live[cid] = fn(**{a: tables[a] for a in args}) or None
    rows = []
    for cid, f in findings.iterrows():
        fn = RECOMPUTABLE.get(cid)
        args = _inputs(fn) if fn else []
        if fn and all(a in tables for a in args):
            for r in fn(**{a: tables[a] for a in args}):
                rows.append({**r, "live": live.get(cid, r.get("live"))})
        else:
            why = f["released_data_enough"] or "its inputs were not computed"
            rows.append({**verdict(_short(f["reported"]), None, claim=cid, what=f["section"], because=why),
                         "live": live.get(cid)})
    return verdict_table(rows)


def _short(text: str, n: int = 120) -> str:
    return text if len(text) <= n else text[: n - 1] + "…"


__all__ = ["LIVE", "RECOMPUTABLE", "asymmetry_on_words", "final_checkpoints", "live_direction", "live_freedom_love",
           "live_mwlr_extremes", "live_mwlr_pairs",
           "training_gaps", "verdicts", *sorted(RECOMPUTABLE)]
__all__ += ["direction_finding", "mfd_finding", "training_finding", "unit_finding"]
