"""The package layout shows the data flow: module-level imports only point down the layers.

engine (models, frames, kernel, scorers, search) <- tables (store, results, datasets)
<- stats <- training <- viz <- book; the base layer (errors, options, paths, prompts, registry,
progress, resources) imports no subpackage. A function may import a later layer at run
time (``engine.models`` builds a ``trained:<base>`` model with ``training``), never at
import time.
"""

import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parents[1] / "rmlib"
BASE = ("errors", "files", "options", "paths", "prompts", "progress", "registry", "resources")
LAYERS = [*BASE, "engine", "tables", "stats", "training", "caches", "viz", "book", "bench", "cli", "__main__"]
SHIMS = ("scoring", "store", "gcg", "datasets")  # re-exports kept for old entry points
IMPORT = re.compile(r"^from\s+(\.+)(\w*)|^from rmlib\.(\w+)|^import rmlib\.(\w+)", re.M)


def top_level_imports(root=ROOT):
    for path in root.rglob("*.py"):
        parts = path.relative_to(root).parts
        here = parts[0] if len(parts) > 1 else path.stem
        for m in IMPORT.finditer(path.read_text(encoding="utf-8")):
            if m.group(1):  # relative: only imports that leave the subpackage count
                depth = len(m.group(1))
                target = m.group(2) if (len(parts) > 1 and depth == 2) or (len(parts) == 1 and depth == 1) else None
            else:
                target = m.group(3) or m.group(4)
            if target and target != here:
                yield "/".join(parts), here, target


def test_every_subpackage_has_a_layer():
    names = {p.name for p in ROOT.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    names |= {p.stem for p in ROOT.glob("*.py") if p.stem != "__init__"}
    assert names - set(LAYERS) - set(SHIMS) == set()


def test_imports_run_one_way():
    rank = {name: i for i, name in enumerate(LAYERS)}
    backward = [f"{where}: {here} -> {target}" for where, here, target in top_level_imports()
                if here in rank and target in rank and rank[target] > rank[here]
                and not (here in BASE and target in BASE)]
    assert backward == []


def test_the_check_finds_a_backward_import(tmp_path):
    """The test above can fail: a stats module importing viz at module level is caught."""
    fake = tmp_path / "rmlib"
    (fake / "stats").mkdir(parents=True)
    (fake / "stats" / "__init__.py").write_text("")
    (fake / "stats" / "bad.py").write_text("from ..viz import charts\n")
    found = [(here, target) for _, here, target in top_level_imports(fake)]
    assert ("stats", "viz") in found
