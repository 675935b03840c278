"""Progress bars: one switch for all of rmlib.

Long work shows a tqdm bar, except where nobody watches it: with
``RMLIB_NO_PROGRESS=1`` in the environment (the book runner sets it for every
chapter, so no bar is written into a page) every bar is off.
"""

from __future__ import annotations

import os

ENV_VAR = "RMLIB_NO_PROGRESS"


def enabled(progress: bool = True) -> bool:
    """``progress`` unless the environment turns every bar off."""
    return bool(progress) and os.environ.get(ENV_VAR, "").strip() not in ("1", "true", "yes")


def bar(total: int | None = None, *, progress: bool = True, **kwargs):
    """A tqdm bar (``tqdm.auto``: a widget in Jupyter, text in a terminal), off when not :func:`enabled`."""
    from tqdm.auto import tqdm

    return tqdm(total=total, disable=not enabled(progress), **kwargs)


def quiet_environment() -> dict[str, str]:
    """Environment variables that silence rmlib's, transformers' and tqdm's bars in a child process."""
    return {ENV_VAR: "1", "HF_HUB_DISABLE_PROGRESS_BARS": "1", "TQDM_DISABLE": "1",
            "TRANSFORMERS_VERBOSITY": "error"}
