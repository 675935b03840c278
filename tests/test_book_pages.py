"""What reaches a page: no progress bar (rmlib.progress), set-up cells folded (rmlib.book.tags)."""

import json

import nbformat

from rmlib import progress
from rmlib.book import run_chapter, tags


def test_setup_cells_are_recognised_by_their_first_statement():
    assert tags.is_setup_cell("# set-up\nimport os\nfrom rmlib import stats\ncheck(prompt)\n")
    assert not tags.is_setup_cell("table = stats.moments_table(long)\nimport os\n")
    assert not tags.is_setup_cell("# only a comment\n")
    assert not tags.is_setup_cell("import (\n")  # a syntax error is not a set-up cell


def test_tagging_adds_hide_input_once_and_keeps_author_tags():
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("import os"), nbformat.v4.new_code_cell("x = 1"),
                nbformat.v4.new_code_cell("import sys")]
    nb.cells[2].metadata["tags"] = ["remove-input"]
    assert tags.tag_setup_cells(nb) == 1
    assert nb.cells[0].metadata["tags"] == ["hide-input"] and "tags" not in nb.cells[1].metadata
    assert nb.cells[2].metadata["tags"] == ["remove-input"]
    assert tags.tag_setup_cells(nb) == 0


def test_the_environment_switch_turns_every_bar_off(monkeypatch):
    monkeypatch.delenv(progress.ENV_VAR, raising=False)
    assert progress.enabled(True) and not progress.enabled(False)
    monkeypatch.setenv(progress.ENV_VAR, "1")
    assert not progress.enabled(True)
    assert progress.bar(3, progress=True).disable


def test_an_executed_chapter_has_no_progress_output_and_a_folded_setup_cell(tmp_path):
    """rmlib's bars and transformers' (e.g. de-quantizing a GGUF model) stay out of the page."""
    nb = nbformat.v4.new_notebook()
    params = nbformat.v4.new_code_cell('n = 3')
    params.metadata["tags"] = ["parameters"]
    nb.cells = [
        params,
        nbformat.v4.new_code_cell("import time\nfrom rmlib import progress"),
        nbformat.v4.new_code_cell(
            "bar = progress.bar(n, desc='working')\nfor _ in range(n):\n    bar.update(1)\nbar.close()\n"
            "from transformers.utils import logging as hf_logging\n"
            "for _ in hf_logging.tqdm(range(n), desc='transformers bar'):\n    pass\nprint('done')"),
    ]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    src = tmp_path / "src" / "07_page.ipynb"
    src.parent.mkdir()
    nbformat.write(nb, str(src))
    out = run_chapter(src, {"n": 5}, output_dir=tmp_path / "out")
    executed = nbformat.read(str(out), as_version=4)
    outputs = json.dumps([c.get("outputs", []) for c in executed.cells])
    assert "done" in outputs
    assert "working" not in outputs and "transformers bar" not in outputs and "widget" not in outputs
    setup = [c for c in executed.cells if c.source.startswith("import time")][0]
    assert "hide-input" in setup.metadata["tags"]
