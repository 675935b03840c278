"""Each chapter's "re-run me" box, generated from its ``parameters`` cell.

Names, defaults and one-line meanings come from the cell itself (the comment
after each assignment), so the box never drifts from the chapter. A chapter
shows it with one call: ``rerun_box("01")``.
"""

from __future__ import annotations

import pathlib
import shlex

from .chapters import chapter_notebook
from .paths import NOTEBOOKS_DIR


def parameter_docs(chapter: str | int | pathlib.Path, notebooks_dir=NOTEBOOKS_DIR) -> list[dict[str, str]]:
    """``[{name, default, meaning}]`` of the chapter's parameters, in the cell's order."""
    import papermill

    path = chapter_notebook(chapter, notebooks_dir)
    return [{"name": name, "default": info["default"], "meaning": (info.get("help") or "").strip()}
            for name, info in papermill.inspect_notebook(str(path)).items()]


def rerun_commands(chapter: str | int | pathlib.Path, example: dict[str, str] | None = None,
                   notebooks_dir=NOTEBOOKS_DIR) -> list[str]:
    """Shell commands that re-run the chapter; ``example`` maps parameter names to values to show."""
    path = chapter_notebook(chapter, notebooks_dir)
    number = path.name[:2]
    params = " ".join(f"-p {name} {shlex.quote(str(value))}" for name, value in (example or {}).items())
    return [
        f"make chapter CH={number}" + (f" PARAMS={shlex.quote(params)}" if params else ""),
        f"python -m rmlib chapter {number}" + (f" {params}" if params else ""),
        f"jupyter lab notebooks/{path.name}   # or run it cell by cell, with a live kernel",
    ]


def rerun_box(chapter: str | int | pathlib.Path, example: dict[str, str] | None = None,
              notebooks_dir=NOTEBOOKS_DIR):
    """An HTML box (escaped) with the re-run commands and the parameter table, for a chapter page;
    the table is collapsed (a chapter has up to 20 parameters: a page shows at most 15 rows at once)
    and its defaults and meanings wrap, so it fits the page's column."""
    from IPython.display import HTML

    from ..viz.html import WRAP_CLASS, escape  # long defaults and meanings wrap: the table fits the column

    rows = "".join(
        f"<tr><td><code>{escape(p['name'])}</code></td><td class=\"{WRAP_CLASS}\"><code>{escape(p['default'])}</code></td>"
        f"<td class=\"{WRAP_CLASS}\">{escape(p['meaning'])}</td></tr>" for p in parameter_docs(chapter, notebooks_dir))
    commands = "\n".join(escape(c) for c in rerun_commands(chapter, example, notebooks_dir))
    n = len(parameter_docs(chapter, notebooks_dir))
    return HTML(
        "<div class=\"rmlib-rerun\"><p><strong>Re-run this chapter</strong> with your own prompt and model "
        "(parameters are checked before anything heavy runs):</p>"
        f"<pre>{commands}</pre><details><summary>the chapter's {n} parameters, their defaults and "
        "meanings</summary><table class=\"rmlib-table\"><thead><tr><th>parameter</th><th>default</th>"
        f"<th>meaning</th></tr></thead><tbody>{rows}</tbody></table></details></div>")
