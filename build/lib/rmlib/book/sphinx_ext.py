"""Sphinx extension (``extra_extensions: [rmlib.book.sphinx_ext]``): no page loads from the network."""

from __future__ import annotations

import re

# --------------------------------------------------------------------------- Sphinx extension
#: Vendored folders whose scripts are loaded by their own loaders, not on every page.
_VENDOR_SUBDIRS = ("mathjax/", "jupyter-widgets/")
_NETWORK_TAG = re.compile(
    r"<(?:script|link|iframe|img|source|embed)\b[^>]*?\b(?:src|href)\s*=\s*[\"']?(?:https?:)?//",
    re.IGNORECASE,
)


def _entry_name(entry: object) -> str:
    return entry[0] if isinstance(entry, (tuple, list)) else str(entry)


def _drop_vendored_assets(app, config) -> None:
    """Jupyter Book adds every .js/.css under html_static_path to every page;
    keep the vendored libraries (MathJax, html-manager) out of that list."""
    for key in ("html_js_files", "html_css_files"):
        entries = getattr(config, key)
        setattr(config, key, [e for e in entries if not _entry_name(e).startswith(_VENDOR_SUBDIRS)])


def _is_thebe_asset(asset: object) -> bool:
    name = getattr(asset, "filename", asset)
    body = getattr(asset, "attributes", {}).get("body", "") if hasattr(asset, "attributes") else ""
    return (isinstance(name, str) and name.endswith("sphinx-thebe.js")) or "THEBE_JS_URL" in (body or "")


def _forbid_network_assets(app, pagename, templatename, context, doctree) -> None:
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


def setup(app) -> dict:
    """Sphinx extension (``extra_extensions: [rmlib.book]`` in ``_config.yml``)."""
    app.connect("config-inited", _drop_vendored_assets, priority=900)
    app.connect("html-page-context", _forbid_network_assets, priority=900)
    return {"parallel_read_safe": True, "parallel_write_safe": True}


