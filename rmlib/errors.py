"""One small exception hierarchy: every error rmlib raises on purpose is an ``RmlibError``.

The command line (``python -m rmlib``) prints an ``RmlibError`` as one line on
stderr and exits non-zero (``--debug`` shows the traceback). Each message names
the problem and the fix. Subclasses keep the built-in bases older callers catch
(``ValueError`` for bad input, ``RuntimeError`` for faults found while running).
"""

from __future__ import annotations


def shortened(text: str, limit: int = 200) -> str:
    """``text`` (another library's error, quoted inside rmlib's) on one line, cut to at most ``limit`` characters
    at a word's end, with "…" where it was cut: never mid-word, so what is kept reads as written."""
    text = " ".join(str(text).split())
    if len(text) <= limit:
        return text
    cut = text[:limit + 1].rsplit(" ", 1)[0] if " " in text[:limit + 1] else text[:limit]
    return cut.rstrip(" ,;:(") + " …"


class RmlibError(Exception):
    """Base of every error rmlib raises on purpose (one line: problem and fix)."""


class InputError(RmlibError, ValueError):
    """A bad argument, file or parameter, found before heavy work starts."""


class ModelLoadError(InputError):
    """A model cannot be loaded as asked (missing weights, wrong format, no such device): bad input."""


class CacheError(RmlibError, RuntimeError):
    """The score cache or the user cache cannot be read or written (read-only, disk full, layout)."""


class DataFileError(RmlibError, RuntimeError):
    """A pinned data file is missing, unreadable or fails its hash check."""


class NonFiniteScoreError(RmlibError, RuntimeError):
    """A score came out NaN or infinite; ``token_ids`` names the offenders."""

    def __init__(self, token_ids, what: str = "token ids"):
        self.token_ids = list(token_ids)
        super().__init__(
            f"non-finite scores (NaN or inf) for {what} {self.token_ids[:20]}"
            f"{' …' if len(self.token_ids) > 20 else ''}: check the model's dtype (try dtype='float32') "
            "and weights; the scores computed before these are kept."
        )


class NonFiniteError(RmlibError, FloatingPointError):
    """A computation came out NaN or infinite (low precision, a learning rate too high); the message
    says which values, and the fix."""


class MathError(RmlibError, ValueError):
    """A formula of a chapter that latex2mathml cannot convert (the message names it)."""


class TaskError(RmlibError, RuntimeError):
    """Some of the book's tasks failed (their own messages are above); the others that finished are kept."""

    def __init__(self, failed, not_started):
        self.failed, self.not_started = list(failed), list(not_started)
        why = f"failed: {', '.join(self.failed)}" if self.failed else "a dependency cycle in rmlib.needs/after"
        super().__init__(f"{why}; not started: {', '.join(self.not_started) or 'none'} "
                         "(every chapter that finished is kept; their messages are above)")


class Interrupted(KeyboardInterrupt):
    """A run was stopped (Ctrl-C); the message says what was saved and how to resume.

    A ``KeyboardInterrupt`` (not an ``RmlibError``), so that ``except Exception`` never swallows it.
    """
