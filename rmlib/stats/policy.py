"""From a reward model to the policy it would train, exactly, for single-token answers.

Two ingredients over one vocabulary: a reference language model's
log-probabilities ``log π_ref(y)`` of each token as the answer's first token,
and a reward model's score ``r(y)`` of each token as the whole answer (same
tokenizer). Two policies follow from them in closed form, with no sampling
and no training:

* **The KL-regularised optimum.** The policy that maximises
  ``E_π[r] − β KL(π ‖ π_ref)`` (the objective of KL-regularised RLHF) is
  ``π*(y) = π_ref(y) exp(r(y)/β) / Z(β)``. :func:`kl_optimal` computes
  ``log π*`` with the log-sum-exp trick; ``β = 0`` is its limit "reward
  only" (all mass on the highest reward, split among tied tokens in
  proportion to ``π_ref``) and ``β = inf`` the limit "reference only"
  (``π_ref``).
* **Best-of-n.** Draw ``n`` tokens from ``π_ref``, answer with the one of
  highest reward. With the rewards sorted, let ``F_le(r)`` and ``F_lt(r)``
  be the reference's probability of a reward ``≤ r`` and ``< r``. The best
  of ``n`` draws has reward ``r_g`` with probability
  ``F_le(r_g)^n − F_lt(r_g)^n``; tokens tied at ``r_g`` are equally good, so
  the draw among them that is kept is one of them in proportion to
  ``π_ref`` (each tied token's share is ``π_ref(y) / π_ref(tie group)``).
  :func:`best_of_n` computes it in log space, exactly for any real
  ``n ≥ 1``.

Tables: :func:`policy_inputs` aligns a reference's long table with a reward
model's on token ids (one tokenizer), renormalising ``π_ref`` over the tokens
the reward model scored when that is a subset (:func:`coverage` says how much
of the reference's probability they hold); :func:`kl_path`,
:func:`best_of_n_path`, :func:`top_tokens`, :func:`crossover`,
:func:`best_of_n_matching`, :func:`frequency_correlations`,
:func:`term_controls` and :func:`group_mass` compute what a chapter shows,
one row per (pair, prompt, β or n). The sentences about them are written on
the page that shows them (chapter 9).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np
import pandas as pd
from scipy import stats as sps
from scipy.special import logsumexp

from rmlib.errors import InputError
from rmlib.stats.lexical import match_lexicon, normalize_strings
from rmlib.stats.matched import matched_controls
from rmlib.tables.schema import LONG_COLUMNS, check_columns

#: The columns of :func:`policy_inputs`; the columns that name one distribution.
INPUT_COLUMNS = ("pair", "reference", "reward_model", "prompt", "token_id", "token", "decoded",
                 "log_ref_vocab", "log_ref", "reward")
KEYS = ("pair", "prompt")
#: The largest n :func:`best_of_n_matching` looks at.
N_CAP = 2.0 ** 60


# --------------------------------------------------------------------------- one distribution (arrays)
def _ingredients(log_ref, reward) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    log_ref = np.asarray(log_ref, dtype=float).ravel()
    reward = np.asarray(reward, dtype=float).ravel()
    if log_ref.shape != reward.shape:
        raise InputError(f"log_ref and reward must have one value per token: got {log_ref.size} and {reward.size}")
    if log_ref.size == 0:
        raise InputError("no tokens: log_ref and reward are empty")
    if np.isnan(log_ref).any() or np.isposinf(log_ref).any():
        raise InputError("log_ref holds NaN or +inf: pass log-probabilities (finite, or -inf for probability 0)")
    if not np.isfinite(reward).all():
        raise InputError("reward holds NaN or infinite values: drop those tokens or rescore them")
    support = np.isfinite(log_ref)
    if not support.any():
        raise InputError("the reference gives every token probability 0 (log_ref is -inf everywhere)")
    return log_ref - logsumexp(log_ref), reward, support


def kl_optimal(log_ref, reward, beta: float) -> np.ndarray:
    """``log π*(y)`` for ``π*(y) ∝ π_ref(y) exp(r(y)/β)``, normalised over the tokens given.

    ``log_ref``: the reference's log-probabilities (renormalised here over
    these tokens; ``-inf`` = probability 0); ``reward``: one finite reward
    per token; ``beta`` ≥ 0 in the reward's units: ``0`` is the limit "reward
    only" (the highest reward among tokens the reference can say, ties in
    proportion to ``π_ref``), ``inf`` the reference itself. Stable for any
    ``beta`` (log-sum-exp, rewards shifted by their maximum first).
    """
    log_ref, reward, support = _ingredients(log_ref, reward)
    if isinstance(beta, (bool, str)) or not isinstance(beta, (int, float, np.number)) or not float(beta) >= 0:
        raise InputError(f"beta must be a number >= 0 (0: reward only, inf: reference only), got {beta!r}")
    beta = float(beta)
    top = reward[support].max()
    with np.errstate(over="ignore"):
        gap = np.where(support, reward - top, 0.0)  # <= 0 where the reference can say the token
    if beta == 0:
        shift = np.where(gap == 0, 0.0, -np.inf)
    else:
        with np.errstate(over="ignore", under="ignore", invalid="ignore"):
            # a gap beyond the float range (rewards near ±1e308) is taken as twice its half, which is finite
            shift = np.where(np.isfinite(gap), gap / beta, ((reward / 2 - top / 2) / beta) * 2)  # in [-inf, 0]
    z = log_ref + shift
    return z - logsumexp(z)


def _tie_groups(log_ref: np.ndarray, reward: np.ndarray, support: np.ndarray) -> dict:
    """The reference's tokens grouped by equal reward (ascending): what best-of-n needs, once per table."""
    idx = np.flatnonzero(support)
    values, inverse = np.unique(reward[idx], return_inverse=True)
    p = np.exp(log_ref[idx])
    p_g = np.bincount(inverse, weights=p, minlength=values.size)
    order = np.argsort(inverse, kind="stable")
    starts = np.searchsorted(inverse[order], np.arange(values.size))
    log_p_g = np.logaddexp.reduceat(log_ref[idx][order], starts)
    above = np.concatenate([np.cumsum(p_g[::-1])[::-1][1:], [0.0]]).clip(0.0, 1.0)  # P(reward > r_g)
    below = np.cumsum(p_g).clip(0.0, 1.0)  # P(reward <= r_g), accurate at the bottom
    with np.errstate(divide="ignore"):
        log_le = np.where(above < 0.5, np.log1p(-above), np.log(below))
    # c_g = sum over the group of (p_y / p_g) log p_y, for the entropy
    share = np.exp(log_ref[idx] - log_p_g[inverse])
    c_g = np.bincount(inverse, weights=share * log_ref[idx], minlength=values.size)
    best_in = np.full(values.size, -np.inf)
    np.maximum.at(best_in, inverse, log_ref[idx])
    return {"idx": idx, "inverse": inverse, "values": values, "p_g": p_g, "log_p_g": log_p_g,
            "log_le": log_le, "c_g": c_g, "best_in": best_in}


def _bon_group_logp(groups: dict, n: float) -> np.ndarray:
    """log P(the best of n draws has reward r_g), for every tie group g."""
    n = float(n)
    if not n >= 1:
        raise InputError(f"n must be >= 1 (the number of draws), got {n}")
    log_le = groups["log_le"]
    if np.isinf(n):  # the limit: the best reward the reference can say, always drawn
        return np.where(np.arange(log_le.size) == log_le.size - 1, 0.0, -np.inf)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore", under="ignore"):
        ratio = np.exp(groups["log_p_g"] - log_le)  # P(r = r_g) / P(r <= r_g), in (0, 1]
        # F_le^n - F_lt^n = F_le^n (1 - (1 - ratio)^n), the bracket as -expm1(n log1p(-ratio)) for precision
        out = n * log_le + np.log(-np.expm1(n * np.log1p(-np.minimum(ratio, 1.0))))
    return np.where(np.isfinite(log_le), out, -np.inf)


def best_of_n(log_ref, reward, n: float) -> np.ndarray:
    """``log P(y)``: the probability that token ``y`` is the answer of best-of-``n`` sampling.

    ``n`` draws from ``π_ref`` (renormalised over the tokens given), the one
    of highest ``reward`` kept; ties share their group's probability in
    proportion to ``π_ref`` (see the module text for the formula). ``n`` is
    a real number ≥ 1 (``n = 1`` is the reference). Tokens the reference
    cannot say get ``-inf``.
    """
    log_ref, reward, support = _ingredients(log_ref, reward)
    groups = _tie_groups(log_ref, reward, support)
    log_pg = _bon_group_logp(groups, n)
    out = np.full(log_ref.shape, -np.inf)
    inv = groups["inverse"]
    out[groups["idx"]] = log_pg[inv] - groups["log_p_g"][inv] + log_ref[groups["idx"]]
    return out


def summarize(logp, log_ref, reward) -> dict:
    """``entropy`` (nats), ``expected_reward`` and ``kl`` = KL(π ‖ π_ref) (nats) of a policy ``logp``.

    From the definitions: ``-Σ π log π``, ``Σ π r`` and ``Σ π (log π - log π_ref)``
    over the tokens with ``π > 0`` (``log_ref`` renormalised over the tokens given).
    """
    logp = np.asarray(logp, dtype=float).ravel()
    log_ref, reward, _ = _ingredients(log_ref, reward)
    if logp.shape != log_ref.shape:
        raise InputError(f"logp, log_ref and reward must have one value per token: got {logp.size}, {log_ref.size} "
                         f"and {reward.size}")
    p = np.exp(logp)
    on = p > 0
    return {"entropy": float(-(p[on] * logp[on]).sum()) + 0.0, "expected_reward": float((p * reward).sum()),
            "kl": float((p[on] * (logp[on] - log_ref[on])).sum())}


def kl_approximation(n) -> np.ndarray:
    """The usual estimate of best-of-n's KL from the reference: ``log n − (n − 1)/n`` nats (an upper
    bound; exact only when the reference has no ties and tiny probabilities)."""
    n = np.asarray(n, dtype=float)
    if not (n >= 1).all():
        raise InputError(f"n must be numbers >= 1 (the number of draws), got {n.tolist()!r}")
    with np.errstate(invalid="ignore"):
        return np.where(np.isinf(n), np.inf, np.log(n) - (n - 1) / n)


def crossover_beta(log_ref_a: float, reward_a: float, log_ref_b: float, reward_b: float) -> float:
    """The β at which tokens ``a`` and ``b`` swap places in π*: ``(r_a − r_b) / (log π_ref(b) − log π_ref(a))``.

    ``log π*(a) − log π*(b) = log π_ref(a) − log π_ref(b) + (r_a − r_b)/β``
    (``Z`` cancels), so they swap at one β when one token is better
    rewarded and the other more likely under the reference: below that β
    the better rewarded one is ahead, above it the more likely one. NaN
    when they never swap (one is ahead at every β, or they tie).
    """
    dr, dl = float(reward_a) - float(reward_b), float(log_ref_a) - float(log_ref_b)
    if dr * dl >= 0 or not np.isfinite(dl):
        return float("nan")
    return abs(dr / dl)


# --------------------------------------------------------------------------- tables
def _models(table: pd.DataFrame, what: str) -> list:
    check_columns(table, LONG_COLUMNS, what, hint="a long table from rmlib.runs.scoring.score_models",
                  allow_empty=False)
    return list(dict.fromkeys(table["model"]))


def policy_inputs(reference: pd.DataFrame, reward: pd.DataFrame, *, pair: str | None = None,
                  label=str) -> pd.DataFrame:
    """Reference LMs and reward models aligned on token ids, per pair and prompt.

    ``reference``: a long table (``rmlib.runs.scoring.score_models`` of ``logprob``
    scorers, or the paper's logits with ``score`` = their ``log_prob``), its
    ``score`` a log-probability over the whole vocabulary; ``reward``: a long
    table of reward models, the whole vocabulary or a subset, for some of the
    reference's prompts. The k-th model of ``reward`` pairs with the k-th of
    ``reference`` (order of appearance) and must share its tokenizer.

    Returns :data:`INPUT_COLUMNS`, one row per token a reward model scored:
    ``log_ref_vocab`` is the reference's log-probability as given (over its
    whole vocabulary), ``log_ref`` the same renormalised over the scored
    tokens (the reference conditioned on answering with one of them),
    ``reward`` the reward. ``pair`` names the pair ``"<label(reference)> +
    <label(reward model)>"``, or is given (one pair only). Errors name the
    problem: unequal numbers of models, different tokenizers (token ids
    missing from the reference, or token strings that differ), a reference
    that is not log-probabilities, a prompt the reference lacks.
    """
    refs, rms = _models(reference, "reference"), _models(reward, "reward")
    if len(refs) != len(rms):
        raise InputError(f"the reference table has {len(refs)} models and the reward table {len(rms)}: they pair up "
                         "one to one, in order")
    if pair is not None and len(refs) > 1:
        raise InputError(f"pair names one pair, but the tables hold {len(refs)}: leave pair out to name them by label")
    parts = [_pair_inputs(reference[reference["model"] == a], reward[reward["model"] == b],
                          pair or f"{label(a)} + {label(b)}") for a, b in zip(refs, rms)]
    return pd.concat(parts, ignore_index=True)


def _pair_inputs(reference: pd.DataFrame, reward: pd.DataFrame, pair: str) -> pd.DataFrame:
    ref_model, rm_model = reference["model"].iat[0], reward["model"].iat[0]
    parts = []
    for prompt, rm in reward.groupby("prompt", sort=False):
        ref = reference[reference["prompt"] == prompt]
        if ref.empty:
            raise InputError(f"the reference {ref_model!r} has no table for the prompt {prompt!r}: score it for "
                             "every prompt the reward model has")
        ref_scores = ref["score"].to_numpy(float)
        if np.isnan(ref_scores).any():
            bad = ref.loc[np.isnan(ref_scores), "token_id"].head(5).tolist()
            raise InputError(f"the reference {ref_model!r} has {int(np.isnan(ref_scores).sum())} NaN log-probabilities "
                             f"for the prompt {prompt!r} (token ids {bad}): rescore it (a float32 model, or check its "
                             "weights)")
        mass = float(np.exp(logsumexp(ref_scores)))
        if not mass <= 1 + 1e-3:
            raise InputError(f"the reference's scores for {prompt!r} sum to a probability of {mass:.4g} > 1: they are "
                             "not log-probabilities (pass a logprob scorer's table, or log-softmax logits first)")
        if ref["token_id"].duplicated().any() or rm["token_id"].duplicated().any():
            raise InputError(f"a token id appears twice for the prompt {prompt!r}: pass one row per token")
        j = rm[["token_id", "token", "decoded", "score"]].merge(
            ref[["token_id", "token", "score"]], on="token_id", how="left", suffixes=("", "_ref"))
        missing = j["score_ref"].isna()
        if missing.any():
            raise InputError(f"{int(missing.sum())} token ids the reward model scored are not in the reference's table "
                             f"(e.g. {j.loc[missing, 'token_id'].head(5).tolist()}): the two need the same tokenizer "
                             "and the reference its whole vocabulary")
        differ = j["token"].astype(str) != j["token_ref"].astype(str)
        if differ.any():
            ex = j.loc[differ].iloc[0]
            raise InputError(f"{int(differ.sum())} token ids name different tokens in the two tables (id "
                             f"{int(ex['token_id'])}: {ex['token']!r} vs {ex['token_ref']!r}): the reference and the "
                             "reward model must share a tokenizer")
        j = j.sort_values("token_id", kind="stable")
        log_vocab = j["score_ref"].to_numpy(float)
        if not np.isfinite(log_vocab).any():
            raise InputError(f"the reference {ref_model!r} gives probability 0 to every token the reward model "
                             f"{rm_model!r} scored for the prompt {prompt!r} ({len(j)} tokens): no policy can be built "
                             "on them; score more of the vocabulary with the reward model, or use another reference")
        parts.append(pd.DataFrame({
            "pair": pair, "reference": ref_model, "reward_model": rm_model, "prompt": prompt,
            "token_id": j["token_id"].to_numpy(np.int64), "token": j["token"].to_numpy(),
            "decoded": j["decoded"].to_numpy(), "log_ref_vocab": log_vocab,
            "log_ref": log_vocab - logsumexp(log_vocab), "reward": j["score"].to_numpy(float),
        }))
    return pd.concat(parts, ignore_index=True)


def _groups(inputs: pd.DataFrame):
    check_columns(inputs, INPUT_COLUMNS, "inputs", hint="build it with rmlib.stats.policy.policy_inputs",
                  allow_empty=False)
    return inputs.groupby(list(KEYS), sort=False)


def coverage(inputs: pd.DataFrame) -> pd.DataFrame:
    """Per (pair, prompt): ``n_tokens`` the reward model scored and ``reference_mass``, the reference's
    probability of answering with one of them (1 for the whole vocabulary; below 1 the policies here are
    over that subset, the reference renormalised over it)."""
    rows = [{"pair": pair, "prompt": prompt, "n_tokens": len(g),
             "reference_mass": float(np.exp(logsumexp(g["log_ref_vocab"].to_numpy(float))))}
            for (pair, prompt), g in _groups(inputs)]
    return pd.DataFrame(rows)


def _betas(betas) -> np.ndarray:
    try:
        b = np.atleast_1d(np.asarray(betas, dtype=float))
    except (TypeError, ValueError):
        raise InputError(f"betas must be numbers >= 0 (0: reward only, inf: reference only), got {betas!r}") from None
    if b.size == 0 or not (b >= 0).all():
        raise InputError(f"betas must be numbers >= 0 (0: reward only, inf: reference only), got {betas!r}")
    return b


def _top(logp: np.ndarray, g: pd.DataFrame) -> dict:
    k = int(np.argmax(logp))
    return {"top_token_id": int(g["token_id"].iat[k]), "top_decoded": g["decoded"].iat[k],
            "top_prob": float(np.exp(logp[k]))}


def beta_label(beta: float) -> str:
    """How a table names a β: ``0 (reward only)``, ``∞ (reference)`` or the number (``%g``)."""
    beta = float(beta)
    return "0 (reward only)" if beta == 0 else "∞ (reference)" if np.isinf(beta) else f"{beta:g}"


def kl_path(inputs: pd.DataFrame, betas) -> pd.DataFrame:
    """The KL-regularised optimum along ``betas``: one row per (pair, prompt, beta) with ``entropy``,
    ``expected_reward``, ``kl`` (KL(π* ‖ π_ref), nats) and its most likely token (``top_*``)."""
    rows = []
    for (pair, prompt), g in _groups(inputs):
        log_ref, reward = g["log_ref"].to_numpy(float), g["reward"].to_numpy(float)
        for beta in _betas(betas):
            logp = kl_optimal(log_ref, reward, beta)
            rows.append({"pair": pair, "prompt": prompt, "beta": float(beta), **summarize(logp, log_ref, reward),
                         **_top(logp, g)})
    return pd.DataFrame(rows)


def _ns(ns) -> np.ndarray:
    try:
        n = np.atleast_1d(np.asarray(ns, dtype=float))
    except (TypeError, ValueError):
        raise InputError(f"n must be finite numbers >= 1, got {ns!r}") from None
    if n.size == 0 or not (n >= 1).all() or not np.isfinite(n).all():
        raise InputError(f"n must be finite numbers >= 1, got {ns!r}")
    return n


def _bon_stats(groups: dict, n: float) -> dict:
    """Entropy, expected reward, KL and top token of best-of-n, from the tie groups (O(groups))."""
    log_pg = _bon_group_logp(groups, n)
    P = np.exp(log_pg)
    on = P > 0
    lr = log_pg[on] - groups["log_p_g"][on]  # log π_bon(y) - log π_ref(y), the same for a whole group
    top_g = int(np.argmax(log_pg - groups["log_p_g"] + groups["best_in"]))
    return {"entropy": float(-(P[on] * (lr + groups["c_g"][on])).sum()) + 0.0,
            "expected_reward": float((P * groups["values"]).sum()), "kl": float((P[on] * lr).sum()),
            "top_group": top_g, "top_log_prob": float(log_pg[top_g] - groups["log_p_g"][top_g]
                                                       + groups["best_in"][top_g])}


def best_of_n_path(inputs: pd.DataFrame, ns) -> pd.DataFrame:
    """Best-of-n with the reference as sampler, along ``ns``: one row per (pair, prompt, n) with
    ``entropy``, ``expected_reward``, ``kl`` (exact, nats), ``kl_approx`` (``log n − (n−1)/n``) and
    its most likely token (``top_*``)."""
    rows = []
    for (pair, prompt), g in _groups(inputs):
        log_ref, reward, support = _ingredients(g["log_ref"], g["reward"])
        groups = _tie_groups(log_ref, reward, support)
        for n in _ns(ns):
            s = _bon_stats(groups, n)
            members = groups["idx"][groups["inverse"] == s["top_group"]]
            k = int(members[np.argmax(log_ref[members])])
            rows.append({"pair": pair, "prompt": prompt, "n": float(n), "entropy": s["entropy"],
                         "expected_reward": s["expected_reward"], "kl": s["kl"],
                         "kl_approx": float(kl_approximation(n)), "top_token_id": int(g["token_id"].iat[k]),
                         "top_decoded": g["decoded"].iat[k], "top_prob": float(np.exp(s["top_log_prob"]))})
    return pd.DataFrame(rows)


def best_of_n_matching(inputs: pd.DataFrame, beta: float = 1.0) -> pd.DataFrame:
    """The smallest whole ``n`` whose best-of-n reaches the expected reward of π* at ``beta``.

    Best-of-n's expected reward grows with ``n`` (the best of more draws is
    never worse), so a bisection over whole numbers finds it exactly; ``n``
    is ``inf`` when not even ``2**60`` draws reach it. One row per (pair,
    prompt): ``beta``, ``policy_reward`` and ``policy_kl`` (π*), ``n``,
    ``bon_reward``, ``bon_kl`` (exact) and ``kl_approx`` at that ``n``.
    """
    rows = []
    for (pair, prompt), g in _groups(inputs):
        log_ref, reward, support = _ingredients(g["log_ref"], g["reward"])
        target = summarize(kl_optimal(log_ref, reward, beta), log_ref, reward)
        groups = _tie_groups(log_ref, reward, support)
        reached = lambda n: _bon_stats(groups, n)["expected_reward"] >= target["expected_reward"] - 1e-12  # noqa: E731
        if not reached(N_CAP):
            n = float("inf")
        else:
            lo, hi = 1.0, 1.0
            while not reached(hi):
                lo, hi = hi, hi * 2
            while hi - lo > 1:
                mid = float(np.floor((lo + hi) / 2))
                lo, hi = (lo, mid) if reached(mid) else (mid, hi)
            n = lo if reached(lo) else hi
        at = _bon_stats(groups, n) if np.isfinite(n) else {"expected_reward": np.nan, "kl": np.nan}
        rows.append({"pair": pair, "prompt": prompt, "beta": float(beta), "policy_reward": target["expected_reward"],
                     "policy_kl": target["kl"], "n": n, "bon_reward": at["expected_reward"], "bon_kl": at["kl"],
                     "kl_approx": float(kl_approximation(n)) if np.isfinite(n) else np.nan})
    return pd.DataFrame(rows)


def top_tokens(inputs: pd.DataFrame, betas, n: int = 5) -> pd.DataFrame:
    """The ``n`` most likely tokens of π* at each β: one row per (pair, prompt, beta, rank) with
    ``token_id, token, decoded, prob`` (ties by token id). At ``β = 0`` the order is the one π* takes
    as β falls to 0 (by reward, then by the reference), though only the best-rewarded tokens keep
    probability there: the reward model's optimal tokens."""
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
        raise InputError(f"n must be a positive whole number, got {n!r}")
    rows = []
    for (pair, prompt), g in _groups(inputs):
        ids = g["token_id"].to_numpy()
        for beta in _betas(betas):
            logp = kl_optimal(g["log_ref"], g["reward"], beta)
            keys = (ids, -g["log_ref"].to_numpy(float), -g["reward"].to_numpy(float)) if beta == 0 else (ids, -logp)
            order = np.lexsort(keys)[:n]
            rows.append(pd.DataFrame({"pair": pair, "prompt": prompt, "beta": float(beta),
                                      "rank": np.arange(1, len(order) + 1), "token_id": ids[order],
                                      "token": g["token"].to_numpy()[order], "decoded": g["decoded"].to_numpy()[order],
                                      "prob": np.exp(logp[order])}))
    return pd.concat(rows, ignore_index=True)


def token_probabilities(inputs: pd.DataFrame, tokens: pd.DataFrame, betas,
                        id_columns: Sequence[str] = ("token_id",)) -> pd.DataFrame:
    """π*(y) along ``betas`` for chosen tokens: ``tokens`` has columns ``pair, prompt`` and the
    ``id_columns`` holding token ids (e.g. :func:`crossover`'s ``token_id`` and ``rival_id``).
    One row per (pair, prompt, beta, token): ``token_id, decoded, prob``."""
    check_columns(tokens, ("pair", "prompt", *id_columns), "tokens")
    rows = []
    for (pair, prompt), g in _groups(inputs):
        mine = tokens[(tokens["pair"] == pair) & (tokens["prompt"] == prompt)]
        pos = np.flatnonzero(g["token_id"].isin(mine[list(id_columns)].to_numpy().ravel()).to_numpy())
        if pos.size == 0:
            continue
        for beta in _betas(betas):
            logp = kl_optimal(g["log_ref"], g["reward"], beta)
            rows.append(pd.DataFrame({"pair": pair, "prompt": prompt, "beta": float(beta),
                                      "token_id": g["token_id"].to_numpy()[pos],
                                      "decoded": g["decoded"].to_numpy()[pos], "prob": np.exp(logp[pos])}))
    cols = ["pair", "prompt", "beta", "token_id", "decoded", "prob"]
    return pd.concat(rows, ignore_index=True)[cols] if rows else pd.DataFrame(columns=cols)


def crossover(inputs: pd.DataFrame, word: str) -> pd.DataFrame:
    """When does ``word`` overtake the reference's favourite token in π*?

    Per (pair, prompt): ``token``, the token whose decoded text is ``word``
    (lower-cased, white space stripped; of several, the best rewarded) and
    ``rival``, the reference's most likely token; their rewards and
    reference log-probabilities, and ``crossover_beta`` from
    :func:`crossover_beta`: π* prefers the token for every β below it (NaN:
    never, because the rival is rewarded at least as well, or the token is
    the reference's favourite itself). Pairs without such a token are left out.
    """
    rows = []
    key = normalize_strings([word]).iat[0]
    for (pair, prompt), g in _groups(inputs):
        hits = g[normalize_strings(g["decoded"]).to_numpy() == key]
        if hits.empty:
            continue
        a = hits.loc[hits["reward"].idxmax()]
        b = g.loc[g["log_ref"].idxmax()]
        rows.append({"pair": pair, "prompt": prompt, "token_id": int(a["token_id"]), "token": a["decoded"],
                     "rival_id": int(b["token_id"]), "rival": b["decoded"], "reward_token": float(a["reward"]),
                     "reward_rival": float(b["reward"]), "log_ref_token": float(a["log_ref"]),
                     "log_ref_rival": float(b["log_ref"]),
                     "crossover_beta": crossover_beta(a["log_ref"], a["reward"], b["log_ref"], b["reward"])})
    return pd.DataFrame(rows, columns=["pair", "prompt", "token_id", "token", "rival_id", "rival", "reward_token",
                                       "reward_rival", "log_ref_token", "log_ref_rival", "crossover_beta"])


# --------------------------------------------------------------------------- biases along beta
def _word_frequencies(frequencies) -> pd.DataFrame:
    check_columns(frequencies, ("word", "freq"), "frequencies",
                  hint="word_frequencies.bnc_frequencies() or stats.wordfreq_frequencies(words)")
    f = frequencies[["word", "freq"]].copy()
    f["freq"] = pd.to_numeric(f["freq"], errors="coerce")
    f = f[f["freq"] > 0].groupby("word", as_index=False)["freq"].sum()  # one frequency per word
    f["log_freq"] = np.log(f["freq"])
    return f


def frequency_correlations(inputs: pd.DataFrame, frequencies: pd.DataFrame, betas, *,
                           method: str = "spearman") -> pd.DataFrame:
    """The mere-exposure question along β: correlation of log π* with log word frequency.

    Tokens are matched to ``frequencies`` (``word, freq``: BNC or wordfreq)
    by their decoded text, lower-cased and stripped (each matching token one
    observation, as the paper). One row per (pair, prompt, beta, quantity):
    ``quantity`` is ``log π*`` (at that β), ``reward r`` or ``log π_ref``
    (the same at every β, for the two ends), with ``correlation``
    (``method``: ``spearman`` or ``pearson``) and ``n`` tokens.
    """
    if method not in ("spearman", "pearson"):
        raise InputError(f"method must be 'spearman' or 'pearson', got {method!r}")
    corr = sps.spearmanr if method == "spearman" else sps.pearsonr
    freq = _word_frequencies(frequencies)
    rows = []
    for (pair, prompt), g in _groups(inputs):
        g = g.reset_index(drop=True)
        m = match_lexicon(g.assign(_row=np.arange(len(g))), freq[["word", "log_freq"]])
        if len(m) < 3:
            continue
        pos, logf = m["_row"].to_numpy(), m["log_freq"].to_numpy(float)
        fixed = {"reward r": corr(g["reward"].to_numpy(float)[pos], logf)[0],
                 "log π_ref": corr(g["log_ref"].to_numpy(float)[pos], logf)[0]}
        for beta in _betas(betas):
            logp = kl_optimal(g["log_ref"], g["reward"], beta)[pos]
            values = {"log π*": corr(logp, logf)[0] if np.ptp(logp[np.isfinite(logp)]) > 0 else np.nan, **fixed}
            rows += [{"pair": pair, "prompt": prompt, "beta": float(beta), "quantity": q, "correlation": float(v),
                      "n": len(m)} for q, v in values.items()]
    return pd.DataFrame(rows, columns=["pair", "prompt", "beta", "quantity", "correlation", "n"])


def term_controls(inputs: pd.DataFrame, terms: Iterable[str], frequencies: pd.DataFrame, *,
                  k: int = 1, seed: int = 0) -> pd.DataFrame:
    """Tokens that are ``terms`` (e.g. identity-group words) and ``k`` frequency-matched controls each.

    Per (pair, prompt): the tokens whose decoded text (lower-cased,
    stripped) is one of ``terms`` and has a frequency; for each, in a seeded
    random order, the ``k`` not yet chosen tokens of the closest log
    frequency among tokens whose word is in ``frequencies`` but not in
    ``terms`` (:func:`rmlib.stats.matched.matched_controls`).
    Columns ``pair, prompt, group`` (``term`` / ``control``), ``token_id,
    decoded, word, log_freq, matched_to`` (the term token a control stands
    for; a term token names itself). A term token is one row, followed by its
    controls.
    """
    terms = {t for t in normalize_strings(list(terms)).dropna()}
    if not terms:
        raise InputError("terms is empty: give the words to compare with frequency-matched controls")
    freq = _word_frequencies(frequencies)
    cols = ["pair", "prompt", "group", "token_id", "decoded", "word", "log_freq", "matched_to"]
    rows = []
    for (pair, prompt), g in _groups(inputs):
        m = match_lexicon(g, freq[["word", "log_freq"]]).reset_index(drop=True)
        is_term = m["word"].isin(terms).to_numpy()
        if not is_term.any():
            continue
        sets = matched_controls(m, is_term, nearest=["log_freq"], k=k, seed=seed)
        for target, controls in sets.groupby("target", sort=False)["control"]:
            t = m.loc[target]
            for group, row in (("term", t), *(("control", m.loc[c]) for c in controls)):
                rows.append({"pair": pair, "prompt": prompt, "group": group, "token_id": int(row["token_id"]),
                             "decoded": row["decoded"], "word": row["word"], "log_freq": float(row["log_freq"]),
                             "matched_to": int(t["token_id"])})
    return pd.DataFrame(rows, columns=cols)


def group_mass(inputs: pd.DataFrame, groups: pd.DataFrame, betas) -> pd.DataFrame:
    """The probability π* puts on sets of tokens, along β.

    ``groups``: columns ``pair, prompt, token_id, group`` (e.g.
    :func:`term_controls`, or lexicon matches labelled positive /
    negative); a token counts once per group. One row per (pair, prompt,
    beta, group): ``n_tokens``, ``mass`` (Σ π*), ``reference_mass`` (Σ π_ref
    over the same tokens) and ``ratio`` = mass / reference_mass.
    """
    check_columns(groups, ("pair", "prompt", "token_id", "group"), "groups")
    groups = groups.drop_duplicates(["pair", "prompt", "token_id", "group"])
    rows = []
    for (pair, prompt), g in _groups(inputs):
        mine = groups[(groups["pair"] == pair) & (groups["prompt"] == prompt)]
        if mine.empty:
            continue
        members = {name: g["token_id"].isin(s["token_id"]).to_numpy() for name, s in mine.groupby("group", sort=False)}
        ref = np.exp(g["log_ref"].to_numpy(float))
        for beta in _betas(betas):
            p = np.exp(kl_optimal(g["log_ref"], g["reward"], beta))
            for name, on in members.items():
                mass, ref_mass = float(p[on].sum()), float(ref[on].sum())
                rows.append({"pair": pair, "prompt": prompt, "beta": float(beta), "group": name,
                             "n_tokens": int(on.sum()), "mass": mass, "reference_mass": ref_mass,
                             "ratio": mass / ref_mass if ref_mass > 0 else np.nan})
    return pd.DataFrame(rows, columns=["pair", "prompt", "beta", "group", "n_tokens", "mass", "reference_mass",
                                       "ratio"])


__all__ = [
    "INPUT_COLUMNS", "best_of_n", "best_of_n_matching", "best_of_n_path", "beta_label",
    "coverage", "crossover", "crossover_beta", "frequency_correlations",
    "group_mass", "kl_approximation", "kl_optimal", "kl_path", "term_controls",
    "policy_inputs", "summarize", "token_probabilities", "top_tokens",
]
