"""Finding sentences for the heterogeneity chapter (the paper's §2).

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

__all__ = ["agreement_spread", "mds_fit", "pattern_match", "rsa_both_ways", "trained_pair"]


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
