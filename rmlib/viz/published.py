"""The paper's published figures in a chapter page, credited and light enough to embed.

The released PNGs are 60 kB to 3.5 MB at print resolution; a page holds
several. :func:`figure` scales one down to the page's width (JPEG, rendered
offline by ``vl-convert`` from an image mark) and returns an escaped HTML
``<figure>`` with the credit line the MIT License asks for. Without
``vl-convert`` the original PNG is embedded.
"""

from __future__ import annotations

import base64
import struct

from .html import escape
from ..errors import DataFileError, InputError

CREDIT = "Christian, Kirk, Thompson, Summerfield, Dumbalska (2025), MIT License"

__all__ = ["CREDIT", "png_size", "shrink", "figure_html", "figure"]


def png_size(data: bytes) -> tuple[int, int]:
    """(width, height) of a PNG from its header; ValueError for anything else."""
    if data[:8] != b"\x89PNG\r\n\x1a\n" or data[12:16] != b"IHDR":
        raise InputError("not a PNG file (the published figures are PNGs; check the path)")
    return struct.unpack(">II", data[16:24])


def shrink(data: bytes, width: int = 640, quality: int = 85) -> tuple[bytes, str]:
    """The PNG ``data`` scaled to ``width`` pixels as JPEG, ``(bytes, mime)``; the PNG unchanged
    when it is already narrower or ``vl-convert`` is missing."""
    w, h = png_size(data)
    if w <= width:
        return data, "image/png"
    try:
        import vl_convert
    except ImportError:
        return data, "image/png"
    height = max(1, round(h * width / w))
    spec = {"width": width, "height": height, "padding": 0, "config": {"view": {"stroke": None}},
            "data": {"values": [{}]}, "encoding": {"x": {"value": 0}, "y": {"value": 0}},
            "mark": {"type": "image", "url": "data:image/png;base64," + base64.b64encode(data).decode(),
                     "width": width, "height": height, "align": "left", "baseline": "top"}}
    return vl_convert.vegalite_to_jpeg(spec, scale=1, quality=quality), "image/jpeg"


def figure_html(data: bytes, caption: str, *, width: int = 640, max_height: int | None = 900,
                scroll: bool = False) -> str:
    """An HTML ``<figure>`` of the PNG ``data`` (scaled by :func:`shrink` to ``width``, narrower for a
    tall figure so that it is at most ``max_height`` pixels high; ``None``: no limit) with an escaped
    caption. ``scroll``: the image keeps its ``width`` and the figure scrolls sideways inside the
    page (a wide figure whose numbers must stay readable)."""
    w, h = png_size(data)
    if max_height is not None:
        width = max(1, min(width, round(max_height * w / h)))
    img, mime = shrink(data, width)
    src = f"data:{mime};base64,{base64.b64encode(img).decode()}"
    if scroll:
        return (f'<figure class="rmlib-published" style="overflow-x:auto;max-width:100%">'
                f'<img src="{src}" alt="{escape(caption)}" style="width:{int(min(width, w))}px;max-width:none;'
                f'height:auto"><figcaption>{escape(caption)}</figcaption></figure>')
    return (f'<figure class="rmlib-published" style="max-width:{int(width)}px">'
            f'<img src="{src}" alt="{escape(caption)}" '
            f'style="max-width:100%;height:auto"><figcaption>{escape(caption)}</figcaption></figure>')


def figure(key: str, what: str = "", *, width: int = 640, max_height: int | None = 900, scroll: bool = False,
           fold: bool = False):
    """The paper's published figure ``key`` (:func:`rmlib.tables.paper_release.published_figure`) for a page,
    captioned "The paper's Fig. KEY (published): WHAT. Credit." A missing file gives a one-line note.
    ``width``, ``max_height``, ``scroll``: see :func:`figure_html`. ``fold``: inside a closed
    ``<details>`` whose summary names the figure, so that a large figure can be shown at a size
    whose numbers can be read without making the page longer."""
    from IPython.display import HTML

    from ..tables import paper_release

    label = f"The paper's Fig. {key} (published)" + (f": {what}" if what else "") + f". {CREDIT}."
    try:
        data = paper_release.published_figure(key).read_bytes()
    except (OSError, DataFileError) as exc:
        return HTML(f"<p>{escape(label)} Not available here: {escape(exc)}</p>")
    html = figure_html(data, label, width=width, max_height=max_height, scroll=scroll)
    if fold:
        html = f'<details class="rmlib-figure"><summary>{escape(label)}</summary>{html}</details>'
    return HTML(html)
