"""The docs name only code that exists: every ``rmlib.…`` dotted name in a tracked Markdown file resolves."""

import importlib
import pathlib
import re
import shutil
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
# rmlib.a.b, not as the tail of another dotted name (``metadata.rmlib.after``) or a path (``x/rmlib.py``)
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


def mentioned_names() -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for path in markdown_files():
        for name in DOTTED.findall(path.read_text(encoding="utf-8")):
            found.setdefault(name, []).append(str(path.relative_to(ROOT)))
    return found


def test_the_docs_name_rmlib_objects():
    names = mentioned_names()
    assert {"rmlib.tables.store", "rmlib.book"} <= set(names)  # the scan finds what it should
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


def test_the_docs_name_files_that_exist():
    """Paths such as ``rmlib/engine/lite_llama.py`` or ``tests/test_book.py`` in the docs exist (folders too;
    ``NN`` stands for a chapter number);
    paths under git-ignored build outputs (``book/chapters/``, ``book/_vendor/``) are not checked."""
    generated = ("book/chapters", "book/_vendor")
    missing = {}
    for path in markdown_files():
        for name in PATHS.findall(path.read_text(encoding="utf-8")):
            if not name.startswith(generated) and "NN" not in name and not (ROOT / name).exists():
                missing.setdefault(name, []).append(str(path.relative_to(ROOT)))
    assert missing == {}
