"""Fetch and verify the pinned public files of :mod:`rmlib.tables.data_files`.

:func:`fetch` looks for a file in this order:

1. ``RMLIB_DATA_DIR``, when set: a folder of copies at the registry's
   relative paths (offline builds, tests, CI). A copy there that fails its
   hash is an error, never a cue to download: the folder is the user's to
   fix, and a silently different file is what the hash exists to catch.
2. The download cache (``RMLIB_CACHE_DIR`` if set, else ``~/.cache/rmlib``:
   :func:`rmlib.paths.cache_dir`), where earlier downloads were kept.
3. A download with :mod:`pooch` from the pinned URL (or from the mirror
   ``RMLIB_DATA_MIRROR`` names, :func:`download_url`) into that cache,
   checked against the pinned hash (SHA-256, or the git blob id
   :func:`git_blob_id`), started again when the transfer breaks off midway
   (:data:`DOWNLOAD_ATTEMPTS`; a partial file is never kept); unless ``RMLIB_OFFLINE=1``, where a file found in
   neither place is a :class:`~rmlib.errors.DataFileError` naming the file,
   the folders looked in and the fix.

Project material without an upstream URL (the transcribed Figure 2A matrix)
is read from ``RMLIB_DATA_DIR`` only. What is here without downloading:
:func:`local_copy`; per group of the papers' releases: :func:`paper_data_status`,
:func:`paper_data_note` (``python -m rmlib paper-data``). Nothing here reads a
file's contents beyond hashing it; nothing is unpickled.
"""

from __future__ import annotations

import hashlib
import os
import pathlib
import re
import urllib.parse
import zipfile

import pandas as pd

from ..errors import DataFileError, InputError
from ..files import atomic_write
from ..paths import DATA_ENV_VAR, MIRROR_ENV_VAR, OFFLINE_ENV_VAR, Foreign, cache_dir, data_dir, data_mirror, offline
from . import data_files
from .data_files import PAPER_COMMIT, PAPER_REPO, REGISTRY, DataFile

__all__ = ["DOWNLOAD_ATTEMPTS", "download_folders", "download_url", "fetch", "git_blob_id", "local_copy", "mirror_path",
           "paper_data_note", "paper_data_status", "remedy", "sha256sum", "stale_download_reason"]


def sha256sum(path: str | os.PathLike) -> str:
    """SHA-256 hex digest of a file, read in chunks."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def git_blob_id(data: bytes | str | os.PathLike) -> str:
    """git's blob id of some bytes (or of a file's bytes): ``sha1(b"blob <len>\\0" + data)``.

    Equal to ``git hash-object <file>`` (no filters).
    """
    if not isinstance(data, (bytes, bytearray)):
        data = pathlib.Path(data).read_bytes()
    h = hashlib.sha1(b"blob %d\0" % len(data))
    h.update(data)
    return h.hexdigest()


def _verify_git_blob(entry: DataFile, path: pathlib.Path) -> None:
    got = git_blob_id(path)
    if got != entry.git_blob:
        raise DataFileError(
            f"git blob id mismatch for {entry.name} at {path}: expected {entry.git_blob}, got {got}. "
            f"The file is corrupt, edited or another version; replace it with the pinned upstream file {entry.url}"
        )


def remedy(entry: DataFile, *, online: bool) -> str:
    """The fix for a file found nowhere: a copy in the data folder, or a download."""
    root = data_dir()
    put = (f"put the file at {root / entry.path}" if root is not None
           else f"set {DATA_ENV_VAR} to a folder that holds {entry.path!r}")
    if online:
        return (f"Fix: check the network (or {MIRROR_ENV_VAR}) and run again, or {put} "
                f"(upstream: {entry.url}).")
    return (f"Fix: {put} (upstream: {entry.url}), or unset {OFFLINE_ENV_VAR} on a machine with a network "
            "so that rmlib downloads and checks it.")


def _looked_in(entry: DataFile) -> str:
    root = data_dir()
    where = [f"{DATA_ENV_VAR} ({root / entry.path})" if root is not None else f"{DATA_ENV_VAR} (not set)",
             f"the download cache ({_cache_path(entry)})"]
    return " and ".join(where)


def _verify(entry: DataFile, path: pathlib.Path) -> pathlib.Path:
    if entry.git_blob is not None:
        _verify_git_blob(entry, path)
    if entry.sha256 is None:
        return path
    got = sha256sum(path)
    if got != entry.sha256:
        raise DataFileError(
            f"SHA-256 mismatch for {entry.name} at {path}: expected {entry.sha256}, "
            f"got {got}. The file is corrupt or a different version; replace it with "
            f"the pinned upstream file {entry.url}"
        )
    return path


def _extract_member(entry: DataFile, archive: pathlib.Path, dest: pathlib.Path) -> pathlib.Path:
    """Extract ``entry.member`` of a zip to ``dest`` (no pickles, plain bytes)."""
    with zipfile.ZipFile(archive) as zf:
        try:
            data = zf.read(entry.member)
        except KeyError:
            raise DataFileError(
                f"{archive} does not hold {entry.member!r} (needed for {entry.name})"
            ) from None
    return atomic_write(dest, data)


def fetch(name: str) -> pathlib.Path:
    """Local path of the registered file ``name``, verified against its pinned hash.

    Looked up in ``RMLIB_DATA_DIR`` (at the registry's relative path), then in
    the download cache; found in neither, downloaded with pooch into the cache
    (:func:`download_url`) and checked, unless ``RMLIB_OFFLINE=1``. For an
    archive-backed entry (the Bing lexicon), the data folder may instead hold
    the upstream archive, e.g. ``opinion_lexicon.zip``; then the member is
    returned from inside it (extracted into the download cache, never into the
    data folder).

    Raises :class:`DataFileError` on a hash mismatch in the data folder or of a
    download, on a file found nowhere in offline mode, or on a failed download;
    the message names the file, where it was looked for and the fix.
    """
    entry = data_files.entry(name)
    if not entry.url:
        return _fetch_local_only(entry, data_dir())
    found, problem = _in_data_dir(entry), ""
    if found is None:
        found, problem = _in_cache(entry)
    if found is not None:
        return found
    if offline():
        raise DataFileError(
            f"{entry.name}: {entry.path} is not here ({problem or 'looked in ' + _looked_in(entry)}) and "
            f"{OFFLINE_ENV_VAR}=1 forbids downloading it. " + remedy(entry, online=False)
        )
    return _download(entry)


def download_url(name: str | DataFile) -> str:
    """The URL a download of ``name`` reads: the pinned upstream URL, or its place on the mirror.

    With ``RMLIB_DATA_MIRROR=BASE`` (:func:`rmlib.paths.data_mirror`), a pinned
    ``https://HOST/PATH`` is read from ``BASE/HOST/PATH``; the pinned hash is
    checked either way.
    """
    entry = data_files.entry(name) if isinstance(name, str) else name
    mirror = data_mirror()
    if mirror is None:
        return entry.url
    parts = urllib.parse.urlsplit(entry.url)
    return f"{mirror}/{parts.netloc}{parts.path}"


def mirror_path(name: str | DataFile) -> str:
    """Where a mirror holds the download of ``name``: ``HOST/PATH`` of its pinned URL, unquoted.

    A mirror is any static file server over a folder laid out this way (what
    ``wget --force-directories`` writes); point ``RMLIB_DATA_MIRROR`` at it.
    For an archive-backed entry this is the archive's place.
    """
    entry = data_files.entry(name) if isinstance(name, str) else name
    parts = urllib.parse.urlsplit(entry.url)
    return parts.netloc + urllib.parse.unquote(parts.path)


def _archive_name(entry: DataFile) -> str:
    return urllib.parse.unquote(entry.url.rsplit("/", 1)[-1])


def _cache_path(entry: DataFile) -> pathlib.Path:
    """Where a download of ``entry`` is kept (the archive, for an archive-backed entry)."""
    rel = pathlib.PurePosixPath(entry.path)
    if entry.member is not None:
        rel = rel.parent / _archive_name(entry)
    return cache_dir().joinpath(*rel.parts)


def _extracted_path(entry: DataFile) -> pathlib.Path:
    return cache_dir() / "extracted" / entry.member


def download_folders() -> list[str]:
    """The top-level folders of the user cache that hold downloads of registered files."""
    tops = {pathlib.PurePosixPath(e.path).parts[0] for e in REGISTRY.values() if e.url}
    return sorted(tops | {"extracted"})


def stale_download_reason(path: str | os.PathLike) -> str | None:
    """None when ``path`` (a file in the user cache) is where a registered file's download is kept, else why
    nothing reads it again (for ``python -m rmlib cache --prune``): only an unfinished download (pooch's
    ``tmp*`` file beside a registered one, an extraction's ``.<name>.tmp-*``) is rmlib's; any other name is
    a :class:`rmlib.paths.Foreign` reason (kept)."""
    path = pathlib.Path(path)
    used = {_cache_path(e) for e in REGISTRY.values() if e.url}
    used |= {_extracted_path(e) for e in REGISTRY.values() if e.url and e.member is not None}
    record = cache_dir() / data_files.LOGPROBS_RECORD  # the log-probability dataset's record and its lock
    used |= {record, record.with_name(f".{record.stem}.lock")}
    if path in used:
        return None
    beside = [p.name for p in used if p.parent == path.parent]
    if beside and (re.fullmatch(r"tmp[a-z0-9_]{8}", path.name)
                   or any(path.name.startswith(f".{name}.tmp-") for name in beside)):
        return "an unfinished download (the process writing it stopped)"
    return Foreign("no registered file is downloaded under this name: not written by rmlib")


def _in_data_dir(entry: DataFile) -> pathlib.Path | None:
    """The copy in ``RMLIB_DATA_DIR``, verified (a mismatch raises), or None when it is not there."""
    root = data_dir()
    if root is None:
        return None
    path = root / entry.path
    if path.is_file():
        return _verify(entry, path)
    if entry.member is not None:
        archive = _archive_name(entry)
        for cand in (root / archive, root / pathlib.Path(entry.path).parent / archive):
            if cand.is_file():
                return _extract_member(entry, cand, _extracted_path(entry))
    return None


def _in_cache(entry: DataFile) -> tuple[pathlib.Path | None, str]:
    """(the verified copy in the download cache or None, why a copy there was not used)."""
    path = _cache_path(entry)
    if not path.is_file():
        return None, ""
    if entry.member is not None:
        if entry.url_sha256 is not None and sha256sum(path) != entry.url_sha256:
            return None, f"the archive in the download cache ({path}) fails its SHA-256 check"
        return _extract_member(entry, path, _extracted_path(entry)), ""
    try:
        return _verify(entry, path), ""
    except DataFileError as err:
        return None, f"the copy in the download cache fails its hash check: {err}"


def _download(entry: DataFile) -> pathlib.Path:
    import logging

    import pooch

    from ..progress import enabled as progress_enabled

    dest = _cache_path(entry)
    again, _ = _in_cache(entry)
    if again is not None:  # another process downloaded it meanwhile
        return again
    dest.unlink(missing_ok=True)  # a copy that failed its check: pooch keeps files it cannot check
    url = download_url(entry)
    known = entry.url_sha256 if entry.member is not None else entry.sha256
    logger = pooch.get_logger()
    level = logger.level
    logger.setLevel(logging.WARNING)  # pooch says each download at INFO; a chapter page should not show it
    try:
        for attempt in range(1, DOWNLOAD_ATTEMPTS + 1):
            try:  # pooch streams into a temporary file beside dest, removed when the transfer or the check fails
                got = pooch.retrieve(url=url, known_hash=None if known is None else f"sha256:{known}",
                                     fname=dest.name, path=dest.parent, progressbar=progress_enabled())
                break
            except Exception as e:
                if attempt == DOWNLOAD_ATTEMPTS or not _interrupted(e):
                    raise
    except ValueError as e:  # pooch: the download's SHA-256 is not the pinned one (the file is not kept)
        raise DataFileError(
            f"{entry.name}: the file downloaded from {url} fails its SHA-256 check and was not kept ({e}). "
            f"The server sent another file than the pinned one: refresh the mirror's copy if {MIRROR_ENV_VAR} "
            f"is set, else put the pinned file at {DATA_ENV_VAR}/{entry.path}."
        ) from None
    except Exception as e:  # network errors of any kind (requests, OSError, ...)
        raise DataFileError(
            f"could not download {entry.name} ({entry.path}) from {url}: {type(e).__name__}: {e}. "
            + remedy(entry, online=True)
        ) from e
    finally:
        logger.setLevel(level)
    path = pathlib.Path(got)
    if entry.member is not None:
        return _extract_member(entry, path, _extracted_path(entry))
    if entry.git_blob is not None:
        try:
            _verify_git_blob(entry, path)
        except DataFileError as e:
            path.unlink(missing_ok=True)
            raise DataFileError(f"{e} (downloaded from {url}; the download was not kept)") from None
    return path


#: How many times a download cut off midway (the connection dropped, a body shorter than announced) is started.
DOWNLOAD_ATTEMPTS = 3


def _interrupted(err: Exception) -> bool:
    """A transfer that broke off (worth starting again), not a refusal (404, a hash mismatch)."""
    import requests

    return isinstance(err, (requests.exceptions.ChunkedEncodingError, requests.exceptions.ConnectionError,
                            requests.exceptions.Timeout))


def _fetch_local_only(entry: DataFile, root: pathlib.Path | None) -> pathlib.Path:
    """Project material without an upstream URL: read from the data folder, never downloaded."""
    path = None if root is None else root / entry.path
    if path is not None and path.is_file():
        return _verify(entry, path)
    raise DataFileError(
        f"{entry.name}: {entry.path} is project material (no upstream URL) and was not found "
        f"({'looked at ' + str(path) if path else DATA_ENV_VAR + ' not set'}). Either set {DATA_ENV_VAR} to the "
        "folder that holds it, or pass its path explicitly."
    )


def local_copy(entry: DataFile) -> pathlib.Path | None:
    """The verified local copy of ``entry`` (data folder or download cache), without any download."""
    try:
        if not entry.url:
            return fetch(entry.name)
        return _in_data_dir(entry) or _in_cache(entry)[0]
    except DataFileError:
        return None


def _absent_reason(entry: DataFile) -> str:
    """"" when ``entry`` is here and verified, else one line: why not, and the fix (never downloads)."""
    try:
        if not entry.url:
            fetch(entry.name)
            return ""
        if _in_data_dir(entry) is not None:
            return ""
    except DataFileError as err:
        return str(err)
    cached, problem = _in_cache(entry)
    if cached is not None:
        return ""
    if offline():
        try:
            fetch(entry.name)  # offline: raises the one-line error naming the folders and the fix
        except DataFileError as err:
            return str(err)
    return (f"{entry.name}: {entry.path} is not downloaded yet ({problem or 'looked in ' + _looked_in(entry)}); "
            "it is downloaded on first use, or now with `python -m rmlib paper-data --download`.")


def paper_data_status(groups=None, *, download: bool = False) -> pd.DataFrame:
    """Which of the paper's released files are here: one row per file.

    ``groups``: any of ``"token_scores"``, ``"base_logits"``,
    ``"published_tables"``, ``"published_figures"`` and the
    follow-up study's :data:`FOLLOWUP_GROUPS` (None: all). ``download=False`` only looks (``RMLIB_DATA_DIR``,
    then the download cache); ``download=True`` downloads what is missing (:func:`fetch`; not with
    ``RMLIB_OFFLINE=1``). A file counts as present only when its hash (SHA-256
    or git blob id) checks out.

    Columns ``name, group, path, present, local, reason``: ``local`` is the
    verified local path or None, ``reason`` the one-line error when absent.
    See :func:`paper_data_note` for one sentence a chapter can print.
    """
    all_groups = tuple(dict.fromkeys(e.group for e in REGISTRY.values() if e.group))
    if groups is None:
        groups = all_groups
    elif isinstance(groups, str):
        groups = (groups,)
    bad = [g for g in groups if g not in all_groups]
    if bad:
        raise InputError(f"unknown groups {bad}; choose from {list(all_groups)}")
    rows = []
    for e in REGISTRY.values():
        if e.group not in groups:
            continue
        local, reason = None, ""
        if download:
            try:
                local = fetch(e.name)
            except DataFileError as err:
                reason = str(err)
        else:
            local = local_copy(e)
            if local is None:
                reason = _absent_reason(e)
        rows.append({"name": e.name, "group": e.group, "path": e.path, "present": local is not None,
                     "local": local, "reason": reason})
    return pd.DataFrame(rows, columns=["name", "group", "path", "present", "local", "reason"])


def paper_data_note(status: pd.DataFrame, fallback: str = "the data here") -> str:
    """One sentence for a chapter: all present, or what is missing and what it goes on with."""
    missing = status.loc[~status["present"]]
    if missing.empty:
        return f"All {len(status)} of the paper's released files needed here are present (hashes checked)."
    groups = ", ".join(dict.fromkeys(missing["group"]))
    homes = [_repo_at_commit(REGISTRY[n].url) for n in missing["name"] if n in REGISTRY and REGISTRY[n].url]
    homes = list(dict.fromkeys(h for h in homes if h)) or [f"{PAPER_REPO} at commit {PAPER_COMMIT[:7]}"]
    how = (f"unset {OFFLINE_ENV_VAR} on a machine with a network" if offline()
           else "run `python -m rmlib paper-data --download`")
    return (
        f"{len(missing)} of {len(status)} files of the paper's data ({groups}) are not here, so this chapter goes on "
        f"with {fallback}. To use the paper's own data, {how} (they download from "
        f"{' and '.join(homes)}) or set {DATA_ENV_VAR} to a folder that holds them "
        f"(e.g. {missing['path'].iloc[0]})."
    )


def _repo_at_commit(url: str) -> str | None:
    """``"owner/repo at commit abc1234"`` for a raw.githubusercontent.com URL, else None."""
    parts = url.split("raw.githubusercontent.com/", 1)[-1].split("/") if "raw.githubusercontent.com/" in url else []
    return f"{parts[0]}/{parts[1]} at commit {parts[2][:7]}" if len(parts) > 3 else None
