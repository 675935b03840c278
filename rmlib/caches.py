"""What rmlib's caches hold, and removing what the current code no longer reads (``python -m rmlib cache``).

Three places fill up (:mod:`rmlib.paths`):

* the user cache (``RMLIB_CACHE_DIR``, else ``~/.cache/rmlib``): de-quantized embedded models
  (``models/``, ``gguf/``), reward models trained here (``trained/<base>-<key>/``, up to 1 GB each)
  with their cached features (``trained/features/``), downloaded public data, and each tokenizer's token
  table and facts (``token-tables/``, ``tokenizer-facts/``: keyed by everything they depend on, listed,
  never pruned);
* the score store (``RMLIB_SCORES_DIR``, else ``data/scores``): score tables, their shards, text score
  tables (:func:`rmlib.tables.store.store_entry_kind` tells them by name);
* the result memo inside it (``memo/``): slow results computed from scores.

:func:`inventory` lists every entry with its size and, where the current code will never read it
again, why. The module that owns each kind of key decides that: :func:`rmlib.engine.embedded.stale_cache_reason`
(conversions), :func:`rmlib.training.trained.stale_reason` (trained models, features),
:func:`rmlib.tables.downloads.stale_download_reason` (downloads). Score tables and memo records are
keyed by everything they depend on and are listed, never pruned. :func:`prune` removes the stale
entries; an unfinished write younger than an hour may belong to a running process and is kept.

Only what rmlib's own naming produces can be stale. Anything else in those folders (a user's model
folder under ``models/``, another ``.gguf``, a README under ``trained/``, a CSV beside the downloads)
gets a :class:`rmlib.paths.Foreign` reason from its folder's owner: it is listed as not rmlib's and
never deleted.
"""

from __future__ import annotations

import dataclasses
import pathlib
import shutil
import time

from .paths import Foreign, cache_dir, scores_dir

#: The kind of an entry rmlib did not write (listed, kept).
FOREIGN = "not rmlib's (kept)"
#: An unfinished write (a ``.tmp`` name) younger than this may still be in progress.
IN_PROGRESS_S = 3600


@dataclasses.dataclass(frozen=True)
class CacheEntry:
    """One file or folder of a cache: where, what, how large, and why it is stale ("" if in use)."""

    cache: str  # "user cache", "score store" or "result memo"
    kind: str
    path: pathlib.Path
    size: int
    stale: str = ""
    foreign: str = ""  # why rmlib did not write it ("" if it did): never deleted


def size_of(path: pathlib.Path) -> int:
    """Bytes of a file, or of every file under a folder (links not followed)."""
    if path.is_symlink() or path.is_file():
        return path.lstat().st_size
    return sum(p.lstat().st_size for p in path.rglob("*") if p.is_symlink() or p.is_file())


def _entry(cache: str, kind: str, path: pathlib.Path, reason: str | None) -> CacheEntry:
    if isinstance(reason, Foreign):
        return CacheEntry(cache, FOREIGN, path, size_of(path), foreign=str(reason))
    unfinished = ".tmp" in path.name or path.name.startswith("tmp")
    if reason and unfinished and time.time() - path.lstat().st_mtime < IN_PROGRESS_S:
        reason = None  # perhaps still being written
    return CacheEntry(cache, kind, path, size_of(path), reason or "")


def _children(folder: pathlib.Path) -> list[pathlib.Path]:
    return sorted(folder.iterdir()) if folder.is_dir() else []


def _user_cache(root: pathlib.Path) -> list[CacheEntry]:
    from .engine.embedded import stale_cache_reason
    from .engine.token_tables import TOKEN_TABLES_FOLDER
    from .engine.tokenizer_facts import FACTS_FOLDER
    from .tables.downloads import download_folders, stale_download_reason
    from .training.trained import stale_reason

    out, known = [], {"models", "gguf", "trained"}
    for sub in ("models", "gguf"):
        out += [_entry("user cache", "de-quantized model", p, stale_cache_reason(p)) for p in _children(root / sub)]
    for sub, kind in ((TOKEN_TABLES_FOLDER, "token table"), (FACTS_FOLDER, "tokenizer facts")):
        known.add(sub)  # keyed by everything they depend on: listed, never pruned
        out += [_entry("user cache", kind, p, None) for p in _children(root / sub)]
    for p in _children(root / "trained"):
        if p.name == "features" and p.is_dir():
            out += [_entry("user cache", "training features", f, stale_reason(f)) for f in _children(p)]
        else:
            out.append(_entry("user cache", "trained reward model", p, stale_reason(p)))
    for top in download_folders():
        known.add(top)
        folder = root / top
        if folder.is_dir():
            out += [_entry("user cache", "download", f, stale_download_reason(f))
                    for f in sorted(folder.rglob("*")) if f.is_file()]
    scores = scores_dir().resolve()
    for p in _children(root):
        if p.name not in known and p.resolve() != scores:
            out.append(_entry("user cache", "other", p, Foreign("a folder rmlib does not write in its cache")))
    return out


def inventory() -> list[CacheEntry]:
    """Every entry of the user cache, the score store and the result memo, with its size and staleness."""
    from .tables.store import store_entry_kind

    out = _user_cache(cache_dir())
    store = scores_dir()
    for p in _children(store):
        if p.name == "memo" and p.is_dir():
            out += [_entry("result memo", "memo record", f, None) for f in _children(p)]
        else:  # rmlib's tables by their names (never stale); a user's file there is listed as not rmlib's
            kind = store_entry_kind(p)
            out.append(_entry("score store", FOREIGN, p, kind) if isinstance(kind, Foreign)
                       else _entry("score store", kind, p, None))
    return out


def prune(entries: list[CacheEntry]) -> int:
    """Delete the stale entries among ``entries``; return the bytes freed."""
    freed = 0
    for e in entries:
        if not e.stale or e.foreign:
            continue
        if e.path.is_dir() and not e.path.is_symlink():
            shutil.rmtree(e.path)
        else:
            e.path.unlink(missing_ok=True)
        freed += e.size
    return freed


def human(n: int) -> str:
    """Bytes in the largest unit that keeps the number at least 1 (``1.5 GB``)."""
    for unit in ("B", "kB", "MB", "GB"):
        if n < 1000 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1000
    return f"{n:.1f} GB"


def report(entries: list[CacheEntry], *, verbose: bool = False) -> list[str]:
    """Lines for the terminal: each cache's folder and total, then its kinds with count and size."""
    where = {"user cache": cache_dir(), "score store": scores_dir(), "result memo": scores_dir() / "memo"}
    lines = []
    for cache, folder in where.items():
        mine = [e for e in entries if e.cache == cache]
        lines.append(f"{cache:12} {folder}  {human(sum(e.size for e in mine))}")
        for kind in dict.fromkeys(e.kind for e in mine):
            these = [e for e in mine if e.kind == kind]
            stale = [e for e in these if e.stale]
            note = f"  ({len(stale)} no longer used: {human(sum(e.size for e in stale))})" if stale else ""
            lines.append(f"  {kind:22} {len(these):5}  {human(sum(e.size for e in these)):>9}{note}")
            if verbose:
                lines += [f"      {human(e.size):>9}  {e.path}" for e in these]
    return lines


def main(*, do_prune: bool = False, yes: bool = False, verbose: bool = False) -> int:
    """``python -m rmlib cache [--prune [--yes]] [-v]``: list; with ``--prune`` say (or, with ``--yes``,
    delete) what the current code no longer reads, and which entries are not rmlib's (always kept)."""
    entries = inventory()
    print("\n".join(report(entries, verbose=verbose)))
    stale = [e for e in entries if e.stale and not e.foreign]
    total = human(sum(e.size for e in stale))
    if do_prune:
        for e in entries:
            if e.foreign:
                print(f"keep         {human(e.size):>9}  {e.path}: {e.foreign}")
    if not stale:
        print("Nothing to prune: every entry is used by the current code.")
        return 0
    if not do_prune:
        print(f"{len(stale)} entries ({total}) are no longer used: `python -m rmlib cache --prune` lists them.")
        return 0
    for e in stale:
        print(f"{'delete' if yes else 'would delete'} {human(e.size):>9}  {e.path}: {e.stale}")
    if not yes:
        print(f"Dry run: {len(stale)} entries, {total}; nothing deleted. Add --yes to delete them.")
        return 0
    print(f"Deleted {len(stale)} entries, {human(prune(stale))} freed.")
    return 0
