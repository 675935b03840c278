"""The follow-up study's released full-vocabulary log-probabilities: an optional download.

The follow-up (arXiv 2601.20838) released, for each of its 12 language models (2 pretrained, 10
instruction-tuned; ``rmlib/resources/followup.yaml``, section ``logprobs``), the next-token
log-probability (log-softmax of the last position's logits) of every vocabulary token under each of
its 54 prompts, as one CSV per model in the Hugging Face dataset ``Oxford-HIPlab/iclr2026-lm-logprobs``
(about 2 GB in all): ``<hub id, "/" as "--">.csv`` with columns ``token_id, token_name,
token_decoded`` and one column per prompt key (``config/prompts.yaml``, :func:`rmlib.tables.followup.prompts`).

The files are downloaded through huggingface_hub's own client (so ``HF_ENDPOINT``, ``HF_HOME`` and
``HF_HUB_OFFLINE`` apply) into the hub cache, never copied. Their commit and hashes cannot be pinned in
advance: at the first download the dataset's revision is resolved to a commit, each file is checked
against the hub's own hash (an LFS file's SHA-256, which names its blob in the hub cache; the client
itself checks only the size), and that commit and each file's SHA-256 are recorded in the user cache
(:func:`record_path`). Every later read loads that commit and refuses a file whose SHA-256 differs
from its record, with the fix. ``RMLIB_OFFLINE=1`` (or ``HF_HUB_OFFLINE=1``) reads only
what is already downloaded.

* :func:`read`: the files of some models as one long table (``model, prompt, token_id, token,
  decoded, score``, the layout of :func:`rmlib.runs.scoring.score_models`), with the commit and
  each file's SHA-256 in ``attrs["provenance"]``;
* :func:`status` / :func:`status_note`: which are here, without downloading; one sentence for a page;
* :func:`study_pairs`: the study's 21 (Llama, Gemma) instruction-tuned pairs of its Fig. 3.

The CSVs are read with every decoded string kept as text (the authors' ``pd.read_csv`` turns a token
that decodes to ``null`` or ``NaN`` into a missing value and drops it).
"""

from __future__ import annotations

import json
import os
import pathlib
from collections.abc import Sequence

import pandas as pd

from ..errors import DataFileError, InputError
from ..files import atomic_write, file_lock
from ..paths import OFFLINE_ENV_VAR, cache_dir, offline
from .data_files import LOGPROBS_RECORD, followup_manifest
from .downloads import sha256sum
from .schema import LONG_COLUMNS

__all__ = ["MODELS", "REPOSITORY", "REVISION", "file_name", "read", "record", "record_path", "status",
           "status_note", "study_pairs"]

_MANIFEST = followup_manifest()["logprobs"]
#: The dataset repository and the revision resolved to a commit at the first download.
REPOSITORY: str = _MANIFEST["repository"]
REVISION: str = _MANIFEST["revision"]
_REPO_TYPE: str = _MANIFEST["repo_type"]
#: Hub id -> "pretrained" or "instruction-tuned", in the upstream ``config/models.yaml`` order.
MODELS: dict[str, str] = dict(_MANIFEST["models"])
META_COLUMNS = ("token_id", "token_name", "token_decoded")
HOW_TO_GET = "python -m rmlib paper-data --download --group followup_logprobs"


def file_name(model: str) -> str:
    """The dataset's file of ``model`` (one of :data:`MODELS`): ``google/gemma-2-2b`` -> ``google--gemma-2-2b.csv``;
    an :class:`InputError` naming the 12 models otherwise."""
    if model not in MODELS:
        raise InputError(f"the follow-up released no log-probabilities of {model!r}: choose from {list(MODELS)}")
    return model.replace("/", "--") + ".csv"


def study_pairs() -> list[tuple[str, str]]:
    """The study's Fig. 3 pairs: each instruction-tuned Llama (A) with each instruction-tuned Gemma (B) of
    :data:`MODELS`, 7 x 3 = 21, in the manifest's order."""
    tuned = [m for m, kind in MODELS.items() if kind == "instruction-tuned"]
    return [(a, b) for a in tuned if "llama" in a.lower() for b in tuned if "gemma" in b.lower()]


def record_path() -> pathlib.Path:
    """Where the commit and the files' SHA-256 recorded at their first download are kept (in the user cache)."""
    return cache_dir() / LOGPROBS_RECORD


def record() -> dict | None:
    """The record (``repository``, ``revision``, ``commit``, ``files``: name -> SHA-256), or None before the
    first download (or when it names another repository or revision than the manifest's)."""
    path = record_path()
    if not path.is_file():
        return None
    try:
        rec = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:
        raise DataFileError(f"{path} cannot be read ({err}): it records the log-probability dataset's commit and "
                            "hashes; delete it to resolve the revision again at the next download") from None
    if rec.get("repository") != REPOSITORY or rec.get("revision") != REVISION:
        return None
    return rec


def _write_record(rec: dict) -> None:
    atomic_write(record_path(), json.dumps(rec, indent=1, sort_keys=True) + "\n")


def _hub_note(err: BaseException) -> str:
    return f"{type(err).__name__}: {str(err).splitlines()[0] if str(err) else ''}"


def _resolve() -> str:
    """The commit :data:`REVISION` names on the hub now (the first download only)."""
    from huggingface_hub import HfApi, errors

    try:
        return str(HfApi().resolve_revision(REPOSITORY, repo_type=_REPO_TYPE, revision=REVISION).resolved)
    except errors.RevisionNotFoundError as err:
        raise DataFileError(f"the dataset {REPOSITORY} has no revision {REVISION!r} ({_hub_note(err)}): "
                            "the manifest rmlib/resources/followup.yaml names another than the hub has") from None
    except errors.RepositoryNotFoundError as err:
        raise DataFileError(f"no dataset {REPOSITORY!r} on the hub ({_hub_note(err)}): check HF_ENDPOINT "
                            "(unset it for huggingface.co)") from None
    except Exception as err:  # an unreachable hub, offline with nothing cached
        raise DataFileError(f"the dataset {REPOSITORY} cannot be reached to resolve {REVISION!r} "
                            f"({_hub_note(err)}): connect to the network (and unset HF_HUB_OFFLINE), then run "
                            f"`{HOW_TO_GET}`") from None


def _not_here(name: str, commit: str, err: BaseException) -> DataFileError:
    return DataFileError(f"{name} of {REPOSITORY} at commit {commit[:10]} is not here ({_hub_note(err)}). "
                         f"Fix: `{HOW_TO_GET}` on a machine with a network"
                         + (f" (unset {OFFLINE_ENV_VAR})" if offline() else ""))


def _check_against_hub(path: pathlib.Path, sha256: str, name: str, commit: str, *, fresh: bool) -> None:
    """A file read for the first time checked against the hub's own hash, which names its blob in the hub cache
    (an LFS file's SHA-256, else git's blob id). A mismatch is refused; a blob this call downloaded (``fresh``:
    a transfer damaged on the way) is not kept, one found in the hub cache is left for its owner to delete."""
    import re

    from .downloads import git_blob_id

    blob = pathlib.Path(os.path.realpath(path))
    if re.fullmatch(r"[0-9a-f]{64}", blob.name):
        ok = blob.name == sha256
    elif re.fullmatch(r"[0-9a-f]{40}", blob.name):
        ok = blob.name == git_blob_id(blob)
    else:  # a cache laid out otherwise: the hub's hash is not known here
        return
    if ok:
        return
    if fresh:
        blob.unlink()  # written by this call's download: a damaged transfer
        raise DataFileError(f"{name} downloaded from {REPOSITORY} at commit {commit[:10]} does not match the hub's "
                            f"hash {blob.name} (the transfer was damaged) and was not kept. Fix: run again "
                            f"(`{HOW_TO_GET}`)")
    raise DataFileError(f"{name} in the hub cache ({blob}) does not match the hub's hash {blob.name}: the copy is "
                        f"corrupt. Fix: delete {blob} and run again to download it afresh")


def _local(model: str, *, download: bool) -> tuple[pathlib.Path, str, str]:
    """(the verified local file of ``model``, the commit, its SHA-256), downloaded first when ``download``."""
    from huggingface_hub import errors, hf_hub_download

    name = file_name(model)
    download = download and not offline()
    lock = record_path().with_name(f".{record_path().stem}.lock")
    lock.parent.mkdir(parents=True, exist_ok=True)
    with file_lock(lock):
        rec = record()
        if rec is None:
            if not download:
                raise DataFileError(f"{name}: the follow-up's log-probabilities are not downloaded "
                                    f"({record_path()} does not exist) and "
                                    + (f"{OFFLINE_ENV_VAR}=1 forbids downloading them" if offline()
                                       else "this call does not download")
                                    + f". Fix: `{HOW_TO_GET}` on a machine with a network (about 2 GB)")
            rec = {"repository": REPOSITORY, "repo_type": _REPO_TYPE, "revision": REVISION, "commit": _resolve(),
                   "files": {}}
            _write_record(rec)
        commit = rec["commit"]
        fresh = False  # downloaded by this call (else found in the hub cache)
        try:
            try:
                path = hf_hub_download(REPOSITORY, name, repo_type=_REPO_TYPE, revision=commit, local_files_only=True)
            except errors.LocalEntryNotFoundError:
                if not download:
                    raise
                path, fresh = hf_hub_download(REPOSITORY, name, repo_type=_REPO_TYPE, revision=commit), True
        except errors.EntryNotFoundError as err:
            if isinstance(err, errors.LocalEntryNotFoundError):  # not in the hub cache, and not downloaded
                raise _not_here(name, commit, err) from None
            raise DataFileError(f"the dataset {REPOSITORY} at commit {commit[:10]} has no {name} "
                                f"({_hub_note(err)}): that model's log-probabilities were not released there; "
                                f"leave {model} out") from None
        except Exception as err:  # the transfer failed
            raise _not_here(name, commit, err) from None
        path = pathlib.Path(path)
        got = sha256sum(path)
        expected = rec["files"].get(name)
        if expected is None:
            _check_against_hub(path, got, name, commit, fresh=fresh)
            rec["files"][name] = got
            _write_record(rec)
        elif got != expected:
            raise DataFileError(
                f"{name} at {path} has SHA-256 {got}, not {expected} as recorded at its first download from "
                f"{REPOSITORY} at commit {commit[:10]}: the copy is corrupt or was replaced. Fix: delete "
                f"{os.path.realpath(path)} and run again to download it afresh")
        return path, commit, got


def _read_file(path: pathlib.Path, model: str, keys: list[str]) -> pd.DataFrame:
    header = pd.read_csv(path, nrows=0).columns.tolist()
    missing = [c for c in (*META_COLUMNS, *keys) if c not in header]
    if missing:
        raise DataFileError(f"{path}: missing columns {missing}; a log-probability file of the follow-up has "
                            f"{list(META_COLUMNS)} and one column per prompt key")
    raw = pd.read_csv(path, usecols=[*META_COLUMNS, *keys], keep_default_na=False, na_values={k: [""] for k in keys},
                      dtype={"token_id": "int64", "token_name": str, "token_decoded": str,
                             **{k: "float64" for k in keys}})
    long = raw.melt(id_vars=list(META_COLUMNS), value_vars=keys, var_name="prompt", value_name="score")
    long = long.rename(columns={"token_name": "token", "token_decoded": "decoded"})
    long.insert(0, "model", model)
    return long[list(LONG_COLUMNS)]


def read(models: Sequence[str] | str, prompts=None, *, download: bool = True) -> pd.DataFrame:
    """The released log-probabilities of ``models`` (hub ids of :data:`MODELS`) under ``prompts`` (prompt
    keys of the follow-up, e.g. ``"greatest_ever_one"``; None: all 54) as one long table, columns
    ``model, prompt, token_id, token, decoded, score`` (``score``: the log-probability; ``token``: the
    tokenizer's token string, ``decoded``: its decoded text), in file order.

    Downloads what is missing (``download=False`` or ``RMLIB_OFFLINE=1``: reads only what is here) and checks
    each file's SHA-256 against the one recorded at its first download. ``attrs["provenance"]``: one dict
    per file (``model_id``, ``source``, ``repository``, ``commit``, ``file``, ``sha256``, ``scorer``).
    """
    from .followup import prompt_keys

    models = [models] if isinstance(models, str) else list(models)
    if not models:
        raise InputError(f"no models given: name at least one of {list(MODELS)}")
    names = [file_name(m) for m in models]  # unknown models refused before any download
    keys = prompt_keys(prompts)
    parts, prov = [], []
    for model, name in zip(models, names):
        path, commit, sha = _local(model, download=download)
        parts.append(_read_file(path, model, keys))
        prov.append({"model_id": model, "scorer": "logprob", "scored_by": "released by the authors",
                     "source": f"https://huggingface.co/datasets/{REPOSITORY}/blob/{commit}",
                     "repository": REPOSITORY, "commit": commit, "file": name, "sha256": sha,
                     "model_type": MODELS[model]})
    out = pd.concat(parts, ignore_index=True)
    out.attrs = {"provenance": prov}
    return out


def status(models: Sequence[str] | None = None, *, download: bool = False) -> pd.DataFrame:
    """Which models' files (None: all 12) are here and pass their recorded SHA-256; ``download=True`` first
    downloads what is missing (not with ``RMLIB_OFFLINE=1``). Columns ``model, file, present, local,
    reason`` (``reason``: the one-line error when absent)."""
    models = list(MODELS) if models is None else list(models)
    for model in models:
        file_name(model)  # unknown models refused before any download
    rows = []
    for model in models:
        local, reason = None, ""
        try:
            local = _local(model, download=download)[0]
        except DataFileError as err:
            reason = str(err)
        rows.append({"model": model, "file": file_name(model), "present": local is not None, "local": local,
                     "reason": reason})
    return pd.DataFrame(rows, columns=["model", "file", "present", "local", "reason"])


def status_note(table: pd.DataFrame) -> str:
    """One sentence for a page: all present, or how many are not downloaded and how to get them."""
    missing = table.loc[~table["present"], "model"].tolist()
    if not missing:
        return (f"The follow-up's released log-probabilities of {len(table)} models are here (from {REPOSITORY}, "
                "SHA-256 checked against their first download).")
    how = f"unset {OFFLINE_ENV_VAR} and run `{HOW_TO_GET}`" if offline() else f"run `{HOW_TO_GET}`"
    return (f"{len(missing)} of the {len(table)} models' released log-probabilities ({REPOSITORY}, about 2 GB in all) "
            f"are not downloaded here, e.g. {missing[0]}: to use them, {how} on a machine with a network.")
