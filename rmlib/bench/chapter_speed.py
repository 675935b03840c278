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
        # consecutive ids from the middle of the vocabulary, as the chapters' whole-vocabulary tables meet them
        # (spread ids would leave most places of each fixed-size forward to copies)
        first = scorers["chapters_default"].vocab_size // 2 // 4096 * 4096
        ids = np.arange(first, first + n_tokens, dtype=np.int64)
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


#: Positions per forward compared by :func:`text_scoring` (the plan's CPU value among them).
TEXT_POSITIONS = (16, 32, 64, 128)


def text_scoring(model: str = "trained:default", *, rounds: int = 2, n_items: int = 400) -> dict:
    """Texts as the chapters score them (:meth:`rmlib.engine.scorers.Scorer.score_texts`: each text in
    forwards of its own length at a hashed place, so its score never depends on the others) against
    length-sorted batches (:meth:`~rmlib.engine.scorers.Scorer.sequence_scores`, whose last bits follow the
    batch), on the follow-up's 263 Big Two nouns and ``n_items`` EloEverything items, at each of
    :data:`TEXT_POSITIONS` positions per forward. Rounds alternate; the fastest of each is reported, with
    the time ratio to the batches and the largest score difference (float rounding only)."""
    import dataclasses

    from ..engine.scorers import load_scorer
    from ..tables import followup, paper_release

    scorer = load_scorer(model, lite=True)
    frame, kernel = scorer.kernel(BENCH_PROMPT)
    suffix = list(frame.suffix_ids) if scorer.kind == "classifier" else []
    items = paper_release.eloeverything("greatest_ever")["name"].astype(str)
    sets = {"big2_nouns": list(followup.dictionary("big2")["word"]),
            "eloeverything_items": list(items.sample(min(n_items, len(items)), random_state=0))}
    out = {"model": model, "rounds": rounds, "plan_text_positions": scorer.loaded.plan.text_positions}
    for name, texts in sets.items():
        seqs = [list(scorer.tokenizer(t, add_special_tokens=False).input_ids) for t in texts]
        cands = [s + suffix for s in seqs]
        seconds, diffs = {"batched": []}, {}
        for _ in range(rounds):
            t = time.perf_counter()
            batched = scorer.sequence_scores(BENCH_PROMPT, seqs)
            seconds["batched"].append(time.perf_counter() - t)
            for p in TEXT_POSITIONS:
                rows = dataclasses.replace(scorer.loaded.plan, text_positions=p).text_rows
                t = time.perf_counter()
                placed = scorer.placed_scores(kernel, cands, False, rows_for=rows)
                seconds.setdefault(f"placed_{p}", []).append(time.perf_counter() - t)
                diffs[f"placed_{p}"] = float(np.abs(placed - batched).max())
        best = {k: min(v) for k, v in seconds.items()}
        out[name] = {"n_texts": len(texts), "seconds": {k: round(v, 3) for k, v in best.items()},
                     "ratio_to_batched": {k: round(v / best["batched"], 2) for k, v in best.items() if k != "batched"},
                     "max_abs_score_diff": diffs}
    return out
