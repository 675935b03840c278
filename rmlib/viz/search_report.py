"""Chapter 5's search comparison: GCG vs coordinate sweeps vs GCG + sweep polish vs the best
single tokens, over a stated per-prompt shortlist (:func:`rmlib.engine.search.comparison_table`).

Every function displays escaped tables / notes (:mod:`rmlib.viz.html`) and returns what later
cells need; the chapter only calls them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import pandas as pd

from ..tables import memo as rmemo
from . import html as rhtml
from . import reports

__all__ = ["METHOD_NAMES", "run_comparison", "shortlist_table", "comparison_rows", "comparison_view",
           "gcg_runs", "comparison_findings"]

METHOD_NAMES = {"single": "best single token", "gcg": "GCG", "sweep": "coordinate sweeps",
                "both": "GCG + sweep polish"}


#: Bumped when what :func:`run_comparison` computes changes (part of its result-cache key).
COMPARISON_VERSION = 1
#: Bumped when what :func:`long_searches` computes changes (part of its result-cache key).
LONG_SEARCH_VERSION = 1


def _cache_facts(scorer, prompts: Sequence[str], **settings) -> dict | None:
    """Everything a chapter-5 result depends on, or None when the scorer cannot be identified."""
    from ..engine import gcg, search as S

    who = rmemo.scorer_facts(scorer, prompts)
    timed = [c for c in settings.values() if getattr(c, "max_seconds", None) is not None]
    if who is None or timed:  # unknown scorer, or a result that depends on the wall clock: not cached
        return None
    return {"scorer": who, "prompts": list(prompts), "search_revision": S.SEARCH_REVISION,
            "gcg_revision": gcg.GCG_REVISION, **settings}


def _complete(results) -> bool:
    """No search of a comparison was stopped by Ctrl-C (such a result is not stored)."""
    return not any(r.stop_reason == "interrupted" or "interrupted" in r.local_optimum_check
                   for row in results for r in row.values())


def run_comparison(scorer, prompts: Sequence[str], lengths: Sequence[int], *, config, restarts: int,
                   k: int, n_random: int, sample: int | None, seed: int, cache: bool = True,
                   recompute: bool | None = None) -> tuple[pd.DataFrame, list, list, float]:
    """Build each prompt's shortlist and run the four methods for every length and direction.

    Returns ``(table, shortlists, results, seconds)``: the :func:`comparison_table` rows, the
    :class:`~rmlib.engine.search.Shortlist` per prompt, the ``{"gcg", "sweep", "both"}``
    :class:`~rmlib.engine.search.SearchResult` objects per row, the wall time of it all, and shows
    one note saying so. The result is deterministic for its inputs, so it goes through the result
    cache (:mod:`rmlib.tables.memo`): a second run with the same scorer and settings reads it back,
    and ``seconds`` (like every seconds column) is then the original computation's, as the note
    says. ``cache=False`` skips the cache; ``recompute=True`` (or ``RMLIB_RECOMPUTE=1``) computes
    afresh and overwrites the record. Never stored: a comparison with a search stopped by Ctrl-C, and
    one under a time limit (``config.max_seconds``), whose result depends on the machine's speed.
    """
    from ..engine import search as S

    allowed = "ascii" if config.ascii_only else "all"
    shortlist = dict(k=k, n_random=n_random, sample=sample, seed=seed)

    def compute():
        shortlists, results = [], []
        table = S.comparison_table(scorer, prompts, lengths, (True, False), restarts=restarts, gcg=config,
                                   allowed=allowed, seed=seed, results=results, shortlist=shortlist,
                                   shortlists=shortlists)
        return {"table": table, "shortlists": shortlists, "results": results}

    facts = _cache_facts(scorer, prompts, lengths=list(lengths), directions=[True, False], restarts=restarts,
                         gcg=config, allowed=allowed, seed=seed, shortlist=shortlist)
    value, memo = rmemo.cached("search_report.run_comparison", COMPARISON_VERSION, facts, compute,
                               recompute=recompute, keep=lambda v: _complete(v["results"]), enabled=cache)
    table = value["table"]
    reports.show(rhtml.note(f"{len(table)} searches x 3 methods, shortlists included: {memo.sentence()}"
                            + ("; every seconds figure below is that computation's." if memo.hit else ".")))
    return table, value["shortlists"], value["results"], memo.seconds


def shortlist_table(shortlists, label: Callable = lambda p: p) -> pd.DataFrame:
    """One row per prompt: how its shortlist was built, its size, its best and worst single tokens."""
    rows = []
    for sl in shortlists:
        s = sl.singles
        rows.append({"prompt": label(sl.prompt), "tokens": len(sl.ids), "scored as singles": sl.pool_size,
                     "of allowed": sl.n_allowed, "best single": s["text"].iloc[0],
                     "best score": float(s["score"].iloc[0]), "worst single": s["text"].iloc[-1],
                     "worst score": float(s["score"].iloc[-1])})
    table = pd.DataFrame(rows)
    if shortlists:
        reports.show(rhtml.note(f"Shortlist per prompt: {shortlists[0].description}. Every search below runs over its "
                        "prompt's shortlist, so 'single-swap optimal' means no single swap to another "
                        "shortlisted token helps; tokens outside the shortlist were not tried."))
    shown = table.assign(**{c: table[c].map(rhtml.visible) for c in ("best single", "worst single")})
    reports.show(rhtml.table(shown, caption="The candidate vocabulary of each prompt's searches", float_format=".3f",
                             show_whitespace=False))
    return table


def comparison_rows(table: pd.DataFrame, label: Callable = lambda p: p) -> pd.DataFrame:
    """The comparison in long form: one row per search (prompt, length, direction) and method."""
    rows = []
    for r in table.to_dict(orient="records"):
        key = {"prompt": label(r["prompt"]), "length": r["length"], "direction": r["direction"]}
        rows.append({**key, "method": METHOD_NAMES["single"], "text": r["single_text"], "score": r["single_score"],
                     "gap %": np.nan, "candidates": np.nan, "seconds": np.nan,
                     "single-swap check": "one token (length 1)"})
        for m in ("gcg", "sweep", "both"):
            rows.append({**key, "method": METHOD_NAMES[m], "text": r[f"{m}_text"], "score": r[f"{m}_score"],
                         "gap %": r[f"{m}_gap_pct"], "candidates": r[f"{m}_candidates"],
                         "seconds": r[f"{m}_seconds"], "single-swap check": r[f"{m}_statement"]})
    return pd.DataFrame(rows)


def comparison_view(table: pd.DataFrame, label: Callable = lambda p: p, caption: str = "") -> pd.DataFrame:
    """Show :func:`comparison_rows` as an escaped table (texts with white space marked); return it."""
    long = comparison_rows(table, label)
    shown = long.assign(candidates=long["candidates"].map(lambda v: "" if pd.isna(v) else f"{int(v):,}"),
                        seconds=long["seconds"].map(lambda v: "" if pd.isna(v) else f"{v:.1f}"),
                        text=long["text"].map(rhtml.visible),
                        **{"gap %": long["gap %"].map(lambda v: "" if pd.isna(v) else f"{v:.2f}")})
    reports.show(rhtml.table(shown, caption=caption, float_format=".3f", show_whitespace=False))  # text: marked
    reports.show(rhtml.note("gap %: how far the method's score is from the best of GCG, sweeps and GCG + polish for that "
                    "search, in % of that best score's size (0: it found the best). candidates and seconds "
                    "include the single-swap check; GCG + sweep polish counts GCG's run plus the polish. "
                    "Every score is a fresh re-score of the reported ids alone."))
    return long


def gcg_runs(results) -> list:
    """The GCG runs of the comparison (for the Table 4 view, the trajectories and the re-score check)."""
    return [r["gcg"].gcg_result for r in results]


def comparison_findings(table: pd.DataFrame, tol: float = 1e-4) -> list[str]:
    """Sentences with this run's numbers: how often GCG alone reached the sweeps' optimum, the gaps,
    what the polish added, how many results are single-swap optimal, multi-token vs single-token."""
    if table.empty:
        return []
    n = len(table)
    sign = np.where(table["direction"] == "max", 1.0, -1.0)
    scale = np.maximum(np.abs(table["sweep_score"]), 1e-12)
    reached = sign * (table["gcg_score"] - table["sweep_score"]) >= -tol * np.maximum(1, np.abs(table["sweep_score"]))
    gap_to_sweep = 100 * np.clip(sign * (table["sweep_score"] - table["gcg_score"]), 0, None) / scale
    polish = sign * (table["both_score"] - table["gcg_score"]) > tol * np.maximum(1, np.abs(table["gcg_score"]))
    beyond = sign * (table[["gcg_score", "sweep_score", "both_score"]].max(axis=1).where(sign > 0,
                     table[["gcg_score", "sweep_score", "both_score"]].min(axis=1)) - table["single_score"])
    opt = {m: int((table[f"{m}_single_swap_optimal"] == True).sum()) for m in ("gcg", "sweep", "both")}  # noqa: E712
    cands = {m: int(table[f"{m}_candidates"].sum()) for m in ("gcg", "sweep", "both")}
    secs = {m: float(table[f"{m}_seconds"].sum()) for m in ("gcg", "sweep", "both")}
    best_of = table[["gcg_gap", "sweep_gap", "both_gap"]].eq(0)
    out = [
        f"GCG alone reached the coordinate sweeps' score in {int(reached.sum())} of {n} searches; where it fell "
        f"short, its gap to the sweeps was {gap_to_sweep[~reached].median() if (~reached).any() else 0:.2f} % "
        f"(median; largest {gap_to_sweep.max():.2f} %).",
        f"A sweep polish from GCG's best improved on GCG in {int(polish.sum())} of {n} searches.",
        f"Single-swap optimal over the shortlist: GCG {opt['gcg']} of {n}, sweeps {opt['sweep']} of {n}, "
        f"GCG + polish {opt['both']} of {n}.",
        f"Best of the three by method (ties count for each): GCG {int(best_of['gcg_gap'].sum())}, sweeps "
        f"{int(best_of['sweep_gap'].sum())}, GCG + polish {int(best_of['both_gap'].sum())}; cost in total: "
        f"GCG {cands['gcg']:,} candidates / {secs['gcg']:.0f} s, sweeps {cands['sweep']:,} / {secs['sweep']:.0f} s, "
        f"GCG + polish {cands['both']:,} / {secs['both']:.0f} s.",
        f"The best multi-token response beat the best single token of the shortlist by a median of "
        f"{np.median(beyond):.3f} (in the search direction; {int((beyond > 0).sum())} of {n} searches beat it).",
    ]
    reports.show(rhtml.bullets(out))
    return out


def long_searches(scorer, prompts: Sequence[str], length: int, config, start_word: str,
                  label: Callable = lambda p: p, kind: str = "", facts: pd.DataFrame | None = None, *,
                  cache: bool = True, recompute: bool | None = None):
    """Chapter 5's longer GCG searches (Table 5): one maximizing and one minimizing search per prompt
    from ``start_word`` repeated, their table beside the paper's Table 5 and their trajectories.

    Returns ``(results, seconds, table)``; ``([], 0.0, None)`` when ``length`` is 0 or there is no prompt.
    The searches go through the result cache like :func:`run_comparison` (same ``cache`` and
    ``recompute``); ``seconds`` is then the original computation's.
    """
    from ..engine import gcg
    from . import figures

    if not length or not prompts:
        reports.show(rhtml.note("long_length = 0 or no long_prompts: longer searches skipped."))
        return [], 0.0, None
    keyed = _cache_facts(scorer, prompts, length=int(length), gcg=config, start_word=start_word)
    results, memo = rmemo.cached("search_report.long_searches", LONG_SEARCH_VERSION, keyed,
                                 lambda: gcg.search_both(scorer, prompts, [length], config, start_word),
                                 recompute=recompute, enabled=cache)
    reports.show(rhtml.note(f"{len(results)} searches: {memo.sentence()}."))
    table = reports.gcg_results(results, scorer.tokenizer, label, f"{length}-token responses found by GCG | {kind}")
    if facts is not None:
        reports.gcg_beside_paper(table, "5", facts)
    reports.show(figures.gcg_trajectories(results, label, kind))
    return results, memo.seconds, table


__all__ += ["long_searches", "COMPARISON_VERSION", "LONG_SEARCH_VERSION"]
