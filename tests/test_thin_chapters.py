"""The chapters stay thin: no functions or classes in notebooks, imports in one cell, little code."""

import ast
import json

import pytest

from rmlib.book.paths import NOTEBOOKS_DIR

NOTEBOOKS = sorted(NOTEBOOKS_DIR.glob("[0-9][0-9]_*.ipynb"))
MAX_LINES = 750  # code-cell lines over all chapters


def _code_cells(path):
    nb = json.loads(path.read_text(encoding="utf-8"))
    return [(i, "".join(c["source"])) for i, c in enumerate(nb["cells"]) if c["cell_type"] == "code"]


def test_there_are_chapters():
    assert len(NOTEBOOKS) >= 7


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_no_def_or_class_and_imports_in_one_cell(path):
    cells = _code_cells(path)
    import_cells = set()
    for i, src in cells:
        tree = ast.parse(src)
        defs = [n.name for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))]
        assert not defs, f"{path.name} cell {i} defines {defs}: move them into rmlib"
        if any(isinstance(n, (ast.Import, ast.ImportFrom)) for n in ast.walk(tree)):
            import_cells.add(i)
    assert len(import_cells) == 1, f"{path.name}: imports in cells {sorted(import_cells)}; keep them in one cell"


def test_all_chapter_code_is_short():
    total = sum(len(src.splitlines()) for path in NOTEBOOKS for _, src in _code_cells(path))
    assert total <= MAX_LINES, f"{total} lines of code in the chapters; the limit is {MAX_LINES}"
