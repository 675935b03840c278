"""Command line of the book: execute the book's chapters with papermill and build it with Jupyter Book 1.

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
    python -m rmlib.book all [-j N]                  # execute every chapter (N at once), then build
    python -m rmlib.book prepare SPEC...             # de-quantize / train a model chapters load
    python -m rmlib.book build                       # build only (incremental)
    python -m rmlib.book timings [DIR]               # CPU time per executed chapter (markdown table)

Parameters are checked before anything heavy runs: the name must exist in the
chapter's ``parameters`` cell, the value must have the default's type
(int, float, str, bool, list; a ``-p`` value is read as YAML unless the
default is a string), prompts must not be empty, and model specs go through
``rmlib.engine.models.check_model_spec``.

Tiny parameters (for ``tests/test_book.py``) live in each notebook's metadata:
``metadata["rmlib"]["tiny_parameters"]``, a dict of parameter overrides that
make the chapter run quickly on the CPU (see :func:`tiny_parameters`).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from .chapters import ParameterError, chapter_notebook, find_chapters, notebook_parameters, validate_parameters
from ..options import OneLineParser
from ..errors import RmlibError
from .execute import build_book, execute_all, run_chapter
from .paths import ROOT


# --------------------------------------------------------------------------- CLI
def _parse_p(pairs: Sequence[Sequence[str]] | None) -> dict[str, str]:
    out: dict[str, str] = {}
    for name, value in pairs or []:
        if name in out:
            raise ParameterError(f"parameter {name!r} given twice")
        out[name] = value
    return out


#: The flags of ``chapter`` besides ``-p``: never read as a parameter's value.
CHAPTER_FLAGS = ("--no-build", "--log-output", "-h", "--help")


def _take_p(argv: list[str]) -> tuple[list[str], list[list[str]]]:
    """``-p NAME VALUE`` triples taken out before argparse, which would read a VALUE starting with '-'
    (``-p vocab_slice -5:10``) as an option; the rest is left for the parser."""
    rest, pairs, i = [], [], 0
    while i < len(argv):
        if argv[i] in ("-p", "--parameter") and i + 2 < len(argv) and argv[i + 2] not in CHAPTER_FLAGS:
            pairs.append(argv[i + 1:i + 3])
            i += 3
        else:
            rest.append(argv[i])
            i += 1
    return rest, pairs


def main_chapter(argv: Sequence[str]) -> int:
    """``chapter NN [-p name value]... [--no-build]``: validate, execute, rebuild."""
    ap = OneLineParser(prog="python -m rmlib.book chapter", description=main_chapter.__doc__)
    ap.add_argument("chapter", help="chapter number, e.g. 01, or a path to a notebook")
    ap.add_argument("-p", "--parameter", nargs=2, action="append", metavar=("NAME", "VALUE"),
                    help="override a parameter (repeatable); VALUE is YAML unless the default is a string")
    ap.add_argument("--no-build", action="store_true", help="only execute, do not rebuild the book")
    ap.add_argument("--log-output", action="store_true", help="stream the notebook's output")
    argv, pairs = _take_p(list(argv))
    args = ap.parse_args(argv)
    try:
        params = _parse_p(pairs + (args.parameter or []))
        source = chapter_notebook(args.chapter)
        validate_parameters(source, params)  # fail fast, before papermill starts a kernel
        out = run_chapter(source, params, log_output=args.log_output)
    except (RmlibError, ValueError, FileNotFoundError, KeyError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2 if isinstance(err, (ValueError, KeyError)) else 1
    print(f"[rmlib.book] wrote {out.relative_to(ROOT) if out.is_relative_to(ROOT) else out}")
    if not args.no_build:
        build_book()
        print(f"[rmlib.book] built {ROOT / '_build' / 'html' / 'chapters' / (out.stem + '.html')}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``python -m rmlib.book``."""
    argv = list(sys.argv[1:] if argv is None else argv)
    usage = "usage: python -m rmlib.book {list,chapter,all,prepare,build,timings} ..."
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
            ap = OneLineParser(prog="python -m rmlib.book all", description="execute every chapter, "
                                         "then build the book")
            ap.add_argument("-j", "--jobs", default=None, help="chapters at once (default: $RMLIB_BOOK_JOBS, else 2 "
                            "on a machine with two cores or more); 1: one after another")
            ap.add_argument("--log-output", action="store_true", help="stream the notebooks' output (with -j 1)")
            args = ap.parse_args(rest)
            execute_all(log_output=args.log_output, jobs=args.jobs)
            build_book()
            return 0
        if cmd == "prepare":
            from ..engine.models import check_model_spec, prepare_checkpoint
            from ..training.trained import ensure_trained

            if not rest:
                print("usage: python -m rmlib.book prepare SPEC [SPEC ...]  (embedded models, trained:<base> RMs)",
                      file=sys.stderr)
                return 2
            for spec in rest:
                folder = ensure_trained(spec) if check_model_spec(spec) == "trained" else prepare_checkpoint(spec)
                print(f"[rmlib.book] {spec}: {folder}", flush=True)
            return 0
        if cmd == "timings":
            from .paths import CHAPTERS_DIR
            from .timings import chapter_timings, timings_table

            if len(rest) > 1:
                print("usage: python -m rmlib.book timings [DIR]  (DIR: executed chapters, default book/chapters)",
                      file=sys.stderr)
                return 2
            print(timings_table(chapter_timings(rest[0] if rest else CHAPTERS_DIR)))
            return 0
        if cmd == "build":
            build_book(fresh="--fresh" in rest)
            return 0
    except (RmlibError, FileNotFoundError, RuntimeError, ValueError) as err:  # TaskError is an RmlibError
        print(f"error: {err}", file=sys.stderr)
        return 1
    print(f"error: unknown command {cmd!r}; {usage}", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
