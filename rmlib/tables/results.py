"""Long score tables across models and prompts: their columns, reshaping and the token ids to score.

:func:`rmlib.runs.scoring.score_models` makes a *long* table (columns ``model, prompt, token_id, token,
decoded, score``: :data:`LONG_COLUMNS`, what :mod:`rmlib.viz.charts` takes). Here:

* :func:`wide` turns a slice of a long table into the *wide* table that
  :mod:`rmlib.stats` takes (index = item, one column per model or prompt),
  joining on the decoded string (through
  :func:`rmlib.tables.vocabulary.shared_vocabulary`, duplicates handled there) or
  on the token id (one tokenizer only); :func:`tables` splits it into single-model tables;
* :func:`resolve_token_ids` / :func:`resolve_subset`: the ids a chapter parameter such as ``"0:300"``
  or ``"words"`` selects in a model's vocabulary (:func:`rmlib.options.vocab_slice` reads the parameter).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..errors import InputError
from ..options import vocab_slice  # noqa: F401 (vocab_slice re-exported)
from . import subsets
from .schema import LONG_COLUMNS, SCORE_COLUMNS, check_columns

__all__ = ["LONG_COLUMNS", "vocab_slice", "resolve_subset", "resolve_token_ids", "tables", "wide"]



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
        return resolve_subset(token_ids, vocab_size, tokenizer)[0]
    if isinstance(token_ids, str):
        token_ids = vocab_slice(token_ids)
        if token_ids is None:
            return None
        if token_ids == subsets.WORDS:
            return resolve_subset(token_ids, vocab_size, tokenizer)[0]
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


def resolve_subset(token_ids, vocab_size: int, tokenizer=None, keys=None, model_id: str = "") -> tuple[np.ndarray | None, str]:
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
        more, more_stated = resolve_subset(token_ids.plus, vocab_size, tokenizer, keys, model_id)
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


def _check_long(long: pd.DataFrame) -> None:
    check_columns(long, LONG_COLUMNS, "long score table", hint="make one with rmlib.runs.scoring.score_models")


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


__all__ += ["common_token_sample", "require_scorer"]


def common_token_sample(long: pd.DataFrame, n: int, seed: int = 0) -> np.ndarray:
    """``n`` token ids (sorted; all when fewer) drawn without replacement, with ``seed``, from the
    ids that every model of the long table has scored."""
    _check_long(long)
    common = sorted(set.intersection(*(set(g["token_id"]) for _, g in long.groupby("model"))))
    return np.sort(np.random.default_rng(seed).choice(common, size=min(n, len(common)), replace=False))


def require_scorer(long: pd.DataFrame, kind: str, why: str) -> None:
    """Raise ``ValueError`` naming the models of ``long`` whose scorer is not ``kind`` (``why``: the fix)."""
    prov = pd.DataFrame(long.attrs["provenance"])
    other = prov.loc[prov["scorer"] != kind, "model_id"].unique().tolist()
    if other:
        raise InputError(f"{other} are not scored by {kind!r} (scorer != {kind!r}): {why}")
