"""Chapter 4's report steps (rmlib.viz.elo_report, published) and their figures,
checked against independent scipy/numpy computations on the shared data and on synthetic scores."""

import base64
import html as std_html
import re

import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps

from rmlib import stats
from rmlib.tables import datasets
from rmlib.viz import elo_report, figures, published


@pytest.fixture
def shown(monkeypatch):
    """Everything the report functions display, in order."""
    out = []
    monkeypatch.setattr(elo_report, "show", lambda *o: out.extend(o))
    return out


def _text(objs):
    return " ".join(std_html.unescape(re.sub(r"<[^>]+>", " ", getattr(o, "data", ""))) for o in objs)


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
    data = datasets.published_figure("5B").read_bytes()
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
    data = datasets.published_figure("2C").read_bytes()
    w, _ = published.png_size(data)
    assert published.shrink(data, width=w + 10) == (data, "image/png")


# --------------------------------------------------------------------------- chapter 4
@pytest.fixture(scope="module")
def elo():
    return {k: stats.elo_wide(datasets.eloeverything(k)) for k in ("one_word_greatest", "greatest_ever")}


def _scipy_split(w, k):
    d = w.dropna()
    order = np.argsort(-d["human"].to_numpy(float), kind="stable")
    top, bottom = d.iloc[order[:k]], d.iloc[order[-k:]]
    models = [c for c in d.columns if c != "human"]
    return (np.mean([sps.kendalltau(top["human"], top[m]).statistic for m in models]),
            np.mean([sps.kendalltau(bottom["human"], bottom[m]).statistic for m in models]))


def test_split_agreement_matches_scipy_and_quotes_the_paper(elo, shown):
    splits = elo_report.split_agreement(elo, 5, 100, seed=0)
    for key, w in elo.items():
        top, bottom = _scipy_split(w, 100)
        got = splits[splits["prompt"] == key]
        assert got["tau_top"].mean() == pytest.approx(top, abs=1e-9)
        assert got["tau_bottom"].mean() == pytest.approx(bottom, abs=1e-9)
    text = _text(shown)
    assert "0.19 (top) vs 0.08 (bottom)" in text and "No split tried reproduces both" in text
    top, bottom = _scipy_split(elo["greatest_ever"], 100)
    assert f"top/bottom 100 on greatest_ever: {top:.3f} vs {bottom:.3f}" in text
    assert "<details>" in shown[-1].data  # the per-model table is folded


def test_split_zero_means_halves(elo, shown):
    splits = elo_report.split_agreement({"one_word_greatest": elo["one_word_greatest"]}, 3, 0)
    k = len(elo["one_word_greatest"].dropna()) // 2
    assert "the 3,765 items" in _text(shown[:1]) and k == 3765
    assert splits["tau_top"].mean() == pytest.approx(_scipy_split(elo["one_word_greatest"], k)[0], abs=1e-9)


def test_paper_check_compares_with_the_printed_values(elo, shown):
    taus = {k: stats.tau_matrix(w) for k, w in elo.items()}
    boots = {k: stats.bootstrap_taus(w, 3, seed=0) for k, w in elo.items()}
    v = elo_report.paper_check(taus, boots)
    w = elo["one_word_greatest"].dropna()
    hm = [sps.kendalltau(w["human"], w[m]).statistic for m in w.columns if m != "human"]
    rows = v[v["what"].str.startswith("mean human-model tau; What, in one word")]
    assert rows["published"].tolist() == ["0.29"] and rows["recomputed"].tolist() == [f"{np.mean(hm):.2f}"]
    rng = v[v["what"].str.startswith("range of human-model tau; What, in one word")]
    assert rng["published"].tolist() == ["0.22–0.39"] and rng["verdict"].tolist() == ["reproduces"]
    assert "0.294" not in set(v["published"])  # never the chapter's own recomputation as "published"
    assert "greatest_ever" in _text(shown) and "one_word_greatest" in _text(shown)


def test_rm_pairs_folds_the_long_table(shown):
    pairs = pd.DataFrame({"prompt": "k", "ranker A": ["human", "human", "A", "A", "B"],
                          "ranker B": ["A", "B", "B", "C", "<i>C</i>"], "tau": [0.3, 0.2, 0.5, 0.7, 0.1],
                          "95% CI low": 0.0, "95% CI high": 1.0})
    elo_report.rm_pairs(pairs, ["prompt", "ranker A", "ranker B", "tau", "95% CI low", "95% CI high"])
    assert "'k': the 3 RM-vs-RM taus run from 0.100 (B vs <i>C</i>) to 0.700 (A vs C)." in _text(shown)
    folded = shown[-1].data
    assert folded.startswith("<details>") and folded.count("<tr>") == 4 and "&lt;i&gt;C&lt;/i&gt;" in folded


def test_item_rank_and_findings(elo):
    w = elo["greatest_ever"]
    hr, mr = elo_report.item_rank(w, "The Holocaust")
    r = w.rank(ascending=False, method="average").loc["The Holocaust"]
    assert hr == r["human"] and mr == float(np.median(r.drop("human")))
    assert mr < hr - 1000  # the RMs rank it far higher than people (Fig. 5C's point)
    splits = pd.DataFrame({"prompt": ["greatest_ever"] * 2, "model": ["a", "b"], "tau_top": [0.2, 0.1],
                           "tau_bottom": [0.0, 0.1]})
    verdicts = pd.DataFrame({"verdict": ["reproduces", "differs: x"]})
    html = elo_report.findings({"greatest_ever": w}, {"greatest_ever": stats.tau_matrix(w)}, splits, verdicts).data
    assert "'greatest_ever' 0.150 vs 0.050" in std_html.unescape(html)
    assert f"The Holocaust {hr:,.0f} of 7,530" in html and f"median rank is {mr:,.0f}" in html
    assert "1 of the 2 printed" in html


def test_rank_trajectories_open_on_the_section_4_prompt_on_a_linear_axis(elo):
    small = {k: w.iloc[:300] for k, w in elo.items()}
    spec = figures.rank_trajectories(small, 2, n_background=5).to_dict()
    param = [p for layer in [spec] + spec.get("layer", []) for p in layer.get("params", [])][0]
    assert param["value"] == "greatest_ever" if "value" in param else param["bind"]["options"][0] == "greatest_ever"
    assert param["bind"]["options"][0] == "greatest_ever"
    y = spec["layer"][0]["encoding"]["y"]
    assert y["scale"].get("type") is None and y["scale"]["domain"] == [1, 300] and y["scale"]["reverse"]
    log = figures.rank_trajectories(small, 2, n_background=5, log_scale=True).to_dict()
    assert log["layer"][0]["encoding"]["y"]["scale"]["type"] == "log"
    with pytest.raises(ValueError, match="no prompts"):
        figures.rank_trajectories({}, 2)


def test_printed_human_model_summary_reproduces_at_two_decimals(elo):
    from rmlib.stats import summaries

    w = elo["one_word_greatest"].dropna()
    taus = np.array([sps.kendalltau(w["human"], w[m]).statistic for m in w.columns if m != "human"])
    mine = {"mean": taus.mean(), "sd": taus.std(ddof=1), "min": taus.min(), "max": taus.max()}
    check = summaries.reproduces(summaries.PAPER_HUMAN_MODEL_TAU, mine, decimals=2)
    assert check["reproduces"].all()
    assert summaries.PAPER_HUMAN_MODEL_TAU == {"mean": 0.29, "sd": 0.06, "min": 0.22, "max": 0.39}  # as printed


def test_tall_published_figure_is_capped_in_height():
    data = datasets.published_figure("A.5").read_bytes()
    w, h = published.png_size(data)
    assert h > 2 * w  # the tall Fig. A.5
    html = published.figure_html(data, "c", width=640, max_height=600)
    small = base64.b64decode(re.search(r"base64,([^\"]+)\"", html).group(1))
    sw, sh = _jpeg_size(small)
    assert sw == round(600 * w / h) and sh <= 601
