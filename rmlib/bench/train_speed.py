"""Reward-model training speed, for ``make bench`` (called by :mod:`rmlib.bench`).

* ``items_per_s_encode``: items run once through the frozen model (prompt
  prefix cached), the step that dominates head-only training;
* ``pairs_per_s_train``: Bradley–Terry optimisation steps over cached features;
* ``vocab_tokens_per_s``: the trained RM scoring vocabulary tokens as whole
  responses (rmlib's prefix-cached engine), beside the same model and tokens
  scored under the base's own template, the newline after the end-of-turn
  token kept (``vocab_tokens_per_s_newline_kept``; medians of three
  alternating runs): what reading the reward at the end-of-turn token
  (:func:`rmlib.engine.frames.ending_at_turn_end`) saves.

Measured on a seeded subset of EloEverything (``n_items``), sized for a goal
of a minute on a 2-core CPU; items/s scale linearly to the full 7,530 items.
"""

from __future__ import annotations

import statistics
import tempfile
import time

import numpy as np
import torch

from ..prompts import PAPER_PROMPTS

BENCH_PROMPT = PAPER_PROMPTS["greatest"]


def bench_train(base: str = "default", *, n_items: int = 400, epochs: int = 2, n_vocab: int = 512) -> dict:
    from ..engine.frames import resolve_template
    from ..engine.scorers import Scorer, load_scorer
    from ..training import classifier, configuration, train

    config = configuration.TrainConfig(base=base, max_items=n_items, epochs=epochs, threads=torch.get_num_threads())
    data, _, _ = train.prepare(config)
    model, tok, template, loaded = classifier.build_classifier(base)
    # timed directly: train_reward_model itself may find these features in its on-disk cache
    t = time.perf_counter()
    classifier.encode_items(model, tok, template, data.items, 0, progress=False, model_id=loaded.model_id)
    encode_s = time.perf_counter() - t
    with tempfile.TemporaryDirectory() as tmp:
        run = train.train_reward_model(config, out=tmp, progress=False, force=True)
        info = run.info
        scorer = load_scorer(str(run.folder))
        kept = Scorer(scorer.loaded, chat_template=resolve_template(loaded.tokenizer, loaded.chat_template, base),
                      batch_size=scorer.batch_size)
        ids = np.linspace(100, scorer.vocab_size - 1, n_vocab).astype(np.int64)
        seconds = {"end": [], "kept": []}
        for s in (scorer, kept):
            s.token_scores(BENCH_PROMPT, ids[:8])  # warm-up (prefix cache)
        for _ in range(3):  # alternating, so that both see the same machine
            for name, s in (("end", scorer), ("kept", kept)):
                t = time.perf_counter()
                s.token_scores(BENCH_PROMPT, ids)
                seconds[name].append(time.perf_counter() - t)
        vocab_s, kept_s = (statistics.median(seconds[k]) for k in ("end", "kept"))
        suffix = {"end": len(scorer.frame(BENCH_PROMPT).suffix_ids), "kept": len(kept.frame(BENCH_PROMPT).suffix_ids)}
    n_pairs_seen = info["n_pairs"] * info["epochs"]
    return {
        "base": base, "base_model_id": info["base_model_id"], "trained": info["trained"], "n_items": n_items,
        "epochs": epochs, "n_pairs": info["n_pairs"],
        "encode_s": round(encode_s, 2), "items_per_s_encode": round(n_items / encode_s, 1),
        "full_eloeverything_encode_s_estimate": round(7530 / (n_items / encode_s), 1),
        "train_s": info["train_s"], "pairs_per_s_train": round(n_pairs_seen / max(info["train_s"], 1e-9), 1),
        "vocab_tokens": int(n_vocab), "vocab_tokens_per_s": round(n_vocab / vocab_s, 1),
        "vocab_tokens_per_s_newline_kept": round(n_vocab / kept_s, 1),
        "suffix_tokens": suffix["end"], "suffix_tokens_newline_kept": suffix["kept"],
        "end_of_turn_speedup": round(kept_s / vocab_s, 2),
        "threads": torch.get_num_threads(),
    }
