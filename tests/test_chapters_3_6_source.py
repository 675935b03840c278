"""Chapters 3, 6 and 10 as sources: a content warning first, one provenance table, no report module,
and every number a solution quotes glued by a cell of the same page."""

import json
import pathlib
import re

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
PAGES = [ROOT / "notebooks" / "03_sentiment_framing_frequency.ipynb", ROOT / "notebooks" / "06_base_model_biases.ipynb",
         ROOT / "notebooks" / "10_base_models_and_training.ipynb"]


def _cells(path):
    return [(c["cell_type"], "".join(c["source"])) for c in json.loads(path.read_text())["cells"]]


@pytest.mark.parametrize("path", PAGES, ids=lambda p: p.stem[:2])
def test_content_warning_opens_the_page(path):
    first = next(src for kind, src in _cells(path) if kind == "markdown")
    assert "Content warning" in first[:400]  # under the title, before the first paragraph


@pytest.mark.parametrize("path", PAGES, ids=lambda p: p.stem[:2])
def test_one_provenance_table_and_no_report_module(path):
    code = "\n".join(src for kind, src in _cells(path) if kind == "code")
    assert code.count("provenance_table(") == 1
    assert not re.search(r"\b(reports|lexical_report|paper_views)\.", code)


@pytest.mark.parametrize("path", PAGES, ids=lambda p: p.stem[:2])
def test_quoted_numbers_are_glued_on_the_page(path):
    cells = _cells(path)
    quoted = {m for kind, src in cells if kind == "markdown" for m in re.findall(r"\{glue:text\}`([^`]+)`", src)}
    glued = {m for kind, src in cells if kind == "code" for m in re.findall(r"glue\(f?\"([^\"]+)\"", src)}
    # f-string glue names expand over the keys they loop over: compare the stems
    stems = {g.split("{")[0] for g in glued}
    assert all(q in glued or any(q.startswith(s) and s for s in stems) for q in quoted), quoted - glued
