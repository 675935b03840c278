"""The Bradley-Terry training signal: Elo win probabilities, seeded pairs of training items with their
soft labels, the checks a given set of pairs passes, and the loss."""

from __future__ import annotations

import hashlib

import numpy as np
import pandas as pd
import torch

from ..errors import InputError

def elo_probability(r_i, r_j):
    """P(i preferred to j) under Elo: ``1 / (1 + 10 ** ((r_j - r_i) / 400))``."""
    return 1.0 / (1.0 + 10.0 ** ((np.asarray(r_j, float) - np.asarray(r_i, float)) / 400.0))


def sample_pairs(train: np.ndarray, ratings: np.ndarray, n_pairs: int, seed: int = 0) -> pd.DataFrame:
    """``n_pairs`` pairs of distinct training items, uniformly, with Elo soft labels.

    Columns ``i, j`` (item indices, both from ``train``) and ``p`` (P(i over j)).
    """
    rng = np.random.default_rng(seed)
    a = rng.integers(0, len(train), n_pairs)
    b = (a + rng.integers(1, len(train), n_pairs)) % len(train)  # never the same item
    i, j = train[a], train[b]
    return pd.DataFrame({"i": i, "j": j, "p": elo_probability(ratings[i], ratings[j])})


def bt_loss(s_i: torch.Tensor, s_j: torch.Tensor, p: torch.Tensor) -> torch.Tensor:
    """Bradley–Terry loss with soft labels: mean of ``-[p log σ(s_i - s_j) + (1-p) log σ(s_j - s_i)]``."""
    return torch.nn.functional.binary_cross_entropy_with_logits(s_i - s_j, p)


PAIR_COLUMNS = ("i", "j", "p")


def item_indices(values, name: str) -> np.ndarray:
    """Item indices (integers, or a boolean mask over the items) as an int64 array; anything else refused."""
    arr = np.asarray(list(values) if not isinstance(values, np.ndarray) else values)
    if arr.dtype == bool:
        arr = np.flatnonzero(arr)
    if arr.size and not np.issubdtype(arr.dtype, np.integer):
        raise InputError(f"{name} must be item indices (integers) or a boolean mask over the items")
    return arr.astype(np.int64)


def check_pairs(pairs: pd.DataFrame, train, n_items: int) -> pd.DataFrame:
    """``pairs`` (columns ``i, j, p``) checked against a run's training items; returns those columns.

    Refused (:class:`InputError`): missing columns, no pairs, an index outside
    ``0..n_items-1`` or not among ``train`` (a test item), a pair of an item
    with itself, a label ``p`` outside [0, 1] or not finite.
    """
    if not isinstance(pairs, pd.DataFrame) or not set(PAIR_COLUMNS) <= set(pairs.columns):
        raise InputError("pairs must be a DataFrame with columns i, j, p (item indices and P(i over j)), "
                         "as rmlib.training.train.training_pairs returns")
    if not len(pairs):
        raise InputError("pairs is empty: give at least one training pair")
    i, j = item_indices(pairs["i"].to_numpy(), "pairs.i"), item_indices(pairs["j"].to_numpy(), "pairs.j")
    p = pairs["p"].to_numpy(dtype=float)
    outside = (i < 0) | (i >= n_items) | (j < 0) | (j >= n_items)
    if outside.any():
        raise InputError(f"pair {int(np.argmax(outside))} names an item outside 0..{n_items - 1}")
    not_train = ~np.isin(i, train) | ~np.isin(j, train)
    if not_train.any():
        raise InputError(f"pair {int(np.argmax(not_train))} holds a test item: training pairs may only hold training "
                         "items (the test items stay unseen)")
    if (i == j).any():
        raise InputError(f"pair {int(np.argmax(i == j))} pairs an item with itself")
    bad = ~np.isfinite(p) | (p < 0) | (p > 1)
    if bad.any():
        raise InputError(f"pair {int(np.argmax(bad))} has label p={p[bad][0]!r}: labels are probabilities in [0, 1]")
    return pd.DataFrame({"i": i, "j": j, "p": p})


def pairs_digest(pairs: pd.DataFrame) -> str:
    """SHA-256 of the pairs' ``i, j, p`` values (order included): what a cache key needs to know of them."""
    h = hashlib.sha256()
    for col, dtype in (("i", np.int64), ("j", np.int64), ("p", np.float64)):
        h.update(np.ascontiguousarray(pairs[col].to_numpy(dtype=dtype)).tobytes())
    return h.hexdigest()
