"""The built book in a real browser: charts draw, dropdowns work, nothing leaves 127.0.0.1,
hostile vocabulary strings stay text, and every page is clean and light.

Builds a small book (intro, the course page and the appendix page 99, executed
by papermill) in a temporary folder with the project's _config.yml, serves it
on 127.0.0.1 and drives Debian's Chromium (/usr/bin/chromium; `.ci/run`
installs it) with Playwright. Skipped, with the reason, only when Chromium is
not installed.

Every page (``test_page_is_clean``) fails on a console error or uncaught
exception, on an element wider than the content column that is not inside its
own scroll box, on a key column of a table (``rmlib.viz.html.KEY_CLASS``: a verdict, a score,
the live values) that a 1280 px window shows only after scrolling sideways, on what
``tests.test_book_pages.page_problems`` finds in the rendered text (raw MyST markup, ``None`` in
a table cell, an internal label), on a dropdown that does not redraw, and on page weight: at most
1 MB transferred without chart or widget, 4 MB with; the Vega and widget
bundles only where a chart or widget is. ``RMLIB_BROWSER_FULL_BOOK=<path to
_build/html>`` runs these checks over every page of that build instead of
building the small book.
"""

import functools
import http.server
import os
import pathlib
import shutil
import subprocess
import sys
import threading
import urllib.parse

import pytest

from rmlib import book
from rmlib.viz import html as rhtml
from rmlib.viz.html import KEY_CLASS
from tests.test_book_pages import page_problems, source_labels

CHROMIUM = pathlib.Path(os.environ.get("RMLIB_CHROMIUM", "/usr/bin/chromium"))
pytestmark = pytest.mark.skipif(
    not CHROMIUM.exists(), reason=f"{CHROMIUM} not installed (apt-get install -y chromium)"
)
CHROMIUM_ARGS = [
    "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--disable-default-apps", "--no-default-browser-check",
]
PAGE99 = "chapters/99_rendering_untrusted_strings.html"
#: The labels the book's sources define: none may show in a page's text.
LABELS = source_labels()
FULL_BOOK = os.environ.get("RMLIB_BROWSER_FULL_BOOK", "").strip()
#: Bytes a page may transfer (sum of response bodies): without chart or widget, and at most.
LIGHT_PAGE_LIMIT = 1_000_000
PAGE_LIMIT = 4_000_000
#: Console messages that are not errors of the book (none so far).
ALLOWED_CONSOLE_ERRORS: tuple[str, ...] = ()


def _pages() -> list[str]:
    """Pages to check: every HTML page of the full build if given, else the small book's."""
    if FULL_BOOK:
        root = pathlib.Path(FULL_BOOK)
        if not (root / "index.html").is_file():
            raise pytest.UsageError(f"RMLIB_BROWSER_FULL_BOOK={FULL_BOOK}: no index.html there; give _build/html")
        return sorted(p.relative_to(root).as_posix() for p in root.rglob("*.html")
                      if not p.relative_to(root).as_posix().startswith(("_static/", "_sources/", "_images/")))
    return ["intro.html", "course.html", PAGE99, "search.html", "genindex.html"]


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """Build intro, course page and chapter 99 into a temporary book; return its _build/html."""
    if FULL_BOOK:
        return pathlib.Path(FULL_BOOK)
    tmp = tmp_path_factory.mktemp("book")
    subprocess.run([sys.executable, str(book.ROOT / "tools" / "vendor_js.py")], check=True, cwd=book.ROOT)
    src = tmp / "src"
    src.mkdir()
    for page in book.BOOK_DIR.glob("*.md"):
        if page.name != "README.md":
            shutil.copy2(page, src / page.name)
    shutil.copytree(book.BOOK_DIR / "_static", src / "_static")
    shutil.copytree(book.paths.VENDOR_DIR, src / "_vendor")
    book.run_chapter("99", None, output_dir=src / "chapters")
    return book.build_book(src, output_dir=tmp, fresh=True)


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def server(site):
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_QuietHandler, directory=str(site)))
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    thread.join()


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS)
        yield b
        b.close()


class Visit:
    """A page with every request, response size, console message, dialog and page error recorded;
    non-local requests aborted."""

    def __init__(self, browser, base):
        self.base_host = urllib.parse.urlsplit(base).netloc
        self.context = browser.new_context(viewport={"width": 1300, "height": 900})
        self.requests, self.foreign, self.dialogs, self.errors = [], [], [], []
        self.console_errors, self.sizes = [], {}
        self.context.route("**/*", self._route)
        self.page = self.context.new_page()
        self.page.on("dialog", self._dialog)
        self.page.on("pageerror", lambda err: self.errors.append(str(err)))
        self.page.on("console", self._console)
        self.page.on("response", self._response)

    def _console(self, msg):
        if msg.type == "error" and not any(a in msg.text for a in ALLOWED_CONSOLE_ERRORS):
            where = msg.location.get("url", "") if isinstance(msg.location, dict) else ""
            self.console_errors.append(f"{msg.text} ({where})")

    def _response(self, response):
        try:
            self.sizes[response.url] = len(response.body())
        except Exception:  # a redirect or an aborted request has no body
            self.sizes.setdefault(response.url, 0)

    def transferred(self) -> int:
        return sum(self.sizes.values())

    def _route(self, route):
        url = route.request.url
        self.requests.append(url)
        if urllib.parse.urlsplit(url).netloc != self.base_host:
            self.foreign.append(url)
            route.abort()
        else:
            route.continue_()

    def _dialog(self, dialog):
        self.dialogs.append(dialog.message)
        dialog.dismiss()

    def close(self):
        self.context.close()


@pytest.fixture
def visit(browser, server):
    opened = []

    def open_page(path):
        v = Visit(browser, server)
        opened.append(v)
        v.page.goto(f"{server}/{path}", wait_until="load")
        return v

    yield open_page
    for v in opened:
        v.close()


def chart_text(chart):
    return chart.locator("svg").first.evaluate("svg => svg.textContent")


def wait_for_charts(page, timeout=20000):
    n = page.locator(".rmlib-chart").count()
    page.wait_for_function(
        "n => document.querySelectorAll('.rmlib-chart svg.marks, .rmlib-chart canvas').length >= n",
        arg=n, timeout=timeout,
    )
    return n


def test_charts_render_offline(visit):
    v = visit(PAGE99)
    n = wait_for_charts(v.page)
    assert n == 5
    assert v.page.locator(".rmlib-chart-error").count() == 0
    for i in range(n):
        marks = v.page.locator(".rmlib-chart").nth(i).locator("svg.marks [role='graphics-symbol'], svg.marks path")
        assert marks.count() > 0, f"chart {i} drew no marks"
    assert v.requests, "no request recorded at all"
    assert v.foreign == [], f"requests to other hosts: {v.foreign}"
    assert v.errors == []


def test_dropdowns_change_the_chart(visit):
    v = visit(PAGE99)
    wait_for_charts(v.page)
    chart = v.page.locator(".rmlib-chart").first
    for name in ("model_select", "prompt_select"):
        select = chart.locator(f"select[name='{name}']")
        assert select.count() == 1
        options = select.locator("option").all_text_contents()
        assert len(options) == 2
        before = chart_text(chart)
        select.select_option(index=1)
        v.page.wait_for_function(
            "([el, before]) => el.querySelector('svg').textContent !== before",
            arg=[chart.element_handle(), before], timeout=10000,
        )
        assert chart_text(chart) != before
    # the second option of the model dropdown is the hostile model name, shown as text
    assert "model-B <i>" in chart.locator("select[name='model_select'] option").all_text_contents()
    assert v.errors == [] and v.foreign == []


def test_hostile_strings_do_not_execute(visit):
    v = visit(PAGE99)
    page = v.page
    # injected handlers would have run by the load event (images wait for it)
    assert page.evaluate("typeof window.__pwned") == "undefined", "a hostile string ran as code"
    assert v.dialogs == [], f"a hostile string opened a dialog: {v.dialogs}"
    wait_for_charts(page)
    # the explorer's static version: its escaped tables, a one-line note, no dead control, no widget bundle
    explorer = page.locator(".rmlib-explorer-static")
    assert explorer.count() == 1 and explorer.locator("table.rmlib-table").count() == 2
    assert explorer.locator("button, select, input").count() == 0
    note = explorer.locator(".rmlib-explorer-note")
    assert note.count() == 1 and note.is_visible()
    assert "needs a running Python kernel" in note.inner_text() and "CH=99" in note.inner_text()
    assert page.locator(".jupyter-widgets").count() == 0
    assert not any("/jupyter-widgets/" in u for u in v.requests)
    assert page.locator(".rmlib-explorer-static table.rmlib-table").count() == 2
    assert page.evaluate("typeof window.__pwned") == "undefined"
    assert v.dialogs == []
    injected = page.evaluate("""() => ({
        imgs: [...document.querySelectorAll('img')].filter(i => i.getAttribute('src') === 'x'
              || i.hasAttribute('onerror')).length,
        bold: [...document.querySelectorAll('b')].filter(b => b.textContent.includes('bold?')).length,
        svgs: [...document.querySelectorAll('svg')].filter(s => s.hasAttribute('onload')).length,
        scripts: [...document.querySelectorAll('script')].filter(s => !s.src && !s.type.includes('json')
              && /^\\s*window\\.__pwned/.test(s.textContent)).length,
        tables: [...document.querySelectorAll('table.rmlib-table')].filter(t => !t.closest('.rmlib-rerun')).length,
    })""")
    # the hostile table (15 rows shown, all in its collapsed "show all") and the explorer's two; the
    # Re-run box's table of parameters is not counted
    assert injected == {"imgs": 0, "bold": 0, "svgs": 0, "scripts": 0, "tables": 4}
    # hover over every bar of the first chart: tooltips show the strings as text
    bars = page.locator(".rmlib-chart").first.locator("svg.marks path[role='graphics-symbol']")
    for i in range(bars.count()):
        bars.nth(i).hover(force=True)
    tooltip = page.locator("#vg-tooltip-element")
    assert tooltip.count() == 1 and tooltip.locator("img, script, b").count() == 0
    assert page.evaluate("typeof window.__pwned") == "undefined" and v.dialogs == []
    cells = page.locator("table.rmlib-table").nth(1).locator("td").all_text_contents()  # the whole table
    assert '"><img/src=x/onerror=window.__pwned=1;alert(1)>' in cells
    assert "<script>window.__pwned=1;alert(1)</script>" in cells and "<svg/onload=window.__pwned=1>" in cells
    assert "\u2423the" in cells and "\\n" in cells and "\u2205" in cells
    assert v.errors == [] and v.foreign == []


def test_intro_math_is_mathml_without_scripts(visit):
    v = visit("intro.html")
    maths = v.page.locator("span.math > math")
    assert maths.count() >= 3
    # Chromium lays MathML out itself: each formula has a size, no script was fetched for it
    for i in range(maths.count()):
        box = maths.nth(i).bounding_box()
        assert box and box["width"] > 0 and box["height"] > 0
    assert not any("mathjax" in u.lower() for u in v.requests)
    assert v.foreign == [] and v.errors == [] and v.console_errors == []


def test_search_works_without_the_index_on_every_page(visit):
    v = visit("intro.html")
    assert not any(u.split("?")[0].endswith("/searchindex.js") for u in v.requests)
    v.page.locator("button.search-button, button.search-button-field").first.click()  # the theme's search dialog
    field = v.page.locator("form.bd-search input[name='q']:visible").first
    field.fill("untrusted")
    field.press("Enter")
    v.page.wait_for_url("**/search.html?q=untrusted*", timeout=10000)
    v.page.wait_for_selector("#search-results li", timeout=15000)
    assert any("99_rendering_untrusted_strings" in h for h in
               v.page.locator("#search-results li a").evaluate_all("as => as.map(a => a.href)"))
    assert v.errors == [] and v.console_errors == [] and v.foreign == []


def test_exercise_solution_is_hidden_until_opened(visit):
    v = visit(PAGE99)
    exercise = v.page.locator("div.exercise")
    assert exercise.count() == 1 and exercise.is_visible()
    solution = v.page.locator("div.solution")
    v.page.wait_for_selector("div.solution button.toggle-button", timeout=10000)
    body = solution.locator("section, p").last
    assert not body.is_visible(), "the worked solution is shown before the reader asks for it"
    solution.locator("button.toggle-button").click()
    body.wait_for(state="visible", timeout=5000)
    assert "escape_table" in solution.inner_text()


# --------------------------------------------------------------------------- every page
#: Elements that stick out of the content column (``article.bd-article``) and are not inside a
#: box that scrolls horizontally (overflow-x auto/scroll) lying within the column. An element
#: clipped by an ``overflow: hidden`` box is cut off: reported too.
OVERFLOW_JS = """() => {
  const column = document.querySelector('article.bd-article') || document.querySelector('.bd-article-container')
                 || document.querySelector('main');
  if (!column) return ['no content column (article.bd-article, .bd-article-container, main) on the page'];
  const c = column.getBoundingClientRect();
  const bad = [];
  for (const el of column.querySelectorAll('*')) {
    if (el.ownerSVGElement) continue;  // a drawing's parts: its <svg> box is what is checked
    const r = el.getBoundingClientRect();
    if (r.width === 0 || r.height === 0) continue;
    if (r.right <= c.right + 1 && r.left >= c.left - 1) continue;
    let ok = false;
    for (let a = el.parentElement; a && a !== column; a = a.parentElement) {
      const ox = getComputedStyle(a).overflowX;
      if (ox === 'visible') continue;
      const ar = a.getBoundingClientRect();
      ok = (ox === 'auto' || ox === 'scroll') && ar.right <= c.right + 1 && ar.left >= c.left - 1;
      break;
    }
    const own = getComputedStyle(el).overflowX;
    if (!ok && (own === 'auto' || own === 'scroll') && el.scrollWidth > el.clientWidth
        && r.right <= c.right + 1 && r.left >= c.left - 1) ok = true;
    if (ok) continue;
    // report the outermost offender only
    if (bad.length && bad[bad.length - 1].el.contains(el)) continue;
    bad.push({el, text: `${el.tagName.toLowerCase()}.${[...el.classList].join('.')} `
              + `[${Math.round(r.left)}, ${Math.round(r.right)}] vs column [${Math.round(c.left)}, `
              + `${Math.round(c.right)}]: ${(el.innerText || el.textContent || '').trim().slice(0, 60)}`});
  }
  return bad.map(b => b.text);
}"""

#: Text of the nearest chart or output box of a select, SVG markup included (a redraw may change
#: only the bars' lengths): what a redraw changes.
SNAPSHOT_JS = """(sel) => {
  const box = sel.closest('.rmlib-chart') || sel.closest('.cell_output') || document.body;
  const svg = [...box.querySelectorAll('svg')].map(s => s.innerHTML).join('|');
  return box.innerText.replace(sel.innerText, '') + '|' + svg;
}"""


def test_overflow_check_finds_what_sticks_out(visit):
    """The column check itself: a wide element is reported, in its own scroll box it is not,
    and cut off by an ``overflow: hidden`` box it is reported again."""
    v = visit("intro.html")
    assert v.page.evaluate(OVERFLOW_JS) == []
    v.page.evaluate("""() => {
        const a = document.querySelector('article.bd-article');
        a.insertAdjacentHTML('beforeend',
          '<div id="scrolls" style="overflow-x:auto"><pre style="width:3000px">scrolls</pre></div>'
          + '<table id="wide"><tr><td style="min-width:3000px">Spearman rho</td></tr></table>');
    }""")
    found = v.page.evaluate(OVERFLOW_JS)
    assert len(found) == 1 and found[0].startswith("table.") and "Spearman rho" in found[0]
    v.page.evaluate("() => { const w = document.getElementById('wide');"
                    " w.outerHTML = '<div style=\"overflow:hidden\">' + w.outerHTML + '</div>'; }")
    found = v.page.evaluate(OVERFLOW_JS)
    assert len(found) == 1 and "Spearman rho" in found[0], "a clipped table is cut off, not scrollable"


#: The key columns (``th.rmlib-key``) of every table that a reader sees only after scrolling the
#: table sideways: the part of the header cell inside the table's visible box (and the content
#: column) is less than its whole width.
HIDDEN_KEYS_JS = """(keyClass) => {
  const column = document.querySelector('article.bd-article') || document.querySelector('main') || document.body;
  const c = column.getBoundingClientRect();
  const hidden = [];
  for (const table of column.querySelectorAll('table')) {
    table.scrollLeft = 0;
    const t = table.getBoundingClientRect();
    const right = Math.min(t.right, c.right);
    for (const th of table.querySelectorAll('thead th.' + keyClass)) {
      const r = th.getBoundingClientRect();
      if (r.width === 0) continue;
      if (r.right > right + 1) hidden.push(`"${th.innerText.trim().slice(0, 40)}" [${Math.round(r.left)}, `
        + `${Math.round(r.right)}] beyond the table's visible edge ${Math.round(right)}`
        + ` (${(table.querySelector('caption') || {}).innerText || 'table ' + [...column.querySelectorAll('table')].indexOf(table)})`);
    }
  }
  return hidden;
}"""
#: The window width at which key columns must be visible.
KEY_WIDTH = 1280


def test_key_column_check_finds_a_column_off_screen(visit):
    """The key-column check itself: a key column beyond a wide table's visible edge is reported, one
    that fits is not, and neither is a wide table's ordinary column."""
    v = visit("intro.html")
    v.page.set_viewport_size({"width": KEY_WIDTH, "height": 900})
    assert v.page.evaluate(HIDDEN_KEYS_JS, KEY_CLASS) == []
    filler = "".join(f"<th>column {i} with a long name</th>" for i in range(12))
    v.page.evaluate("""(filler) => document.querySelector('article.bd-article').insertAdjacentHTML('beforeend',
        '<table class="rmlib-table"><caption>wide</caption><thead><tr><th class="rmlib-key">score</th>' + filler
        + '<th class="rmlib-key">verdict</th></tr></thead><tbody><tr><td>1</td></tr></tbody></table>'
        + '<table class="rmlib-table"><thead><tr><th class="rmlib-key">verdict</th><th>p</th></tr></thead></table>')""",
                    filler)
    found = v.page.evaluate(HIDDEN_KEYS_JS, KEY_CLASS)
    assert len(found) == 1 and found[0].startswith('"verdict"') and found[0].endswith("(wide)"), found


def _wait_for_content(page) -> None:
    """Charts drawn, widgets rendered, then a moment for late errors."""
    if page.locator(".rmlib-chart").count():
        wait_for_charts(page)
    if page.locator('script[type="application/vnd.jupyter.widget-state+json"]').count():
        page.wait_for_selector(".jupyter-widgets", timeout=20000)
    page.wait_for_timeout(300)


@pytest.mark.parametrize("path", _pages())
def test_page_is_clean(visit, path):
    v = visit(path)
    page = v.page
    _wait_for_content(page)
    problems = []
    has_chart = page.locator(".rmlib-chart").count() > 0
    has_widget = page.locator('script[type="application/vnd.jupyter.widget-state+json"]').count() > 0
    # weight: every response body, as served (no compression)
    size = v.transferred()
    limit = PAGE_LIMIT if (has_chart or has_widget) else LIGHT_PAGE_LIMIT
    if size > limit:
        heavy = sorted(v.sizes.items(), key=lambda kv: -kv[1])[:4]
        problems.append(f"{size / 1e6:.2f} MB transferred > {limit / 1e6:.0f} MB; heaviest: "
                        + ", ".join(f"{urllib.parse.urlsplit(u).path} {n / 1e6:.2f} MB" for u, n in heavy))
    if not has_widget and any("/jupyter-widgets/" in u for u in v.requests):
        problems.append("the widget bundle is loaded on a page without widgets")
    if not has_chart and any(u.split("?")[0].endswith("/rmlib-vega.js") for u in v.requests):
        problems.append("the Vega bundle is loaded on a page without charts")
    # nothing wider than the column outside its own scroll box
    problems += [f"sticks out of the column: {t}" for t in page.evaluate(OVERFLOW_JS)]
    # what the reader reads: no raw markup, no None in a table, no internal label
    problems += page_problems(page.content(), LABELS)
    # the key columns of every table, at 1280 px, without scrolling sideways
    page.set_viewport_size({"width": KEY_WIDTH, "height": 900})
    page.wait_for_timeout(200)
    problems += [f"key column off-screen at {KEY_WIDTH} px: {t}" for t in page.evaluate(HIDDEN_KEYS_JS, KEY_CLASS)]
    # every visible dropdown redraws what it controls, for each of its options
    selects = page.locator("main select")
    checked = 0
    for i in range(selects.count()):
        select = selects.nth(i)
        if not select.is_visible():
            continue
        checked += 1
        n_options = select.locator("option").count()
        for k in list(range(1, n_options)) + [0]:
            before = select.evaluate(SNAPSHOT_JS)
            select.select_option(index=k)
            try:
                page.wait_for_function(f"([s, b]) => ({SNAPSHOT_JS})(s) !== b",
                                       arg=[select.element_handle(), before], timeout=10000)
            except Exception:
                name = select.get_attribute("name") or f"#{i}"
                problems.append(f"dropdown {name} did not redraw for option {k}")
    problems += [f"console error: {e}" for e in v.console_errors]
    problems += [f"uncaught exception: {e}" for e in v.errors]
    problems += [f"request to another host: {u}" for u in v.foreign]
    assert not problems, f"{path}:\n  " + "\n  ".join(problems)
    if path == PAGE99:  # the page's charts have model and prompt dropdowns: they were exercised
        assert checked >= 2


# --------------------------------------------------------------------------- what a reader meets
#: A chapter a reader finishes in one sitting: its height at 1280 px, details closed.
MAX_CHAPTER_HEIGHT = 15_000
#: Rows a table shows at once (longer tables: rmlib.viz.html.short_table, the rest collapsed).
MAX_VISIBLE_ROWS = 15
PHONE = {"width": 390, "height": 844}

#: At 1280 px: the page's height, each shown table with more than ``max`` rows shown, and what
#: comes first among the In short box, a table, a chart and an output image.
READER_JS = """(max) => {
  const column = document.querySelector('article.bd-article') || document.querySelector('main');
  const long = [];
  for (const t of column.querySelectorAll('table')) {
    if (t.closest('details:not([open])') || !t.checkVisibility()) continue;  // in a closed "show all"
    const shown = [...t.rows].filter(r => r.parentElement.tagName !== 'THEAD' && r.getClientRects().length);
    if (shown.length > max) long.push(`${shown.length} rows: ${((t.querySelector('caption') || {}).innerText
                                        || t.innerText).trim().slice(0, 70)}`);
  }
  const first = column.querySelector('.in-short, table, .rmlib-chart, div.cell_output img');
  const box = column.querySelector('.admonition.in-short');
  return {height: document.documentElement.scrollHeight, long,
          first: first ? (first.classList.contains('in-short') ? 'in-short'
                          : `${first.tagName.toLowerCase()}.${[...first.classList].join('.')}`) : null,
          box: box ? box.innerText.replace(/^\\s*In short\\s*/, '').trim() : null};
}"""

#: At phone width: chart legends not wholly on the screen, and whether the back-to-top button,
#: shown, lies over the content where a chart's axis can scroll under it.
PHONE_JS = """() => {
  const w = window.innerWidth;
  const legends = [...document.querySelectorAll('.rmlib-chart svg .role-legend')]
    .map(l => [l, l.getBoundingClientRect()]).filter(([l, r]) => r.width > 0)
    .filter(([l, r]) => r.left < -1 || r.right > w + 1)
    .map(([l, r]) => `[${Math.round(r.left)}, ${Math.round(r.right)}] in ${
        (l.closest('.rmlib-chart').querySelector('svg .role-title') || {}).textContent || 'a chart'}`);
  const button = document.getElementById('pst-back-to-top');
  let covers = [];
  if (button) {
    button.style.display = 'block';
    const b = button.getBoundingClientRect();
    const header = document.querySelector('.bd-header-article');
    const h = header && getComputedStyle(header).position === 'sticky' ? header.getBoundingClientRect() : null;
    const inHeader = h && b.top >= h.top - 1 && b.bottom <= h.bottom + 1;
    if (!inHeader) covers = [...document.querySelectorAll('.rmlib-chart svg .role-axis')]
      .map(a => a.getBoundingClientRect()).filter(r => r.width > 0 && r.left < b.right && r.right > b.left)
      .map(r => `an axis at x [${Math.round(r.left)}, ${Math.round(r.right)}] passes under it`);
    button.style.display = '';
  }
  return {legends, covers};
}"""


def _chapter_pages() -> list[str]:
    return [p for p in _pages() if p.startswith("chapters/")]


def test_reader_checks_find_what_they_guard(visit):
    """The checks themselves: a 16-row table and a chart above the box are reported, a table whose
    rows sit in a closed box is not, and a legend off a phone's screen is."""
    v = visit(PAGE99)
    v.page.set_viewport_size({"width": KEY_WIDTH, "height": 900})
    assert v.page.evaluate(READER_JS, MAX_VISIBLE_ROWS)["long"] == []
    rows = "".join(f"<tr><td>{i}</td></tr>" for i in range(16))
    v.page.evaluate("""(rows) => {
        const a = document.querySelector('article.bd-article');
        a.insertAdjacentHTML('afterbegin', '<details><summary>all</summary><table>' + rows + '</table></details>'
                             + '<table><caption>long one</caption>' + rows + '</table>');
    }""", rows)
    found = v.page.evaluate(READER_JS, MAX_VISIBLE_ROWS)
    assert found["long"] == ["16 rows: long one"] and found["first"] == "table."
    # at 1300 px the legends sit right of their plots: on a phone they would be off the screen
    v.page.set_viewport_size(PHONE)
    assert len(v.page.evaluate(PHONE_JS)["legends"]) >= 1



def test_wide_formula_and_long_inline_name_fit_a_phone(browser, server):
    """The book's stylesheet on a phone: a display formula wider than the screen scrolls in its own
    box, a long dotted name in inline code breaks; neither sticks out of the column."""
    v = Visit(browser, server)
    try:
        v.page.set_viewport_size(PHONE)
        v.page.goto(f"{server}/intro.html", wait_until="load")
        v.page.evaluate("""() => document.querySelector('article.bd-article').insertAdjacentHTML('beforeend',
            '<p>Read by <code class="docutils literal notranslate"><span class="pre">'
            + 'rmlib.tables.paper_release.fig2a_tau_transcribed_and_more</span></code>.</p>'
            + '<div class="math notranslate nohighlight"><math display="block"><mrow>'
            + '<mi>x</mi><mo>=</mo>' + '<mi>a</mi><mo>+</mo>'.repeat(60) + '<mi>z</mi></mrow></math></div>')""")
        wide = v.page.evaluate("() => document.querySelector('div.math math').getBoundingClientRect().width")
        assert wide > PHONE["width"], "the test formula must be wider than the phone"
        assert v.page.evaluate(OVERFLOW_JS) == []
    finally:
        v.close()

@pytest.mark.parametrize("path", _chapter_pages())
def test_chapter_answers_first_and_reads_in_one_sitting(visit, path):
    """At 1280 px: the In short box, with its generated text (an answer, the data and scorer, the
    verdict against the paper, in at most IN_SHORT_MAX_CHARS characters), before any table or chart;
    no table shows more than 15 rows at once; the page is at most 15,000 px high."""
    v = visit(path)
    v.page.set_viewport_size({"width": KEY_WIDTH, "height": 900})
    _wait_for_content(v.page)
    found = v.page.evaluate(READER_JS, MAX_VISIBLE_ROWS)
    problems = []
    if found["first"] != "in-short":
        problems.append(f"the first table, chart or image ({found['first']}) comes before an In short box")
    if not found["box"] or len(found["box"]) < 40:
        problems.append(f"the In short box says too little: {found['box']!r}")
    elif len(found["box"]) > rhtml.IN_SHORT_MAX_CHARS:
        problems.append(f"the In short box holds {len(found['box']):,} characters > "
                        f"{rhtml.IN_SHORT_MAX_CHARS:,}: move the details to the evidence")
    labels = [f"{label}:" for key, label in rhtml.IN_SHORT_PARTS.items() if key != "here"]
    if found["box"] and not all(label in found["box"] for label in labels):
        problems.append(f"the In short box lacks one of {labels}: {found['box'][:120]!r}")
    problems += [f"a table shows more than {MAX_VISIBLE_ROWS} rows: {t}" for t in found["long"]]
    if found["height"] > MAX_CHAPTER_HEIGHT:
        problems.append(f"{found['height']:,} px high at {KEY_WIDTH} px > {MAX_CHAPTER_HEIGHT:,}")
    assert not problems, f"{path}:\n  " + "\n  ".join(problems)


@pytest.mark.parametrize("path", _chapter_pages())
def test_chapter_on_a_phone(browser, server, path):
    """At 390 px (loaded at that width, as a phone does): legends on the screen, the back-to-top
    button over no axis, nothing wider than the column outside its own scroll box, no console error."""
    v = Visit(browser, server)
    try:
        v.page.set_viewport_size(PHONE)
        v.page.goto(f"{server}/{path}", wait_until="load")
        _wait_for_content(v.page)
        found = v.page.evaluate(PHONE_JS)
        problems = [f"legend off the screen: {t}" for t in found["legends"]]
        problems += [f"the back-to-top button: {t}" for t in found["covers"]]
        problems += [f"sticks out of the column: {t}" for t in v.page.evaluate(OVERFLOW_JS)]
        problems += [f"console error: {e}" for e in v.console_errors + v.errors]
        assert not problems, f"{path} at {PHONE['width']} px:\n  " + "\n  ".join(problems)
    finally:
        v.close()


def test_exercise_link_in_a_solution_header_opens_it(visit):
    """The link to the exercise in a collapsed "Solution to Exercise N" header opens the solution
    (sphinx-togglebutton alone threw "button is not defined" and jumped to the exercise)."""
    v = visit(PAGE99)
    v.page.wait_for_selector("div.solution button.toggle-button", timeout=10000)
    body = v.page.locator("div.solution section").last
    assert not body.is_visible()
    v.page.locator("div.solution .admonition-title a").click()
    body.wait_for(state="visible", timeout=5000)
    v.page.locator("div.solution .admonition-title a").click()
    body.wait_for(state="hidden", timeout=5000)
    assert v.errors == [] and v.console_errors == []
