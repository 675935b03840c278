#!/usr/bin/env python3
"""Vendor the JavaScript the book needs, so that pages load nothing from a CDN.

Writes into DEST (default ``book/_vendor``; the script puts a ``.gitignore``
there so nothing in it is committed). ``_config.yml`` lists ``_vendor`` in
``html_static_path``, so Sphinx copies its content to ``_build/html/_static/``.
It is not inside ``book/_static`` because Jupyter Book adds every ``.js`` file
found there to every page (MathJax alone has dozens).

- ``rmlib-vega.js``: Vega + Vega-Lite + Vega-Embed, bundled by
  ``vl_convert.javascript_bundle`` for the Vega-Lite version Altair writes,
  wrapped in an IIFE so that its top-level names cannot clash with Sphinx or
  pydata-theme globals; it exposes only ``window.rmlibVegaEmbed``.
- ``jupyter-widgets/``: ``embed.js`` (the standalone, non-AMD build) of
  ``@jupyter-widgets/html-manager`` and the font files its CSS refers to, from
  ``npm pack`` of the pinned version below.

Math needs no JavaScript: ``rmlib.book.sphinx_ext`` writes it as MathML at
build time (MathJax, 1.2 MB a page, was vendored here before; a stale
``mathjax/`` folder is removed).

Each part is skipped when its stamp file says the same version is already
there, so re-running is cheap. Needs ``npm`` (the npm registry) for the
widgets; ``vl-convert-python`` is a Python requirement.

Usage: ``python tools/vendor_js.py [DEST] [--force]``
"""

from __future__ import annotations

import argparse
import pathlib
import shutil
import subprocess
import sys
import tarfile
import tempfile

ROOT = pathlib.Path(__file__).resolve().parents[1]
DEFAULT_DEST = ROOT / "book" / "_vendor"

HTML_MANAGER = "@jupyter-widgets/html-manager@1.0.15"
VEGA_GLOBAL = "rmlibVegaEmbed"


def _stamp_ok(folder: pathlib.Path, stamp: str) -> bool:
    f = folder / ".vendored"
    return f.is_file() and f.read_text() == stamp


def _write_stamp(folder: pathlib.Path, stamp: str) -> None:
    (folder / ".vendored").write_text(stamp)


def vendor_vega(dest: pathlib.Path, force: bool = False) -> pathlib.Path:
    """Write ``rmlib-vega.js``; return its path."""
    import altair as alt
    import vl_convert as vlc

    major, minor = alt.SCHEMA_VERSION.lstrip("v").split(".")[:2]
    vl_version = f"{major}.{minor}"
    if vl_version not in vlc.get_vegalite_versions():
        raise SystemExit(
            f"vl-convert-python cannot bundle Vega-Lite {vl_version} (Altair {alt.__version__} writes it); "
            "pin a vl-convert-python that supports it in requirements.txt"
        )
    stamp = f"vega {vlc.get_vega_version()} vega-lite {vl_version} vega-embed {vlc.get_vega_embed_version()}"
    out = dest / "rmlib-vega.js"
    if not force and out.is_file() and _stamp_ok(dest, stamp):
        return out
    bundle = vlc.javascript_bundle(f"window.{VEGA_GLOBAL} = vegaEmbed;", vl_version=vl_version)
    header = (
        f"/* {stamp}; bundled by vl-convert-python for rmlib (BSD-3-Clause licences of "
        "Vega, Vega-Lite, Vega-Embed). Wrapped in an IIFE: exposes only "
        f"window.{VEGA_GLOBAL}. */\n"
    )
    dest.mkdir(parents=True, exist_ok=True)
    out.write_text(header + "(function () {\n" + bundle + "\n})();\n", encoding="utf-8")
    _write_stamp(dest, stamp)
    return out


def _npm_pack(spec: str, workdir: pathlib.Path) -> pathlib.Path:
    """``npm pack`` ``spec`` into ``workdir`` and return the extracted ``package`` dir."""
    if shutil.which("npm") is None:
        raise SystemExit("npm not found: install Node.js/npm (Debian: apt-get install -y npm)")
    proc = subprocess.run(
        ["npm", "pack", spec, "--silent", "--pack-destination", str(workdir)],
        cwd=workdir, capture_output=True, text=True,
    )
    if proc.returncode != 0:
        raise SystemExit(f"npm pack {spec} failed: {proc.stderr.strip()}")
    tgz = workdir / proc.stdout.strip().splitlines()[-1]
    with tarfile.open(tgz) as tar:
        tar.extractall(workdir, filter="data")
    return workdir / "package"


def vendor_widgets(dest: pathlib.Path, force: bool = False) -> pathlib.Path:
    """Copy html-manager's ``embed.js`` and its fonts to ``dest/jupyter-widgets``."""
    target = dest / "jupyter-widgets"
    if not force and (target / "embed.js").is_file() and _stamp_ok(target, HTML_MANAGER):
        return target / "embed.js"
    with tempfile.TemporaryDirectory() as tmp:
        pkg = _npm_pack(HTML_MANAGER, pathlib.Path(tmp))
        if target.exists():
            shutil.rmtree(target)
        target.mkdir(parents=True)
        for f in (pkg / "dist").iterdir():
            # embed.js finds its fonts next to itself (webpack's automatic public path).
            if f.name.endswith((".map", "-amd.js")):
                continue
            shutil.copy2(f, target / f.name)
        if (pkg / "LICENSE").exists():
            shutil.copy2(pkg / "LICENSE", target / "LICENSE")
    _write_stamp(target, HTML_MANAGER)
    return target / "embed.js"


def vendor_all(dest: pathlib.Path = DEFAULT_DEST, force: bool = False) -> None:
    dest = pathlib.Path(dest)
    dest.mkdir(parents=True, exist_ok=True)
    (dest / ".gitignore").write_text("# vendored by tools/vendor_js.py: never committed\n*\n")
    shutil.rmtree(dest / "mathjax", ignore_errors=True)  # no longer used: math is MathML
    for step in (vendor_vega, vendor_widgets):
        path = step(dest, force=force)
        print(f"vendored {path.relative_to(dest)}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dest", nargs="?", default=str(DEFAULT_DEST))
    ap.add_argument("--force", action="store_true", help="re-vendor even if stamps match")
    args = ap.parse_args(argv)
    vendor_all(pathlib.Path(args.dest), force=args.force)
    return 0


if __name__ == "__main__":
    sys.exit(main())
