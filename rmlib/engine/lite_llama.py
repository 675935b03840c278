"""A plain-torch Llama and Gemma-2 forward, for a fast start of ``rmlib score``.

Importing transformers' model stack (``modeling_llama`` or ``modeling_gemma2``
and what it pulls in: ``modeling_utils``, its integrations,
torch.distributed.tensor, torch._dynamo) is a large part of a command's start
on a CPU, larger than loading and running a 135M-parameter model (``make
bench``'s ``startup_parts`` section times a start's parts).
Llama-architecture checkpoints (SmolLM2, the reward models trained here on it,
Llama-3-style RMs without RoPE scaling) and Gemma-2 checkpoints (the Gemma-2
reward models of the paper's ten) are simple enough to run directly: this
module reads ``config.json`` and the safetensors weights (one file or an
index of shards) itself and implements the same forward (RMSNorm, rotary
embeddings, grouped-query attention, SiLU MLP, a sequence-classification
``score`` head or a language-model head). Gemma-2 adds, as transformers has
them: embeddings scaled by sqrt(hidden size), RMSNorm weights applied as
``1 + w`` in float32, a norm after attention and around the MLP, a tanh-GELU
MLP, queries scaled by ``query_pre_attn_scalar``, soft-capped attention logits,
a sliding window on alternate layers and soft-capped language-model logits.

It serves the prefix-cached kernel only (``rmlib.engine.kernel.PrefixKernel``:
the prefix run, its keys and values kept in :class:`PrefixCache` (no transformers import: a warm
token-mode ``rmlib score`` imports none), classifier candidates attending the prefix through
:class:`SharedPrefix`, log-prob candidates through transformers' cache,
``inputs_embeds`` for gradients);
the published method (``mode="paper"``, the published inputs and padding) always runs
through transformers. ``tests/test_lite_llama.py`` checks that its scores equal
transformers' (float32, ≤ 1e-5 of the largest score) on every kernel path. :func:`lite_config`
returns None for any checkpoint it does not reproduce exactly (another
architecture, RoPE scaling, another activation), and the caller then loads the
model with transformers.
"""

from __future__ import annotations

import json
import pathlib
import types

import torch
import torch.nn.functional as F
from torch import nn
from ..errors import InputError
from .shared_attention import attend

#: architectures this module implements: (model family, scorer kind) of each
ARCHITECTURES = {"LlamaForSequenceClassification": ("llama", "classifier"), "LlamaForCausalLM": ("llama", "logprob"),
                 "Gemma2ForSequenceClassification": ("gemma2", "classifier"), "Gemma2ForCausalLM": ("gemma2", "logprob")}
#: the file naming a sharded checkpoint's weight files (as save_pretrained writes it)
SHARD_INDEX = "model.safetensors.index.json"


class LiteConfig(types.SimpleNamespace):
    """The fields of ``config.json`` the forward needs, with what transformers' cache and
    rmlib's kernel read from a config (``get_text_config``, per-layer attention types). Every layer is
    "full_attention" to a cache (it keeps the whole prefix); a Gemma-2 layer's sliding window is
    applied by the forward itself (``windows``)."""

    def get_text_config(self, decoder: bool = False):
        return self

    @property
    def per_layer_config(self):
        return [self] * self.num_hidden_layers

    @property
    def layer_types(self):
        return ["full_attention"] * self.num_hidden_layers


def weight_files(folder) -> list[pathlib.Path] | None:
    """The folder's safetensors weight files: ``model.safetensors``, or the shards its index names; None when
    neither is there (pickled weights: transformers reports them)."""
    folder = pathlib.Path(folder)
    if (folder / "model.safetensors").is_file():
        return [folder / "model.safetensors"]
    try:
        names = sorted(set(json.loads((folder / SHARD_INDEX).read_text())["weight_map"].values()))
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None
    files = [folder / n for n in names]
    if not names or any(pathlib.Path(n).name != n or not n.endswith(".safetensors") or not f.is_file()
                        for n, f in zip(names, files)):
        return None
    return files


def lite_config(folder) -> LiteConfig | None:
    """The folder's config when this module reproduces the model exactly, else None."""
    try:
        raw = json.loads((pathlib.Path(folder) / "config.json").read_text())
    except (OSError, ValueError):
        return None
    archs = raw.get("architectures") or []
    if len(archs) != 1 or archs[0] not in ARCHITECTURES:
        return None
    family, kind = ARCHITECTURES[archs[0]]
    if raw.get("model_type") != family or raw.get("quantization_config"):
        return None
    rope = raw.get("rope_parameters") or {}
    theta = rope.get("rope_theta", raw.get("rope_theta", 10000.0))
    if rope.get("rope_type", "default") != "default" or raw.get("rope_scaling") not in (None, {}):
        return None
    if raw.get("pretraining_tp", 1) != 1 or weight_files(folder) is None:
        return None
    heads, layers = raw["num_attention_heads"], raw["num_hidden_layers"]
    head_dim = raw.get("head_dim") or raw["hidden_size"] // heads
    if family == "llama":
        if raw.get("hidden_act", "silu") != "silu" or raw.get("sliding_window"):
            return None
        family_fields = dict(activation="silu", attention_scale=head_dim ** -0.5, attention_softcap=None,
                     final_softcap=None, windows=[None] * layers, tie_word_embeddings=bool(raw.get("tie_word_embeddings", False)))
    else:
        act = raw.get("hidden_activation") or raw.get("hidden_act") or "gelu_pytorch_tanh"
        if act != "gelu_pytorch_tanh" or raw.get("use_bidirectional_attention"):
            return None
        types_ = raw.get("layer_types") or ["sliding_attention" if (i + 1) % 2 else "full_attention"
                                            for i in range(layers)]
        window = raw.get("sliding_window", 4096)
        if len(types_) != layers or set(types_) - {"sliding_attention", "full_attention"}:
            return None
        family_fields = dict(activation="gelu_tanh", attention_scale=float(raw.get("query_pre_attn_scalar", 256)) ** -0.5,
                     attention_softcap=raw.get("attn_logit_softcapping", 50.0),
                     final_softcap=raw.get("final_logit_softcapping", 30.0),
                     windows=[window if t == "sliding_attention" else None for t in types_],
                     tie_word_embeddings=bool(raw.get("tie_word_embeddings", True)))
    return LiteConfig(
        architecture=archs[0], family=family, kind=kind,
        vocab_size=raw["vocab_size"], hidden_size=raw["hidden_size"],
        intermediate_size=raw["intermediate_size"], num_hidden_layers=layers,
        num_attention_heads=heads, num_key_value_heads=raw.get("num_key_value_heads") or heads,
        head_dim=head_dim, rms_norm_eps=raw.get("rms_norm_eps", 1e-6), rope_theta=float(theta),
        attention_bias=bool(raw.get("attention_bias", False)), mlp_bias=bool(raw.get("mlp_bias", False)),
        max_position_embeddings=raw.get("max_position_embeddings"), sliding_window=None,
        num_labels=len(raw.get("id2label") or {}) or raw.get("num_labels", 1),
        pad_token_id=raw.get("pad_token_id"), **family_fields,
    )


class RMSNorm(nn.Module):
    """Llama's RMSNorm (``w * x`` in the input's dtype), or with ``offset`` Gemma's (``(1 + w) * x`` in float32)."""

    def __init__(self, size: int, eps: float, device=None, offset: bool = False):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(size, device=device))
        self.eps, self.offset = eps, offset

    def forward(self, x):
        # torch's rms_norm: x * rsqrt(mean(x^2) + eps) (* weight) in float32, one fused kernel where torch has one
        if self.offset:
            return F.rms_norm(x.float(), (x.shape[-1],), 1.0 + self.weight.float(), self.eps).to(x.dtype)
        return self.weight * F.rms_norm(x.float(), (x.shape[-1],), None, self.eps).to(x.dtype)


def norm(cfg: LiteConfig, device=None) -> RMSNorm:
    return RMSNorm(cfg.hidden_size, cfg.rms_norm_eps, device, offset=cfg.family == "gemma2")


def _inv_freq(cfg: LiteConfig) -> torch.Tensor:
    """Rotary frequencies, computed as transformers' default RoPE does (float32)."""
    exponents = torch.arange(0, cfg.head_dim, 2, dtype=torch.int64).to(torch.float32) / cfg.head_dim
    return 1.0 / (cfg.rope_theta ** exponents)


def _rotate_half(x):
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


class Attention(nn.Module):
    def __init__(self, cfg: LiteConfig, index: int, device=None):
        super().__init__()
        d, h, kv = cfg.head_dim, cfg.num_attention_heads, cfg.num_key_value_heads
        self.index, self.heads, self.kv_heads, self.head_dim = index, h, kv, d
        self.scale, self.softcap, self.window = cfg.attention_scale, cfg.attention_softcap, cfg.windows[index]
        bias = cfg.attention_bias
        self.q_proj = nn.Linear(cfg.hidden_size, h * d, bias=bias, device=device)
        self.k_proj = nn.Linear(cfg.hidden_size, kv * d, bias=bias, device=device)
        self.v_proj = nn.Linear(cfg.hidden_size, kv * d, bias=bias, device=device)
        self.o_proj = nn.Linear(h * d, cfg.hidden_size, bias=bias, device=device)

    def forward(self, x, cos, sin, mask, cache, is_causal):
        batch, length, _ = x.shape
        q = self.q_proj(x).view(batch, length, self.heads, self.head_dim).transpose(1, 2)
        k = self.k_proj(x).view(batch, length, self.kv_heads, self.head_dim).transpose(1, 2)
        v = self.v_proj(x).view(batch, length, self.kv_heads, self.head_dim).transpose(1, 2)
        q = q * cos + _rotate_half(q) * sin
        k = k * cos + _rotate_half(k) * sin
        if isinstance(cache, SharedPrefix):
            out = cache.attend(self.index, q, k, v, self.scale, self.softcap, self.window)
            return self.o_proj(out.transpose(1, 2).reshape(batch, length, -1))
        if cache is not None:
            k, v = cache.update(k, v, self.index)
        if self.kv_heads != self.heads:
            rep = self.heads // self.kv_heads
            k = k[:, :, None].expand(-1, -1, rep, -1, -1).reshape(k.shape[0], self.heads, -1, self.head_dim)
            v = v[:, :, None].expand(-1, -1, rep, -1, -1).reshape(v.shape[0], self.heads, -1, self.head_dim)
        if self.softcap is None and self.window is None:
            out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=is_causal, scale=self.scale)
        else:
            out = capped_attention(q, k, v, self.scale, self.softcap, windowed(mask, is_causal, q, k, self.window))
        return self.o_proj(out.transpose(1, 2).reshape(batch, length, -1))


def windowed(mask, is_causal: bool, q, k, window: int | None):
    """The boolean or additive ``mask`` (or the causal one) as a boolean mask that also hides keys ``window``
    or more positions behind each query (the query rows are the last ``q.shape[-2]`` key positions)."""
    length, keys = q.shape[-2], k.shape[-2]
    rows = torch.arange(keys - length, keys, device=q.device)[:, None]
    cols = torch.arange(keys, device=q.device)[None, :]
    if mask is None:
        allowed = cols <= rows if is_causal else torch.ones(length, keys, dtype=torch.bool, device=q.device)
    else:
        allowed = mask if mask.dtype == torch.bool else mask > torch.finfo(mask.dtype).min / 2
    if window is not None:
        allowed = allowed & (cols > rows - window)
    return allowed


def capped_attention(q, k, v, scale: float, softcap: float | None, allowed):
    """Gemma-2's attention as transformers' eager path computes it: logits in the input's dtype, scaled,
    soft-capped (``softcap * tanh(x / softcap)``), masked; softmax in float32."""
    logits = torch.matmul(q, k.transpose(2, 3)) * scale
    if softcap is not None:
        logits = torch.tanh(logits / softcap) * softcap
    logits = logits.masked_fill(~allowed, torch.finfo(logits.dtype).min)
    weights = torch.softmax(logits, dim=-1, dtype=torch.float32).to(q.dtype)
    return torch.matmul(weights, v)


class PrefixCache:
    """The keys and values a forward computes, layer by layer (``layers[i].keys``, ``.values``): what
    transformers' config-less ``DynamicCache`` keeps for the lite forward, without importing transformers (a
    warm ``rmlib score`` never does). Later forwards append to it."""

    def __init__(self):
        self.layers = []

    def get_seq_length(self, layer: int = 0) -> int:
        return self.layers[layer].keys.shape[-2] if layer < len(self.layers) else 0

    def update(self, keys, values, index: int):
        if index == len(self.layers):
            self.layers.append(types.SimpleNamespace(keys=keys, values=values))
        else:
            layer = self.layers[index]
            layer.keys, layer.values = torch.cat([layer.keys, keys], dim=-2), torch.cat([layer.values, values], dim=-2)
        return self.layers[index].keys, self.layers[index].values


class SharedPrefix:
    """One prompt prefix's keys and values (batch 1), attended by a batch of candidates without a
    per-candidate copy: each candidate sees the whole prefix and its own earlier positions.

    What the packed kernel path does with a block-diagonal mask, but with no attention computed
    between candidates (the packed mask's cost grows with the square of the batch): the logits
    against the prefix are one matrix product per key-value head for the whole batch.
    """

    def __init__(self, layers):
        self.layers = layers  # [(keys, values)], each (1, kv_heads, prefix, head_dim)

    def get_seq_length(self, layer: int = 0) -> int:
        return self.layers[layer][0].shape[-2]

    def attend(self, index, q, k, v, scale, softcap=None, window=None):
        """q (B, H, L, D) of the candidates, k and v (B, KV, L, D): the attention output (B, H, L, D)."""
        kp, vp = self.layers[index]
        return attend(q, k, v, kp, vp, scale, softcap, window)


class MLP(nn.Module):
    def __init__(self, cfg: LiteConfig, device=None):
        super().__init__()
        h, i, bias = cfg.hidden_size, cfg.intermediate_size, cfg.mlp_bias
        self.gate_proj = nn.Linear(h, i, bias=bias, device=device)
        self.up_proj = nn.Linear(h, i, bias=bias, device=device)
        self.down_proj = nn.Linear(i, h, bias=bias, device=device)
        self.gelu = cfg.activation == "gelu_tanh"

    def forward(self, x):
        gate = self.gate_proj(x)
        gate = F.gelu(gate, approximate="tanh") if self.gelu else F.silu(gate)
        return self.down_proj(gate * self.up_proj(x))


class Block(nn.Module):
    def __init__(self, cfg: LiteConfig, index: int, device=None):
        super().__init__()
        self.self_attn = Attention(cfg, index, device)
        self.mlp = MLP(cfg, device)
        self.input_layernorm = norm(cfg, device)
        self.post_attention_layernorm = norm(cfg, device)
        self.sandwich = cfg.family == "gemma2"  # Gemma-2: the attention's output normed, the MLP's in and out
        if self.sandwich:
            self.pre_feedforward_layernorm = norm(cfg, device)
            self.post_feedforward_layernorm = norm(cfg, device)

    def forward(self, x, cos, sin, mask, cache, is_causal):
        if self.sandwich:
            x = x + self.post_attention_layernorm(self.self_attn(self.input_layernorm(x), cos, sin, mask, cache,
                                                                 is_causal))
            return x + self.post_feedforward_layernorm(self.mlp(self.pre_feedforward_layernorm(x)))
        x = x + self.self_attn(self.input_layernorm(x), cos, sin, mask, cache, is_causal)
        return x + self.mlp(self.post_attention_layernorm(x))


class ScaledEmbedding(nn.Embedding):
    """Gemma's input embedding: rows times ``embed_scale`` (sqrt of the hidden size, rounded to the weight's
    dtype as transformers rounds it). ``inputs_embeds`` are passed already scaled, as to transformers."""

    def forward(self, input_ids):
        return super().forward(input_ids) * self.embed_scale.to(self.weight.dtype)


class LlamaModel(nn.Module):
    """The transformer (what transformers calls the base model, ``model.model``)."""

    def __init__(self, cfg: LiteConfig, device=None):
        super().__init__()
        self.config = cfg
        # Given a weight, Embedding skips its random init (normal_ on the meta device would import torch._dynamo, a slow import).
        embedding = ScaledEmbedding if cfg.family == "gemma2" else nn.Embedding
        self.embed_tokens = embedding(cfg.vocab_size, cfg.hidden_size,
                                      _weight=torch.empty(cfg.vocab_size, cfg.hidden_size, device=device))
        if cfg.family == "gemma2":
            self.embed_tokens.register_buffer("embed_scale", torch.tensor(cfg.hidden_size ** 0.5), persistent=False)
        self.layers = nn.ModuleList(Block(cfg, i, device) for i in range(cfg.num_hidden_layers))
        self.norm = norm(cfg, device)
        self.register_buffer("inv_freq", _inv_freq(cfg), persistent=False)

    def forward(self, input_ids=None, inputs_embeds=None, past_key_values=None, position_ids=None,
                attention_mask=None, use_cache=True):
        if (input_ids is None) == (inputs_embeds is None):
            raise InputError("pass exactly one of input_ids and inputs_embeds")
        x = self.embed_tokens(input_ids) if inputs_embeds is None else inputs_embeds
        length = x.shape[1]
        past = past_key_values.get_seq_length() if past_key_values is not None else 0
        if position_ids is None:
            position_ids = torch.arange(past, past + length, device=x.device)[None, :]
        freqs = position_ids[:, :, None].to(torch.float32) * self.inv_freq.float()[None, None, :]
        emb = torch.cat((freqs, freqs), dim=-1)
        cos, sin = emb.cos().to(x.dtype)[:, None], emb.sin().to(x.dtype)[:, None]
        is_causal = False
        if isinstance(past_key_values, SharedPrefix):
            pass  # SharedPrefix.attend masks the candidates itself
        elif attention_mask is None:
            if past == 0:
                is_causal = length > 1
            elif length > 1:  # each new position sees the whole cache and the new positions up to itself
                rows = torch.arange(length, device=x.device)[:, None]
                attention_mask = torch.arange(past + length, device=x.device)[None, :] <= past + rows
        elif attention_mask.dim() != 4:
            raise InputError("the lite forward takes a 4-D additive attention mask or none (no padding masks); "
                             "padded batches run through transformers")
        for layer in self.layers:
            x = layer(x, cos, sin, attention_mask, past_key_values, is_causal)
        return types.SimpleNamespace(last_hidden_state=self.norm(x), past_key_values=past_key_values)


class _Lite(nn.Module):
    base_model_prefix = "model"

    def __init__(self, cfg: LiteConfig, device=None):
        super().__init__()
        self.config = cfg
        self.model = LlamaModel(cfg, device)

    @property
    def dtype(self) -> torch.dtype:
        return self.model.embed_tokens.weight.dtype

    def get_input_embeddings(self):
        return self.model.embed_tokens


class LiteLlamaForSequenceClassification(_Lite):
    """Base model plus the ``score`` head; the kernel applies the head to the token it reads."""

    def __init__(self, cfg: LiteConfig, device=None):
        super().__init__(cfg, device)
        self.score = nn.Linear(cfg.hidden_size, cfg.num_labels, bias=False, device=device)


class LiteLlamaForCausalLM(_Lite):
    def __init__(self, cfg: LiteConfig, device=None):
        super().__init__(cfg, device)
        self.lm_head = nn.Linear(cfg.hidden_size, cfg.vocab_size, bias=False, device=device)
        if cfg.tie_word_embeddings:
            self.lm_head.weight = self.model.embed_tokens.weight

    def forward(self, input_ids=None, inputs_embeds=None, past_key_values=None, position_ids=None,
                attention_mask=None, use_cache=True):
        out = self.model(input_ids=input_ids, inputs_embeds=inputs_embeds, past_key_values=past_key_values,
                         position_ids=position_ids, attention_mask=attention_mask)
        logits = self.lm_head(out.last_hidden_state)
        cap = self.config.final_softcap
        if cap is not None:
            logits = torch.tanh(logits / cap) * cap
        return types.SimpleNamespace(logits=logits, past_key_values=past_key_values)


def load_lite(folder, cfg: LiteConfig, dtype: torch.dtype, device="cpu") -> nn.Module:
    """The folder's weights (``model.safetensors`` or its shards) in the lite model, read straight onto
    ``device``; every parameter must be there."""
    from safetensors.torch import load_file

    cls = LiteLlamaForSequenceClassification if cfg.kind == "classifier" else LiteLlamaForCausalLM
    model = cls(cfg, device="meta")  # shapes only: the checkpoint's tensors are assigned below
    state = {}
    for path in weight_files(folder) or [pathlib.Path(folder) / "model.safetensors"]:
        state.update(load_file(str(path), device=str(device)))
    tied = cfg.kind == "logprob" and cfg.tie_word_embeddings
    if tied:  # saved once, under the embedding's name
        state["lm_head.weight"] = state["model.embed_tokens.weight"]
    model.load_state_dict(state, strict=True, assign=True)
    if tied:
        model.lm_head.weight = model.model.embed_tokens.weight
    return model.to(dtype).eval()
