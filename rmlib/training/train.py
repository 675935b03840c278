"""Train Bradley–Terry reward models offline: a scalar head on a causal LM.

Data. EloEverything (7,530 items with human Elo ratings, the aggregate of
1.8 M pairwise votes). Elo *is* a Bradley–Terry model, so pairs of training
items sampled uniformly, each with the Elo-implied preference probability
``1 / (1 + 10 ** ((R_j - R_i) / 400))`` as a soft label, give a faithful BT
training signal. Items are split into train and test by a seeded split
(default 50/50); a pair never holds a test item. A CSV is a second source:
columns ``item, rating`` (ratings on the Elo scale) or ``chosen, rejected``
(and optionally ``prompt``; hard labels).

Model. ``<Arch>ForSequenceClassification`` built from the base LM's config
and backbone weights, with a seeded random scalar head (the untrained
baseline). ``unfreeze_blocks=0`` (default) trains the head alone;
``unfreeze_blocks=K`` also trains the top K transformer blocks and the final
norm. Every item shares the prompt prefix, so the prefix runs once (its KV
cache is reused) and the frozen lower blocks run once per item: their
outputs are cached (the final hidden state for head-only training, the input
of block ``L-K`` otherwise), so an epoch costs only the trained part.

Artifact. A standard Hugging Face folder (``config.json`` naming the
``*ForSequenceClassification`` architecture, ``model.safetensors``, the
tokenizer with the chat template, ``training.json`` with the data source and
hash, prompt, split, hyper-parameters, loss curve, held-out tau, wall time,
rmlib version). Trained models live under ``<cache>/trained/`` keyed by
their training configuration: a second build reuses them.

Robustness. tqdm progress; a checkpoint after each epoch, only the latest kept
(safetensors + JSON; a run killed with ``kill -9`` resumes from it and ends with
identical weights, and Ctrl-C says which epochs are saved); one run at a time
per folder (a lock: a second run into the same ``--out`` is refused, naming the
first; into the cache folder it waits and reuses the model); deterministic for a
seed on a CPU, at the thread count the configuration names (``threads``, part
of the key, whatever the process's own count); a
non-finite loss stops with the step and learning rate, non-finite frozen
features with the items and the dtype. Before any item is encoded, the data
and settings are checked (:func:`load_preferences`, :meth:`TrainConfig.validate`,
:func:`check_fits`, :func:`check_output_folder`): errors name the file's rows
or the setting. A local base folder's fingerprint is part of the cache key,
so new weights at the same path train a new model.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import os
import pathlib
import platform
import re
import shutil
import sys
import tempfile
import time
from typing import Callable

import numpy as np
import pandas as pd
import torch

from .. import __version__
from ..engine.models import TRAINED_POINTER_SUFFIX
from ..engine.threads import pinned_threads
from ..errors import InputError, Interrupted, NonFiniteError
from ..files import atomic_path, atomic_write, file_lock, lock_holder
from ..paths import Foreign, cache_dir
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


# --------------------------------------------------------------------------
# Configuration
# --------------------------------------------------------------------------


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

    def key(self, data_sha256: str) -> str:
        """The cache key: every field, the data's hash, and for a local base folder its fingerprint (so
        retrained or replaced weights at the same path train a new model, never reuse the old one)."""
        facts = dataclasses.asdict(self)
        facts.update(data_sha256=data_sha256, train_revision=TRAIN_REVISION)
        if os.path.exists(self.data):
            facts["data"] = os.path.basename(self.data)  # the hash names the content
        from ..engine.models import check_model_spec, folder_fingerprint

        if check_model_spec(self.base) == "folder":
            facts["base_fingerprint"] = folder_fingerprint(os.path.expanduser(self.base))
        return hashlib.sha256(json.dumps(facts, sort_keys=True).encode()).hexdigest()[:16]


def trained_folder(config: TrainConfig, data_sha256: str, key: str | None = None) -> pathlib.Path:
    """Where a configuration's model lives in the cache (``<cache>/trained/<base>-<key>``; ``key`` default:
    the configuration's)."""
    from ..engine.models import trained_slug

    return cache_dir() / "trained" / f"{trained_slug(config.base)}-{key or config.key(data_sha256)}"


# --------------------------------------------------------------------------
# Data
# --------------------------------------------------------------------------


@dataclasses.dataclass
class Preferences:
    """Preference data: items (``prompt, text, rating, row``) and, for pair data, ``pairs``."""

    items: pd.DataFrame  # columns prompt, text, rating (NaN without ratings), row (its first row in the file)
    pairs: pd.DataFrame | None  # pair data: columns chosen, rejected (indices into items)
    source: str
    sha256: str
    kind: str  # "ratings" or "pairs"
    prompt_column: bool = False  # the prompts come from the file's 'prompt' column (else from the config)


#: The largest preference CSV read (a larger file, or an endless one, is refused before it fills memory).
MAX_DATA_FILE = 512 << 20


def _sha256(path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def load_preferences(data: str = "eloeverything", prompt: str = DEFAULT_PROMPT) -> Preferences:
    """EloEverything (``"eloeverything"``) or a CSV of ``item, rating`` / ``[prompt,] chosen, rejected``.

    A CSV is read as UTF-8 text (a byte-order mark and Windows line ends are text, not data); column
    names are matched without regard to case or surrounding spaces. Refused, naming the rows: empty
    items, prompts or responses; an item listed twice with different ratings (listed twice with the
    same rating, it is kept once); a pair whose responses are the same; a file with both kinds of
    columns.
    """
    if not isinstance(prompt, str) or not prompt.strip():
        raise InputError("prompt must be a non-empty string")
    if data == "eloeverything":
        from ..tables import downloads, paper_release

        df = paper_release.eloeverything("greatest_ever")
        path = downloads.fetch("elo_greatest_ever")
        items = pd.DataFrame({"prompt": prompt, "text": df["name"].astype(str),
                              "rating": df["elo_score"].astype(float), "row": np.arange(1, len(df) + 1)})
        return Preferences(_unique_items(items, f"EloEverything ({path.name})"), None, df.attrs["source"],
                           _sha256(path), "ratings")
    path = pathlib.Path(data).expanduser()
    if not path.is_file():
        raise InputError(f"data {data!r} is neither 'eloeverything' nor a CSV file"
                         f"{' (it is a folder)' if path.is_dir() else ''}: pass one of them")
    raw = _read_data_csv(path)
    cols = set(raw.columns)
    row = pd.Series(np.arange(1, len(raw) + 1), index=raw.index)
    pair_cols, rating_cols = {"chosen", "rejected"} <= cols, {"item", "rating"} <= cols
    if pair_cols and rating_cols:
        raise InputError(f"{path}: has both 'item, rating' and 'chosen, rejected' columns, so it cannot be told "
                         "which to train on: keep one kind of data per file")
    if pair_cols:
        with_prompt = "prompt" in cols
        for col in ("prompt", "chosen", "rejected") if with_prompt else ("chosen", "rejected"):
            blank = raw[col].isna() | (raw[col].str.strip() == "")
            if blank.any():
                fix = ("fill in every prompt, or drop the 'prompt' column so that every pair answers --prompt"
                       if col == "prompt" else "every pair needs two responses")
                raise InputError(f"{_rows(path, row[blank])}: the {col!r} cell is empty; {fix}")
        prompts = raw["prompt"] if with_prompt else pd.Series(prompt, index=raw.index)
        same = (raw["chosen"] == raw["rejected"]).to_numpy()
        if same.any():
            raise InputError(f"{_rows(path, row[same])}: the chosen and the rejected response are the same text; "
                             "a pair compares two different responses")
        spaced = (_spaces_folded(raw["chosen"]) == _spaces_folded(raw["rejected"])).to_numpy()
        if spaced.any():
            raise InputError(f"{_rows(path, row[spaced])}: the chosen and the rejected response differ only in white "
                             "space, which a reward model should not learn to prefer; give two different responses "
                             "or remove the row")
        repeated = pd.DataFrame({"p": prompts, "c": raw["chosen"], "r": raw["rejected"]}).duplicated(keep=False)
        if repeated.any():
            first = raw[repeated.to_numpy()].iloc[0]
            rows = row[repeated.to_numpy() & (raw["chosen"] == first["chosen"]).to_numpy()
                       & (raw["rejected"] == first["rejected"]).to_numpy()]
            raise InputError(f"{_rows(path, rows)}: the same pair ({first['chosen']!r} over {first['rejected']!r}"
                             f"{' for one prompt' if with_prompt else ''}) is listed {len(rows)} times, which would "
                             "count it as that many pairs; keep one row per pair")
        units = pd.concat([pd.DataFrame({"prompt": prompts, "text": raw["chosen"], "row": row}),
                           pd.DataFrame({"prompt": prompts, "text": raw["rejected"], "row": row})])
        items = units.drop_duplicates(["prompt", "text"]).reset_index(drop=True)  # chosen first: the order is the split's
        items.insert(2, "rating", np.nan)
        index = {(p, t): i for i, (p, t) in enumerate(zip(items["prompt"], items["text"]))}
        pairs = pd.DataFrame({"chosen": [index[k] for k in zip(prompts, raw["chosen"])],
                              "rejected": [index[k] for k in zip(prompts, raw["rejected"])]})
        return Preferences(items, pairs, str(path), _sha256(path), "pairs", prompt_column=with_prompt)
    if rating_cols:
        blank = (raw["item"].isna() | (raw["item"].str.strip() == "")).to_numpy()
        if blank.any():
            raise InputError(f"{_rows(path, row[blank])}: the 'item' cell is empty; every row names an item "
                             "(fill it in or remove the row)")
        rating = pd.to_numeric(raw["rating"].str.strip(), errors="coerce")
        bad = ~np.isfinite(rating.to_numpy(float))
        if bad.any():
            raise InputError(f"{_rows(path, row[bad])}: column 'rating' must be finite numbers (Elo scale), not "
                             f"{raw['rating'][bad].iloc[0]!r}")
        items = pd.DataFrame({"prompt": prompt, "text": raw["item"], "rating": rating.astype(float), "row": row})
        items = _unique_items(items, str(path))
        _check_ratings(items["rating"].to_numpy(float), str(path))
        return Preferences(items, None, str(path), _sha256(path), "ratings")
    raise InputError(f"{path}: needs columns 'item, rating' (ratings on the Elo scale) or 'chosen, rejected' "
                     f"(optionally 'prompt'); it has {sorted(cols)}")


def _read_data_csv(path: pathlib.Path) -> pd.DataFrame:
    """A preference CSV as strings (empty cells NaN), its header names stripped and lower-cased, each once."""
    import csv
    import io

    from ..tables.textfiles import read_text

    text = read_text(path, str(path), limit=MAX_DATA_FILE)
    if not text.strip():
        raise InputError(f"{path}: the file is empty; expected a header 'item,rating' or '[prompt,]chosen,rejected' "
                         "and one row per item or pair")
    header = [name.strip().lower() for name in next(r for r in csv.reader(io.StringIO(text)) if r)]
    repeated = sorted({name for name in header if header.count(name) > 1})
    if repeated:
        raise InputError(f"{path}: the header names column {repeated[0]!r} more than once (names are read without "
                         "regard to case or spaces); keep one column per name")
    try:
        raw = pd.read_csv(io.StringIO(text), header=0, names=header, dtype=str, keep_default_na=False,
                          na_values=[""])
    except (pd.errors.ParserError, pd.errors.EmptyDataError) as err:
        raise InputError(f"{path}: not a well-formed CSV ({str(err).strip().splitlines()[0]}); every row needs the "
                         "header's number of fields") from None
    if raw.empty:
        raise InputError(f"{path}: the CSV has a header but no rows; nothing to train on")
    return raw


def _rows(where, rows) -> str:
    """``"<file>: row 3 (line 4)"`` / ``"<file>: rows 3, 9 (lines 4, 10)"``: rows counted from 1 after the header."""
    rows = [int(r) for r in rows]
    shown = rows[:5]
    more = " …" if len(rows) > 5 else ""
    if len(rows) == 1:
        return f"{where}: row {rows[0]} (line {rows[0] + 1})"
    return (f"{where}: rows {', '.join(map(str, shown))}{more} "
            f"(lines {', '.join(str(r + 1) for r in shown)}{more})")


def _spaces_folded(texts: pd.Series) -> pd.Series:
    """Each text with its runs of white space made one space and its ends stripped."""
    return texts.str.split().str.join(" ")


#: The largest rating magnitude read: Elo differences of twice this still have a finite win probability
#: (``elo_probability``) and a finite score difference.
MAX_RATING = 1e12


def _check_ratings(ratings: np.ndarray, what: str) -> None:
    """Ratings that can train a model: not all equal (nothing to learn), none beyond :data:`MAX_RATING`."""
    huge = np.abs(ratings) > MAX_RATING
    if huge.any():
        raise InputError(f"{what}: {int(huge.sum())} rating(s) beyond ±{MAX_RATING:g} (e.g. "
                         f"{ratings[huge][0]:g}): ratings are on the Elo scale (about 0 to 3000); rescale them")
    if len(ratings) and np.all(ratings == ratings[0]):
        raise InputError(f"{what}: every item has the same rating ({ratings[0]:g}), so there is no preference to "
                         "learn; give items with different ratings")


def _unique_items(items: pd.DataFrame, what: str) -> pd.DataFrame:
    """One row per item: an item repeated with the same rating is kept once; with different ratings it is
    an error naming the rows."""
    repeated = items[items["text"].duplicated(keep=False)]
    for text, group in repeated.groupby("text", sort=False):
        if group["rating"].nunique() > 1:
            raise InputError(f"{_rows(what, group['row'])}: the item {text!r} is listed with different ratings "
                             f"({', '.join(f'{r:g}' for r in group['rating'])}); keep one row per item")
    return items.drop_duplicates("text", keep="first").reset_index(drop=True)


def split_items(n: int, test_fraction: float = 0.5, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Seeded item split: (train indices, test indices), both sorted, disjoint, covering 0..n-1."""
    n_test = int(round(n * test_fraction))
    if n - n_test < MIN_TRAIN_ITEMS or n_test < MIN_TEST_ITEMS:
        raise InputError(f"too few items ({n}) for a {test_fraction:.0%} test split: need at least "
                         f"{MIN_TRAIN_ITEMS} training and {MIN_TEST_ITEMS} test items")
    perm = np.random.default_rng(seed).permutation(n)
    return np.sort(perm[n_test:]), np.sort(perm[:n_test])


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


# --------------------------------------------------------------------------
# Model
# --------------------------------------------------------------------------


def build_classifier(base: str, *, dtype: str = "float32", device: str = "cpu", seed: int = 0,
                     chat_template: str | None = None):
    """``<Arch>ForSequenceClassification`` with the base LM's backbone and a seeded random head.

    Returns ``(model, tokenizer, template, loaded)``: ``template`` is the chat
    template string the tokenizer will carry in the saved folder.
    """
    from transformers import AutoModelForSequenceClassification

    from ..engine.frames import ending_at_turn_end, resolve_template
    from ..engine.models import load_model

    loaded = load_model(base, kind="logprob", dtype=dtype, device="cpu")
    causal = loaded.model
    config = causal.config.__class__.from_dict(causal.config.to_dict())
    config.num_labels = 1
    tok = loaded.tokenizer
    if chat_template is not None:
        template = resolve_template(tok, chat_template, loaded.model_id)
    else:  # the base's own template, the reward read at its end-of-turn token
        template = ending_at_turn_end(resolve_template(tok, loaded.chat_template, loaded.model_id))
    config.pad_token_id = _pad_id(config, tok, template, loaded.model_id)
    from ..engine.models import DTYPES

    model = AutoModelForSequenceClassification.from_config(config, dtype=DTYPES[dtype])
    config.architectures = [type(model).__name__]
    prefix = model.base_model_prefix
    backbone = getattr(model, prefix)
    missing, unexpected = backbone.load_state_dict(getattr(causal, causal.base_model_prefix).state_dict(),
                                                   strict=False)
    if missing or unexpected:
        raise RuntimeError(f"backbone weights of {base} do not fit {type(model).__name__}: missing {missing[:5]}, "
                           f"unexpected {unexpected[:5]}")
    gen = torch.Generator().manual_seed(seed)
    std = float(getattr(config, "initializer_range", 0.02))
    with torch.no_grad():
        model.score.weight.copy_(torch.randn(model.score.weight.shape, generator=gen) * std)
        if getattr(model.score, "bias", None) is not None:
            model.score.bias.zero_()
    model.eval().to(device)
    return model, tok, template, loaded


def _pad_id(config, tok, template: str, what: str) -> int:
    """A pad id that never ends a response: transformers' sequence classifiers read the reward at
    the last token that is not the pad token, so a pad equal to the end-of-turn token (SmolLM2's
    ``<|im_end|>``) would move the reward one token back."""
    from ..engine.frames import chat_frame

    ending = set(chat_frame(tok, "q", template, what).suffix_ids[-1:])
    for pad in (config.pad_token_id, tok.pad_token_id, tok.unk_token_id, tok.bos_token_id, tok.eos_token_id):
        if pad is not None and pad not in ending:
            return int(pad)
    raise InputError(f"{what}: every special token (pad, unk, bos, eos) is the token a response ends with "
                     "under this chat template; pass a chat_template that ends the response differently")


def _layers(model):
    backbone = getattr(model, model.base_model_prefix)
    return backbone, backbone.layers


class _Inject(torch.nn.Module):
    """Stands in for block 0: returns the cached input of the first trained block."""

    def __init__(self, hidden):
        super().__init__()
        self.hidden = hidden

    def forward(self, hidden_states, *args, **kwargs):
        return self.hidden


class _Skip(torch.nn.Module):
    def forward(self, hidden_states, *args, **kwargs):
        return hidden_states


@contextlib.contextmanager
def _lower_blocks_cached(model, k: int, hidden: torch.Tensor):
    """Run ``model`` with its lower ``L-k`` blocks replaced by their cached output ``hidden``.

    The model's own masks, positions and rotary embeddings are used, so this is
    the same forward as the full model given the same input ids.
    """
    backbone, layers = _layers(model)
    saved = backbone.layers
    n = len(layers)
    backbone.layers = torch.nn.ModuleList([_Inject(hidden)] + [_Skip() for _ in range(n - k - 1)]
                                          + list(layers[n - k:]))
    try:
        yield
    finally:
        backbone.layers = saved


@dataclasses.dataclass
class Encoded:
    """Frozen computation, done once: per item the final feature and (K > 0) the input of block L-K."""

    features: torch.Tensor  # (n, H): final normed hidden state at the item's scoring position
    ids: list[list[int]]  # per item: prefix + item + suffix ids (K > 0)
    hidden: list[torch.Tensor] | None  # per item: (len, H) input of block L-K for ids (K > 0)


def encode_items(model, tokenizer, template: str, items: pd.DataFrame, unfreeze_blocks: int = 0,
                 batch_size: int = 64, progress: bool = True, model_id: str = "model", source: str = "items") -> Encoded:
    """Run the frozen part once per item, the prompt prefix once per prompt (its KV cache reused).

    Every item is tokenized first: one that does not fit the model's context with its prompt's chat
    frame is refused (naming ``source`` and its row) before any forward pass.
    """
    from ..progress import bar as progress_bar

    from ..engine.frames import chat_frame
    from ..engine.kernel import PrefixKernel
    from ..engine.models import LoadedModel

    k = unfreeze_blocks
    backbone, layers = _layers(model)
    if k >= len(layers):
        raise InputError(f"unfreeze_blocks must be less than the {len(layers)} blocks of {model_id} (0 trains the "
                         f"head only), got {k}")
    device = next(model.parameters()).device
    dtype = "float32" if model.dtype == torch.float32 else str(model.dtype).split(".")[-1]
    loaded = LoadedModel(model_id, model_id, None, "classifier", model, tokenizer, dtype)
    n, H = len(items), model.config.hidden_size
    features = torch.full((n, H), float("nan"))  # an item left out would show as NaN, never as stale memory
    ids_out: list[list[int]] = [[] for _ in range(n)]
    hidden_out: list[torch.Tensor | None] = [None] * n
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
    _check_sizes(model, tokenizer, model_id, source, items)  # before tokenizing a text no context can hold
    groups = [(prompt, chat_frame(tokenizer, prompt, template, model_id), group)
              for prompt, group in items.groupby("prompt", sort=False, dropna=False)]
    cands_of = [[list(ids) + list(frame.suffix_ids)
                 for ids in tokenizer(list(group["text"]), add_special_tokens=False).input_ids]
                for _, frame, group in groups]
    for (_, frame, group), cands in zip(groups, cands_of):
        _check_context(model, model_id, source, frame, group, cands)
    bar = progress_bar(n, progress=progress, desc="encoding items", unit="item")
    for (prompt, frame, group), cands in zip(groups, cands_of):
        kernel = PrefixKernel(loaded, frame.prefix_ids)
        kernel.head = lambda h: h[:, None, :]  # the final hidden state itself, not the head's scalar
        prefix_hidden = None
        if k:
            with torch.no_grad():
                out = backbone(input_ids=kernel.prefix_ids, output_hidden_states=True)
            prefix_hidden = out.hidden_states[len(layers) - k][0].float().cpu()
        rows = group.index.to_numpy()
        order = np.argsort([len(c) for c in cands], kind="stable")
        for start in range(0, len(order), batch_size):
            chunk = order[start:start + batch_size]
            length = max(len(cands[j]) for j in chunk)
            ids = torch.full((len(chunk), length), pad, dtype=torch.long)
            for r, j in enumerate(chunk):
                ids[r, :len(cands[j])] = torch.tensor(cands[j])
            last = torch.tensor([len(cands[j]) - 1 for j in chunk])
            with torch.no_grad():
                if k:
                    out = backbone(input_ids=ids.to(device), past_key_values=kernel.prefix_cache(len(chunk)),
                                   use_cache=True, output_hidden_states=True)
                    feats = out.last_hidden_state[torch.arange(len(chunk)), last.to(device)].float().cpu()
                else:  # the scorer's own path (small batches packed after the prefix), the hidden state kept
                    feats = kernel.classifier(ids.to(device), last.to(device)).cpu()
            for r, j in enumerate(chunk):
                row = rows[j]
                features[row] = feats[r]
                if k:
                    h = out.hidden_states[len(layers) - k][r, :len(cands[j])].float().cpu()
                    hidden_out[row] = torch.cat([prefix_hidden, h])
                    ids_out[row] = list(frame.prefix_ids) + cands[j]
            bar.update(len(chunk))
    bar.close()
    bad = ~torch.isfinite(features).all(dim=1)
    if k:
        bad |= torch.tensor([h is None or not bool(torch.isfinite(h).all()) for h in hidden_out])
    if bad.any():
        first = int(torch.nonzero(bad)[0])
        raise NonFiniteError(f"the frozen features of {int(bad.sum())} of {n} items came out NaN or infinite in "
                             f"{dtype} (the first: {items['text'].iloc[first]!r}): train in float32 (--dtype "
                             "float32), or check the base model's weights")
    return Encoded(features, ids_out, hidden_out if k else None)


def _feature_facts(config, template, items, loaded) -> dict:
    """What the head-only features of these items depend on (their cache key, recorded beside them)."""
    return {"model_id": loaded.model_id, "revision": loaded.revision, "dtype": config.dtype, "template": template,
            "items": hashlib.sha256(json.dumps([list(items["prompt"]), list(items["text"])]).encode()).hexdigest(),
            "train_revision": TRAIN_REVISION, "threads": config.threads}


def _features_path(config, template, items, loaded) -> pathlib.Path | None:
    """Where the head-only features of these items are cached (None: top blocks train, nothing is cached)."""
    if config.unfreeze_blocks:
        return None
    facts = _feature_facts(config, template, items, loaded)
    key = hashlib.sha256(json.dumps(facts, sort_keys=True).encode()).hexdigest()[:20]
    return cache_dir() / "trained" / "features" / f"{key}.safetensors"


def cached_encoding(config, model, tok, template, items, loaded, progress, source: str = "items") -> Encoded:
    """Head-only features are the frozen model's output: cached on disk, so runs that differ only in
    training settings (epochs, lr, data fraction, seed) reuse them."""
    path = _features_path(config, template, items, loaded)
    if path is None:
        return encode_items(model, tok, template, items, config.unfreeze_blocks, progress=progress,
                            model_id=loaded.model_id, source=source)
    from safetensors.torch import load_file, save_file

    if path.exists():
        try:
            feats = load_file(str(path))["features"]
            if feats.shape == (len(items), model.config.hidden_size) and bool(torch.isfinite(feats).all()):
                return Encoded(feats, [[] for _ in range(len(items))], None)
        except Exception:  # a damaged cache file is recomputed
            pass
    enc = encode_items(model, tok, template, items, 0, progress=progress, model_id=loaded.model_id, source=source)
    with atomic_path(path) as tmp:
        save_file({"features": enc.features.contiguous()}, str(tmp))
    facts = _feature_facts(config, template, items, loaded)
    atomic_write(path.with_suffix(".json"), json.dumps(facts, sort_keys=True))  # what made it (stale_reason)
    return enc


def _context_length(model) -> int | None:
    """The most positions the model takes (``max_position_embeddings``), or None when its config lacks it."""
    cfg = model.config.get_text_config() if hasattr(model.config, "get_text_config") else model.config
    n = getattr(cfg, "max_position_embeddings", None)
    return int(n) if isinstance(n, int) and n > 0 else None


def _check_sizes(model, tokenizer, model_id: str, source: str, items: pd.DataFrame) -> None:
    """An item longer in bytes than four times the context times the longest vocabulary entry (in UTF-8,
    never shorter than the text its token covers) cannot fit: refused before it is tokenized."""
    context = _context_length(model)
    if context is None:
        return
    longest = max((len(t.encode("utf-8")) for t in tokenizer.get_vocab()), default=0)
    limit = 4 * context * max(longest, 16)
    sizes = items["text"].map(lambda t: len(t.encode("utf-8"))).to_numpy()
    over = np.flatnonzero(sizes > limit)
    if len(over):
        rows = items["row"].iloc[over] if "row" in items else over + 1
        raise InputError(f"{_rows(source, rows)}: the item is {sizes[over[0]]:,} bytes, more than the context of "
                         f"{model_id} ({context} positions) can hold with its tokenizer (at most {limit:,} bytes): "
                         "shorten it or leave it out")


def _check_context(model, model_id: str, source: str, frame, group: pd.DataFrame, cands: list[list[int]]) -> None:
    """Each item's ids (response and suffix) after its prompt's prefix must fit the model's context."""
    context = _context_length(model)
    if context is None:
        return
    lengths = np.array([len(frame.prefix_ids) + len(c) for c in cands])
    over = np.flatnonzero(lengths > context)
    if len(over):
        around = len(frame.prefix_ids) + len(frame.suffix_ids)
        rows = group["row"].iloc[over] if "row" in group else group.index[over] + 1
        raise InputError(f"{_rows(source, rows)}: the item ({lengths[over[0]] - around:,} tokens"
                         f"{' for the first' if len(over) > 1 else ''}) with its prompt's chat frame ({around} tokens) "
                         f"is over the context of {model_id} ({context} positions): shorten it or leave it out")


def check_fits(data: Preferences, tokenizer, template: str, model, model_id: str) -> None:
    """Checks before any item is encoded: every prompt and item free of special-token text (it would open or close chat turns instead of being read); each
    prompt's chat frame within the model's context (``max_position_embeddings``; :func:`encode_items`
    checks each item in its frame the same way before its first forward pass). Errors name the rows of
    the data file (or start with the setting's name)."""
    from ..engine.frames import chat_frame, special_token_texts

    context = _context_length(model)
    items = data.items
    for prompt, group in items.groupby("prompt", sort=False, dropna=False):
        shown = prompt if len(prompt) <= 60 else prompt[:57] + "..."
        where = _rows(data.source, group["row"]) + ": the prompt" if data.prompt_column else f"prompt {shown!r}"
        found = special_token_texts(tokenizer, prompt)
        if found:
            raise InputError(f"{where} contains the special-token text {found[:5]} of {model_id}'s tokenizer, which "
                             "would open or close chat turns instead of being read as text: remove it")
        frame = chat_frame(tokenizer, prompt, template, model_id)
        around = len(frame.prefix_ids) + len(frame.suffix_ids)
        if context is not None and around + 1 > context:
            raise InputError(f"{where} is too long for {model_id}: its chat frame is {around} tokens, over the "
                             f"model's context of {context} positions; shorten it")
        texts = list(group["text"])
        if special_token_texts(tokenizer, "\n".join(texts)):
            for text, row in zip(texts, group["row"]):
                found = special_token_texts(tokenizer, text)
                if found:
                    raise InputError(f"{_rows(data.source, [row])}: the item {text[:60]!r} contains the special-token "
                                     f"text {found[:5]} of {model_id}'s tokenizer, which would end the response early: "
                                     "remove it")


def check_output_folder(out) -> pathlib.Path:
    """``out`` (``--out``): a folder, new, empty or holding a model trained here, in a writable place."""
    folder = pathlib.Path(out).expanduser()
    if folder.exists() and not folder.is_dir():
        raise InputError(f"--out {folder} is a file: give a folder for the trained model (it is created if missing)")
    probe = folder
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    if not probe.is_dir() or not os.access(probe, os.W_OK | os.X_OK):
        raise InputError(f"--out {folder}: cannot write in {probe} (not a writable folder); choose another folder")
    if (folder.is_dir() and any(p.name != LOCK_NAME for p in folder.iterdir())
            and not (folder / ".checkpoints").exists() and not (folder / "training.json").exists()):
        raise InputError(f"--out {folder} exists and is not a trained-model folder: pass an empty or new folder")
    return folder


class _Scorer:
    """Scores of items during training: the head on cached features, or the top K blocks too."""

    def __init__(self, model, encoded: Encoded, k: int, pad: int):
        self.model, self.encoded, self.k, self.pad = model, encoded, k, pad
        self.device = next(model.parameters()).device

    def parameters(self) -> list[tuple[str, torch.nn.Parameter]]:
        names = {"score."}
        if self.k:
            backbone, layers = _layers(self.model)
            n = len(layers)
            names |= {f"{self.model.base_model_prefix}.layers.{i}." for i in range(n - self.k, n)}
            names.add(f"{self.model.base_model_prefix}.norm.")
        out = []
        for name, p in self.model.named_parameters():
            train = any(name.startswith(x) for x in names)
            p.requires_grad_(train)
            if train:
                out.append((name, p))
        return out

    def __call__(self, idx: np.ndarray) -> torch.Tensor:
        if not self.k:
            feats = self.encoded.features[torch.as_tensor(idx)].to(self.device, self.model.dtype)
            return self.model.score(feats)[:, 0].float()
        ids_l = [self.encoded.ids[i] for i in idx]
        length = max(len(x) for x in ids_l)
        H = self.encoded.features.shape[1]
        ids = torch.full((len(idx), length), self.pad, dtype=torch.long)
        hid = torch.zeros(len(idx), length, H)
        for r, i in enumerate(idx):
            ids[r, :len(ids_l[r])] = torch.tensor(ids_l[r])
            hid[r, :len(ids_l[r])] = self.encoded.hidden[i]
        last = torch.tensor([len(x) - 1 for x in ids_l], device=self.device)
        backbone, _ = _layers(self.model)
        with _lower_blocks_cached(self.model, self.k, hid.to(self.device, self.model.dtype)):
            out = backbone(input_ids=ids.to(self.device), use_cache=False)
        h = out.last_hidden_state[torch.arange(len(idx), device=self.device), last]
        return self.model.score(h)[:, 0].float()

    def all(self, idx: np.ndarray, batch: int = 256) -> np.ndarray:
        with torch.no_grad():
            return np.concatenate([self(idx[s:s + batch]).double().cpu().numpy()
                                   for s in range(0, len(idx), batch)]) if len(idx) else np.zeros(0)


# --------------------------------------------------------------------------
# Checkpoints (safetensors + JSON: nothing pickled)
# --------------------------------------------------------------------------


def _save_checkpoint(folder: pathlib.Path, epoch: int, params, optimizer, state: dict) -> None:
    """Write epoch ``epoch``'s checkpoint (weights and optimizer as safetensors, the rest as JSON), then
    remove every earlier one: only the latest is kept (each holds the whole loss curve so far)."""
    from safetensors.torch import save_file

    folder.mkdir(parents=True, exist_ok=True)
    tensors = {f"param.{n}": p.detach().cpu().contiguous() for n, p in params}
    opt = optimizer.state_dict()
    steps = {}
    for i, s in opt["state"].items():
        for key, value in s.items():
            if torch.is_tensor(value) and value.dim() > 0:
                tensors[f"opt.{i}.{key}"] = value.detach().cpu().contiguous()
            else:
                steps[f"{i}.{key}"] = float(value)
    with atomic_path(folder / f"epoch-{epoch}.safetensors") as tmp:
        save_file(tensors, str(tmp))
    atomic_write(folder / f"epoch-{epoch}.json", json.dumps({**state, "epoch": epoch, "opt_scalars": steps,
                                                              "param_groups": opt["param_groups"]}))
    keep = {f"epoch-{epoch}.safetensors", f"epoch-{epoch}.json"}
    for old in sorted(folder.glob("epoch-*.json")) + sorted(folder.glob("epoch-*.safetensors")):
        if old.name not in keep:  # the record first: a checkpoint without its record is never read
            old.unlink(missing_ok=True)


def _latest_checkpoint(folder: pathlib.Path, key: str) -> tuple[int, dict] | None:
    if not folder.is_dir():
        return None
    found = []
    for p in folder.glob("epoch-*.json"):
        try:
            state = json.loads(p.read_text())
        except (OSError, ValueError):
            continue
        e = state.get("epoch")
        if state.get("key") == key and (folder / f"epoch-{e}.safetensors").exists():
            found.append((e, state))
    return max(found, key=lambda x: x[0]) if found else None


def _load_checkpoint(folder: pathlib.Path, epoch: int, state: dict, params, optimizer) -> None:
    from safetensors.torch import load_file

    tensors = load_file(str(folder / f"epoch-{epoch}.safetensors"))
    with torch.no_grad():
        for n, p in params:
            p.copy_(tensors[f"param.{n}"])
    opt_state: dict = {}
    for name, value in tensors.items():
        if name.startswith("opt."):
            _, i, key = name.split(".", 2)
            opt_state.setdefault(int(i), {})[key] = value
    for name, value in state["opt_scalars"].items():
        i, key = name.split(".", 1)
        opt_state.setdefault(int(i), {})[key] = torch.tensor(value)
    optimizer.load_state_dict({"state": opt_state, "param_groups": state["param_groups"]})


# --------------------------------------------------------------------------
# Training
# --------------------------------------------------------------------------


@dataclasses.dataclass
class TrainRun:
    """What :func:`train_reward_model` returns: the folder and its ``training.json`` facts."""

    folder: pathlib.Path
    info: dict
    reused: bool = False

    @property
    def heldout_tau(self) -> float | None:
        return self.info.get("heldout_tau")


def prepare(config: TrainConfig) -> tuple[Preferences, np.ndarray, np.ndarray]:
    """Data, and the seeded (train, test) item indices (``max_items`` applied first)."""
    data = load_preferences(config.data, config.prompt)
    items = data.items
    if config.max_items is not None and len(items) > config.max_items:
        if data.kind == "pairs":
            raise InputError("max_items applies to rating data (item, rating) only: leave it out for a file of pairs")
        keep = np.sort(np.random.default_rng(config.split_seed + 1).choice(len(items), config.max_items,
                                                                           replace=False))
        data.items = items.iloc[keep].reset_index(drop=True)
    train, test = split_items(len(data.items), config.test_fraction, config.split_seed)
    if data.kind == "ratings":
        ratings = data.items["rating"].to_numpy(float)[train]
        if np.all(ratings == ratings[0]):
            raise InputError(f"{data.source}: the {len(train)} training items of split seed {config.split_seed} all "
                             f"have the same rating ({ratings[0]:g}), so there is no preference to learn; give items "
                             "with more different ratings, or another --split-seed")
    return data, train, test


def training_pairs(config: TrainConfig, data: Preferences, train: np.ndarray) -> pd.DataFrame:
    """The pairs a configuration trains on (never a test item): columns ``i, j, p``."""
    if data.kind == "pairs":
        ok = np.isin(data.pairs["chosen"], train) & np.isin(data.pairs["rejected"], train)
        pairs = pd.DataFrame({"i": data.pairs["chosen"][ok].to_numpy(), "j": data.pairs["rejected"][ok].to_numpy(),
                              "p": 1.0})
        if not len(pairs):
            raise InputError("no pair has both responses among the training items: too few pairs for this split")
    else:
        pairs = sample_pairs(train, data.items["rating"].to_numpy(float), config.pairs_per_item * len(train),
                             seed=config.split_seed + 7919)
    n = max(1, int(round(len(pairs) * config.data_fraction)))
    return pairs.iloc[:n].reset_index(drop=True)


def _kendall(x, y) -> float:
    from ..stats.tau import kendall_tau_b

    return kendall_tau_b(x, y)


#: The columns of training pairs: item indices ``i``, ``j`` and ``p`` = P(i preferred to j).
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


def train_reward_model(config: TrainConfig | None = None, *, out: str | os.PathLike | None = None,
                       device: str = "cpu", progress: bool = True, force: bool = False,
                       on_epoch_end: Callable[[int, dict], None] | None = None,
                       pairs: pd.DataFrame | None = None) -> TrainRun:
    """Train (or reuse) the reward model of ``config``; return its folder and ``training.json``.

    ``out`` defaults to the cache folder keyed by the configuration. A folder
    that already holds this configuration's model is reused unless ``force``.
    ``on_epoch_end(epoch, state)`` runs after each epoch's checkpoint is written.
    ``pairs`` (columns ``i, j, p``, training items only; e.g. from
    :func:`rmlib.training.contamination.contaminate_pairs`) replaces
    :func:`training_pairs`; their digest joins the cache key.
    """
    from ..engine.models import check_device

    config = (config or TrainConfig()).validate()
    check_device(device)
    if out is not None:
        check_output_folder(out)
    t0 = time.perf_counter()
    data, train, test = prepare(config)
    given_pairs = pairs is not None
    if given_pairs:
        pairs = check_pairs(pairs, train, len(data.items))
    key = _run_key(config, data, pairs)
    folder = pathlib.Path(out).expanduser() if out is not None else trained_folder(config, data.sha256, key)
    if not force:
        reused = _trained_here(folder, key)
        if reused is not None:
            return reused
    check_output_folder(folder)
    with _folder_lock(folder, wait=out is None, progress=progress), pinned_threads(config.threads):
        if not force:  # another run may have finished it while this one waited
            reused = _trained_here(folder, key)
            if reused is not None:
                return reused
        pairs = pairs if given_pairs else training_pairs(config, data, train)
        if config.seed is not None:
            torch.manual_seed(config.seed)
        ckdir = folder / ".checkpoints"
        features = None
        try:
            model, tok, template, loaded = build_classifier(config.base, dtype=config.dtype, device=device,
                                                            seed=config.seed, chat_template=config.chat_template)
            check_fits(data, tok, template, model, loaded.model_id)
            features = _features_path(config, template, data.items, loaded)
            net = _trainable(config, data, model, tok, template, loaded, progress)
            start_epoch, curve = _resume(ckdir, key, net.params, net.optimizer)
            t_train = time.perf_counter()
            _epochs(config, data, train, pairs, net, ckdir, key, start_epoch, curve, progress, on_epoch_end)
        except KeyboardInterrupt:
            raise _interrupted(ckdir, key, config.epochs, features) from None
        train_s = time.perf_counter() - t_train
        for _, p in net.params:
            p.requires_grad_(False)
        final = net.scorer.all(np.arange(len(data.items)))
        info = _training_info(config, data, train, test, pairs, key, curve, final, net.untrained, template, loaded,
                              wall_s=time.perf_counter() - t0, encode_s=net.encode_s, train_s=train_s)
        if given_pairs:
            info["given_pairs_sha256"] = pairs_digest(pairs)
        _save_folder(folder, model, tok, template, info)
    if out is None and not given_pairs and config == TrainConfig(base=config.base).validate():
        _point_to(folder, config.base)  # the base's default training: trained:<base> names it
    return TrainRun(folder, info)


@contextlib.contextmanager
def _folder_lock(folder: pathlib.Path, wait: bool, progress: bool):
    """Hold the training lock of ``folder`` for the block. Another run holding it: ``wait`` (a cache
    folder: this run then reuses what that one trains) or an :class:`InputError` naming it (``--out``)."""
    created = not folder.exists()
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise InputError(f"cannot create the model folder {folder} ({err.strerror or err}): choose a writable "
                         "place (--out, or RMLIB_CACHE_DIR for the cache)") from None
    lock = folder / LOCK_NAME
    with file_lock(lock, blocking=False) as held:
        if held:
            try:
                yield
            finally:
                if created and [p.name for p in folder.iterdir()] == [LOCK_NAME]:  # refused before any work:
                    lock.unlink()  # leave no folder behind (this run made it and wrote only its lock)
                    folder.rmdir()
            return
    holder = lock_holder(lock)
    if not wait:
        raise InputError(f"--out {folder}: {holder} is training into this folder now; wait for it to finish "
                         "(the same command then reuses its model) or pass another --out")
    if progress:
        print(f"waiting for {holder}, which is training {folder}", file=sys.stderr)
    with file_lock(lock, blocking=True):
        yield


def _run_key(config: TrainConfig, data: Preferences, pairs: pd.DataFrame | None) -> str:
    """The run's cache key: the configuration's and the data's, and the given pairs' digest when pairs are given."""
    key = config.key(data.sha256)
    if pairs is not None:
        key = hashlib.sha256(f"{key}:{pairs_digest(pairs)}".encode()).hexdigest()[:16]
    return key


def _trained_here(folder: pathlib.Path, key: str) -> TrainRun | None:
    """The run in ``folder`` when it holds a finished model of this key, else None."""
    info_path = folder / "training.json"
    if info_path.exists() and (folder / "model.safetensors").exists():
        info = json.loads(info_path.read_text())
        if info.get("key") == key:
            return TrainRun(folder, info, reused=True)
    return None


@dataclasses.dataclass
class _Trainable:
    """The classifier made ready to train: its scorer over the encoded items, the parameters it trains,
    their optimizer, every item's score before training, and the seconds the encoding took."""

    scorer: _Scorer
    params: list
    optimizer: torch.optim.Optimizer
    untrained: np.ndarray
    encode_s: float


def _trainable(config: TrainConfig, data: Preferences, model, tok, template: str, loaded, progress: bool) -> _Trainable:
    """Encode the items (frozen features, cached), pick the parameters to train, score every item untrained."""
    t_enc = time.perf_counter()
    encoded = cached_encoding(config, model, tok, template, data.items, loaded, progress, data.source)
    encode_s = time.perf_counter() - t_enc
    pad = tok.pad_token_id if tok.pad_token_id is not None else 0
    scorer = _Scorer(model, encoded, config.unfreeze_blocks, pad)
    params = scorer.parameters()
    untrained = scorer.all(np.arange(len(data.items)))
    optimizer = torch.optim.Adam([p for _, p in params], lr=config.lr)
    return _Trainable(scorer, params, optimizer, untrained, encode_s)


def _resume(ckdir: pathlib.Path, key: str, params, optimizer) -> tuple[int, list[dict]]:
    """(epochs done, loss curve so far): from the latest checkpoint of this key, loaded into ``params`` and
    ``optimizer``, else from the start."""
    found = _latest_checkpoint(ckdir, key)
    if not found:
        return 0, []
    epoch, state = found
    _load_checkpoint(ckdir, epoch, state, params, optimizer)
    return epoch, state["curve"]


def _epochs(config: TrainConfig, data: Preferences, train: np.ndarray, pairs: pd.DataFrame, net: _Trainable,
            ckdir: pathlib.Path, key: str, start_epoch: int, curve: list[dict], progress: bool, on_epoch_end) -> None:
    """The epochs from ``start_epoch`` on: Adam steps on the Bradley-Terry loss over seeded batches of
    ``pairs``, each epoch's loss (and training tau for ratings) appended to ``curve`` and checkpointed."""
    from ..progress import bar as progress_bar

    scorer, params, optimizer = net.scorer, net.params, net.optimizer

    i_idx, j_idx = pairs["i"].to_numpy(), pairs["j"].to_numpy()
    p_all = torch.tensor(pairs["p"].to_numpy(), dtype=torch.float32)
    steps_per_epoch = -(-len(pairs) // config.batch_size)
    bar = progress_bar(config.epochs * steps_per_epoch, progress=progress, initial=start_epoch * steps_per_epoch,
                       desc="training", unit="step")
    for epoch in range(start_epoch, config.epochs):
        order = np.random.default_rng([config.seed, epoch]).permutation(len(pairs))
        total, count = 0.0, 0
        for s in range(steps_per_epoch):
            b = order[s * config.batch_size:(s + 1) * config.batch_size]
            uniq, inv = np.unique(np.concatenate([i_idx[b], j_idx[b]]), return_inverse=True)
            scores = scorer(uniq)
            inv_t = torch.as_tensor(inv, device=scores.device)
            loss = bt_loss(scores[inv_t[:len(b)]], scores[inv_t[len(b):]], p_all[b].to(scores.device))
            step = epoch * steps_per_epoch + s + 1
            if not torch.isfinite(loss):
                raise NonFiniteError(
                    f"training loss is {loss.item()} at step {step} (epoch {epoch + 1}) with lr {config.lr}: "
                    "lower the learning rate (--lr) or train in float32 (--dtype float32)")
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            total += loss.item() * len(b)
            count += len(b)
            bar.update(1)
            bar.set_postfix(epoch=epoch + 1, loss=f"{total / count:.4f}")
        train_scores = scorer.all(train)
        entry = {"epoch": epoch + 1, "loss": total / count, "step": (epoch + 1) * steps_per_epoch}
        if data.kind == "ratings":
            entry["train_tau"] = _kendall(train_scores, data.items["rating"].to_numpy(float)[train])
        curve.append(entry)
        state = {"key": key, "curve": curve}
        _save_checkpoint(ckdir, epoch + 1, params, optimizer, state)
        if on_epoch_end is not None:
            on_epoch_end(epoch + 1, state)
    bar.close()


def _interrupted(ckdir: pathlib.Path, key: str, epochs: int, features: pathlib.Path | None) -> KeyboardInterrupt:
    """What Ctrl-C leaves: the epochs saved as checkpoints (the run resumes from them), else the cached
    features (the run starts without encoding), else nothing (a plain KeyboardInterrupt)."""
    found = _latest_checkpoint(ckdir, key)
    if found and found[0] >= epochs:
        return Interrupted(f"interrupted: all {epochs} epochs finished and are saved as checkpoints in {ckdir}; "
                           "run the same command again to write the model folder from them")
    if found:
        return Interrupted(f"interrupted: {found[0]} of {epochs} epochs finished and are saved as checkpoints in "
                           f"{ckdir}; run the same command again to resume from epoch {found[0] + 1}")
    if features is not None and features.exists():
        return Interrupted(f"interrupted before the first epoch finished: no checkpoint yet, but the items' frozen "
                           f"features are cached ({features}), so the same command run again starts training "
                           "without encoding them")
    return KeyboardInterrupt()


def _training_info(config, data, train, test, pairs, key, curve, final, untrained, template, loaded, **timing):
    import transformers

    items = data.items
    info = {
        "key": key, "rmlib_version": __version__, "train_revision": TRAIN_REVISION,
        "base": config.base, "base_model_id": loaded.model_id, "base_revision": loaded.revision,
        "data": {"source": data.source, "sha256": data.sha256, "kind": data.kind, "n_items": len(items)},
        "prompt": config.prompt, "chat_template": template,
        "split": {"seed": config.split_seed, "test_fraction": config.test_fraction,
                  "n_train_items": len(train), "n_test_items": len(test),
                  "test_items": items["text"].iloc[test].tolist()},
        "n_pairs": len(pairs), "pairs_per_item": config.pairs_per_item, "data_fraction": config.data_fraction,
        "epochs": config.epochs, "lr": config.lr, "batch_size": config.batch_size, "optimizer": "Adam",
        "loss": "Bradley-Terry (binary cross-entropy on score differences; Elo soft labels for ratings)",
        "unfreeze_blocks": config.unfreeze_blocks,
        "trained": "score head" + (f" + top {config.unfreeze_blocks} blocks + final norm"
                                   if config.unfreeze_blocks else " only"),
        "seed": config.seed, "dtype": config.dtype, "max_items": config.max_items,
        "loss_curve": curve, "config": dataclasses.asdict(config),
        "transformers_version": transformers.__version__, "torch_version": torch.__version__,
        "python_version": platform.python_version(),
        **{k: round(v, 3) for k, v in timing.items()},
        "items_per_s_encode": round(len(items) / max(timing["encode_s"], 1e-9), 1),
    }
    if data.kind == "ratings":
        r = items["rating"].to_numpy(float)
        info["heldout_tau"] = _kendall(final[test], r[test])
        info["train_tau"] = _kendall(final[train], r[train])
        info["heldout_tau_untrained_head"] = _kendall(untrained[test], r[test])
        info["train_tau_untrained_head"] = _kendall(untrained[train], r[train])
        # the test items' scores (same order as split.test_items), by this model and by its untrained start
        info["test_scores"] = [float(x) for x in final[test]]
        info["test_scores_untrained_head"] = [float(x) for x in untrained[test]]
    else:
        ok = np.isin(data.pairs["chosen"], test) & np.isin(data.pairs["rejected"], test)
        if ok.any():
            c, rj = data.pairs["chosen"][ok].to_numpy(), data.pairs["rejected"][ok].to_numpy()
            info["heldout_pair_accuracy"] = float((final[c] > final[rj]).mean())
        info["n_heldout_pairs"] = int(ok.sum())  # 0: no pair has both responses among the test items
    return info


def _save_folder(folder: pathlib.Path, model, tok, template: str, info: dict) -> None:
    """Write the Hugging Face folder atomically (the checkpoints are dropped once it is complete)."""
    import copy

    folder.mkdir(parents=True, exist_ok=True)
    tmp = pathlib.Path(tempfile.mkdtemp(prefix=".save-", dir=folder))
    try:
        model.save_pretrained(tmp, safe_serialization=True)
        tok = copy.deepcopy(tok)
        tok.chat_template = template
        tok.pad_token = tok.convert_ids_to_tokens(model.config.pad_token_id)  # the classifier's pad (_pad_id)
        tok.save_pretrained(tmp)
        (tmp / "training.json").write_text(json.dumps(info, indent=1, default=float))
        for f in tmp.iterdir():
            os.replace(f, folder / f.name)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    shutil.rmtree(folder / ".checkpoints", ignore_errors=True)


# --------------------------------------------------------------------------
# What in the trained-model cache the current code still reads
# --------------------------------------------------------------------------


#: rmlib's names in ``<cache>/trained``: a model folder ``<base>-<key>``, an unfinished pointer write
#: ``.<base>.default.tmp-*``, cached features ``features/<key>.safetensors`` (+ ``.json``, + ``.tmp-*`` writes).
_MODEL_FOLDER = re.compile(r".+-[0-9a-f]{16}")
_POINTER_TMP = re.compile(r"\..+" + re.escape(TRAINED_POINTER_SUFFIX) + r"\.tmp-\w+")
_FEATURES = re.compile(r"(\.)?([0-9a-f]{20})\.(safetensors|json)(\.tmp-\w+)?")


def stale_reason(path: str | os.PathLike) -> str | None:
    """None when the current rmlib would reuse ``path``, an entry of ``<cache>/trained``, else why not;
    a :class:`rmlib.paths.Foreign` reason for a name rmlib never writes there (a user's file: kept).

    A pointer file (``<base>.default``) is used while the folder it names is.

    A trained model is found again only under the key its configuration gets today
    (:meth:`TrainConfig.key`: every setting, the data's SHA-256 and :data:`TRAIN_REVISION`), so a
    folder whose recorded configuration keys differently now (an older revision, a setting added or
    removed, EloEverything pinned to another file) can never be reused. A folder without
    ``training.json`` is an unfinished run (resumed by the same configuration) and counts as used.
    Cached features (``features/<key>.safetensors``) are used while the record written beside them
    names the current revision; files without a record come from an older rmlib.
    """
    path = pathlib.Path(path)
    if path.parent.name == "features":
        return _stale_features_reason(path)
    if _POINTER_TMP.fullmatch(path.name):
        return "an unfinished write (the process writing it stopped)"
    if path.is_file() and path.name.endswith(TRAINED_POINTER_SUFFIX):  # names the folder of trained:<base>
        with open(path, "rb") as f:
            name = f.read(200).decode("utf-8", "replace").strip()
        if _MODEL_FOLDER.fullmatch(name) is None or "/" in name:
            return Foreign("a file ending in .default that names no trained-model folder: not written by rmlib")
        target = path.parent / name
        if target.is_dir() and stale_reason(target) is None:
            return None
        return f"names {target.name}, which is gone or can no longer be reused"
    if not path.is_dir() or not _MODEL_FOLDER.fullmatch(path.name):
        return Foreign("not a trained-model folder (<base>-<key>) nor a pointer file: not written by rmlib")
    info_path = path / "training.json"
    if not info_path.exists():
        return None
    try:
        info = json.loads(info_path.read_text())
        config = TrainConfig(**info["config"])
        data_sha = info["data"]["sha256"]
    except (OSError, ValueError, KeyError, TypeError) as err:
        return f"its training.json does not describe a configuration of this rmlib ({type(err).__name__}: {err})"
    if info.get("train_revision") != TRAIN_REVISION:
        return f"trained by revision {info.get('train_revision')} of the training code (now {TRAIN_REVISION})"
    if config.data == "eloeverything":
        from ..tables.data_files import REGISTRY

        if data_sha != REGISTRY["elo_greatest_ever"].sha256:
            return "trained on another EloEverything file than the one pinned now"
    key = config.key(data_sha)
    if info.get("key") != key or not path.name.endswith(f"-{key}"):
        return "its configuration gets another cache key now (a training setting was added or removed)"
    return None


def _stale_features_reason(path: pathlib.Path) -> str | None:
    name = _FEATURES.fullmatch(path.name)
    if name is None or path.is_dir():
        return Foreign("not a cached-features file (<key>.safetensors and its .json record): not written by rmlib")
    if name.group(4):
        return "an unfinished write (the process writing it stopped)"
    if path.suffix == ".json":
        return _stale_features_reason(path.with_suffix(".safetensors")) if path.with_suffix(
            ".safetensors").exists() else "the record of features that are gone"
    record = path.with_suffix(".json")
    try:
        facts = json.loads(record.read_text())
    except (OSError, ValueError):
        return "features cached by an older rmlib (no record of what made them); recomputed when needed"
    if facts.get("train_revision") != TRAIN_REVISION:
        return f"features of revision {facts.get('train_revision')} of the training code (now {TRAIN_REVISION})"
    if hashlib.sha256(json.dumps(facts, sort_keys=True).encode()).hexdigest()[:20] != path.stem:
        return "its record does not match its name"
    return None


# --------------------------------------------------------------------------
# `trained:<base>` model specs
# --------------------------------------------------------------------------


def ensure_trained(spec: str, progress: bool = True) -> pathlib.Path:
    """The folder of ``trained:<base>``: trained now with the default configuration when it is not in the cache
    (else reused), and named by its pointer file so that the engine loads it
    (:func:`rmlib.engine.models.trained_model_folder`)."""
    from ..engine.models import check_model_spec

    if check_model_spec(spec) != "trained":
        raise InputError(f"{spec!r} is not a trained: spec; use trained:<base>, e.g. 'trained:default'")
    base = spec.split(":", 1)[1]
    folder = train_reward_model(TrainConfig(base=base), progress=progress).folder
    _point_to(folder, base)
    return folder


def _point_to(folder: pathlib.Path, base: str) -> None:
    """Name ``folder`` as ``trained:<base>`` (its pointer file, replaced atomically)."""
    from ..engine.models import trained_pointer

    pointer = trained_pointer(base)
    if pointer.is_file() and pointer.read_text().strip() == folder.name:
        return
    atomic_write(pointer, folder.name + "\n")


__all__ = [
    "ALT_PROMPT", "DEFAULT_PROMPT", "MAX_DATA_FILE", "PAIR_COLUMNS", "Preferences", "TrainConfig", "TrainRun",
    "bt_loss", "build_classifier", "check_fits", "check_output_folder", "check_pairs", "elo_probability",
    "encode_items", "ensure_trained", "item_indices", "load_preferences", "pairs_digest", "prepare", "sample_pairs",
    "split_items", "stale_reason", "train_reward_model", "trained_folder", "training_pairs",
]
