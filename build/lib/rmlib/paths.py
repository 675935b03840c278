"""Every folder rmlib reads or writes, resolved in one place (light: stdlib only).

| folder | environment variable | default |
|---|---|---|
| user cache (de-quantized models, downloads, trained RMs) | ``RMLIB_CACHE_DIR`` | ``$XDG_CACHE_HOME/rmlib`` (``~/.cache/rmlib``) |
| score tables | ``RMLIB_SCORES_DIR`` | ``data/scores`` in a checkout, else ``<cache>/scores`` |
| public data read instead of downloading | ``RMLIB_DATA_DIR`` | none (download) |
"""

from __future__ import annotations

import os
import pathlib

CACHE_ENV_VAR = "RMLIB_CACHE_DIR"
SCORES_ENV_VAR = "RMLIB_SCORES_DIR"
DATA_ENV_VAR = "RMLIB_DATA_DIR"


def checkout_root() -> pathlib.Path | None:
    """The repository this rmlib runs from (editable install or ``PYTHONPATH``), or None when installed."""
    root = pathlib.Path(__file__).resolve().parents[1]
    return root if (root / "notebooks").is_dir() and (root / "_toc.yml").is_file() else None


def cache_dir() -> pathlib.Path:
    """The user cache folder (``RMLIB_CACHE_DIR``, else ``~/.cache/rmlib``)."""
    value = os.environ.get(CACHE_ENV_VAR, "").strip()
    if value:
        return pathlib.Path(value).expanduser()
    return pathlib.Path(os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache")) / "rmlib"


def scores_dir() -> pathlib.Path:
    """Score tables: ``RMLIB_SCORES_DIR``, else ``data/scores`` in a checkout, else ``<cache>/scores``."""
    value = os.environ.get(SCORES_ENV_VAR, "").strip()
    if value:
        return pathlib.Path(value).expanduser()
    root = checkout_root()
    return root / "data" / "scores" if root else cache_dir() / "scores"


def data_dir() -> pathlib.Path | None:
    """``RMLIB_DATA_DIR`` (a folder of public data files read instead of downloading), or None."""
    value = os.environ.get(DATA_ENV_VAR, "").strip()
    return pathlib.Path(value).expanduser() if value else None
