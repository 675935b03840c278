"""The published figures and chapter 4's figures,
checked against independent scipy/numpy computations on the shared data and on synthetic scores."""

import base64
import re

import numpy as np
import pytest
from scipy import stats as sps

from rmlib import stats
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


# --------------------------------------------------------------------------- chapter 4
@pytest.fixture(scope="module")
def elo():
    return {k: stats.elo_wide(paper_release.eloeverything(k)) for k in ("one_word_greatest", "greatest_ever")}


def test_printed_human_model_summary_reproduces_at_two_decimals(elo):
    from rmlib.stats import summaries

    w = elo["one_word_greatest"].dropna()
    taus = np.array([sps.kendalltau(w["human"], w[m]).statistic for m in w.columns if m != "human"])
    mine = {"mean": taus.mean(), "sd": taus.std(ddof=1), "min": taus.min(), "max": taus.max()}
    check = summaries.reproduces(summaries.PAPER_HUMAN_MODEL_TAU, mine, decimals=2)
    assert check["reproduces"].all()
    assert summaries.PAPER_HUMAN_MODEL_TAU == {"mean": 0.29, "sd": 0.06, "min": 0.22, "max": 0.39}  # as printed


def test_tall_published_figure_is_capped_in_height():
    data = paper_release.published_figure("A.5").read_bytes()
    w, h = published.png_size(data)
    assert h > 2 * w  # the tall Fig. A.5
    html = published.figure_html(data, "c", width=640, max_height=600)
    small = base64.b64decode(re.search(r"base64,([^\"]+)\"", html).group(1))
    sw, sh = _jpeg_size(small)
    assert sw == round(600 * w / h) and sh <= 601
