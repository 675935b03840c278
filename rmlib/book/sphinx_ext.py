"""Sphinx extension (``extra_extensions: [rmlib.book.sphinx_ext]``): no page loads from the
network, and a page loads only the scripts it uses.

- Math is converted to MathML at build time (:func:`render_mathml`, with
  ``latex2mathml``): browsers draw MathML themselves, so no page loads MathJax
  (1.2 MB) for a few symbols.
- ``rmlib-vega.js`` (0.9 MB) is kept only on pages that hold an Altair chart
  (``rmlib-chart`` in the body), sphinx-design's CSS and tab script (60 kB)
  only on pages that use its components; myst-nb already adds the widget bundle only to
  pages with widget state.
- The theme's Font Awesome JavaScript (1.5 MB, it swaps ``<i>`` icons for SVG)
  is left out (``templates/static/webpack-macros.html``): the theme's CSS draws
  the same icons from its web font.
- The search index and scripts (``templates/layout.html``) load only on the
  search page: on other pages they serve the theme's search-as-you-type,
  which is off.
- The search index reads each output's text with a space for each tag (Sphinx
  glues a table's cells into junk words) and without the collapsed "show all N
  rows" of short tables (``<details class="rmlib-noindex">``,
  :func:`rmlib.viz.html.short_table`), which repeat the rows shown above them:
  :func:`index_view`; an incremental build drops the terms no page holds any
  more (:func:`drop_dead_terms`). All three made the index heavier than the
  search page may be.
- The theme mode has a default (the theme logs an error on every page without
  one).
- A page holding the line :data:`TIMINGS_MARKER` (the course page) gets, in its place, the table of
  this build's own chapter times (:func:`rmlib.book.timings.chapter_timings` of the executed
  chapters beside it), and is re-read on every build so that the table follows the chapters.
"""

from __future__ import annotations

import html
import pathlib
import re

from ..errors import MathError


# --------------------------------------------------------------------------- Sphinx extension
#: Vendored folders whose scripts are loaded by their own loaders, not on every page.
_VENDOR_SUBDIRS = ("mathjax/", "jupyter-widgets/")
_NETWORK_TAG = re.compile(
    r"<(?:script|link|iframe|img|source|embed)\b[^>]*?\b(?:src|href)\s*=\s*[\"']?(?:https?:)?//",
    re.IGNORECASE,
)


#: Scripts and style sheets (by file name) that a page keeps only if its body contains the marker.
SCRIPT_MARKERS = {"rmlib-vega.js": "rmlib-chart", "design-tabs.js": "sd-tab"}
STYLE_MARKERS = {"sphinx-design.min.css": "sd-"}
TEMPLATES_DIR = pathlib.Path(__file__).with_name("templates")
MATH_RENDERER = "rmlib-mathml"
_UNCONVERTED = re.compile(r">(\\[A-Za-z]+)<")


def _entry_name(entry: object) -> str:
    return entry[0] if isinstance(entry, (tuple, list)) else str(entry)


def drop_vendored_assets(app, config) -> None:
    """Jupyter Book adds every .js/.css under html_static_path to every page;
    keep the vendored libraries (MathJax, html-manager) out of that list."""
    for key in ("html_js_files", "html_css_files"):
        entries = getattr(config, key)
        setattr(config, key, [e for e in entries if not _entry_name(e).startswith(_VENDOR_SUBDIRS)])


def _is_thebe_asset(asset: object) -> bool:
    name = getattr(asset, "filename", asset)
    body = getattr(asset, "attributes", {}).get("body", "") if hasattr(asset, "attributes") else ""
    return (isinstance(name, str) and name.endswith("sphinx-thebe.js")) or "THEBE_JS_URL" in (body or "")


def forbid_network_assets(app, pagename, templatename, context, doctree) -> None:
    """Fail the build if a page would load a script, style or frame from another host.

    Also drops sphinx-thebe's scripts (Jupyter Book loads the extension
    always): launch buttons are off in this book, and its inline config is
    added twice per page (a page error) and names a CDN.
    """
    from sphinx.errors import ExtensionError

    if "script_files" in context:
        context["script_files"] = [a for a in context["script_files"] if not _is_thebe_asset(a)]
    for key in ("script_files", "css_files"):
        for asset in context.get(key, []):
            name = getattr(asset, "filename", asset)
            if isinstance(name, str) and ("://" in name or name.startswith("//")):
                raise ExtensionError(
                    f"page {pagename!r} would load {name} from the network; vendor it (tools/vendor_js.py)"
                )
    match = _NETWORK_TAG.search(context.get("body", "") or "")
    if match:
        raise ExtensionError(
            f"page {pagename!r} has an element that loads from the network: {match.group(0)[:120]!r}; "
            "in notebooks use rmlib.viz.charts.enable() for Altair charts and rmlib.viz.html.table for tables"
        )


# --------------------------------------------------------------------------- per-page scripts
def _asset_name(asset: object) -> str:
    name = getattr(asset, "filename", asset)
    return name.rsplit("/", 1)[-1].split("?", 1)[0] if isinstance(name, str) else ""


def drop_unused_scripts(app, pagename, templatename, context, doctree) -> None:
    """Keep a marked script or style sheet (:data:`SCRIPT_MARKERS`, :data:`STYLE_MARKERS`) only on
    pages whose body uses it."""
    body = context.get("body", "") or ""
    for key, markers in (("script_files", SCRIPT_MARKERS), ("css_files", STYLE_MARKERS)):
        if key in context:
            context[key] = [a for a in context[key]
                            if _asset_name(a) not in markers or markers[_asset_name(a)] in body]


def configure(app, config) -> None:
    """Math as MathML, the templates (no Font Awesome JavaScript, no search index on every page),
    a default theme mode."""
    config.html_math_renderer = MATH_RENDERER
    templates = str(TEMPLATES_DIR)
    if templates not in config.templates_path:
        config.templates_path = [templates, *config.templates_path]
    context = dict(config.html_context or {})
    context.setdefault("default_mode", "light")
    config.html_context = context


# --------------------------------------------------------------------------- search index
_SCRIPT_OR_STYLE = re.compile(r"<(script|style)\b.*?</\1\s*>", re.IGNORECASE | re.DOTALL)
_TAG = re.compile(r"<[^<]+?>")


def _noindex_pattern(cls: str) -> re.Pattern:
    return re.compile(rf'<details class="{re.escape(cls)}">.*?</details>', re.DOTALL)


def index_text(html_text: str) -> str:
    """What the search index reads of a raw HTML output: no ``<details class="rmlib-noindex">``
    part, no script or style, and a space where each tag was. Sphinx itself deletes the tags, which
    glues a table's cells into one word ("people20265916388humans_betterspoon"): junk terms
    that nobody searches for and that made the index heavier than the search page may be."""
    from ..viz.html import NOINDEX_CLASS

    text = _noindex_pattern(NOINDEX_CLASS).sub(" ", html_text)
    return _TAG.sub(" ", _SCRIPT_OR_STYLE.sub(" ", text))


def index_view(doctree):
    """A copy of ``doctree`` whose raw HTML nodes hold :func:`index_text` of their HTML: what the
    search index is fed (the page itself keeps everything)."""
    from docutils import nodes

    copy = doctree.deepcopy()
    for node in list(copy.findall(nodes.raw)):
        if "html" in node.get("format", "").split():
            node.replace_self(nodes.raw("", index_text(node.astext()), format=node["format"]))
    return copy


def drop_dead_terms(indexer) -> int:
    """Remove the terms that no page holds any more from a Sphinx ``IndexBuilder``; return how many.

    An incremental build prunes the rebuilt pages from every term but keeps the terms, so each
    rebuild of a changed page left its old words in the index with no page (13,710 of 17,929
    terms after two builds of this book)."""
    dropped = 0
    for name in ("_mapping", "_title_mapping"):
        mapping = getattr(indexer, name, None)
        if isinstance(mapping, dict):
            dead = [word for word, pages in mapping.items() if not pages]
            for word in dead:
                del mapping[word]
            dropped += len(dead)
    return dropped


def index_views(app) -> None:
    """Feed the search index each page's :func:`index_view`, and drop its dead terms
    (:func:`drop_dead_terms`) once the pages to rebuild are pruned from it."""
    builder = app.builder
    index_page = getattr(builder, "index_page", None)
    if index_page is None or getattr(index_page, "rmlib_index_view", False):
        return

    def index_page_view(pagename, doctree, title):
        index_page(pagename, index_view(doctree), title)

    index_page_view.rmlib_index_view = True
    builder.index_page = index_page_view
    load_indexer = getattr(builder, "load_indexer", None)
    if load_indexer is not None:
        def load_and_prune(docnames):
            load_indexer(docnames)
            drop_dead_terms(builder.indexer)

        builder.load_indexer = load_and_prune


# --------------------------------------------------------------------------- math
def render_mathml(tex: str, display: bool = False) -> str:
    """``tex`` as a MathML ``<math>`` element (``display="block"`` for display math).

    Raises :class:`MathError` naming the formula when it cannot be converted;
    the page would otherwise show raw TeX.
    """
    try:
        from latex2mathml.converter import convert
    except ImportError as err:  # pragma: no cover - a requirement of the book extra
        raise MathError("the book renders math with latex2mathml: pip install latex2mathml") from err
    try:
        out = convert(tex.strip(), display="block" if display else "inline")
    except Exception as err:  # latex2mathml raises many exception types
        raise MathError(
            f"cannot convert the formula {tex!r} to MathML ({type(err).__name__}: {err}); "
            "simplify it or write it as text"
        ) from err
    unknown = _UNCONVERTED.search(out)
    if unknown:  # latex2mathml keeps commands it does not know as text
        raise MathError(
            f"the formula {tex!r} uses {unknown.group(1)}, which latex2mathml cannot convert; "
            "use a supported command or write it as text"
        )
    # the TeX source as an accessible annotation-free fallback label
    return out.replace("<math ", f'<math aria-label="{html.escape(tex.strip(), quote=True)}" ', 1)


def _mathml_or_warning(node, tex: str, display: bool) -> str:
    """MathML, or (with a build warning at the formula's place; the book builds with -W) the TeX as code."""
    try:
        return render_mathml(tex, display=display)
    except MathError as err:
        from sphinx.util import logging

        logging.getLogger(__name__).warning(str(err), location=node)
        return f"<code>{html.escape(tex)}</code>"


def _visit_math(self, node) -> None:
    from docutils import nodes

    self.body.append(self.starttag(node, "span", "", CLASS="math notranslate nohighlight"))
    self.body.append(_mathml_or_warning(node, node.astext(), False) + "</span>")
    raise nodes.SkipNode


def _visit_math_block(self, node) -> None:
    from docutils import nodes

    self.body.append(self.starttag(node, "div", CLASS="math notranslate nohighlight"))
    if node.get("number"):
        from sphinx.util.math import get_node_equation_number

        self.body.append(f'<span class="eqno">({get_node_equation_number(self, node)})</span>')
    parts = [p for p in node.astext().split("\n\n") if p.strip()]
    self.body.append("".join(_mathml_or_warning(node, p, True) for p in parts) + "</div>\n")
    raise nodes.SkipNode


#: The line a page holds where the build's chapter times go (:func:`timings_markdown`).
TIMINGS_MARKER = "<!-- rmlib: chapter timings -->"


def timings_markdown(chapters_dir: pathlib.Path | str) -> str:
    """The markdown table of the chapters executed in ``chapters_dir`` (papermill's cell times), or
    one sentence saying why there is none."""
    from .timings import chapter_timings, timings_table
    from ..errors import InputError

    try:
        return timings_table(chapter_timings(chapters_dir))
    except FileNotFoundError:
        return "*No chapter was executed for this build, so there are no times to show.*"
    except InputError as err:
        return f"*The chapter times cannot be shown: {err}*"


def fill_timings(app, docname: str, source: list) -> None:
    if TIMINGS_MARKER in source[0]:
        table = timings_markdown(pathlib.Path(app.srcdir) / "chapters")
        source[0] = source[0].replace(TIMINGS_MARKER, table)


def _timings_pages_outdated(app, env, added, changed, removed) -> list[str]:
    """Pages with the timings marker are re-read on every build: their table reads the chapters."""
    pages = []
    for docname in env.found_docs:
        path = pathlib.Path(env.doc2path(docname))
        if path.suffix == ".md" and path.is_file() and TIMINGS_MARKER in path.read_text(encoding="utf-8"):
            pages.append(docname)
    return pages


def setup(app) -> dict:
    """Sphinx extension (``extra_extensions: [rmlib.book.sphinx_ext]`` in ``_config.yml``)."""
    app.add_html_math_renderer(MATH_RENDERER, (_visit_math, None), (_visit_math_block, None))
    app.connect("config-inited", drop_vendored_assets, priority=900)
    app.connect("config-inited", configure, priority=900)
    app.connect("html-page-context", drop_unused_scripts, priority=800)
    app.connect("html-page-context", forbid_network_assets, priority=900)
    app.connect("builder-inited", index_views)
    app.connect("source-read", fill_timings)
    app.connect("env-get-outdated", _timings_pages_outdated)
    return {"parallel_read_safe": True, "parallel_write_safe": True}


