"""The package layout shows the data flow: every import points down the layers, and no module
imports itself back through others.

engine (models, frames, kernel, scorers, search) <- tables (store, results, downloads)
<- stats <- runs (steps that run models: search grids) <- training <- viz <- book; the base layer (errors, files, options, paths, prompts,
registry, progress, resources) imports no subpackage. Every import counts, a function's own
(indented) imports included: a lower layer never reaches a higher one, even at run time.
"""

import collections
import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parents[1] / "rmlib"
BASE = ("errors", "files", "options", "paths", "prompts", "progress", "registry", "resources")
LAYERS = [*BASE, "engine", "tables", "stats", "runs", "training", "caches", "viz", "book", "bench", "commands", "cli", "__main__"]
IMPORT = re.compile(r"^[ \t]*(?:from[ \t]+(\.+|rmlib\.|rmlib(?=[ \t]))([\w.]*)[ \t]+import[ \t]+\(?([\w, \t]+)"
                    r"|import[ \t]+rmlib\.([\w.]+))", re.M)


def module_name(path: pathlib.Path, root: pathlib.Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def module_imports(root=ROOT):
    """(module, imported module, line) for every import of an rmlib module, indented ones included."""
    paths = {module_name(p, root): p for p in root.rglob("*.py")}
    for here, path in paths.items():
        package = here.split(".") if path.name == "__init__.py" else here.split(".")[:-1]
        text = path.read_text(encoding="utf-8")
        for m in IMPORT.finditer(text):
            lead, module, names, plain = m.groups()
            if plain:
                targets = [plain]
            else:
                base = package[:len(package) - (len(lead) - 1)] if lead.startswith(".") else []
                prefix = base + [p for p in module.split(".") if p]
                # each imported name may be a module ("from . import bad"); else it lives in the module named
                targets = [".".join(prefix + [n.strip().split()[0]]) for n in names.split(",") if n.strip()]
            for target in targets:
                while target not in paths and "." in target:  # a name imported from a module: the module
                    target = target.rsplit(".", 1)[0]
                if target in paths and target != here:
                    yield here, target, text[:m.start()].count("\n") + 1


def top_level_imports(root=ROOT):
    """(file:line, layer, imported layer) for every import that leaves its subpackage."""
    for here, target, line in module_imports(root):
        a, b = here.split(".")[0] or "__init__", target.split(".")[0]
        if a != b:
            yield f"{here}:{line}", a, b


def cycles(root=ROOT) -> list[list[str]]:
    """The groups of modules that import each other, directly or through others (Tarjan's SCCs)."""
    graph = collections.defaultdict(set)
    for here, target, _ in module_imports(root):
        graph[here].add(target)
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                out.append(sorted(group))

    for v in list(graph):
        if v not in index:
            visit(v)
    return out


def test_every_subpackage_has_a_layer():
    names = {p.name for p in ROOT.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    names |= {p.stem for p in ROOT.glob("*.py") if p.stem != "__init__"}
    assert names - set(LAYERS) == set()


def test_imports_run_one_way():
    rank = {name: i for i, name in enumerate(LAYERS)}
    backward = [f"{where}: {here} -> {target}" for where, here, target in top_level_imports()
                if here in rank and target in rank and rank[target] > rank[here]
                and not (here in BASE and target in BASE)]
    assert backward == []


def test_stats_reads_no_file_and_runs_no_model():
    """rmlib.stats holds statistical methods on DataFrames: it imports neither the readers and stores of
    ``tables`` (only ``tables.schema``, the long table's column names) nor the models of ``engine``."""
    import re

    pattern = re.compile(r"^\s*(?:from|import)\s+(?:rmlib|\.\.)\.?(tables|engine)(?:\.(\w+))?", re.M)
    reaching = [f"{path.name}: {m.group(0).strip()}" for path in sorted((ROOT / "stats").glob("*.py"))
                for m in pattern.finditer(path.read_text())
                if (m.group(1), m.group(2)) != ("tables", "schema")]  # the long table's column names: no reading
    assert reaching == []


def test_no_module_imports_itself_back():
    assert cycles() == []


def _fake_package(tmp_path, files: dict) -> pathlib.Path:
    fake = tmp_path / "rmlib"
    for name, text in files.items():
        path = fake / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return fake


def test_the_checks_find_a_backward_import_even_inside_a_function_and_a_cycle(tmp_path):
    """The tests above can fail: an indented stats -> viz import and a two-module cycle are caught."""
    fake = _fake_package(tmp_path, {
        "stats/__init__.py": "", "viz/__init__.py": "", "viz/charts.py": "",
        "stats/bad.py": "def f():\n    from ..viz import charts\n    from rmlib.stats import good\n",
        "stats/good.py": "from . import bad\n", "engine/__init__.py": "", "engine/a.py": "from .b import x\n",
        "engine/b.py": "def g():\n    from rmlib.engine.a import y\n"})
    assert ("stats", "viz") in [(here, target) for _, here, target in top_level_imports(fake)]
    assert sorted(cycles(fake)) == [["engine.a", "engine.b"], ["stats.bad", "stats.good"]]
