"""Score tables on disk: Parquet with provenance, sharded, atomic, resumable.

One table per (model, revision, prompt, chat template, mode, dtype, scorer):
``<cache>/<stem>.parquet``, where the stem carries a hash of those facts. While
a run goes, it writes shards ``<cache>/<stem>.shards/shard-<k>.parquet``, one
per block of ``SHARD_SIZE`` vocabulary ids, each written to a temporary file and
renamed into place (atomic). A sparse request (a stated subset: a few ids per
block) is scored a block's worth of ids at a time: the blocks a run has locked
are pooled into one scoring call, so that its forwards are full, and then written
shard by shard. A run that is killed, even with ``kill -9``, loses at most the
shards it was writing; the next run reads every valid shard and
computes only what is missing, so it ends with exactly the table an
uninterrupted run gives. Exactly: a token's score does not depend on the other
ids scored with it (:meth:`rmlib.engine.scorers.Scorer.token_scores` puts each
at a fixed place of a fixed-size forward), and the layout record keeps the
thread count and forward size the table was started with, which every later
run that adds to it uses (a warning says so when it was asked for others). A
slice scored first and the rest later, or a run resumed at another
``--threads``, give the table one uninterrupted run gives, bit for bit. A shard that cannot be read, belongs to other
facts (foreign), or holds ids outside its block, text that is not UTF-8 or
non-finite scores is never read as data: it is recomputed. Two runs on the same
output take turns per shard (file locks) and never see half-written files.

Integrity. The shard folder's layout record (``layout.json``) holds the shard
size and the SHA-256 of every shard and of the merged table, recorded as each is
written. A file whose bytes no longer match its checksum (one flipped bit on
disk, an edit) is recomputed (a shard) or rebuilt from its shards (the table),
with a warning naming the file. A store written before checksums were recorded
keeps working: its shards are checked as before (readable, UTF-8, ids, finite
scores) and their checksums recorded the first time they are read that way; its
merged table gets one the next time a run merges it.

Under ``torchrun`` the blocks are split across ranks; rank 0 merges.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import pathlib
import re
import warnings

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from .. import __version__
from ..engine.threads import pinned_threads
from ..errors import CacheError, InputError, Interrupted
from ..files import atomic_path, atomic_write, check_output_path, file_lock, write_failure
from ..options import MODES, SCORER_KINDS
from ..paths import Foreign, scores_dir
from ..prompts import PAPER_PROMPTS
from .schema import SCORE_COLUMNS
from .token_csv import read_token_csv

SHARD_SIZE = 4096
COLUMNS = SCORE_COLUMNS
META_KEY = b"rmlib"
# The facts that make two tables the same table. The forward (transformers' or rmlib's lite one) is one:
# the two agree only to float32 rounding, and in bfloat16 to bfloat16's, so a table is finished by the forward
# that started it.
KEY_FIELDS = ("model_id", "revision", "dtype", "scorer", "score_from", "mode", "prompt", "chat_template",
              "prefix_ids", "suffix_ids", "reference_model_id", "reference_revision", "reference_dtype",
              "scoring_revision", "forward")



def table_key(provenance: dict) -> str:
    facts = {k: provenance.get(k) for k in KEY_FIELDS}
    return hashlib.sha256(json.dumps(facts, sort_keys=True).encode()).hexdigest()[:16]


def table_stem(provenance: dict) -> str:
    slug = re.sub(r"[^A-Za-z0-9._-]+", "-", str(provenance["model_id"])).strip("-")[:60]
    return f"{slug}__{provenance['scorer']}__{provenance['mode']}__{table_key(provenance)}"


#: The names score_vocabulary and score_texts give what they write in a score folder (:func:`table_stem` and a
#: suffix), each also as an unfinished write (``.NAME.tmp-XXXX``, :func:`rmlib.files.atomic_path`).
STORE_KINDS = {".parquet": "score table", ".shards": "score table shards", "__texts.parquet": "text score table",
               "__texts.parquet.lock": "lock file"}
#: The folder ``rmlib import-paper-csv`` writes into by default.
IMPORTED_FOLDER = "imported"
_STORE_NAME = re.compile(r"\.?[A-Za-z0-9._-]*__(?:" + "|".join(SCORER_KINDS) + ")__(?:" + "|".join(MODES)
                         + r")__[0-9a-f]+(?P<suffix>" + "|".join(re.escape(k) for k in
                                                               sorted(STORE_KINDS, key=len, reverse=True))
                         + r")(?:\.tmp-[^/]*)?")


def store_entry_kind(path) -> str | Foreign:
    """What an entry at the top of a score folder is, told by the names rmlib's store gives
    (:data:`STORE_KINDS`, :data:`IMPORTED_FOLDER`; a Parquet file under another name that holds rmlib's
    record is a score table copied there); anything else, a :class:`rmlib.paths.Foreign` reason (a user's
    file: ``rmlib cache`` lists it as not rmlib's, and never deletes it)."""
    path = pathlib.Path(path)
    if path.name == IMPORTED_FOLDER and path.is_dir() and not path.is_symlink():
        return "imported score tables"
    named = _STORE_NAME.fullmatch(path.name)
    if named and (path.is_dir() and not path.is_symlink()) == (named["suffix"] == ".shards"):
        return STORE_KINDS[named["suffix"]]
    if path.suffix == ".parquet" and path.is_file() and not path.is_symlink() and is_score_table(path):
        return "score table"
    what = "folder" if path.is_dir() and not path.is_symlink() else "file"
    return Foreign(f"a {what} rmlib does not write in its score store")


def atomic_write_table(df: pd.DataFrame, path: pathlib.Path, provenance: dict) -> str:
    """Write a score table with its provenance: a temp file in the same folder, then rename.
    Returns the SHA-256 of the bytes written."""
    path = pathlib.Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    table = pa.Table.from_pandas(df.reset_index(drop=True), preserve_index=False)
    meta = dict(table.schema.metadata or {})
    meta[META_KEY] = json.dumps({"key": table_key(provenance), "provenance": provenance}).encode()
    table = table.replace_schema_metadata(meta)
    try:
        with atomic_path(path) as tmp:
            pq.write_table(table, tmp)
            digest = hashlib.sha256(tmp.read_bytes()).hexdigest()
        return digest
    except OSError as err:
        raise _write_error(path.parent, err) from err


def _write_error(folder: pathlib.Path, err: OSError, out: pathlib.Path | None = None) -> CacheError:
    """A failed write as one line: which folder, why, and that what was finished is kept (``out``: the
    failed write was the copy of a finished table to ``--out``, which the fix names instead of the cache)."""
    why = write_failure(err)
    if out is not None:
        return CacheError(f"--out {out}: cannot write in {folder}: {why or err.strerror or err}; the table is complete "
                          "in the score cache, so the same command with another --out (or after freeing space) "
                          "writes it without scoring again")
    if why == "the disk is full":
        fix = "free space there or pass another --cache-dir / RMLIB_SCORES_DIR"
    elif why == "it is not writable":
        fix = "pass a writable --cache-dir (or set RMLIB_SCORES_DIR)"
    else:
        why, fix = f"{err.strerror or err}", "check the folder"
    return CacheError(f"cannot write in {folder}: {why}; finished shards and tables already there are kept; {fix}")


def check_shard_size(shard_size) -> int:
    if isinstance(shard_size, bool) or not isinstance(shard_size, (int, np.integer)) or shard_size < 1:
        raise InputError(f"shard size must be a positive whole number of tokens, not {shard_size!r} "
                         f"(default {SHARD_SIZE})")
    return int(shard_size)


def _finished(final: pathlib.Path, key: str, ids: np.ndarray) -> pd.DataFrame | None:
    """The finished table when it holds every wanted id (read with no lock: atomic renames), else None.
    A table whose bytes differ from the checksum recorded when it was merged is rebuilt from its shards."""
    if not final.is_file():
        return None
    try:
        data = final.read_bytes()
        recorded = _layout_record(_shard_dir_of(final)).get(TABLE_SHA256)
        if recorded and hashlib.sha256(data).hexdigest() != recorded:
            # a run may have renamed a new table into place and not yet recorded its checksum: look again
            data, recorded = final.read_bytes(), _layout_record(_shard_dir_of(final)).get(TABLE_SHA256)
            if hashlib.sha256(data).hexdigest() != recorded:
                warnings.warn(f"rebuilding {final.name} from its shards: its checksum differs from the one recorded "
                              "when it was written (the file changed on disk)", stacklevel=3)
                return None
        table = _as_frame(_read_parquet(data))
    except Exception:  # truncated, not Parquet, or text that is not UTF-8: the shards rebuild it
        return None
    if table_key(table.attrs.get("provenance", {})) != key or tuple(table.columns) != COLUMNS:
        return None
    if not np.isin(ids, table["token_id"].to_numpy()).all():
        return None
    return table


LAYOUT = "layout.json"
#: Keys of the layout record: each shard's checksum (file name -> SHA-256), and the merged table's.
SHARD_SHA256, TABLE_SHA256 = "sha256", "table_sha256"
#: Keys of the layout record: the torch threads and the candidates per forward (``token_slots``) the table's
#: scores are computed with; every run that adds to the table uses them (float sums depend on both).
THREADS, SLOTS = "threads", "token_slots"


def _shard_dir_of(final: pathlib.Path) -> pathlib.Path:
    return final.with_suffix(".shards")


def _layout_record(shard_dir: pathlib.Path) -> dict:
    """The layout record of a shard folder ({} when there is none or it cannot be read)."""
    try:
        record = json.loads((shard_dir / LAYOUT).read_text())
    except (OSError, ValueError):
        return {}
    return record if isinstance(record, dict) else {}


def _update_layout(shard_dir: pathlib.Path, shard_size: int | None = None, shards: dict | None = None,
                   table: str | None = None) -> None:
    """Change the layout record under its lock, atomically (readers never see half a record)."""
    with file_lock(shard_dir / "layout.lock", blocking=True):
        record = _layout_record(shard_dir)
        if shard_size is not None:
            record["shard_size"] = shard_size
        if shards:
            record[SHARD_SHA256] = {**record.get(SHARD_SHA256, {}), **shards}
        if table is not None:
            record[TABLE_SHA256] = table
        atomic_write(shard_dir / LAYOUT, json.dumps(record))


def _batching(shard_dir: pathlib.Path, threads: int, slots: int | None) -> tuple[int, int | None]:
    """The (threads, candidates per forward) this table's scores are computed with: the ones recorded when
    it was started, else ``threads`` and ``slots`` (recorded now). A run asked for others gets the
    recorded ones, so that a table added to by many runs equals one scored in one go."""
    with file_lock(shard_dir / "layout.lock", blocking=True):
        record = _layout_record(shard_dir)
        if THREADS not in record:
            record.update({THREADS: threads, SLOTS: slots})
            atomic_write(shard_dir / LAYOUT, json.dumps(record))
    recorded = (int(record[THREADS]), record.get(SLOTS))
    if recorded != (threads, slots):
        warnings.warn(f"{shard_dir.name} was started with {recorded[0]} thread(s) and {recorded[1]} candidates per "
                      f"forward: its missing scores are computed so too (not with {threads} and {slots}), so that "
                      "the table equals one scored in one go", stacklevel=3)
    return recorded


def _shard_layout(shard_dir: pathlib.Path, shard_size: int) -> int:
    """The shard size of this shard folder: the one it was started with (recorded), never a new one.

    A folder of shards is cut into blocks of one size; reading it with another would
    drop or overwrite finished shards. A folder from before the size was recorded is
    checked against its shards' ids.
    """
    path = shard_dir / LAYOUT
    if path.is_file():
        try:
            recorded = int(_layout_record(shard_dir)["shard_size"])
        except (ValueError, KeyError, TypeError):
            recorded = None
        if recorded and recorded != shard_size:
            warnings.warn(f"{shard_dir.name} was started with shard size {recorded}: using {recorded}, "
                          f"not {shard_size}, so finished shards are kept", stacklevel=3)
        if recorded:
            return recorded
    shards = sorted(shard_dir.glob("shard-*.parquet"))
    if shards:
        for size in dict.fromkeys((shard_size, SHARD_SIZE, *(2 ** k for k in range(21)))):
            if all(_fits(p, size) for p in shards):
                break
        else:
            raise CacheError(f"the shards in {shard_dir} were written with another shard size than {shard_size} "
                             f"and it cannot be told which: rerun with the --shard-size of the first run, or delete "
                             f"{shard_dir} to start over")
        if size != shard_size:
            warnings.warn(f"{shard_dir.name} holds shards of size {size}: using {size}, not {shard_size}",
                          stacklevel=3)
        shard_size = size
    _update_layout(shard_dir, shard_size=shard_size)
    return shard_size


def _fits(path: pathlib.Path, size: int) -> bool:
    try:
        block = int(path.stem.split("-")[1])
        ids = pq.read_table(path, columns=["token_id"]).column(0).to_numpy()
    except Exception:  # unreadable shards are recomputed anyway
        return True
    return len(ids) == 0 or (ids.min() >= block * size and ids.max() < (block + 1) * size)


def load_scores(path) -> pd.DataFrame:
    """Read a score table; its provenance is in ``df.attrs['provenance']``."""
    return _as_frame(pq.read_table(path))


def _as_frame(table: pa.Table) -> pd.DataFrame:
    meta = json.loads((table.schema.metadata or {}).get(META_KEY, b"{}"))
    df = table.to_pandas()
    df.attrs["provenance"] = meta.get("provenance", {})
    return df


def _read_parquet(data: bytes) -> pa.Table:
    """A score table from its file's bytes, fully validated (a string that is not UTF-8 is an error)."""
    table = pq.read_table(pa.BufferReader(data))
    table.validate(full=True)
    return table


def _valid_shard(path: pathlib.Path, key: str, block: int, size: int,
                 recorded: str | None) -> tuple[pd.DataFrame | None, str | None]:
    """The shard's rows and checksum, or (None, None) after a warning when it must be recomputed: it
    fails the checks (the warning says which), or its bytes differ from the ``recorded`` checksum
    (None: none recorded yet)."""
    why, digest = None, None
    try:
        data = path.read_bytes()
        digest = hashlib.sha256(data).hexdigest()
        table = _read_parquet(data)
        meta = json.loads((table.schema.metadata or {}).get(META_KEY, b"{}"))
        df = table.to_pandas()
    except Exception as err:  # truncated, empty, not Parquet, not UTF-8
        why = f"unreadable or invalid ({type(err).__name__})"
    else:
        ids = df["token_id"].to_numpy() if "token_id" in df else np.array([])
        if meta.get("key") != key:
            why = "foreign (written for other model/prompt/template/mode)"
        elif tuple(df.columns) != COLUMNS:
            why = f"wrong columns {list(df.columns)}"
        elif len(ids) == 0 or ids.min() < block * size or ids.max() >= (block + 1) * size:
            why = "ids outside its block"
        elif not np.all(np.diff(ids) > 0):
            why = "ids not sorted and unique"
        elif not np.isfinite(df["score"].to_numpy()).all():
            why = "non-finite scores"
        elif recorded and digest != recorded:  # sound on its face, yet not the bytes that were written
            why = "its checksum differs from the one recorded when it was written (the file changed on disk)"
    if why:
        warnings.warn(f"recomputing shard {path.name} of {path.parent.name}: {why}", stacklevel=3)
        return None, None
    return df, digest


def _dist():
    try:
        import torch.distributed as dist
    except ImportError:  # pragma: no cover
        return None
    return dist if dist.is_available() and dist.is_initialized() else None


def score_vocabulary(scorer, prompt: str, token_ids=None, *, mode: str = "token", cache_dir=None,
                     shard_size: int = SHARD_SIZE, progress: bool = True, out=None, wait: bool = True):
    """Score token ids (the whole vocabulary by default) through the on-disk cache.

    Returns the table (columns ``token_id, token, decoded, score``, sorted by id)
    for the requested ids; ``out`` also writes it to that Parquet file. With ``wait=False`` a run
    that has scored every block it could lock, while another run still holds blocks this request
    needs, returns None instead of waiting for them: the caller scores something else meanwhile and
    asks again (the table is the same whichever run scored which block).
    """
    shard_size = check_shard_size(shard_size)
    ids = np.unique(scorer.token_ids(token_ids))
    slots = scorer.token_slots(prompt, mode)
    prov = scorer.provenance(prompt, mode)
    key, stem = table_key(prov), table_stem(prov)
    root = pathlib.Path(cache_dir) if cache_dir else scores_dir()
    final, shard_dir = root / f"{stem}.parquet", root / f"{stem}.shards"
    if out is not None:
        check_table_output(out)
    dist = _dist()
    done = _finished(final, key, ids) if dist is None else None
    if done is not None:  # a finished table: read it, no lock, no write (works on a read-only cache)
        return _result(done, ids, prov, out)
    try:
        shard_dir.mkdir(parents=True, exist_ok=True)
        shard_size = _shard_layout(shard_dir, shard_size)
        import torch

        threads, slots = _batching(shard_dir, torch.get_num_threads(), slots)
    except OSError as err:
        raise _write_error(shard_dir.parent if not shard_dir.exists() else shard_dir, err) from err
    try:
        with pinned_threads(threads):
            return _score_blocks(scorer, prompt, ids, prov, mode, shard_dir, final, shard_size, progress, out, dist,
                                 slots, wait or dist is not None)
    except KeyboardInterrupt:
        saved = len(list(shard_dir.glob("shard-*.parquet")))
        raise Interrupted(f"interrupted: {saved} finished shard(s) of {prov['model_id']} are saved in {shard_dir}; "
                          "run the same command again to resume from them") from None


def is_score_table(path) -> bool:
    """Whether the file at ``path`` is a score table rmlib wrote (its Parquet schema holds rmlib's record):
    the one kind of file ``--out`` of ``rmlib score`` and ``score_vocabulary(out=...)`` replaces."""
    try:
        return META_KEY in (pq.read_schema(path).metadata or {})
    except (OSError, ValueError, pa.ArrowException):
        return False


def check_table_output(out) -> pathlib.Path:
    """``out``: where a finished score table may be written (:func:`rmlib.files.check_output_path`)."""
    return check_output_path(out, ".parquet", ours=is_score_table, kind="a score table")


def _result(table: pd.DataFrame, ids: np.ndarray, prov: dict, out) -> pd.DataFrame:
    result = table[table["token_id"].isin(ids)].reset_index(drop=True)
    result.attrs["provenance"] = prov
    if out is not None:
        try:
            atomic_write_table(result, pathlib.Path(out), prov)
        except CacheError as err:
            cause = err.__cause__
            if not isinstance(cause, OSError):
                raise
            raise _write_error(pathlib.Path(out).parent, cause, out=pathlib.Path(out)) from cause
    return result


def _score_blocks(scorer, prompt, ids, prov, mode, shard_dir, final, shard_size, progress, out, dist, slots, wait):
    from ..progress import bar as progress_bar

    key = table_key(prov)
    rank, world = (dist.get_rank(), dist.get_world_size()) if dist else (0, 1)

    blocks = np.unique(ids // shard_size)
    mine = [int(b) for b in blocks if b % world == rank]
    wanted = {int(b): ids[ids // shard_size == b] for b in mine}
    bar = progress_bar(int(sum(len(v) for v in wanted.values())), progress=progress and rank == 0,
                       unit="tok", desc=f"scoring {prov['model_id']}")

    def write(group: dict) -> None:  # block -> (its shard as read, the ids it still needs): one scoring call
        need = np.concatenate([n for _, n in group.values()]) if group else np.empty(0, dtype=np.int64)
        part = scorer.token_table(need, scorer.token_scores(prompt, need, mode=mode, slots=slots), prov) \
            if len(need) else None
        for b, (have, n) in group.items():
            if len(n):
                path = shard_dir / f"shard-{b:06d}.parquet"
                mine_rows = part[part["token_id"].isin(n)]
                rows = mine_rows if have is None else pd.concat([have, mine_rows]).sort_values("token_id")
                digest = atomic_write_table(rows[list(COLUMNS)], path, prov)
                _update_layout(shard_dir, shards={path.name: digest})
            bar.update(len(wanted[b]))

    def open_block(b: int, stack: contextlib.ExitStack, blocking: bool):
        """The block's lock (held until ``stack`` closes) and what it still needs; None when another run
        holds it and ``blocking`` is False."""
        if not stack.enter_context(file_lock(shard_dir / f"shard-{b:06d}.lock", blocking)):
            return None
        path = shard_dir / f"shard-{b:06d}.parquet"
        have = _checked_shard(shard_dir, path, key, b, shard_size) if path.exists() else None
        return have, (wanted[b] if have is None else np.setdiff1d(wanted[b], have["token_id"].to_numpy()))

    # Sparse requests (a stated subset) leave most places of a forward empty within one block, so the
    # blocks whose locks this run gets are pooled until they need ``shard_size`` ids, scored in one call,
    # then written block by block. Exact: a token's place, hence its score, depends on its id alone.
    # Locks are only ever waited for one at a time with nothing else held (no deadlock between runs).
    skipped, pending = [], list(mine)
    while pending:
        with contextlib.ExitStack() as stack:
            group = {}
            while pending and sum(len(n) for _, n in group.values()) < shard_size:
                b = pending.pop(0)
                opened = open_block(b, stack, blocking=False)
                if opened is None:  # another run holds it: come back
                    skipped.append(b)
                else:
                    group[b] = opened
            write(group)
    if not wait:  # once more without waiting: blocks another run finished meanwhile need nothing
        held = []
        for b in skipped:
            with contextlib.ExitStack() as stack:
                opened = open_block(b, stack, blocking=False)
                if opened is None:
                    held.append(b)
                else:
                    write({b: opened})
        if held:
            bar.close()
            return None
        skipped = []
    for b in skipped:
        with contextlib.ExitStack() as stack:
            write({b: open_block(b, stack, blocking=True)})
    bar.close()
    if dist:
        dist.barrier()
    if rank == 0:
        _merge(shard_dir, final, key, shard_size, prov)
    if dist:
        dist.barrier()
    return _result(load_scores(final), ids, prov, out if rank == 0 else None)


def score_texts(scorer, prompt: str, texts, *, mode: str = "token", cache_dir=None, chunk: int = 512,
                progress: bool = True) -> pd.DataFrame:
    """Score texts as whole responses through the on-disk cache (columns ``text, score``).

    One table per (model, revision, prompt, template, mode, dtype, scorer) holds
    every text scored so far (``<stem>__texts.parquet``); only texts not in it
    are scored, in chunks, and the table is rewritten atomically after each
    chunk, so an interrupted run keeps what it finished. The table records the
    thread count it was started with, which every run that adds to it uses, and
    a text's score never depends on the other texts of a call
    (:meth:`Scorer.score_texts`), so a table grown in steps equals one scored in
    one go, bit for bit.
    """
    import torch

    from ..progress import bar as progress_bar

    texts = list(texts)
    prov = scorer.provenance(prompt, mode)
    root = pathlib.Path(cache_dir) if cache_dir else scores_dir()
    path = root / f"{table_stem(prov)}__texts.parquet"
    have = pd.DataFrame({"text": pd.Series(dtype=str), "score": pd.Series(dtype=np.float64)})
    if path.exists():
        try:
            cached = load_scores(path)
            meta_ok = table_key(cached.attrs.get("provenance", {})) == table_key(prov)
        except Exception as err:  # truncated or not Parquet: recompute
            warnings.warn(f"recomputing text scores {path.name}: unreadable ({type(err).__name__})", stacklevel=2)
        else:
            if meta_ok and list(cached.columns) == ["text", "score"] and np.isfinite(cached["score"]).all():
                have = cached
            else:
                warnings.warn(f"recomputing text scores {path.name}: foreign or invalid table", stacklevel=2)
    known = set(have["text"])
    missing = list(dict.fromkeys(t for t in texts if t not in known))
    threads = int(have.attrs.get("provenance", {}).get(THREADS) or torch.get_num_threads())
    prov = {**prov, THREADS: threads}  # recorded beside the key's facts (not part of the key)
    if missing:
        try:
            root.mkdir(parents=True, exist_ok=True)  # a fresh checkout has no data/scores yet
        except OSError as err:
            raise _write_error(root, err) from err
    bar = progress_bar(len(missing), progress=progress and bool(missing), unit="text", desc="scoring texts")
    for start in range(0, len(missing), chunk):
        with pinned_threads(threads):
            part = scorer.score_texts(prompt, missing[start:start + chunk], mode=mode)
        with file_lock(root / f"{path.name}.lock", blocking=True):
            if path.exists():  # another run may have added texts meanwhile
                with contextlib.suppress(Exception):
                    newer = load_scores(path)
                    if table_key(newer.attrs.get("provenance", {})) == table_key(prov):
                        have = pd.concat([newer, have]).drop_duplicates("text")
            have = pd.concat([have, part[["text", "score"]]]).drop_duplicates("text").reset_index(drop=True)
            atomic_write_table(have, path, prov)
        bar.update(len(part))
    bar.close()
    out = have.set_index("text").loc[texts].reset_index()
    out.attrs["provenance"] = prov
    return out


def _merge(shard_dir: pathlib.Path, final: pathlib.Path, key: str, shard_size: int, prov: dict) -> None:
    with file_lock(shard_dir / "merge.lock", blocking=True):
        parts = []
        for path in sorted(shard_dir.glob("shard-*.parquet")):
            block = int(path.stem.split("-")[1])
            with file_lock(shard_dir / f"shard-{block:06d}.lock", blocking=True):  # never a shard being written
                df = _checked_shard(shard_dir, path, key, block, shard_size)
            if df is not None:
                parts.append(df)
        old = _finished(final, key, np.array([], dtype=np.int64))
        if old is not None:  # rows of the finished table the shards lack are kept: a merge never shrinks it
            have = np.concatenate([p["token_id"].to_numpy() for p in parts]) if parts else np.array([], np.int64)
            keep = old[~old["token_id"].isin(have)]
            if len(keep):
                parts.append(keep)
        merged = pd.concat(parts).sort_values("token_id").reset_index(drop=True)
        _update_layout(shard_dir, table=atomic_write_table(merged, final, prov))


def _checked_shard(shard_dir: pathlib.Path, path: pathlib.Path, key: str, block: int,
                   shard_size: int) -> pd.DataFrame | None:
    """A shard's rows (the caller holds its lock), or None when it must be recomputed. A shard from
    before checksums were recorded that passes the checks gets its checksum recorded now."""
    recorded = _layout_record(shard_dir).get(SHARD_SHA256, {}).get(path.name)
    df, digest = _valid_shard(path, key, block, shard_size, recorded)
    if df is not None and recorded is None:
        _update_layout(shard_dir, shards={path.name: digest})
    return df


def import_paper_csv(path, model_id: str, *, revision: str | None = None, dtype: str | None = None,
                     prompts: dict | None = None) -> dict[str, pd.DataFrame]:
    """Read the paper's per-model CSV (``token_id, token_name, token_decoded, greatest, best, worst``;
    :func:`rmlib.tables.token_csv.read_token_csv`, which checks it).

    Returns one score table per prompt (keyed by the prompt's text), in the
    same shape and with the same provenance fields as a live-scored table
    (mode ``"paper"``, ``source`` naming the file).
    """
    from .. import registry

    prompts = prompts or PAPER_PROMPTS
    if not isinstance(model_id, str) or not model_id.strip():
        raise InputError("the model id must be a non-empty string: the hub id the CSV was scored with "
                         "(CLI: --model org/name)")
    raw = read_token_csv(path, prompts)
    cols = [c for c in prompts if c in raw.columns]
    entry = registry.lookup(model_id) or {}
    tables = {}
    for col in cols:
        prov = {"model_id": model_id, "revision": revision or entry.get("revision"),
                "dtype": dtype or entry.get("dtype"), "scorer": "classifier", "score_from": entry.get("score_from"),
                "mode": "paper", "prompt": prompts[col], "chat_template": None, "rmlib_version": __version__,
                "source": str(path)}
        df = pd.DataFrame({
            "token_id": raw["token_id"].to_numpy(np.int64),
            "token": raw["token_name"].astype(str),
            "decoded": raw["token_decoded"].astype(str),
            "score": raw[col].to_numpy(np.float64),
        }).sort_values("token_id").reset_index(drop=True)
        df.attrs["provenance"] = prov
        tables[prompts[col]] = df
    return tables
