"""Each token id's token and decoded text: a few decoded one by one, many from the tokenizer's whole token
table, built once per tokenizer and cached as Parquet in the user cache under the tokenizer's fingerprint.
"""

from __future__ import annotations

import contextlib
import json
import pathlib
import weakref

from ..paths import cache_dir


#: Fewer ids than this are decoded one by one; more are read from the tokenizer's whole token table
#: (:func:`token_table`, built once per tokenizer and cached).
TOKEN_TABLE_MIN_IDS = 4096


#: Token tables read in this process: the tokenizer, its length then, and its table.
TOKEN_TABLES = weakref.WeakKeyDictionary()


def token_strings(tokenizer, ids) -> tuple[list[str], list[str]]:
    """Each id's token (``convert_ids_to_tokens``) and its decoded text (``decode([id])``): one by one for a
    few ids, from the tokenizer's cached :func:`token_table` for many, or when this process has read it already
    (the same strings)."""
    lst = [int(i) for i in ids]
    try:
        known = TOKEN_TABLES.get(tokenizer)
    except TypeError:
        known = None
    if len(lst) < TOKEN_TABLE_MIN_IDS and (known is None or known[0] != len(tokenizer)):
        return tokenizer.convert_ids_to_tokens(lst), [tokenizer.decode([i]) for i in lst]
    table = token_table(tokenizer)
    return table["token"].take(lst).to_pylist(), table["decoded"].take(lst).to_pylist()


def token_table(tokenizer):
    """Every id's token and decoded text (a pyarrow table, columns ``token``, ``decoded``, row = id),
    built once per tokenizer and kept in the user cache as Parquet under the tokenizer's fingerprint
    (:func:`tokenizer_fingerprint`), written atomically; later processes read it back instead of decoding
    every id again (``make bench``'s ``startup_parts`` section times both for Gemma's 262,144 ids)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from ..files import atomic_path

    try:
        known = TOKEN_TABLES.get(tokenizer)
    except TypeError:  # a tokenizer class that cannot be weakly referenced: read from the file each time
        known = None
    if known is not None and known[0] == len(tokenizer):
        return known[1]
    fingerprint = tokenizer_fingerprint(tokenizer)
    path = token_table_path(fingerprint)
    table = stored_token_table(fingerprint, len(tokenizer))
    if table is None:
        ids = list(range(len(tokenizer)))
        table = pa.table({"token": pa.array(tokenizer.convert_ids_to_tokens(ids), pa.string()),
                          "decoded": pa.array(_decode_each(tokenizer, ids), pa.string())})
        with contextlib.suppress(OSError):  # a read-only cache: the table is still returned
            path.parent.mkdir(parents=True, exist_ok=True)
            with atomic_path(path) as tmp:
                pq.write_table(table, tmp)
    with contextlib.suppress(TypeError):
        TOKEN_TABLES[tokenizer] = (len(tokenizer), table)
    return table


#: The folder under the user cache that holds the token tables.
TOKEN_TABLES_FOLDER = "token-tables"


def token_table_path(fingerprint: str) -> pathlib.Path:
    """Where the token table of the tokenizer with this :func:`tokenizer_fingerprint` is kept."""
    return cache_dir() / TOKEN_TABLES_FOLDER / (fingerprint + ".parquet")


def stored_token_table(fingerprint: str, rows: int):
    """The cached token table of the tokenizer with this :func:`tokenizer_fingerprint` and ``rows`` ids, read
    without the tokenizer (what a warm start reads: :mod:`rmlib.engine.tokenizer_facts`); None when it is
    missing or damaged (then :func:`token_table` builds it again)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = token_table_path(fingerprint)
    if not path.is_file():
        return None
    try:
        table = pq.read_table(path)
    except (OSError, pa.ArrowException):
        return None
    return table if table.num_rows == rows and table.column_names == ["token", "decoded"] else None


def _decode_each(tokenizer, ids: list[int]) -> list[str]:
    """``[tokenizer.decode([i]) for i in ids]``; for transformers' fast tokenizers (which decode with their
    backend and no clean-up) by the backend's batch decoder, the same strings without a Python loop."""
    from transformers.tokenization_utils_base import PreTrainedTokenizerBase
    from transformers.tokenization_utils_tokenizers import TokenizersBackend

    cls = type(tokenizer)
    if (isinstance(tokenizer, TokenizersBackend) and cls._decode is TokenizersBackend._decode
            and cls.decode is PreTrainedTokenizerBase.decode and not tokenizer.clean_up_tokenization_spaces):
        return tokenizer.backend_tokenizer.decode_batch([[i] for i in ids], skip_special_tokens=False)
    return [tokenizer.decode([i]) for i in ids]


def tokenizer_fingerprint(tokenizer) -> str:
    """What a token table depends on, hashed: the tokenizer's class, size and decoding switch, the library
    versions, its added tokens, and its files (``tokenizer.json`` and ``tokenizer_config.json`` of the folder
    it was read from) or, for one built in memory, its whole serialization."""
    import hashlib

    import tokenizers
    import transformers

    h = hashlib.sha256()
    cls = type(tokenizer)
    h.update(f"{cls.__module__}.{cls.__qualname__}|{len(tokenizer)}|"
             f"{getattr(tokenizer, 'clean_up_tokenization_spaces', None)}|{transformers.__version__}|"
             f"{tokenizers.__version__}".encode())
    for i, t in sorted((getattr(tokenizer, "added_tokens_decoder", None) or {}).items()):
        h.update(f"{i}\0{t.content}\0{t.special}\0".encode())
    folder = pathlib.Path(str(getattr(tokenizer, "name_or_path", "") or ""))
    if str(folder) not in ("", ".") and (folder / "tokenizer.json").is_file():
        for name in ("tokenizer.json", "tokenizer_config.json"):
            with contextlib.suppress(OSError):
                h.update(hashlib.sha256((folder / name).read_bytes()).digest())
    elif getattr(tokenizer, "backend_tokenizer", None) is not None:
        h.update(tokenizer.backend_tokenizer.to_str().encode())
    else:  # a tokenizer without a tokenizers backend: its vocabulary
        h.update(json.dumps(sorted(tokenizer.get_vocab().items()), ensure_ascii=False).encode())
    return h.hexdigest()[:32]
