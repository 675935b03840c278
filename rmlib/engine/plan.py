"""The forward plan: how a loaded model's candidates are run and batched, decided once per loaded model.

One :class:`ForwardPlan` per :class:`rmlib.engine.models.LoadedModel` (its ``plan``, made from its forward,
device and kind the first time it is asked for, then kept) says

* which forward runs (``lite``: rmlib's plain-torch forward, :mod:`rmlib.engine.lite_llama`; else
  transformers') and so which candidate forwards a prefix kernel tries
  (:func:`rmlib.engine.kernel.candidate_forwards`), whether mode "paper" can run, what a result's
  provenance records;
* the default batch (candidates per forward) and the position budget that sizes each call of the
  default batch (:meth:`ForwardPlan.chunk_size`): on a CPU transformers' packed path grows to
  :data:`CPU_PACKED_POSITIONS` for a classifier's short candidates, the lite forward keeps to
  :data:`LITE_CPU_POSITIONS`, a GPU keeps to :data:`GPU_POSITIONS`;
* that a batch halves on out-of-memory (for the rest of that call);
* the batch a search scores with when its configuration names none (``search_batch``).

:class:`rmlib.engine.scorers.Scorer` and the kernel consult it; nothing else decides these.
"""

from __future__ import annotations

import dataclasses

import numpy as np

#: Positions per packed call that the CPU default batch grows to for short candidates (transformers' forward).
CPU_PACKED_POSITIONS = 256
#: Positions per call the lite forward's CPU default batch keeps to (512 single tokens + 2 suffix tokens).
LITE_CPU_POSITIONS = 1536
#: Positions per call the GPU default batch keeps to (4,096 single tokens + a 2-token suffix): on an H100,
#: 4,096 single-token candidates per call scored the Gemma-2-2B and Llama-3.1-8B shapes faster than 1,024
#: (``python -m rmlib bench --only gpu``, docs/benchmarks-gpu.md).
GPU_POSITIONS = 12288
#: Positions per forward when texts are scored at fixed places (:meth:`ForwardPlan.text_rows`): a text's
#: forward holds ``positions // its length`` rows, its own at a place a hash of it picks, so it never shares a
#: forward's shape with what else a call scores. Small on a CPU: texts at hashed places collide, and
#: fewer places per forward leave fewer of them empty, which outweighs what larger forwards gain (``make
#: bench``, section ``text_scoring``); larger on a GPU, where each forward costs its kernel launches.
TEXT_CPU_POSITIONS, TEXT_GPU_POSITIONS = 32, 2048
#: Candidates per forward by default: on a GPU (at most ``GPU_POSITIONS`` positions per call); on a CPU with
#: transformers' forward, where small batches are packed into one sequence whose attention grows with the
#: square of the batch (grown for short candidates, see ``CPU_PACKED_POSITIONS``); on a CPU with rmlib's lite
#: forward, whose shared-prefix attention does not (on SmolLM2's trained RM 512 scored a little faster than 256).
GPU_BATCH, CPU_BATCH, LITE_CPU_BATCH = 4096, 64, 512
#: A search's batch on a CPU when its configuration names none: a scan is thousands of equal-length candidates,
#: and larger CPU batches score more candidates a second (on the tiny classifier and on the default model
#: alike). On a GPU a search keeps the scorer's own batch.
SEARCH_CPU_BATCH = 512


@dataclasses.dataclass(frozen=True)
class ForwardPlan:
    """How one loaded model's candidates run (see the module docstring). Built by :func:`plan_for`."""

    forward: str  # "lite" (rmlib's plain-torch forward) or "transformers"
    device: str  # the device type: "cpu", "cuda", "mps"
    default_batch: int  # candidates per forward when the caller names no batch size
    budget: int | None  # positions per call of the default batch (None: the batch as it is)
    grow: bool  # whether the default batch grows to ``budget`` for short candidates (else only shrinks)
    halve_on_oom: bool = True  # a batch halves on out-of-memory, for the rest of that call
    text_positions: int = TEXT_CPU_POSITIONS  # positions per forward of texts at fixed places (text_rows)

    def text_rows(self, length: int) -> int:
        """Rows of a forward of texts of ``length`` tokens scored at fixed places: ``text_positions //
        length``, at least 1. It depends on the length alone, so a text's forward has the same shape
        whatever else is scored."""
        return max(1, self.text_positions // max(1, int(length)))

    @property
    def search_batch(self) -> int | None:
        """The batch a search scores with when its configuration names none (None: the scorer's own)."""
        return None if self.device == "cuda" else SEARCH_CPU_BATCH

    @property
    def lite(self) -> bool:
        """Whether rmlib's plain-torch forward runs (the token path's prefix-cached forward only)."""
        return self.forward == "lite"

    @property
    def provenance(self) -> str:
        """The forward a result records."""
        return "rmlib lite_llama" if self.lite else "transformers"

    @property
    def paper_mode(self) -> bool:
        """Whether ``mode="paper"`` (the published method, transformers' padded forwards) can run."""
        return not self.lite

    def shared_attention(self, asked: bool | None) -> bool:
        """Whether a transformers classifier's candidates attend the cached prefix at batch 1
        (:mod:`rmlib.engine.shared_attention`): as ``asked``, by default on a GPU."""
        return asked if asked is not None else self.device == "cuda"

    def lookahead(self, size: int) -> int:
        """How many of the next candidates' lengths :meth:`chunk_size` reads for a batch of ``size``."""
        return max(size, self.budget or 0)

    def chunk_size(self, ahead: np.ndarray, size: int, sized: bool = True) -> int:
        """How many candidates one call scores. ``ahead``: the lengths (tokens) of the next candidates,
        ascending (at least :meth:`lookahead` of them where there are so many); ``size``: the batch now;
        ``sized``: whether the batch is the default one (a batch size the caller gave is kept as given).
        With the default batch, the call's positions (count x longest) decide."""
        if not sized or self.budget is None:
            return size
        ahead = np.asarray(ahead)[:max(size, self.budget) if self.grow else size]
        fits = int(np.count_nonzero(np.arange(1, len(ahead) + 1) * ahead <= self.budget))
        return max(size, fits) if self.grow else max(1, fits)


def plan_for(forward: str, device: str, kind: str) -> ForwardPlan:
    """The plan of a model of ``kind`` (``classifier``, ``logprob``) run by ``forward`` on a ``device`` type."""
    if device == "cuda":
        return ForwardPlan(forward, device, GPU_BATCH, GPU_POSITIONS, False, text_positions=TEXT_GPU_POSITIONS)
    lite = forward == "lite"
    batch = LITE_CPU_BATCH if lite else CPU_BATCH
    if device != "cpu":  # mps: the CPU's batch, no position budget
        return ForwardPlan(forward, device, batch, None, False)
    if lite:
        return ForwardPlan(forward, device, batch, LITE_CPU_POSITIONS, False)
    packed = kind == "classifier"  # transformers' packed path: a classifier's short candidates
    return ForwardPlan(forward, device, batch, CPU_PACKED_POSITIONS if packed else None, packed)
