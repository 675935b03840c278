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

import dataclasses
import json
import os
import pathlib
import platform
import time
from typing import Callable

import numpy as np
import pandas as pd
import torch

from .. import __version__
from ..engine.threads import pinned_threads
from ..errors import InputError, Interrupted, NonFiniteError
from ..stats.tau import kendall_tau_b
from .bradley_terry import bt_loss, check_pairs, pairs_digest, sample_pairs
from .classifier import ItemScorer, build_classifier, cached_encoding, check_fits, features_path
from .configuration import TRAIN_REVISION, TrainConfig, trained_folder
from .folders import (check_output_folder, folder_lock, latest_checkpoint, load_checkpoint, point_to,
                      save_checkpoint, save_folder)
from .preferences import Preferences, load_preferences, split_items

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
    key = config.key(data.sha256, None if pairs is None else pairs_digest(pairs))
    folder = pathlib.Path(out).expanduser() if out is not None else trained_folder(config, data.sha256, key)
    if not force:
        reused = _trained_here(folder, key)
        if reused is not None:
            return reused
    check_output_folder(folder)
    with folder_lock(folder, wait=out is None, progress=progress), pinned_threads(config.threads):
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
            features = features_path(config, template, data.items, loaded)
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
        save_folder(folder, model, tok, template, info)
    if out is None and not given_pairs and config == TrainConfig(base=config.base).validate():
        point_to(folder, config.base)  # the base's default training: trained:<base> names it
    return TrainRun(folder, info)


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

    scorer: ItemScorer
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
    scorer = ItemScorer(model, encoded, config.unfreeze_blocks, pad)
    params = scorer.parameters()
    untrained = scorer.all(np.arange(len(data.items)))
    optimizer = torch.optim.Adam([p for _, p in params], lr=config.lr)
    return _Trainable(scorer, params, optimizer, untrained, encode_s)


def _resume(ckdir: pathlib.Path, key: str, params, optimizer) -> tuple[int, list[dict]]:
    """(epochs done, loss curve so far): from the latest checkpoint of this key, loaded into ``params`` and
    ``optimizer``, else from the start."""
    found = latest_checkpoint(ckdir, key)
    if not found:
        return 0, []
    epoch, state = found
    load_checkpoint(ckdir, epoch, state, params, optimizer)
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
            entry["train_tau"] = kendall_tau_b(train_scores, data.items["rating"].to_numpy(float)[train])
        curve.append(entry)
        state = {"key": key, "curve": curve}
        save_checkpoint(ckdir, epoch + 1, params, optimizer, state)
        if on_epoch_end is not None:
            on_epoch_end(epoch + 1, state)
    bar.close()


def _interrupted(ckdir: pathlib.Path, key: str, epochs: int, features: pathlib.Path | None) -> KeyboardInterrupt:
    """What Ctrl-C leaves: the epochs saved as checkpoints (the run resumes from them), else the cached
    features (the run starts without encoding), else nothing (a plain KeyboardInterrupt)."""
    found = latest_checkpoint(ckdir, key)
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
        info["heldout_tau"] = kendall_tau_b(final[test], r[test])
        info["train_tau"] = kendall_tau_b(final[train], r[train])
        info["heldout_tau_untrained_head"] = kendall_tau_b(untrained[test], r[test])
        info["train_tau_untrained_head"] = kendall_tau_b(untrained[train], r[train])
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
