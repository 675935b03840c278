"""CPU time of each executed chapter, from papermill's per-cell durations (``python -m rmlib.book timings``).

papermill records ``metadata.papermill.duration`` (seconds) for every cell it
executes; this module reads them from the executed chapters
(``book/chapters/NN_*.ipynb``) and prints a markdown table for the course page
(``book/course.md``).
"""

from __future__ import annotations

import pathlib

from .chapters import CHAPTER_RE
from .paths import CHAPTERS_DIR
from ..errors import InputError


def format_seconds(seconds: float) -> str:
    """``"42 s"``, ``"3 min 05 s"``, ``"1 h 02 min"``."""
    if seconds < 0:
        raise InputError(f"a duration cannot be negative: {seconds}")
    total = int(round(seconds))
    if total < 60:
        return f"{seconds:.1f} s" if seconds < 10 else f"{total} s"
    minutes, secs = divmod(total, 60)
    if minutes < 60:
        return f"{minutes} min {secs:02d} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes:02d} min"


def _title(nb) -> str:
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            for line in cell.source.splitlines():
                if line.startswith("# "):
                    return line[2:].strip()
    return ""


def chapter_timings(chapters_dir: pathlib.Path | str = CHAPTERS_DIR) -> list[dict]:
    """``[{chapter, title, seconds, cells, slowest_seconds, slowest_line}]`` for each executed chapter.

    ``seconds`` is the sum of the cells' durations (kernel start-up excluded).
    Raises ``FileNotFoundError`` when there is no executed chapter and
    ``ValueError`` naming a notebook whose code cells carry no papermill
    duration (not executed by papermill, or cleared).
    """
    import nbformat

    chapters_dir = pathlib.Path(chapters_dir)
    paths = sorted(p for p in chapters_dir.glob("*.ipynb") if CHAPTER_RE.match(p.name))
    if not paths:
        raise FileNotFoundError(f"no executed chapter in {chapters_dir}: run `make book` first")
    rows = []
    for path in paths:
        nb = nbformat.read(str(path), as_version=4)
        timed = []
        for cell in nb.cells:
            if cell.cell_type != "code":
                continue
            duration = (cell.metadata.get("papermill") or {}).get("duration")
            if duration is not None:
                timed.append((float(duration), cell.source.strip().splitlines()[0] if cell.source.strip() else ""))
        if not timed:
            raise InputError(f"{path} has no papermill cell durations: execute it with "
                             "`python -m rmlib.book chapter NN` (or `make book`), not by hand")
        slowest = max(timed, key=lambda t: t[0])
        rows.append({"chapter": path.name[:2], "title": _title(nb), "seconds": sum(t[0] for t in timed),
                     "cells": len(timed), "slowest_seconds": slowest[0], "slowest_line": slowest[1]})
    return rows


def timings_table(rows: list[dict]) -> str:
    """A markdown table of :func:`chapter_timings` rows, with a total line."""
    def cell(text: str) -> str:
        return text.replace("|", "\\|").replace("`", "'")

    lines = ["| chapter | title | time on a CPU | cells | slowest cell |", "|---|---|---|---|---|"]
    for r in rows:
        slow = f"{format_seconds(r['slowest_seconds'])}: `{cell(r['slowest_line'][:50])}`"
        lines.append(f"| {r['chapter']} | {cell(r['title'])} | {format_seconds(r['seconds'])} | {r['cells']} | {slow} |")
    lines.append(f"| all | | {format_seconds(sum(r['seconds'] for r in rows))} | "
                 f"{sum(r['cells'] for r in rows)} | |")
    return "\n".join(lines)
