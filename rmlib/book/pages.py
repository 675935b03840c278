"""Checks on what a reader meets on a chapter page, run on an executed chapter or a built page.

:func:`verdict_problems`: every verdict cell uses only the book's verdict words
(:data:`rmlib.viz.verdicts.VERDICTS`, defined on the page ``book/verdicts.md``).
"""

from __future__ import annotations

import json
import os
import pathlib

from ..errors import InputError
from ..viz.verdicts import table_problems


def page_html(path: str | os.PathLike) -> str:
    """The HTML a reader meets: a built page (``.html``) as it is, or an executed notebook's
    (``.ipynb``) ``text/html`` outputs joined."""
    p = pathlib.Path(path)
    if not p.is_file():
        raise InputError(f"{p} does not exist: pass an executed chapter (.ipynb, e.g. under book/chapters/) "
                         "or a built page (.html)")
    text = p.read_text(encoding="utf-8")
    if p.suffix == ".html":
        return text
    if p.suffix != ".ipynb":
        raise InputError(f"{p}: expected an executed notebook (.ipynb) or a built page (.html)")
    try:
        cells = json.loads(text)["cells"]
    except (ValueError, KeyError) as e:
        raise InputError(f"{p} is not a notebook ({e})") from None
    parts = []
    for cell in cells:
        for out in cell.get("outputs", []):
            html = out.get("data", {}).get("text/html")
            if html:
                parts.append(html if isinstance(html, str) else "".join(html))
    return "\n".join(parts)


def verdict_problems(path: str | os.PathLike) -> list[str]:
    """The verdict cells of a chapter (executed notebook or built page) that hold a word outside
    :data:`rmlib.viz.verdicts.VERDICTS`, as ``"table N, row M: 'text'"``; empty when none."""
    return table_problems(page_html(path))


__all__ = ["page_html", "verdict_problems"]
