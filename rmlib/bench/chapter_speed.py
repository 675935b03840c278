"""The chapters' vocabulary scoring before and after its CPU defaults, for ``make bench`` (section
``chapter_scoring``).

``rmlib.runs.scoring.score_models`` scores token ids with the scorer loaded as the chapters load it
(``lite=True`` in token mode, the default batch). Before, it loaded transformers' forward at a fixed
batch of 64. This scores the same tokens both ways, side by side, for each trained RM:

* ``trained:default`` (a Llama checkpoint): transformers' packed path at batch 64 against
  rmlib's lite forward at its default batch (512 on a CPU);
* ``trained:gemma-3-270m`` (transformers' forward either way): batch 64 against the default,
  which grows to ``rmlib.engine.plan.CPU_PACKED_POSITIONS`` positions for its single-token candidates.

Rounds alternate; medians and their ratio are reported with the largest score difference
between the two (float32 rounding only).
"""

from __future__ import annotations

import statistics
import time

import numpy as np

from ..prompts import PAPER_PROMPTS

BENCH_PROMPT = PAPER_PROMPTS["greatest"]


def chapter_scoring(models=("trained:default", "trained:gemma-3-270m"), *, n_tokens: int = 2048,
                    rounds: int = 3) -> dict:
    from ..engine.scorers import load_scorer

    out = {}
    for model in models:
        scorers = {"before_transformers_batch_64": load_scorer(model, batch_size=64),
                   "chapters_default": load_scorer(model, lite=True)}
        ids = np.linspace(100, scorers["chapters_default"].vocab_size - 1, n_tokens).astype(np.int64)
        seconds = {name: [] for name in scorers}
        scores = {}
        for s in scorers.values():
            s.token_scores(BENCH_PROMPT, ids[:8])  # warm-up (prefix cache)
        for _ in range(rounds):
            for name, s in scorers.items():
                t = time.perf_counter()
                scores[name] = s.token_scores(BENCH_PROMPT, ids)
                seconds[name].append(time.perf_counter() - t)
        rate = {name: n_tokens / statistics.median(v) for name, v in seconds.items()}
        length = 1 + len(scorers["chapters_default"].frame(BENCH_PROMPT).suffix_ids)
        out[model] = {
            "n_tokens": n_tokens, "rounds": rounds, "candidate_tokens": length,
            "forward": {name: s.provenance(BENCH_PROMPT, "token")["forward"] for name, s in scorers.items()},
            "batch": {name: s.chunk_size(np.full(n_tokens, length)) for name, s in scorers.items()},
            "tokens_per_s": {name: round(r, 1) for name, r in rate.items()},
            "speedup": round(rate["chapters_default"] / rate["before_transformers_batch_64"], 2),
            "max_abs_score_diff": float(np.abs(scores["chapters_default"] - scores["before_transformers_batch_64"]).max()),
        }
        scorers = None
    return out
