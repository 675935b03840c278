"""The built book in a real browser: charts draw, dropdowns work, nothing leaves 127.0.0.1,
hostile vocabulary strings stay text.

Builds a small book (intro + the appendix page 99, executed by papermill) in a
temporary folder with the project's _config.yml, serves it on 127.0.0.1 and
drives Debian's Chromium (/usr/bin/chromium; `.ci/run` installs it) with
Playwright. Skipped, with the reason, only when Chromium is not installed.
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

CHROMIUM = pathlib.Path(os.environ.get("RMLIB_CHROMIUM", "/usr/bin/chromium"))
pytestmark = pytest.mark.skipif(
    not CHROMIUM.exists(), reason=f"{CHROMIUM} not installed (apt-get install -y chromium)"
)
CHROMIUM_ARGS = [
    "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--disable-default-apps", "--no-default-browser-check",
]
PAGE99 = "chapters/99_rendering_untrusted_strings.html"


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """Build intro + chapter 99 into a temporary book; return its _build/html."""
    tmp = tmp_path_factory.mktemp("book")
    subprocess.run([sys.executable, str(book.ROOT / "tools" / "vendor_js.py")], check=True, cwd=book.ROOT)
    src = tmp / "src"
    src.mkdir()
    shutil.copy2(book.BOOK_DIR / "intro.md", src / "intro.md")
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
    """A page with every request, dialog and page error recorded; non-local requests aborted."""

    def __init__(self, browser, base):
        self.base_host = urllib.parse.urlsplit(base).netloc
        self.context = browser.new_context(viewport={"width": 1300, "height": 900})
        self.requests, self.foreign, self.dialogs, self.errors = [], [], [], []
        self.context.route("**/*", self._route)
        self.page = self.context.new_page()
        self.page.on("dialog", self._dialog)
        self.page.on("pageerror", lambda err: self.errors.append(str(err)))

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
    # widgets (html-manager) render the explorer, with its escaped tables
    page.wait_for_selector(".jupyter-widgets table.rmlib-table", timeout=20000)
    assert "Score" in page.locator(".jupyter-widgets button").first.inner_text()
    assert page.locator(".jupyter-widgets table.rmlib-table").count() == 2
    assert page.evaluate("typeof window.__pwned") == "undefined"
    assert v.dialogs == []
    injected = page.evaluate("""() => ({
        imgs: [...document.querySelectorAll('img')].filter(i => i.getAttribute('src') === 'x'
              || i.hasAttribute('onerror')).length,
        bold: [...document.querySelectorAll('b')].filter(b => b.textContent.includes('bold?')).length,
        svgs: [...document.querySelectorAll('svg')].filter(s => s.hasAttribute('onload')).length,
        scripts: [...document.querySelectorAll('script')].filter(s => !s.src && !s.type.includes('json')
              && /^\\s*window\\.__pwned/.test(s.textContent)).length,
        tables: document.querySelectorAll('table.rmlib-table').length,
    })""")
    assert injected == {"imgs": 0, "bold": 0, "svgs": 0, "scripts": 0, "tables": 3}
    # hover over every bar of the first chart: tooltips show the strings as text
    bars = page.locator(".rmlib-chart").first.locator("svg.marks path[role='graphics-symbol']")
    for i in range(bars.count()):
        bars.nth(i).hover(force=True)
    tooltip = page.locator("#vg-tooltip-element")
    assert tooltip.count() == 1 and tooltip.locator("img, script, b").count() == 0
    assert page.evaluate("typeof window.__pwned") == "undefined" and v.dialogs == []
    cells = page.locator("table.rmlib-table").first.locator("td").all_text_contents()
    assert '"><img/src=x/onerror=window.__pwned=1;alert(1)>' in cells
    assert "<script>window.__pwned=1;alert(1)</script>" in cells and "<svg/onload=window.__pwned=1>" in cells
    assert "\u2423the" in cells and "\\n" in cells and "\u2205" in cells
    assert v.errors == [] and v.foreign == []


def test_intro_math_renders_offline(visit):
    v = visit("intro.html")
    v.page.wait_for_selector("mjx-container", timeout=20000)
    assert v.page.locator("mjx-container").count() >= 3
    assert v.foreign == [] and v.errors == []
    assert any("/_static/mathjax/" in u for u in v.requests)
