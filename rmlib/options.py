"""The choices and small parsers the command line shares with the library (stdlib only).

``python -m rmlib --help`` and an argument error must answer without importing
torch, transformers or pandas, so every constant the CLI offers as a choice
lives here and the heavy modules import it from here (one source of truth).
"""

from __future__ import annotations

MODES = ("token", "paper")  # token: exact, from token ids; paper: the published decode-and-retokenize method
KINDS = ("classifier", "logprob")
DTYPE_NAMES = ("float32", "bfloat16", "float16")
TINY_ARCHS = ("llama-classifier", "gemma2-classifier", "llama-lm")
RANDOM_SHAPES = ("smollm2-135m-classifier",)
TEMPLATE_NAMES = ("chatml", "llama3", "plain")  # the named chat templates of rmlib.engine.frames.TEMPLATES


def vocab_slice(text: str | None) -> slice | None:
    """Read ``"START:STOP"`` (either side may be empty) as a slice of the vocabulary.

    ``""`` or ``None`` means the whole vocabulary (returns ``None``).
    """
    if text is None or not str(text).strip():
        return None
    parts = str(text).strip().split(":")
    try:
        if len(parts) != 2:
            raise ValueError
        start, stop = (int(p) if p.strip() else None for p in parts)
    except ValueError:
        raise ValueError(
            f"vocabulary slice {text!r} is not START:STOP: write e.g. '0:300', ':1000' or '1000:' "
            "(or '' for the whole vocabulary)"
        ) from None
    if (start is not None and start < 0) or (stop is not None and stop < 0):
        raise ValueError(f"vocabulary slice {text!r}: token ids are non-negative, use e.g. '0:300'")
    if start is not None and stop is not None and stop <= start:
        raise ValueError(f"vocabulary slice {text!r} is empty: STOP must be greater than START")
    return slice(start, stop)
