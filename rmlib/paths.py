"""Every folder rmlib reads or writes, resolved in one place (light: stdlib only).

| folder or switch | environment variable | default |
|---|---|---|
| user cache (de-quantized models, downloads, trained RMs) | ``RMLIB_CACHE_DIR`` | ``$XDG_CACHE_HOME/rmlib`` (``~/.cache/rmlib``) |
| score tables | ``RMLIB_SCORES_DIR`` | ``data/scores`` in a checkout, else ``<cache>/scores`` |
| public data looked up before the download cache | ``RMLIB_DATA_DIR`` | none |
| never download public data | ``RMLIB_OFFLINE`` (``1``) | off: a file found nowhere is downloaded |
| a mirror of the upstream hosts | ``RMLIB_DATA_MIRROR`` (a base URL) | none: the pinned upstream URLs |
"""

from __future__ import annotations

import os
import pathlib

from .errors import InputError

CACHE_ENV_VAR = "RMLIB_CACHE_DIR"
SCORES_ENV_VAR = "RMLIB_SCORES_DIR"
DATA_ENV_VAR = "RMLIB_DATA_DIR"
OFFLINE_ENV_VAR = "RMLIB_OFFLINE"
MIRROR_ENV_VAR = "RMLIB_DATA_MIRROR"


class Foreign(str):
    """Why an entry of one of rmlib's caches is not rmlib's: its name is none that rmlib's own naming
    produces (a user's file or folder put there). The ``stale_*`` functions of the modules that own each
    kind of cache entry return it; ``python -m rmlib cache`` lists such entries and never deletes them."""


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
    """``RMLIB_DATA_DIR``: a folder of public data files looked at before the download cache, or None."""
    value = os.environ.get(DATA_ENV_VAR, "").strip()
    if not value:
        return None
    path = pathlib.Path(value).expanduser()
    if path.exists() and not path.is_dir():
        raise InputError(f"{DATA_ENV_VAR}={value} is a file, not a folder: point it at the folder that holds the "
                         "public data files (e.g. ../shared/data), or unset it")
    return path


def offline() -> bool:
    """True when ``RMLIB_OFFLINE`` asks rmlib never to download public data (``1``/``true``/``yes``/``on``).

    Only rmlib's own variable counts: ``HF_HUB_OFFLINE`` is about the model hub,
    and the public data comes from other hosts.
    """
    value = os.environ.get(OFFLINE_ENV_VAR, "").strip().lower()
    if value in ("1", "true", "yes", "on"):
        return True
    if value in ("", "0", "false", "no", "off"):
        return False
    raise InputError(f"{OFFLINE_ENV_VAR}={value!r}: use 1 to never download public data, 0 (or unset) to "
                     "download what is missing")


def data_mirror() -> str | None:
    """``RMLIB_DATA_MIRROR``: a base URL standing in for the upstream hosts, or None.

    A pinned URL ``https://HOST/PATH`` is then fetched from ``<mirror>/HOST/PATH``,
    the layout ``wget --force-directories`` writes (any static file server over a
    copy made that way serves it). The pinned hashes are checked as usual.
    """
    value = os.environ.get(MIRROR_ENV_VAR, "").strip()
    return value.rstrip("/") if value else None
