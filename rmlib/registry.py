"""The registry of known reward models (``rmlib/resources/reward_models.yaml``).

One place knows model names and their quirks: which hub id, which nickname
the paper uses, where the scalar reward lives, which revision and dtype the
paper used and whether the model needs remote code.
"""

from __future__ import annotations

import functools
import pandas as pd
import yaml

from .resources import path as resource_path



@functools.lru_cache(maxsize=1)
def _entries() -> tuple[dict, ...]:
    with open(resource_path("reward_models.yaml"), encoding="utf-8") as f:
        return tuple(yaml.safe_load(f))


def paper_models() -> pd.DataFrame:
    """The paper's 10 reward models, one row each, in RewardBench-rank order."""
    return pd.DataFrame(list(_entries())).sort_values("rewardbench_rank").reset_index(drop=True)


def lookup(name: str) -> dict | None:
    """The registry entry for a hub id or a paper nickname, or None."""
    for e in _entries():
        if name in (e["hub_id"], e["nickname"]):
            return dict(e)
    return None


def nickname(hub_id: str) -> str:
    """The paper's nickname for a hub id (the hub id itself when unknown)."""
    e = lookup(hub_id)
    return e["nickname"] if e else hub_id


def short_label(prompt: str) -> str:
    """The paper's short name of one of its three prompts (greatest / best / worst), else the prompt."""
    from .prompts import PAPER_PROMPTS

    return {text: key for key, text in PAPER_PROMPTS.items()}.get(prompt, prompt)


def model_label(model_id: str) -> str:
    """A short name for a model in tables: the paper's nickname for its ten RMs, else the last part
    of the hub id (``google/gemma-3-270m`` -> ``gemma-3-270m``)."""
    name = nickname(model_id)
    return name.rsplit("/", 1)[-1] if name == model_id else name


def model_labels(model_ids) -> dict[str, str]:
    """:func:`model_label` of each model, or its :func:`nickname` for all when two short names collide."""
    labels = {m: model_label(m) for m in dict.fromkeys(model_ids)}
    if len(set(labels.values())) < len(labels):
        labels = {m: nickname(m) for m in labels}
    return labels
