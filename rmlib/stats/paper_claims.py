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

__all__ = ["agreement_spread", "lm_agreement", "mds_fit", "optimal_words", "pattern_match", "prompt_reading",
           "rsa_both_ways", "skew_against_paper", "table2_classes", "token_extremes", "trained_pair"]


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


def agreement_spread(summary: pd.DataFrame, tokens: str | None = None) -> str:
    """How far the RMs agree on each item set: ``summary`` indexed by item set with columns ``pairs``,
    ``mean``, ``lowest``, ``highest`` (Kendall tau over the model pairs). ``tokens``: the row of the
    token-level matrix, if any; the sentence says whether real words are ranked more alike than it."""
    _check(summary, ["pairs", "mean", "lowest", "highest"], "the agreement summary")
    parts = [f"{k}: {r['lowest']:.2f} to {r['highest']:.2f} (mean {r['mean']:.2f}, {int(r['pairs'])} pairs)"
             for k, r in summary.iterrows()]
    text = "Kendall tau between the reward models, pair by pair, on " + "; ".join(parts)
    if summary["highest"].max() >= 0.999:
        return text + "."
    text += ": they agree in part and nowhere fully"
    if tokens is not None and tokens in summary.index and len(summary) > 1:
        lowest = summary["mean"].drop(index=tokens).min() > summary.loc[tokens, "mean"]
        text += (", less on tokens than on any other set of items" if lowest else
                 ", and not more on words than on tokens")
    return text + "."


def pattern_match(summary: pd.DataFrame, reference: str) -> str:
    """Whether who-agrees-with-whom carries over: ``summary`` with columns ``r with Fig. 2A`` and
    ``Mantel p`` per item set (NaN for the reference matrix itself)."""
    _check(summary, ["r with Fig. 2A", "Mantel p"], "the agreement summary with the Fig. 2A columns")
    rows = summary.dropna(subset=["r with Fig. 2A"])
    if rows.empty:
        return "The pattern of agreement could not be compared with Figure 2A here."
    parts = [f"{k} r = {r['r with Fig. 2A']:.2f} (Mantel p = {r['Mantel p']:.3g})" for k, r in rows.iterrows()]
    return (f"The pattern of who agrees with whom on other items resembles {reference}: Spearman correlation of "
            "the 45 pairs, " + "; ".join(parts) + ".")


def rsa_both_ways(key: pd.DataFrame) -> str:
    """Figure 2C's RSA regressed both ways: ``key`` is :func:`rmlib.stats.paper.rsa_key_numbers` (rows
    ``full`` and ``pairs``)."""
    if not {"full", "pairs"} <= set(key.index):
        raise InputError("key needs the rows 'full' and 'pairs' (stats.paper.rsa_key_numbers of fig2a_rsa)")
    full, pairs = key.loc["full"], key.loc["pairs"]

    def fit(k):
        betas = " / ".join(f"{k[c]:.3f}" for c in k.index if str(c).startswith("stepwise_beta_") and pd.notna(k[c]))
        return f"{k['stepwise_terms']}, beta {betas}, R^2 = {k['stepwise_r2']:.3f}"

    return (f"RSA on Figure 2A's matrix: regressing the full 10 x 10 matrix (n = {full['n']:.0f}, diagonal "
            f"included, each pair twice) gives the paper's numbers ({fit(full)}; printed .80); on the "
            f"{pairs['n']:.0f} distinct pairs it is {fit(pairs)}, and developer alone has p = "
            f"{pairs['single_p_developer']:.2f} (paper: < .001). The direction holds, the strength is overstated.")


def trained_pair(table: pd.DataFrame) -> str:
    """The two RMs trained here beside the released ones: ``table`` with columns ``items``, ``prompt``,
    ``n``, ``trained here`` (tau of the trained pair) and optionally ``released RMs`` (the released
    pairs' range as text)."""
    _check(table, ["items", "prompt", "n", "trained here"], "the trained-pair table")
    parts = []
    for r in table.to_dict("records"):
        extra = f" (the released RMs: {r['released RMs']})" if isinstance(r.get("released RMs"), str) and \
            r.get("released RMs") else ""
        parts.append(f"{r['trained here']:.2f} on {int(r['n']):,} {r['items']} under {r['prompt']}{extra}")
    low = (table["trained here"] < 0.3).any()
    return ("The two RMs trained here agree with each other by Kendall tau " + "; ".join(parts)
            + (": trained on the same data, they still rank much of what they were never shown differently."
               if low else "."))


def mds_fit(stress: pd.DataFrame) -> str:
    """How faithful each MDS map is: ``stress`` from :func:`rmlib.stats.summaries.mds_maps`."""
    _check(stress, ["prompt", "stress-1", "rms misfit", "mean distance"], "the stress table of summaries.mds_maps")
    parts = [f"{r['prompt']}: stress-1 {r['stress-1']:.2f}, a map distance off by about {r['rms misfit']:.2f} "
             f"against a mean of {r['mean distance']:.2f}" for r in stress.to_dict("records")]
    poor = (stress["stress-1"] > 0.2).any()
    return ("MDS maps (Figure 2B): " + "; ".join(parts)
            + (": read only their broad groups." if poor else ": faithful maps."))


def _check(table: pd.DataFrame, cols: Sequence[str], what: str) -> None:
    """The columns a finding reads, and at least one row (:func:`rmlib.tables.schema.check_columns`)."""
    check_columns(table, cols, "the table", hint=f"pass {what}", allow_empty=False)
