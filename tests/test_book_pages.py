"""What reaches a page: no progress bar (rmlib.progress), set-up cells folded (rmlib.book.tags), and
rendered text a reader can read: no raw MyST markup, no Python ``None``/``nan`` in a table cell, no
internal label (``ex-02-space``) in the prose.

:func:`page_problems` is the book-wide check. Here it runs over every markdown page and every
chapter's markdown as CommonMark renders it (a broken fence leaks its directive as text);
``tests/test_browser.py`` runs it over every built page.
"""

import html.parser
import json
import pathlib
import re

import nbformat
import pytest

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



def test_long_cells_fold_their_code_and_short_ones_and_the_parameters_stay():
    long_code = "\n".join(f"x{i} = {i}" for i in range(tags.LONG_CELL + 1))
    short_code = "\n".join(f"x{i} = {i}" for i in range(tags.LONG_CELL)) + "\n\n"
    assert tags.is_long_cell(long_code) and not tags.is_long_cell(short_code)
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(long_code), nbformat.v4.new_code_cell(short_code),
                nbformat.v4.new_code_cell(long_code), nbformat.v4.new_code_cell(long_code),
                nbformat.v4.new_markdown_cell(long_code)]
    nb.cells[2].metadata["tags"] = ["parameters"]
    nb.cells[3].metadata["tags"] = ["remove-input"]
    assert tags.tag_setup_cells(nb) == 1
    assert nb.cells[0].metadata["tags"] == ["hide-input"] and "tags" not in nb.cells[1].metadata
    assert nb.cells[2].metadata["tags"] == ["parameters"] and nb.cells[3].metadata["tags"] == ["remove-input"]
    assert "tags" not in nb.cells[4].metadata
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


# --------------------------------------------------------------------------- rendered text
ROOT = pathlib.Path(__file__).resolve().parents[1]
#: MyST syntax that must never reach a reader as text: a fence, a directive or role name, a
#: directive option line, a target ``(label)=``.
RAW_MYST = re.compile(
    r"```|~~~|:::|\{(?:[a-z]+:)?[a-z][a-z-]*\}`|\{(?:list-table|table|figure|image|note|warning|important|"
    r"admonition|exercise|solution|code-cell|glue|glue:\w+|math|tableofcontents|toctree|dropdown)\}"
    r"|^:(?:header-rows|name|label|class|widths|align|width):|^\([\w-]+\)=\s*$", re.M)
#: What a missing value looks like when Python or pandas prints it.
MISSING = {"None", "nan", "NaN", "<NA>", "NaT"}  # not "none": a vocabulary token
#: An exercise label as the chapters write them (``ex-NN-name``), also when not defined on a page.
EXERCISE_LABEL = re.compile(r"(?<![\w/#-])ex-\d\d-[a-z][\w-]*")
SKIPPED_TAGS = {"script", "style", "pre", "code", "textarea", "head", "svg", "math"}


def source_labels() -> set[str]:
    """Every label the book's sources define (``:label: name`` of a directive, ``(name)=`` targets)."""
    texts = [p.read_text(encoding="utf-8") for p in (ROOT / "book").glob("*.md")]
    for nb in sorted((ROOT / "notebooks").glob("*.ipynb")):
        texts += ["".join(c["source"]) for c in json.loads(nb.read_text(encoding="utf-8"))["cells"]]
    found = set()
    for text in texts:
        found.update(re.findall(r"^\s*:label:\s*([\w-]+)", text, re.M))
        found.update(re.findall(r"^\(([\w-]+)\)=\s*$", text, re.M))
    return found


class _Text(html.parser.HTMLParser):
    """Prose (outside code, scripts and math) and the text of every table cell of a page."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.skip, self.prose, self.cells, self.cell = 0, [], [], None

    def handle_starttag(self, tag, attrs):
        if tag in SKIPPED_TAGS:
            self.skip += 1
        elif tag in ("td", "th") and not self.skip:
            self.cell = []
        elif tag in ("p", "br", "li", "tr", "div", "h1", "h2", "h3", "h4", "dt", "dd", "caption"):
            self.prose.append("\n")

    def handle_endtag(self, tag):
        if tag in SKIPPED_TAGS:
            self.skip = max(0, self.skip - 1)
        elif tag in ("td", "th") and self.cell is not None:
            self.cells.append("".join(self.cell).strip())
            self.cell = None
            self.prose.append("\n")

    def handle_data(self, data):
        if self.skip:
            return
        self.prose.append(data)
        if self.cell is not None:
            self.cell.append(data)


def page_problems(page_html: str, labels=frozenset()) -> list[str]:
    """What a reader should not see on a rendered page: raw MyST markup in its text, a table cell
    holding a printed missing value, an internal label (one of ``labels``, or an exercise label)."""
    parsed = _Text()
    parsed.feed(page_html)
    text = "".join(parsed.prose)
    lines = [ln.strip() for ln in text.splitlines()]
    problems = [f"raw MyST markup: {m.group(0)!r} in {line[:80]!r}"
                for line in lines for m in [RAW_MYST.search(line)] if m]
    bad_cells = [c for c in parsed.cells if c in MISSING]
    if bad_cells:
        problems.append(f"{len(bad_cells)} table cell(s) show a missing value as {sorted(set(bad_cells))}")
    pattern = "|".join(re.escape(label) for label in sorted(labels, key=len, reverse=True))
    leaked = set(EXERCISE_LABEL.findall(text))
    if pattern:
        leaked |= set(re.findall(rf"(?<![\w/#-])(?:{pattern})(?![\w-])", text))
    problems += [f"internal label in the text: {label!r}" for label in sorted(leaked)]
    return problems


def commonmark_html(markdown: str) -> str:
    """``markdown`` as CommonMark renders it, with tables, the colon fences the book enables
    (_config.yml) and MyST's inline roles: a fence that does not open (e.g. an info string with a
    backtick) leaves its directive in the text, and so does a role without its backticked content.
    A role MyST parses becomes code here, which the page checks skip: whether Sphinx resolves it
    (a glued key, a label) the strict book build checks."""
    from markdown_it import MarkdownIt
    from mdit_py_plugins.colon_fence import colon_fence_plugin
    from mdit_py_plugins.myst_role import myst_role_plugin

    return (MarkdownIt("commonmark").enable("table").use(colon_fence_plugin).use(myst_role_plugin)
            .render(markdown))


def test_prose_may_hold_a_role_but_not_a_broken_one():
    assert page_problems(commonmark_html("The paper's {glue:text}`ch04_paper_rm_rm:.2f` here."),
                         set()) == []
    assert page_problems(commonmark_html("The paper's {glue:text} here."), set()) == [
        "raw MyST markup: '{glue:text}' in \"The paper's {glue:text} here.\""]


def test_page_problems_finds_markup_missing_values_and_labels():
    page = ("<html><head><title>```{x}</title></head><body><p>Fine text; code is fine: "
            "<code>{ref}`x`</code></p><pre>```{list-table}</pre><table><tr><td>None</td><td>0.5</td>"
            "<td>nan</td><td>Nonesuch</td></tr></table><p>see exercise ex-02-space and my-label, "
            "not my-label-2 or #my-label</p><p>```{list-table} Timings</p><p>:header-rows: 1</p>"
            "<p>(course-timings)=</p><p>a {doc}`course` role</p></body></html>")
    found = page_problems(page, labels={"my-label"})
    assert found == [
        "raw MyST markup: '```' in '```{list-table} Timings'",
        "raw MyST markup: ':header-rows:' in ':header-rows: 1'",
        "raw MyST markup: '(course-timings)=' in '(course-timings)='",
        "raw MyST markup: '{doc}`' in 'a {doc}`course` role'",
        "2 table cell(s) show a missing value as ['None', 'nan']",
        "internal label in the text: 'ex-02-space'",
        "internal label in the text: 'my-label'",
    ]
    assert page_problems("<p>Clean prose, 0.25 and None of that.</p><table><tr><td></td></tr></table>",
                         labels={"my-label"}) == []


def test_the_labels_come_from_the_sources():
    labels = source_labels()
    assert "ex-99-escape" in labels or any(label.startswith("ex-99-") for label in labels)
    assert all(re.fullmatch(r"[\w-]+", label) for label in labels)


def test_a_fence_whose_info_string_has_a_backtick_is_caught():
    """The failure seen on the course page: ```{list-table} with `code` in its caption is no fence."""
    broken = "```{list-table} Time as `make book` logs it\n:header-rows: 1\n\n* - a\n```\n"
    assert any("raw MyST markup" in p for p in page_problems(commonmark_html(broken)))
    assert page_problems(commonmark_html("```{list-table} Time as make book logs it\n:header-rows: 1\n```\n")) == []


@pytest.mark.parametrize("page", sorted(p.name for p in (ROOT / "book").glob("*.md") if p.name != "README.md"))
def test_markdown_pages_render_without_raw_markup(page):
    text = (ROOT / "book" / page).read_text(encoding="utf-8")
    assert page_problems(commonmark_html(text), source_labels()) == []


@pytest.mark.parametrize("chapter", sorted(p.name for p in (ROOT / "notebooks").glob("*.ipynb")))
def test_chapter_markdown_renders_without_raw_markup(chapter):
    cells = json.loads((ROOT / "notebooks" / chapter).read_text(encoding="utf-8"))["cells"]
    problems = []
    for i, cell in enumerate(cells):
        if cell["cell_type"] == "markdown":
            problems += [f"cell {i}: {p}" for p in page_problems(commonmark_html("".join(cell["source"])),
                                                                  source_labels())]
    assert problems == []
