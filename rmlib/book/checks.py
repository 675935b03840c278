"""Parameter checks the chapters run first, before any model loads (clear errors, with the fix)."""

from __future__ import annotations

import math
import operator
import shlex
from collections.abc import Sequence

from ..errors import InputError

__all__ = ["spec_kind", "trusted_model_kwargs", "prompt_roles", "lists", "at_least", "words", "one_of", "repository_path", "subset",
           "model_pair", "mapping", "language_model", "nonempty", "shares", "declared", "RULE_KINDS"]

ROLES = ("greatest", "best", "worst")


def trusted_model_kwargs(trust_remote_code: Sequence[str], models: Sequence[str]) -> dict[str, dict]:
    """``model_kwargs`` turning on ``trust_remote_code`` for the named models, which must be among ``models``."""
    unknown = sorted(set(trust_remote_code) - set(models))
    if unknown:
        raise InputError(f"trust_remote_code names {unknown}, which are not in models {models}")
    return {m: {"trust_remote_code": True} for m in trust_remote_code}


def prompt_roles(prompts: Sequence[str], roles: Sequence[str] = ROLES, name: str = "prompts") -> dict[str, str]:
    """``{prompt: role}`` for exactly ``len(roles)`` non-empty prompts given in the order of ``roles``
    (parameter ``name``)."""
    if not isinstance(prompts, (list, tuple)) or len(prompts) != len(roles) or any(
            not isinstance(v, str) or not v.strip() for v in prompts):
        raise InputError(f"parameter {name!r} must be a list of exactly {len(roles)} non-empty prompts, in the "
                         f"roles {tuple(roles)}, got {prompts!r}")
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


def spec_kind(name: str, spec: str) -> str:
    """The kind of model ``spec`` names (:func:`rmlib.engine.models.model_kind`), told without loading it; an
    unknown spec is an :class:`InputError` naming parameter ``name``."""
    from ..engine.models import check_model_spec, model_kind

    try:
        check_model_spec(spec)
    except ValueError as err:
        raise InputError(f"parameter {name!r}: {err}") from None
    return model_kind(spec)


def language_model(name: str, spec: str) -> None:
    """Parameter ``name`` must name a causal language model (a comparison LM, an implicit reward's policy
    or reference), never a reward model: one that scores itself would agree with itself (tau = 1).
    Told from the spec without loading weights; a hub id outside the registry is left to the load."""
    kind = spec_kind(name, spec)
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


# --------------------------------------------------------------------------- declared rules
# A chapter declares what each parameter means in its notebook metadata (``metadata.rmlib.parameter_rules``,
# ``{name: rule}``); :func:`declared` checks them before any model loads. A rule is one of:
#
# * ``int``, ``ints`` (a list), ``number``, ``numbers`` (finite), each followed by bounds
#   ``OP BOUND`` (``>``, ``>=``, ``<``, ``<=``; a bound is a number or another parameter's name),
#   e.g. ``"int >= 1 <= 1000"``, ``"number > beta_min"``;
# * ``one of A B ...`` (the value is one of them; ``""`` is the empty string), ``each of A B ...``
#   (a list of them, at least one);
# * ``in NAME``: each entry of the list is also an entry of parameter ``NAME`` (``trust_remote_code``
#   names some of ``models``);
# * a name of :data:`RULE_KINDS` (e.g. ``reward models``, ``follow-up prompts``).
_OPS = {">": operator.gt, ">=": operator.ge, "<": operator.lt, "<=": operator.le}


def _fail(name: str, what: str, value) -> None:
    raise InputError(f"parameter {name!r} must be {what}, got {value!r}")


def _numbers(name: str, words: list[str], value, values) -> None:
    kind, many = words[0].rstrip("s"), words[0].endswith("s")
    bounds = []
    for op, bound in zip(words[1::2], words[2::2]):
        try:
            limit, shown = float(bound), bound
        except ValueError:
            limit, shown = values[bound], f"{bound} ({values[bound]!r})"
        bounds.append((op, limit, shown))
    what = {"int": "an integer", "ints": "a list of integers", "number": "a finite number",
            "numbers": "a list of finite numbers"}[words[0]] + "".join(
        f"{' and' if k else ''} {op} {shown}" for k, (op, _, shown) in enumerate(bounds))
    if many:
        if not isinstance(value, (list, tuple)) or not value:
            _fail(name, what + " (at least one)", value)
    for v in value if many else [value]:
        ok = not isinstance(v, bool) and (isinstance(v, int) if kind == "int" else
                                          isinstance(v, (int, float)) and math.isfinite(v))
        if not ok or not all(_OPS[op](v, limit) for op, limit, _ in bounds):
            _fail(name, what, value)


def _specs(value) -> list:
    return list(value) if isinstance(value, (list, tuple)) else [value]


def _reward_models(name: str, value, values) -> None:
    for spec in _specs(value):
        kind = spec_kind(name, spec)
        if kind in ("logprob", "other"):
            what = "a language model (it gives log-probabilities, not rewards)" if kind == "logprob" else \
                "not a reward model (a sequence classifier)"
            raise InputError(f"parameter {name!r}: {spec!r} is {what}; {name} must be reward models, e.g. "
                             "'trained:default' or a reward model's hub id")


def _some_reward_models(name: str, value, values) -> None:
    if not _specs(value):
        _fail(name, "at least one reward model", value)
    _reward_models(name, value, values)


def _some_models(name: str, value, values) -> None:
    if not _specs(value) or any(not isinstance(s, str) or not s.strip() for s in _specs(value)):
        _fail(name, "at least one model spec (non-empty strings)", value)


def _language_models(name: str, value, values) -> None:
    for spec in _specs(value):
        if not isinstance(spec, str) or not spec.strip():
            _fail(name, "model specs (non-empty strings)", value)
        language_model(name, spec)


def _some_language_models(name: str, value, values) -> None:
    if not _specs(value):
        _fail(name, "at least one language model", value)
    _language_models(name, value, values)


def _followup_prompts(name: str, value, values) -> None:
    from ..tables import followup

    try:
        followup.prompt_keys(value)
    except ValueError as err:
        raise InputError(f"parameter {name!r}: {err}") from None


def _followup_corpora(name: str, value, values) -> None:
    from ..tables.followup import CORPORA

    if not isinstance(value, (list, tuple)) or any(v not in CORPORA for v in value):
        _fail(name, f"a list of the follow-up's word lists {list(CORPORA)} ([]: none)", value)


def _elo_prompts(name: str, value, values) -> None:
    from ..prompts import ELO_PROMPTS

    if not _specs(value) or any(v not in ELO_PROMPTS for v in _specs(value)):
        _fail(name, f"EloEverything prompt key{'s' if isinstance(value, list) else ''} of {list(ELO_PROMPTS)}", value)


def _paper_file(key):
    def check(name: str, value, values) -> None:
        try:
            key(value)
        except (ValueError, KeyError) as err:  # the registry says an unknown name with a KeyError
            raise InputError(f"parameter {name!r}: {err.args[0] if err.args else err}") from None
    return check


def _paper_rm(name, value, values) -> None:
    from ..tables.data_files import rm_scores_key

    _paper_file(rm_scores_key)(name, value, values)


def _paper_lm(name, value, values) -> None:
    from ..tables.data_files import base_logits_key

    _paper_file(base_logits_key)(name, value, values)


def _word(name: str, value, values) -> None:
    words(**{name: value})


def _texts(name: str, value, values) -> None:
    if not isinstance(value, (list, tuple)) or any(not isinstance(v, str) or not v.strip() for v in value):
        _fail(name, "a list of non-empty strings", value)


def _counts(name: str, value, values) -> None:
    if not isinstance(value, dict) or any(isinstance(v, bool) or not isinstance(v, int) or v < 0
                                          for v in value.values()):
        _fail(name, "a mapping {model: a whole number >= 0}", value)


def _shares(name: str, value, values) -> None:
    shares(**{name: value})


def _role_prompts(name: str, value, values) -> None:
    prompt_roles(value, name=name)


#: The named rules: what each checks.
RULE_KINDS = {
    "reward models": _reward_models,  # reward models (classifiers), never language models
    "some reward models": _some_reward_models,  # the same, at least one
    "some models": _some_models,  # model specs of any kind, at least one
    "language models": _language_models,  # causal language models, never reward models
    "some language models": _some_language_models,  # the same, at least one
    "follow-up prompts": _followup_prompts,  # keys of the follow-up's 54 prompts (one or a list)
    "follow-up corpora": _followup_corpora,  # the follow-up's word lists
    "elo prompts": _elo_prompts,  # EloEverything prompt keys
    "paper RM": _paper_rm,  # a paper RM with released per-token scores
    "paper LM": _paper_lm,  # a Gemma LM with released logits
    "word": _word,  # a non-empty word
    "texts": _texts,  # a list of non-empty strings
    "counts": _counts,  # {model: whole number >= 0}
    "shares": _shares,  # a non-empty list of numbers in (0, 1]
    "role prompts": _role_prompts,  # exactly three prompts, in the roles greatest, best, worst
}


def rule_problem(rule: str, names) -> str | None:
    """Why ``rule`` is not a rule this module reads (None when it is); ``names``: the chapter's parameters."""
    words = shlex.split(rule) if isinstance(rule, str) else []
    if not words:
        return f"{rule!r} is not a rule"
    if words[0] in ("int", "ints", "number", "numbers"):
        pairs = list(zip(words[1::2], words[2::2]))
        if len(words) % 2 == 0 or any(op not in _OPS for op, _ in pairs):
            return f"{rule!r}: bounds are pairs OP BOUND with OP one of {list(_OPS)}"
        for _, bound in pairs:
            try:
                float(bound)
            except ValueError:
                if bound not in names:
                    return f"{rule!r}: the bound {bound!r} is neither a number nor a parameter"
        return None
    if words[:2] in (["one", "of"], ["each", "of"]) and len(words) > 2:
        return None
    if words[0] == "in":
        return None if len(words) == 2 and words[1] in names else f"{rule!r}: 'in NAME' names one other parameter"
    return None if rule in RULE_KINDS else f"{rule!r} is not a rule (kinds: {sorted(RULE_KINDS)})"


def declared(rules: dict, values: dict) -> None:
    """Check every parameter of ``values`` that ``rules`` names (``{name: rule}``, see above); the first
    that breaks its rule raises an :class:`InputError` naming it, the rule and the value."""
    for name, rule in rules.items():
        if name not in values or values[name] is NotImplemented:
            continue
        value, words = values[name], shlex.split(rule)
        if words[0] in ("int", "ints", "number", "numbers"):
            _numbers(name, words, value, values)
        elif words[:2] == ["one", "of"]:
            if value not in words[2:]:
                _fail(name, f"one of {words[2:]}", value)
        elif words[0] == "in":
            subset(name, _specs(value), words[1], _specs(values.get(words[1], [])))
        elif words[:2] == ["each", "of"]:
            if not isinstance(value, (list, tuple)) or not value or any(v not in words[2:] for v in value):
                _fail(name, f"a list of {words[2:]} (at least one)", value)
        else:
            RULE_KINDS[rule](name, value, values)
