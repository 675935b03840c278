"""The docs name only code and files that exist: every ``rmlib.…`` dotted name resolves and every repository
path exists, in the tracked Markdown files, in the notebooks' markdown cells and in the docstrings and
comments of rmlib's, the tests' and the tools' Python files."""

import ast
import importlib
import io
import json
import pathlib
import re
import shutil
import subprocess
import tokenize

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
# ``rmlib.<module>.<name>``, not as the tail of another dotted name (``metadata.rmlib.after``) or a path (``x/rmlib.py``)
DOTTED = re.compile(r"(?<![\w./-])rmlib(?:\.[A-Za-z_]\w*)+")


def markdown_files() -> list[pathlib.Path]:
    git = shutil.which("git")
    if git and (ROOT / ".git").exists():
        out = subprocess.run([git, "ls-files", "*.md"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
        return [ROOT / line for line in out.splitlines() if (ROOT / line).is_file()]
    return sorted(p for p in ROOT.rglob("*.md") if not any(part.startswith((".", "_")) for part in p.parts))


def resolves(name: str) -> bool:
    """True when ``name`` is a module, or a module followed by attributes, that imports."""
    parts = name.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:cut]))
        except ModuleNotFoundError:
            continue
        try:
            for attr in parts[cut:]:
                obj = getattr(obj, attr)
        except AttributeError:
            return False
        return True
    return False


def python_prose(source: str) -> str:
    """The docstrings (module, class, function) and ``#`` comments of a Python file, one after another."""
    parts = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            parts.append(ast.get_docstring(node, clean=False) or "")
    parts += [tok.string for tok in tokenize.generate_tokens(io.StringIO(source).readline)
              if tok.type == tokenize.COMMENT]
    return "\n".join(parts)


def notebook_prose(text: str) -> str:
    """The markdown cells of a notebook (its code cells run, so their names are checked by running them)."""
    return "\n".join("".join(cell["source"]) for cell in json.loads(text)["cells"] if cell["cell_type"] == "markdown")


def prose_files() -> dict[str, str]:
    """The prose of the notebooks and of the Python files under rmlib/, tests/ and tools/, by repository path."""
    found = {}
    for path in sorted((ROOT / "notebooks").glob("*.ipynb")):
        found[str(path.relative_to(ROOT))] = notebook_prose(path.read_text(encoding="utf-8"))
    for folder in ("rmlib", "tests", "tools"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            found[str(path.relative_to(ROOT))] = python_prose(path.read_text(encoding="utf-8"))
    return found


def mentioned_names() -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    texts = {str(path.relative_to(ROOT)): path.read_text(encoding="utf-8") for path in markdown_files()}
    for where, text in {**texts, **prose_files()}.items():
        for name in DOTTED.findall(text):
            found.setdefault(name, []).append(where)
    return found


def test_the_docs_name_rmlib_objects():
    names = mentioned_names()
    # the scan finds what it should, in each kind of file
    assert {"rmlib.tables.store", "rmlib.book", "rmlib.bench.startup.model_parts"} <= set(names)
    assert {pathlib.Path(f).suffix for files in names.values() for f in files} == {".md", ".ipynb", ".py"}
    missing = {name: files for name, files in names.items() if not resolves(name)}
    assert missing == {}


@pytest.mark.parametrize("name, ok", [("rmlib.tables.store.score_vocabulary", True), ("rmlib.paths", True),
                                      ("rmlib.charts.enable", False), ("rmlib.tables.store.no_such", False)])
def test_the_check_can_fail(name, ok):
    assert resolves(name) is ok


def test_the_pattern_skips_paths_and_other_dotted_names():
    text = "`rmlib.paths.cache_dir`, `metadata.rmlib.after`, rmlib/engine/kernel.py, src/rmlib.egg"
    assert DOTTED.findall(text) == ["rmlib.paths.cache_dir"]


PATHS = re.compile(r"(?<![\w./-])((?:rmlib|tests|tools|notebooks|book|docs)/[\w./-]*\w)")
# In docstrings, comments and notebook markdown, only a path that is all of a literal is checked:
# ``tests/test_gcg.py`` or `rmlib/resources/claims/` (there a bare ``a/b`` is as often a ratio or a choice)
QUOTED_PATHS = re.compile(r"(?<!`)`{1,2}((?:rmlib|tests|tools|notebooks|book|docs)/[\w./-]*)`{1,2}(?!`)")
# Written by builds and runs, never committed; ``NN`` stands for a chapter number
GENERATED = ("book/chapters", "book/_vendor")


def absent_paths(names: list[str]) -> list[str]:
    return [name for name in names if not name.startswith(GENERATED) and "NN" not in name
            and not (ROOT / name).exists()]


def test_the_docs_name_files_that_exist():
    """Paths such as ``rmlib/engine/lite_llama.py`` or ``tests/test_book.py`` in the docs exist (folders too);
    paths under git-ignored build outputs (``book/chapters/``, ``book/_vendor/``) are not checked."""
    missing = {}
    for path in markdown_files():
        for name in absent_paths(PATHS.findall(path.read_text(encoding="utf-8"))):
            missing.setdefault(name, []).append(str(path.relative_to(ROOT)))
    assert missing == {}


def test_docstrings_comments_and_notebooks_name_files_that_exist():
    found, missing = set(), {}
    for where, text in prose_files().items():
        names = QUOTED_PATHS.findall(text)
        found.update(names)
        for name in absent_paths(names):
            missing.setdefault(name, []).append(where)
    # the scan finds what it should: in a docstring and a comment
    assert {"tests/test_gcg.py", "tools/vendor_js.py", "tests/test_browser.py"} <= found
    assert missing == {}


@pytest.mark.parametrize("text, absent", [
    ("guarded by ``tests/test_gcg.py``", []),
    ("guarded by ``tests/testgcg.py``", ["tests/testgcg.py"]),
    ("# see `tools/no_such_tool.py`", ["tools/no_such_tool.py"]),
    ("the pages under ``book/chapters/NN_x.ipynb`` and `book/_vendor/x.js`", []),
    ("a ratio tests/runs, ```tests/not_quoted.py```", []),
])
def test_the_path_check_can_fail(text, absent):
    assert absent_paths(QUOTED_PATHS.findall(text)) == absent
