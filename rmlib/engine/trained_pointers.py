"""Where a ``trained:<base>`` reward model lives: the pointer file the training layer writes in
``<cache>/trained`` and the folder's ``training.json``. Training itself is not the engine's job.
"""

from __future__ import annotations

import json
import pathlib

from ..errors import InputError
from ..paths import cache_dir


#: The file in ``<cache>/trained`` naming the folder of ``trained:<base>`` (written by the training layer when
#: it trains ``<base>`` with the default configuration): ``<slug of base>.default``.
TRAINED_POINTER_SUFFIX = ".default"


def trained_slug(base: str) -> str:
    """The file-name form of a base model spec (its trained folders and pointer start with it)."""
    return "".join(c if c.isalnum() or c in "-._" else "-" for c in base).strip("-")[:40]


def trained_pointer(base: str) -> pathlib.Path:
    """The pointer file of ``trained:<base>`` (see :data:`TRAINED_POINTER_SUFFIX`)."""
    return cache_dir() / "trained" / (trained_slug(base) + TRAINED_POINTER_SUFFIX)


def read_training_info(folder) -> dict:
    """A trained reward model's ``training.json`` (how it was trained: base, data, configuration, key)."""
    path = pathlib.Path(folder) / "training.json"
    if not path.exists():
        raise InputError(f"{folder} has no training.json: not a reward model trained by rmlib")
    return json.loads(path.read_text())
