"""Chapter discovery and parameters: find NN_*.ipynb, read the `parameters` cell, check overrides."""

from __future__ import annotations

import ast
import os
import pathlib
import re
from collections.abc import Mapping

from ..errors import InputError
from .paths import NOTEBOOKS_DIR

CHAPTER_RE = re.compile(r"^(\d\d)_[A-Za-z0-9_\-]+\.ipynb$")
#: Parameter names whose values are prompts (must be non-empty strings).
PROMPT_NAMES = ("prompt", "prompts")


class ParameterError(InputError):
    """A chapter parameter is unknown, of the wrong type, or invalid."""


# --------------------------------------------------------------------------- chapters
def find_chapters(notebooks_dir: pathlib.Path | str = NOTEBOOKS_DIR) -> dict[str, pathlib.Path]:
    """Map chapter number (``"01"``) to its notebook, for ``NN_*.ipynb`` in ``notebooks_dir``."""
    notebooks_dir = pathlib.Path(notebooks_dir)
    found: dict[str, pathlib.Path] = {}
    for path in sorted(notebooks_dir.glob("*.ipynb")):
        m = CHAPTER_RE.match(path.name)
        if not m:
            continue
        if m.group(1) in found:
            raise InputError(
                f"two notebooks for chapter {m.group(1)}: {found[m.group(1)].name} and {path.name}; "
                "renumber one of them"
            )
        found[m.group(1)] = path
    return found


def chapter_notebook(chapter: str | int | os.PathLike, notebooks_dir: pathlib.Path | str = NOTEBOOKS_DIR) -> pathlib.Path:
    """The notebook for ``chapter``: a number (``1``, ``"01"``) or a path to an ``.ipynb``."""
    if isinstance(chapter, os.PathLike) or str(chapter).endswith(".ipynb"):
        path = pathlib.Path(chapter)
        if not path.is_file():
            raise FileNotFoundError(f"notebook {path} not found")
        return path
    text = str(chapter).strip()
    if not text.isdigit() or len(text) > 2:
        raise InputError(f"chapter must be a number like 01 or a path to an .ipynb, got {chapter!r}")
    key = f"{int(text):02d}"
    chapters = find_chapters(notebooks_dir)
    if key not in chapters:
        have = ", ".join(chapters) or "none"
        raise InputError(f"no chapter {key} in {notebooks_dir} (chapters: {have})")
    return chapters[key]


# --------------------------------------------------------------------------- parameters
def notebook_parameters(path: pathlib.Path | str) -> dict[str, object]:
    """Defaults of the notebook's ``parameters`` cell, as Python values.

    A default that is not a literal (e.g. computed) is returned as
    ``NotImplemented`` and then accepts a value of any type.
    """
    import papermill

    raw = papermill.inspect_notebook(str(path))
    _check_parameters_cell(path, raw)
    out: dict[str, object] = {}
    for name, info in raw.items():
        try:
            out[name] = ast.literal_eval(info["default"])
        except (ValueError, SyntaxError):
            out[name] = NotImplemented
    return out


def _check_parameters_cell(path, inferred) -> None:
    """Every top-level assignment of the ``parameters`` cell must be a parameter papermill sees.

    Papermill silently skips an assignment whose trailing comment contains ``=``;
    a reader's ``-p`` would then be rejected as unknown. Say so at once.
    """
    import nbformat

    nb = nbformat.read(str(path), as_version=4)
    for cell in nb.cells:
        if "parameters" not in cell.get("metadata", {}).get("tags", []):
            continue
        for node in ast.parse(cell.source).body:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AnnAssign) else []
            for target in targets:
                if isinstance(target, ast.Name) and target.id not in inferred:
                    raise InputError(
                        f"{pathlib.Path(path).name}: papermill does not see parameter {target.id!r} (line "
                        f"{node.lineno} of the parameters cell); remove '=' from its comment"
                    )


def _type_name(value: object) -> str:
    return type(value).__name__


def _coerce(name: str, value: object, default: object) -> object:
    """``value`` converted to the default's type, or a ParameterError."""
    import yaml

    if default is NotImplemented or default is None:
        if isinstance(value, str):
            try:
                return yaml.safe_load(value)
            except yaml.YAMLError:
                return value
        return value
    if isinstance(default, str):
        if not isinstance(value, str):
            raise ParameterError(f"parameter {name!r} expects a string (default {default!r}), got {value!r}")
        return value
    parsed = value
    if isinstance(value, str):
        try:
            parsed = yaml.safe_load(value)
        except yaml.YAMLError as err:
            raise ParameterError(f"parameter {name!r}: cannot read {value!r} as {_type_name(default)} ({err})") from None
    ok = False
    if isinstance(default, bool):
        ok = isinstance(parsed, bool)
    elif isinstance(default, int):
        ok = isinstance(parsed, int) and not isinstance(parsed, bool)
    elif isinstance(default, float):
        ok = isinstance(parsed, (int, float)) and not isinstance(parsed, bool)
        if ok:
            parsed = float(parsed)
    elif isinstance(default, (list, tuple)):
        ok = isinstance(parsed, (list, tuple))
        if ok:
            parsed = type(default)(parsed)
    elif isinstance(default, dict):
        ok = isinstance(parsed, dict)
    else:
        ok = isinstance(parsed, type(default))
    if not ok:
        raise ParameterError(
            f"parameter {name!r} expects {_type_name(default)} (default {default!r}), got {value!r}"
        )
    return parsed


def _is_model_param(name: str) -> bool:
    return name in ("model", "models") or name.endswith(("_model", "_models"))


#: Other parameters whose values are model specs (a comparison LM, implicit-reward policy and reference).
MODEL_SPEC_PARAMS = ("lm", "reference", "policy")
#: Parameters naming language-model bases that the chapter trains reward models on (``trained:<base>``).
TRAINED_BASE_PARAMS = ("bases",)


def default_local_models(path: pathlib.Path | str) -> list[str]:
    """The embedded models and ``trained:`` RMs a chapter loads on its default parameters, in order:
    what ``make book`` prepares before starting it (:mod:`rmlib.book.parallel`). Hub models download
    on first load and are not listed."""
    return local_models(notebook_parameters(path))


def local_models(parameters: Mapping[str, object]) -> list[str]:
    """The embedded models and ``trained:`` RMs that chapter ``parameters`` name, in order."""
    from rmlib.engine.embedded import EMBEDDED

    found: list[str] = []
    for name, value in parameters.items():
        values = value if isinstance(value, (list, tuple)) else [value]
        if name in TRAINED_BASE_PARAMS:
            values = [f"trained:{v}" for v in values if isinstance(v, str) and v]
        elif not (_is_model_param(name) or name in MODEL_SPEC_PARAMS):
            continue
        found += [v for v in values if isinstance(v, str) and (v in EMBEDDED or v.startswith("trained:"))]
    return list(dict.fromkeys(found))


def _check_models(name: str, value: object) -> None:
    """Each spec is one rmlib loads; a hub id is resolved now (:func:`rmlib.engine.hub.hub_commit`: one small
    request, or the hub cache offline), so a repository or revision the hub does not have is refused before the
    chapter starts. An unreachable hub is left to the load, which says what to do."""
    from rmlib import registry
    from rmlib.engine.hub import hub_commit
    from rmlib.engine.models import check_model_spec
    from rmlib.errors import ModelLoadError

    specs = value if isinstance(value, (list, tuple)) else [value]
    for spec in specs:
        if not isinstance(spec, str) or not spec.strip():
            raise ParameterError(f"parameter {name!r}: model spec must be a non-empty string, got {spec!r}")
        try:
            if check_model_spec(spec) == "hub":
                hub_commit(spec, (registry.lookup(spec) or {}).get("revision"))
        except ModelLoadError:
            pass
        except ValueError as err:
            raise ParameterError(f"parameter {name!r}: {err}") from None


def _check_known(name: str, value: object) -> None:
    """Parameters that every chapter reads the same way are checked as the kernel would read them."""
    if name == "mode" and value not in ("token", "paper"):
        raise ParameterError(f"parameter 'mode' must be 'token' (exact, from token ids) or 'paper' "
                             f"(the published method), not {value!r}")
    if name in MODEL_SPEC_PARAMS and isinstance(value, str) and value.strip():
        from .checks import language_model

        try:
            language_model(name, value)
        except ValueError as err:
            raise ParameterError(str(err)) from None
    if name == "vocab_slice":
        from ..tables.results import vocab_slice

        try:
            vocab_slice(value)
        except ValueError as err:
            raise ParameterError(f"parameter 'vocab_slice': {err}") from None


def validate_parameters(notebook: pathlib.Path | str, parameters: Mapping[str, object] | None) -> dict[str, object]:
    """Check ``parameters`` against the notebook's ``parameters`` cell; return them coerced.

    Raises :class:`ParameterError` (one clear line) for an unknown name, a
    value of the wrong type, an empty prompt, or an unknown model.
    """
    defaults = notebook_parameters(notebook)
    params = dict(parameters or {})
    if params and not defaults:
        raise ParameterError(
            f"{pathlib.Path(notebook).name} has no cell tagged 'parameters', so it takes no parameters"
        )
    out: dict[str, object] = {}
    for name, value in params.items():
        if name not in defaults:
            raise ParameterError(
                f"unknown parameter {name!r} for {pathlib.Path(notebook).name}; "
                f"known: {', '.join(sorted(defaults))}"
            )
        value = _coerce(name, value, defaults[name])
        if name in PROMPT_NAMES:
            prompts = value if isinstance(value, (list, tuple)) else [value]
            if not prompts or any(not isinstance(p, str) or not p.strip() for p in prompts):
                raise ParameterError(f"parameter {name!r}: prompts must be non-empty strings, got {value!r}")
        if _is_model_param(name):
            _check_models(name, value)
        _check_known(name, value)
        out[name] = value
    _check_rules(notebook, {**defaults, **out})
    return out


def parameter_rules(notebook: pathlib.Path | str) -> dict[str, str]:
    """What each parameter of the notebook means: ``metadata["rmlib"]["parameter_rules"]``, ``{name: rule}``
    (the rules of :mod:`rmlib.book.checks`; ``{}`` when the chapter declares none)."""
    import nbformat

    nb = nbformat.read(str(notebook), as_version=4)
    rules = nb.metadata.get("rmlib", {}).get("parameter_rules", {})
    if not isinstance(rules, dict):
        raise TypeError(f"{pathlib.Path(notebook).name}: metadata.rmlib.parameter_rules must be a dict")
    return dict(rules)


def _check_rules(notebook, values: Mapping[str, object]) -> None:
    """The chapter's declared rules on its parameters (defaults and the values given), before any work."""
    from .checks import declared

    try:
        declared(parameter_rules(notebook), dict(values))
    except InputError as err:
        raise ParameterError(str(err)) from None


def tiny_parameters(notebook: pathlib.Path | str) -> dict[str, object]:
    """The notebook's tiny test parameters: ``metadata["rmlib"]["tiny_parameters"]``.

    Every chapter must declare them (``{}`` if its defaults are already fast);
    ``tests/test_book.py`` runs each chapter with them.
    """
    import nbformat

    nb = nbformat.read(str(notebook), as_version=4)
    meta = nb.metadata.get("rmlib", {})
    if "tiny_parameters" not in meta:
        raise KeyError(
            f"{pathlib.Path(notebook).name} declares no tiny test parameters: add "
            '"rmlib": {"tiny_parameters": {...}} to the notebook metadata ({} if the defaults are fast)'
        )
    tiny = meta["tiny_parameters"]
    if not isinstance(tiny, dict):
        raise TypeError(f"{pathlib.Path(notebook).name}: metadata.rmlib.tiny_parameters must be a dict")
    return dict(tiny)


