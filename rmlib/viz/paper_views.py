"""The paper's published values beside the live analogue, for chapters 1 and 2.

Each function shows (IPython ``display``) what the paper printed, what the
released data give when they are here (the per-token files of the ten RMs),
and the analogue computed live, with a one-line verdict per claim
(:func:`rmlib.stats.verdict.verdict`); each returns the numbers the chapter's
"What this chapter found" section quotes. Every string goes through
:mod:`rmlib.viz.html` (escaped).
"""

from __future__ import annotations

import base64
from collections.abc import Callable, Mapping, Sequence

import pandas as pd

from . import html as rhtml
from .html import escape, note
from .reports import plain_table, show

__all__ = ["CREDIT", "SCORER_KINDS", "scorer_kind", "paper_scores", "published_figure", "short_table",
           "table2_beside", "table3_beside", "fig2_rsa_beside", "token_level_fig2", "live_pairs",
           "findings_list", "mds_stress", "chapter01_findings", "chapter02_findings"]

CREDIT = "Christian, Kirk, Thompson, Summerfield, Dumbalska (2025), MIT License"
#: How a chart title names each scorer of :mod:`rmlib.engine.scorers`.
SCORER_KINDS = {"logprob": "language model log-prob", "classifier": "reward model score"}


def scorer_kind(long: pd.DataFrame) -> str:
    """What made a long table's scores, for a chart title: ``"language model log-prob"``,
    ``"reward model score"``, both joined by ``" and "``, ``"random test models"`` added for ``tiny:``."""
    prov = pd.DataFrame(long.attrs.get("provenance") or [])
    if prov.empty:
        return "the paper's released RM scores" if long.attrs.get("source") else "scores"
    kinds = [SCORER_KINDS.get(k, str(k)) for k in dict.fromkeys(prov["scorer"])]
    random = prov["model_id"].astype(str).str.startswith(("tiny:", "random:")).any()
    if prov["model_id"].astype(str).str.startswith("trained:").any():
        kinds = [k + " (RMs trained here on EloEverything)" if k == SCORER_KINDS.get("classifier") else k
                 for k in kinds]
    return " and ".join(kinds) + (" (random test models)" if random else "")


def paper_scores(group: str = "token_scores", fallback: str = "the live models' scores"):
    """The paper's released per-token scores when every file is here, else ``None`` after one note saying
    which files are missing and both remedies (:func:`rmlib.tables.datasets.paper_data_note`)."""
    from ..tables import datasets

    status = datasets.paper_data_status(group)
    if bool(status["present"].all()):
        return datasets.paper_token_scores(progress=False)
    show(note(datasets.paper_data_note(status, fallback=fallback)))
    return None


def published_figure(key: str, what: str, width: int = 640):
    """The paper's figure ``key`` (:func:`rmlib.tables.datasets.published_figure`) as an inline PNG with
    a caption naming it and crediting the authors."""
    from IPython.display import HTML

    from ..tables import datasets

    data = base64.b64encode(datasets.published_figure(key).read_bytes()).decode("ascii")
    return HTML(f'<figure><img src="data:image/png;base64,{data}" style="max-width:100%;width:{width}px" '
                f'alt="{escape(f"Figure {key} of the paper")}"><figcaption>{escape(f"The paper: Figure {key}, {what}. ")}'
                f"{escape(f'Reproduced from {CREDIT}.')}</figcaption></figure>")


def short_table(df: pd.DataFrame, caption: str, head=10, **kwargs):
    """The first ``head`` rows (or the rows of the index labels ``head``), with every row in a collapsed
    ``<details>`` ("show all") below when there are more."""
    from IPython.display import HTML

    kwargs.setdefault("show_whitespace", False)
    first_rows = df.head(head) if isinstance(head, int) else df.loc[head]
    first = rhtml.escape_table(first_rows, caption=caption, **kwargs)
    if len(df) <= len(first_rows):
        return HTML(first)
    full = rhtml.escape_table(df, caption=caption, **kwargs)
    return HTML(f"{first}<details><summary>{escape(f'Show all {len(df)} rows')}</summary>{full}</details>")


def _first_greatest(prompts: Sequence[str]) -> str:
    from ..tables.datasets import PAPER_TOKEN_PROMPTS

    return PAPER_TOKEN_PROMPTS["greatest"] if PAPER_TOKEN_PROMPTS["greatest"] in prompts else prompts[0]


def table2_beside(paper_long, live_long: pd.DataFrame, n: int = 10) -> dict:
    """Table 2a/2b as published (top and bottom ``n``; all 22 behind "show all"), the recomputation's
    agreement with it when the released files are here, and the live models' optimal token for the
    *greatest* prompt. Returns ``{"published": {model: top token}, "live": {model: top token}}``."""
    from ..stats import paper
    from ..tables import datasets

    out = {"published": {}, "live": {}}
    for key, model in (("2a", "R-Gem-2B"), ("2b", "R-Lla-3B")):
        pub = datasets.published_table(key)
        out["published"][model] = str(pub.loc[pub["part"] == "top", "decoded"].iloc[0])
        show(short_table(pub[["part", "rank", "decoded", "score"]], head=pub.groupby("part", sort=False).head(n).index,
                         float_format=".3f",
                         caption=f"The paper's Table {key}: {model}, greatest prompt "
                                 "(the paper's released RM scores)"))
        if paper_long is not None:
            show(plain_table(paper.compare_top_bottom(paper.table2(paper_long, model, n=len(pub) // 2), pub),
                             caption=f"Table {key} recomputed from the released scores vs published"))
    for key in ("A.6", "A.7") if paper_long is not None else ():
        show(plain_table(paper.compare_top_bottom(paper.appendix_table(paper_long, key), datasets.published_table(key)),
                         caption=f"Table {key} recomputed from the released scores vs published"))
    prompt = _first_greatest(list(dict.fromkeys(live_long["prompt"])))
    for model, t in live_long[live_long["prompt"] == prompt].groupby("model", sort=False):
        out["live"][model] = str(t.loc[t["score"].idxmax(), "decoded"])
    return out


def table3_beside(paper_long, live_long: pd.DataFrame) -> dict:
    """Table 3 (moments, greatest prompt) as released and as printed, the recomputation's verdicts when the
    released files are here, and the live analogue (each model's own vocabulary); a verdict row for the
    ``table3_skew`` claim. Returns ``{"verdicts", "live", "published_range", "live_range"}``."""
    from ..stats import paper, verdict as V
    from ..tables import datasets, findings

    released, printed = datasets.published_table("3"), findings.printed_table3()
    cells = [(released.loc[i, "Model"], c, printed.loc[i, c], f"{released.loc[i, c]:.3f}")
             for i in released.index for c in ("Mean", "Variance", "Skewness")
             if str(printed.loc[i, c]) != f"{released.loc[i, c]:.3f}" and not str(printed.loc[i, c]).startswith("<")]
    show(plain_table(released, float_format=".3f", caption="The paper's Table 3 (released CSV): moments of the "
                                                          "paper's released RM scores, greatest prompt, shared vocabulary"),
         note(f"The table printed in the paper differs from the released CSV in {len(cells)} cells at the third "
              "decimal (" + "; ".join(f"{m} {c}: printed {p}, released {r}" for m, c, p, r in cells)
              + "); the claim's range 0.071 to 1.763 is the printed one."))
    shared = live_long["model"].nunique() >= 2  # the paper's view needs two vocabularies to share
    live = paper.table3(live_long, _first_greatest(list(dict.fromkeys(live_long["prompt"]))), shared=shared)
    where = "their shared vocabulary, as the paper" if shared else "its own vocabulary"
    live_range = (float(live["Skewness"].min()), float(live["Skewness"].max()))
    recomputed = None
    if paper_long is not None:
        mine = paper.table3(paper_long)
        show(short_table(paper.table3_verdicts(mine), head=6, caption="Table 3 recomputed from the released "
                                                                        "scores vs the released CSV (3 decimals)"),
             short_table(paper.table3_verdicts(mine, findings.printed_table3()), head=6,
                         caption="Table 3 recomputed from the released scores vs the table printed in the paper"))
        recomputed = (float(mine["Skewness"].min()), float(mine["Skewness"].max()))
    live_text = f"{live_range[0]:.3f} to {live_range[1]:.3f} ({len(live)} live model(s), {where})"
    rows = [V.verdict("0.071-1.763", recomputed, claim="table3_skew", what="skewness range over the ten RMs",
                      live=live_text, because=None if recomputed else "the per-token files are not here")]
    rows.append({"claim": "table3_skew", "what": "all ten right-skewed (skewness > 0)", "published": "10 of 10",
                 "recomputed": None if recomputed is None else f"{int((mine['Skewness'] > 0).sum())} of 10",
                 "live": f"{int((live['Skewness'] > 0).sum())} of {len(live)}",
                 "verdict": "not recomputed here" if recomputed is None else
                 ("reproduces" if (mine["Skewness"] > 0).all() else "differs")})
    table = V.verdict_table(rows)
    show(plain_table(live, float_format=".3f", caption="Here: the same moments for the live models "
                                                       f"({scorer_kind(live_long)}), on {where}"),
         plain_table(table, caption="Table 3's claim: the paper / released data / here"))
    return {"verdicts": table, "live": live, "published_range": (0.071, 1.763), "live_range": live_range,
            "where": where}


def fig2_rsa_beside(tau: pd.DataFrame | None = None) -> dict:
    """Fig. 2C's RSA on the transcribed Figure 2A matrix (or ``tau``) both ways: the key numbers
    (:func:`rmlib.stats.paper.rsa_key_numbers`) and the verdict table. Returns both."""
    from ..stats import paper

    rsa = paper.fig2a_rsa(tau)
    key = paper.rsa_key_numbers(rsa)
    cols = ["n", "stepwise_terms", "stepwise_beta_base_model", "stepwise_beta_rewardbench_rank", "stepwise_r2",
            "single_p_developer", "multiple_p_rewardbench_rank", "multiple_p_base_model"]
    shown = key.reindex(columns=cols).rename(index={"pairs": "45 distinct pairs", "full": "full 10x10 matrix (the paper)"})
    verdicts = paper.rsa_verdicts(rsa)
    show(plain_table(shown.reset_index(), float_format=".3g", caption="RSA of the paper's Figure 2A matrix "
                                                                     "(transcribed from the published heatmap), both ways"),
         short_table(verdicts, head=12, caption="§2.2's RSA claims: the paper / recomputed"))
    return {"key": key, "verdicts": verdicts}


def token_level_fig2(paper_long, method: str = "kendall") -> dict | None:
    """Fig. 2A/2B at token level from the released per-token files (shared vocabulary, greatest prompt):
    the heatmap, the MDS map and the RSA beside the paper's; ``None`` when the files are not here."""
    if paper_long is None:
        return None
    from .. import stats
    from ..stats import paper
    from . import charts

    from .. import registry
    from ..stats import summaries

    tau = stats.rank_agreement(paper.token_wide(paper_long, "greatest"), method)
    coords, stress = summaries.mds_maps({"greatest": tau}, registry.paper_models())
    show(charts.heatmap(tau, value_name=method, title=f"Fig. 2A from the released per-token scores ({method}, "
                                                      "the paper's released RM scores)"),
         charts.mds_plot(coords["greatest"], x="dim1", y="dim2", color="family",
                         title=f"Fig. 2B: MDS of 1 - {method} (the paper's released RM scores)"),
         plain_table(mds_stress(stress, {"greatest": tau}), float_format=".3f", caption="Fig. 2B: MDS stress"))
    return {"tau": tau, **fig2_rsa_beside(tau)}


def live_pairs(long: pd.DataFrame, prompts: Sequence[str], methods: Sequence[str], label: Callable,
               facts: pd.DataFrame, similarity: Mapping, rsa_method: str = "kendall") -> dict:
    """Part B of chapter 2: the live models' agreement on their shared token vocabulary per prompt
    (two or more models), their MDS and RSA (three or more), or one model's agreement with itself
    across the prompts. Returns ``{(prompt, method): matrix}`` (empty with one model)."""
    from .. import stats
    from ..stats import summaries
    from ..tables.results import wide
    from . import charts, reports

    names, kind = list(dict.fromkeys(long["model"])), scorer_kind(long)
    if len(names) == 1:
        w = wide(long, by="token_id", across="prompt", model=names[0]).rename(columns=label)
        show(note(f"One model ({names[0]}): shown is its agreement with itself across the prompts, over "
                  f"{len(w):,} tokens."),
             charts.heatmap({m: stats.rank_agreement(w, m) for m in methods}, value_name="agreement",
                            dropdown_name="method", title=f"Part B: {names[0]} across prompts ({kind})"))
        return {}
    wides = {p: wide(long, by="decoded", across="model", prompt=p) for p in prompts}
    agreement = {(p, m): stats.rank_agreement(w, m) for p, w in wides.items() for m in methods}
    show(plain_table(pd.DataFrame([{"prompt": label(p), "shared strings": len(w), "dropped as duplicates":
                                    w.attrs["n_dropped_duplicates"]} for p, w in wides.items()]),
                     caption="Part B: shared vocabulary per prompt"),
         charts.heatmap({f"{label(p)} | {m}": mat for (p, m), mat in agreement.items()}, value_name="agreement",
                        dropdown_name="view", title=f"Part B: rank agreement on the shared token vocabulary ({kind})"))
    if len(names) >= 3:
        reports.pair_summary(agreement, "Part B", label)
        coords, stress = summaries.mds_maps({label(p): mat for (p, m), mat in agreement.items()
                                             if m == rsa_method}, facts)
        show(charts.mds_plot(coords, x="dim1", y="dim2", color="family", title=f"Part B: MDS of 1 - {rsa_method} "
                                                                             f"({kind})"),
             plain_table(stress, caption="Part B: MDS stress"))
        reports.rsa_or_why_not({f"{label(p)}, {rsa_method}": agreement[(p, rsa_method)] for p in prompts},
                               names, facts, similarity, "Part B")
    else:
        show(note("Two models make one pair: no map (MDS places three or more) and no regression (RSA needs "
                  "pairs to explain); add models to the parameter models for both."))
    return agreement


def findings_list(items: Sequence[str], title: str = ""):
    """A bulleted list of generated findings (each item escaped)."""
    from IPython.display import HTML

    head = f"<p><strong>{escape(title)}</strong></p>" if title else ""
    return HTML(head + "<ul>" + "".join(f"<li>{escape(i)}</li>" for i in items) + "</ul>")


def mds_stress(stress: pd.DataFrame, matrices: Mapping[str, pd.DataFrame]) -> pd.DataFrame:
    """The raw MDS stress of :func:`rmlib.stats.summaries.mds_maps` made readable: ``rms misfit`` =
    sqrt(stress / pairs), the typical error of a map distance in units of 1 - agreement, and Kruskal's
    ``stress-1`` = sqrt(stress / sum of squared dissimilarities) (below 0.1 good, above 0.2 poor)."""
    import numpy as np

    rows = []
    for row, mat in zip(stress.to_dict("records"), matrices.values()):
        d = 1 - mat.to_numpy(float)[np.triu_indices(len(mat), 1)]
        rows.append({**row, "rms misfit": float(np.sqrt(row["stress"] / len(d))),
                     "mean distance": float(d.mean()), "stress-1": float(np.sqrt(row["stress"] / (d ** 2).sum()))})
    return pd.DataFrame(rows)


def chapter01_findings(t2: dict, t3: dict, kind: str, have_paper: bool, lm_tau: pd.DataFrame | None = None):
    """Chapter 1's findings with numbers (from :func:`table2_beside`, :func:`table3_beside` and
    :func:`rmlib.viz.reports.lm_panel`)."""
    pub = ", ".join(f"{m}: {rhtml.visible(t)}" for m, t in t2["published"].items())
    live = ", ".join(f"{m}: {rhtml.visible(t)}" for m, t in t2["live"].items())
    lo, hi = t3["live_range"]
    right = int((t3["live"]["Skewness"] > 0).sum())
    items = [f"The paper's optimal token for the greatest prompt (Table 2): {pub}; the top rows are "
             "nouns of value (love, freedom, hope), the bottom rows slurs, violence (R-Gem-2B) and code "
             "fragments (R-Lla-3B).",
             (f"Here ({kind}): the highest-scoring first token is {live}. A language model ranks what it would "
              "say first (sentence openings), not what it values: this is the difference between a log-prob "
              "and a reward, not a failure to reproduce." if "reward" not in kind else
              f"Here ({kind}, trained on EloEverything ratings of the greatest question): the optimal token is "
              f"{live}; compare the published rows above for the paper's RMs."),
             f"Table 3: the paper finds all ten RMs right-skewed (skewness 0.071 to 1.763). Here {right} of "
             f"{len(t3['live'])} live model(s) are right-skewed on {t3['where']}, skewness {lo:.3f} to {hi:.3f}: "
             + ("it agrees in sign for every model." if right == len(t3["live"]) else
                ("it differs: a log-prob distribution has a long lower tail of tokens a model never says."
                 if "reward" not in kind else "it differs in sign for some model: see the moments table.")),
             "The printed Table 3 and the released CSV differ in 5 cells at the third decimal (e.g. "
             "S-Gem-27B-v0.2 skewness 0.071 printed, 0.072 released).",
             ("The per-token files are here: the tables above are recomputed from them." if have_paper else
              "Limits: the paper's per-token files are not in this build's data, so Tables 2, 3, A.6, A.7 "
              "are shown as published, not recomputed; no number here comes from one of the paper's RMs.")]
    for k, r in enumerate([] if lm_tau is None else lm_tau.to_dict("records")):
        items.insert(2 + k, f"{r['model']} against the language model {r['lm']} (log-probability, same prompt): Kendall "
                        f"τ = {r['kendall_tau']:.3f}, Spearman ρ = {r['spearman_rho']:.3f} over {r['shared']:,} "
                        "shared decoded strings: " + ("the reward model ranks tokens much as the LM would say them."
                                                      if r["kendall_tau"] > 0.5 else
                                                      "what the reward model rewards is not what the LM would say."))
    return findings_list(items)


def chapter02_findings(agreement: Mapping, rsa_key: pd.DataFrame, agreement_b: Mapping, method: str,
                       label: Callable = lambda p: p, stress: pd.DataFrame | None = None):
    """Chapter 2's findings with numbers: Part A's pairwise agreement, its MDS stress (``stress``:
    :func:`mds_stress`), the RSA both ways, Part B's pairs."""
    import numpy as np

    items = []
    for (key, m), mat in agreement.items():
        if m != method:
            continue
        v = mat.to_numpy(float)[np.triu_indices(len(mat), 1)]
        items.append(f"Part A ({key}, the paper's released RM scores on EloEverything items): {method} between "
                     f"the {len(mat)} RMs ranges from {v.min():.2f} to {v.max():.2f} (mean {v.mean():.2f}) over "
                     f"{len(v)} pairs: the RMs agree in part, far from 1, as in the paper's Figure A.5.")
    for row in ([] if stress is None else stress.to_dict("records")):
        items.append(f"Part A's MDS map ({row['prompt']}) has Kruskal stress-1 {row['stress-1']:.2f}: a map distance "
                     f"is off by about {row['rms misfit']:.2f} against a mean distance of {row['mean distance']:.2f}, "
                     + ("so read only its broad groups." if row["stress-1"] > 0.2 else "a faithful map."))
    full, pairs = rsa_key.loc["full"], rsa_key.loc["pairs"]
    items.append(f"RSA on the paper's Figure 2A matrix: regressing the full 10x10 matrix (n = {full['n']:.0f}) "
                 f"reproduces the paper (base model + RewardBench rank, beta {full['stepwise_beta_base_model']:.3f} / "
                 f"{full['stepwise_beta_rewardbench_rank']:.3f}, R^2 = {full['stepwise_r2']:.3f}, printed .80); on "
                 f"the {pairs['n']:.0f} distinct pairs R^2 = {pairs['stepwise_r2']:.3f}, beta "
                 f"{pairs['stepwise_beta_base_model']:.3f} / {pairs['stepwise_beta_rewardbench_rank']:.3f}, and "
                 f"developer alone has p = {pairs['single_p_developer']:.2f} (paper: < .001). The direction holds "
                 "(RewardBench rank and base model explain agreement); the strength is overstated.")
    for (p, m), mat in agreement_b.items():
        if m == method:
            v = mat.to_numpy(float)[np.triu_indices(len(mat), 1)]
            items.append(f"Part B ({label(p)}, models scored here): {method} between the live models "
                         f"{', '.join(f'{x:.2f}' for x in v)} on their shared token vocabulary"
                         + (": negative, they rank tokens in opposite directions (exercise ex-02-space shows why)."
                            if (v < 0).any() else "."))
    return findings_list(items)
