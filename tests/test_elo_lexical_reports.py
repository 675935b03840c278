"""The paper's published figures as the chapters show them: scaled, credited, capped in height, or
folded at a readable size and scrolled sideways."""

import base64
import re

import pytest

from rmlib.tables import paper_release
from rmlib.viz import published


# --------------------------------------------------------------------------- published figures
def _jpeg_size(data: bytes) -> tuple[int, int]:
    i = 2
    while i < len(data):
        marker, length = data[i + 1], int.from_bytes(data[i + 2:i + 4], "big")
        if 0xC0 <= marker <= 0xC2:
            return int.from_bytes(data[i + 7:i + 9], "big"), int.from_bytes(data[i + 5:i + 7], "big")
        i += 2 + length
    raise AssertionError("no SOF marker")


def test_published_figure_is_scaled_down_and_credited():
    data = paper_release.published_figure("5B").read_bytes()
    w, h = published.png_size(data)
    small, mime = published.shrink(data, width=320)
    assert mime == "image/jpeg" and len(small) < len(data) / 3
    sw, sh = _jpeg_size(small)
    assert sw == 320 and abs(sh - h * 320 / w) <= 1
    html = published.figure("5B", "<b>x</b>", width=320).data
    assert "Christian, Kirk, Thompson, Summerfield, Dumbalska (2025), MIT License" in html
    assert "<b>x</b>" not in html and "&lt;b&gt;x&lt;/b&gt;" in html
    assert base64.b64decode(re.search(r"base64,([^\"]+)\"", html).group(1)) == small


def test_published_figure_rejects_non_png_and_keeps_narrow_png():
    with pytest.raises(ValueError, match="not a PNG"):
        published.png_size(b"GIF89a....")
    data = paper_release.published_figure("2C").read_bytes()
    w, _ = published.png_size(data)
    assert published.shrink(data, width=w + 10) == (data, "image/png")


def test_tall_published_figure_is_capped_in_height():
    data = paper_release.published_figure("A.5").read_bytes()
    w, h = published.png_size(data)
    assert h > 2 * w  # the tall Fig. A.5
    html = published.figure_html(data, "c", width=640, max_height=600)
    small = base64.b64decode(re.search(r"base64,([^\"]+)\"", html).group(1))
    sw, sh = _jpeg_size(small)
    assert sw == round(600 * w / h) and sh <= 601


def test_a_large_figure_folds_at_a_readable_size_and_scrolls_sideways():
    data = paper_release.published_figure("A.7").read_bytes()
    w, h = published.png_size(data)
    assert w > 2 * h  # the wide Fig. A.7
    html = published.figure("A.7", "every prompt", width=2400, max_height=None, scroll=True, fold=True).data
    assert html.startswith('<details class="rmlib-figure"><summary>The paper&#x27;s Fig. A.7 (published)')
    assert "overflow-x:auto" in html and "width:2400px;max-width:none" in html
    small = base64.b64decode(re.search(r"base64,([^\"]+)\"", html).group(1))
    assert _jpeg_size(small)[0] == 2400  # not shrunk to the page: its numbers stay readable
    tall = published.figure_html(paper_release.published_figure("A.5").read_bytes(), "c", width=900, max_height=None)
    assert "max-width:900px" in tall  # no height cap: 900 pixels wide, however tall
