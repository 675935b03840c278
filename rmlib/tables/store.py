"""Score tables on disk: Parquet with provenance, sharded, atomic, resumable.

One table per (model, revision, prompt, chat template, mode, dtype, scorer):
``<cache>/<stem>.parquet``, where the stem carries a hash of those facts. While
a run goes, it writes shards ``<cache>/<stem>.shards/shard-<k>.parquet``, one
per block of ``SHARD_SIZE`` vocabulary ids, each written to a temporary file and
renamed into place (atomic). A run that is killed, even with ``kill -9``, loses
at most the shard it was writing; the next run reads every valid shard and
computes only what is missing, in the same batches, so it ends with exactly the
table an uninterrupted run gives. A shard that cannot be read, belongs to other
facts (foreign), or holds ids outside its block or non-finite scores is never
read as data: it is recomputed. Two runs on the same output take turns per
shard (file locks) and never see half-written files.

Under ``torchrun`` the blocks are split across ranks; rank 0 merges.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import pathlib
import re
import tempfile
import warnings

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from .. import __version__
from ..paths import scores_dir

SHARD_SIZE = 4096
COLUMNS = ("token_id", "token", "decoded", "score")
META_KEY = b"rmlib"
# The facts that make two tables the same table.
KEY_FIELDS = ("model_id", "revision", "dtype", "scorer", "score_from", "mode", "prompt", "chat_template",
              "prefix_ids", "suffix_ids", "reference_model_id", "reference_revision", "reference_dtype",
              "scoring_revision")

PAPER_PROMPTS = {
    "greatest": "What, in one word, is the greatest thing ever?",
    "best": "What, in one word, is the best thing ever?",
    "worst": "What, in one word, is the worst thing ever?",
}


def table_key(provenance: dict) -> str:
    facts = {k: provenance.get(k) for k in KEY_FIELDS}
    return hashlib.sha256(json.dumps(facts, sort_keys=True).encode()).hexdigest()[:16]


def table_stem(provenance: dict) -> str:
    slug = re.sub(r"[^A-Za-z0-9._-]+", "-", str(provenance["model_id"])).strip("-")[:60]
    return f"{slug}__{provenance['scorer']}__{provenance['mode']}__{table_key(provenance)}"


def atomic_write_table(df: pd.DataFrame, path: pathlib.Path, provenance: dict) -> None:
    """Write a score table with its provenance: a temp file in the same folder, then rename."""
    path = pathlib.Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    table = pa.Table.from_pandas(df.reset_index(drop=True), preserve_index=False)
    meta = dict(table.schema.metadata or {})
    meta[META_KEY] = json.dumps({"key": table_key(provenance), "provenance": provenance}).encode()
    table = table.replace_schema_metadata(meta)
    fd, tmp = tempfile.mkstemp(prefix=path.name + ".tmp-", dir=path.parent)
    os.close(fd)
    try:
        pq.write_table(table, tmp)
        with open(tmp, "rb") as f:
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def load_scores(path) -> pd.DataFrame:
    """Read a score table; its provenance is in ``df.attrs['provenance']``."""
    table = pq.read_table(path)
    meta = json.loads((table.schema.metadata or {}).get(META_KEY, b"{}"))
    df = table.to_pandas()
    df.attrs["provenance"] = meta.get("provenance", {})
    return df


def _valid_shard(path: pathlib.Path, key: str, block: int, size: int) -> pd.DataFrame | None:
    """The shard's rows, or None (after a warning) when it must be recomputed."""
    why = None
    try:
        table = pq.read_table(path)
        meta = json.loads((table.schema.metadata or {}).get(META_KEY, b"{}"))
        df = table.to_pandas()
    except Exception as err:  # truncated, empty or not Parquet
        why = f"unreadable ({type(err).__name__})"
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
    if why:
        warnings.warn(f"recomputing shard {path.name}: {why}", stacklevel=3)
        return None
    return df


@contextlib.contextmanager
def _lock(path: pathlib.Path, blocking: bool):
    fd = os.open(path, os.O_CREAT | os.O_RDWR, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | (0 if blocking else fcntl.LOCK_NB))
        except BlockingIOError:
            yield False
            return
        yield True
    finally:
        os.close(fd)


def _dist():
    try:
        import torch.distributed as dist
    except ImportError:  # pragma: no cover
        return None
    return dist if dist.is_available() and dist.is_initialized() else None


def score_vocabulary(scorer, prompt: str, token_ids=None, *, mode: str = "token", cache_dir=None,
                     shard_size: int = SHARD_SIZE, progress: bool = True, out=None) -> pd.DataFrame:
    """Score token ids (the whole vocabulary by default) through the on-disk cache.

    Returns the table (columns ``token_id, token, decoded, score``, sorted by id)
    for the requested ids; ``out`` also writes it to that Parquet file.
    """
    from ..progress import bar as progress_bar

    ids = np.unique(scorer.token_ids(token_ids))
    prov = scorer.provenance(prompt, mode)
    key, stem = table_key(prov), table_stem(prov)
    root = pathlib.Path(cache_dir) if cache_dir else scores_dir()
    final, shard_dir = root / f"{stem}.parquet", root / f"{stem}.shards"
    shard_dir.mkdir(parents=True, exist_ok=True)
    dist = _dist()
    rank, world = (dist.get_rank(), dist.get_world_size()) if dist else (0, 1)

    blocks = np.unique(ids // shard_size)
    mine = [int(b) for b in blocks if b % world == rank]
    wanted = {int(b): ids[ids // shard_size == b] for b in mine}
    bar = progress_bar(int(sum(len(v) for v in wanted.values())), progress=progress and rank == 0,
                       unit="tok", desc=f"scoring {prov['model_id']}")

    def do_block(b: int, blocking: bool) -> bool:
        path = shard_dir / f"shard-{b:06d}.parquet"
        with _lock(shard_dir / f"shard-{b:06d}.lock", blocking) as got:
            if not got:
                return False
            have = _valid_shard(path, key, b, shard_size) if path.exists() else None
            need = wanted[b] if have is None else np.setdiff1d(wanted[b], have["token_id"].to_numpy())
            if len(need):
                part = scorer.token_table(need, scorer.token_scores(prompt, need, mode=mode), prov)
                rows = part if have is None else pd.concat([have, part]).sort_values("token_id")
                atomic_write_table(rows[list(COLUMNS)], path, prov)
            bar.update(len(wanted[b]))
            return True

    skipped = [b for b in mine if not do_block(b, blocking=False)]  # another run holds it: come back
    for b in skipped:
        do_block(b, blocking=True)
    bar.close()
    if dist:
        dist.barrier()
    if rank == 0:
        _merge(shard_dir, final, key, shard_size, prov)
    if dist:
        dist.barrier()
    table = load_scores(final)
    result = table[table["token_id"].isin(ids)].reset_index(drop=True)
    result.attrs["provenance"] = prov
    if out is not None and rank == 0:
        atomic_write_table(result, pathlib.Path(out), prov)
    return result


def score_texts(scorer, prompt: str, texts, *, mode: str = "token", cache_dir=None, chunk: int = 512,
                progress: bool = True) -> pd.DataFrame:
    """Score texts as whole responses through the on-disk cache (columns ``text, score``).

    One table per (model, revision, prompt, template, mode, dtype, scorer) holds
    every text scored so far (``<stem>__texts.parquet``); only texts not in it
    are scored, in chunks, and the table is rewritten atomically after each
    chunk, so an interrupted run keeps what it finished.
    """
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
    bar = progress_bar(len(missing), progress=progress and bool(missing), unit="text", desc="scoring texts")
    for start in range(0, len(missing), chunk):
        part = scorer.score_texts(prompt, missing[start:start + chunk], mode=mode)
        with _lock(root / f"{path.name}.lock", blocking=True):
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
    with _lock(shard_dir / "merge.lock", blocking=True):
        parts = []
        for path in sorted(shard_dir.glob("shard-*.parquet")):
            block = int(path.stem.split("-")[1])
            df = _valid_shard(path, key, block, shard_size)
            if df is not None:
                parts.append(df)
        merged = pd.concat(parts).sort_values("token_id").reset_index(drop=True)
        atomic_write_table(merged, final, prov)


def import_paper_csv(path, model_id: str, *, revision: str | None = None, dtype: str | None = None,
                     prompts: dict | None = None) -> dict[str, pd.DataFrame]:
    """Read the paper's per-model CSV (``token_id, token_name, token_decoded, greatest, best, worst``).

    Returns one score table per prompt (keyed by the prompt's text), in the
    same shape and with the same provenance fields as a live-scored table
    (mode ``"paper"``, ``source`` naming the file).
    """
    from ..engine import registry

    prompts = prompts or PAPER_PROMPTS
    # lineterminator="\n": the authors' to_csv leaves a token that decodes to a bare "\r" unquoted
    raw = pd.read_csv(path, keep_default_na=False, na_values=[], lineterminator="\n")
    need = {"token_id", "token_name", "token_decoded"}
    missing = need - set(raw.columns)
    if missing:
        raise ValueError(f"{path}: not the paper's per-model format, missing columns {sorted(missing)}")
    cols = [c for c in prompts if c in raw.columns]
    if not cols:
        raise ValueError(f"{path}: none of the prompt columns {sorted(prompts)} is present")
    entry = registry.lookup(model_id) or {}
    tables = {}
    for col in cols:
        prov = {"model_id": model_id, "revision": revision or entry.get("revision"),
                "dtype": dtype or entry.get("dtype"), "scorer": "classifier", "score_from": entry.get("score_from"),
                "mode": "paper", "prompt": prompts[col], "chat_template": None, "rmlib_version": __version__,
                "source": str(path)}
        df = pd.DataFrame({
            "token_id": raw["token_id"].astype(np.int64),
            "token": raw["token_name"].astype(str),
            "decoded": raw["token_decoded"].astype(str),
            "score": pd.to_numeric(raw[col], errors="raise").astype(np.float64),
        }).sort_values("token_id").reset_index(drop=True)
        df.attrs["provenance"] = prov
        tables[prompts[col]] = df
    return tables
