"""The settings of a search for optimal and pessimal responses: one :class:`SearchConfig` for every
method (GCG, coordinate sweeps, both), read by :func:`rmlib.engine.search.run` and by each GCG run
(:func:`rmlib.engine.gcg.descend`), as nanoGCG has one config and one ``run``."""

from __future__ import annotations

import dataclasses

import numpy as np

from ..errors import InputError

METHODS = ("gcg", "sweep", "both")
ALLOWED = ("ascii", "all")
INITS = ("singles", "random")
CHECKS = ("auto", "always", "never")
RESTART_POLICIES = ("anytime", "fixed")
SAMPLINGS = ("greedy", "random")
#: With a budget and ``restart_policy="anytime"``, GCG (method ``"both"``) gets at most this share of it.
GCG_BUDGET_SHARE = 0.5
#: Up to this length, sweeps scan the whole allowed vocabulary and the single-swap check is exhaustive.
EXHAUSTIVE_MAX_LEN = 4
#: Shortlist size per position for longer responses when ``SearchConfig.shortlist`` is None.
DEFAULT_SHORTLIST = 256
#: Bumped whenever a change in the search changes what a search or a comparison returns (part of the
#: result-cache key of chapter 5's searches, :mod:`rmlib.tables.memo`).
SEARCH_REVISION = 4  # 4: one config for GCG and the sweeps (GCG's time limit is the budget)
#: Bumped whenever a change in GCG changes what a GCG run returns (part of the same keys).
GCG_REVISION = 1
#: The settings of GCG's own steps (the rest are the search's: direction, token filters, seed, budget).
GCG_SETTINGS = ("num_steps", "search_width", "topk", "n_replace", "sampling", "patience", "distance_penalty")


@dataclasses.dataclass
class SearchConfig:
    """Settings of one search (a GCG run reads the same settings: the direction, the token filters,
    the seed, the batch size, the budget and its own steps).

    method: ``"gcg"``, ``"sweep"`` or ``"both"`` (GCG, then sweeps from its best).
    length: response length in tokens (a given ``start`` must have this many).
    maximize: True for the optimal (highest-scoring) response, False for the pessimal.
    restarts: sweep starts (``sweep``/``both``) without a budget: the first from ``init`` (``both``:
        GCG's best), the others diverse (``restart_policy``). With a budget and the ``anytime``
        policy, restarts (GCG's alone too) go on until the budget is spent or every sequence is
        scored, whatever this number.
    restart_policy: ``"anytime"`` (diverse starts; with a budget, restarts until it is spent) or
        ``"fixed"`` (``restarts`` starts, the others random; a budget only cuts them short).
    budget_seconds: stop starting new scans or GCG steps after this much wall time (None: no limit).
        In a search the GCG part gets what is left (``anytime``: at most ``GCG_BUDGET_SHARE`` of the
        budget); the single-swap check is not counted (reported apart). A GCG run stops after the
        first step that ends this long after its start.
    allowed: ``"ascii"`` (tokens that decode to printable ASCII) or ``"all"`` (any token);
        special tokens only with ``allow_special_tokens``.
    seed: seeds the random starts and GCG's random sampling (``sampling="random"``).
    init: first start when none is given: ``"singles"`` (the best single token, repeated;
        costs one scan of the vocabulary) or ``"random"``.
    shortlist: candidates per position. None: every allowed token up to ``length`` 4, the
        ``DEFAULT_SHORTLIST`` gradient-ranked ones beyond; 0: always every allowed token;
        K > 0: always the K gradient-ranked ones.
    max_passes: at most this many passes over all positions per start.
    check: single-swap check of the result: ``"auto"`` (exhaustive for length <= 4),
        ``"always"`` (exhaustive at any length), ``"never"``.
    tol: relative tolerance; a swap must beat the current score by ``tol * max(1, |score|)``.
    agreement_tol: a restart "reached" the best value when its end is within
        ``agreement_tol * max(1, |best|)`` of it.
    batch_size: the scorer's batch size (None: a search's default, the model plan's ``search_batch``:
        512 on a CPU, the scorer's own on a GPU; a lone GCG run: the scorer's own).
    progress: show a tqdm progress bar.

    GCG's steps (:mod:`rmlib.engine.gcg`):
    num_steps: at most this many steps (gradient + candidate batch each).
    search_width: candidates evaluated per step.
    topk: per position, only this many best-ranked (not yet visited) tokens are candidates.
    n_replace: positions swapped per candidate (``sampling="random"`` only; greedy swaps one).
    sampling: ``"greedy"`` (Faster-GCG: deterministic, best-ranked first) or ``"random"`` (GCG).
    patience: stop after this many steps without a new best (None: never).
    distance_penalty: Faster-GCG's weight on embedding distance (0 turns it off).
    verbose: print one line per step.
    """

    method: str = "both"
    length: int = 2
    maximize: bool = True
    restarts: int = 3
    restart_policy: str = "anytime"
    budget_seconds: float | None = None
    allowed: str = "ascii"
    allow_special_tokens: bool = False
    seed: int = 0
    init: str = "singles"
    shortlist: int | None = None
    max_passes: int = 20
    check: str = "auto"
    tol: float = 1e-5
    agreement_tol: float = 1e-4
    batch_size: int | None = None
    progress: bool = False
    num_steps: int = 50
    search_width: int = 256
    topk: int = 256
    n_replace: int = 1
    sampling: str = "greedy"
    patience: int | None = 10
    distance_penalty: float = 0.0
    verbose: bool = False

    def validate(self) -> "SearchConfig":
        """Raise an :class:`InputError` naming the bad setting and its fix; return self."""
        def choice(name, options):
            if getattr(self, name) not in options:
                raise InputError(f"SearchConfig.{name} must be one of {options}, got {getattr(self, name)!r}")

        def integer(name, low, allow_none=False):
            v = getattr(self, name)
            if v is None and allow_none:
                return
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < low:
                raise InputError(f"SearchConfig.{name} must be an int >= {low}{' or None' if allow_none else ''}, "
                                 f"got {v!r}")
            setattr(self, name, int(v))

        def fraction(name):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 <= v < 1:
                raise InputError(f"SearchConfig.{name} must be a number in [0, 1), got {v!r}")

        for name, options in (("method", METHODS), ("allowed", ALLOWED), ("init", INITS), ("check", CHECKS),
                              ("restart_policy", RESTART_POLICIES), ("sampling", SAMPLINGS)):
            choice(name, options)
        for name in ("length", "restarts", "max_passes", "num_steps", "search_width", "topk", "n_replace"):
            integer(name, 1)
        integer("seed", 0)
        integer("shortlist", 0, allow_none=True)
        integer("batch_size", 1, allow_none=True)
        integer("patience", 1, allow_none=True)
        for name in ("maximize", "allow_special_tokens"):
            if not isinstance(getattr(self, name), (bool, np.bool_)):
                what = "True (optimal) or False (pessimal)" if name == "maximize" else "True or False"
                raise InputError(f"SearchConfig.{name} must be {what}, got {getattr(self, name)!r}")
            setattr(self, name, bool(getattr(self, name)))  # np.bool_ -> bool: results stay JSON-able
        b = self.budget_seconds
        if b is not None and (isinstance(b, bool) or not isinstance(b, (int, float)) or not b > 0):
            raise InputError(f"SearchConfig.budget_seconds must be a number > 0 or None, got {b!r}")
        fraction("tol")
        fraction("agreement_tol")
        if self.sampling == "greedy" and self.n_replace != 1:
            raise InputError(f"SearchConfig.n_replace={self.n_replace} needs sampling='random': the deterministic "
                             "greedy sampling of Faster-GCG swaps one token per candidate")
        w = self.distance_penalty
        if isinstance(w, bool) or not isinstance(w, (int, float)) or not np.isfinite(w) or w < 0:
            raise InputError(f"SearchConfig.distance_penalty must be a finite number >= 0, got {w!r}")
        return self

    @property
    def direction(self) -> str:
        return "max" if self.maximize else "min"

    @property
    def ascii_only(self) -> bool:
        """Only tokens that decode to printable ASCII (``allowed="ascii"``)."""
        return self.allowed == "ascii"

    def shortlist_size(self) -> int | None:
        """Candidates per position: None for every allowed token, else K gradient-ranked ones."""
        if self.shortlist is None:
            return None if self.length <= EXHAUSTIVE_MAX_LEN else DEFAULT_SHORTLIST
        return self.shortlist or None


__all__ = ["ALLOWED", "CHECKS", "DEFAULT_SHORTLIST", "EXHAUSTIVE_MAX_LEN", "GCG_BUDGET_SHARE", "GCG_REVISION",
           "GCG_SETTINGS", "INITS", "METHODS", "RESTART_POLICIES", "SAMPLINGS", "SEARCH_REVISION", "SearchConfig"]
