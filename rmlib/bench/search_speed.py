"""Coordinate-sweep speed beside GCG's, and the search goal on a tiny RM, for ``make bench``
(called by :mod:`rmlib.bench`).

* :func:`bench_search`: on the default trained RM (``trained:default``), L = 2 and 3:
  candidates per second and the time to a single-swap local optimum over a stated
  vocabulary (a stride through the ASCII tokens on a CPU), beside GCG's steps per second.
* :func:`bench_search_goal`: on the tiny random classifier RM (``tiny:llama-classifier``,
  SmolLM2's tokenizer and chat template) with the full ASCII vocabulary, L = 2 and 3, both
  directions: the default search's time, whether its result is single-swap optimal, and its
  gap to a 20-restart sweep run (the goal: optimal, within 1 %, in at most 60 s).
* :func:`bench_search_anytime`: on five seeded rugged tiny RMs, L = 2 and 3, both directions: the
  share of cells within 1 % of a 20-restart reference at equal budget, with the earlier three-start
  rule (before) and the anytime restarts (after); the goal is 90 % after.
"""

from __future__ import annotations

import json
import sys
import time

import numpy as np
import torch

from ..prompts import PAPER_PROMPTS

BENCH_PROMPT = PAPER_PROMPTS["greatest"]
#: Candidates per position on a CPU (a stride through the allowed vocabulary); a GPU scans all of it.
CPU_VOCAB = 128


def bench_search(model: str = "trained:default", *, lengths=(2, 3), vocab: int | None = None, maximize: bool = True,
                 gcg_steps: int = 3, gcg_width: int = 64, prompt: str = BENCH_PROMPT) -> dict:
    """Per length: a sweep from the best single token repeated until no single swap improves.

    Reports candidates scored per second, the time to that single-swap local optimum (and the
    candidates it took), and GCG's steps per second on the same model, length and tokens.
    ``vocab``: candidates per position, a fixed stride through the allowed (ASCII) tokens; None
    means all of them on a GPU and ``CPU_VOCAB`` on a CPU (a full scan of the default model's
    48,000 tokens is slow there); the output says which.
    """
    from ..engine import gcg, shortlists, sweeps
    from ..engine import search as S
    from ..engine.search_config import SearchConfig
    from ..engine.scorers import load_scorer

    scorer = load_scorer(model)
    allowed = sweeps.allowed_ids(scorer)
    if vocab is None:
        vocab = None if scorer.loaded.device.type == "cuda" else CPU_VOCAB
    tokens = allowed if vocab is None or vocab >= len(allowed) else allowed[np.linspace(0, len(allowed) - 1, vocab).astype(int)]
    t = time.perf_counter()
    singles = shortlists.best_singles(scorer, prompt, tokens)  # shared start; warms the prefix cache and the filters
    singles_s = time.perf_counter() - t
    out = {"model": model, "model_id": scorer.loaded.model_id, "scorer": scorer.kind, "dtype": scorer.loaded.dtype,
           "vocabulary": ("all allowed (ASCII) tokens" if len(tokens) == len(allowed) else
                          f"a stride of {len(tokens)} through the {len(allowed)} allowed (ASCII) tokens "
                          "(the whole vocabulary takes too long on a CPU)"),
           "device": str(scorer.loaded.device), "threads": torch.get_num_threads(),
           "candidates_per_position": f"{len(tokens)} of {len(allowed)} allowed tokens",
           "direction": "max" if maximize else "min", "singles_scan_s": round(singles_s, 2),
           "note": "time to local optimum: one sweep from the best single token repeated (the singles "
                   "scan, shared by all lengths, reported apart); ends when no single swap improves",
           "lengths": {}}
    for length in lengths:
        cfg = SearchConfig(method="sweep", length=length, maximize=maximize, restarts=1, init="singles")
        result = S.run(scorer, prompt, cfg, singles=singles, vocabulary=tokens)
        run = result.runs.iloc[0]
        gcfg = SearchConfig(allowed="ascii", num_steps=gcg_steps, search_width=gcg_width, topk=gcg_width,
                            maximize=maximize, patience=None)
        start = result.start_ids
        t = time.perf_counter()
        g = gcg.descend(scorer, prompt, start, gcfg, vocabulary=tokens)
        g_seconds = time.perf_counter() - t
        out["lengths"][str(length)] = {
            "sweep_candidates_per_s": round(run["candidates"] / run["seconds"], 1),
            "time_to_local_optimum_s": None if not run["converged"] else round(run["seconds"], 2),
            "candidates_to_local_optimum": int(run["candidates"]), "scans": int(run["scans"]),
            "local_optimum": result.local_optimum, "best_text": result.best_text, "best_score": result.best_score,
            "start_text": result.start_text,
            "gcg_steps_per_s": round(g.steps / g_seconds, 3), "gcg_candidates_per_s": round((g.n_evaluated - 1) / g_seconds, 1),
            "gcg_width": gcg_width, "gcg_best_score_after_steps": g.best_score, "gcg_steps": g.steps,
        }
    return out


#: The search goal on the tiny RM: single-swap optimal, within this fraction of the reference, in this time.
GOAL_GAP, GOAL_SECONDS = 0.01, 60.0


def rugged_tiny(init_range: float = 1.0, seed: int = 0):
    """``tiny:llama-classifier`` with weights drawn at ``init_range`` instead of 0.02 (scores about
    ±12 instead of ±0.2): a landscape where searches can stop at different local optima."""
    from transformers import AutoModelForSequenceClassification

    from ..engine.models import LoadedModel
    from ..engine.scorers import Scorer, load_scorer

    base = load_scorer("tiny:llama-classifier")
    cfg = base.loaded.model.config.__class__.from_dict({**base.loaded.model.config.to_dict(),
                                                        "initializer_range": init_range})
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        model = AutoModelForSequenceClassification.from_config(cfg).eval()
    spec = f"tiny:llama-classifier, initializer_range={init_range}, seed {seed}"
    loaded = LoadedModel(spec=spec, model_id=spec, revision=None, kind="classifier", model=model,
                         tokenizer=base.loaded.tokenizer, dtype="float32")
    return Scorer(loaded, batch_size=base.batch_size)


def bench_search_goal(model: str = "tiny:llama-classifier", *, lengths=(2, 3), directions=(True, False),
                      reference_restarts: int = 20, vocab: int | None = None, prompt: str = BENCH_PROMPT,
                      init_range: float | None = None) -> dict:
    """The search goal, per length and direction: the default search (``SearchConfig()``: GCG,
    then sweeps from its best and from random restarts, every allowed ASCII token per position)
    against a sweep run from ``reference_restarts`` seeded random starts.

    Reports the default search's time, whether its result is single-swap optimal (exhaustive
    check), its gap to the best of both runs in %, and ``goal_met``. ``vocab``: a stride of
    that many allowed tokens instead of all (for the tests). ``init_range``: the tiny model with
    larger random weights (:func:`rugged_tiny`), a harder landscape.
    """
    from ..engine import search as S
    from ..engine import sweeps
    from ..engine.scorers import load_scorer
    from ..engine.search_config import SearchConfig

    scorer = load_scorer(model) if init_range is None else rugged_tiny(init_range)
    allowed = sweeps.allowed_ids(scorer)
    tokens = None if vocab is None or vocab >= len(allowed) else allowed[np.linspace(0, len(allowed) - 1, vocab).astype(int)]
    n = len(allowed) if tokens is None else len(tokens)
    out = {"model": model, "model_id": scorer.loaded.model_id, "scorer": scorer.kind, "prompt": prompt,
           "vocabulary": f"{n} of {len(allowed)} allowed (ASCII) tokens", "threads": torch.get_num_threads(),
           "goal": f"single-swap optimal and within {GOAL_GAP:.0%} of {reference_restarts} random-restart sweeps, "
                   f"in <= {GOAL_SECONDS:.0f} s", "cells": {}}
    for length in lengths:
        for maximize in directions:
            t = time.perf_counter()
            r = S.run(scorer, prompt, SearchConfig(length=length, maximize=maximize), vocabulary=tokens)
            seconds = time.perf_counter() - t
            ref = S.run(scorer, prompt, SearchConfig(method="sweep", length=length, maximize=maximize,
                                                     restarts=reference_restarts, init="random", seed=11),
                           vocabulary=tokens)
            sign = 1.0 if maximize else -1.0
            best = sign * max(sign * r.best_score, sign * ref.best_score)
            gap = max(0.0, sign * (best - r.best_score)) / max(abs(best), 1e-12)
            cell = out["cells"][f"L={length} {'max' if maximize else 'min'}"] = {
                "seconds": round(seconds, 2), "time_to_first_local_optimum_s": r.time_to_local_optimum,
                "best_text": r.best_text, "best_score": r.best_score, "single_swap_optimal": r.local_optimum,
                "check": r.local_optimum_check, "candidates": r.candidates_scored + r.check_candidates,
                "reference_score": ref.best_score, "reference_seconds": round(ref.seconds, 1),
                "gap_pct": round(100 * gap, 3),
                "goal_met": bool(r.local_optimum is True and gap <= GOAL_GAP and seconds <= GOAL_SECONDS),
            }
            print(f"[bench search_goal] L={length} {'max' if maximize else 'min'}: {json.dumps(cell)}",
                  file=sys.stderr, flush=True)  # a long section: each cell as it finishes
    out["goal_met_everywhere"] = all(c["goal_met"] for c in out["cells"].values())
    return out


#: The anytime-search section: seeded rugged tiny RMs, candidates per position, the goal.
ANYTIME_SEEDS, ANYTIME_VOCAB, ANYTIME_GOAL = (0, 1, 2, 3, 4), 128, 0.90


def bench_search_anytime(*, seeds=ANYTIME_SEEDS, lengths=(2, 3), directions=(True, False), vocab: int = ANYTIME_VOCAB,
                         budget_seconds: float | None = None, reference_restarts: int = 20, gap: float = GOAL_GAP,
                         init_range: float = 1.0, method: str = "sweep", prompt: str = BENCH_PROMPT) -> dict:
    """Quality at equal budget, before and after the anytime restarts: ``method`` (default: coordinate
    sweeps, the part whose restarts changed) under a time budget with the earlier rule
    (``restart_policy="fixed"``: three starts, the best single token repeated and two random ones;
    the budget only cuts them short) and with the anytime one (diverse restarts until the budget is
    spent), against a reference of ``reference_restarts`` sweeps from seeded random starts (no
    budget), on rugged tiny RMs (:func:`rugged_tiny`, one per seed: many local optima), for every
    length and direction. The budget of both is ``budget_seconds``, or by default the time the
    reference took in that cell (equal effort: whatever the machine's speed or load, the anytime
    search gets as long as the 20 restarts took).

    A cell is "within" when the search's score is no further than ``gap`` (relative) from the
    reference's in the search's direction (a search that beats the reference is within). Reports
    each cell and the share of cells within, before and after, beside the goal (``ANYTIME_GOAL``).
    ``vocab``: candidates per position, a stride through the allowed (ASCII) tokens, so that the
    section keeps to its goal of about a minute on a 2-core CPU.
    """
    from ..engine import search as S
    from ..engine import sweeps
    from ..engine.search_config import SearchConfig

    out = {"models": f"tiny:llama-classifier with weights drawn at initializer_range={init_range}, seeds {list(seeds)}",
           "prompt": prompt, "method": method,
           "budget_seconds": budget_seconds or "per cell: the reference's own time",
           "before": "restart_policy='fixed' (3 starts)", "after": "restart_policy='anytime' (restarts until the budget is spent)",
           "reference": f"{reference_restarts} sweeps from seeded random starts (seed 11), no budget",
           "within": f"within {gap:.0%} of the reference", "threads": torch.get_num_threads(), "cells": {}}
    t0 = time.perf_counter()
    for seed in seeds:
        scorer = rugged_tiny(init_range, seed=seed)
        allowed = sweeps.allowed_ids(scorer)
        tokens = allowed[np.linspace(0, len(allowed) - 1, min(vocab, len(allowed))).astype(int)]
        out["vocabulary"] = f"a stride of {len(tokens)} through the {len(allowed)} allowed (ASCII) tokens"
        for length in lengths:
            for maximize in directions:
                ref = S.run(scorer, prompt, SearchConfig(method="sweep", length=length, maximize=maximize,
                                                         restarts=reference_restarts, init="random", seed=11,
                                                              restart_policy="fixed"), vocabulary=tokens)
                budget = budget_seconds or ref.seconds
                base = dict(method=method, length=length, maximize=maximize, budget_seconds=budget)
                before = S.run(scorer, prompt, SearchConfig(restart_policy="fixed", **base), vocabulary=tokens)
                after = S.run(scorer, prompt, SearchConfig(**base), vocabulary=tokens)
                sign = 1.0 if maximize else -1.0

                def within(r):
                    return bool(sign * (r.best_score - ref.best_score) >= -gap * abs(ref.best_score))

                cell = out["cells"][f"seed {seed} L={length} {'max' if maximize else 'min'}"] = {
                    "reference_score": ref.best_score, "reference_seconds": round(ref.seconds, 2),
                    "budget_seconds": round(budget, 2),
                    "before_score": before.best_score, "before_restarts": before.restarts_run,
                    "before_seconds": round(before.seconds, 2), "before_within": within(before),
                    "after_score": after.best_score, "after_restarts": after.restarts_run,
                    "after_agreement": after.agreement, "after_within": within(after),
                }
                print(f"[bench search_anytime] seed {seed} L={length} {'max' if maximize else 'min'}: {json.dumps(cell)}",
                      file=sys.stderr, flush=True)  # a long section: each cell as it finishes
    cells = list(out["cells"].values())
    out["share_within_before"] = round(sum(c["before_within"] for c in cells) / len(cells), 3)
    out["share_within_after"] = round(sum(c["after_within"] for c in cells) / len(cells), 3)
    out["goal"] = f"share within >= {ANYTIME_GOAL:.0%} after"
    out["goal_met"] = out["share_within_after"] >= ANYTIME_GOAL
    out["seconds"] = round(time.perf_counter() - t0, 1)
    return out
