"""Execute chapters with papermill and build the HTML with Jupyter Book 1."""

from __future__ import annotations

import contextlib
import json
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Mapping

from ..errors import RmlibError
from ..files import atomic_path
from .chapters import chapter_notebook, find_chapters, local_models, notebook_parameters, validate_parameters
from ..progress import quiet_environment
from .tags import tag_setup_cells
from .paths import BOOK_DIR, CHAPTERS_DIR, CONFIG, NOTEBOOKS_DIR, ROOT, TOC

#: Seconds a chapter cell may run before papermill gives up (None: no limit).
DEFAULT_CELL_TIMEOUT = None

#: The kernel's traffic is encrypted (CurveZMQ keys the kernel manager provisions) wherever the kernel
#: declares it can be, as ipykernel does; else it runs as before. Without it every chapter's kernel warns
#: that code and outputs cross local TCP in plain text.
KERNEL_MANAGER_CONFIG = {"KernelManager": {"transport_encryption": "auto"}}


# --------------------------------------------------------------------------- execution
def train_named_models(parameters: Mapping[str, object]) -> None:
    """Train each ``trained:`` RM the parameters name that is not in the cache yet (the chapter only loads it)."""
    specs = [s for s in local_models(parameters) if s.startswith("trained:")]
    if specs:
        from ..training.trained import ensure_trained

        for spec in specs:
            ensure_trained(spec)


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
    from traitlets.config import Config

    from ..viz.explorers import CHAPTER_ENV

    source = chapter_notebook(chapter, notebooks_dir)
    params = validate_parameters(source, parameters)
    train_named_models({**notebook_parameters(source), **params})
    output_dir = pathlib.Path(output_dir)
    output_dir.mkdir(parents=True, exist_ok=True)
    target = output_dir / source.name
    tmp = pathlib.Path(tempfile.mkdtemp(prefix=f"rmlib-{source.stem}-")) / source.name
    kwargs = {"execution_timeout": cell_timeout} if cell_timeout else {}
    # the kernel inherits these: no progress bar reaches a page; widgets know their chapter
    env = {**quiet_environment(), CHAPTER_ENV: source.name[:2] if source.name[:2].isdigit() else ""}
    try:
        with _environment(env):
            papermill.execute_notebook(
                str(source), str(tmp), parameters=params, kernel_name=kernel_name or _kernel_name(),
                progress_bar=False, log_output=log_output, cwd=str(source.parent),
                config=Config(KERNEL_MANAGER_CONFIG), **kwargs,
            )
    except BaseException as err:
        if isinstance(err, papermill.PapermillExecutionError):
            raise ChapterError(
                f"chapter {source.name} failed in cell {err.exec_count}: {err.ename}: {_first_line(err.evalue)}; "
                f"the last good {target} is kept; the failed run is in {tmp}"
            ) from err
        shutil.rmtree(tmp.parent, ignore_errors=True)  # interrupted or no kernel: nothing worth keeping
        raise
    _finish_page(tmp)
    with atomic_path(target) as staged:  # the page is replaced whole, or not at all
        shutil.copyfile(tmp, staged)
    shutil.rmtree(tmp.parent, ignore_errors=True)
    return target


@contextlib.contextmanager
def _environment(values: Mapping[str, str]):
    old = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def _finish_page(path: pathlib.Path) -> None:
    """Tag the executed chapter's set-up cells ``hide-input`` (:mod:`rmlib.book.tags`) and keep
    the static version of widgets that have one (:func:`prefer_static_widgets`)."""
    import nbformat

    nb = nbformat.read(str(path), as_version=4)
    tagged = tag_setup_cells(nb)
    if prefer_static_widgets(nb) or tagged:
        nbformat.write(nb, str(path))


WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
WIDGET_STATE = "application/vnd.jupyter.widget-state+json"


def prefer_static_widgets(nb) -> bool:
    """Drop the widget view of every output that also has ``text/html``; drop the saved widget
    state when no widget view is left. Returns whether ``nb`` changed.

    A built page has no kernel: a widget with a static version (e.g.
    :func:`rmlib.viz.explorers.explorer`) is shown as that HTML, and a page
    without widget state does not load the widget bundle (myst-nb adds it only
    where state is saved).
    """
    changed, views_left = False, False
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            data = out.get("data") or {}
            if WIDGET_VIEW in data and "text/html" in data:
                del data[WIDGET_VIEW]
                changed = True
            elif WIDGET_VIEW in data:
                views_left = True
    widgets_meta = nb.metadata.get("widgets") or {}
    if not views_left and WIDGET_STATE in widgets_meta:
        del widgets_meta[WIDGET_STATE]
        if not widgets_meta:
            nb.metadata.pop("widgets", None)
        changed = True
    return changed


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
    *, log_output: bool = False, jobs: int | None = None,
) -> list[pathlib.Path]:
    """Execute every chapter on its default parameters; drop stale outputs of removed chapters.

    ``jobs`` chapters at once (default :func:`rmlib.book.parallel.default_jobs`: 2 on a machine with
    two cores or more), each in its own process after the models it needs are prepared
    (:mod:`rmlib.book.parallel`); ``jobs=1`` runs them one after another in this process.
    """
    from . import parallel

    chapters = find_chapters(notebooks_dir)
    output_dir = pathlib.Path(output_dir)
    drop_removed_chapters(output_dir, {p.name for p in chapters.values()})
    jobs = parallel.default_jobs() if jobs is None else parallel.check_jobs(jobs)
    if jobs == 1 or pathlib.Path(notebooks_dir).resolve() != NOTEBOOKS_DIR.resolve() \
            or output_dir.resolve() != CHAPTERS_DIR.resolve():
        done = []
        for key, path in chapters.items():
            print(f"[rmlib.book] executing chapter {key}: {path.name}", flush=True)
            done.append(run_chapter(path, None, output_dir=output_dir, log_output=log_output))
        return done
    tasks = parallel.plan(chapters, _previous_seconds(output_dir))
    print(f"[rmlib.book] {len(chapters)} chapters, {jobs} at a time; models prepared first: "
          f"{', '.join(n for n in tasks if n.startswith(parallel.PREPARE)) or 'none'}", flush=True)
    env = {**parallel.worker_environment(jobs), **quiet_environment()}
    parallel.run_tasks(tasks, jobs, env=env, log=lambda line: print(line, flush=True))
    return [output_dir / p.name for p in chapters.values()]


def drop_removed_chapters(output_dir: pathlib.Path | str, wanted: set[str]) -> list[pathlib.Path]:
    """Remove from ``output_dir`` the executed pages of chapters whose source is gone (not in ``wanted``):
    only a notebook papermill wrote from a chapter of that name (its metadata names the source). Any other
    file there, a notebook of the user's own included, is kept. Returns what was removed."""
    removed = []
    for old in sorted(pathlib.Path(output_dir).glob("*.ipynb")):
        if old.name in wanted or old.is_symlink() or not old.is_file():
            continue
        try:
            meta = json.loads(old.read_text(encoding="utf-8")).get("metadata") or {}
            source = (meta.get("papermill") or {}).get("input_path")
        except (OSError, ValueError, AttributeError):
            continue
        if isinstance(source, str) and pathlib.PurePath(source).name == old.name:
            old.unlink()
            removed.append(old)
    return removed


def _previous_seconds(output_dir: pathlib.Path) -> dict[str, float]:
    """Each chapter's time in the previous build (its executed notebook), to start the longest first."""
    from .timings import chapter_timings

    try:
        return {r["chapter"]: r["seconds"] for r in chapter_timings(output_dir)}
    except (FileNotFoundError, ValueError):
        return {}


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


