"""GCG speed on the default model, for ``make bench`` (called by :mod:`rmlib.bench`)."""

from __future__ import annotations

import time

import torch

from ..prompts import PAPER_PROMPTS
from ..errors import InputError

BENCH_PROMPT = PAPER_PROMPTS["greatest"]


def bench_gcg(model: str = "default", *, num_steps: int = 5, search_width: int = 64,
              response_len: int = 3, prompt: str = BENCH_PROMPT) -> dict:
    """GCG steps per second (gradient + ``search_width`` candidates scored) on ``model``.

    The model is loaded and one warm-up step is run (it also builds the token
    filters) before the timed ``num_steps`` steps. With no ``patience`` and a
    vocabulary far larger than ``search_width``, every step runs.
    """
    from ..engine import gcg
    from ..engine.search_config import SearchConfig
    from ..engine.scorers import load_scorer

    scorer = load_scorer(model)
    start = " ".join(["x"] * response_len)
    ids = scorer.tokenizer(start, add_special_tokens=False).input_ids[:response_len]
    if len(ids) != response_len:
        raise InputError(f"could not build a {response_len}-token start from {start!r}")
    config = SearchConfig(allowed="all", num_steps=1, search_width=search_width, topk=search_width)
    gcg.descend(scorer, prompt, ids, config)  # warm-up
    config.num_steps = num_steps
    t = time.perf_counter()
    result = gcg.descend(scorer, prompt, ids, config)
    seconds = time.perf_counter() - t
    return {
        "gcg_steps_per_s": round(result.steps / seconds, 3),
        "model": model, "model_id": scorer.loaded.model_id, "scorer": scorer.kind,
        "search_width": int(search_width), "response_len": int(response_len), "steps": result.steps,
        "seconds": round(seconds, 2), "candidates_per_s": round((result.n_evaluated - 1) / seconds, 1),
        "threads": torch.get_num_threads(),
    }
