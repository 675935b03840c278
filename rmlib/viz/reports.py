"""Report blocks the chapters show: escaped tables and notes built from score tables.

Each function displays its tables and notes (IPython's ``display``) in the
order the chapters show them and returns the main table for later cells.
Every string goes through :mod:`rmlib.viz.html` (escaped; vocabulary strings
with white space marked unless ``show_whitespace=False``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import numpy as np
import pandas as pd

from . import html as rhtml
from .html import note

__all__ = ["page_setup", "show", "plain_table", "scorer_notes", "scorer_source", "lm_panel", "scored_models", "score_provenance", "shared_views", "mode_comparison",
           "pair_summary", "rsa_tables", "paper_models", "paper_command", "commands", "scorer_facts", "gcg_results", "lm_facts", "needs", "base_model_needs",
           "live_agreement", "length_agreement", "slope_asymmetry", "framing_correlations",
           "IMPLICIT_COMMANDS", "implicit_reward", "family_tables",
           "frequency_counts", "shared_moments", "rescored", "rsa_or_why_not",
           "frequency_confound", "scored_here", "elo_sources"]

LOGPROB_NOTE = ("{model_id} is a language model, not a reward model: its scores are "
                "log-probabilities of the token as the answer.")
RANDOM_NOTE = "{model_id} has random weights (a test model): its scores mean nothing."


def page_setup() -> None:
    """Altair charts drawn offline (the vendored Vega bundle); no weight-loading progress bars in the page."""
    from transformers.utils import logging as hf_logging

    from . import charts

    charts.enable()
    hf_logging.disable_progress_bar()


def show(*objects) -> None:
    """Display each object (tables, notes, charts) in turn."""
    from IPython.display import display

    for obj in objects:
        display(obj)


def plain_table(df: pd.DataFrame, **kwargs):
    """An escaped table whose strings (item names, labels) are shown as written (white space not marked)."""
    return rhtml.table(df, show_whitespace=False, **kwargs)


def scorer_notes(prov: pd.DataFrame, *, logprob: str = LOGPROB_NOTE, random: str = RANDOM_NOTE,
                 key: str = "model_id") -> None:
    """A note for each scorer (rows of ``prov``, one per ``key``) that is a language model
    (``scorer == "logprob"``) and for each test model with random weights (``tiny:``/``random:``).
    ``logprob``/``random`` are format strings over the row's columns."""
    for row in prov.drop_duplicates(key).to_dict("records"):
        if row.get("scorer") == "logprob" and logprob:
            show(note(logprob.format(**row)))
        if str(row["model_id"]).startswith(("tiny:", "random:")) and random:
            show(note(random.format(**row)))


def scorer_source(model_id: str, scorer: str | None) -> str:
    """In words, what made a model's scores: a reward model trained here (with its data and split),
    a language model's log-probability, a released reward model, or the paper's released scores."""
    model_id = str(model_id)
    if model_id.startswith("trained:"):
        try:
            from ..engine.models import read_training_info, trained_model_folder

            info = read_training_info(trained_model_folder(model_id))
            split = info.get("split", {})
            return (f"Bradley–Terry reward model trained here on EloEverything ({info['data']['n_items']:,} items; "
                    f"trained on {split.get('n_train_items', 0):,}, {split.get('n_test_items', 0):,} held out, "
                    f"split seed {split.get('seed')}; base {info.get('base_model_id')})")
        except (OSError, KeyError, ValueError):
            return "Bradley–Terry reward model trained here on EloEverything"
    if scorer == "logprob":
        return "language model log-probability (not a reward model)"
    if scorer is None:
        return "the paper's released scores"
    return f"reward model score ({scorer})"


def scored_models(long: pd.DataFrame, prompts: Sequence[str], label: Callable = lambda p: p) -> pd.DataFrame:
    """The models behind a long score table (one row per model, from ``attrs["provenance"]``),
    the prompts with their short names, which tokens each (model, prompt) table holds and the
    scorer notes. Returns the models table."""
    prov = pd.DataFrame(long.attrs["provenance"])
    prov["tokens scored"] = long.groupby(["model", "prompt"], sort=False).size().to_numpy()
    facts = prov.groupby("model_id", sort=False).agg(
        revision=("revision", "first"), scorer=("scorer", "first"), dtype=("dtype", "first"),
        mode=("mode", "first"), prompts=("prompt", "size"), tokens=("tokens scored", "max")).reset_index()
    facts.insert(1, "what made the scores", [scorer_source(m, k) for m, k in zip(facts["model_id"], facts["scorer"])])
    show(plain_table(facts, caption="The models behind every number on this page (tokens: per prompt, the most)"),
         plain_table(pd.DataFrame({"prompt": [label(p) for p in prompts], "text": list(prompts)}), caption="The prompts"))
    if "vocab_subset" in prov.columns:
        show(plain_table(pd.DataFrame({"model": prov["model_id"], "prompt": prov["prompt"].map(label),
                                       "tokens": prov["tokens scored"], "which tokens": prov["vocab_subset"]}),
                         caption="Which tokens each table holds"))
    scorer_notes(facts)
    return facts


def lm_panel(long: pd.DataFrame, lm: pd.DataFrame, n: int = 10) -> pd.DataFrame:
    """The language-model view beside the reward models: the optimal and pessimal tokens of the LM
    (``lm``: a long table of one logprob model and one prompt) beside each model of ``long`` on the same
    prompt, and per reward model the rank correlation with the LM on the decoded strings both scored.
    Returns the correlation table (``model, lm, shared, kendall_tau, spearman_rho``)."""
    from .. import stats
    from ..stats.agreement import rank_agreement
    from ..tables import results

    prompt = lm["prompt"].iloc[0]
    lm_name = lm["model"].iloc[0]
    both = pd.concat([long[long["prompt"] == prompt], lm], ignore_index=True)
    both.attrs = {}
    parts = results.tables(both, "model", prompt=prompt)
    show(rhtml.table(stats.side_by_side(parts, n), index=True,
                     caption=f"Optimal and pessimal tokens: the reward models beside the language model {lm_name} "
                             f"(log-probability) | {prompt}"))
    rows = []
    for model in dict.fromkeys(long["model"]):
        pair = pd.concat([long[(long["model"] == model) & (long["prompt"] == prompt)], lm], ignore_index=True)
        pair.attrs = {}
        w = results.wide(pair, by="decoded", across="model", prompt=prompt)[[model, lm_name]].dropna()
        rows.append({"model": model, "lm": lm_name, "shared": len(w),
                     "kendall_tau": rank_agreement(w, "kendall").iloc[0, 1],
                     "spearman_rho": rank_agreement(w, "spearman").iloc[0, 1]})
    out = pd.DataFrame(rows)
    show(rhtml.table(out, caption="Rank correlation of each reward model with the language model on the decoded "
                                  "strings both scored (duplicated strings dropped)", show_whitespace=False))
    return out


def score_provenance(long: pd.DataFrame, labels: Mapping[str, str], role_of: Mapping[str, str]) -> pd.DataFrame:
    """Provenance of every (model, prompt) table of a long score table (``attrs["provenance"]``;
    ``labels``: model id -> the name in ``long``; ``role_of``: prompt -> role), with the tokens scored
    and the scorer notes. Returns the table shown."""
    prov = pd.DataFrame(long.attrs["provenance"])
    for col in ("revision", "scorer", "mode", "source"):
        if col not in prov.columns:
            prov[col] = None
    n_scored = long.groupby(["model", "prompt"], sort=False).size()
    prov["model"] = prov["model_id"].map(labels)
    prov["role"] = prov["prompt"].map(role_of)
    prov["tokens_scored"] = [n_scored[(m, p)] for m, p in zip(prov["model"], prov["prompt"])]
    cols = ["model", "model_id", "revision", "scorer", "mode", "role", "prompt", "tokens_scored", "source"]
    prov["what made the scores"] = [scorer_source(m, k if s is None or s != s else None)
                                    for m, k, s in zip(prov["model_id"], prov["scorer"], prov["source"])]
    cols.insert(4, "what made the scores")
    if "vocab_subset" in prov.columns:
        prov["which tokens"] = prov["vocab_subset"].fillna("the paper's released tokens")
        cols.append("which tokens")
    show(rhtml.table(prov[cols], caption="Provenance of every score table on this page", show_whitespace=False))
    scorer_notes(prov)
    return prov[cols]


def shared_views(long: pd.DataFrame, prompts: Sequence[str], label: Callable = lambda p: p) -> dict[str, pd.DataFrame]:
    """The shared vocabulary (decoded strings) per prompt across the models, or, with one model,
    its own vocabulary across the prompts; shows the duplicates dropped and the sizes.
    Returns ``{prompt or model: wide table}`` (:func:`rmlib.tables.results.wide`)."""
    from ..tables.results import wide

    names = list(dict.fromkeys(long["model"]))
    if len(names) >= 2:
        shared = {p: wide(long, by="decoded", across="model", prompt=p) for p in prompts}
        show(note(f"{len(names)} models: a shared vocabulary per prompt."))
    else:
        shared = {names[0]: wide(long, by="decoded", across="prompt", model=names[0])}
        show(note(f"One model ({names[0]}): the shared vocabulary needs at least two models; shown "
                  "here is its own vocabulary without duplicated strings, across the prompts."))
    first = next(iter(shared.values()))
    dups = pd.DataFrame.from_dict(first.attrs["duplicates"], orient="index").rename_axis("table").reset_index()
    dups["table"] = dups["table"].map(label)
    summary = pd.DataFrame([{"view": label(key), "shared strings": len(w),
                             "shared strings dropped as duplicates": w.attrs["n_dropped_duplicates"]}
                            for key, w in shared.items()])
    show(plain_table(dups, caption="Duplicated decoded strings per table (before the join)"),
         plain_table(summary, caption="Size of the shared vocabulary"))
    return shared


def mode_comparison(modes: pd.DataFrame, kinds: Mapping[str, str], caption: str) -> pd.DataFrame:
    """Per model, how ``mode="token"`` and ``mode="paper"`` scores differ
    (:func:`rmlib.tables.results.compare_modes` rows; ``kinds``: model -> scorer kind),
    with a note for language models; then the tokens that moved most. Returns the per-model table."""
    from ..stats.agreement import rank_agreement

    rows = []
    for model, g in modes.groupby("model", sort=False):
        both = g.set_index("token_id")[["token_mode", "paper_mode"]]
        rows.append({"model": model, "scorer": kinds[model], "tokens": len(g),
                     "re-tokenizes differently": int((~g["roundtrips"]).sum()),
                     "max |Δ|": g["delta"].abs().max(), "median |Δ|": g["delta"].abs().median(),
                     "|Δ| > 1e-4": int((g["delta"].abs() > 1e-4).sum()),
                     "Kendall τ": rank_agreement(both, "kendall").iloc[0, 1],
                     "Spearman ρ": rank_agreement(both, "spearman").iloc[0, 1]})
    compare = pd.DataFrame(rows)
    show(plain_table(compare, caption=caption))
    bos = modes.groupby("model", sort=False)[["bos_token_mode", "bos_paper_mode"]].first() \
        if {"bos_token_mode", "bos_paper_mode"} <= set(modes.columns) else None
    for r in compare.itertuples():
        n_bad = int(compare.loc[r.Index, "re-tokenizes differently"])
        moved = int(compare.loc[r.Index, "|Δ| > 1e-4"])
        b_tok, b_pap = (int(bos.loc[r.model, "bos_token_mode"]), int(bos.loc[r.model, "bos_paper_mode"])) \
            if bos is not None else (None, None)
        if b_tok is not None and b_tok != b_pap:
            show(note(f"{r.model}: mode 'token' gives the model {b_tok} BOS token(s) before the prompt, the paper's "
                      f"re-tokenized text {b_pap}; so the input differs for every token and {moved} of {r.tokens} "
                      f"sampled scores move (median |Δ| {compare.loc[r.Index, 'median |Δ|']:.3g})."))
        elif r.scorer == "logprob":
            show(note(f"{r.model} is scored by log-probability and both modes give it the same prefix, so both read "
                      f"the same next-token distribution ({moved} of {r.tokens} scores move by more than 1e-4). "
                      f"Still, {n_bad} of the {r.tokens} sampled tokens ({n_bad / r.tokens:.1%}) do not "
                      "re-tokenize to themselves: a reward model with this tokenizer would see other input for "
                      "them in mode 'paper'."))
        else:
            show(note(f"{r.model} is a reward model and both modes start its input the same way: the {moved} "
                      f"of {r.tokens} sampled scores that move come from the round trip ({n_bad} tokens do not "
                      "re-tokenize to themselves) and from templates that trim the message."))
    if (modes["delta"].abs() > 1e-4).any():
        largest = modes.loc[modes["delta"].abs().sort_values(ascending=False, kind="stable").index].head(10)
        show(rhtml.table(largest.drop(columns="model") if len(compare) == 1 else largest,
                         caption="The sampled tokens whose score changes most between the two modes"))
    else:
        show(note("No sampled token changes its score by more than 1e-4 between the two modes."))
    return compare


def pair_summary(matrices, part: str, label: Callable = lambda k: k, with_humans=None,
                 human: str = "Human (Elo)") -> None:
    """:func:`rmlib.stats.summaries.pair_summary` as two tables (values, and the extreme pairs)."""
    from ..stats.summaries import pair_summary as summary

    values, pairs = summary(matrices, label, with_humans=with_humans, human=human)
    show(rhtml.table(values, caption=f"{part}: agreement over the model pairs", float_format=".3f",
                     show_whitespace=False),
         plain_table(pairs, caption=f"{part}: the pairs that agree least and most"))


def rsa_tables(agreement: pd.DataFrame, predictors, label: str) -> None:
    """The single, multiple and stepwise RSA regressions (:func:`rmlib.stats.summaries.rsa_tables`)."""
    from ..stats.summaries import rsa_tables as fit

    t = fit(agreement, predictors)
    show(plain_table(t["single"], float_format=".3g", caption=f"{label}: single regressions, one predictor each"),
         plain_table(t["multiple"], float_format=".3g", caption=f"{label}: multiple regression, all four predictors"),
         plain_table(t["stepwise"], float_format=".3g", caption=f"{label}: forward stepwise regression (AIC); "
                "selection path: " + " → ".join(t["stepwise"].attrs["path"])))


def paper_models(columns: Sequence[str] | None = None, caption: str = "The paper's ten reward models "
                 "(rmlib.registry)") -> pd.DataFrame:
    """The registry's table of the paper's ten RMs (``columns`` of it), shown; returns the whole table."""
    from ..registry import paper_models as models

    paper = models()
    cols = list(columns or ["nickname", "hub_id", "params_b", "rewardbench_rank", "dtype", "trust_remote_code"])
    show(rhtml.table(paper[cols], caption=caption))
    return paper


def paper_command(chapter: str, extra: str = "", models: str = "models") -> str:
    """``python -m rmlib.book chapter NN`` on the paper's ten RMs (scored with their remote code; chapters 1
    and 3 on the whole vocabulary, as the paper, not their default stated subset)."""
    from ..registry import paper_models as models_table

    paper = models_table()
    ids = ", ".join(paper["hub_id"])
    remote = ", ".join(paper.loc[paper["trust_remote_code"], "hub_id"])
    whole = " -p vocab_slice ''" if chapter in ("01", "03") else ""  # the paper scored whole vocabularies
    return (f"python -m rmlib.book chapter {chapter} -p {models} '[{ids}]' -p mode paper "
            f"-p trust_remote_code '[{remote}]'{whole}" + (f" {extra}" if extra else ""))


def commands(text: str | Sequence[str]):
    """Shell commands as an escaped ``<pre>`` block."""
    from IPython.display import HTML

    return HTML(f"<pre>{rhtml.escape(text if isinstance(text, str) else chr(10).join(text))}</pre>")


def scorer_facts(scorer, prompt: str) -> pd.DataFrame:
    """The one scorer behind a page (model, revision, kind, dtype, reference, vocabulary), with its notes."""
    from ..registry import nickname

    prov = scorer.provenance(prompt, "token")
    facts = pd.DataFrame([{
        "model": nickname(prov["model_id"]), "model_id": prov["model_id"], "revision": prov["revision"],
        "scorer": prov["scorer"], "dtype": prov["dtype"], "reference": prov.get("reference_model_id", ""),
        "vocabulary": scorer.vocab_size,
    }])
    show(plain_table(facts, caption="The scorer behind every number on this page"))
    scorer_notes(facts, logprob="{model_id} is a language model, not a reward model: every score below is the "
                 "log-probability of the response, summed over its tokens.")
    return facts


def gcg_results(results, tokenizer, label: Callable = lambda p: p, caption: str = "") -> pd.DataFrame:
    """The GCG searches as one table (:func:`rmlib.engine.gcg.results_table`, prompts by ``label``,
    whether the best text re-tokenizes to its ids), and a note naming those that never beat their start."""
    from ..engine.gcg import results_table, retokenizes

    table = results_table(results)
    table["prompt"] = table["prompt"].map(label)
    table["re-tokenizes"] = retokenizes(results, tokenizer)
    table = table[["prompt", "length", "direction", "best_text", "best_score", "start_text", "start_score",
                   "re-tokenizes", "steps", "evaluated", "stop_reason", "seconds"]]
    show(rhtml.table(table.drop(columns=["steps", "evaluated", "stop_reason", "seconds"]), caption=caption,
                     float_format=".3f"))
    names = [f"{label(r.prompt)}, {len(r.best_ids)} tokens, {'maximize' if r.maximize else 'minimize'}"
             for r in results if r.improvement <= 0]
    if names:
        show(note(f"{len(names)} search(es) never beat their start: {'; '.join(names)}. Every candidate "
                  "they scored (one token changed at a time) was worse than the start; for a language "
                  "model a repeated word is a strong local optimum. More steps or another start word "
                  "may get out of it."))
    return table


def lm_facts(long: pd.DataFrame, families: Mapping[str, str], prompt: str) -> pd.DataFrame:
    """The language models of a long table of log-probabilities: how the prompt was put to each
    (its chat template or the base format), its family, the tokens scored, and the exact text
    before the answer token under ``prompt``. Returns the provenance rows with those columns."""
    from ..engine.frames import TEMPLATES

    prov = pd.DataFrame(long.attrs["provenance"])
    facts = prov.assign(
        tokens_scored=long.groupby(["model", "prompt"], sort=False).size().to_numpy(),
        format=np.where(prov["chat_template"] == TEMPLATES["plain"], "base format (User: …, Assistant:)",
                        "the model's chat template"),
        family=[families.get(m, "(not in families)") for m in prov["model_id"]],
    )
    first = facts[facts["prompt"] == prompt]
    show(plain_table(first[["model_id", "revision", "scorer", "dtype", "format", "family", "tokens_scored"]],
                     caption="The language models of this chapter"),
         rhtml.table(first[["model_id", "prefix_text"]].rename(columns={"prefix_text": "prefix (greatest prompt)"}),
                     caption="What each model saw before the answer token"))
    scorer_notes(first, logprob="",
                 random="{model_id} has random weights (a test model): its numbers mean nothing.")
    return facts


def needs(items: Sequence[tuple[str, str, str]]) -> None:
    """For each (result, what it needs, command): the result in bold, its needs, the command."""
    from IPython.display import HTML

    for result, need, command in items:
        show(HTML(f"<p><strong>{rhtml.escape(result)}</strong>: needs {rhtml.escape(need)}.</p>"
                  f"<pre>{rhtml.escape(command)}</pre>"))


def base_model_needs(prompts: Sequence[str], implicit_commands: Sequence[str]) -> None:
    """What chapter 6's conclusions need beyond the build machine, with the commands that run them."""
    from ..registry import paper_models as models_table

    gemma_pairs = ["google/gemma-2b", "google/gemma-2b-it", "google/gemma-7b", "google/gemma-7b-it",
                   "google/gemma-2-2b", "google/gemma-2-2b-it", "google/gemma-2-9b", "google/gemma-2-9b-it",
                   "google/gemma-2-27b", "google/gemma-2-27b-it"]
    gemma_base = [m for m in gemma_pairs if not m.endswith("-it")]
    paper = models_table()
    remote = paper.loc[paper["trust_remote_code"], "hub_id"].tolist()
    prompt_list = "[" + ", ".join(repr(p) for p in prompts) + "]"
    needs([
        ("Tables A.1–A.5 on the paper's Gemma base and instruction-tuned LMs", "hub + GPU (up to 27B, bfloat16)",
         f"python -m rmlib.book chapter 06 -p models '[{', '.join(gemma_pairs)}]' \\\n"
         f"    -p base_models '[{', '.join(gemma_base)}]' -p dtype bfloat16"),
        ("The implicit reward of a real instruction-tuned / base pair",
         "the hub (the SmolLM2 pair runs on a CPU; Gemma 2 2B wants a GPU)", "\n".join(implicit_commands)),
        ("Big Two over the 10 RMs' whole vocabularies (not a few EloEverything items)",
         "hub + GPU: chapter 1 scores the RMs into data/scores/, then Python reads that cache",
         f"python -m rmlib.book chapter 01 -p models '[{', '.join(paper['hub_id'])}]' \\\n"
         f"    -p trust_remote_code '[{', '.join(remote)}]'\n\n"
         "# then, in Python (the scores come from the cache):\n"
         "import rmlib\n"
         "paper = rmlib.registry.paper_models()\n"
         "remote = paper.loc[paper['trust_remote_code'], 'hub_id']\n"
         f"long = rmlib.tables.results.score_models(list(paper['hub_id']), {prompt_list},\n"
         "                                  model_kwargs={m: {'trust_remote_code': True} for m in remote})\n"
         "bt = rmlib.stats.bigtwo_scores({(m, p): t for (m, p), t in long.groupby(['model', 'prompt'])})\n"
         "rmlib.stats.family_summary(bt)"),
        ("Any Big Two result as a measurement rather than an exploration",
         "the validated Big Two dictionaries, from their authors",
         "python -m rmlib.book chapter 06 -p bigtwo_dictionary /path/to/BigTwo.dic"),
    ])


def live_agreement(taus: dict, human: str = "human") -> None:
    """:func:`rmlib.stats.summaries.live_taus` as a heatmap (live columns last) and two tables."""
    from .charts import heatmap

    cols = ["prompt", "a", "b", "tau", "95% CI low", "95% CI high"]
    n = len(next(iter(taus["wides"].values())))
    show(heatmap({key: b.point.loc[list(taus["wides"][key]), list(taus["wides"][key])] for key, b in taus["boots"].items()},
                 value_name="Kendall tau", dropdown_name="prompt", cell=28,
                 title=f"Kendall tau-b, {n} sampled items: humans, released RM scores, live last"),
         plain_table(taus["human"][["prompt", "ranker", "live", "tau", "95% CI low", "95% CI high"]], float_format=".3f",
                     caption=f"Humans vs each ranker on the {n} sampled items, bootstrap 95% CI"),
         plain_table(taus["vs_live"][cols].rename(columns={"a": "ranker", "b": "live column"}), float_format=".3f",
                     max_rows=None, caption="Each RM vs each live column on the sampled items, bootstrap 95% CI"))


def length_agreement(taus: dict, human: str = "human") -> None:
    """Each ranker's tau with the item name's length, a note per live column comparing it with the
    RMs and humans, and the live columns against the released scores of the same RM."""
    by_len, hm = taus["length"], taus["human"]
    show(plain_table(by_len[["prompt", "ranker", "tau", "95% CI low", "95% CI high"]], float_format=".3f",
                     caption="Kendall tau-b of each ranker's scores with the item name's length (characters)"))
    point = by_len.set_index(["prompt", "ranker"])["tau"]
    for key, w in taus["wides"].items():
        rms = hm[(hm["prompt"] == key) & ~hm["live"]]["tau"]
        for c in [c for c in w.columns if c in taus["live_columns"]]:
            t = hm.set_index(["prompt", "ranker"]).loc[(key, c), "tau"]
            show(note(f"'{key}': {c} has tau {t:.3f} with humans on these items (the ten RMs: {rms.min():.3f} "
                      f"to {rms.max():.3f}) and tau {point[(key, c)]:.3f} with the name's length (humans: "
                      f"{point[(key, human)]:.3f})."))
    if len(taus["same"]):
        show(plain_table(taus["same"][["prompt", "a", "b", "tau", "95% CI low", "95% CI high"]]
                         .rename(columns={"a": "released", "b": "live column"}), float_format=".4f",
                         caption="Live rmlib scores vs the paper's released scores of the same RM, bootstrap 95% CI"))


def slope_asymmetry(slopes: pd.DataFrame) -> pd.DataFrame:
    """|positive slope| - |negative slope| per model and prompt, the paired t-test across models, and
    a note on the test's power when there are few models. Returns the test table."""
    from ..stats.lexical import asymmetry_test, slope_asymmetry as asymmetry

    test = asymmetry_test(slopes)
    show(plain_table(asymmetry(slopes), caption="|positive slope| - |negative slope| per model and prompt"),
         plain_table(test, caption="Paired t-test across models of |positive slope| vs |negative slope|"))
    k = int(test["n_models"].max())
    if k < 3:
        show(note(f"Only {k} model(s): the paired t-test has {max(k - 1, 0)} degree(s) of freedom, so it has "
                  "essentially no power (with 1 df, p < .05 needs |t| > 12.7) and its p-value says nothing about "
                  "the paper's claim. Read the per-model signs of diff above instead. The paper's t(9) = 2.6 "
                  "needs the token scores of its ten RMs: see the last section."))
    elif k < 10:
        show(note(f"{k} models: the test has {k - 1} degrees of freedom, fewer than the paper's 9."))
    return test


def framing_correlations(corr: pd.DataFrame) -> None:
    """:func:`rmlib.stats.summaries.framing_correlations` as a table, and a note on the sign of the
    best-worst Spearman correlations."""
    show(plain_table(corr, caption="Correlation of one model's scores under two prompts (own vocabulary)"))
    rho = corr.loc[corr["pair"] == "best vs worst", "Spearman rho"]
    span = f"Spearman rho from {rho.min():.2f} to {rho.max():.2f}"
    if (rho > 0).all():
        show(note(f"Every model here ranks its vocabulary alike under 'best' and under 'worst' ({span}): most of "
                  "what decides a token's score does not depend on the framing. The part that does is in the "
                  "best - worst tables below."))
    elif (rho < 0).all():
        show(note(f"Every model here ranks its vocabulary in opposite orders under 'best' and 'worst' ({span})."))
    else:
        show(note(f"The models disagree on the sign of the best-worst correlation ({span})."))


IMPLICIT_COMMANDS = [
    "python -m rmlib.book chapter 06 -p policy HuggingFaceTB/SmolLM2-135M-Instruct "
    "-p reference HuggingFaceTB/SmolLM2-135M",
    "python -m rmlib.book chapter 06 -p policy google/gemma-2-2b-it -p reference google/gemma-2-2b "
    "-p dtype bfloat16",
]


def implicit_reward(policy: str, reference: str, prompts: Sequence[str], token_ids=None,
                    families: dict | None = None, **load_kwargs) -> pd.DataFrame | None:
    """The implicit reward log p_policy - log p_reference of every token for each prompt, scored through
    the cache (:func:`rmlib.tables.results.score_models` with ``reference``), its provenance and notes.

    ``model`` is ``"<policy id> − <reference id>"``; ``families`` (updated in place) gets that name in
    the policy's family plus " (implicit reward)". Without a pair: a note and the commands that need
    the hub; returns None.
    """
    import time

    from ..tables.results import score_models

    if not policy.strip():
        show(note("No policy/reference pair was given, so no implicit reward is computed on this page. The "
                  "build machine has no pair of LMs that share a tokenizer: the embedded SmolLM2-135M-Instruct "
                  "has no embedded base model, and the embedded Gemma 3 270M has no embedded instruction-tuned "
                  "model. The implicit-reward numbers need a real pair from the Hugging Face hub, for example "
                  "(the first pair runs on a CPU, the second wants a GPU):"),
             commands(IMPLICIT_COMMANDS))
        return None
    start = time.perf_counter()  # one forward pass per model and prompt, cached like every score table
    implicit = score_models([policy], prompts, token_ids=token_ids, progress=False, reference=reference, **load_kwargs)
    iprov = pd.DataFrame(implicit.attrs["provenance"])
    name = f"{iprov['model_id'].iloc[0]} − {iprov['reference_model_id'].iloc[0]}"
    implicit["model"] = name
    if families is not None:  # its own group in family summaries: an implicit reward is not a log-probability
        families[name] = families.get(iprov["model_id"].iloc[0], "(not in families)") + " (implicit reward)"
    show(note(f"Implicit reward of {name}: {len(implicit):,} (prompt, token) scores in "
              f"{time.perf_counter() - start:.1f} s."),
         plain_table(iprov[["model_id", "reference_model_id", "scorer", "dtype", "prompt"]].drop_duplicates(),
                     caption="Implicit-reward provenance"))
    if any(str(s).startswith(("tiny:", "random:")) for s in (policy, reference)):
        show(note("A model of this pair has random weights (a test model): this section only shows that "
                  "the mechanics run; its numbers mean nothing."))
    return implicit


def family_tables(rm_bt: pd.DataFrame, lm_bt: pd.DataFrame, families: Mapping[str, str], *,
                  alpha: float = 0.05, n_perm: int = 9999) -> None:
    """Big Two results by base-model family: the RMs, the Llama-minus-Gemma permutation test, the LMs."""
    from ..stats.bigtwo import family_summary
    from ..stats.summaries import family_difference

    show(rhtml.table(family_summary(rm_bt, alpha=alpha), caption="Reward models (EloEverything items), by family",
                     float_format=".3f", show_whitespace=False))
    llama_gemma = family_difference(rm_bt, n_perm=n_perm)
    if len(llama_gemma):
        show(rhtml.table(llama_gemma, caption="Llama RMs minus Gemma RMs, mean Hedges' g", float_format=".3f",
                         show_whitespace=False))
    show(rhtml.table(family_summary(lm_bt, alpha=alpha, families=families), float_format=".3f",
                     caption="Language models (vocabulary tokens), by family", show_whitespace=False))


def frequency_counts(freq: pd.DataFrame, alpha: float, roles: Sequence[str]) -> pd.DataFrame:
    """How many models have a significantly positive / negative frequency slope per source, spec and
    prompt (:func:`rmlib.stats.count_significant`), and a note on the paper's Fig. 3D analysis."""
    from ..stats.lexical import count_significant

    counts = count_significant(freq, alpha=alpha, by=("source", "spec", "prompt"))
    main = counts[(counts["source"] == "BNC") & (counts["spec"] == "log_freq + sentiment")].set_index("prompt")
    show(plain_table(counts, caption=f"Models with a significantly positive / negative frequency slope (p < {alpha})"),
         note("BNC frequency with the sentiment covariate (the paper's Fig. 3D): "
              + "; ".join(f"'{r}': {main.loc[r, 'n_positive']} of {main.loc[r, 'n_models']} model(s) with a "
                          f"significantly positive slope, {main.loc[r, 'n_negative']} negative" for r in roles
                          if r in main.index) + "."))
    return counts


def shared_moments(shared: Mapping[str, pd.DataFrame], n_top: int, label: Callable = lambda p: p) -> pd.DataFrame:
    """Moments of each column of each shared-vocabulary view (:func:`rmlib.stats.moments_table`), then
    each view's columns side by side (:func:`rmlib.stats.side_by_side`). Returns the moments."""
    from ..stats.moments import moments_table
    from ..stats.vocab import side_by_side

    moments = pd.concat([moments_table(w).reset_index().assign(view=label(key)) for key, w in shared.items()],
                        ignore_index=True)
    moments.iloc[:, 0] = moments.iloc[:, 0].map(label)
    show(plain_table(moments[["view", moments.columns[0], "n", "mean", "variance", "skewness"]],
                     caption="Moments on the shared vocabulary (the paper's Table 3 used this view, prompt 'greatest')"))
    for key, w in shared.items():
        parts = {label(c): w[[c]].rename(columns={c: "score"}).reset_index() for c in w.columns}
        show(rhtml.table(side_by_side(parts, n_top), index=True, caption=f"Shared vocabulary | {label(key)}"))
    return moments


def rescored(scorer, results, seconds: float) -> pd.DataFrame:
    """Each GCG result's best sequence scored again by ``scorer`` (one sequence alone): the largest gap
    to the reported score, how many searches improved on their start, the total time."""
    gaps = [abs(float(scorer.sequence_scores(r.prompt, [r.best_ids])[0]) - r.best_score) for r in results]
    check = pd.DataFrame([{"searches": len(results), "max |reported - rescored|": max(gaps),
                           "searches that improved on their start": sum(r.improvement > 0 for r in results),
                           "total seconds": round(seconds, 1)}])
    show(plain_table(check, caption="Reported vs re-scored best sequences", float_format=".3g"))
    return check


def rsa_or_why_not(matrices: Mapping[str, pd.DataFrame], names: Sequence[str], facts: pd.DataFrame,
                   predictors, part: str) -> None:
    """The RSA tables of each matrix (``matrices``: label -> agreement), or a note saying why not:
    a model the registry has no facts for, or too few models (pairs) to fit four predictors."""
    unknown = [n for n in names if n not in set(facts["nickname"])]
    if unknown:
        show(note(f"RSA skipped: {unknown} are not among the paper's RMs, so the registry has no facts "
                  "(base model, developer, size, RewardBench rank) for them."))
    elif len(names) < 6:
        show(note(f"RSA skipped: {len(names)} models give {len(names) * (len(names) - 1) // 2} "
                  "pairs, too few to fit four predictors; use six or more of the paper's RMs."))
    else:
        for key, mat in matrices.items():
            rsa_tables(mat, predictors, f"{part}, {key}")


def frequency_confound(freq_bt: pd.DataFrame, rho: pd.Series) -> None:
    """:func:`rmlib.stats.summaries.frequency_confound` shown: word frequency tested like a model, a note
    on the direction of the confound it makes, and each table's rank correlation with frequency."""
    show(plain_table(freq_bt[["model", "n_agency", "n_communion", "mean_agency", "mean_communion", "diff",
                              "hedges_g", "p", "prefers"]],
                     caption="Word frequency itself, tested like a model (words matched in any LM table)"))
    g = float(freq_bt["hedges_g"].iloc[0])
    show(note(f"On these words the agentic ones are on average {'more' if g > 0 else 'less'} frequent "
              f"(Hedges' g = {g:+.2f}), so frequency alone would make an LM favour "
              f"{'agency' if g > 0 else 'communion'}: a communion preference in the raw log-probabilities "
              f"goes {'against' if g > 0 else 'with'} this confound."),
         plain_table(rho.reset_index(), caption="How much of each table's word scores is word frequency"))


def scored_here(long: pd.DataFrame, caption: str) -> pd.DataFrame:
    """The provenance of a long score table (model, revision, scorer, dtype, mode; one row each) and
    the scorer notes. Returns the provenance rows."""
    prov = pd.DataFrame(long.attrs["provenance"])
    show(plain_table(prov[["model_id", "revision", "scorer", "dtype", "mode"]].drop_duplicates(), caption=caption))
    scorer_notes(prov)
    return prov


def elo_sources(raw: Mapping[str, pd.DataFrame], wides: Mapping[str, pd.DataFrame]) -> None:
    """The EloEverything tables (``raw``: :func:`rmlib.tables.datasets.eloeverything`; ``wides``:
    :func:`rmlib.stats.elo_wide` of each) and the paper's RMs in the order of their columns."""
    from ..registry import paper_models as models_table
    from ..tables.datasets import ELO_COLUMNS

    facts = pd.DataFrame([{"prompt": key, "verbatim prompt": w.attrs["prompt"], "items": len(w),
                           "items with every score": len(w.dropna()), "reward models": w.shape[1] - 1,
                           "source": w.attrs["source"]} for key, w in wides.items()])
    hub_ids = [c for c in next(iter(raw.values())).columns if c not in ELO_COLUMNS]
    show(plain_table(facts, caption="EloEverything tables (human Elo + the ten RMs' released scores)"),
         plain_table(models_table().set_index("hub_id").loc[hub_ids, ["nickname", "developer", "params_b",
                                                                     "rewardbench_rank"]]
                     .rename_axis("hub_id").reset_index(), caption="The reward models, in the order of the released tables"))


KIND_NAMES = {"classifier": "reward model", "logprob": "language model log-prob",
              "implicit": "implicit reward (log p_model - log p_reference)"}


def scorer_title(facts: pd.DataFrame) -> str:
    """The scorer kind and model of :func:`scorer_facts` for chart titles: "language model log-prob, SmolLM2-…"."""
    row = facts.iloc[0]
    return f"{KIND_NAMES.get(row['scorer'], row['scorer'])}, {str(row['model']).rsplit('/', 1)[-1]}"


def gcg_beside_paper(table: pd.DataFrame, number: str, facts: pd.DataFrame) -> pd.DataFrame:
    """The paper's Table ``number`` ("4" or "5", :func:`rmlib.tables.datasets.published_gcg_tables`)
    and this run's searches (:func:`gcg_results`) for the same prompts, one row per string, paper first."""
    from ..tables.datasets import published_gcg_tables

    paper = published_gcg_tables().query("table == @number").drop(columns="table")
    paper = paper.assign(source="paper: R-Gem-2B (reward model)", score="in the paper's PDF")
    here = table.assign(part=table["direction"].map({"maximize": "optimal", "minimize": "pessimal"}),
                        source=f"here: {scorer_title(facts)}", start=table["start_text"],
                        result=table["best_text"], score=table["best_score"].map("{:.3f}".format))
    both = pd.concat([paper, here[paper.columns]], ignore_index=True)
    order = {p: i for i, p in enumerate(dict.fromkeys(list(paper["prompt"]) + list(here["prompt"])))}
    both = both.sort_values(["part", "prompt"], key=lambda c: c.map(order) if c.name == "prompt" else c,
                            kind="mergesort")[["prompt", "part", "source", "start", "result", "score"]]
    show(plain_table(both, caption=f"Table {number} as published (Christian, Kirk, Thompson, Summerfield, "
                     f"Dumbalska 2025, MIT License; scores not transcribed) beside this run"))
    return both


def gcg_findings(table: pd.DataFrame, check: pd.DataFrame, facts: pd.DataFrame) -> list[str]:
    """Chapter 5's findings as sentences with this run's numbers, shown as a list; returns them."""
    from ..tables.findings import finding

    kind = facts.iloc[0]["scorer"]
    opt = table[table["direction"] == "maximize"].groupby("prompt")["best_score"].mean()
    gain = (table["best_score"] - table["start_score"]).abs()
    out = [f"{len(table)} searches; {int(check.iloc[0]['searches that improved on their start'])} improved on their "
           f"start (median |change| {gain.median():.2f}); re-scoring each best sequence alone agrees with the "
           f"reported score to {float(check.iloc[0]['max |reported - rescored|']):.2g}.",
           f"{int(table['re-tokenizes'].sum())} of {len(table)} best sequences re-tokenize to their own ids."]
    if {"worst", "best"} <= set(opt.index):
        verb = ("lower, as the paper found for R-Gem-2B" if opt["worst"] < opt["best"] else
                "not lower, unlike the paper's finding for R-Gem-2B")
        out.append(f"Mean optimal score for 'worst' {opt['worst']:.2f} vs 'best' {opt['best']:.2f}: {verb} "
                   "(optimal answers to the worst prompt score lower)"
                   + ("" if kind == "classifier" else ", but here the scores are log-probabilities, which say "
                      "how likely the model is to say a string, not how much a reward model values it") + ".")
    claim = finding("gcg")["claim"]
    out.append(f"The paper (§5): {claim}. Verdict: "
               + ("compare the strings in the two tables above; " if kind == "classifier" else
                  "not comparable here: the scorer is a " + KIND_NAMES.get(kind, kind) + ", not R-Gem-2B, and "
                  "the searches are far shorter; ") + "the released data has no GCG results to recompute.")
    show(rhtml.bullets(out))
    return out

__all__ += ["KIND_NAMES", "scorer_title", "gcg_beside_paper", "gcg_findings"]


def gcg_settings(config, **extra) -> pd.DataFrame:
    """The search settings of a :class:`rmlib.engine.gcg.GCGConfig` (direction aside) and ``extra``
    settings of the chapter, as one table."""
    settings = pd.DataFrame([{**{k: v for k, v in vars(config).items() if k != "maximize"}, **extra}])
    show(plain_table(settings, caption="GCG settings (rmlib.engine.gcg.GCGConfig)"))
    return settings


__all__ += ["gcg_settings"]


def _published_side_by_side(pub: pd.DataFrame, prefix: str = "paper: ") -> pd.DataFrame:
    """A published top/bottom table (``published_table`` layout) in :func:`rmlib.stats.side_by_side` layout."""
    top, bottom = pub[pub["part"] == "top"], pub[pub["part"] == "bottom"]
    index = [f"top-{r}" for r in top["rank"]] + [f"bottom-{len(bottom) - i}" for i in range(len(bottom))]
    out = pd.concat([top, bottom]).drop(columns=["part", "rank"])
    out.index = pd.Index(index, name="rank")
    return out.rename(columns=lambda c: prefix + str(c).rsplit("/", 1)[-1])


APPENDIX_LM_TABLES = {"A.1": "greatest", "A.2": "best", "A.3": "worst", "A.4": "best + worst",
                      "A.5": "best − worst"}


def appendix_beside_paper(live: Mapping[str, Mapping[str, pd.DataFrame]], n_top: int = 20, n_short: int = 5,
                          *, download: bool = False) -> pd.DataFrame:
    """Tables A.1–A.5: the paper's published columns (Gemma LMs) beside the live LMs' columns, short
    (top and bottom ``n_short``) with the whole table under "show all", and a verdict per table.

    ``live``: ``{"A.1": {model: score table}, ..., "A.4": {model: best/worst table}, "A.5": ...}``; A.4
    ranks the column ``sum`` and A.5 ``diff`` (:func:`rmlib.stats.summaries.best_worst_views`), the others
    ``score``. With the paper's released logits here (:func:`rmlib.tables.datasets.paper_base_logits`),
    each table is recomputed from them and compared cell by cell with the published one; without them,
    one sentence says so. Returns the verdicts.
    """
    from ..registry import model_labels
    from ..stats import paper
    from ..stats.vocab import side_by_side
    from ..tables import datasets

    status = datasets.paper_data_status("base_logits", download=download)
    logits = datasets.paper_base_logits(progress=False) if bool(status["present"].all()) else None
    if logits is None:
        show(note(datasets.paper_data_note(status, fallback="the published tables and the live LMs")))
    rows = []
    for key, view in APPENDIX_LM_TABLES.items():
        pub = datasets.published_table(key)
        score = {"A.4": "sum", "A.5": "diff"}.get(key, "score")
        names = model_labels(list(live[key]))
        here = side_by_side({f"here: {names[m]}": t for m, t in live[key].items()}, n_top, score=score)
        published = _published_side_by_side(pub)
        n = max(n_top, int((published.index.str.startswith("top")).sum()))
        order = [f"top-{r}" for r in range(1, n + 1)] + [f"bottom-{r}" for r in range(n, 0, -1)]
        both = published.join(here, how="outer").reindex(order).fillna("")
        short = both[both.index.isin([f"top-{r}" for r in range(1, n_short + 1)]
                                     + [f"bottom-{r}" for r in range(1, n_short + 1)])]
        show(rhtml.short_table(both, short, index=True, caption=f"Table {key} ({view}): the paper's Gemma LMs "
                               "(Christian et al. 2025, MIT License) beside this page's LMs"))
        if logits is None:
            rows.append({"table": key, "view": view, "recomputed": "",
                         "verdict": "not recomputed (see the note above)"})
            continue
        cmp = paper.compare_top_bottom(paper.appendix_table(logits, key, n=int(len(pub) / 2)), pub)
        same = int(cmp["identical"].sum())
        rows.append({"table": key, "view": view,
                     "recomputed": f"{same}/{len(cmp)} columns identical, {cmp['same_position'].mean():.1%} of "
                                   f"cells in place, {cmp['same_set'].mean():.1%} in the same part",
                     "verdict": "reproduces" if same == len(cmp) else
                                "differs: some cells, because of ties or the reading of special tokens"})
    verdicts = pd.DataFrame(rows)
    show(plain_table(verdicts, caption="Tables A.1–A.5: the paper / recomputed from the released logits"))
    return verdicts


def implicit_views(implicit: pd.DataFrame | None, n_top: int, roles: Mapping[str, str]) -> None:
    """The implicit reward's top/bottom tokens per prompt, moments, bars and distribution; a note if none."""
    from ..stats import moments_table
    from ..stats.vocab import side_by_side
    from ..tables.results import tables
    from . import charts

    if implicit is None:
        show(note("No implicit reward on this page (no policy/reference pair; see above), so there are no "
                  "implicit-reward tables or charts here."))
        return
    label = implicit["model"].iloc[0]
    parts = {roles[p]: t for p, t in tables(implicit, "prompt", model=label).items()}
    full = side_by_side(parts, n_top)
    show(rhtml.short_table(full, pd.concat([full.head(5), full.tail(5)]), index=True,
                           caption=f"Highest and lowest implicit reward | {label}"))
    shown = implicit.assign(prompt=implicit["prompt"].map(roles))
    show(plain_table(moments_table(shown, by=["model", "prompt"]),
                     caption="Moments of the implicit reward over the vocabulary (as the paper's Table 3)"),
         charts.top_bottom_bar(shown, n=min(n_top, 15), title="Implicit reward (log p_policy − log p_reference): "
                               "top and bottom tokens"),
         charts.score_distribution(shown, bins=60, title="Implicit reward (log p_policy − log p_reference) "
                                   "of every token"))


__all__ += ["APPENDIX_LM_TABLES", "appendix_beside_paper", "implicit_views"]


def bigtwo_findings(rm_bt: pd.DataFrame, lm_bt: pd.DataFrame, freq_bt: pd.DataFrame, *, alpha: float = 0.05,
                    n_perm: int = 9999, appendix: pd.DataFrame | None = None, validated: bool = False) -> list[str]:
    """Chapter 6's Big Two findings as sentences with this run's numbers (shown as a list; returned).

    ``rm_bt``/``lm_bt``: :func:`rmlib.stats.bigtwo_scores` rows with ``family`` (RMs on EloEverything
    items, LMs on vocabulary tokens); ``freq_bt``: word frequency tested like a model; ``appendix``: the
    verdicts of :func:`appendix_beside_paper`, summarized first; ``validated``: the word lists are a
    validated dictionary the reader supplied (else the shipped, unvalidated lists).
    """
    from ..stats.summaries import family_difference

    out = []
    if appendix is not None and len(appendix):
        done = appendix[appendix["recomputed"] != ""]
        out.append("Tables A.1–A.5: " + ("; ".join(f"{r.table} {r.verdict} ({r.recomputed})" for r in done.itertuples())
                   if len(done) else "the paper's released logits are not here, so the published tables are shown "
                   "beside the live LMs without a recomputation") + ".")
    rms = rm_bt[rm_bt["model"] != "human"]
    for prompt, grp in rms.groupby("prompt", sort=False):
        g = grp["hedges_g"].dropna()
        n_sig = int(((grp["p"] < alpha)).sum())
        out.append(f"RMs, EloEverything '{prompt}': {int(grp['n_agency'].iloc[0])} agency and "
                   f"{int(grp['n_communion'].iloc[0])} communion items match the lists; {int((g > 0).sum())} of "
                   f"{len(g)} RMs score agency higher (Hedges' g from {g.min():+.2f} to {g.max():+.2f}), "
                   f"{n_sig} at p < {alpha}.")
    hum = rm_bt[(rm_bt["model"] == "human") & rm_bt["hedges_g"].notna()].drop_duplicates("hedges_g")
    if len(hum):
        out.append(f"Humans' EloEverything ratings of the same items give g = {float(hum['hedges_g'].iloc[0]):+.2f}: "
                   "a shared direction in RMs and people says as much about the few items as about the models.")
    diffs = family_difference(rms, n_perm=n_perm)
    for _, row in diffs.iterrows():
        out.append(f"Llama minus Gemma RMs, '{row['prompt']}': mean g {row['mean g (Llama)']:+.2f} vs "
                   f"{row['mean g (Gemma)']:+.2f}, difference {row['difference']:+.2f}, permutation p = "
                   f"{row['p']:.3f}. The follow-up study's claim predicts a positive difference.")
    for _, row in lm_bt.iterrows():
        if pd.notna(row["hedges_g"]):
            out.append(f"LM {row['model']} ({row['family']}), '{row['prompt']}': g = {row['hedges_g']:+.2f} "
                       f"(p = {row['p']:.3f}, {int(row['n_agency'])} agency / {int(row['n_communion'])} "
                       "communion tokens).")
    if len(freq_bt) and pd.notna(freq_bt["hedges_g"].iloc[0]):
        out.append(f"Word frequency alone gives g = {float(freq_bt['hedges_g'].iloc[0]):+.2f} on the matched "
                   "words: LM log-probabilities carry this frequency difference whatever the model values.")
    if len(diffs):
        from ..tables.findings import finding

        agree = ((diffs["difference"] > 0) & (diffs["p"] < alpha)).sum()
        out.append(f"The follow-up study: {finding('followup_bigtwo')['claim']}. Here: {int(agree)} of "
                   f"{len(diffs)} EloEverything prompts show a Llama-minus-Gemma difference > 0 at p < {alpha}; "
                   + ("verdict: agrees in direction on the paper's released scores, a weak check (limits below)."
                      if agree == len(diffs) else "verdict: not reproduced here, and not refuted (no released data "
                      "for the study; limits below)."))
    out.append("Limits: " + ("the dictionary given (check it is the study's)" if validated else
                             "unvalidated WordNet-derived lists (not the study's dictionaries)") + ", a handful of "
               "matched EloEverything items, LMs that are not the RMs' own base models (by default one small "
               "LM per family, of a later generation), and no RM vocabulary scores: these numbers neither "
               "confirm nor refute the follow-up "
               "study; they show the test and its power.")
    show(rhtml.bullets(out))
    return out


__all__ += ["bigtwo_findings"]


def bigtwo_elo_items(elo: Mapping[str, pd.DataFrame], lists, rm_bt: pd.DataFrame, *, alpha: float = 0.05) -> None:
    """The EloEverything items that match the Big Two lists (with their human Elo), and the smallest
    effect a two-sided t test on that many items detects with 80% power."""
    from ..stats.bigtwo import bigtwo_matches
    from ..stats.summaries import detectable_effect

    first = next(iter(elo.values()))
    items = bigtwo_matches(first, lists, on=None, score="human").rename(columns={"word": "item", "score": "human Elo"})
    n_a, n_c = int(rm_bt["n_agency"].iloc[0]), int(rm_bt["n_communion"].iloc[0])
    show(plain_table(items, caption=f"The EloEverything items matched to the lists ({n_a} agency, {n_c} communion)",
                     float_format=".0f"))
    if min(n_a, n_c) >= 2:
        show(note(f"With {n_a} agentic and {n_c} communal items, a two-sided test at alpha = {alpha} detects an "
                  f"effect of |d| = {detectable_effect(n_a, n_c, alpha=alpha):.2f} with 80% power; smaller effects "
                  "are likely to be missed."))


__all__ += ["bigtwo_elo_items"]
