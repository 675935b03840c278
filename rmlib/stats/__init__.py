"""Statistics on score tables: pure functions on pandas DataFrames.

No plotting, no model code and no file reading. Each submodule's public names (its ``__all__``) are
re-exported here: the map is read from the submodules' source, so it never drifts from them, and
a name two submodules both export is an error.
The submodules are imported on first use (PEP 562), so that importing one
light function (``from rmlib.stats.vocab import top_bottom``) does not pay for
scipy and statsmodels: that keeps ``rmlib score`` fast to start.
"""

from __future__ import annotations

import ast
import importlib
import pathlib

_WHERE: dict[str, str] | None = None


def exports() -> dict[str, str]:
    """Public name -> the submodule that defines it, from each submodule's ``__all__`` (parsed, not
    imported: importing stays lazy)."""
    global _WHERE
    if _WHERE is None:
        where: dict[str, str] = {}
        for path in sorted(pathlib.Path(__file__).parent.glob("*.py")):
            if path.stem == "__init__":
                continue
            for node in ast.parse(path.read_text(encoding="utf-8")).body:
                targets = node.targets if isinstance(node, ast.Assign) else \
                    [node.target] if isinstance(node, ast.AugAssign) else []
                if any(isinstance(t, ast.Name) and t.id == "__all__" for t in targets):
                    for name in ast.literal_eval(node.value):
                        if where.setdefault(name, path.stem) != path.stem:
                            raise ImportError(f"rmlib.stats.{where[name]} and rmlib.stats.{path.stem} both export "
                                              f"{name!r}: rename one")
        _WHERE = where
    return _WHERE


def __getattr__(name: str):
    if name == "__all__":
        return sorted(exports())
    module = exports().get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value  # imported once
    return value


def __dir__():
    return sorted(set(globals()) | set(exports()))
