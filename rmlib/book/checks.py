"""Parameter checks the chapters run first, before any model loads (clear errors, with the fix)."""

from __future__ import annotations

from collections.abc import Sequence
from ..errors import InputError

__all__ = ["trusted_model_kwargs", "prompt_roles", "lists", "at_least", "words", "one_of", "repository_path", "subset",
           "model_pair", "mapping", "language_model", "nonempty", "shares"]

ROLES = ("greatest", "best", "worst")


def trusted_model_kwargs(trust_remote_code: Sequence[str], models: Sequence[str]) -> dict[str, dict]:
    """``model_kwargs`` turning on ``trust_remote_code`` for the named models, which must be among ``models``."""
    unknown = sorted(set(trust_remote_code) - set(models))
    if unknown:
        raise InputError(f"trust_remote_code names {unknown}, which are not in models {models}")
    return {m: {"trust_remote_code": True} for m in trust_remote_code}


def prompt_roles(prompts: Sequence[str], roles: Sequence[str] = ROLES) -> dict[str, str]:
    """``{prompt: role}`` for exactly ``len(roles)`` prompts given in the order of ``roles``."""
    if not isinstance(prompts, (list, tuple)) or len(prompts) != len(roles):
        raise InputError(f"prompts must be a list of exactly {len(roles)} prompts, in the roles {tuple(roles)}; "
                         f"got {prompts!r}")
    return dict(zip(prompts, roles))


def lists(**values) -> None:
    """Each named parameter must be a list (or tuple)."""
    for name, value in values.items():
        if not isinstance(value, (list, tuple)):
            raise InputError(f"parameter {name} must be a list, got {value!r}")


def nonempty(**values) -> None:
    """Each named parameter must be a list with at least one entry."""
    lists(**values)
    for name, value in values.items():
        if not value:
            raise InputError(f"parameter {name} is empty: give at least one entry")


def shares(**values) -> None:
    """Each named parameter must be a non-empty list of numbers in (0, 1] (shares of something)."""
    nonempty(**values)
    for name, value in values.items():
        if any(isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 < v <= 1 for v in value):
            raise InputError(f"parameter {name} must hold shares in (0, 1], e.g. [0.1, 1.0]; got {value!r}")


def at_least(minimum: int, **values) -> None:
    """Each named parameter (a number, or a list of them) must be an int >= ``minimum``."""
    for name, value in values.items():
        for v in value if isinstance(value, (list, tuple)) else [value]:
            if isinstance(v, bool) or not isinstance(v, int) or v < minimum:
                raise InputError(f"parameter {name} must be {'an integer' if not isinstance(value, list) else 'integers'}"
                                 f" >= {minimum}, got {value!r}")


def words(**values) -> None:
    """Each named parameter must be a non-empty word (not only white space)."""
    for name, value in values.items():
        if not isinstance(value, str) or not value.strip():
            raise InputError(f"parameter {name} must be a non-empty word, e.g. 'x'; got {value!r}")


def one_of(name: str, value, allowed: Sequence) -> None:
    """``value`` of parameter ``name`` must be one of ``allowed``."""
    if value not in allowed:
        raise InputError(f"parameter {name} must be one of {list(allowed)}, got {value!r}")


def repository_path(path: str):
    """A path parameter as a :class:`pathlib.Path`: ``~`` expanded; a relative path is read from the
    repository root (where ``python -m rmlib.book`` runs), not from the notebooks' folder."""
    import pathlib

    from .paths import ROOT

    p = pathlib.Path(path).expanduser()
    return p if p.is_absolute() else ROOT / p


def subset(name: str, values: Sequence, of_name: str, of: Sequence) -> None:
    """Every entry of parameter ``name`` must also be in parameter ``of_name``."""
    extra = sorted(set(values) - set(of))
    if extra:
        raise InputError(f"{name} names {extra}, which are not in {of_name} {list(of)}: list each in both")


def language_model(name: str, spec: str) -> None:
    """Parameter ``name`` must name a causal language model (a comparison LM, an implicit reward's policy
    or reference), never a reward model: one that scores itself would agree with itself (tau = 1).
    Told from the spec without loading weights; a hub id outside the registry is left to the load."""
    from ..engine.models import check_model_spec, model_kind

    try:
        check_model_spec(spec)
    except ValueError as err:
        raise InputError(f"parameter {name!r}: {err}") from None
    kind = model_kind(spec)
    if kind in ("classifier", "other"):
        what = "a reward model (a sequence classifier)" if kind == "classifier" else "not a causal language model"
        raise InputError(f"parameter {name!r}: {spec!r} is {what}; {name} must be a language model, e.g. 'default' "
                         "or 'gemma-3-270m' (or '' for none)")


def model_pair(policy: str, reference: str) -> bool:
    """Both or neither of an implicit reward's policy and reference; each given one must be a valid
    model spec (checked now, before any model loads). Returns whether the pair is given."""
    from ..engine.models import check_model_spec

    if bool(policy.strip()) != bool(reference.strip()):
        raise InputError("an implicit reward needs both a policy and a reference model: pass -p policy SPEC "
                         "-p reference SPEC (or neither, to skip that section)")
    for spec in (policy, reference):
        if spec.strip():
            check_model_spec(spec)
    return bool(policy.strip())


def mapping(**values) -> None:
    """Each named parameter must be a mapping (a YAML dict)."""
    for name, value in values.items():
        if not isinstance(value, dict):
            raise InputError(f"{name} must be a mapping {{model id: family}}, got {value!r}")
