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

__all__ = ["page_setup", "show", "plain_table", "scorer_notes", "scored_models", "score_provenance", "shared_views", "mode_comparison",
           "pair_summary", "rsa_tables", "paper_models", "paper_command", "commands", "scorer_facts", "gcg_results", "lm_facts", "needs", "base_model_needs"]

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


def scored_models(long: pd.DataFrame, prompts: Sequence[str], label: Callable = lambda p: p) -> pd.DataFrame:
    """The models behind a long score table (one row per model, from ``attrs["provenance"]``),
    the prompts with their short names and the scorer notes. Returns the models table."""
    prov = pd.DataFrame(long.attrs["provenance"])
    prov["tokens scored"] = long.groupby(["model", "prompt"], sort=False).size().to_numpy()
    facts = prov.groupby("model_id", sort=False).agg(
        revision=("revision", "first"), scorer=("scorer", "first"), dtype=("dtype", "first"),
        mode=("mode", "first"), prompts=("prompt", "size"), tokens=("tokens scored", "max")).reset_index()
    show(plain_table(facts, caption="The models behind every number on this page (tokens: per prompt)"),
         plain_table(pd.DataFrame({"prompt": [label(p) for p in prompts], "text": list(prompts)}), caption="The prompts"))
    scorer_notes(facts)
    return facts


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
    show(rhtml.table(prov[cols], caption="Provenance of every score table on this page"))
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
    for r in compare[compare["scorer"] == "logprob"].itertuples():
        n_bad = int(compare.loc[r.Index, "re-tokenizes differently"])
        show(note(f"{r.model} is scored by log-probability, so both modes read the same next-token "
                  f"distribution. Still, {n_bad} of the {r.tokens} sampled tokens ({n_bad / r.tokens:.1%}) do "
                  "not re-tokenize to themselves: a reward model with this tokenizer would see other input "
                  "for them in mode 'paper'."))
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
                 "(rmlib.engine.registry)") -> pd.DataFrame:
    """The registry's table of the paper's ten RMs (``columns`` of it), shown; returns the whole table."""
    from ..engine.registry import paper_models as models

    paper = models()
    cols = list(columns or ["nickname", "hub_id", "params_b", "rewardbench_rank", "dtype", "trust_remote_code"])
    show(rhtml.table(paper[cols], caption=caption))
    return paper


def paper_command(chapter: str, extra: str = "", models: str = "models") -> str:
    """``python -m rmlib.book chapter NN`` on the paper's ten RMs (scored with their remote code)."""
    from ..engine.registry import paper_models as models_table

    paper = models_table()
    ids = ", ".join(paper["hub_id"])
    remote = ", ".join(paper.loc[paper["trust_remote_code"], "hub_id"])
    return (f"python -m rmlib.book chapter {chapter} -p {models} '[{ids}]' -p mode paper "
            f"-p trust_remote_code '[{remote}]'" + (f" {extra}" if extra else ""))


def commands(text: str | Sequence[str]):
    """Shell commands as an escaped ``<pre>`` block."""
    from IPython.display import HTML

    return HTML(f"<pre>{rhtml.escape(text if isinstance(text, str) else chr(10).join(text))}</pre>")


def scorer_facts(scorer, prompt: str) -> pd.DataFrame:
    """The one scorer behind a page (model, revision, kind, dtype, reference, vocabulary), with its notes."""
    from ..engine.registry import nickname

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
    table = table[["prompt", "length", "direction", "start_text", "start_score", "best_text", "best_score",
                   "steps", "evaluated", "stop_reason", "seconds", "re-tokenizes"]]
    show(rhtml.table(table, caption=caption, float_format=".3f"))
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
    from ..engine.registry import paper_models as models_table

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
