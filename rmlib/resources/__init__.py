"""Package data: the reward-model registry (``reward_models.yaml``), the pinned public files
(``data_files.yaml``, the follow-up study's in ``followup.yaml``), the Big Two word lists (``bigtwo/``) and the papers' claims (``claims/``).
Read through :func:`path`, so that an installed wheel finds them too."""

from __future__ import annotations

import importlib.resources
import pathlib


def path(name: str) -> pathlib.Path:
    """The file or folder ``name`` inside ``rmlib/resources`` (e.g. ``"bigtwo"``)."""
    found = pathlib.Path(str(importlib.resources.files(__name__) / name))
    if not found.exists():
        raise FileNotFoundError(f"rmlib's package data lacks {name!r} ({found}): reinstall rmlib")
    return found
