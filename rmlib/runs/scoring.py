"""Score many models on many prompts: each model loaded once, scored through the caches of
:mod:`rmlib.tables.store` (score tables, text scores) and freed before the next loads.

* :func:`score_models`: every model's vocabulary (or a stated subset) for every prompt, as one *long*
  table (:data:`rmlib.tables.schema.LONG_COLUMNS`; :func:`rmlib.tables.results.wide` and
  :func:`rmlib.tables.results.tables` reshape it);
* :func:`compare_modes`: the same tokens scored the exact way (``mode="token"``) and the published
  way (``mode="paper"``), per model;
* :func:`score_texts_models`: texts as whole responses, through the text cache;
* :class:`CachedScorer`: one model whose token scores go through the score cache (chapter 1's explorer);
* :func:`live_scores`: the follow-up study's words scored here, in the layout of the released scores
  (:func:`rmlib.tables.followup.scores`).
"""

from __future__ import annotations

import gc
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from ..engine.scorers import load_scorer
from ..errors import InputError
from ..options import MODES, check_mode
from ..tables.results import resolve_subset, resolve_token_ids
from ..tables.schema import SCORE_COLUMNS
from ..tables.store import score_texts, score_vocabulary
from ..tables import memo
from ..tables.followup import (CORPORA, LONG_COLUMNS as FOLLOWUP_COLUMNS, PROMPT_FACTORS, TRAINED_HERE, dictionary,
                               prompt_keys, prompts as followup_prompts, words_by_prompt)

__all__ = ["LIVE_VERSION", "CachedScorer", "compare_modes", "live_scores", "model_identity", "score_models",
           "score_texts_models"]


def _unique_strings(values, what: str) -> list[str]:
    if isinstance(values, str):
        raise TypeError(f"{what} must be a list of strings, not one string: write [{values!r}]")
    if isinstance(values, Mapping):  # a dict iterates over its keys: its values would be dropped unseen
        raise TypeError(f"{what} must be a list of strings, not a mapping: write {list(values.values())!r} "
                        f"(or list(d.values()))")
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
            ids, stated = resolve_subset(per_model[spec], scorer.vocab_size, scorer.tokenizer, model_id=scorer.loaded.model_id)
            whole = resolve_subset(None, scorer.vocab_size)[1]
            # a prompt whose last blocks another run (another chapter) still holds is finished after the
            # other prompts: this run scores those meanwhile instead of waiting
            tables = {}
            for wait in (False, True):
                for k, prompt in enumerate(prompts):
                    if k not in tables:
                        table = score_vocabulary(scorer, prompt, None if k < full_vocab.get(spec, 0) else ids,
                                                 mode=mode, cache_dir=cache_dir, progress=progress, wait=wait)
                        if table is not None:
                            tables[k] = table
            for k, prompt in enumerate(prompts):
                full, table = k < full_vocab.get(spec, 0), tables[k]
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


class CachedScorer:
    """A scorer whose ``score_tokens`` goes through the score cache (:func:`rmlib.tables.store.score_vocabulary`):
    what the explorer of chapter 1 uses, so its first result is read back, not scored again."""

    def __init__(self, spec: str, **load_kwargs):
        self.scorer = load_scorer(spec, **{"lite": True, **load_kwargs})  # token path only

    def score_tokens(self, prompt: str, token_ids=None) -> pd.DataFrame:
        return score_vocabulary(self.scorer, prompt, token_ids, progress=False)


#: Bump when :func:`live_scores` computes its table differently (its result cache is keyed by it).
LIVE_VERSION = 1


def model_identity(spec: str) -> dict | None:
    """What identifies a local model without loading its weights (an embedded or ``trained:`` model, a
    folder): its spec and the fingerprint of its folder (a trained RM is trained first if missing).
    None for hub and test models (their scores are then not memoized here; the text cache still holds
    them)."""
    from ..engine import models as engine_models

    what = engine_models.check_model_spec(spec)
    if what in ("embedded", "trained"):
        return {"spec": spec, "folder": engine_models.folder_fingerprint(engine_models.prepare_checkpoint(spec))}
    if what == "folder":
        return {"spec": spec, "folder": engine_models.folder_fingerprint(spec)}
    return None


def live_scores(models: Sequence[str], subset: Mapping[str, Sequence[str]], *, labels=None,
                progress: bool = False, **load_kwargs) -> pd.DataFrame:
    """The follow-up's words scored here, in the long layout of :func:`rmlib.tables.followup.scores`.

    ``models``: model specs rmlib loads (``trained:default``, a hub id, a
    folder, ``tiny:...``). ``subset``: ``{corpus: [prompt keys]}``, e.g.
    ``{"big2": ["greatest_ever_one", "worst_ever_one"]}``: each model scores
    that corpus's words as the whole answer to each of those prompts. Scores
    go through the text cache (:func:`rmlib.runs.scoring.score_texts_models`,
    on disk); the finished table of a local model is also kept in the result
    cache (:mod:`rmlib.tables.memo`, keyed by the model folder's fingerprint,
    the prompts and the words), so a second call neither scores nor loads
    the model. ``labels``: model spec -> the name shown (default:
    ``"<spec> (trained here)"`` for ``trained:`` models, else
    ``"<spec> (scored here)"``). ``source`` and ``family`` are ``"trained
    here"`` or ``"scored here"`` (these models are not the follow-up's
    Gemma/Llama RMs). ``attrs["provenance"]``: one row per (model, prompt)
    with the seconds the scoring took (when it ran now or was memoized).
    """
    from ..engine.kernel import SCORING_REVISION

    models = list(dict.fromkeys(models))
    if not isinstance(subset, Mapping) or not subset:
        raise InputError(f"the live subset is empty ({subset!r}): give {{corpus: [prompt keys]}}, e.g. "
                         f"{{'big2': ['greatest_ever_one']}}, with corpora from {CORPORA}")
    if not models:
        return pd.DataFrame(columns=list(FOLLOWUP_COLUMNS))
    ptab = followup_prompts().set_index("prompt")
    per_prompt = words_by_prompt(subset)
    texts = {k: ptab.loc[k, "text"] for k in per_prompt}
    parts, prov = [], []
    for spec in models:  # one model at a time, its column named by its spec
        identity = model_identity(spec)
        facts = None if identity is None else {
            "model": identity, "prompts": texts, "words": per_prompt, "subset": {c: list(k) for c, k in subset.items()},
            "load_kwargs": {k: str(v) for k, v in load_kwargs.items()}, "scoring_revision": SCORING_REVISION}
        (part, p), _ = memo.cached("followup.live_scores", LIVE_VERSION, facts,
                                   lambda spec=spec: _score_live(spec, subset, per_prompt, texts, ptab, labels,
                                                                 progress, load_kwargs))
        parts.append(part)
        prov.append(p)
    out = pd.concat(parts, ignore_index=True)[list(FOLLOWUP_COLUMNS)]
    out.attrs = {"provenance": pd.concat(prov, ignore_index=True).to_dict("records"),
                 "subset": {c: list(k) for c, k in subset.items()}}
    return out


def _score_live(spec, subset, per_prompt, texts, ptab, labels, progress, load_kwargs):
    """One model's long table of :func:`live_scores` and its scoring provenance (scored through the text cache)."""
    wides, prov = score_texts_models([spec], texts, per_prompt, progress=progress,
                                     column=lambda model_id, kind: spec, **load_kwargs)
    src = TRAINED_HERE if spec.startswith("trained:") else "scored here"
    name = (labels or {}).get(spec, f"{spec} ({src})")
    parts = []
    for corpus, keys in subset.items():
        words = dictionary(corpus).set_index("word")
        for k in prompt_keys(list(keys)):
            parts.append(pd.DataFrame({
                "source": src, "model": spec, "nickname": name, "family": src, "corpus": corpus,
                "word": words.index.to_numpy(dtype=object), "category": words["category"].to_numpy(),
                "polarity": words["polarity"].to_numpy(), "prompt": k,
                **{c: ptab.loc[k, c] for c in PROMPT_FACTORS},
                "score": wides[k].loc[words.index, spec].to_numpy(dtype=float)}))
    return pd.concat(parts, ignore_index=True)[list(FOLLOWUP_COLUMNS)], prov
