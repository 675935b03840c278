"""Read a saved tokenizer: as ``AutoTokenizer`` builds it, its ``tokenizer.json`` read once, by the
``tokenizers`` library (Rust), not parsed in Python; read once per process and copied to each caller.
"""

from __future__ import annotations

import contextlib
import copy
import functools
import json
import os
import pathlib


TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json")


def has_tokenizer(folder: pathlib.Path) -> bool:
    """Whether ``folder`` holds a saved fast tokenizer (:data:`TOKENIZER_FILES`)."""
    return all((folder / name).is_file() for name in TOKENIZER_FILES)


#: ``tokenizer_class`` names in ``tokenizer_config.json`` that mean transformers' generic fast tokenizer, which
#: reads ``tokenizer.json`` as it stands.
GENERIC_TOKENIZER_CLASSES = ("TokenizersBackend", "PreTrainedTokenizerFast")


#: The ``model_type`` of the folders whose generic tokenizer class AutoTokenizer builds as named (None: a
#: tokenizer-only folder); other folders' tokenizers are read through AutoTokenizer's choice of class.
GENERIC_TOKENIZER_MODEL_TYPES = (None, "llama")


def read_tokenizer(folder: pathlib.Path):
    """A saved tokenizer, as ``AutoTokenizer.from_pretrained(folder)`` builds it, its ``tokenizer.json`` read
    once, by the ``tokenizers`` library (:func:`auto_tokenizer`). One whose ``tokenizer_config.json`` names the
    generic fast class (``TokenizersBackend``, what AutoTokenizer would build from it too) is built by that
    class directly: AutoTokenizer would first import the model's configuration stack, a slow import.
    Read once per process while the folder's tokenizer files stay as they are (:func:`tokenizer_files_stamp`);
    ``read_tokenizer.cache_clear()`` forgets them all."""
    folder = pathlib.Path(folder)
    return _read_tokenizer(folder, tokenizer_files_stamp(folder))


@functools.lru_cache(maxsize=8)
def _read_tokenizer(folder: pathlib.Path, files: tuple):
    try:
        named = json.loads((folder / "tokenizer_config.json").read_text()).get("tokenizer_class")
    except (OSError, ValueError, AttributeError):
        named = None
    try:
        model_type = json.loads((folder / "config.json").read_text()).get("model_type")
    except (OSError, ValueError, AttributeError):
        model_type = None
    # AutoTokenizer builds the generic class named, except for model types it knows name the wrong class
    # (Qwen2, Phi-3, ...): those, like every model-specific class, go through AutoTokenizer.
    if named not in GENERIC_TOKENIZER_CLASSES or model_type not in GENERIC_TOKENIZER_MODEL_TYPES:
        return auto_tokenizer(str(folder))
    from transformers.tokenization_utils_tokenizers import TokenizersBackend

    with _tokenizer_json_read_by_rust(folder) as (extra, _):
        return TokenizersBackend.from_pretrained(str(folder), **extra)


read_tokenizer.cache_clear = _read_tokenizer.cache_clear


def auto_tokenizer(name: str, **kwargs):
    """``AutoTokenizer.from_pretrained(name, **kwargs)`` with its ``tokenizer.json`` read once, by the
    ``tokenizers`` library (Rust), where that builds the same tokenizer.

    transformers reads a saved ``tokenizer.json`` with Python's ``json`` (for its added tokens, when
    ``tokenizer_config.json`` does not list them, as transformers 5 saves it), and a model-specific class
    (``GemmaTokenizer``, ...) rebuilds the vocabulary and merges from it in Python, then sets the class's own
    normalizer, pre-tokenizer, decoder and model options (slow for Gemma 3's 262k ids). Here the same class
    gets the same configuration (special tokens, chat template, the file's added tokens, post-processor) and
    keeps the backend ``tokenizers.Tokenizer.from_file`` reads. That backend equals the rebuilt one when the
    class's own pipeline equals the file's (:func:`tokenizer_pipeline`, checked against the class built on a
    minimal vocabulary); when it does not, the tokenizer is read again the way transformers reads it.
    """
    from transformers import AutoTokenizer

    folder = pathlib.Path(name)
    with _tokenizer_json_read_by_rust(folder if folder.is_dir() else None) as (extra, rebuilt_classes):
        tok = AutoTokenizer.from_pretrained(name, **extra, **kwargs)
    if rebuilt_classes and not _class_pipeline_kept(tok):
        tok = AutoTokenizer.from_pretrained(name, **kwargs)
    return tok


class _Backend:
    """Hands a ``tokenizers.Tokenizer`` to transformers' ``TokenizersBackend`` as its ``tokenizer_object``,
    which it deep-copies (a JSON round trip of the whole vocabulary): the copy is the object itself."""

    def __init__(self, backend):
        self.backend = backend

    def __deepcopy__(self, memo):
        return self.backend


@contextlib.contextmanager
def _tokenizer_json_read_by_rust(folder: pathlib.Path | None):
    """Within this block transformers' fast tokenizers keep the backend ``tokenizers`` reads from
    ``tokenizer.json`` (see :func:`auto_tokenizer`). Yields the keyword arguments that spare transformers
    its own reading of ``folder``'s file (its added tokens, when ``tokenizer_config.json`` lacks them and no
    legacy special-token files are there), and the list of model-specific classes built so."""
    from tokenizers import Tokenizer
    from transformers.tokenization_utils_tokenizers import TokenizersBackend

    read = {}

    def backend(path):
        key = os.path.realpath(path)
        if key not in read:
            read[key] = Tokenizer.from_file(path)
        return read[key]

    extra = {}
    if folder is not None and (folder / "tokenizer.json").is_file() and not any(
            (folder / f).exists() for f in ("special_tokens_map.json", "added_tokens.json")):
        try:
            config = json.loads((folder / "tokenizer_config.json").read_text())
        except (OSError, ValueError):
            config = None
        if isinstance(config, dict) and "added_tokens_decoder" not in config:
            extra["added_tokens_decoder"] = backend(str(folder / "tokenizer.json")).get_added_tokens_decoder()
    original = TokenizersBackend.__dict__["convert_to_native_format"]
    rebuilt = []

    def convert(cls, trust_remote_code=False, **kwargs):
        path = kwargs.get("tokenizer_file")
        if path is None or not os.path.isfile(path) or not cls.__module__.startswith("transformers."):
            return original.__func__(cls, trust_remote_code=trust_remote_code, **kwargs)
        if cls is not TokenizersBackend and "__init__" in cls.__dict__:
            rebuilt.append(cls)  # its __init__ runs on a minimal vocabulary; the file's backend replaces it
        return {**kwargs, "tokenizer_object": _Backend(backend(path))}

    TokenizersBackend.convert_to_native_format = classmethod(convert)
    try:
        yield extra, rebuilt
    finally:
        TokenizersBackend.convert_to_native_format = original


#: Keyword arguments a tokenizer keeps from its files, left out when its class is built on a minimal vocabulary.
_FILE_KWARGS = ("tokenizer_file", "vocab_file", "merges_file", "vocab", "merges", "tokenizer_object",
                "added_tokens_decoder", "name_or_path", "chat_template")


def _class_pipeline_kept(tok) -> bool:
    """Whether ``tok``'s class, built on a minimal vocabulary with ``tok``'s configuration, sets the same
    pipeline and model options as ``tok``'s backend (read from ``tokenizer.json``)."""
    kwargs = {k: v for k, v in tok.init_kwargs.items() if k not in _FILE_KWARGS}
    try:
        minimal = type(tok)(**kwargs)
    except Exception:  # a class that cannot be built without its files: read it as transformers does
        return False
    return tokenizer_pipeline(minimal.backend_tokenizer) == tokenizer_pipeline(tok.backend_tokenizer)


#: The model options of a ``tokenizers`` model that change how text is split (read where the model has them).
_MODEL_OPTIONS = ("unk_token", "byte_fallback", "fuse_unk", "dropout", "continuing_subword_prefix",
                  "end_of_word_suffix", "ignore_merges", "max_input_chars_per_word")


def tokenizer_pipeline(backend) -> tuple:
    """A ``tokenizers.Tokenizer``'s pipeline without its vocabulary: the model's type and options, the
    normalizer, pre-tokenizer and decoder (serialized)."""
    model = backend.model
    parts = [type(model).__name__, *(getattr(model, k, None) for k in _MODEL_OPTIONS)]
    for name in ("normalizer", "pre_tokenizer", "decoder"):
        part = getattr(backend, name)
        parts.append(None if part is None else part.__getstate__())
    return tuple(parts)


def load_tokenizer(folder: pathlib.Path):
    """A saved tokenizer, read from disk once per process; each caller gets its own copy
    (a scorer may set its pad token, a test its chat template).

    The copies share what is only read after construction: the backend (the ``tokenizers.Tokenizer``
    holding the vocabulary, merges and pipeline: copying Gemma 3's serializes and parses 33 MB of JSON)
    and the vocabulary and merges some tokenizer classes keep from their construction. rmlib never adds
    tokens to a loaded tokenizer; code that does must ``copy.deepcopy`` it first."""
    tok = read_tokenizer(pathlib.Path(folder))
    shared = {id(v): v for k in SHARED_TOKENIZER_ATTRS if (v := vars(tok).get(k)) is not None}
    return copy.deepcopy(tok, shared)


def tokenizer_files_stamp(folder: pathlib.Path) -> tuple:
    """The name, size and modification time of each of ``folder``'s tokenizer files."""
    stamp = []
    for path in sorted(pathlib.Path(folder).iterdir()) if pathlib.Path(folder).is_dir() else ():
        if path.name.startswith(("tokenizer", "special_tokens_map", "added_tokens", "chat_template")):
            st = path.stat()
            stamp.append((path.name, st.st_size, st.st_mtime_ns))
    return tuple(stamp)


#: Tokenizer attributes shared by the copies :func:`load_tokenizer` hands out.
SHARED_TOKENIZER_ATTRS = ("_tokenizer", "_vocab", "_merges")
