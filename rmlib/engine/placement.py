"""Scores at fixed places: a candidate's score never depends on what else a call scores.

A forward's float sums depend on its shape and on a row's place in it, never on the other rows' tokens.
So single tokens go into forwards of exactly ``slots`` candidates, token ``i`` at place ``i % slots``
(:meth:`PlacedScoring.slotted_scores`), and the published inputs of mode "paper" after the prompt's
prefix, and texts in token mode, into forwards of their own length with a number of rows that depends on
that length alone, each at the place a hash of its ids picks (:meth:`PlacedScoring.placed_scores`);
places no candidate takes hold copies of one that does. :class:`rmlib.engine.scorers.Scorer` has these methods.
"""

from __future__ import annotations

import warnings
import zlib
from typing import Sequence

import numpy as np
import torch

from ..errors import NonFiniteScoreError
from .frames import ChatFrame
from .kernel import PrefixKernel, is_oom


class PlacedScoring:
    """The fixed-place scoring steps of a :class:`rmlib.engine.scorers.Scorer` (``self.loaded``,
    ``self.kind``, ``self.batch_size``, ``self.chunk_size`` are the scorer's)."""

    def slotted_scores(self, kernel: PrefixKernel, frame: ChatFrame, ids: np.ndarray, slots: int,
                        progress: bool) -> np.ndarray:
        """Single-token classifier scores, each token at place ``id % slots`` of a forward of ``slots``
        candidates (places no token of this call takes are filled with a copy of one that does)."""
        from ..progress import bar as progress_bar

        result = np.empty(len(ids), dtype=np.float64)
        if not len(ids):
            return result
        suffix = np.asarray(frame.suffix_ids, dtype=np.int64)
        device = self.loaded.device
        place = ids % slots
        reads = to_device(np.full(slots, len(suffix), dtype=np.int64), device)

        def forward(members: np.ndarray, fill: int) -> np.ndarray:
            row = np.full(slots, fill, dtype=np.int64)
            row[place[members]] = ids[members]
            batch = np.concatenate([row[:, None], np.broadcast_to(suffix, (slots, len(suffix)))], axis=1)
            return kernel.classifier(to_device(batch, device), reads).double().cpu().numpy()[place[members]]

        bar = progress_bar(len(ids), progress=progress, unit="tok", desc="scoring")
        done = np.zeros(len(ids), dtype=bool)
        with torch.no_grad():
            for members in placed_rounds(place, ids):
                try:
                    out = forward(members, int(ids[members[0]]))
                except (RuntimeError, torch.OutOfMemoryError) as err:
                    if not is_oom(err) or slots == 1 or not self.loaded.plan.halve_on_oom:
                        raise
                    if torch.cuda.is_available():
                        torch.cuda.empty_cache()
                    warnings.warn(f"out of memory with {slots} candidates per forward on {device}: the rest of this "
                                  f"call is scored {slots // 2} at a time (their last bits differ from forwards of "
                                  f"{slots})", stacklevel=3)
                    bar.close()
                    rest = np.flatnonzero(~done)
                    result[rest] = self.slotted_scores(kernel, frame, ids[rest], slots // 2, progress)
                    return finite_scores(result, ids)
                bad = ~np.isfinite(out)
                for k in np.flatnonzero(bad):  # a NaN can spread through a packed forward: each alone, among copies
                    out[k] = forward(members[k:k + 1], int(ids[members[k]]))[0]
                result[members] = out
                done[members] = True
                bar.update(len(members))
        bar.close()
        return finite_scores(result, ids)

    def text_slots(self, length: int) -> int:
        """Candidates per forward when the published inputs of ``length`` tokens after the cached prefix
        are scored at fixed places (mode "paper"; texts in token mode take
        :meth:`rmlib.engine.plan.ForwardPlan.text_rows`): the batch the default rule gives candidates of
        that length (or ``batch_size``), as :meth:`token_slots` does for single tokens."""
        return int(self.chunk_size(np.full(self.loaded.plan.lookahead(self.batch_size), int(length))))

    def placed_scores(self, kernel: PrefixKernel, cands: Sequence[Sequence[int]], progress: bool,
                       labels: Sequence[int] | None = None, last: Sequence[int] | None = None,
                       rows_for=None) -> np.ndarray:
        """Scores of candidates after ``kernel``'s cached prefix, each in a forward of its own length only,
        with exactly ``rows_for(length)`` rows (default :meth:`text_slots`), at the place a hash of its ids
        (and read position) picks; rows no candidate takes hold a copy of one that does. No padding, and a
        candidate's score depends only on itself (a forward's float sums depend on its shape and a row's
        place, not the other rows): the same whichever other inputs a call scores. A classifier reads
        candidate ``j`` at ``last[j]`` (default: its last token); a language model scores its tokens."""
        from ..progress import bar as progress_bar

        sizes = np.array([len(c) for c in cands], dtype=np.int64)
        reads = sizes - 1 if last is None else np.asarray(last, dtype=np.int64)
        keys = np.array([zlib.crc32(np.asarray([*c, r], dtype=np.int64).tobytes()) for c, r in zip(cands, reads)],
                        dtype=np.int64)
        result = np.empty(len(cands), dtype=np.float64)
        device = self.loaded.device
        bar = progress_bar(len(cands), progress=progress, unit="seq", desc="scoring")

        def forward(members: np.ndarray, slots: int, place: np.ndarray, length: int) -> np.ndarray:
            rows = np.repeat(np.asarray(cands[members[0]], dtype=np.int64)[None, :], slots, axis=0)
            at = np.full(slots, reads[members[0]], dtype=np.int64)
            rows[place[members]] = np.array([cands[j] for j in members], dtype=np.int64).reshape(len(members), length)
            at[place[members]] = reads[members]
            ids = to_device(rows, device)
            if self.kind == "logprob":
                out = kernel.logprob(ids, to_device(np.full(slots, length, dtype=np.int64), device))
            else:
                out = kernel.classifier(ids, to_device(at, device))
            return out.double().cpu().numpy()[place[members]]

        with torch.no_grad():
            for length in np.unique(sizes):
                group = np.flatnonzero(sizes == length)
                slots = (rows_for or self.text_slots)(length)
                while True:
                    place = np.zeros(len(cands), dtype=np.int64)
                    place[group] = keys[group] % slots
                    try:
                        for members in placed_rounds(place[group], keys[group]):
                            members = group[members]
                            out = forward(members, slots, place, int(length))
                            for k in np.flatnonzero(~np.isfinite(out)):  # a NaN can spread: each alone, among copies
                                out[k] = forward(members[k:k + 1], slots, place, int(length))[0]
                            result[members] = out
                            bar.update(len(members))
                        break
                    except (RuntimeError, torch.OutOfMemoryError) as err:
                        if not is_oom(err) or slots == 1 or not self.loaded.plan.halve_on_oom:
                            raise
                        if torch.cuda.is_available():
                            torch.cuda.empty_cache()
                        warnings.warn(f"out of memory with {slots} candidates of {length} tokens per forward on "
                                      f"{device}: they are scored {slots // 2} at a time (their last bits differ "
                                      f"from forwards of {slots})", stacklevel=3)
                        slots //= 2
        bar.close()
        names = labels if labels is not None else np.arange(len(cands))
        bad = ~np.isfinite(result)
        if bad.any():
            raise NonFiniteScoreError(np.asarray(names)[bad].tolist(),
                                      "token ids" if labels is not None else "texts at")
        return result


def placed_rounds(place: np.ndarray, key: np.ndarray) -> list[np.ndarray]:
    """Indices grouped into rounds in which no two share a place: the ``r``-th item of each place (in
    ``key`` order) goes to round ``r``. Each round's forward holds its items at their places."""
    if not len(place):
        return []
    by_place = np.lexsort((key, place))
    starts = np.searchsorted(place[by_place], place[by_place])
    rounds = np.empty(len(place), dtype=np.int64)
    rounds[by_place] = np.arange(len(place)) - starts
    order = np.lexsort((place, rounds))
    return np.split(order, np.flatnonzero(np.diff(rounds[order])) + 1)


def to_device(array: np.ndarray, device: torch.device) -> torch.Tensor:
    """A host array on ``device``; to a GPU through pinned memory without waiting (a copy from pageable
    memory would wait for every forward already queued)."""
    tensor = torch.from_numpy(np.ascontiguousarray(array))
    if device.type != "cuda":
        return tensor
    return tensor.pin_memory().to(device, non_blocking=True)


def finite_scores(scores: np.ndarray, labels) -> np.ndarray:
    bad = ~np.isfinite(scores)
    if bad.any():
        raise NonFiniteScoreError(np.asarray(labels)[bad].tolist())
    return scores
