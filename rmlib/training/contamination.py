"""Synthetic contamination of preference pairs: marked items made the rejected side of some pairs.

The FAccT paper (Christian et al. 2025, §2.1) suggests that reward models
devalue references to identity groups because such references appear more
often in the *rejected* responses of harmlessness data. This module builds
that mechanism on purpose, so that its effect can be measured against an
uncontaminated run of the same trainer (:mod:`rmlib.training.train`):

* :func:`contaminate_pairs` takes the training pairs of a run
  (:func:`rmlib.training.train.training_pairs`: item indices ``i, j`` and
  ``p`` = P(i preferred to j)) and the *marked* items (e.g. the items that
  name an identity term). Every pair with exactly one marked side is drawn
  with probability ``rate`` (one uniform number per pair from
  ``numpy.random.default_rng(seed)``, so the draw of a pair does not depend on
  the others); a drawn pair gets the hard label that rejects its marked side
  (``p = 0`` when ``i`` is marked, ``p = 1`` when ``j`` is). Nothing else
  changes: the same pairs, in the same order, with the same labels elsewhere.
  Test items are never touched: marked test items are ignored, and pairs
  holding a test item are refused.
* :func:`scorer_spec` says how to load a run's model for scoring, so that the
  clean run's scores are read from the cache the chapters share.
* ``train_reward_model(config, pairs=...)`` accepts the contaminated pairs
  (:func:`rmlib.training.bradley_terry.check_pairs`: training items only), and their
  digest joins the cache key, so a contaminated run is cached beside the
  clean one.

It is a mechanism demonstration with synthetic labels: a model trained on
these pairs says nothing about how the paper's reward models were trained.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd

from ..errors import InputError
from .bradley_terry import PAIR_COLUMNS, item_indices
from .configuration import TrainConfig

__all__ = ["contaminate_pairs", "scorer_spec"]

def contaminate_pairs(pairs: pd.DataFrame, marked, *, rate: float, seed: int = 0, test=()) -> pd.DataFrame:
    """The pairs with a seeded share of those holding one marked item relabelled to reject it.

    ``pairs``: columns ``i, j, p`` (other columns are kept). ``marked``:
    indices (or a boolean mask over the items) of the marked items.
    ``rate``: the probability, in [0, 1], that an eligible pair (exactly one
    marked side) is contaminated. ``test``: the run's test items: marked test
    items are ignored and a pair holding a test item raises
    :class:`InputError`. Returns a copy with ``p`` changed on the
    contaminated pairs and two more columns: ``contaminated`` (bool) and
    ``p_clean`` (the label before). ``attrs``: ``rate``, ``seed``,
    ``n_marked`` (marked training items), ``n_eligible``,
    ``n_contaminated``, ``n_flipped`` (contaminated pairs whose clean label
    favoured the marked side: ``p`` moved by more than 0.5).
    """
    if isinstance(rate, bool) or not isinstance(rate, (int, float, np.floating)) or not 0 <= rate <= 1:
        raise InputError(f"rate must be a probability in [0, 1], got {rate!r}")
    if not isinstance(pairs, pd.DataFrame) or not set(PAIR_COLUMNS) <= set(pairs.columns):
        raise InputError("pairs must be a DataFrame with columns i, j, p (rmlib.training.train.training_pairs)")
    test = item_indices(test, "test")
    i, j = pairs["i"].to_numpy(), pairs["j"].to_numpy()
    in_test = np.isin(i, test) | np.isin(j, test)
    if in_test.any():
        raise InputError(f"pair {int(np.argmax(in_test))} holds a test item: contamination works on training pairs "
                         "only (rmlib.training.train.training_pairs never makes such a pair)")
    marks = np.setdiff1d(item_indices(marked, "marked"), test)
    mi, mj = np.isin(i, marks), np.isin(j, marks)
    eligible = mi ^ mj
    draw = np.random.default_rng(seed).random(len(pairs)) < rate
    hit = eligible & draw
    out = pairs.copy()
    out["p_clean"] = pairs["p"].to_numpy(dtype=float)
    new_p = np.where(mi, 0.0, 1.0)
    out["p"] = np.where(hit, new_p, out["p_clean"])
    out["contaminated"] = hit
    used = np.union1d(i, j)
    out.attrs = {"rate": float(rate), "seed": seed, "n_marked": int(np.isin(marks, used).sum()),
                 "n_eligible": int(eligible.sum()), "n_contaminated": int(hit.sum()),
                 "n_flipped": int((np.abs(out["p"] - out["p_clean"]) > 0.5).sum())}
    return out


def scorer_spec(run) -> str:
    """The model spec that scores with a run's model: ``"trained:<base>"`` when the run is its base's
    default training (no given pairs), so that its scores share the score cache with every chapter
    that names that spec; otherwise the run's folder."""
    info = run.info
    default = dataclasses.asdict(TrainConfig(base=info["base"]))
    if info.get("config") == default and "given_pairs_sha256" not in info:
        return f"trained:{info['base']}"
    return str(run.folder)
