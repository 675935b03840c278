"""Assemble score tables across models and prompts.

The scoring engine (:mod:`rmlib.engine.scorers`) and the store (:mod:`rmlib.tables.store`)
give one table per (model, prompt). The chapters need all of them at once:

* :func:`score_models` loads each model once, scores every prompt through the
  on-disk cache (:func:`rmlib.tables.store.score_vocabulary`: cached, resumable),
  frees the model before loading the next one and returns one *long* table
  with columns ``model, prompt, token_id, token, decoded, score``
  (:data:`LONG_COLUMNS`, what :mod:`rmlib.viz.charts` takes);
* :func:`wide` turns a slice of a long table into the *wide* table that
  :mod:`rmlib.stats` takes (index = item, one column per model or prompt),
  joining on the decoded string (through
  :func:`rmlib.tables.vocabulary.shared_vocabulary`, duplicates handled there) or
  on the token id (one tokenizer only);
* :func:`compare_modes` scores the same tokens the exact way
  (``mode="token"``) and the published way (``mode="paper"``), per model;
* :func:`vocab_slice` reads a chapter parameter such as ``"0:300"``.
"""

from __future__ import annotations

import gc
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from ..engine.scorers import load_scorer
from ..errors import InputError
from ..options import MODES, check_mode, vocab_slice  # noqa: F401 (vocab_slice re-exported)
from . import subsets
from .schema import LONG_COLUMNS, SCORE_COLUMNS, check_columns
from .store import score_vocabulary

__all__ = ["LONG_COLUMNS", "vocab_slice", "resolve_token_ids", "score_models", "compare_modes", "tables", "wide", "CachedScorer"]



def resolve_token_ids(token_ids, vocab_size: int, tokenizer=None, model_id: str = "") -> np.ndarray | None:
    """The ids to score in a vocabulary of ``vocab_size`` tokens (of ``model_id``, named in errors).

    ``None`` (whole vocabulary) stays ``None``; a ``slice`` or a ``"START:STOP"``
    string must lie inside the vocabulary, never silently clipped (``"START:"``
    runs to the end of each model's vocabulary, so one slice fits models with
    different vocabularies); ``"words"`` is the stated subset of
    :mod:`rmlib.tables.subsets` (lexicon words plus a seeded random sample),
    found with ``tokenizer``, as is a :class:`rmlib.tables.subsets.Words`; any other iterable of ints is returned as an
    array (range checks are the scorer's).
    """
    if token_ids is None:
        return None
    if isinstance(token_ids, subsets.Words):
        return _resolve(token_ids, vocab_size, tokenizer)[0]
    if isinstance(token_ids, str):
        token_ids = vocab_slice(token_ids)
        if token_ids is None:
            return None
        if token_ids == subsets.WORDS:
            return _resolve(token_ids, vocab_size, tokenizer)[0]
    if isinstance(token_ids, slice):
        start, stop = token_ids.start or 0, token_ids.stop
        if start >= vocab_size or (stop is not None and stop > vocab_size):
            what = "selects no token" if start >= vocab_size else "reaches beyond the vocabulary"
            raise InputError(
                f"the slice {start}:{'' if stop is None else stop} {what} of {model_id or 'the model'} "
                f"({vocab_size} tokens, ids 0..{vocab_size - 1}): give a STOP of at most {vocab_size}, or leave "
                f"STOP out ('{min(start, vocab_size - 1)}:') for every token to the end of each vocabulary"
            )
        return np.arange(vocab_size, dtype=np.int64)[token_ids]
    ids = np.asarray(list(token_ids))
    if ids.size == 0:
        raise InputError("token_ids is empty: pass None for the whole vocabulary")
    if not np.issubdtype(ids.dtype, np.integer):
        raise InputError(f"token_ids must be integers, got dtype {ids.dtype}")
    return ids.astype(np.int64)


def _unique_strings(values, what: str) -> list[str]:
    if isinstance(values, str):
        raise TypeError(f"{what} must be a list of strings, not one string: write [{values!r}]")
    values = list(values)
    if not values:
        raise InputError(f"{what} is empty: give at least one")
    for v in values:
        if not isinstance(v, str) or not v.strip():
            raise InputError(f"{what} must be non-empty strings, got {v!r}")
    dup = sorted({v for v in values if values.count(v) > 1})
    if dup:
        raise InputError(f"{what} lists {dup} more than once: give each once")
    return values


def _model_kwargs(model_kwargs, models: list[str]) -> dict:
    out = dict(model_kwargs or {})
    unknown = sorted(set(out) - set(models))
    if unknown:
        raise InputError(f"model_kwargs names models {unknown} that are not in models {models}")
    return out


def _per_model(token_ids, models: list[str]) -> dict:
    if isinstance(token_ids, Mapping):
        unknown = sorted(set(token_ids) - set(models))
        if unknown:
            raise InputError(f"token_ids names models {unknown} that are not in models {models}")
        return {m: token_ids.get(m) for m in models}
    return {m: token_ids for m in models}


def _resolve(token_ids, vocab_size: int, tokenizer=None, keys=None, model_id: str = "") -> tuple[np.ndarray | None, str]:
    """The ids to score (:func:`resolve_token_ids`) and one sentence saying which tokens they are.
    ``keys``: the tokenizer's :func:`rmlib.tables.subsets.decoded_keys`, when already computed."""
    if isinstance(token_ids, subsets.Words):
        if tokenizer is None:
            raise InputError("a Words subset depends on the model's tokenizer: pass tokenizer=")
        keys = subsets.decoded_keys(tokenizer, vocab_size) if keys is None else keys
        ids = subsets.word_subset(tokenizer, vocab_size, n_random=0, words=token_ids.words, keys=keys)[0]
        if not len(ids):
            raise InputError(f"no token of this {vocab_size:,}-token vocabulary decodes to one of the "
                             f"{len(token_ids.words)} {token_ids.label}: nothing to score")
        stated = token_ids.describe(len(ids), vocab_size)
        if token_ids.plus is None:
            return ids, stated
        more, more_stated = _resolve(token_ids.plus, vocab_size, tokenizer, keys, model_id)
        return (None if more is None else np.union1d(more, ids)), f"{more_stated}; and {stated}"
    if isinstance(token_ids, str) and vocab_slice(token_ids) == subsets.WORDS:
        if tokenizer is None:
            raise InputError("vocab_slice 'words' depends on the model's tokenizer: pass tokenizer=")
        words, sample = subsets.word_subset(tokenizer, vocab_size, keys=keys)
        return np.concatenate([words, sample]), subsets.describe(len(words), len(sample), subsets.SEED, vocab_size)
    ids = resolve_token_ids(token_ids, vocab_size, model_id=model_id)
    if ids is None:
        return None, f"the whole vocabulary ({vocab_size:,} tokens)"
    if isinstance(token_ids, (str, slice)):
        return ids, f"token ids {int(ids.min())} to {int(ids.max())} ({len(ids):,} of {vocab_size:,} tokens)"
    return ids, f"{len(ids):,} given token ids of {vocab_size:,}"


def _release_memory() -> None:
    """Collect the model just dropped and give its (GPU) memory back."""
    gc.collect()
    try:
        import torch

        if torch.cuda.is_available():
            torch.cuda.empty_cache()
    except ImportError:  # pragma: no cover
        pass


def score_models(models: Sequence[str], prompts: Sequence[str], token_ids=None, mode: str = "token",
                 progress: bool = True, *, cache_dir=None, full_vocab: Mapping[str, int] | None = None,
                 model_kwargs: Mapping[str, Mapping] | None = None, **load_kwargs) -> pd.DataFrame:
    """Score the vocabulary of every model for every prompt; one long table.

    ``models``: model specs (``"default"``, hub ids, folders, ``tiny:<arch>``),
    loaded one at a time with :func:`rmlib.engine.scorers.load_scorer` and freed
    before the next is loaded. ``prompts``: each prompt is scored through
    :func:`rmlib.tables.store.score_vocabulary` (cached on disk under ``cache_dir``,
    default ``data/scores``; an interrupted run resumes). ``token_ids``:
    ``None`` (whole vocabulary of each model), a ``slice`` / ``"START:STOP"``
    (cut from each model's own vocabulary), ``"words"`` (the stated subset of
    :mod:`rmlib.tables.subsets`, resolved on each model's tokenizer), or
    a :class:`rmlib.tables.subsets.Words` (the tokens that decode to given words, resolved per
    tokenizer), explicit ids (used for every model); a mapping ``{spec: token_ids}``
    chooses per model (specs left out: the whole vocabulary).
    ``full_vocab`` ``{spec: k}``: that model scores its whole vocabulary for
    the first ``k`` prompts and ``token_ids`` for the others (the cache holds
    one table per model and prompt, so the subset rows of a prompt scored
    whole are read back, never scored twice). ``load_kwargs`` go to every ``load_scorer`` call;
    ``model_kwargs[spec]`` adds or overrides them for one model (e.g.
    ``{"nicolinho/QRM-Llama3.1-8B": {"trust_remote_code": True}}``).

    Returns columns :data:`LONG_COLUMNS`, models and prompts in the order
    given, tokens by id; ``model`` is the scorer's ``model_id`` (the hub id;
    ``HuggingFaceTB/SmolLM2-135M-Instruct`` for ``"default"``).
    ``attrs["provenance"]`` is a list with the provenance dict of each
    (model, prompt) table, plus the key ``spec`` (the model as given) and
    ``vocab_subset``: the sentence that states which tokens were scored.
    """
    models = _unique_strings(models, "models")
    prompts = _unique_strings(prompts, "prompts")
    per_model = _per_model(token_ids, models)
    full_vocab = dict(full_vocab or {})
    unknown = sorted(set(full_vocab) - set(models))
    if unknown:
        raise InputError(f"full_vocab names models {unknown} that are not in models {models}")
    for spec, k in full_vocab.items():
        if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 0:
            raise InputError(f"full_vocab[{spec!r}] must be a number of prompts (0 or more), not {k!r}")
    check_mode(mode)
    model_kwargs = _model_kwargs(model_kwargs, models)
    parts, provenance, labels = [], [], {}
    for spec in models:
        # token mode scores ids only: a Llama-architecture checkpoint runs rmlib's lite forward (make bench: chapter_scoring)
        scorer = load_scorer(spec, **{"lite": mode == "token", **load_kwargs, **dict(model_kwargs.get(spec, {}))})
        try:
            ids, stated = _resolve(per_model[spec], scorer.vocab_size, scorer.tokenizer, model_id=scorer.loaded.model_id)
            whole = _resolve(None, scorer.vocab_size)[1]
            for k, prompt in enumerate(prompts):
                full = k < full_vocab.get(spec, 0)
                table = score_vocabulary(scorer, prompt, None if full else ids, mode=mode, cache_dir=cache_dir,
                                         progress=progress)
                prov = dict(table.attrs["provenance"], spec=spec, vocab_subset=whole if full else stated)
                label = prov["model_id"]
                if labels.setdefault(label, spec) != spec:
                    raise InputError(
                        f"models {labels[label]!r} and {spec!r} are the same model ({label}); give it once"
                    )
                part = table[list(SCORE_COLUMNS)].copy()
                part.insert(0, "prompt", prompt)
                part.insert(0, "model", label)
                parts.append(part)
                provenance.append(prov)
        finally:
            scorer = None  # the last reference: the model is freed before the next one loads
            _release_memory()
    long = pd.concat(parts, ignore_index=True)
    long.attrs = {}
    long["token_id"] = long["token_id"].astype(np.int64)
    long["score"] = long["score"].astype(np.float64)
    long.attrs["provenance"] = provenance
    return long


def compare_modes(models: Sequence[str], prompt: str, token_ids, progress: bool = True, *, cache_dir=None,
                  model_kwargs: Mapping[str, Mapping] | None = None, **load_kwargs) -> pd.DataFrame:
    """The same tokens scored in ``mode="token"`` and in ``mode="paper"``, per model.

    Each model is loaded once; both modes go through the score cache
    (:func:`rmlib.tables.store.score_vocabulary`). ``token_ids`` as in
    :func:`score_models`. Returns one row per (model, token):
    ``model, token_id, token, decoded, roundtrips, token_mode, paper_mode,
    delta`` where ``roundtrips`` says whether the decoded string tokenizes
    back to exactly ``[token_id]`` (without special tokens) and ``delta`` is
    ``paper_mode - token_mode``. ``attrs["provenance"]`` lists the
    provenance of every table, as in :func:`score_models`.
    """
    models = _unique_strings(models, "models")
    _unique_strings([prompt], "prompt")
    model_kwargs = _model_kwargs(model_kwargs, models)
    parts, provenance = [], []
    for spec in models:
        scorer = load_scorer(spec, **{**load_kwargs, **dict(model_kwargs.get(spec, {}))})
        try:
            ids = resolve_token_ids(token_ids, scorer.vocab_size, model_id=scorer.loaded.model_id)
            tables = {mode: score_vocabulary(scorer, prompt, ids, mode=mode, cache_dir=cache_dir, progress=progress)
                      for mode in MODES}
            tok = scorer.tokenizer
            exact = tables["token"]
            roundtrips = [list(tok(d, add_special_tokens=False).input_ids) == [int(i)]
                          for i, d in zip(exact["token_id"], exact["decoded"])]
            bos_counts = _bos_counts(scorer, prompt, str(exact["decoded"].iloc[0]))
        finally:
            scorer = None
            _release_memory()
        paper = tables["paper"].set_index("token_id")["score"].reindex(exact["token_id"]).to_numpy()
        part = exact[["token_id", "token", "decoded"]].copy()
        part.insert(0, "model", tables["token"].attrs["provenance"]["model_id"])
        part["roundtrips"] = roundtrips
        part["token_mode"] = exact["score"].to_numpy()
        part["paper_mode"] = paper
        part["delta"] = paper - part["token_mode"].to_numpy()
        part["bos_token_mode"], part["bos_paper_mode"] = bos_counts
        parts.append(part)
        provenance += [dict(t.attrs["provenance"], spec=spec) for t in tables.values()]
    out = pd.concat(parts, ignore_index=True)
    out.attrs = {"provenance": provenance}
    return out


def _bos_counts(scorer, prompt: str, text: str) -> tuple[int, int]:
    """How many BOS tokens the model's input holds in mode "token" (the frame's prefix) and in mode
    "paper" (:meth:`Scorer.paper_input_ids`, ``text`` as the response)."""
    bos = scorer.tokenizer.bos_token_id
    if bos is None:
        return 0, 0
    return list(scorer.frame(prompt).prefix_ids).count(bos), scorer.paper_input_ids(prompt, text).count(bos)


def _check_long(long: pd.DataFrame) -> None:
    check_columns(long, LONG_COLUMNS, "long score table", hint="make one with rmlib.tables.results.score_models")


def _pick(long: pd.DataFrame, column: str, value: str | None, what: str) -> str:
    present = list(dict.fromkeys(long[column]))
    if value is None:
        if len(present) != 1:
            raise InputError(f"the table holds {len(present)} {column}s {present}: pass {what}= one of them")
        return present[0]
    if value not in present:
        raise InputError(f"{what}={value!r} is not in the table; it holds {present}")
    return value


def tables(long: pd.DataFrame, across: str = "model", *, prompt: str | None = None,
           model: str | None = None) -> dict[str, pd.DataFrame]:
    """Split a long table into single-model score tables.

    ``across="model"``: one table per model for one ``prompt``;
    ``across="prompt"``: one table per prompt for one ``model``. The fixed
    one may be left out when the table holds only one. Each table has
    columns ``token_id, token, decoded, score``, in table order.
    """
    _check_long(long)
    if across == "model":
        fixed, other, value = "prompt", "model", _pick(long, "prompt", prompt, "prompt")
    elif across == "prompt":
        fixed, other, value = "model", "prompt", _pick(long, "model", model, "model")
    else:
        raise InputError(f"across must be 'model' or 'prompt', got {across!r}")
    sub = long[long[fixed] == value]
    return {
        str(name): grp[list(SCORE_COLUMNS)].reset_index(drop=True)
        for name, grp in sub.groupby(other, sort=False)
    }


def wide(long: pd.DataFrame, by: str = "decoded", across: str = "model", *, prompt: str | None = None,
         model: str | None = None, normalize=None, duplicates: str = "drop", how: str = "inner") -> pd.DataFrame:
    """A wide table (index = item, one column per model or prompt) for :mod:`rmlib.stats`.

    ``across``/``prompt``/``model`` choose the slice as in :func:`tables`.

    * ``by="decoded"``: items are decoded strings, kept when every column
      scored them; :func:`rmlib.tables.vocabulary.shared_vocabulary` does the join
      (``normalize``, ``duplicates`` and ``how`` passed on: ``how="outer"``
      keeps the strings any column scored, NaN elsewhere; the duplicate
      report is in ``attrs``). This is how different tokenizers are compared.
    * ``by="token_id"``: items are token ids (only ids every column scored).
      Only meaningful within one tokenizer: raises if two tables give the
      same id different token strings. ``attrs["decoded"]`` maps id to
      decoded string.
    """
    parts = tables(long, across, prompt=prompt, model=model)
    if by == "decoded":
        from .vocabulary import shared_vocabulary

        out = shared_vocabulary(parts, key="decoded", normalize=normalize, duplicates=duplicates, how=how)
    elif by == "token_id":
        if normalize is not None or how != "inner":
            raise InputError("normalize and how apply to decoded strings; with by='token_id' leave them as they are")
        first_name, first = next(iter(parts.items()))
        tokens = first.set_index("token_id")["token"]
        for name, t in parts.items():
            if not t["token_id"].is_unique:
                raise InputError(f"table {name!r} scores a token id twice")
            shared = t.set_index("token_id")["token"].reindex(tokens.index).dropna()
            clash = shared.index[shared.to_numpy() != tokens.reindex(shared.index).to_numpy()]
            if len(clash):
                raise InputError(
                    f"{first_name!r} and {name!r} have different tokenizers (token id {int(clash[0])} is "
                    f"{tokens[clash[0]]!r} in one and {shared[clash[0]]!r} in the other): join them with "
                    "by='decoded'"
                )
        cols = {name: t.dropna(subset=["score"]).set_index("token_id")["score"] for name, t in parts.items()}
        out = pd.DataFrame(cols).dropna().sort_index()
        out.index = out.index.astype(np.int64)
        out.index.name = "token_id"
        decoded = pd.concat([t.set_index("token_id")["decoded"] for t in parts.values()])
        decoded = decoded[~decoded.index.duplicated()]
        out.attrs["decoded"] = decoded.reindex(out.index).to_dict()
    else:
        raise InputError(f"by must be 'decoded' or 'token_id', got {by!r}")
    out.columns.name = across
    return out


__all__ += ["common_token_sample", "score_texts_models", "require_scorer"]


def common_token_sample(long: pd.DataFrame, n: int, seed: int = 0) -> np.ndarray:
    """``n`` token ids (sorted; all when fewer) drawn without replacement, with ``seed``, from the
    ids that every model of the long table has scored."""
    _check_long(long)
    common = sorted(set.intersection(*(set(g["token_id"]) for _, g in long.groupby("model"))))
    return np.sort(np.random.default_rng(seed).choice(common, size=min(n, len(common)), replace=False))


def score_texts_models(models: Sequence[str], prompts: Mapping[str, str], texts, *,
                       cache_dir=None, progress: bool = True, column=None,
                       model_kwargs: Mapping[str, Mapping] | None = None,
                       **load_kwargs) -> tuple[dict[str, pd.DataFrame], pd.DataFrame]:
    """Score ``texts`` as whole responses to each prompt with every model, through the text cache.

    Each model is loaded once, scores ``texts`` for every prompt with
    :func:`rmlib.tables.store.score_texts` (cached on disk, resumable) and is
    freed before the next loads. ``prompts``: key -> prompt text. ``texts``:
    one sequence for every prompt, or a mapping key -> the texts for that
    prompt (each key of ``prompts`` present).
    ``column(model_id, kind)`` names a model's column (default: its ``model_id``).
    Returns ``({key: texts x columns}, provenance)``, one provenance row per
    (model, prompt): model id, revision, dtype, scorer, mode, prompt key, rmlib version, the seconds it
    took and the texts per second.
    """
    import time

    from .store import score_texts

    models = _unique_strings(models, "models")
    model_kwargs = _model_kwargs(model_kwargs, models)
    if isinstance(texts, Mapping):
        missing = [k for k in prompts if k not in texts]
        if missing:
            raise InputError(f"texts has no entry for prompts {missing}: give texts for every prompt key")
        per_key = {k: list(texts[k]) for k in prompts}
    else:
        per_key = dict.fromkeys(prompts, list(texts))
    scores = {key: pd.DataFrame(index=pd.Index(per_key[key])) for key in prompts}
    prov = []
    for spec in models:
        scorer = load_scorer(spec, **{**load_kwargs, **dict(model_kwargs.get(spec, {}))})
        try:
            model_id = scorer.provenance(next(iter(prompts.values())), "token")["model_id"]
            name = column(model_id, scorer.kind) if column else model_id
            for key, prompt in prompts.items():
                start = time.perf_counter()
                out = score_texts(scorer, prompt, per_key[key], cache_dir=cache_dir, progress=progress)
                seconds = time.perf_counter() - start
                scores[key][name] = out["score"].to_numpy()
                p = out.attrs["provenance"]
                prov.append({"column": name, "model_id": p["model_id"], "revision": p["revision"],
                             "dtype": p.get("dtype"), "scorer": p["scorer"], "mode": p["mode"], "prompt": key,
                             "rmlib": p.get("rmlib_version"), "items": len(out),
                             "seconds": round(seconds, 1), "items per second": round(len(out) / seconds, 1)})
        finally:
            scorer = None  # the last reference: the model is freed before the next one loads
            _release_memory()
    return scores, pd.DataFrame(prov)


def require_scorer(long: pd.DataFrame, kind: str, why: str) -> None:
    """Raise ``ValueError`` naming the models of ``long`` whose scorer is not ``kind`` (``why``: the fix)."""
    prov = pd.DataFrame(long.attrs["provenance"])
    other = prov.loc[prov["scorer"] != kind, "model_id"].unique().tolist()
    if other:
        raise InputError(f"{other} are not scored by {kind!r} (scorer != {kind!r}): {why}")


class CachedScorer:
    """A scorer whose ``score_tokens`` goes through the score cache (:func:`rmlib.tables.store.score_vocabulary`):
    what the explorer of chapter 1 uses, so its first result is read back, not scored again."""

    def __init__(self, spec: str, **load_kwargs):
        self.scorer = load_scorer(spec, **{"lite": True, **load_kwargs})  # token path only

    def score_tokens(self, prompt: str, token_ids=None) -> pd.DataFrame:
        return score_vocabulary(self.scorer, prompt, token_ids, progress=False)

