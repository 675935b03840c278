"""Greedy Coordinate Gradient (GCG) search for optimal and pessimal responses (paper §5).

Given a prompt and a fixed response length, find the token sequence that a
scorer rates highest (``maximize=True``, optimal) or lowest (``maximize=False``,
pessimal). One step, in the style of nanoGCG with the Faster-GCG changes:

1. **Gradient.** The response is a one-hot matrix X (L × V); its embeddings are
   ``X @ E``. The score's gradient ``∂score/∂X`` comes from one differentiable
   forward through the scoring kernel (:class:`rmlib.engine.kernel.PrefixKernel`,
   prompt prefix KV-cached): the classifier head on (response + template
   suffix) for a reward model, the summed log-probability for a causal LM, the
   policy's minus the reference's for an implicit reward.
2. **Direction.** Swapping position ``i`` to token ``v`` changes the score by
   about ``g[i, v] − g[i, current_i]``. Candidates are ranked by that
   first-order gain *times the sign of the search*: +1 when maximizing, −1 when
   minimizing. A pessimal search therefore ranks by the most negative gradient,
   never by the gradient of a loss that pushes the score up (a published fork of
   nanoGCG did exactly that for its pessimal search; ``tests/test_gcg.py``
   guards against it).
3. **Distance penalty** (Faster-GCG). ``distance_penalty`` w > 0 ranks by
   ``gain / rms(gain) − w · dist / rms(dist)``, where ``dist[i, v]`` is the
   Euclidean distance between the embeddings of ``v`` and of the current token
   at ``i``: the linear approximation is trusted less far away.
4. **Candidates.** Per position, the ``topk`` best-ranked allowed tokens whose
   swap gives a sequence not yet visited. ``sampling="greedy"`` (Faster-GCG)
   takes the ``search_width`` best-ranked of these over all positions,
   deterministically; ``sampling="random"`` (original GCG) draws
   ``search_width`` candidates, each swapping ``n_replace`` random positions to
   random tokens of their top-k (seeded).
5. **Evaluation.** Every candidate's true score is computed with
   :meth:`Scorer.sequence_scores` (prefix cached, batched). The search moves to
   the step's best candidate, even if it is worse than the best so far (the set
   of visited sequences keeps it from looping back); the best sequence ever
   seen is the result.

The search stops after ``num_steps`` steps, after ``patience`` steps without a
new best, after ``budget_seconds``, or when no unvisited candidate is left. GCG
gives no guarantee about where it stops; :mod:`rmlib.engine.search` adds exact
coordinate sweeps that end at a single-swap optimum and can polish GCG's result.
"""

from __future__ import annotations

import dataclasses
import time
import weakref
from typing import Sequence

import numpy as np
import pandas as pd
import torch

from ..options import SCORER_KINDS
from ..errors import InputError
from .token_tables import token_strings
from .scorer_batches import with_batch_size
from .search_config import SearchConfig

__all__ = ["GCGResult", "descend", "score_gradient", "propose", "allowed_tokens", "results_table",
           "check_start_allowed"]

KINDS = SCORER_KINDS


@dataclasses.dataclass
class GCGResult:
    """The outcome of one search.

    ``history`` has one row per step (step 0 is the start): ``step``,
    ``score`` (of the step's best candidate; the start's score at step 0),
    ``best_so_far``, ``ids`` and ``text`` of the step's best candidate,
    ``n_candidates`` evaluated, ``seconds`` since the start.
    """

    prompt: str
    maximize: bool
    start_ids: list[int]
    start_score: float
    best_ids: list[int]
    best_text: str
    best_score: float
    history: pd.DataFrame
    stop_reason: str  # "num_steps", "patience", "budget" or "exhausted"
    n_evaluated: int
    seconds: float
    config: SearchConfig
    provenance: dict

    @property
    def steps(self) -> int:
        """Steps taken (not counting the start)."""
        return int(len(self.history) - 1)

    @property
    def improvement(self) -> float:
        """How far the search moved the score in its own direction (>= 0)."""
        return (self.best_score - self.start_score) * (1 if self.maximize else -1)

    def summary(self) -> dict:
        """One row for a results table."""
        return {
            "prompt": self.prompt, "direction": "maximize" if self.maximize else "minimize",
            "length": len(self.best_ids), "start_text": self.provenance.get("start_text", ""),
            "start_score": self.start_score, "best_text": self.best_text, "best_score": self.best_score,
            "best_ids": list(self.best_ids), "steps": self.steps, "evaluated": self.n_evaluated,
            "stop_reason": self.stop_reason, "seconds": round(self.seconds, 2),
        }


def results_table(results: Sequence[GCGResult]) -> pd.DataFrame:
    """The summaries of several searches, one row each."""
    return pd.DataFrame([r.summary() for r in results])


#: The two series of :func:`history_table`: the best so far and each step's best candidate.
HISTORY_SERIES = ("best so far", "step best")


def history_table(results: Sequence[GCGResult], label=None) -> pd.DataFrame:
    """The steps of several searches as one long table, two rows per step: ``prompt`` (``label``
    maps it, e.g. to "best"), ``length`` ("2 tokens"), ``direction``, ``step``, ``series`` ("best
    so far"; "step best": the best candidate of that step), ``score``, and ``decoded``: the text of
    the step's best candidate."""
    parts = []
    for r in results:
        h = r.history
        parts.append(pd.DataFrame({
            "prompt": label(r.prompt) if label else r.prompt, "length": f"{len(r.best_ids)} tokens",
            "direction": "maximize" if r.maximize else "minimize", "step": h["step"].to_numpy(),
            "best so far": h["best_so_far"].to_numpy(), "step best": h["score"].to_numpy(),
            "decoded": h["text"].to_numpy()}))
    columns = ["prompt", "length", "direction", "step", "series", "score", "decoded"]
    if not parts:
        return pd.DataFrame(columns=columns)
    wide = pd.concat(parts, ignore_index=True)
    return wide.melt(id_vars=["prompt", "length", "direction", "step", "decoded"], value_vars=list(HISTORY_SERIES),
                     var_name="series", value_name="score")[columns]


# --------------------------------------------------------------------------- token filters
_MASKS: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def _ascii_printable(text: str) -> bool:
    return bool(text) and text.isascii() and text.isprintable()


def allowed_tokens(tokenizer, n_rows: int, *, allow_special_tokens: bool = False,
                   ascii_only: bool = False) -> np.ndarray:
    """Boolean mask over the ``n_rows`` embedding rows: which tokens a swap may use.

    Never allowed: rows beyond the tokenizer (padding rows of the embedding
    matrix). Unless ``allow_special_tokens``: the tokenizer's special tokens
    and added tokens marked special. With ``ascii_only``: only tokens whose
    decoded text is non-empty printable ASCII (no newline or tab). The
    per-tokenizer facts are computed once and cached.
    """
    try:
        facts = _MASKS.get(tokenizer)
    except TypeError:  # not weak-referenceable
        facts = None
    if facts is None:
        n_tok = len(tokenizer)
        special = np.zeros(n_tok, dtype=bool)
        ids = set(getattr(tokenizer, "all_special_ids", []) or [])
        for i, added in (getattr(tokenizer, "added_tokens_decoder", {}) or {}).items():
            if getattr(added, "special", False):
                ids.add(int(i))
        special[[i for i in ids if 0 <= i < n_tok]] = True
        decoded = token_strings(tokenizer, range(n_tok))[1]
        ascii_ok = np.fromiter((_ascii_printable(d) for d in decoded), dtype=bool, count=n_tok)
        facts = (special, ascii_ok)
        try:
            _MASKS[tokenizer] = facts
        except TypeError:
            pass
    special, ascii_ok = facts
    mask = np.zeros(n_rows, dtype=bool)
    n = min(n_rows, len(special))
    mask[:n] = True
    if not allow_special_tokens:
        mask[:n] &= ~special[:n]
    if ascii_only:
        mask[:n] &= ascii_ok[:n]
    return mask


# --------------------------------------------------------------------------- gradient
def scorer_parts(scorer) -> list[tuple[object, float]]:
    """(Scorer, sign) pairs whose signed sum is the score (implicit = policy − reference)."""
    kind = getattr(scorer, "kind", None)
    if kind not in KINDS:
        raise InputError(
            f"GCG needs a scorer of kind {KINDS} (from rmlib.engine.scorers.load_scorer), got kind {kind!r}"
        )
    if kind == "implicit":
        return [(scorer.policy, 1.0), (scorer.reference, -1.0)]
    return [(scorer, 1.0)]


def embedding_matrix(scorer) -> torch.Tensor:
    """The scorer's input embedding matrix (vocabulary × hidden size)."""
    return scorer.loaded.model.get_input_embeddings().weight


_SCALES: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def _embedding_scale(module: torch.nn.Module) -> float:
    """The factor with which the input embedding module multiplies its rows.

    A plain lookup has 1; Gemma's scaled embedding multiplies by sqrt(hidden)
    inside the module, so one-hot @ weight must be scaled the same way before
    it is passed as ``inputs_embeds``. Checked once per module on a few rows.
    """
    if module in _SCALES:
        return _SCALES[module]
    weight = module.weight
    scale = getattr(module, "embed_scale", 1.0)
    # The factor as the module applies it: in the weight's dtype (bf16 rounds Gemma-2-27B's sqrt(4608)
    # to 68), the product rounded to that dtype too.
    scale = float(scale.to(weight.dtype).item() if torch.is_tensor(scale) else scale)
    rtol = max(1e-3, 4 * torch.finfo(weight.dtype).eps)
    probe = torch.tensor([[0, 1, weight.shape[0] // 2, weight.shape[0] - 1]], device=weight.device)
    with torch.no_grad():
        looked_up = module(probe)[0].float()
    expect = weight[probe[0]].float() * scale
    if not torch.allclose(looked_up, expect, rtol=rtol, atol=1e-6 * max(1.0, scale)):
        raise InputError(
            f"the model's input embedding ({type(module).__name__}) is not a (scaled) row lookup of its "
            "weight, so GCG cannot differentiate through one-hot token vectors; use a model with a plain "
            "embedding layer"
        )
    _SCALES[module] = scale
    return scale


def part_gradient(scorer, prompt: str, ids: Sequence[int]) -> torch.Tensor:
    frame, kernel = scorer.kernel(prompt)  # the scorer's cached prefix for this prompt
    module = scorer.loaded.model.get_input_embeddings()
    weight = module.weight
    scale = _embedding_scale(module)
    device = weight.device
    length = len(ids)
    ids_t = torch.tensor([list(ids)], dtype=torch.long, device=device)
    with torch.enable_grad():
        onehot = torch.zeros(1, length, weight.shape[0], dtype=weight.dtype, device=device)
        onehot.scatter_(2, ids_t[..., None], 1.0)
        onehot.requires_grad_(True)
        embeds = onehot @ weight
        if scale != 1.0:
            embeds = embeds * scale
        if scorer.kind == "classifier":
            suffix = torch.tensor([list(frame.suffix_ids)], dtype=torch.long, device=device)
            with torch.no_grad():
                suffix_embeds = module(suffix)
            embeds = torch.cat([embeds, suffix_embeds.to(embeds.dtype)], dim=1)
            last = torch.tensor([embeds.shape[1] - 1], device=device)
            score = kernel.classifier(None, last, embeds=embeds)
        else:
            score = kernel.logprob(ids_t, torch.tensor([length], device=device), embeds=embeds, onehot=onehot)
        (grad,) = torch.autograd.grad(score.sum(), onehot)
    return grad[0].float()


def score_gradient(scorer, prompt: str, ids: Sequence[int]) -> torch.Tensor:
    """∂score/∂X for the response ``ids`` (L × V, float32): the gradient of the score itself.

    Positive entries are swaps that raise the score to first order. Works for
    ``classifier``, ``logprob`` and ``implicit`` scorers; prefix KV-cached.
    """
    parts = scorer_parts(scorer)
    ids = [int(i) for i in ids]
    if not ids:
        raise InputError("the response must have at least one token")
    total = None
    for part, sign in parts:
        g = part_gradient(part, prompt, ids) * sign
        total = g if total is None else total + g.to(total.device)
    if not torch.isfinite(total).all():
        raise FloatingPointError(
            f"the gradient of the score for response ids {ids[:20]} is NaN or infinite: check the model's "
            "dtype (try dtype='float32') and weights"
        )
    return total


# --------------------------------------------------------------------------- candidates
def _priority(grad: torch.Tensor, current: torch.Tensor, maximize: bool, allowed: torch.Tensor,
              distance: torch.Tensor | None, penalty: float) -> torch.Tensor:
    """Rank of each (position, token) swap, higher first; −inf where not allowed or no change."""
    sign = 1.0 if maximize else -1.0
    rows = torch.arange(grad.shape[0], device=grad.device)
    gain = sign * (grad - grad[rows, current][:, None])
    ok = allowed[None, :].expand_as(gain).clone()
    ok[rows, current] = False
    if penalty and distance is not None:
        def rms(x):
            v = x[ok]
            return v.pow(2).mean().sqrt().clamp_min(1e-12) if v.numel() else torch.ones((), device=x.device)

        pr = gain / rms(gain) - penalty * distance / rms(distance)
    else:
        pr = gain.clone()
    pr[~ok] = float("-inf")
    return pr


def _top_unvisited(row: torch.Tensor, current: tuple, pos: int, visited: set, topk: int) -> list[tuple[float, int]]:
    """(value, token) of the ``topk`` best-ranked finite entries of ``row`` whose swap at ``pos``
    gives an unvisited sequence, best first. Looks at the top 2·topk, and twice as many
    again while visited ones fill them (a full sort of a 256k vocabulary each step is slow)."""
    row = row.detach().float()
    size = row.shape[0]
    k = min(size, 2 * topk)
    while True:
        values, tokens = torch.topk(row, k)
        keep, end = [], False
        for value, tok in zip(values.cpu().tolist(), tokens.cpu().tolist()):
            if value == float("-inf"):
                end = True
                break
            if current[:pos] + (tok,) + current[pos + 1:] in visited:
                continue
            keep.append((value, tok))
            if len(keep) == topk:
                return keep
        if end or k == size:
            return keep
        k = min(size, 2 * k)


def propose(priority: torch.Tensor, current: Sequence[int], visited: set, config: SearchConfig,
            rng: np.random.Generator | None = None) -> list[tuple[int, ...]]:
    """Candidate sequences (tuples of ids) from a priority matrix (L × V, −inf = never).

    Per position, the ``config.topk`` best-ranked tokens whose swap gives an
    unvisited sequence; then ``search_width`` of them: the best-ranked over all
    positions (greedy) or random draws of ``n_replace`` positions (random).
    """
    current = tuple(int(i) for i in current)
    per_pos = [_top_unvisited(priority[pos], current, pos, visited, config.topk) for pos in range(len(current))]
    length = len(current)
    if config.sampling == "greedy":
        flat = [(value, pos, tok) for pos, keep in enumerate(per_pos) for value, tok in keep]
        flat.sort(key=lambda t: (-t[0], t[1], t[2]))
        out = []
        for _, pos, tok in flat[: config.search_width]:
            out.append(current[:pos] + (tok,) + current[pos + 1:])
        return out
    rng = rng if rng is not None else np.random.default_rng(config.seed)
    positions = [p for p in range(length) if per_pos[p]]
    if not positions:
        return []
    n_rep = min(config.n_replace, len(positions))
    seen: set = set()
    out = []
    for _ in range(20 * config.search_width):
        if len(out) == config.search_width:
            break
        seq = list(current)
        for pos in rng.choice(positions, size=n_rep, replace=False):
            seq[pos] = per_pos[pos][int(rng.integers(len(per_pos[pos])))][1]
        seq = tuple(seq)
        if seq in visited or seq in seen:
            continue
        seen.add(seq)
        out.append(seq)
    return out


# --------------------------------------------------------------------------- search
def start_token_ids(scorer, start) -> list[int]:
    """A search's starting sequence as token ids: ``start`` given as text (tokenized) or as ids (checked)."""
    if isinstance(start, str):
        if not start:
            raise InputError("start must be a non-empty string or a non-empty list of token ids")
        ids = list(scorer.tokenizer(start, add_special_tokens=False).input_ids)
    else:
        try:
            ids = [int(i) for i in start]
        except (TypeError, ValueError):
            raise InputError(f"start must be a string or a list of token ids, got {start!r}") from None
        ids = scorer.token_ids(ids).tolist()
    if not ids:
        raise InputError(f"start {start!r} has no tokens: give a string or at least one token id")
    return ids


def check_start_allowed(tokenizer, start_ids: Sequence[int], allowed: np.ndarray, filters: str) -> None:
    """Raise ``ValueError`` if a start token is one the filters forbid (the search could return it)."""
    bad = [i for i in start_ids if not (0 <= i < len(allowed) and allowed[i])]
    if bad:
        shown = ", ".join(f"{i} {tokenizer.decode([i])!r}" for i in bad[:5])
        raise InputError(
            f"start token(s) {shown} are not allowed by the token filters ({filters}): choose a start of "
            "allowed tokens, or relax the filters"
        )


def _evaluate(scorer, prompt: str, seqs: list[tuple[int, ...]]) -> np.ndarray:
    return scorer.sequence_scores(prompt, [list(s) for s in seqs]) if seqs else np.empty(0)


def descend(scorer, prompt: str, start: str | Sequence[int], config: SearchConfig | None = None,
        vocabulary: Sequence[int] | None = None, evaluated: set | None = None) -> GCGResult:
    """One GCG run from ``start``: the response of ``len(start)`` tokens that maximizes (or minimizes)
    the score, as far as GCG's steps reach (:func:`rmlib.engine.search.run` with ``method="gcg"`` adds
    the starts, restarts and the single-swap check).

    ``scorer`` is any rmlib scorer (``classifier``, ``logprob`` or
    ``implicit``); ``start`` is a string (tokenized without special tokens) or
    a list of token ids, and fixes the response length. ``vocabulary``: swap in only these
    token ids (of those the filters allow). ``evaluated``: a set that gets every sequence scored (as
    tuples of ids; a caller's record across runs). Returns a
    :class:`GCGResult`; its ``best_score`` is the scorer's own score of
    ``best_ids`` (as :meth:`Scorer.sequence_scores` gives it).
    """
    config = dataclasses.replace(config or SearchConfig(method="gcg")).validate()
    parts = scorer_parts(scorer)
    if not isinstance(prompt, str) or not prompt.strip():
        raise InputError("prompt must be a non-empty string")
    t0 = time.perf_counter()
    start_ids = start_token_ids(scorer, start)
    weight = embedding_matrix(parts[0][0])
    n_rows = min(embedding_matrix(p).shape[0] for p, _ in parts)
    allowed = _allowed_swaps(scorer, n_rows, start_ids, config, vocabulary)
    scorer = with_batch_size(scorer, config.batch_size)  # a copy when the size changes
    descent = _steps(scorer, prompt, start_ids, config, allowed, weight, n_rows, t0)
    if evaluated is not None:
        evaluated.update(descent.visited)
    return _result(scorer, prompt, start_ids, config, descent, t0)


def _allowed_swaps(scorer, n_rows: int, start_ids: list[int], config: SearchConfig, vocabulary) -> np.ndarray:
    """The tokens a step may swap in, a mask over the first ``n_rows`` ids (the filters, then ``vocabulary``);
    the start must hold only such tokens."""
    tokenizer = scorer.tokenizer
    allowed = allowed_tokens(tokenizer, n_rows, allow_special_tokens=config.allow_special_tokens,
                             ascii_only=config.ascii_only)
    if vocabulary is not None:
        only = np.zeros_like(allowed)
        only[[i for i in scorer.token_ids(vocabulary).tolist() if i < n_rows]] = True
        allowed = allowed & only
    if not allowed.any():
        raise InputError("the token filters leave no token to swap in: relax ascii_only / allow_special_tokens")
    check_start_allowed(tokenizer, start_ids, allowed, f"allow_special_tokens={config.allow_special_tokens}, "
                        f"ascii_only={config.ascii_only}" + (", vocabulary" if vocabulary is not None else ""))
    return allowed


@dataclasses.dataclass
class _Descent:
    """Where GCG's steps went: the start's score, the best sequence and its score, one history row per
    step (step 0 is the start), the candidates scored and why the steps stopped."""

    start_score: float
    best: tuple[int, ...]
    best_score: float
    rows: list[dict]
    n_evaluated: int
    stop_reason: str
    visited: set = dataclasses.field(default_factory=set)  # every sequence scored, the start included


def _steps(scorer, prompt: str, start_ids: list[int], config: SearchConfig, allowed_np: np.ndarray,
             weight: torch.Tensor, n_rows: int, t0: float) -> _Descent:
    """GCG's steps from ``start_ids``: each moves to the best-scoring of the candidates
    :func:`_candidates` proposes, until ``num_steps``, ``patience``, ``budget_seconds`` or no candidate is left."""
    tokenizer = scorer.tokenizer
    device = weight.device
    allowed = torch.as_tensor(allowed_np, device=device)
    rng = np.random.default_rng(config.seed or 0)  # local: the caller's global random state is left alone
    with torch.no_grad():
        emb = weight[:n_rows].detach().float() if config.distance_penalty else None

    current = tuple(start_ids)
    visited = {current}
    start_score = float(_evaluate(scorer, prompt, [current])[0])
    best, best_score = current, start_score
    better = (lambda a, b: a > b) if config.maximize else (lambda a, b: a < b)
    rows = [{"step": 0, "score": start_score, "best_so_far": start_score, "ids": list(current),
             "text": tokenizer.decode(list(current)), "n_candidates": 0, "seconds": time.perf_counter() - t0}]
    n_evaluated, since_best, stop_reason = 1, 0, "num_steps"
    for step in range(1, config.num_steps + 1):
        cands = _candidates(scorer, prompt, current, config, allowed, emb, n_rows, visited, rng)
        if not cands:
            stop_reason = "exhausted"
            break
        scores = _evaluate(scorer, prompt, cands)
        visited.update(cands)
        n_evaluated += len(cands)
        pick = int(np.argmax(scores) if config.maximize else np.argmin(scores))
        current, step_score = cands[pick], float(scores[pick])
        if better(step_score, best_score):
            best, best_score, since_best = current, step_score, 0
        else:
            since_best += 1
        rows.append({"step": step, "score": step_score, "best_so_far": best_score, "ids": list(current),
                     "text": tokenizer.decode(list(current)), "n_candidates": len(cands),
                     "seconds": time.perf_counter() - t0})
        if config.verbose:
            print(f"[gcg] step {step}: step best {step_score:.4f}, best {best_score:.4f}, "
                  f"{rows[-1]['text']!r}", flush=True)
        if config.patience is not None and since_best >= config.patience:
            stop_reason = "patience"
            break
        if config.budget_seconds is not None and time.perf_counter() - t0 >= config.budget_seconds:
            stop_reason = "budget"
            break
    return _Descent(start_score, best, best_score, rows, n_evaluated, stop_reason, visited)


def _candidates(scorer, prompt: str, current: tuple, config: SearchConfig, allowed: torch.Tensor,
                emb: torch.Tensor | None, n_rows: int, visited: set, rng) -> list[tuple[int, ...]]:
    """One step's candidates: single swaps of ``current`` ranked by the score's gradient (and, with a
    distance penalty, by closeness in embedding space), none visited before."""
    device = allowed.device
    grad = score_gradient(scorer, prompt, current)[:, :n_rows].to(device)
    cur_t = torch.tensor(current, device=device)
    distance = None
    if emb is not None:
        distance = torch.cdist(emb[cur_t], emb)
    priority = _priority(grad, cur_t, config.maximize, allowed, distance, config.distance_penalty)
    return propose(priority, current, visited, config, rng)


def _result(scorer, prompt: str, start_ids: list[int], config: SearchConfig, descent: _Descent, t0: float) -> GCGResult:
    """The steps' outcome as a :class:`GCGResult`, with the history table and the provenance."""
    tokenizer = scorer.tokenizer
    history = pd.DataFrame(descent.rows)
    try:
        prov = dict(scorer.provenance(prompt, "token"))
    except Exception:  # a scorer without provenance facts still searches
        prov = {"prompt": prompt}
    prov.update(search="gcg", config=dataclasses.asdict(config), start_ids=list(start_ids),
                start_text=tokenizer.decode(list(start_ids)))
    return GCGResult(
        prompt=prompt, maximize=config.maximize, start_ids=list(start_ids), start_score=descent.start_score,
        best_ids=list(descent.best), best_text=tokenizer.decode(list(descent.best)), best_score=descent.best_score,
        history=history, stop_reason=descent.stop_reason, n_evaluated=descent.n_evaluated,
        seconds=time.perf_counter() - t0, config=config, provenance=prov,
    )


# --------------------------------------------------------------------------- runs of several searches
__all__ += ["repeated_word_ids", "retokenizes", "history_table", "HISTORY_SERIES"]


def repeated_word_ids(tokenizer, word: str, length: int) -> list[int]:
    """The first ``length`` token ids of ``word`` repeated (``"x x x ..."``, nanoGCG's start)."""
    ids = tokenizer(" ".join([word] * length), add_special_tokens=False).input_ids[:length]
    if len(ids) < length:
        raise InputError(f"start word {word!r} does not give {length} tokens; choose another word")
    return list(ids)


def retokenizes(results: Sequence[GCGResult], tokenizer) -> list[bool]:
    """Whether each result's best text tokenizes back to exactly its best ids (no special tokens)."""
    return [tokenizer(r.best_text, add_special_tokens=False).input_ids == r.best_ids for r in results]
