"""The book: chapter discovery and parameters (``chapters``), papermill execution and the
Jupyter Book build (``execute``), the Sphinx extension (``sphinx_ext``), the command line
(``python -m rmlib.book``)."""

from .chapters import (ParameterError, chapter_notebook, find_chapters, notebook_parameters,
                       tiny_parameters, validate_parameters)
from .execute import build_book, execute_all, run_chapter
from .paths import BOOK_DIR, CHAPTERS_DIR, NOTEBOOKS_DIR, ROOT

__all__ = ["ParameterError", "find_chapters", "chapter_notebook", "notebook_parameters", "validate_parameters",
           "tiny_parameters", "run_chapter", "execute_all", "build_book", "ROOT", "BOOK_DIR", "CHAPTERS_DIR",
           "NOTEBOOKS_DIR"]
