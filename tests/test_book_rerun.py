"""rmlib.book.rerun: the re-run box comes from the chapter's own parameters cell."""

import nbformat

from rmlib.book import rerun


def make(tmp_path):
    nb = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell('prompt = "What is <b>best</b>?"  # the prompt & its <meaning>\nn = 3  # how many\n')
    cell.metadata["tags"] = ["parameters"]
    nb.cells = [cell]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    path = tmp_path / "07_demo.ipynb"
    nbformat.write(nb, str(path))
    return path


def test_docs_and_commands_follow_the_parameters_cell(tmp_path):
    path = make(tmp_path)
    docs = rerun.parameter_docs(path)
    assert [d["name"] for d in docs] == ["prompt", "n"]
    assert docs[1] == {"name": "n", "default": "3", "meaning": "how many"}
    cmds = rerun.rerun_commands(path, {"prompt": "What is the best food?"})
    assert cmds[0] == "make chapter CH=07 PARAMS='-p prompt '\"'\"'What is the best food?'\"'\"''"
    assert cmds[1] == "python -m rmlib chapter 07 -p prompt 'What is the best food?'"


def test_the_box_escapes_what_the_cell_says(tmp_path):
    html = rerun.rerun_box(make(tmp_path)).data
    assert "<b>best</b>" not in html and "&lt;b&gt;best&lt;/b&gt;" in html
    assert "&lt;meaning&gt;" in html and "make chapter CH=07" in html
    # long defaults and meanings wrap (the families dict of chapter 6 made the box 4,312 px wide)
    assert html.count('<td class="rmlib-wrap">') == 2 * 2 and "<td><code>prompt</code></td>" in html
    # the parameter table is collapsed under a summary that counts them
    assert "<details><summary>the chapter's 2 parameters" in html and html.index("<details>") < html.index("<table")
