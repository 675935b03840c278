"""Chapter 3 (sentiment, framing, frequency): the paper's §3 numbers beside what runs here.

Each function displays one step of the chapter and returns what the next
step needs. The statistics are :mod:`rmlib.stats.lexical` and
:mod:`rmlib.stats.paper`; the published values are the paper's printed ones
(claims ``facct2025.yaml``, :mod:`rmlib.tables.findings`); the paper's per-token scores are used when their files
are here (:func:`rmlib.tables.datasets.paper_data_status`).
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from .html import escape, note
from .reports import plain_table, show

__all__ = ["scorer_kind", "ci_table", "PAPER_COUNTS", "paper_values", "paper_check", "published_tables",
           "findings"]

#: §3's printed numbers (claims sentiment_asymmetry, framing_best, framing_worst, frequency).
PAPER_COUNTS = {
    "n_pos_stronger": {"greatest": "8", "best": "9"},
    "n_neg_stronger": {"worst": "5"},
    "log_freq": {"best": "10", "greatest": "8", "worst": "7"},
    "log_freq + sentiment": {"best": "2", "greatest": "5", "worst": "8"},
}


def scorer_kind(prov: pd.DataFrame) -> str:
    """What made the scores, for chart titles: from the ``scorer`` column of a provenance table
    (:func:`rmlib.viz.reports.score_provenance`) -> "language-model log-probs", "reward-model
    scores" or both."""
    kinds = set(prov["scorer"].dropna().astype(str)) if "scorer" in prov.columns else set()
    names = [name for key, name in (("classifier", "reward-model scores"), ("logprob", "language-model log-probs"))
             if key in kinds]
    names += sorted(k for k in kinds if k not in ("classifier", "logprob"))
    if "model_id" in prov.columns and prov["model_id"].astype(str).str.startswith("trained:").any():
        names = [n + " (RMs trained here on EloEverything)" if n == "reward-model scores" else n for n in names]
    return " and ".join(names) if names else "scores"


def ci_table(df: pd.DataFrame, keys: Sequence[str], caption: str):
    """A slope table narrow enough for the page: ``keys``, ``n``, slope, the 95% CI as one
    column and ``p`` (3 significant digits)."""
    out = df[list(keys) + ["n"]].copy()
    out["slope"] = df["slope"].map(lambda v: f"{v:.3g}")
    out["95% CI"] = [f"{lo:.3g} to {hi:.3g}" for lo, hi in zip(df["ci_low"], df["ci_high"])]
    out["p"] = df["p"].map(lambda v: f"{v:.2g}")
    return plain_table(out.astype({"n": int}), caption=caption, max_rows=None)


def paper_values(long: pd.DataFrame) -> dict:
    """The §3 statistics on the paper's settings (AFINN, no white-space stripping, BNC rows as its R
    code, classical SEs) for a long score table: ``{"test", "counts"}``."""
    from ..stats import paper

    sa = paper.sentiment_asymmetry(long)
    fc = paper.frequency_counts(long)
    return {"test": sa["test"].set_index("prompt"), "counts": fc["counts"]}


def _bnc(counts: pd.DataFrame) -> pd.DataFrame:
    return counts[counts["source"] == "BNC"] if "source" in counts.columns else counts


def _count(counts: pd.DataFrame | None, spec: str, prompt: str):
    if counts is None:
        return None
    row = counts[(counts["spec"] == spec) & (counts["prompt"] == prompt)]
    return None if row.empty else int(row["n_positive"].iloc[0])


def paper_check(test: pd.DataFrame, counts: pd.DataFrame, *, status: pd.DataFrame | None = None) -> pd.DataFrame:
    """Every §3 claim: the printed value, the value recomputed from the paper's per-token scores
    when their files are here (else "not recomputed here", said once in a note), and the live
    analogue (``test``: :func:`rmlib.stats.asymmetry_test` of the live slopes; ``counts``:
    :func:`rmlib.stats.count_significant` of the live BNC slopes, by spec and prompt)."""
    from ..stats.verdict import verdict, verdict_table
    from ..tables import datasets

    counts = _bnc(counts)
    st = datasets.paper_data_status("token_scores") if status is None else status
    here = paper_values(_paper_long()) if bool(st["present"].all()) else None
    if here is None:
        show(note(datasets.paper_data_note(st, fallback="the live models' scores (the 'live' column)")))
    live_t, paper_t = test.set_index("prompt"), None if here is None else here["test"]
    why = None  # a verdict differs or is not recomputed; the one note above says why the files are absent
    rows = []
    if "greatest" in live_t.index:
        g = live_t.loc["greatest"]
        rows.append(verdict("2.6", None if paper_t is None else paper_t.loc["greatest", "t"], claim="sentiment_asymmetry",
                            what="paired t, |positive| vs |negative| slope, greatest", because=why,
                            live=f"t({int(g['df'])}) = {g['t']:.2f}"))
    for col, per in (("n_pos_stronger", PAPER_COUNTS["n_pos_stronger"]), ("n_neg_stronger", PAPER_COUNTS["n_neg_stronger"])):
        for prompt, printed in per.items():
            if prompt in live_t.index:
                rows.append(verdict(printed, None if paper_t is None else paper_t.loc[prompt, col],
                                    claim="sentiment_asymmetry" if prompt == "greatest" else f"framing_{prompt}",
                                    what=f"models with the {'positive' if 'pos' in col else 'negative'} slope "
                                         f"steeper, {prompt} (of 10)", because=why,
                                    live=f"{int(live_t.loc[prompt, col])} of {int(live_t.loc[prompt, 'n_models'])}"))
    for spec in ("log_freq", "log_freq + sentiment"):
        for prompt, printed in PAPER_COUNTS[spec].items():
            live = _count(counts, spec, prompt)
            rows.append(verdict(printed, _count(None if here is None else here["counts"], spec, prompt),
                                claim="frequency", what=f"models with a positive BNC frequency slope, p < .05, {spec}, "
                                                        f"{prompt} (of 10)", because=why,
                                live=None if live is None else str(live)))
    table = verdict_table(rows)
    show(plain_table(table.astype(object).where(table.notna(), "–"), caption="The paper's printed §3 values, recomputed from its data where here, and the "
                                    "live analogue"))
    return table


def _paper_long() -> pd.DataFrame:
    """The paper's per-token scores, read (and blob-checked) once per session."""
    global _PAPER_LONG
    from ..tables import datasets

    if _PAPER_LONG is None:
        _PAPER_LONG = datasets.paper_token_scores(progress=False)
    return _PAPER_LONG


_PAPER_LONG = None


def published_tables(n: int = 10, *, status: pd.DataFrame | None = None) -> None:
    """The paper's published Tables A.8 (best + worst) and A.9 (best - worst): the ``n`` top and
    bottom rows of its ten RMs' columns; with the paper's per-token files here, the tables recomputed
    from them and compared cell by cell (:func:`rmlib.stats.paper.compare_top_bottom`)."""
    from ..stats import paper
    from ..tables import datasets
    from . import html

    st = datasets.paper_data_status("token_scores") if status is None else status
    for key, what in (("A.8", "best + worst"), ("A.9", "best - worst")):
        pub = datasets.published_table(key)
        head = pub[pub["rank"] <= n]
        show(html.table(head, max_rows=None, caption=f"The paper's Table {key} ({what}, its ten RMs, shared "
                                                     f"vocabulary; {n} rows at each end, as published; the "
                                                     "bottom rows hold slurs and obscenities)"))
        if bool(st["present"].all()):
            mine = paper.appendix_table(_paper_long(), key)
            show(plain_table(paper.compare_top_bottom(mine, pub),
                             caption=f"Table {key} recomputed from the paper's released scores vs as published"))


def findings(slopes: pd.DataFrame, test: pd.DataFrame, corr: pd.DataFrame, counts: pd.DataFrame,
             kind: str, paper_rows: pd.DataFrame, d_matrix: pd.DataFrame | None = None):
    """"What this chapter found": findings with numbers, generated from the chapter's results
    (``d_matrix``: Cohen's d of Bing positive minus negative, models x prompts)."""
    from IPython.display import HTML

    items = []
    for model, row in ([] if d_matrix is None else d_matrix.iterrows()):
        ds = ", ".join(f"'{p}' {v:+.2f}" for p, v in row.items())
        items.append(f"Sentiment class ({kind}): {model} scores Bing-positive words above negative ones by Cohen's "
                     f"d {ds} (pooled SDs); an RM that reads the questions would give 'worst' the opposite sign.")
    models = list(dict.fromkeys(slopes["model"]))
    for prompt, g in test.set_index("prompt").iterrows():
        items.append(f"'{prompt}' ({kind}, {len(models)} model(s)): |positive slope| exceeds |negative slope| in "
                     f"{int(g['n_pos_stronger'])} of {int(g['n_models'])} model(s) (mean difference "
                     f"{g['mean_diff']:.3g}); paired t({int(g['df'])}) = {g['t']:.2f}"
                     + (f", p = {g['p']:.2g}." if pd.notna(g["p"]) else "."))
    bw = corr[corr["pair"] == "best vs worst"]
    if len(bw):
        lo, hi = bw["Spearman rho"].min(), bw["Spearman rho"].max()
        span = f"{lo:.2f}" if round(lo, 2) == round(hi, 2) else f"{lo:.2f} to {hi:.2f}"
        items.append(f"Framing: the scores under 'best' and 'worst' correlate with Spearman rho {span} "
                     + ("(every model positive): these models rank a token alike whichever question is asked, "
                        "far from reading 'worst' as the inverse of 'best'. The paper's RMs do not read it as the "
                        "inverse either, but their Fig. 4 is a funnel, not a line: many tokens bad for both, some "
                        "good for one only." if lo > 0 else
                        "across the models. The paper found its RMs do not read 'worst' as the inverse of 'best' "
                        "(Fig. 4: a funnel, many tokens bad for both, some good for one only)."))
    counts = _bnc(counts)
    main = counts[counts["spec"] == "log_freq + sentiment"]
    if len(main):
        items.append("Frequency, controlling for sentiment: significantly positive BNC slopes in "
                     + "; ".join(f"{int(r.n_positive)} of {int(r.n_models)} ('{r.prompt}')"
                                 for r in main.itertuples()) + " (the paper: 2, 5 and 8 of 10 for best, greatest, worst).")
    done = paper_rows["recomputed"].notna()
    items.append(f"Against the paper: {int(done.sum())} of the {len(paper_rows)} printed §3 values recomputed "
                 f"from its released scores, {int(paper_rows['verdict'].eq('reproduces').sum())} of them "
                 "reproduce at the paper's precision." if done.any() else
                 f"Against the paper: none of the {len(paper_rows)} printed §3 values can be recomputed in this "
                 "build (the paper's per-token score files are not in its data); the live column beside them is "
                 "an analogue on other models, not a check.")
    items.append(("Limits: a language model's log-probability measures how likely a token is as the answer, not a "
                  "reward; " if "log-prob" in kind else
                  "Limits: the reward models here are small (135M and 270M parameters) and trained on one data "
                  "source (EloEverything ratings of the greatest question), so 'best' and 'worst' are questions "
                  "they were never trained on; ")
                 + "lexicons match a token only when it spells a whole word; with fewer than ten models the "
                 "paired t-test has little power, so read the per-model signs.")
    return HTML("<ul>" + "".join(f"<li>{escape(t)}</li>" for t in items) + "</ul>")
