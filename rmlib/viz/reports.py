"""What a page shows around its analysis: the page's set-up, the scorer behind it, and display.

:func:`page_setup` (offline charts, no progress bars), :func:`show` (display
in order), :func:`scorer_facts` (the one scorer of a page, with a note when it
is a language model or a random test model), :func:`scorer_title` (its kind
for chart titles) and :func:`gcg_findings` (the search chapter's finding
sentences from its numbers). Every string goes through :mod:`rmlib.viz.html`.
"""

from __future__ import annotations

import pandas as pd

from . import html as rhtml
from .html import note

__all__ = ["KIND_NAMES", "gcg_findings", "page_setup", "plain_table", "scorer_facts", "scorer_notes", "scorer_title",
           "show"]

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


KIND_NAMES = {"classifier": "reward model", "logprob": "language model log-prob",
              "implicit": "implicit reward (log p_model - log p_reference)"}


def scorer_title(facts: pd.DataFrame) -> str:
    """The scorer kind and model of :func:`scorer_facts` for chart titles: "language model log-prob, SmolLM2-…"."""
    row = facts.iloc[0]
    return f"{KIND_NAMES.get(row['scorer'], row['scorer'])}, {str(row['model']).rsplit('/', 1)[-1]}"


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
