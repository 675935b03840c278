"""Finding sentences about rankings of EloEverything items: one small template per claim.

The paper's ten RMs, whose released scores are compared with
people's Elo ratings. Each function
takes a table a page has computed and returns sentences (strings) that say what the table shows;
nothing is computed beyond picking rows, counting and comparing intervals.
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from ..errors import InputError
from ..tables.schema import check_columns

__all__ = ["elo_agreement", "verdict_count", "top_vs_bottom", "split_sizes", "rank_gap", "live_agreement"]

#: Readable names of the claims of :func:`rmlib.stats.paper.elo_verdicts`.
CLAIMS = {"elo_human_model": "human-RM summary", "elo_model_model": "RM-RM mean", "elo_top_bottom": "top vs bottom",
          "elo_top_items": "top items", "elo_dataset": "data set"}


def _ci(row, t: str = "tau", low: str = "low", high: str = "high") -> str:
    return f"{row[t]:.3f} [{row[low]:.3f}, {row[high]:.3f}]"


# --------------------------------------------------------------------------- the paper's RMs against people
def elo_agreement(summary: pd.DataFrame) -> list[str]:
    """Per prompt: how weakly the RMs agree with people and how much more with each other.
    ``summary``: :func:`rmlib.stats.summaries.tau_summary`."""
    cols = ["prompt", "human-model mean", "SD", "min", "max", "model-model mean (off-diagonal)",
            "model-model mean with diagonal"]
    _check(summary, cols, "stats.summaries.tau_summary(taus, boots)")
    return [f"'{r['prompt']}': the RMs agree with people weakly, human-RM Kendall tau {r['human-model mean']:.2f} on "
            f"average (SD {r['SD']:.2f}, {r['min']:.2f} to {r['max']:.2f}), and more with each other: "
            f"{r['model-model mean (off-diagonal)']:.2f} over the distinct RM pairs "
            f"({r['model-model mean with diagonal']:.2f} with each RM's tau of 1 with itself averaged in)."
            for _, r in summary.iterrows()]


def verdict_count(verdicts: pd.DataFrame) -> str:
    """How many of the paper's printed values reproduce, overall and per claim.
    ``verdicts``: :func:`rmlib.stats.paper.elo_verdicts`."""
    _check(verdicts, ["claim", "verdict"], "stats.paper.elo_verdicts()")
    ok = verdicts["verdict"].eq("reproduces")
    per = ok.groupby(verdicts["claim"], sort=False).agg(["sum", "size"])
    parts = ", ".join(f"{CLAIMS.get(c, c)} {int(r['sum'])} of {int(r['size'])}" for c, r in per.iterrows())
    return (f"{int(ok.sum())} of the {len(verdicts)} values §4 prints reproduce from the released files at the "
            f"paper's precision ({parts}).")


def top_vs_bottom(means: pd.DataFrame, published: tuple[float, float] = (0.19, 0.08)) -> str:
    """Whether people and RMs agree more on the best items than on the worst, per prompt.
    ``means``: :func:`rmlib.stats.summaries.split_means`."""
    _check(means, ["prompt", "tau_top", "tau_bottom", "RMs with top > bottom"], "stats.summaries.split_means(splits)")
    higher = bool((means["tau_top"] > means["tau_bottom"]).all())
    per = "; ".join(f"'{r['prompt']}' {r['tau_top']:.3f} vs {r['tau_bottom']:.3f} ({int(r['RMs with top > bottom'])} "
                    "RMs higher on top)" for _, r in means.iterrows())
    verdict = ("People and RMs agree more about the best items than about the worst, as the paper says"
               if higher else "Unlike the paper, the top items do not agree more on every prompt")
    return (f"Top vs bottom items (mean human-RM tau within each group): {per}. {verdict} "
            f"({published[0]:.2f} vs {published[1]:.2f}); the size of the gap depends on the split.")


def split_sizes(sizes: pd.DataFrame, published: tuple[float, float] = (0.19, 0.08)) -> str:
    """Top vs bottom under several group sizes, and whether any size gives both printed numbers at two
    decimals. ``sizes``: rows ``prompt, items per group, tau_top, tau_bottom``."""
    _check(sizes, ["prompt", "items per group", "tau_top", "tau_bottom"], "one row per prompt and group size")
    parts = "; ".join(f"'{r['prompt']}', {r['items per group']} per group: {r['tau_top']:.3f} vs {r['tau_bottom']:.3f}"
                      for _, r in sizes.iterrows())
    both = sizes[(sizes["tau_top"].round(2) == published[0]) & (sizes["tau_bottom"].round(2) == published[1])]
    one = sizes[(sizes["tau_top"].round(2) == published[0]) | (sizes["tau_bottom"].round(2) == published[1])]
    always = bool((sizes["tau_top"] > sizes["tau_bottom"]).all())
    if len(both):
        match = "gives both printed numbers: " + ", ".join(f"'{r['prompt']}' with {r['items per group']} per group"
                                                           for _, r in both.iterrows())
    else:
        match = (f"gives both printed numbers at two decimals; {len(one)} give one of them" if len(one)
                 else "gives either printed number at two decimals")
        match = "No size tried " + match
    return (f"{parts}. {match[0].upper() + match[1:]}. The top group agrees more "
            f"{'in every row' if always else 'in some rows only'}.")


def rank_gap(item: str, human_rank: float, model_rank: float, n_items: int, prompt: str) -> str:
    """Where people and the RMs place one item (rank 1 = best)."""
    return (f"Where they part: on '{prompt}', people rank {item} {human_rank:,.0f} of {n_items:,}; the RMs' median "
            f"rank is {model_rank:,.0f}.")


def live_agreement(table: pd.DataFrame, human: str = "human") -> list[str]:
    """Per prompt and live column: its tau with people beside the released RMs', and its tau with the
    item name's length beside people's. ``table``: rows ``prompt, ranker, live, tau with people,
    tau with length`` (humans as the ranker ``human``, whose tau with people is missing)."""
    _check(table, ["prompt", "ranker", "live", "tau with people", "tau with length"], "the live rankers' taus")
    out = []
    for key, g in table.groupby("prompt", sort=False):
        rms = g[~g["live"] & (g["ranker"] != human)]["tau with people"]
        people = g.loc[g["ranker"] == human, "tau with length"]
        if rms.empty or people.empty:
            raise InputError(f"prompt {key!r}: the table needs the released RMs' rows and the {human!r} row")
        for _, r in g[g["live"]].iterrows():
            out.append(f"'{key}': {r['ranker']} has tau {r['tau with people']:.2f} with people on the sampled items "
                       f"(the released RMs: {rms.min():.2f} to {rms.max():.2f}) and {r['tau with length']:.2f} with the "
                       f"item name's length (people: {people.iloc[0]:.2f}).")
    return out


def _check(table: pd.DataFrame, cols: Sequence[str], what: str) -> None:
    """The columns a finding reads, and at least one row (:func:`rmlib.tables.schema.check_columns`)."""
    check_columns(table, cols, "the table", hint=f"pass {what}", allow_empty=False)
