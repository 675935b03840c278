"""rmlib.book: every chapter executes on its tiny parameters; parameters are validated first.

Convention for chapter authors: each notebooks/NN_*.ipynb declares the
parameter overrides that make it run in seconds on the CPU in its notebook
metadata, ``"rmlib": {"tiny_parameters": {...}}`` (``{}`` when the defaults
are already fast). A chapter without them fails here.
"""

import subprocess
import sys
import time
import types
from html import unescape as html_unescape

import nbformat
import pandas as pd
import pytest

from rmlib import book
from rmlib.book import pages, sphinx_ext
from rmlib.book.__main__ import main as book_main
from rmlib.errors import MathError, RmlibError

CHAPTERS = book.find_chapters()


def make_notebook(path, source):
    nb = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell(source)
    cell.metadata["tags"] = ["parameters"]
    nb.cells = [cell, nbformat.v4.new_code_cell("result = (prompt, n, alpha, flag, words)")]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, str(path))
    return path


def injected_values(cell):
    """The assignments of papermill's injected-parameters cell, evaluated."""
    namespace = {}
    exec(cell.source, {}, namespace)
    return namespace


PARAMS_CELL = (
    'prompt = "What is the best food?"\n'
    "n = 20\n"
    "alpha = 0.5\n"
    "flag = True\n"
    'words = ["a", "b"]\n'
    'model = "tiny:llama-lm"\n'
)


@pytest.fixture
def nb(tmp_path):
    return make_notebook(tmp_path / "07_example.ipynb", PARAMS_CELL)


@pytest.fixture
def fake_models(monkeypatch):
    """Stand-ins for rmlib.engine.models, hub and embedded: check_model_spec knows one spec."""
    calls = []

    def check_model_spec(spec):
        calls.append(spec)
        if spec != "tiny:llama-lm":
            raise ValueError(f"unknown model spec {spec!r}")

    def hub_commit(spec, revision=None):  # only hub ids are resolved, and these specs are none
        raise AssertionError(f"{spec!r} is not a hub id: nothing to resolve")

    monkeypatch.setitem(sys.modules, "rmlib.engine.models", types.SimpleNamespace(check_model_spec=check_model_spec))
    monkeypatch.setitem(sys.modules, "rmlib.engine.hub", types.SimpleNamespace(hub_commit=hub_commit))
    monkeypatch.setitem(sys.modules, "rmlib.engine.embedded", types.SimpleNamespace(EMBEDDED={}))
    return calls


# --------------------------------------------------------------------------- every chapter
def test_there_are_chapters():
    assert "99" in CHAPTERS, "the appendix page notebooks/99_*.ipynb is the pipeline's own test page"


@pytest.mark.parametrize("key", sorted(CHAPTERS))
def test_chapter_executes_with_tiny_parameters(key, tmp_path):
    source = CHAPTERS[key]
    tiny = book.tiny_parameters(source)
    out = book.run_chapter(source, tiny, output_dir=tmp_path, cell_timeout=600)
    executed = nbformat.read(str(out), as_version=4)
    errors = [o for c in executed.cells if c.cell_type == "code" for o in c.get("outputs", [])
              if o.get("output_type") == "error"]
    assert not errors
    assert pages.verdict_problems(out) == [], "a verdict cell uses a word outside the book's verdicts (book/verdicts.md)"
    if tiny:
        injected = [c for c in executed.cells if "injected-parameters" in c.metadata.get("tags", [])]
        assert len(injected) == 1
        assert {k: v for k, v in injected_values(injected[0]).items() if k in tiny} == tiny


def test_the_live_words_sentence_follows_the_parameters(tmp_path):
    """Chapter 2 names the words its live models scored from what they scored: with both corpora,
    the sentence counts both (it once said "the 263 Big Two nouns" whatever was scored)."""
    from rmlib.tables import followup

    source = CHAPTERS["02"]
    out = book.run_chapter(source, {**book.tiny_parameters(source), "live_corpora": ["big2", "mfd"]},
                           output_dir=tmp_path, cell_timeout=600)
    glued = {o["metadata"]["scrapbook"]["name"]: o["data"]["application/papermill.record/text/plain"]
             for c in nbformat.read(str(out), as_version=4).cells if c.cell_type == "code"
             for o in c.get("outputs", []) if "scrapbook" in o.get("metadata", {})}
    n = {c: followup.dictionary(c)["word"].nunique() for c in followup.CORPORA}
    assert glued["ch02_live_words"] == repr(
        f"{n['big2']:,} Big Two nouns and {n['mfd']:,} Moral Foundations Dictionary 2.0 terms")


# --------------------------------------------------------------------------- discovery
def test_find_chapters_pattern_and_duplicates(tmp_path):
    for name in ["01_a.ipynb", "02_b-c.ipynb", "3_bad.ipynb", "notes.ipynb", "04_x.txt"]:
        (tmp_path / name).write_text("{}")
    assert {k: p.name for k, p in book.find_chapters(tmp_path).items()} == {"01": "01_a.ipynb", "02": "02_b-c.ipynb"}
    (tmp_path / "01_again.ipynb").write_text("{}")
    with pytest.raises(ValueError, match="two notebooks for chapter 01"):
        book.find_chapters(tmp_path)


def test_chapter_notebook_lookup(tmp_path):
    make_notebook(tmp_path / "05_x.ipynb", "n = 1\n")
    assert book.chapter_notebook("5", tmp_path).name == "05_x.ipynb"
    assert book.chapter_notebook(5, tmp_path).name == "05_x.ipynb"
    with pytest.raises(ValueError, match="no chapter 06"):
        book.chapter_notebook("06", tmp_path)
    with pytest.raises(ValueError, match="number like 01"):
        book.chapter_notebook("five", tmp_path)


# --------------------------------------------------------------------------- validation
def test_notebook_parameters_reads_defaults(nb):
    assert book.notebook_parameters(nb) == {
        "prompt": "What is the best food?", "n": 20, "alpha": 0.5, "flag": True,
        "words": ["a", "b"], "model": "tiny:llama-lm",
    }


def test_validate_coerces_cli_strings(nb, fake_models):
    got = book.validate_parameters(nb, {"n": "3", "alpha": "2", "flag": "false", "words": "[x, y]",
                                        "prompt": "123", "model": "tiny:llama-lm"})
    assert got == {"n": 3, "alpha": 2.0, "flag": False, "words": ["x", "y"], "prompt": "123",
                   "model": "tiny:llama-lm"}
    assert isinstance(got["alpha"], float)
    assert fake_models == ["tiny:llama-lm"]


@pytest.mark.parametrize("params, message", [
    ({"nope": 1}, "unknown parameter 'nope'"),
    ({"n": "abc"}, "parameter 'n' expects int"),
    ({"n": "1.5"}, "parameter 'n' expects int"),
    ({"n": True}, "parameter 'n' expects int"),
    ({"alpha": "x"}, "parameter 'alpha' expects float"),
    ({"flag": "1"}, "parameter 'flag' expects bool"),
    ({"words": "abc"}, "parameter 'words' expects list"),
    ({"prompt": 5}, "parameter 'prompt' expects a string"),
    ({"prompt": ""}, "prompts must be non-empty"),
    ({"prompt": "   "}, "prompts must be non-empty"),
    ({"model": "no-such-model"}, "unknown model spec 'no-such-model'"),
])
def test_validate_rejects(nb, fake_models, params, message):
    with pytest.raises(book.ParameterError, match=message):
        book.validate_parameters(nb, params)


def test_validate_without_parameters_cell(tmp_path):
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("x = 1")]
    path = tmp_path / "08_plain.ipynb"
    nbformat.write(nb, str(path))
    assert book.validate_parameters(path, {}) == {}
    with pytest.raises(book.ParameterError, match="no cell tagged 'parameters'"):
        book.validate_parameters(path, {"x": 2})


def test_run_chapter_validates_before_starting_a_kernel(nb, tmp_path, monkeypatch, fake_models):
    import papermill

    def boom(*a, **k):
        raise AssertionError("papermill must not run for invalid parameters")

    monkeypatch.setattr(papermill, "execute_notebook", boom)
    with pytest.raises(book.ParameterError):
        book.run_chapter(nb, {"n": "many"}, output_dir=tmp_path / "out")
    assert not (tmp_path / "out" / nb.name).exists()


def test_run_chapter_injects_parameters(nb, tmp_path, fake_models):
    out = book.run_chapter(nb, {"n": "7", "prompt": "Why?"}, output_dir=tmp_path / "out")
    executed = nbformat.read(str(out), as_version=4)
    injected = [c for c in executed.cells if "injected-parameters" in c.metadata.get("tags", [])]
    assert injected_values(injected[0]) == {"n": 7, "prompt": "Why?"}


def test_a_chapters_kernel_traffic_is_encrypted(tmp_path, fake_models, capfd):
    """The kernel a chapter runs in was given CurveZMQ keys (its connection file holds them), so code and
    outputs do not cross local TCP in plain text, and its log says nothing of plain-text traffic."""
    source = make_notebook(tmp_path / "07_example.ipynb", PARAMS_CELL)
    nb = nbformat.read(str(source), as_version=4)
    nb.cells.append(nbformat.v4.new_code_cell(
        "import json, ipykernel.connect\n"
        "info = json.load(open(ipykernel.connect.get_connection_file()))\n"
        "print(info['transport'], sorted(k for k in info if k.startswith('curve')))"))
    nbformat.write(nb, str(source))
    out = book.run_chapter(source, None, output_dir=tmp_path / "out")
    printed = nbformat.read(str(out), as_version=4).cells[-1].outputs[0]["text"]
    assert printed.strip() == "tcp ['curve_publickey', 'curve_secretkey']"
    assert "without encryption" not in capfd.readouterr().err  # the kernel's own log: no plain-text warning


def test_a_full_run_drops_only_the_pages_it_wrote_of_chapters_now_gone(tmp_path, fake_models):
    """``execute_all`` removes the executed page of a chapter whose source was removed, and nothing else in
    the output folder: a notebook of the user's own there, a link and other files stay as they were."""
    sources, out = tmp_path / "notebooks", tmp_path / "chapters"
    sources.mkdir()
    kept_source = make_notebook(sources / "01_kept.ipynb", PARAMS_CELL)
    gone_source = make_notebook(sources / "02_gone.ipynb", PARAMS_CELL)
    book.run_chapter(gone_source, None, notebooks_dir=sources, output_dir=out)
    gone_source.unlink()
    mine = make_notebook(out / "03_mine.ipynb", PARAMS_CELL)  # the user's: papermill never wrote it
    (out / "notes.ipynb").write_text("not even JSON")
    (out / "link.ipynb").symlink_to(out / "02_gone.ipynb")
    before = {p.name: p.read_bytes() for p in (mine, out / "notes.ipynb")}
    done = book.execute_all(sources, out, jobs=1)
    assert done == [out / kept_source.name] and (out / kept_source.name).is_file()
    assert not (out / "02_gone.ipynb").exists()  # rmlib's page of the removed chapter
    assert {p.name: p.read_bytes() for p in (mine, out / "notes.ipynb")} == before
    assert (out / "link.ipynb").is_symlink()


def test_tiny_parameters_must_be_declared(nb):
    with pytest.raises(KeyError, match="tiny_parameters"):
        book.tiny_parameters(nb)
    data = nbformat.read(str(nb), as_version=4)
    data.metadata["rmlib"] = {"tiny_parameters": {"n": 2}}
    nbformat.write(data, str(nb))
    assert book.tiny_parameters(nb) == {"n": 2}


# --------------------------------------------------------------------------- command line
def test_cli_rejects_bad_parameter_fast():
    start = time.monotonic()
    proc = subprocess.run(
        [sys.executable, "-m", "rmlib.book", "chapter", "99", "-p", "n_tokens", "many", "--no-build"],
        capture_output=True, text=True, cwd=book.ROOT,
    )
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert lines == ["error: parameter 'n_tokens' expects int (default 8), got 'many'"]
    assert time.monotonic() - start < 30


@pytest.mark.parametrize("argv, message", [
    (["chapter", "99", "-p", "bogus", "1", "--no-build"], "unknown parameter 'bogus'"),
    (["chapter", "99", "-p", "prompt", "", "--no-build"], "prompts must be non-empty"),
    (["chapter", "98", "--no-build"], "no chapter 98"),
    (["chapter", "03", "-p", "prompts", '["Great?", "Best?"]', "--no-build"], "exactly 3 non-empty prompts"),
    (["chapter", "10", "-p", "mwlr_a", '["gemma-3-270m", "tiny:llama-lm"]', "--no-build"],
     "mwlr_a names ['tiny:llama-lm'], which are not in models"),
    (["chapter", "07", "-p", "bases", "[]", "--no-build"], "'bases' must be at least one language model"),
    (["chapter", "01", "-p", "trust_remote_code", '["org/rm"]', "--no-build"],
     "trust_remote_code names ['org/rm'], which are not in models"),
])
def test_main_errors_are_one_line(argv, message, capsys):
    assert book_main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1


def test_main_unknown_command(capsys):
    assert book_main(["frobnicate"]) == 2
    assert "unknown command" in capsys.readouterr().err


# --------------------------------------------------------------------------- Sphinx extension
def test_build_refuses_pages_that_load_from_the_network():
    from sphinx.errors import ExtensionError

    ok = {"script_files": ["_static/rmlib-vega.js"], "css_files": [], "body": "<div class='rmlib-chart'></div>"}
    sphinx_ext.forbid_network_assets(None, "p", "page.html", ok, None)
    for bad in (
        {"script_files": ["https://cdn.jsdelivr.net/npm/vega@5"], "body": ""},
        {"css_files": ["//fonts.googleapis.com/css"], "body": ""},
        {"body": '<script type="text/javascript" src="https://cdn.jsdelivr.net/npm/vega-embed@6"></script>'},
        {"body": "<link rel=stylesheet href=//example.org/x.css>"},
    ):
        with pytest.raises(ExtensionError, match="network"):
            sphinx_ext.forbid_network_assets(None, "p", "page.html", bad, None)


def test_vendored_libraries_are_not_put_on_every_page():
    config = types.SimpleNamespace(
        html_js_files=["rmlib-vega.js", "mathjax/tex-chtml.js", ("jupyter-widgets/embed.js", {}), "other.js"],
        html_css_files=["rmlib.css", "mathjax/x.css"],
    )
    sphinx_ext.drop_vendored_assets(None, config)
    assert config.html_js_files == ["rmlib-vega.js", "other.js"]
    assert config.html_css_files == ["rmlib.css"]


def test_vega_bundle_only_on_pages_with_a_chart():
    from sphinx.builders.html._assets import _JavaScript

    scripts = [_JavaScript("_static/rmlib-vega.js"), _JavaScript("_static/doctools.js"), "_static/rmlib-vega.js?v=1"]
    plain = {"script_files": list(scripts), "body": "<p>no chart here</p>"}
    sphinx_ext.drop_unused_scripts(None, "intro", "page.html", plain, None)
    assert [getattr(a, "filename", a) for a in plain["script_files"]] == ["_static/doctools.js"]
    chart = {"script_files": list(scripts), "body": '<div class="rmlib-chart" id="c1"></div>'}
    sphinx_ext.drop_unused_scripts(None, "ch", "page.html", chart, None)
    assert chart["script_files"] == scripts
    styles = ["_static/sphinx-design.min.css?v=1", "_static/rmlib.css"]
    plain = {"css_files": list(styles), "body": "<p>text</p>"}
    sphinx_ext.drop_unused_scripts(None, "intro", "page.html", plain, None)
    assert plain["css_files"] == ["_static/rmlib.css"]
    card = {"css_files": list(styles), "body": '<div class="sd-card">x</div>'}
    sphinx_ext.drop_unused_scripts(None, "p", "page.html", card, None)
    assert card["css_files"] == styles


def test_the_search_index_reads_cells_as_words_without_collapsed_rows():
    from docutils import nodes
    from docutils.frontend import get_default_settings
    from docutils.parsers.rst import Parser
    from docutils.utils import new_document

    from rmlib.viz import html as rhtml

    full = pd.DataFrame({"item": [f"item{i}" for i in range(12)], "score": range(12)})
    doc = new_document("page", get_default_settings(Parser))
    doc += nodes.paragraph(text="Some prose")
    doc += nodes.raw("", rhtml.short_table(full, 3).data, format="html")
    doc += nodes.raw("", "<p>people</p><script>var spec = {secret: 1};</script><style>.x{}</style>", format="html")
    text = " ".join(n.astext() for n in sphinx_ext.index_view(doc).findall(nodes.raw))
    words = text.split()
    assert "item2" in words and "2" in words, "each cell is a word of its own, not glued to its neighbour"
    assert "item3" not in text and "show" not in words, "the collapsed full table is left out"
    assert "people" in words and "secret" not in text and ".x" not in text and "<" not in text
    assert "item3" in " ".join(n.astext() for n in doc.findall(nodes.raw)), "the page itself keeps every row"
    assert "Some prose" in sphinx_ext.index_view(doc).astext()

    fed = []
    builder = types.SimpleNamespace(index_page=lambda name, tree, title: fed.append(tree))
    app = types.SimpleNamespace(builder=builder)
    sphinx_ext.index_views(app)
    sphinx_ext.index_views(app)  # wrapped once
    builder.index_page("ch", doc, "Chapter")
    assert len(fed) == 1 and "item3" not in " ".join(n.astext() for n in fed[0].findall(nodes.raw))


def test_an_incremental_build_drops_the_terms_no_page_holds():
    from docutils import nodes
    from docutils.frontend import get_default_settings
    from docutils.parsers.rst import Parser
    from docutils.utils import new_document
    from sphinx.search import IndexBuilder

    env = types.SimpleNamespace(**{f"_search_index_{k}": {} for k in (
        "titles", "filenames", "mapping", "title_mapping", "all_titles", "index_entries", "objtypes", "objnames")})
    indexer = IndexBuilder(env, "en", {}, None)

    def page(text):
        doc = new_document("p", get_default_settings(Parser))
        doc += nodes.paragraph(text=text)
        return doc

    indexer.feed("ch", "ch.md", "Chapter", page("zebra quokka"))
    indexer.feed("other", "other.md", "Other", page("zebra"))
    indexer.prune({"other"})  # what load_indexer does before "ch" is rebuilt
    indexer.feed("ch", "ch.md", "Chapter", page("zebra wombat"))
    assert indexer._mapping["quokka"] == set()  # Sphinx keeps the dead term
    assert sphinx_ext.drop_dead_terms(indexer) == 1
    assert "quokka" not in indexer._mapping and indexer._mapping["zebra"] == {"ch", "other"}

    calls = []
    builder = types.SimpleNamespace(index_page=lambda *a: None, indexer=indexer,
                                    load_indexer=lambda docnames: calls.append(docnames))
    sphinx_ext.index_views(types.SimpleNamespace(builder=builder))
    indexer._mapping["gone"] = set()
    builder.load_indexer(["ch"])
    assert calls == [["ch"]] and "gone" not in indexer._mapping


def test_math_becomes_mathml_without_javascript():
    inline = sphinx_ext.render_mathml(r"\log p(\text{token} \mid \text{prompt})")
    assert inline.startswith("<math ") and 'display="inline"' in inline
    assert "<mi>log</mi>" in inline and "<mtext>token</mtext>" in inline and "<mo>&#x02223;</mo>" in inline
    block = sphinx_ext.render_mathml(r"g_{iv} - g_{i,x_i}", display=True)
    assert 'display="block"' in block and "<msub>" in block
    # the label is escaped: a formula cannot inject markup through it
    label = sphinx_ext.render_mathml(r'x"<y')
    assert 'aria-label="x&quot;&lt;y"' in label and "<y" not in label.split(">", 1)[0]
    with pytest.raises(MathError, match=r"cannot convert the formula 'x\^'"):
        sphinx_ext.render_mathml("x^")
    with pytest.raises(MathError, match=r"uses \\unknowncmd, which latex2mathml cannot convert") as err:
        sphinx_ext.render_mathml(r"\unknowncmd x")
    assert isinstance(err.value, RmlibError)  # one of rmlib's errors: the CLI prints it as one line


def test_theme_gets_mode_templates_and_mathml(tmp_path):
    config = types.SimpleNamespace(html_math_renderer=None, templates_path=["_templates"], html_context={})
    sphinx_ext.configure(None, config)
    assert config.html_math_renderer == sphinx_ext.MATH_RENDERER
    assert config.html_context == {"default_mode": "light"}
    assert config.templates_path[0] == str(sphinx_ext.TEMPLATES_DIR)
    assert (sphinx_ext.TEMPLATES_DIR / "static" / "webpack-macros.html").is_file()
    sphinx_ext.configure(None, config)  # idempotent
    assert config.templates_path.count(str(sphinx_ext.TEMPLATES_DIR)) == 1


def test_a_parameter_papermill_cannot_see_is_reported(tmp_path):
    import nbformat

    from rmlib.book import notebook_parameters

    nb = nbformat.v4.new_notebook(metadata={"kernelspec": {"name": "python3", "display_name": "Python 3",
                                                           "language": "python"}})
    cell = nbformat.v4.new_code_cell("n_top = 10\nprompt = 'x'  # e.g. a=b hides it from papermill\n")
    cell.metadata["tags"] = ["parameters"]
    nb.cells.append(cell)
    path = tmp_path / "01_demo.ipynb"
    nbformat.write(nb, str(path))
    with pytest.raises(ValueError, match="does not see parameter 'prompt'"):
        notebook_parameters(path)


# --------------------------------------------------------------------------- timings
def test_timings_read_papermill_durations_of_a_real_run(tmp_path, fake_models, capsys):
    from rmlib.book import timings

    src = tmp_path / "src"
    src.mkdir()
    path = make_notebook(src / "07_example.ipynb", PARAMS_CELL)
    nb = nbformat.read(str(path), as_version=4)
    nb.cells.insert(0, nbformat.v4.new_markdown_cell("# A timed | chapter"))
    nb.cells.append(nbformat.v4.new_code_cell("import time\ntime.sleep(0.6)"))
    nbformat.write(nb, str(path))
    out = book.run_chapter(path, None, output_dir=tmp_path / "chapters")
    executed = nbformat.read(str(out), as_version=4)
    durations = [c.metadata["papermill"]["duration"] for c in executed.cells if c.cell_type == "code"]
    (row,) = timings.chapter_timings(tmp_path / "chapters")
    assert row["chapter"] == "07" and row["title"] == "A timed | chapter"
    assert row["cells"] == len(durations) and row["seconds"] == pytest.approx(sum(durations))
    assert row["slowest_line"] == "import time" and 0.6 <= row["slowest_seconds"] < 5
    assert book_main(["timings", str(tmp_path / "chapters")]) == 0
    table = capsys.readouterr().out.splitlines()
    assert table[0] == "| chapter | title | time on a CPU | cells | slowest cell |"
    assert table[2].startswith("| 07 | A timed \\| chapter | ")
    assert table[-1].startswith(f"| all | | {timings.format_seconds(row['seconds'])} | {len(durations)} |")


def test_the_course_page_shows_this_builds_chapter_times(tmp_path):
    """The course page's timings come from the executed chapters beside it, at build time: the
    marker line becomes the table of their papermill durations, re-read on every build."""
    from types import SimpleNamespace

    chapters = tmp_path / "chapters"
    chapters.mkdir()
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell("# Timed"), nbformat.v4.new_code_cell("x = 1"),
                nbformat.v4.new_code_cell("y = 2")]
    nb.cells[1].metadata["papermill"] = {"duration": 2.0}
    nb.cells[2].metadata["papermill"] = {"duration": 3.5}
    nbformat.write(nb, str(chapters / "08_timed.ipynb"))
    source = [f"# Course\n\n{sphinx_ext.TIMINGS_MARKER}\n"]
    sphinx_ext.fill_timings(SimpleNamespace(srcdir=str(tmp_path)), "course", source)
    assert sphinx_ext.TIMINGS_MARKER not in source[0]
    assert "| 08 | Timed | 5.5 s | 2 | 3.5 s: `y = 2` |" in source[0]
    assert "| all | | 5.5 s | 2 | |" in source[0]
    assert "no times to show" in sphinx_ext.timings_markdown(tmp_path / "nothing-here")
    page = (book.BOOK_DIR / "course.md").read_text(encoding="utf-8")
    assert sphinx_ext.TIMINGS_MARKER in page and "| 01 | 7 min" not in page  # no typed-in times
    assert "Prerequisites" in page and "Learning objectives" in page
    assert "starts with a box listing its parameters" not in page  # the re-run box closes a chapter


def test_timings_errors_and_formatting(tmp_path, capsys):
    from rmlib.book import timings

    assert book_main(["timings", str(tmp_path)]) == 1
    assert "no executed chapter" in capsys.readouterr().err
    make_notebook(tmp_path / "01_never_run.ipynb", PARAMS_CELL)
    with pytest.raises(ValueError, match="01_never_run.ipynb has no papermill cell durations"):
        timings.chapter_timings(tmp_path)
    assert [timings.format_seconds(s) for s in (3.25, 42, 185, 3725)] == ["3.2 s", "42 s", "3 min 05 s", "1 h 02 min"]
    with pytest.raises(ValueError, match="negative"):
        timings.format_seconds(-1)


def test_book_keeps_the_static_version_of_widgets(tmp_path):
    from rmlib.book.execute import WIDGET_STATE, WIDGET_VIEW, prefer_static_widgets

    def output(data):
        return nbformat.v4.new_output("display_data", data=data)

    nb = nbformat.v4.new_notebook()
    nb.metadata["widgets"] = {WIDGET_STATE: {"state": {"m1": {}}, "version_major": 2}}
    with_static = nbformat.v4.new_code_cell("explorer(...)")
    with_static.outputs = [output({"text/plain": "VBox()", "text/html": "<p>static</p>", WIDGET_VIEW: {"model_id": "m1"}})]
    nb.cells = [with_static]
    assert prefer_static_widgets(nb) is True
    assert set(with_static.outputs[0]["data"]) == {"text/plain", "text/html"}
    assert "widgets" not in nb.metadata            # no state left: myst-nb adds no widget bundle
    assert prefer_static_widgets(nb) is False      # idempotent
    # a widget without a static version keeps its view and the saved state
    nb.metadata["widgets"] = {WIDGET_STATE: {"state": {"m2": {}}}}
    slider = nbformat.v4.new_code_cell("IntSlider()")
    slider.outputs = [output({"text/plain": "IntSlider()", WIDGET_VIEW: {"model_id": "m2"}})]
    nb.cells.append(slider)
    assert prefer_static_widgets(nb) is False
    assert WIDGET_VIEW in slider.outputs[0]["data"] and WIDGET_STATE in nb.metadata["widgets"]


def test_explorer_chapter_page_has_no_widget_state(tmp_path):
    """A real papermill run of a notebook displaying the explorer: the executed page keeps the static
    HTML (note + escaped result) and no widget state."""
    src = tmp_path / "src"
    src.mkdir()
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    params = nbformat.v4.new_code_cell('prompt = "best <food>?"')
    params.metadata["tags"] = ["parameters"]
    nb.cells = [params, nbformat.v4.new_code_cell(
        "import pandas as pd\nfrom rmlib.viz import explorers\n"
        "class S:\n"
        "    def __init__(self, m): pass\n"
        "    def score_tokens(self, prompt, token_ids=None):\n"
        "        v = ['<i>x</i>', 'b', 'c']\n"
        "        return pd.DataFrame({'token_id': [0, 1, 2], 'token': v, 'decoded': v, 'score': [3.0, 2.0, 1.0]})\n"
        "explorers.explorer(S, ['m'], prompt, n=1)")]
    nbformat.write(nb, str(src / "42_demo.ipynb"))
    out = book.run_chapter(src / "42_demo.ipynb", None, output_dir=tmp_path / "chapters")
    executed = nbformat.read(str(out), as_version=4)
    (display,) = [o for o in executed.cells[-1].outputs if "data" in o]
    assert "application/vnd.jupyter.widget-view+json" not in display["data"]
    static = display["data"]["text/html"]
    assert "make chapter CH=42" in html_unescape(static) and "&lt;i&gt;x&lt;/i&gt;" in static
    assert "widgets" not in executed.metadata
