"""Tiny models built from configs, shared by the engine tests (loaded once per session)."""

import functools

from rmlib.scoring import load_scorer


@functools.lru_cache(maxsize=None)
def tiny(arch: str, batch_size: int = 64):
    return load_scorer(f"tiny:{arch}", batch_size=batch_size)
