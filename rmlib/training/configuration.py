"""What decides a trained reward model's weights: :class:`TrainConfig` (checked before any work, its
cache key), the training code's revision and the defaults, and where a configuration's model lives in
the cache."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import pathlib

import numpy as np

from ..errors import InputError
from ..options import check_chat_template
from ..paths import cache_dir
from ..prompts import ELO_PROMPTS

#: Bumped whenever a change here changes the weights a configuration trains to (part of the cache key).
TRAIN_REVISION = 2  # 2: the reward is read at the end-of-turn token (frames.ending_at_turn_end)
#: The paper's Sec. 4 prompt (EloEverything alignment).
DEFAULT_PROMPT = ELO_PROMPTS["greatest_ever"]
#: A differently worded prompt for the generalisation check (the paper's footnote-4 variant).
ALT_PROMPT = ELO_PROMPTS["humans_most_prefer"]
MIN_TRAIN_ITEMS = 4
#: The most training pairs sampled per item (more would not fit in memory for EloEverything's items).
MAX_PAIRS_PER_ITEM = 1000
MIN_TEST_ITEMS = 2
#: The torch threads a training run encodes and trains on unless its configuration says otherwise: float
#: sums split over another count round differently, so the count is part of the configuration (and its key).
#: One: the count every machine has, and one that never oversubscribes a loaded machine.
TRAIN_THREADS = 1
#: The lock file in a model folder while a run trains into it (a second run into the folder is refused).
LOCK_NAME = ".train.lock"


@dataclasses.dataclass
class TrainConfig:
    """Everything that decides the trained weights (and so the cache key).

    ``epochs`` and ``lr`` defaults were chosen by measurement on the default
    base (see the chapter "Train a reward model"): with the head alone the
    held-out tau stops improving after a few epochs at ``lr=2e-3``.
    ``max_items`` keeps a seeded random subset of the items (fast runs, tests).
    ``threads``: the torch CPU threads the run encodes and trains on, whatever the process's own count
    (:data:`TRAIN_THREADS` by default); a run resumed from checkpoints uses it too.
    ``chat_template`` None: the base's own template, with the reward read at
    the end-of-turn token (:func:`rmlib.engine.frames.ending_at_turn_end`:
    the newline the template writes after it is dropped); a template given
    here is used exactly as written.
    """

    base: str = "default"
    prompt: str = DEFAULT_PROMPT
    data: str = "eloeverything"
    split_seed: int = 0
    test_fraction: float = 0.5
    pairs_per_item: int = 20
    data_fraction: float = 1.0
    epochs: int = 8
    lr: float = 2e-3
    batch_size: int = 512
    unfreeze_blocks: int = 0
    seed: int = 0
    dtype: str = "float32"
    chat_template: str | None = None
    max_items: int | None = None
    threads: int = TRAIN_THREADS

    def validate(self) -> "TrainConfig":
        """Raise an :class:`InputError` that starts with the bad field's name (the CLI names its option)."""
        if not 0 < self.test_fraction < 1:
            raise InputError(f"test_fraction must be in (0, 1), got {self.test_fraction}")
        if not 0 < self.data_fraction <= 1:
            raise InputError(f"data_fraction must be in (0, 1], got {self.data_fraction}")
        if self.epochs < 1:
            raise InputError(f"epochs must be at least 1, got {self.epochs}")
        if not (self.lr > 0 and np.isfinite(self.lr)):
            raise InputError(f"lr must be a positive number, got {self.lr}")
        if self.unfreeze_blocks < 0:
            raise InputError(f"unfreeze_blocks must be 0 (head only) or a positive number of blocks, got "
                             f"{self.unfreeze_blocks}")
        if self.pairs_per_item < 1 or self.batch_size < 1:
            raise InputError("pairs_per_item and batch_size must be positive")
        if isinstance(self.threads, bool) or not isinstance(self.threads, (int, np.integer)) or self.threads < 1:
            raise InputError(f"threads must be a whole number of CPU threads >= 1, got {self.threads!r}")
        if self.pairs_per_item > MAX_PAIRS_PER_ITEM:
            raise InputError(f"pairs_per_item must be at most {MAX_PAIRS_PER_ITEM} (the pairs of all 7,530 EloEverything "
                             f"items then fit in memory; the default is 20), got {self.pairs_per_item}")
        if self.max_items is not None and self.max_items < MIN_TRAIN_ITEMS + MIN_TEST_ITEMS:
            raise InputError(f"max_items must be at least {MIN_TRAIN_ITEMS + MIN_TEST_ITEMS}, got {self.max_items}")
        for name in ("seed", "split_seed"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or not 0 <= value < 2 ** 63:
                raise InputError(f"{name} must be a whole number from 0 to 2**63 - 1, got {value!r}")
        if self.chat_template is not None:
            check_chat_template(self.chat_template)
        from ..engine.models import DTYPES, check_model_spec, model_kind

        if self.dtype not in DTYPES:
            raise InputError(f"dtype must be one of {list(DTYPES)}, not {self.dtype!r}")
        if self.base.startswith("trained:"):
            raise InputError("base must be a language model ('default', 'gemma-3-270m', a hub id or a folder), "
                             "not a trained reward model")
        check_model_spec(self.base)  # unknown base: a clear error before any work
        kind = model_kind(self.base)
        if kind in ("classifier", "other"):
            what = "a reward model (a sequence classifier)" if kind == "classifier" else \
                "not a causal language model (see the architectures in its config.json)"
            raise InputError(f"base {self.base!r} is {what}: a reward model is trained from a causal language "
                             "model's backbone; pass 'default', 'gemma-3-270m', a causal LM's hub id or a folder "
                             "saved from an AutoModelForCausalLM")
        return self

    def key(self, data_sha256: str, pairs_sha256: str | None = None) -> str:
        """The cache key: every field, the data's hash, and for a local base folder its fingerprint (so
        retrained or replaced weights at the same path train a new model, never reuse the old one);
        ``pairs_sha256``: the digest of training pairs given in place of the sampled ones
        (:func:`rmlib.training.bradley_terry.pairs_digest`), which joins the key."""
        facts = dataclasses.asdict(self)
        facts.update(data_sha256=data_sha256, train_revision=TRAIN_REVISION)
        if os.path.exists(self.data):
            facts["data"] = os.path.basename(self.data)  # the hash names the content
        from ..engine.models import check_model_spec, folder_fingerprint

        if check_model_spec(self.base) == "folder":
            facts["base_fingerprint"] = folder_fingerprint(os.path.expanduser(self.base))
        key = hashlib.sha256(json.dumps(facts, sort_keys=True).encode()).hexdigest()[:16]
        if pairs_sha256 is not None:
            key = hashlib.sha256(f"{key}:{pairs_sha256}".encode()).hexdigest()[:16]
        return key


def trained_folder(config: TrainConfig, data_sha256: str, key: str | None = None) -> pathlib.Path:
    """Where a configuration's model lives in the cache (``<cache>/trained/<base>-<key>``; ``key`` default:
    the configuration's)."""
    from ..engine.trained_pointers import trained_slug

    return cache_dir() / "trained" / f"{trained_slug(config.base)}-{key or config.key(data_sha256)}"
