"""Finding sentences for the token chapters (the paper's §2: optimal tokens, heterogeneity).

One small template per claim, filled with the tables a page has computed
(:func:`rmlib.stats.class_shares`, :func:`rmlib.stats.prompt_taus`,
:func:`rmlib.stats.moments_table`, :func:`rmlib.stats.summaries.pair_groups`,
:func:`rmlib.stats.paper.rsa_key_numbers`, ...). Nothing is computed here
beyond picking rows, extremes and counts, so each sentence says what its table
shows; every function returns one string.
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from ..errors import InputError
from ..tables.schema import check_columns

__all__ = ["lm_agreement", "optimal_words", "prompt_reading", "skew_against_paper", "table2_classes", "token_extremes"]


def _list(values: Sequence[str]) -> str:
    values = [str(v) for v in values]
    return values[0] if len(values) == 1 else ", ".join(values[:-1]) + " and " + values[-1]


def _largest_class(row: pd.Series, classes: Sequence[str]) -> tuple[str, float]:
    values = row[list(classes)].astype(float)
    return str(values.idxmax()), float(values.max())


def table2_classes(shares: pd.DataFrame) -> str:
    """The paper's Table 2 by token class: ``shares`` is :func:`rmlib.stats.class_shares` of the published
    table (``by="model"``, ``end="part"``): which class fills each RM's optimal and pessimal rows."""
    _check(shares, ["model", "end", "n", "Latin word"], "stats.class_shares of the published Table 2")
    classes = [c for c in shares.columns if c not in ("model", "prompt", "end", "n")]
    parts = []
    for model, g in shares.groupby("model", sort=False):
        ends = {}
        for _, row in g.iterrows():
            name, share = _largest_class(row, classes)
            ends[row["end"]] = f"{share:.0%} {name}" + ("s" if name == "Latin word" else "")
        parts.append(f"{model}: top {ends.get('top', '-')}, bottom {ends.get('bottom', '-')}")
    return ("In the paper's Table 2 (its published optimal and pessimal tokens, greatest prompt) the classes are "
            + "; ".join(parts) + ".")


def token_extremes(shares: pd.DataFrame, prompt: str) -> str:
    """What the models' extreme tokens are under ``prompt``: ``shares`` is :func:`rmlib.stats.class_shares`
    with ``by=["model", "prompt"]``; per model the share of Latin-script words at the top and the largest
    class at the bottom."""
    _check(shares, ["model", "prompt", "end", "n", "Latin word"], "stats.class_shares(long, by=['model', 'prompt'])")
    rows = shares[shares["prompt"] == prompt]
    if rows.empty:
        raise InputError(f"no rows for prompt {prompt!r} in the shares (prompts: {sorted(set(shares['prompt']))})")
    classes = [c for c in shares.columns if c not in ("model", "prompt", "end", "n")]
    tops, bottoms = [], []
    for model, g in rows.groupby("model", sort=False):
        top, bottom = g[g["end"] == "top"].iloc[0], g[g["end"] == "bottom"].iloc[0]
        tops.append(f"{model} {top['Latin word']:.0%}")
        not_word = 1.0 - float(bottom["Latin word"]) - float(bottom.get("number", 0.0))
        name, share = _largest_class(bottom, [c for c in classes if c not in ("Latin word", "number")])
        bottoms.append(f"{model} {not_word:.0%} (most of them {name}, {share:.0%})")
    n = int(rows["n"].max())
    return (f"Under {prompt}, the top {n} tokens are Latin-script words ({'; '.join(tops)}), and the bottom {n} "
            f"are mostly not words at all: the share of other scripts, code, symbols and byte fragments is "
            f"{'; '.join(bottoms)}.")


def prompt_reading(overlap: pd.DataFrame, taus: pd.DataFrame, *, first: str, second: str,
                   here: Sequence[str] | None = None) -> str:
    """Do the models read the prompt? ``overlap``: :func:`rmlib.stats.prompt_overlap` of two prompts (how
    many top tokens they share); ``taus``: :func:`rmlib.stats.prompt_taus` between ``first`` and ``second``
    with a column ``items`` naming the item set of each row. ``here``: the models scored here (a row
    whose model starts with one of them, e.g. ``"m (trained here)"``, is theirs); the others are the
    released RMs."""
    _check(overlap, ["model", "n", "shared"], "stats.prompt_overlap")
    _check(taus, ["model", "n", "tau", "items"], "stats.prompt_taus with an 'items' column")
    here = list(dict.fromkeys(overlap["model"])) if here is None else list(here)
    same = "; ".join(f"{r.model} {r.shared} of {r.n}" for r in overlap.itertuples())
    mine_mask = taus["model"].astype(str).str.split(" (", regex=False).str[0].isin(here).to_numpy()
    mine, others = taus[mine_mask], taus[~mine_mask]
    per_set = "; ".join(f"on {items} {_list([f'{t:.2f}' for t in g['tau']])}"
                        for items, g in mine.groupby("items", sort=False))
    hardly = (overlap["shared"] >= overlap["n"] / 2).all() and (mine["tau"] > 0.5).all()
    text = (f"Top tokens shared by the two prompts compared: {same}. Kendall tau between {first} and {second} "
            f"for the models scored here: {per_set or 'none'}")
    if len(others):
        reverse = others["tau"].max() < 0.3
        text += (f"; for the {len(others)} released RMs {others['tau'].min():.2f} to {others['tau'].max():.2f}"
                 + (" (they reverse or ignore the ranking)" if reverse else ""))
    return text + (". The models scored here hardly read the question." if hardly else ".")


def skew_against_paper(moments: pd.DataFrame, prompt: str, paper_range: str) -> str:
    """Skewness here against Table 3's claim (every RM right-skewed, ``paper_range`` as printed, e.g.
    ``"0.071-1.763"``): ``moments`` is :func:`rmlib.stats.moments_table` rows with columns ``model,
    prompt, vocabulary, n, skewness`` (one row per model and vocabulary, ``vocabulary`` naming it)."""
    _check(moments, ["model", "prompt", "vocabulary", "n", "skewness"], "moments with a 'vocabulary' column")
    rows = moments[moments["prompt"] == prompt]
    if rows.empty:
        raise InputError(f"no moments for prompt {prompt!r}")
    parts = []
    for vocabulary, g in rows.groupby("vocabulary", sort=False):
        left = int((g["skewness"] < 0).sum())
        side = ("all left-skewed" if left == len(g) else "all right-skewed" if left == 0
                else f"{len(g) - left} right- and {left} left-skewed")
        parts.append(f"over the {vocabulary} ({_list([f'{n:,}' for n in g['n']])} tokens) {side}, skewness "
                     + _list([f"{m} {s:.2f}" for m, s in zip(g["model"], g["skewness"])]))
    lo, hi = (x.strip() for x in paper_range.replace("–", "-").split("-", 1))
    left_somewhere = bool((rows["skewness"] < 0).any())
    return (f"Under {prompt} the models scored here are " + "; ".join(parts) + f". The paper's ten RMs are all "
            f"right-skewed ({lo} to {hi}, Table 3)" + (": where a skewness here is negative, the shape is the "
                                                       "opposite of the paper's." if left_somewhere else ", as here."))


def lm_agreement(table: pd.DataFrame, lm: str) -> str:
    """Each RM against the language model ``lm``: ``table`` indexed by RM with columns ``strings both
    scored``, ``Kendall τ`` (and optionally ``Spearman ρ``)."""
    _check(table, ["strings both scored", "Kendall τ"], "the RM-against-LM table")
    parts = [f"{m} tau = {r['Kendall τ']:.3f} over {int(r['strings both scored']):,} strings"
             for m, r in table.iterrows()]
    strong = (table["Kendall τ"].abs() > 0.3).any()
    return (f"Against the language model {lm} (log-probability of the token as the first word): " + "; ".join(parts)
            + (": what these RMs reward is close to what the LM would say." if strong else
               ": what these RMs reward is not what the LM would say first."))


def optimal_words(ends: pd.DataFrame, prompt: str, trained: Sequence[str] = ()) -> str:
    """The optimal words on the follow-up's value words: ``ends`` is indexed by model with a column
    ``optimal`` (the top words joined by ``", "``, best first); ``trained``: the models scored here."""
    _check(ends, ["optimal"], "a table with an 'optimal' column")
    first = ends["optimal"].str.split(", ").str[0]
    released = first.drop(index=[m for m in trained if m in first.index])
    counts = released.value_counts()
    text = (f"On the follow-up's value words under {prompt}, the released RMs' optimal word is "
            + _list([f"{w} ({n} of {len(released)})" for w, n in counts.items()]))
    mine = [f"{m}: {ends.loc[m, 'optimal']}" for m in trained if m in ends.index]
    return text + ("; the RMs trained here put first " + "; ".join(mine) if mine else "") + "."


def _check(table: pd.DataFrame, cols: Sequence[str], what: str) -> None:
    """The columns a finding reads, and at least one row (:func:`rmlib.tables.schema.check_columns`)."""
    check_columns(table, cols, "the table", hint=f"pass {what}", allow_empty=False)
