"""What scoring reads from a tokenizer, kept on disk: a warm ``rmlib score`` of a model whose tokenizer was
seen before neither reads the tokenizer (Gemma's ``tokenizer.json`` is 33 MB) nor imports transformers.

A model loaded with rmlib's lite forward (``load_model(lite=True)``) holds a :class:`TokenizerReader` and
reads its tokenizer on first use (:class:`rmlib.engine.models.LoadedModel`). Until then a scorer takes what it
needs from two records in the user cache (``<cache>/tokenizer-facts/``), written the first time the tokenizer
is read for a chat frame:

* the tokenizer's facts (:class:`TokenizerFacts`: vocabulary size, its own chat template, its special tokens'
  texts, the transformers version that read it, the fingerprint of its token table in
  :mod:`rmlib.engine.token_tables`), keyed by its files' contents (:func:`tokenizer_files_digest`), the
  registry's template, the transformers, tokenizers and rmlib versions;
* each prompt's chat frame (:class:`rmlib.engine.frames.ChatFrame`), keyed by those facts' key, the template
  text and the prompt.

A record that cannot be read, has another format, or names another key or prompt is ignored (and written
again when the tokenizer is read); a prompt seen for the first time reads the tokenizer as before. What is
read from the records equals what the tokenizer gives (tested: the same scores and provenance, bit for bit).
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import hashlib
import json
import pathlib

from ..files import atomic_write
from ..paths import cache_dir
from .frames import TEMPLATES, ChatFrame, special_texts
from .token_tables import token_table, token_table_path, tokenizer_fingerprint
from .tokenizer_files import load_tokenizer, tokenizer_files_stamp

#: The records' format; a record of another is ignored.
FORMAT = 1
#: The folder under the user cache that holds the records.
FACTS_FOLDER = "tokenizer-facts"


@dataclasses.dataclass(frozen=True)
class TokenizerFacts:
    """What a scorer reads from a tokenizer it has not read (in token mode)."""

    vocab_size: int
    chat_template: str | None  # the tokenizer's own (the registry's, where its entry names one)
    special_texts: tuple[str, ...]  # frames.special_texts
    transformers_version: str  # what provenance records
    token_table: str  # token_tables.tokenizer_fingerprint: the cached table of every id's strings


#: Each field's type as a record stores it (JSON): a record with any other is ignored.
_FACT_TYPES = {"vocab_size": int, "chat_template": (str, type(None)), "special_texts": list,
               "transformers_version": str, "token_table": str}


@dataclasses.dataclass(frozen=True)
class TokenizerReader:
    """The tokenizer of a model folder, read on first use (with the registry's named template, if any, set on
    it, as :func:`rmlib.engine.models.load_model` sets it)."""

    folder: pathlib.Path
    chat_template: str | None = None  # a name in frames.TEMPLATES

    def read(self):
        tok = load_tokenizer(self.folder)
        if self.chat_template is not None:
            tok.chat_template = TEMPLATES[self.chat_template]
        return tok

    @functools.cached_property
    def key(self) -> str:
        """What the tokenizer's facts depend on, hashed: its files, the template set on it, the libraries."""
        from importlib.metadata import PackageNotFoundError, version

        from .. import __version__

        versions = {}
        for lib in ("transformers", "tokenizers"):
            try:
                versions[lib] = version(lib)
            except PackageNotFoundError:
                versions[lib] = None
        facts = {"format": FORMAT, "files": tokenizer_files_digest(self.folder), "template": self.chat_template,
                 "rmlib": __version__, **versions}
        return hashlib.sha256(json.dumps(facts, sort_keys=True).encode()).hexdigest()[:32]


def tokenizer_files_digest(folder: pathlib.Path) -> str:
    """The SHA-256 of ``folder``'s tokenizer files (:func:`rmlib.engine.tokenizer_files.tokenizer_files_stamp`)
    and ``config.json`` (its model type picks the tokenizer class), computed once per version of the files:
    remembered in the cache beside their names, sizes, modification and change times and inodes, and
    computed again when any of those differs."""
    folder = pathlib.Path(folder).resolve()
    names = [name for name, *_ in tokenizer_files_stamp(folder)] + ["config.json"]
    stamp = []
    for name in names:
        with contextlib.suppress(OSError):
            st = (folder / name).stat()
            stamp.append([name, st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino])
    memo = cache_dir() / FACTS_FOLDER / "digests" / (hashlib.sha256(str(folder).encode()).hexdigest()[:32] + ".json")
    with contextlib.suppress(OSError, ValueError, TypeError, KeyError):
        record = json.loads(memo.read_text())
        if record["folder"] == str(folder) and record["stamp"] == stamp and isinstance(record["sha256"], str):
            return record["sha256"]
    h = hashlib.sha256()
    for name, *_ in stamp:  # the files as stamped before they are read: a change while reading is seen next time
        with contextlib.suppress(OSError):
            h.update(name.encode() + b"\0" + hashlib.sha256((folder / name).read_bytes()).digest())
    digest = h.hexdigest()
    with contextlib.suppress(OSError):  # a read-only cache: computed each time
        atomic_write(memo, json.dumps({"folder": str(folder), "stamp": stamp, "sha256": digest}))
    return digest


def _record(path: pathlib.Path, key: str) -> dict | None:
    """A record's body when it is rmlib's, of this format, for ``key``; else None."""
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(record, dict) or record.get("format") != FORMAT or record.get("key") != key:
        return None
    return record.get("body") if isinstance(record.get("body"), dict) else None


def _write_record(path: pathlib.Path, key: str, body: dict) -> None:
    with contextlib.suppress(OSError):  # a read-only cache: the tokenizer is read each time
        atomic_write(path, json.dumps({"format": FORMAT, "key": key, "body": body}, ensure_ascii=False))


def _facts_path(reader: TokenizerReader) -> pathlib.Path:
    return cache_dir() / FACTS_FOLDER / f"{reader.key}.json"


def read_facts(reader: TokenizerReader) -> TokenizerFacts | None:
    """The tokenizer's facts from the cache, or None (never recorded, or a record not to be trusted; also
    when the token table they name is gone)."""
    body = _record(_facts_path(reader), reader.key)
    if body is None or set(body) != set(_FACT_TYPES):
        return None
    if not all(isinstance(body[k], t) and not isinstance(body[k], bool) for k, t in _FACT_TYPES.items()):
        return None
    if body["vocab_size"] < 1 or not all(isinstance(t, str) and t for t in body["special_texts"]):
        return None
    facts = TokenizerFacts(**{**body, "special_texts": tuple(body["special_texts"])})
    return facts if token_table_path(facts.token_table).is_file() else None


def write_facts(reader: TokenizerReader, tokenizer) -> TokenizerFacts:
    """Record ``tokenizer``'s facts (read by ``reader``), its token table built and cached first."""
    import transformers

    token_table(tokenizer)  # every id's strings, cached under the fingerprint recorded here
    facts = TokenizerFacts(vocab_size=len(tokenizer), chat_template=getattr(tokenizer, "chat_template", None),
                           special_texts=tuple(special_texts(tokenizer)),
                           transformers_version=transformers.__version__,
                           token_table=tokenizer_fingerprint(tokenizer))
    _write_record(_facts_path(reader), reader.key, dataclasses.asdict(facts))
    return facts


def _frame_path(reader: TokenizerReader, template: str, prompt: str) -> pathlib.Path:
    key = hashlib.sha256(json.dumps([reader.key, template, prompt]).encode()).hexdigest()[:32]
    return cache_dir() / FACTS_FOLDER / "frames" / f"{key}.json"


def read_frame(reader: TokenizerReader, template: str, prompt: str) -> ChatFrame | None:
    """The prompt's chat frame with ``template`` from the cache, or None."""
    body = _record(_frame_path(reader, template, prompt), reader.key)
    if body is None or body.get("prompt") != prompt or body.get("chat_template") != template:
        return None
    texts = (body.get("prefix_text"), body.get("suffix_text"))
    ids = (body.get("prefix_ids"), body.get("suffix_ids"))
    if not all(isinstance(t, str) for t in texts) or not all(
            isinstance(part, list) and all(isinstance(i, int) and not isinstance(i, bool) and i >= 0 for i in part)
            for part in ids):
        return None
    return ChatFrame(prompt, template, *texts, tuple(ids[0]), tuple(ids[1]))


def remember(reader: TokenizerReader, tokenizer, frame: ChatFrame) -> None:
    """Record ``frame`` (computed with ``tokenizer``, read by ``reader``) and, when missing, the tokenizer's facts."""
    if read_facts(reader) is None:
        write_facts(reader, tokenizer)
    _write_record(_frame_path(reader, frame.chat_template, frame.prompt), reader.key,
                  dataclasses.asdict(frame))
