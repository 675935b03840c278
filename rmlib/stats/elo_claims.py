"""Finding sentences about rankings of EloEverything items: one small template per claim.

The RMs trained on EloEverything ratings (:mod:`rmlib.training`), beside the paper's ten RMs
and baselines (chapter 7). Each function
takes a table a page has computed and returns sentences (strings) that say what the table shows;
nothing is computed beyond picking rows, counting and comparing intervals.
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from ..errors import InputError
from ..tables.schema import check_columns

__all__ = ["heldout_alignment", "family_gaps", "data_quantity"]

#: The ``source`` labels of :func:`rmlib.training.evaluate.heldout_comparison`.
TRAINED, OTHER_PROMPT, PAPER, BASELINE = "trained here", "trained here, other prompt", "paper (released scores)", "baseline"


def _ci(row, t: str = "tau", low: str = "low", high: str = "high") -> str:
    return f"{row[t]:.3f} [{row[low]:.3f}, {row[high]:.3f}]"


def _overlap(a, b, low: str = "low", high: str = "high") -> bool:
    return a[low] <= b[high] and b[low] <= a[high]


# --------------------------------------------------------------------------- RMs trained on the ratings
def heldout_alignment(taus: pd.DataFrame) -> list[str]:
    """Each RM trained here on the held-out items (and under the other prompt), placed beside the paper's
    RMs as what it is, an in-distribution comparison, and beside the strongest baseline.
    ``taus``: :func:`rmlib.training.evaluate.heldout_comparison`'s taus with ``ranker`` as a column."""
    _check(taus, ["ranker", "source", "tau", "low", "high", "n_items"], "evaluate.heldout_comparison's taus")
    by = taus.set_index("ranker")
    trained = taus[taus["source"] == TRAINED]
    if trained.empty:
        raise InputError(f"no ranker has the source {TRAINED!r}: pass the taus of a held-out comparison")
    out = []
    for _, r in trained.iterrows():
        alt = f"{r['ranker']}, other prompt"
        other = f"; {_ci(by.loc[alt])} with the other prompt wording" if alt in by.index else ""
        out.append(f"{r['ranker']}, trained here: held-out tau {_ci(r)} on {int(r['n_items']):,} test items{other}.")
    paper = taus[taus["source"] == PAPER]
    if len(paper):
        above = int((trained["low"].min() > paper["high"]).sum())
        out.append(f"An in-distribution comparison: the RMs trained here were fitted to EloEverything ratings, and "
                   f"their test items are other items rated by the same website's visitors. The paper's "
                   f"{len(paper)} RMs never saw EloEverything; on the same test items their tau runs from "
                   f"{paper['tau'].min():.3f} to {paper['tau'].max():.3f}, and the lowest interval of the RMs "
                   f"trained here lies above {above} of their {len(paper)} intervals. That measures what fitting "
                   f"these raters buys, not which reward model is better.")
    base = taus[taus["source"] == BASELINE]
    if len(base):
        best = base.loc[base["tau"].abs().idxmax()]
        clear = [r["ranker"] for _, r in trained.iterrows() if r["low"] > max(best["high"], -best["low"])]
        out.append(f"The strongest baseline (by |tau|) is {best['ranker']}, tau {_ci(best)}; "
                   + ("the interval of every RM trained here lies above its |tau|." if len(clear) == len(trained)
                      else f"{len(clear)} of the {len(trained)} RMs trained here clear it."))
    return out


def family_gaps(gaps: pd.DataFrame) -> list[str]:
    """Agency minus communion per trained RM, and whether two RMs' intervals overlap.
    ``gaps``: :func:`rmlib.training.evaluate.family_gaps`."""
    _check(gaps, ["RM", "hedges_g", "g_low", "g_high", "p", "n_agency", "n_communion"], "evaluate.family_gaps(runs)")
    out = [f"{r['RM']}: agency minus communion, Hedges' g = {_ci(r, 'hedges_g', 'g_low', 'g_high')}, permutation "
           f"p = {r['p']:.3f}." for _, r in gaps.iterrows()]
    if len(gaps) == 2:
        a, b = gaps.iloc[0], gaps.iloc[1]
        same = _overlap(a, b, "g_low", "g_high")
        out.append(f"Two base models on identical data: the intervals of {a['RM']} and {b['RM']} "
                   + ("overlap, so these runs show no difference between the families" if same
                      else "do not overlap: the families differ")
                   + f" (on {int(a['n_agency'])} agentic and {int(a['n_communion'])} communal words).")
    return out


def data_quantity(abl: pd.DataFrame) -> list[str]:
    """Held-out tau per training-data size, per base. ``abl``: :func:`rmlib.training.evaluate.data_ablation`
    rows with a ``base`` column."""
    _check(abl, ["base", "fraction", "n_pairs", "tau", "tau_low", "tau_high"], "evaluate.data_ablation rows with base")
    out = []
    for b, g in abl.groupby("base", sort=False):
        g = g.sort_values("n_pairs")
        first, last = g.iloc[0], g.iloc[-1]
        flat = _overlap(first, last, "tau_low", "tau_high")
        out.append(f"{b}: held-out tau by training pairs "
                   + ", ".join(f"{int(r['n_pairs']):,} {r['tau']:.3f}" for _, r in g.iterrows())
                   + ("; the intervals of the smallest and the largest run overlap." if flat
                      else "; the largest run's interval lies apart from the smallest's."))
    return out


def _check(table: pd.DataFrame, cols: Sequence[str], what: str) -> None:
    """The columns a finding reads, and at least one row (:func:`rmlib.tables.schema.check_columns`)."""
    check_columns(table, cols, "the table", hint=f"pass {what}", allow_empty=False)
