"""A plain-torch Llama forward, for a fast start of ``rmlib score``.

Importing transformers' model stack (``modeling_llama`` and what it pulls in:
``modeling_utils``, its integrations, torch.distributed.tensor, torch._dynamo)
costs ~2.5 s of a command's start on a 2-core CPU, more than loading and
running a 135M-parameter model. Llama-architecture checkpoints (SmolLM2, the
reward models trained here on it, Llama-3-style RMs without RoPE scaling) are
simple enough to run directly: this module reads ``config.json`` and the
safetensors weights itself and implements the same forward (RMSNorm, rotary
embeddings, grouped-query attention, SiLU MLP, a sequence-classification
``score`` head or a language-model head).

It serves the prefix-cached kernel only (``rmlib.engine.kernel.PrefixKernel``:
the prefix run, classifier candidates attending the prefix through
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

#: architectures this module implements, and the scorer kind of each
ARCHITECTURES = {"LlamaForSequenceClassification": "classifier", "LlamaForCausalLM": "logprob"}


class LiteConfig(types.SimpleNamespace):
    """The fields of ``config.json`` the forward needs, with what transformers' cache and
    rmlib's kernel read from a config (``get_text_config``, per-layer attention types)."""

    def get_text_config(self, decoder: bool = False):
        return self

    @property
    def per_layer_config(self):
        return [self] * self.num_hidden_layers

    @property
    def layer_types(self):
        return ["full_attention"] * self.num_hidden_layers


def lite_config(folder) -> LiteConfig | None:
    """The folder's config when this module reproduces the model exactly, else None."""
    try:
        raw = json.loads((pathlib.Path(folder) / "config.json").read_text())
    except (OSError, ValueError):
        return None
    archs = raw.get("architectures") or []
    if len(archs) != 1 or archs[0] not in ARCHITECTURES or raw.get("model_type") != "llama":
        return None
    rope = raw.get("rope_parameters") or {}
    theta = rope.get("rope_theta", raw.get("rope_theta", 10000.0))
    if rope.get("rope_type", "default") != "default" or raw.get("rope_scaling") not in (None, {}):
        return None
    if raw.get("hidden_act", "silu") != "silu" or raw.get("pretraining_tp", 1) != 1:
        return None
    if raw.get("sliding_window") or raw.get("quantization_config"):
        return None
    if not (pathlib.Path(folder) / "model.safetensors").is_file():  # sharded or pickled weights: transformers
        return None
    heads = raw["num_attention_heads"]
    return LiteConfig(
        architecture=archs[0], kind=ARCHITECTURES[archs[0]],
        vocab_size=raw["vocab_size"], hidden_size=raw["hidden_size"],
        intermediate_size=raw["intermediate_size"], num_hidden_layers=raw["num_hidden_layers"],
        num_attention_heads=heads, num_key_value_heads=raw.get("num_key_value_heads") or heads,
        head_dim=raw.get("head_dim") or raw["hidden_size"] // heads,
        rms_norm_eps=raw.get("rms_norm_eps", 1e-6), rope_theta=float(theta),
        attention_bias=bool(raw.get("attention_bias", False)), mlp_bias=bool(raw.get("mlp_bias", False)),
        max_position_embeddings=raw.get("max_position_embeddings"), sliding_window=None,
        num_labels=len(raw.get("id2label") or {}) or raw.get("num_labels", 1),
        tie_word_embeddings=bool(raw.get("tie_word_embeddings", False)),
        pad_token_id=raw.get("pad_token_id"),
    )


class RMSNorm(nn.Module):
    def __init__(self, size: int, eps: float, device=None):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(size, device=device))
        self.eps = eps

    def forward(self, x):
        dtype = x.dtype
        x = x.to(torch.float32)
        x = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)
        return self.weight * x.to(dtype)


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
            out = cache.attend(self.index, q, k, v, self.head_dim ** -0.5)
            return self.o_proj(out.transpose(1, 2).reshape(batch, length, -1))
        if cache is not None:
            k, v = cache.update(k, v, self.index)
        if self.kv_heads != self.heads:
            rep = self.heads // self.kv_heads
            k = k[:, :, None].expand(-1, -1, rep, -1, -1).reshape(k.shape[0], self.heads, -1, self.head_dim)
            v = v[:, :, None].expand(-1, -1, rep, -1, -1).reshape(v.shape[0], self.heads, -1, self.head_dim)
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=is_causal,
                                             scale=self.head_dim ** -0.5)
        return self.o_proj(out.transpose(1, 2).reshape(batch, length, -1))


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

    def attend(self, index, q, k, v, scale):
        """q (B, H, L, D) of the candidates, k and v (B, KV, L, D): the attention output (B, H, L, D)."""
        kp, vp = self.layers[index]
        return attend(q, k, v, kp, vp, scale)


class MLP(nn.Module):
    def __init__(self, cfg: LiteConfig, device=None):
        super().__init__()
        h, i, bias = cfg.hidden_size, cfg.intermediate_size, cfg.mlp_bias
        self.gate_proj = nn.Linear(h, i, bias=bias, device=device)
        self.up_proj = nn.Linear(h, i, bias=bias, device=device)
        self.down_proj = nn.Linear(i, h, bias=bias, device=device)

    def forward(self, x):
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class Block(nn.Module):
    def __init__(self, cfg: LiteConfig, index: int, device=None):
        super().__init__()
        self.self_attn = Attention(cfg, index, device)
        self.mlp = MLP(cfg, device)
        self.input_layernorm = RMSNorm(cfg.hidden_size, cfg.rms_norm_eps, device)
        self.post_attention_layernorm = RMSNorm(cfg.hidden_size, cfg.rms_norm_eps, device)

    def forward(self, x, cos, sin, mask, cache, is_causal):
        x = x + self.self_attn(self.input_layernorm(x), cos, sin, mask, cache, is_causal)
        return x + self.mlp(self.post_attention_layernorm(x))


class LlamaModel(nn.Module):
    """The transformer (what transformers calls the base model, ``model.model``)."""

    def __init__(self, cfg: LiteConfig, device=None):
        super().__init__()
        self.config = cfg
        # Given a weight, Embedding skips its random init (normal_ on the meta device would import torch._dynamo, 2 s).
        self.embed_tokens = nn.Embedding(cfg.vocab_size, cfg.hidden_size,
                                         _weight=torch.empty(cfg.vocab_size, cfg.hidden_size, device=device))
        self.layers = nn.ModuleList(Block(cfg, i, device) for i in range(cfg.num_hidden_layers))
        self.norm = RMSNorm(cfg.hidden_size, cfg.rms_norm_eps, device)
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
        return types.SimpleNamespace(logits=self.lm_head(out.last_hidden_state), past_key_values=past_key_values)


def load_lite(folder, cfg: LiteConfig, dtype: torch.dtype, device="cpu") -> nn.Module:
    """The folder's weights (``model.safetensors``) in the lite model, read straight onto ``device``; every
    parameter must be there."""
    from safetensors.torch import load_file

    cls = LiteLlamaForSequenceClassification if cfg.kind == "classifier" else LiteLlamaForCausalLM
    model = cls(cfg, device="meta")  # shapes only: the checkpoint's tensors are assigned below
    state = load_file(str(pathlib.Path(folder) / "model.safetensors"), device=str(device))
    tied = cfg.kind == "logprob" and cfg.tie_word_embeddings
    if tied:  # saved once, under the embedding's name
        state["lm_head.weight"] = state["model.embed_tokens.weight"]
    model.load_state_dict(state, strict=True, assign=True)
    if tied:
        model.lm_head.weight = model.model.embed_tokens.weight
    return model.to(dtype).eval()
