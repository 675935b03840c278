"""Altair charts drawn offline, in the static book and in Jupyter.

Altair's default HTML output loads Vega from a CDN. Here a chart becomes a
``<div>`` plus a ``<script>`` that calls ``window.rmlibVegaEmbed``, which the
book loads from its own vendored bundle (``tools/vendor_js.py`` writes
``book/_vendor/rmlib-vega.js``; ``_config.yml`` adds it to every page).
The spec JSON is embedded with ``<``, ``>`` and ``&`` written as ``\\u003c``...,
so a vocabulary string such as ``</script>`` cannot end the script element.

- ``rmlib.viz.charts.enable()`` makes this Altair's active renderer, so a chart
  that ends a cell is shown this way; :func:`show` does it for one chart.
- In a live Jupyter session, call :func:`load_in_notebook` once to put the bundle
  in the page (the book does not need it).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping

import altair as alt

from ..errors import InputError
from .html import escape


#: The function the page's vendored bundle defines, which draws a spec.
VEGA_GLOBAL = "rmlibVegaEmbed"
#: vega-embed options: SVG output, only the export menu (no links to the online editor).
EMBED_OPTIONS = {
    "renderer": "svg",
    "actions": {"export": True, "source": False, "compiled": False, "editor": False},
}
#: On a screen this narrow (a phone) a chart's legends go under the plot, one entry a line, so that they
#: stay on the screen while a wide plot scrolls sideways in its own box (a legend set explicitly wins).
PHONE_QUERY = "(max-width: 600px)"
PHONE_LEGEND = {"orient": "bottom", "direction": "vertical"}
_MISSING_BUNDLE = (
    "This chart needs the vendored Vega bundle (window.rmlibVegaEmbed). In the book it is "
    "loaded by _config.yml; in Jupyter run rmlib.viz.rendering.load_in_notebook() first."
)


def _safe_json(obj: object) -> str:
    """JSON text that is safe inside an HTML ``<script>`` element."""
    try:
        text = json.dumps(obj, ensure_ascii=True, allow_nan=False)
    except ValueError as err:  # NaN or infinity in the data
        raise InputError(
            f"chart spec holds NaN or infinity ({err}); drop or fill missing values first"
        ) from err
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def spec_to_html(spec: Mapping, element_id: str | None = None, embed_options: Mapping | None = None) -> str:
    """Return HTML (a ``<div>`` and a ``<script>``) that draws a Vega-Lite ``spec``.

    The script waits for ``window.rmlibVegaEmbed`` (loaded by the page, possibly
    deferred) and writes a plain-text message into the ``<div>`` if it never
    appears or Vega fails.
    """
    if not isinstance(spec, Mapping):
        raise TypeError(f"spec must be a Vega-Lite dict, got {type(spec).__name__}; use chart.to_dict()")
    element_id = element_id or f"rmlib-chart-{uuid.uuid4().hex[:12]}"
    options = dict(EMBED_OPTIONS if embed_options is None else embed_options)
    return (
        f'<div class="rmlib-chart" id="{escape(element_id)}"></div>\n'
        '<script type="text/javascript">\n'
        "(function () {\n"
        f"  var id = {_safe_json(element_id)};\n"
        f"  var spec = {_safe_json(dict(spec))};\n"
        f"  var opts = {_safe_json(options)};\n"
        f"  var missing = {_safe_json(_MISSING_BUNDLE)};\n"
        "  function fail(msg) {\n"
        "    var el = document.getElementById(id);\n"
        "    if (el) { el.textContent = msg; el.className += ' rmlib-chart-error'; }\n"
        "  }\n"
        "  function draw() {\n"
        f"    if (typeof window.{VEGA_GLOBAL} !== 'function') {{ fail(missing); return; }}\n"
        f"    if (window.matchMedia && window.matchMedia({_safe_json(PHONE_QUERY)}).matches) {{\n"
        "      var config = Object.assign({}, spec.config || {});\n"
        f"      config.legend = Object.assign({_safe_json(PHONE_LEGEND)}, config.legend || {{}});\n"
        "      spec = Object.assign({}, spec, {config: config});\n"
        "    }\n"
        f"    window.{VEGA_GLOBAL}(document.getElementById(id), spec, opts)\n"
        "      .catch(function (err) { fail('Chart error: ' + err); });\n"
        "  }\n"
        f"  if (typeof window.{VEGA_GLOBAL} === 'function' || document.readyState === 'complete') draw();\n"
        "  else window.addEventListener('load', draw);\n"
        "})();\n"
        "</script>"
    )


class _ChartHTML:
    """Display object for one chart (``_repr_html_``), also usable as ``str``."""

    def __init__(self, html: str):
        self.html = html

    def _repr_html_(self) -> str:
        return self.html

    def __str__(self) -> str:
        return self.html


def show(chart: alt.TopLevelMixin | Mapping) -> _ChartHTML:
    """Return a display object that draws ``chart`` (an Altair chart or a spec dict) offline."""
    if isinstance(chart, Mapping):
        spec = dict(chart)
    elif hasattr(chart, "to_dict"):
        spec = chart.to_dict()
    else:
        raise TypeError(f"show expects an Altair chart or a Vega-Lite dict, got {type(chart).__name__}")
    return _ChartHTML(spec_to_html(spec))


def load_in_notebook(bundle_path: str | None = None):
    """Display the vendored Vega bundle inline, for a live Jupyter session.

    ``bundle_path`` defaults to ``book/_vendor/rmlib-vega.js`` in the
    repository (run ``make vendor`` first). Not needed, and not to be used, in
    chapters built into the book: the page already loads the bundle.
    """
    import pathlib

    from IPython.display import HTML

    from ..paths import checkout_root

    root = checkout_root() or pathlib.Path.cwd()
    path = pathlib.Path(bundle_path) if bundle_path else root / "book" / "_vendor" / "rmlib-vega.js"
    if not path.is_file():
        raise FileNotFoundError(f"{path} not found: run `make vendor` first")
    code = path.read_text(encoding="utf-8").replace("</script", "<\\/script")
    return HTML(f"<script type=\"text/javascript\">{code}</script>")
