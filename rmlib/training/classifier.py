"""The classifier a reward model is trained as: a sequence classifier built from a causal LM's backbone
with a seeded head, its frozen part run once per item (the features cached on disk for head-only
training), the checks that every prompt and item fits the model, and the scores of items while it trains."""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import pathlib

import numpy as np
import pandas as pd
import torch

from ..errors import InputError, NonFiniteError
from ..files import atomic_path, atomic_write
from ..paths import cache_dir
from .configuration import TRAIN_REVISION
from .preferences import Preferences, file_rows

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

    from transformers.initialization import no_init_weights

    with no_init_weights():  # every parameter is assigned below: the backbone's copied, the head's seeded
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


def features_path(config, template, items, loaded) -> pathlib.Path | None:
    """Where the head-only features of these items are cached (None: top blocks train, nothing is cached)."""
    if config.unfreeze_blocks:
        return None
    facts = _feature_facts(config, template, items, loaded)
    key = hashlib.sha256(json.dumps(facts, sort_keys=True).encode()).hexdigest()[:20]
    return cache_dir() / "trained" / "features" / f"{key}.safetensors"


def cached_encoding(config, model, tok, template, items, loaded, progress, source: str = "items") -> Encoded:
    """Head-only features are the frozen model's output: cached on disk, so runs that differ only in
    training settings (epochs, lr, data fraction, seed) reuse them."""
    path = features_path(config, template, items, loaded)
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
        raise InputError(f"{file_rows(source, rows)}: the item is {sizes[over[0]]:,} bytes, more than the context of "
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
        raise InputError(f"{file_rows(source, rows)}: the item ({lengths[over[0]] - around:,} tokens"
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
        where = file_rows(data.source, group["row"]) + ": the prompt" if data.prompt_column else f"prompt {shown!r}"
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
                    raise InputError(f"{file_rows(data.source, [row])}: the item {text[:60]!r} contains the special-token "
                                     f"text {found[:5]} of {model_id}'s tokenizer, which would end the response early: "
                                     "remove it")


class ItemScorer:
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
