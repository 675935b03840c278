"""Execute the book's chapters with papermill and build it with Jupyter Book 1.

Layout
------
- ``notebooks/NN_name.ipynb``: chapter sources (NN = two digits; 90-99 are the
  appendix). Each has a cell tagged ``parameters`` holding its defaults.
- ``book/``: the Sphinx source root (``intro.md``, ``_static/rmlib.css``);
  ``book/chapters/`` receives the executed notebooks (gitignored);
  ``book/_vendor/`` the vendored JavaScript (gitignored, written by
  ``tools/vendor_js.py``, served as ``_static/`` by Sphinx).
- ``_config.yml``, ``_toc.yml`` at the repository root, passed with
  ``--config``/``--toc``; the HTML lands in ``_build/html``.

Command line (also ``make book`` / ``make chapter``)::

    python -m rmlib.book list                       # chapters and their parameters
    python -m rmlib.book chapter 01 -p prompt "What is the best food?" [--no-build]
    python -m rmlib.book all                         # execute every chapter, then build
    python -m rmlib.book build                       # build only (incremental)

Parameters are checked before anything heavy runs: the name must exist in the
chapter's ``parameters`` cell, the value must have the default's type
(int, float, str, bool, list; a ``-p`` value is read as YAML unless the
default is a string), prompts must not be empty, and model specs go through
``rmlib.models.check_model_spec``.

Tiny parameters (for ``tests/test_book.py``) live in each notebook's metadata:
``metadata["rmlib"]["tiny_parameters"]``, a dict of parameter overrides that
make the chapter run in seconds on the CPU (see :func:`tiny_parameters`).
"""

from __future__ import annotations

import argparse
import ast
import os
import pathlib
import re
import subprocess
import sys
from collections.abc import Mapping, Sequence

ROOT = pathlib.Path(__file__).resolve().parents[1]
NOTEBOOKS_DIR = ROOT / "notebooks"
BOOK_DIR = ROOT / "book"
CHAPTERS_DIR = BOOK_DIR / "chapters"
CONFIG = ROOT / "_config.yml"
TOC = ROOT / "_toc.yml"
VENDOR_DIR = BOOK_DIR / "_vendor"
CHAPTER_RE = re.compile(r"^(\d\d)_[A-Za-z0-9_\-]+\.ipynb$")
#: Parameter names whose values are prompts (must be non-empty strings).
PROMPT_NAMES = ("prompt", "prompts")
#: Seconds a chapter cell may run before papermill gives up (None: no limit).
DEFAULT_CELL_TIMEOUT = None

__all__ = [
    "ParameterError", "find_chapters", "chapter_notebook", "notebook_parameters",
    "validate_parameters", "tiny_parameters", "run_chapter", "execute_all", "build_book",
    "main", "main_chapter",
]


class ParameterError(ValueError):
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
            raise ValueError(
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
        raise ValueError(f"chapter must be a number like 01 or a path to an .ipynb, got {chapter!r}")
    key = f"{int(text):02d}"
    chapters = find_chapters(notebooks_dir)
    if key not in chapters:
        have = ", ".join(chapters) or "none"
        raise ValueError(f"no chapter {key} in {notebooks_dir} (chapters: {have})")
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
                    raise ValueError(
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


def _check_models(name: str, value: object) -> None:
    try:
        from rmlib.models import check_model_spec
    except ImportError:  # the models module is not there yet: nothing to check against
        return
    specs = value if isinstance(value, (list, tuple)) else [value]
    for spec in specs:
        if not isinstance(spec, str) or not spec.strip():
            raise ParameterError(f"parameter {name!r}: model spec must be a non-empty string, got {spec!r}")
        try:
            check_model_spec(spec)
        except ValueError as err:
            raise ParameterError(f"parameter {name!r}: {err}") from None


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
        out[name] = value
    return out


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


# --------------------------------------------------------------------------- execution
def run_chapter(
    chapter: str | int | os.PathLike,
    parameters: Mapping[str, object] | None = None,
    *,
    notebooks_dir: pathlib.Path | str = NOTEBOOKS_DIR,
    output_dir: pathlib.Path | str = CHAPTERS_DIR,
    kernel_name: str | None = None,
    cell_timeout: int | None = DEFAULT_CELL_TIMEOUT,
    log_output: bool = False,
) -> pathlib.Path:
    """Validate ``parameters``, then execute the chapter with papermill.

    The executed notebook is written to ``output_dir`` under the source's file
    name; the kernel's working directory is the source notebook's folder.
    Raises :class:`ParameterError` before starting a kernel if a parameter is
    wrong, and papermill's ``PapermillExecutionError`` if a cell fails.
    Returns the executed notebook's path.
    """
    import papermill

    source = chapter_notebook(chapter, notebooks_dir)
    params = validate_parameters(source, parameters)
    output_dir = pathlib.Path(output_dir)
    output_dir.mkdir(parents=True, exist_ok=True)
    target = output_dir / source.name
    kwargs = {"execution_timeout": cell_timeout} if cell_timeout else {}
    papermill.execute_notebook(
        str(source), str(target), parameters=params, kernel_name=kernel_name or _kernel_name(),
        progress_bar=False, log_output=log_output, cwd=str(source.parent), **kwargs,
    )
    return target


def _kernel_name() -> str:
    """``python3``: with ipykernel installed in this interpreter, jupyter_client
    maps it to ``sys.executable`` (the project venv)."""
    return "python3"


def execute_all(
    notebooks_dir: pathlib.Path | str = NOTEBOOKS_DIR, output_dir: pathlib.Path | str = CHAPTERS_DIR,
    *, log_output: bool = False,
) -> list[pathlib.Path]:
    """Execute every chapter on its default parameters; drop stale outputs of removed chapters."""
    chapters = find_chapters(notebooks_dir)
    output_dir = pathlib.Path(output_dir)
    if output_dir.is_dir():
        wanted = {p.name for p in chapters.values()}
        for old in output_dir.glob("*.ipynb"):
            if old.name not in wanted:
                old.unlink()
    done = []
    for key, path in chapters.items():
        print(f"[rmlib.book] executing chapter {key}: {path.name}", flush=True)
        done.append(run_chapter(path, None, output_dir=output_dir, log_output=log_output))
    return done


# --------------------------------------------------------------------------- build
def build_book(
    source_dir: pathlib.Path | str = BOOK_DIR,
    *,
    config: pathlib.Path | str = CONFIG,
    toc: pathlib.Path | str = TOC,
    output_dir: pathlib.Path | str = ROOT,
    strict: bool = True,
    fresh: bool = False,
    quiet: bool = True,
) -> pathlib.Path:
    """Build the HTML book with Jupyter Book 1; return ``<output_dir>/_build/html``.

    ``strict`` turns warnings into errors (``-W -n --keep-going``). Sphinx is
    incremental: only changed pages are re-read unless ``fresh``. The vendored
    JavaScript must exist (``make vendor``); a missing bundle is an error
    because the pages would silently lack their charts.
    """
    source_dir = pathlib.Path(source_dir)
    bundle = source_dir / "_vendor" / "rmlib-vega.js"
    if not bundle.is_file():
        raise FileNotFoundError(f"{bundle} is missing: run `make vendor` (python tools/vendor_js.py) first")
    cmd = [
        sys.executable, "-c", "from jupyter_book.cli.main import main; main()",
        "build", str(source_dir), "--config", str(config), "--toc", str(toc),
        "--path-output", str(output_dir),
    ]
    if strict:
        cmd += ["-W", "-n", "--keep-going"]
    if fresh:
        cmd.append("--all")
    if quiet:
        cmd.append("-q")
    proc = subprocess.run(cmd, cwd=str(ROOT))
    if proc.returncode != 0:
        raise RuntimeError(f"jupyter-book build failed (exit {proc.returncode}); see the messages above")
    return pathlib.Path(output_dir) / "_build" / "html"


# --------------------------------------------------------------------------- Sphinx extension
#: Vendored folders whose scripts are loaded by their own loaders, not on every page.
_VENDOR_SUBDIRS = ("mathjax/", "jupyter-widgets/")
_NETWORK_TAG = re.compile(
    r"<(?:script|link|iframe|img|source|embed)\b[^>]*?\b(?:src|href)\s*=\s*[\"']?(?:https?:)?//",
    re.IGNORECASE,
)


def _entry_name(entry: object) -> str:
    return entry[0] if isinstance(entry, (tuple, list)) else str(entry)


def _drop_vendored_assets(app, config) -> None:
    """Jupyter Book adds every .js/.css under html_static_path to every page;
    keep the vendored libraries (MathJax, html-manager) out of that list."""
    for key in ("html_js_files", "html_css_files"):
        entries = getattr(config, key)
        setattr(config, key, [e for e in entries if not _entry_name(e).startswith(_VENDOR_SUBDIRS)])


def _is_thebe_asset(asset: object) -> bool:
    name = getattr(asset, "filename", asset)
    body = getattr(asset, "attributes", {}).get("body", "") if hasattr(asset, "attributes") else ""
    return (isinstance(name, str) and name.endswith("sphinx-thebe.js")) or "THEBE_JS_URL" in (body or "")


def _forbid_network_assets(app, pagename, templatename, context, doctree) -> None:
    """Fail the build if a page would load a script, style or frame from another host.

    Also drops sphinx-thebe's scripts (Jupyter Book loads the extension
    always): launch buttons are off in this book, and its inline config is
    added twice per page (a page error) and names a CDN.
    """
    from sphinx.errors import ExtensionError

    if "script_files" in context:
        context["script_files"] = [a for a in context["script_files"] if not _is_thebe_asset(a)]
    for key in ("script_files", "css_files"):
        for asset in context.get(key, []):
            name = getattr(asset, "filename", asset)
            if isinstance(name, str) and ("://" in name or name.startswith("//")):
                raise ExtensionError(
                    f"page {pagename!r} would load {name} from the network; vendor it (tools/vendor_js.py)"
                )
    match = _NETWORK_TAG.search(context.get("body", "") or "")
    if match:
        raise ExtensionError(
            f"page {pagename!r} has an element that loads from the network: {match.group(0)[:120]!r}; "
            "in notebooks use rmlib.charts.enable() for Altair charts and rmlib.html.table for tables"
        )


def setup(app) -> dict:
    """Sphinx extension (``extra_extensions: [rmlib.book]`` in ``_config.yml``)."""
    app.connect("config-inited", _drop_vendored_assets, priority=900)
    app.connect("html-page-context", _forbid_network_assets, priority=900)
    return {"parallel_read_safe": True, "parallel_write_safe": True}


# --------------------------------------------------------------------------- CLI
def _parse_p(pairs: Sequence[Sequence[str]] | None) -> dict[str, str]:
    out: dict[str, str] = {}
    for name, value in pairs or []:
        if name in out:
            raise ParameterError(f"parameter {name!r} given twice")
        out[name] = value
    return out


def main_chapter(argv: Sequence[str]) -> int:
    """``chapter NN [-p name value]... [--no-build]``: validate, execute, rebuild."""
    ap = argparse.ArgumentParser(prog="python -m rmlib.book chapter", description=main_chapter.__doc__)
    ap.add_argument("chapter", help="chapter number, e.g. 01, or a path to a notebook")
    ap.add_argument("-p", "--parameter", nargs=2, action="append", metavar=("NAME", "VALUE"),
                    help="override a parameter (repeatable); VALUE is YAML unless the default is a string")
    ap.add_argument("--no-build", action="store_true", help="only execute, do not rebuild the book")
    ap.add_argument("--log-output", action="store_true", help="stream the notebook's output")
    args = ap.parse_args(list(argv))
    try:
        params = _parse_p(args.parameter)
        source = chapter_notebook(args.chapter)
        validate_parameters(source, params)  # fail fast, before papermill starts a kernel
        out = run_chapter(source, params, log_output=args.log_output)
    except (ParameterError, ValueError, FileNotFoundError, KeyError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    print(f"[rmlib.book] wrote {out.relative_to(ROOT) if out.is_relative_to(ROOT) else out}")
    if not args.no_build:
        build_book()
        print(f"[rmlib.book] built {ROOT / '_build' / 'html' / 'chapters' / (out.stem + '.html')}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``python -m rmlib.book``."""
    argv = list(sys.argv[1:] if argv is None else argv)
    usage = "usage: python -m rmlib.book {list,chapter,all,build} ..."
    if not argv or argv[0] in ("-h", "--help"):
        print(usage + "\n\n" + __doc__)
        return 0 if argv else 2
    cmd, rest = argv[0], argv[1:]
    try:
        if cmd == "chapter":
            return main_chapter(rest)
        if cmd == "list":
            for key, path in find_chapters().items():
                params = ", ".join(f"{k}={v!r}" for k, v in notebook_parameters(path).items())
                print(f"{key}  {path.name}  {params}")
            return 0
        if cmd == "all":
            execute_all(log_output="--log-output" in rest)
            build_book()
            return 0
        if cmd == "build":
            build_book(fresh="--fresh" in rest)
            return 0
    except (ParameterError, FileNotFoundError, RuntimeError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    print(f"error: unknown command {cmd!r}; {usage}", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
