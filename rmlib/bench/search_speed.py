"""Coordinate-sweep speed beside GCG's, for ``make bench`` (called by :mod:`rmlib.bench`)."""

from __future__ import annotations

import time

import numpy as np
import torch

BENCH_PROMPT = "What, in one word, is the greatest thing ever?"
#: Candidates per position on a CPU (a stride through the allowed vocabulary); a GPU scans all of it.
CPU_VOCAB = 128


def bench_search(model: str = "default", *, lengths=(2, 3), vocab: int | None = None, maximize: bool = True,
                 gcg_steps: int = 3, gcg_width: int = 64, prompt: str = BENCH_PROMPT) -> dict:
    """Per length: a sweep from the best single token repeated until no single swap improves.

    Reports candidates scored per second, the time to that single-swap local optimum (and the
    candidates it took), and GCG's steps per second on the same model, length and tokens.
    ``vocab``: candidates per position, a fixed stride through the allowed (ASCII) tokens; None
    means all of them on a GPU and ``CPU_VOCAB`` on a CPU (a full scan of the default model's
    48,000 tokens takes minutes there); the output says which.
    """
    from ..engine import gcg
    from ..engine import search as S
    from ..engine.scorers import load_scorer

    scorer = load_scorer(model)
    allowed = S.allowed_ids(scorer)
    if vocab is None:
        vocab = None if scorer.loaded.device.type == "cuda" else CPU_VOCAB
    tokens = allowed if vocab is None or vocab >= len(allowed) else allowed[np.linspace(0, len(allowed) - 1, vocab).astype(int)]
    t = time.perf_counter()
    singles = S.best_singles(scorer, prompt, tokens)  # shared start; warms the prefix cache and the filters
    singles_s = time.perf_counter() - t
    out = {"model": model, "model_id": scorer.loaded.model_id, "scorer": scorer.kind,
           "device": str(scorer.loaded.device), "threads": torch.get_num_threads(),
           "candidates_per_position": f"{len(tokens)} of {len(allowed)} allowed tokens",
           "direction": "max" if maximize else "min", "singles_scan_s": round(singles_s, 2),
           "note": "time to local optimum: one sweep from the best single token repeated (the singles "
                   "scan, shared by all lengths, reported apart); ends when no single swap improves",
           "lengths": {}}
    for length in lengths:
        cfg = S.SearchConfig(method="sweep", length=length, maximize=maximize, restarts=1, init="singles")
        result = S.search(scorer, prompt, cfg, singles=singles, vocabulary=tokens)
        run = result.runs.iloc[0]
        gcfg = gcg.GCGConfig(num_steps=gcg_steps, search_width=gcg_width, topk=gcg_width, maximize=maximize,
                             ascii_only=True)
        start = result.start_ids
        t = time.perf_counter()
        g = gcg.run(scorer, prompt, start, gcfg, vocabulary=tokens)
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
