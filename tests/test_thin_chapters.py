"""The chapters stay thin and readable: the page shows the steps, the library holds the helpers.

What is checked is what a line cap only approximated: no general helper written on the page
(no def, class, or lambda given a name; no loop that accumulates rows or results, which a
library function or one comprehension should build), imports in one cell, and code lines a
reader can read in the page's column without scrolling sideways.
"""

import ast
import json

import pytest

from rmlib.book.paths import NOTEBOOKS_DIR

NOTEBOOKS = sorted(NOTEBOOKS_DIR.glob("[0-9][0-9]_*.ipynb"))
#: Characters in one code line: a rendered code cell shows about this many at 1280 px without scrolling.
MAX_LINE = 100
#: Calls that grow a container, and so mark a loop that builds a table or a list of results.
GROWING_CALLS = {"append", "extend", "insert", "update", "add", "setdefault"}


def _code_cells(path):
    nb = json.loads(path.read_text(encoding="utf-8"))
    return [(i, "".join(c["source"])) for i, c in enumerate(nb["cells"]) if c["cell_type"] == "code"]


def helpers(src: str) -> list[str]:
    """What in one cell's code is a general helper written on the page."""
    found = []
    for node in ast.walk(ast.parse(src)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            found.append(f"line {node.lineno}: defines {node.name}")
        elif isinstance(node, (ast.Assign, ast.AnnAssign)) and isinstance(node.value, ast.Lambda):
            found.append(f"line {node.lineno}: names a lambda")
        elif isinstance(node, (ast.For, ast.AsyncFor, ast.While)):
            for inner in ast.walk(node):
                grows = (isinstance(inner, ast.Call) and isinstance(inner.func, ast.Attribute)
                         and inner.func.attr in GROWING_CALLS)
                stores = (isinstance(inner, (ast.Assign, ast.AugAssign))
                          and any(isinstance(t, ast.Subscript) for t in
                                  (inner.targets if isinstance(inner, ast.Assign) else [inner.target])))
                adds = isinstance(inner, ast.AugAssign) and isinstance(inner.target, ast.Name)
                if grows or stores or adds:
                    found.append(f"line {node.lineno}: a loop that accumulates results "
                                 f"({ast.unparse(inner).splitlines()[0][:60]})")
                    break
    return found


def long_lines(src: str, limit: int = MAX_LINE) -> list[str]:
    return [f"line {n} has {len(line)} characters" for n, line in enumerate(src.splitlines(), 1)
            if len(line) > limit]


def test_there_are_chapters():
    assert len(NOTEBOOKS) >= 7


def test_helper_check_finds_what_it_guards():
    """The check itself, on code written to break each rule and on code that keeps them."""
    assert helpers("def f(x):\n    return x\n") == ["line 1: defines f"]
    assert helpers("class A:\n    pass\n") == ["line 1: defines A"]
    assert helpers("f = lambda x: x + 1\n") == ["line 1: names a lambda"]
    assert helpers("rows = []\nfor m in ms:\n    rows.append({'m': m})\n")[0].startswith(
        "line 2: a loop that accumulates results (rows.append")
    assert helpers("for k in ks:\n    out[k] = f(k)\n")[0].startswith("line 1: a loop that accumulates")
    assert helpers("while x:\n    total += 1\n")[0].startswith("line 1: a loop that accumulates")
    # what a thin chapter does: call the library, show each result, sort with a key lambda
    assert helpers("for m in ms:\n    display(table(m))\n"
                   "t = sorted(xs, key=lambda x: -x)\nd = {k: f(k) for k in ks}\n") == []
    assert long_lines("x = 1\n" + "y" * 101 + "\n") == ["line 2 has 101 characters"]
    assert long_lines("y" * 100) == []


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_no_helpers_and_imports_in_one_cell(path):
    import_cells = set()
    problems = []
    for i, src in _code_cells(path):
        problems += [f"cell {i}, {h}" for h in helpers(src)]
        if any(isinstance(n, (ast.Import, ast.ImportFrom)) for n in ast.walk(ast.parse(src))):
            import_cells.add(i)
    assert not problems, f"{path.name}: move these into rmlib (a tested function):\n  " + "\n  ".join(problems)
    assert len(import_cells) == 1, f"{path.name}: imports in cells {sorted(import_cells)}; keep them in one cell"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_code_lines_fit_the_column(path):
    problems = [f"cell {i}, {p}" for i, src in _code_cells(path) for p in long_lines(src)]
    assert not problems, (f"{path.name}: code lines over {MAX_LINE} characters scroll sideways in the page; "
                          "break them:\n  " + "\n  ".join(problems))
