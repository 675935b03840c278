"""The cache of trained reward models: ``trained:<base>`` trained once and named by its pointer file
(:func:`ensure_trained`), and which entries of ``<cache>/trained`` the current code still reads
(:func:`stale_reason`, for ``python -m rmlib cache``)."""

from __future__ import annotations

import hashlib
import json
import os
import pathlib
import re

from ..engine.trained_pointers import TRAINED_POINTER_SUFFIX
from ..errors import InputError
from ..paths import Foreign
from .configuration import TRAIN_REVISION, TrainConfig
from .folders import point_to
from .train import train_reward_model

#: rmlib's names in ``<cache>/trained``: a model folder ``<base>-<key>``, an unfinished pointer write
#: ``.<base>.default.tmp-*``, cached features ``features/<key>.safetensors`` (+ ``.json``, + ``.tmp-*`` writes).
_MODEL_FOLDER = re.compile(r".+-[0-9a-f]{16}")
_POINTER_TMP = re.compile(r"\..+" + re.escape(TRAINED_POINTER_SUFFIX) + r"\.tmp-\w+")
_FEATURES = re.compile(r"(\.)?([0-9a-f]{20})\.(safetensors|json)(\.tmp-\w+)?")


def stale_reason(path: str | os.PathLike) -> str | None:
    """None when the current rmlib would reuse ``path``, an entry of ``<cache>/trained``, else why not;
    a :class:`rmlib.paths.Foreign` reason for a name rmlib never writes there (a user's file: kept).

    A pointer file (``<base>.default``) is used while the folder it names is.

    A trained model is found again only under the key its configuration gets today
    (:meth:`TrainConfig.key`: every setting, the data's SHA-256 and :data:`TRAIN_REVISION`), so a
    folder whose recorded configuration keys differently now (an older revision, a setting added or
    removed, EloEverything pinned to another file) can never be reused. A folder without
    ``training.json`` is an unfinished run (resumed by the same configuration) and counts as used.
    Cached features (``features/<key>.safetensors``) are used while the record written beside them
    names the current revision; files without a record come from an older rmlib.
    """
    path = pathlib.Path(path)
    if path.parent.name == "features":
        return _stale_features_reason(path)
    if _POINTER_TMP.fullmatch(path.name):
        return "an unfinished write (the process writing it stopped)"
    if path.is_file() and path.name.endswith(TRAINED_POINTER_SUFFIX):  # names the folder of trained:<base>
        with open(path, "rb") as f:
            name = f.read(200).decode("utf-8", "replace").strip()
        if _MODEL_FOLDER.fullmatch(name) is None or "/" in name:
            return Foreign("a file ending in .default that names no trained-model folder: not written by rmlib")
        target = path.parent / name
        if target.is_dir() and stale_reason(target) is None:
            return None
        return f"names {target.name}, which is gone or can no longer be reused"
    if not path.is_dir() or not _MODEL_FOLDER.fullmatch(path.name):
        return Foreign("not a trained-model folder (<base>-<key>) nor a pointer file: not written by rmlib")
    info_path = path / "training.json"
    if not info_path.exists():
        return None
    try:
        info = json.loads(info_path.read_text())
        config = TrainConfig(**info["config"])
        data_sha = info["data"]["sha256"]
    except (OSError, ValueError, KeyError, TypeError) as err:
        return f"its training.json does not describe a configuration of this rmlib ({type(err).__name__}: {err})"
    if info.get("train_revision") != TRAIN_REVISION:
        return f"trained by revision {info.get('train_revision')} of the training code (now {TRAIN_REVISION})"
    if config.data == "eloeverything":
        from ..tables.data_files import REGISTRY

        if data_sha != REGISTRY["elo_greatest_ever"].sha256:
            return "trained on another EloEverything file than the one pinned now"
    key = config.key(data_sha, info.get("given_pairs_sha256"))  # a run on given pairs keys them too
    if info.get("key") != key or not path.name.endswith(f"-{key}"):
        return "its configuration gets another cache key now (a training setting was added or removed)"
    return None


def _stale_features_reason(path: pathlib.Path) -> str | None:
    name = _FEATURES.fullmatch(path.name)
    if name is None or path.is_dir():
        return Foreign("not a cached-features file (<key>.safetensors and its .json record): not written by rmlib")
    if name.group(4):
        return "an unfinished write (the process writing it stopped)"
    if path.suffix == ".json":
        return _stale_features_reason(path.with_suffix(".safetensors")) if path.with_suffix(
            ".safetensors").exists() else "the record of features that are gone"
    record = path.with_suffix(".json")
    try:
        facts = json.loads(record.read_text())
    except (OSError, ValueError):
        return "features cached by an older rmlib (no record of what made them); recomputed when needed"
    if facts.get("train_revision") != TRAIN_REVISION:
        return f"features of revision {facts.get('train_revision')} of the training code (now {TRAIN_REVISION})"
    if hashlib.sha256(json.dumps(facts, sort_keys=True).encode()).hexdigest()[:20] != path.stem:
        return "its record does not match its name"
    return None


def ensure_trained(spec: str, progress: bool = True) -> pathlib.Path:
    """The folder of ``trained:<base>``: trained now with the default configuration when it is not in the cache
    (else reused), and named by its pointer file so that the engine loads it
    (:func:`rmlib.engine.models.trained_model_folder`)."""
    from ..engine.models import check_model_spec

    if check_model_spec(spec) != "trained":
        raise InputError(f"{spec!r} is not a trained: spec; use trained:<base>, e.g. 'trained:default'")
    base = spec.split(":", 1)[1]
    folder = train_reward_model(TrainConfig(base=base), progress=progress).folder
    point_to(folder, base)
    return folder
