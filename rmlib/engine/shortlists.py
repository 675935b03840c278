"""Stated candidate vocabularies: the best and worst single tokens of a pool, plus a seeded sample
(:func:`build_shortlist`); the searches then run over a shortlist only."""

from __future__ import annotations

import dataclasses
from typing import Sequence

import numpy as np
import pandas as pd

from ..errors import InputError
from .sweeps import allowed_ids, search_tokens


def best_singles(scorer, prompt: str, tokens: np.ndarray) -> pd.DataFrame:
    """Every token of ``tokens`` scored as a one-token response, highest first (token_id, score)."""
    tokens = np.asarray(tokens, dtype=np.int64)
    scores = scorer.token_scores(prompt, tokens)
    order = np.argsort(-scores, kind="stable")
    return pd.DataFrame({"token_id": tokens[order], "score": scores[order]})


@dataclasses.dataclass
class Shortlist:
    """A stated candidate vocabulary for one prompt (:func:`build_shortlist`).

    ``ids``: the shortlisted token ids (sorted); ``singles``: their single-token scores, highest
    first (a :func:`best_singles` table with the decoded ``text``, reused by the searches); ``pool_size``: how many tokens
    were scored as single tokens to choose them; ``source``: where those scores came from;
    ``description``: one sentence for the page.
    """

    prompt: str
    ids: np.ndarray
    singles: pd.DataFrame
    pool_size: int
    n_allowed: int
    k: int
    n_random: int
    sample: int | None
    seed: int
    description: str
    source: str = ""


def build_shortlist(scorer, prompt: str, *, k: int = 12, n_random: int = 8, sample: int | None = 256,
                    seed: int = 0, allowed: str = "ascii", pool: Sequence[int] | None = None,
                    singles: pd.DataFrame | None = None, source: str | None = None) -> Shortlist:
    """The ``k`` best and ``k`` worst single tokens of a pool, plus ``n_random`` more from it (seeded).

    With ``singles`` (a table with ``token_id`` and ``score`` columns: single-token scores for
    this prompt computed before, e.g. a score table of :mod:`rmlib.tables.results`), the pool is
    its allowed tokens and their scores are used as they are (nothing is scored); ``source``
    says in words where they came from. Otherwise the pool is ``pool`` when given, else a seeded
    random sample of ``sample`` allowed tokens (``sample=None`` or 0: every allowed token, which
    costs a scan of the whole vocabulary), and every pool token is scored once as a one-token
    response. The searches then run over the shortlist only, so "single-swap optimal" holds over
    the shortlist, not the vocabulary. Deterministic for a seed.
    """
    for name, v, low in (("k", k, 1), ("n_random", n_random, 0), ("seed", seed, 0)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < low:
            raise InputError(f"build_shortlist: {name} must be an int >= {low}, got {v!r}")
    if singles is not None and pool is not None:
        raise InputError("build_shortlist: give singles= (scores computed before) or pool= (to score now), not both")
    tokens = allowed_ids(scorer, allowed)
    rng = np.random.default_rng(seed)
    given = None
    if singles is not None:
        missing = {"token_id", "score"} - set(getattr(singles, "columns", []))
        if missing:
            raise InputError(f"build_shortlist: singles needs the columns token_id and score; it lacks {sorted(missing)}")
        given = singles[np.isin(singles["token_id"].to_numpy(), tokens)]
        if not len(given):
            raise InputError("build_shortlist: no token of `singles` passes the token filters "
                             f"(allowed={allowed!r}): relax them, or give scores of other tokens")
        order = np.argsort(-given["score"].to_numpy(dtype=np.float64), kind="stable")
        singles = pd.DataFrame({"token_id": given["token_id"].to_numpy(dtype=np.int64)[order],
                                "score": given["score"].to_numpy(dtype=np.float64)[order]})
        pool_ids = np.sort(singles["token_id"].to_numpy())
    elif pool is not None:
        pool_ids = search_tokens(scorer, allowed, pool)
    elif sample:
        if isinstance(sample, bool) or not isinstance(sample, (int, np.integer)) or sample < 1:
            raise InputError(f"build_shortlist: sample must be an int >= 1 or None, got {sample!r}")
        pool_ids = np.sort(rng.choice(tokens, min(int(sample), len(tokens)), replace=False))
    else:
        pool_ids = tokens
    if singles is None:
        singles = best_singles(scorer, prompt, pool_ids)
    order = singles["token_id"].to_numpy()
    chosen = list(dict.fromkeys([*order[:k].tolist(), *order[::-1][:k].tolist()]))
    rest = np.setdiff1d(pool_ids, chosen)
    if n_random and rest.size:
        chosen += rng.choice(rest, min(n_random, rest.size), replace=False).tolist()
    ids = np.sort(np.asarray(chosen, dtype=np.int64))
    kept = singles[singles["token_id"].isin(ids)].reset_index(drop=True)
    kept["text"] = [scorer.tokenizer.decode([int(i)]) for i in kept["token_id"]]
    kind = "ASCII" if allowed == "ascii" else "allowed"
    sampled = given is None and pool is None and bool(sample)
    source = source or ("given single-token scores for this prompt" if given is not None
                        else "scored as one-token responses to this prompt")
    if sampled:
        where = f"a seeded random sample of {len(pool_ids):,} of the {len(tokens):,} {kind} tokens (seed {seed})"
    elif len(pool_ids) == len(tokens):
        where = f"all {len(pool_ids):,} {kind} tokens"
    else:
        where = f"{'the' if given is not None else 'a given pool of'} {len(pool_ids):,} {kind} tokens (of {len(tokens):,})"
    desc = (f"{len(ids)} tokens: the {k} best and {k} worst single tokens of {where}, {source}, plus "
            f"{min(n_random, rest.size)} more drawn at random from them (seed {seed})")
    return Shortlist(prompt=prompt, ids=ids, singles=kept, pool_size=int(len(pool_ids)), n_allowed=int(len(tokens)),
                     k=int(k), n_random=int(n_random), sample=sample if sampled else None, seed=int(seed),
                     description=desc, source=source)
