"""Cell tags that Jupyter Book reads, set by rule on each executed chapter.

Readers see the story's calls; they need not read the set-up. A code cell
whose first statement is an import (the chapter's set-up cell: imports and
parameter checks) gets ``hide-input``: its code folds behind a "Show code"
button, nothing is lost. So does a long cell (more than :data:`LONG_CELL`
lines, the ``parameters`` cell aside): its output stays on the page, the
computation behind it one click away, so the page stays one sitting long.
Authors can still tag any cell themselves in the notebook.
"""

from __future__ import annotations

import ast

HIDE = "hide-input"
#: Code lines a cell may show; a longer cell's code folds (its output stays).
LONG_CELL = 10
#: Tags that already say how a cell's code shows.
_SHOWN_AS = {HIDE, "remove-input", "hide-cell", "remove-cell", "parameters", "injected-parameters"}


def is_setup_cell(source: str) -> bool:
    """True for a cell whose first statement is an import (comments and blank lines aside)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return False
    return bool(tree.body) and isinstance(tree.body[0], (ast.Import, ast.ImportFrom))


def is_long_cell(source: str, limit: int = LONG_CELL) -> bool:
    """True for code of more than ``limit`` lines (blank lines at the ends aside)."""
    return len(source.strip("\n").splitlines()) > limit


def tag_setup_cells(nb) -> int:
    """Add ``hide-input`` to the import cells and the long cells (:func:`is_long_cell`) of an
    nbformat notebook, except where a tag already says how the code shows (``parameters``,
    ``remove-input``, ...); return how many were tagged."""
    tagged = 0
    for cell in nb.cells:
        if cell.cell_type != "code" or not (is_setup_cell(cell.source) or is_long_cell(cell.source)):
            continue
        tags = cell.metadata.setdefault("tags", [])
        if not _SHOWN_AS & set(tags):
            tags.append(HIDE)
            tagged += 1
    return tagged
