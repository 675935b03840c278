"""The model registry (``rmlib/resources/reward_models.yaml``): one entry per model.

One place knows model names and their quirks: which hub id (or rmlib spec), which
nickname the paper uses, its chat template (a named template), where the scalar
reward lives, which revision and dtype the paper used, whether the model needs
remote code, which forward may run it, and its roles (one of the paper's ten, the
follow-up's, an embedded model, a tiny test model). ``rmlib.engine.models.load_model``
reads a model's quirks from here only, so a new reward model is one entry: in the
shipped file, or in a file of the same format named by ``RMLIB_MODEL_REGISTRY``
(its entries are added; one naming a model listed already replaces it).
"""

from __future__ import annotations

import functools
import os
import pathlib

import pandas as pd
import yaml

from .errors import InputError
from .options import DTYPE_NAMES, MODEL_KINDS, TEMPLATE_NAMES
from .resources import path as resource_path

#: A YAML file of more registry entries (the shipped file's format), read after the shipped file.
REGISTRY_ENV_VAR = "RMLIB_MODEL_REGISTRY"

#: What a model can be to rmlib (an entry's ``roles``).
ROLES = ("paper", "followup", "embedded", "tiny", "random", "user")
SCORE_FROM = ("logits0", "score")
FORWARDS = ("transformers", "lite")

#: Every entry has these keys; the value when an entry leaves one out.
DEFAULTS = {"hub_id": None, "spec": None, "nickname": None, "developer": None, "base_model": None, "family": None,
            "params_b": None, "rewardbench_rank": None, "kind": "classifier", "roles": ["user"], "template": None,
            "score_from": "logits0", "dtype": None, "revision": None, "trust_remote_code": False,
            "forward": "transformers"}


def _checked(raw, where: str) -> dict:
    """One entry with every key (:data:`DEFAULTS`), or an InputError naming what is wrong and the fix."""
    if not isinstance(raw, dict):
        raise InputError(f"{where}: an entry must be a mapping of keys (hub_id, kind, template, ...), not {raw!r}")
    unknown = sorted(set(raw) - set(DEFAULTS))
    if unknown:
        raise InputError(f"{where}: unknown key(s) {unknown}; an entry's keys are {sorted(DEFAULTS)}")
    e = {**DEFAULTS, **raw}
    name = e["hub_id"] or e["spec"]
    if not isinstance(name, str) or not name.strip():
        raise InputError(f"{where}: an entry needs hub_id (the model's hub id) or spec (rmlib's name of it)")
    where = f"{where} ({name})"
    choices = {"kind": MODEL_KINDS, "score_from": SCORE_FROM, "forward": FORWARDS,
               "template": (None, *TEMPLATE_NAMES), "dtype": (None, *DTYPE_NAMES)}
    for key, allowed in choices.items():
        if e[key] not in allowed:
            raise InputError(f"{where}: {key} must be one of {[a for a in allowed if a is not None]}"
                             f"{' or null' if None in allowed else ''}, not {e[key]!r}")
    roles = e["roles"]
    if not isinstance(roles, list) or not roles or any(r not in ROLES for r in roles):
        raise InputError(f"{where}: roles must be a non-empty list of {list(ROLES)}, not {roles!r}")
    if not isinstance(e["trust_remote_code"], bool):
        raise InputError(f"{where}: trust_remote_code must be true or false, not {e['trust_remote_code']!r}")
    if e["revision"] is not None and not isinstance(e["revision"], str):
        raise InputError(f"{where}: revision must be a branch, tag or commit id (a string) or null")
    return e


def _read(path: pathlib.Path) -> list[dict]:
    try:
        with open(path, encoding="utf-8") as f:
            raw = yaml.safe_load(f)
    except OSError as err:
        raise InputError(f"cannot read the model registry {path} ({err.strerror or err}); set "
                         f"{REGISTRY_ENV_VAR} to a readable YAML file, or unset it") from None
    except yaml.YAMLError as err:
        raise InputError(f"the model registry {path} is not valid YAML ({err}); fix the file") from None
    if not isinstance(raw, list):
        raise InputError(f"the model registry {path} must be a YAML list of entries (- hub_id: ...)")
    return [_checked(r, f"{path}, entry {i + 1}") for i, r in enumerate(raw)]


def _added() -> tuple[str, int] | None:
    value = os.environ.get(REGISTRY_ENV_VAR, "").strip()
    if not value:
        return None
    path = pathlib.Path(value).expanduser()
    try:
        return str(path), path.stat().st_mtime_ns
    except OSError:
        return str(path), -1  # read below, where the error names the file


@functools.lru_cache(maxsize=4)
def _entries(added: tuple[str, int] | None) -> tuple[dict, ...]:
    entries = _read(resource_path("reward_models.yaml"))
    if added is not None:
        for e in _read(pathlib.Path(added[0])):
            names = {e["hub_id"], e["spec"]} - {None}
            entries = [old for old in entries if not names & {old["hub_id"], old["spec"]}] + [e]
    return tuple(entries)


def entries() -> tuple[dict, ...]:
    """Every registry entry (the shipped file's, then ``RMLIB_MODEL_REGISTRY``'s), each with every key."""
    return _entries(_added())


def models(role: str | None = None) -> pd.DataFrame:
    """The registry's models with ``role`` (one of :data:`ROLES`; None: all), one row each, in the
    registry's order."""
    if role is not None and role not in ROLES:
        raise InputError(f"unknown role {role!r}: choose one of {list(ROLES)}")
    rows = [e for e in entries() if role is None or role in e["roles"]]
    return pd.DataFrame(rows, columns=list(DEFAULTS))


def paper_models() -> pd.DataFrame:
    """The paper's 10 reward models (role ``paper``), one row each, in RewardBench-rank order."""
    return models("paper").sort_values("rewardbench_rank").reset_index(drop=True)


def lookup(name: str) -> dict | None:
    """The registry entry for a hub id, a spec or a paper nickname, or None."""
    if not isinstance(name, str):
        return None
    for e in entries():
        if name in (e["hub_id"], e["spec"], e["nickname"]):
            return dict(e)
    return None


def nickname(hub_id: str) -> str:
    """The paper's nickname for a hub id (the hub id itself when unknown)."""
    e = lookup(hub_id)
    return e["nickname"] if e and e["nickname"] else hub_id


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
