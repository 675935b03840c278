"""The engine's named choices, defined once (light: the CLI builds its options from them).

| name | values | used by |
|---|---|---|
| :data:`MODES` | ``token`` (exact, from token ids), ``paper`` (the published method) | scorers, store, results, CLI ``--mode`` |
| :data:`MODEL_KINDS` | ``classifier``, ``logprob`` | ``models.load_model(kind=)``, CLI ``--kind`` |
| :data:`SCORER_KINDS` | the model kinds and ``implicit`` (policy over reference) | GCG |
| :data:`DTYPE_NAMES` | ``float32``, ``bfloat16``, ``float16`` | ``models.DTYPES``, CLI ``--dtype`` |
| :data:`TEMPLATE_NAMES` | the built-in chat templates of :data:`rmlib.engine.frames.TEMPLATES` | CLI ``--chat-template`` |
"""

from __future__ import annotations

from ..errors import InputError
from .frames import TEMPLATES

MODES = ("token", "paper")
MODEL_KINDS = ("classifier", "logprob")
SCORER_KINDS = (*MODEL_KINDS, "implicit")
DTYPE_NAMES = ("float32", "bfloat16", "float16")
TEMPLATE_NAMES = tuple(TEMPLATES)


def check_mode(mode: str) -> str:
    """``mode`` if it is one of :data:`MODES`, else an InputError (a ValueError) saying what each means."""
    if mode not in MODES:
        raise InputError(f"mode must be 'token' (exact, from token ids) or 'paper' (the published method), not {mode!r}")
    return mode


__all__ = ["DTYPE_NAMES", "MODEL_KINDS", "MODES", "SCORER_KINDS", "TEMPLATE_NAMES", "check_mode"]
