"""Execute chapters with papermill and build the HTML with Jupyter Book 1."""

from __future__ import annotations

import os
import pathlib
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Mapping

from ..errors import RmlibError
from .chapters import chapter_notebook, find_chapters, validate_parameters
from .paths import BOOK_DIR, CHAPTERS_DIR, CONFIG, NOTEBOOKS_DIR, ROOT, TOC

#: Seconds a chapter cell may run before papermill gives up (None: no limit).
DEFAULT_CELL_TIMEOUT = None


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
    name, only when every cell ran: execution goes to a temporary file beside
    outside the book, moved into place on success, so a failed run leaves the
    last good executed chapter in place (the failed notebook stays in the
    temporary folder the error names, to look at). The kernel's working directory is the
    source notebook's folder. Raises :class:`ParameterError` before starting a
    kernel if a parameter is wrong, and :class:`ChapterError` (one line: the
    cell's error) if a cell fails. Returns the executed notebook's path.
    """
    import papermill

    source = chapter_notebook(chapter, notebooks_dir)
    params = validate_parameters(source, parameters)
    output_dir = pathlib.Path(output_dir)
    output_dir.mkdir(parents=True, exist_ok=True)
    target = output_dir / source.name
    tmp = pathlib.Path(tempfile.mkdtemp(prefix=f"rmlib-{source.stem}-")) / source.name
    kwargs = {"execution_timeout": cell_timeout} if cell_timeout else {}
    try:
        papermill.execute_notebook(
            str(source), str(tmp), parameters=params, kernel_name=kernel_name or _kernel_name(),
            progress_bar=False, log_output=log_output, cwd=str(source.parent), **kwargs,
        )
    except BaseException as err:
        if isinstance(err, papermill.PapermillExecutionError):
            raise ChapterError(
                f"chapter {source.name} failed in cell {err.exec_count}: {err.ename}: {_first_line(err.evalue)}; "
                f"the last good {target} is kept; the failed run is in {tmp}"
            ) from err
        raise
    staged = output_dir / f".{source.name}.new"  # same folder: the rename is atomic
    shutil.copyfile(tmp, staged)
    os.replace(staged, target)
    shutil.rmtree(tmp.parent, ignore_errors=True)
    return target


class ChapterError(RmlibError, RuntimeError):
    """A chapter's cell failed in the kernel; the last good executed chapter is kept."""


def _first_line(text: str) -> str:
    import re

    text = re.sub(r"\x1b\[[0-9;]*m", "", str(text or "")).strip()
    return text.splitlines()[0][:300] if text else "(no message)"


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


