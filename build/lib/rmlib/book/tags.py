"""Cell tags that Jupyter Book reads, set by rule on each executed chapter.

Readers see the story's calls; they need not read the set-up. A code cell
whose first statement is an import (the chapter's set-up cell: imports and
parameter checks) gets ``hide-input``: its code folds behind a "Show code"
button, nothing is lost.
Authors can still tag any cell themselves in the notebook.
"""

from __future__ import annotations

import ast

HIDE = "hide-input"


def is_setup_cell(source: str) -> bool:
    """True for a cell whose first statement is an import (comments and blank lines aside)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return False
    return bool(tree.body) and isinstance(tree.body[0], (ast.Import, ast.ImportFrom))


def tag_setup_cells(nb) -> int:
    """Add ``hide-input`` to the import cells of an nbformat notebook; return how many were tagged."""
    tagged = 0
    for cell in nb.cells:
        if cell.cell_type != "code" or not is_setup_cell(cell.source):
            continue
        tags = cell.metadata.setdefault("tags", [])
        if HIDE not in tags and "remove-input" not in tags:
            tags.append(HIDE)
            tagged += 1
    return tagged
