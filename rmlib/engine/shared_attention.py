"""Candidates attending one cached prompt prefix without a copy per candidate.

A batch of B candidates after a prefix of P positions would normally see the
prefix's keys and values copied B times (a cache expanded and concatenated per
layer): on a GPU that copy, the grouped heads repeated, and the attention over
it cost more than the model's matrix products (profiled on Gemma-2-2B and
Llama-3.1-8B shapes). Here the prefix's keys and values stay at batch 1: the
candidates' logits against the prefix are one matrix product per key-value head
for the whole batch, and each candidate attends its own earlier positions.

Two users: rmlib's plain Llama forward (:mod:`rmlib.engine.lite_llama`) and
transformers models, whose attention modules dispatch on
``config._attn_implementation``: :func:`shared_prefix_attention` registers
:func:`attention` with transformers under :data:`NAME` and selects it for the
one forward it wraps (the model's own setting is restored afterwards), and says
whether every layer ran it, so a model whose attention does not dispatch this
way is never scored wrongly (the caller falls back to the expanded cache).
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import sys

import torch

#: The name :func:`attention` is registered under in transformers' ``AttentionInterface``.
NAME = "rmlib_shared_prefix"
_ACTIVE: contextvars.ContextVar = contextvars.ContextVar(NAME, default=None)


def attend(q, k, v, kp, vp, scale: float, softcap: float | None = None, window: int | None = None) -> torch.Tensor:
    """Attention of candidates over a shared prefix and their own positions.

    ``q`` (B, H, L, D) the candidates' queries; ``k``, ``v`` (B, KV, L, D) their keys and values;
    ``kp``, ``vp`` (1, KV, P, D) the prefix's. Logits are scaled, then soft-capped
    (``softcap * tanh(x / softcap)``, Gemma 2's), then a candidate's later positions are masked, and with a
    sliding ``window`` the keys ``window`` or more positions behind a query (candidate position ``i``
    is position ``P + i``); softmax in float32. Returns (B, H, L, D).
    """
    batch, heads, length, dim = q.shape
    kv, prefix = kp.shape[1], kp.shape[2]
    rows = heads // kv * length  # the query rows that share one key-value head, per candidate
    grouped = q.reshape(batch, kv, rows, dim)
    flat = grouped.transpose(0, 1).reshape(kv, batch * rows, dim)
    to_prefix = torch.bmm(flat, kp[0].transpose(1, 2)).view(kv, batch, rows, prefix).transpose(0, 1)
    to_self = torch.matmul(grouped, k.transpose(2, 3))  # (B, KV, rows, L)
    logits = torch.cat([to_prefix, to_self], dim=-1).float() * scale
    if softcap:
        logits = torch.tanh(logits / softcap) * softcap
    own = torch.arange(length, device=q.device)
    hidden = own[None, :] > own[:, None]  # a candidate's later positions
    if window is not None:
        hidden = hidden | (own[None, :] <= own[:, None] - window)
    later = hidden.repeat(rows // length, 1)  # row r is position r % L
    logits[..., prefix:] = logits[..., prefix:].masked_fill(later, float("-inf"))
    if window is not None and prefix + length > window:
        position = prefix + own.repeat(rows // length)  # of each query row
        behind = torch.arange(prefix, device=q.device)[None, :] <= position[:, None] - window
        logits[..., :prefix] = logits[..., :prefix].masked_fill(behind, float("-inf"))
    weights = torch.softmax(logits, dim=-1).to(q.dtype)
    w_prefix, w_self = weights[..., :prefix], weights[..., prefix:]
    out = torch.bmm(w_prefix.transpose(0, 1).reshape(kv, batch * rows, prefix), vp[0])
    out = out.view(kv, batch, rows, dim).transpose(0, 1) + torch.matmul(w_self, v)
    return out.reshape(batch, heads, length, dim)


@dataclasses.dataclass
class _Active:
    layers: list  # [(keys, values)] of the prefix, each (1, KV, P, D)
    calls: int = 0


def attention(module, query, key, value, attention_mask, scaling: float | None = None, dropout: float = 0.0,
              softcap: float | None = None, **kwargs):
    """transformers' attention-function signature: ``query`` (B, H, L, D), ``key``/``value`` (B, KV, L, D)
    of the candidates alone (no cache); returns ((B, L, H, D), None). The mask is not used: candidates
    are right-padded, so causal attention over their own positions is exact for every real token."""
    active = _ACTIVE.get()
    if active is None:  # a forward outside shared_prefix_attention (another thread): the model's eager path
        eager = sys.modules[type(module).__module__].eager_attention_forward
        return eager(module, query, key, value, attention_mask, scaling=scaling, dropout=dropout,
                     softcap=softcap, **kwargs)
    kp, vp = active.layers[module.layer_idx]
    active.calls += 1
    scale = module.head_dim ** -0.5 if scaling is None else scaling
    return attend(query, key, value, kp, vp, scale, softcap).transpose(1, 2).contiguous(), None


def _register() -> None:
    from transformers import AttentionInterface

    if NAME not in AttentionInterface._global_mapping:
        AttentionInterface.register(NAME, attention)


def _configs(model):
    """The model's config and its sub-configs that carry an attention implementation."""
    cfg = model.config
    seen = [cfg]
    for name in getattr(cfg, "sub_configs", {}) or {}:
        sub = getattr(cfg, name, None)
        if sub is not None and hasattr(sub, "_attn_implementation"):
            seen.append(sub)
    return seen


@contextlib.contextmanager
def shared_prefix_attention(model, layers):
    """Within the block, ``model``'s attention layers attend ``layers`` (the prefix's keys and values)
    through :func:`attention`; yields a record whose ``calls`` counts the layers that did (the caller
    checks it equals the model's layer count). The model's attention setting is restored on exit."""
    _register()
    configs = _configs(model)
    before = [c._attn_implementation for c in configs]
    active = _Active(layers)
    token = _ACTIVE.set(active)
    try:
        for c in configs:
            c._attn_implementation = NAME
        yield active
    finally:
        for c, impl in zip(configs, before):
            c._attn_implementation = impl
        _ACTIVE.reset(token)
