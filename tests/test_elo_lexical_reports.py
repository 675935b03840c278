"""Chapter 3's report steps (rmlib.viz.lexical_report), the published figures and chapter 4's figures,
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
from rmlib.viz import figures, lexical_report, published


@pytest.fixture
def shown(monkeypatch):
    """Everything the report functions display, in order."""
    out = []
    monkeypatch.setattr(lexical_report, "show", lambda *o: out.extend(o))
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


# --------------------------------------------------------------------------- chapter 3
AFINN = datasets.afinn111()


def _synthetic_long(pos_slopes, neg_slopes, seed=0):
    """Three paper RMs' scores for AFINN words (no leading space: the paper's matching keeps them)."""
    rng = np.random.default_rng(seed)
    words = [w for w in AFINN.index if " " not in w and AFINN[w] != 0][:600]
    hubs = ["Ray2333/GRM-gemma2-2B-rewardmodel-ft", "Ray2333/GRM-Llama3.2-3B-rewardmodel-ft",
            "Skywork/Skywork-Reward-Gemma-2-27B"]
    rows = []
    for hub, bp, bn in zip(hubs, pos_slopes, neg_slopes):
        for key, text in datasets.PAPER_TOKEN_PROMPTS.items():
            a = AFINN[words].to_numpy(float)
            score = np.where(a > 0, bp * a, bn * a) + rng.normal(0, 0.5, len(a))
            rows.append(pd.DataFrame({"model": hub, "prompt": text, "token_id": np.arange(len(words)),
                                      "token": words, "decoded": words, "score": score}))
    return pd.concat(rows, ignore_index=True)


def _independent_t(long, prompt_key):
    text = datasets.PAPER_TOKEN_PROMPTS[prompt_key]
    pos, neg = [], []
    for _, g in long[long["prompt"] == text].groupby("model", sort=False):
        a = AFINN.reindex(g["decoded"].str.lower()).to_numpy(float)
        s = g["score"].to_numpy(float)
        pos.append(abs(sps.linregress(a[a > 0], s[a > 0]).slope))
        neg.append(abs(sps.linregress(a[a < 0], s[a < 0]).slope))
    return sps.ttest_rel(pos, neg).statistic, int((np.array(pos) > np.array(neg)).sum())


def test_paper_check_uses_the_papers_scores_when_here(monkeypatch, shown):
    long = _synthetic_long([2.0, 1.5, 1.2], [1.0, 1.4, 0.3])
    monkeypatch.setattr(datasets, "paper_token_scores", lambda *a, **k: long)
    status = pd.DataFrame({"name": ["x"], "group": ["token_scores"], "path": ["p"], "present": [True]})
    live_test = pd.DataFrame({"prompt": ["greatest", "best", "worst"], "t": [1.0, 2.0, 3.0], "df": 1,
                              "n_models": 2, "n_pos_stronger": [1, 2, 0], "n_neg_stronger": [1, 0, 2]})
    live_counts = pd.DataFrame({"source": "BNC", "spec": ["log_freq + sentiment"], "prompt": ["best"],
                                "n_models": [2], "n_positive": [1], "n_negative": [0]})
    table = lexical_report.paper_check(live_test, live_counts, status=status)
    t, n_pos = _independent_t(long, "greatest")
    row = table[table["what"].str.startswith("paired t")].iloc[0]
    assert row["recomputed"] == f"{t:.1f}" and row["published"] == "2.6" and row["live"] == "t(1) = 1.00"
    n_row = table[table["what"] == "models with the positive slope steeper, greatest (of 10)"].iloc[0]
    assert n_row["recomputed"] == str(n_pos) and n_row["published"] == "8" and n_row["live"] == "1 of 2"
    freq = table[table["claim"] == "frequency"]
    assert len(freq) == 6 and freq["recomputed"].notna().all()
    assert freq[freq["what"].str.contains(r"sentiment, best")]["live"].tolist() == ["1"]
    assert "not here" not in _text(shown)


def test_paper_check_says_once_when_the_files_are_absent(shown):
    status = pd.DataFrame({"name": ["a", "b"], "group": "token_scores", "path": ["x.csv", "y.csv"],
                           "present": [False, False]})
    live_test = pd.DataFrame({"prompt": ["greatest"], "t": [1.0], "df": 1, "n_models": 2, "n_pos_stronger": [2],
                              "n_neg_stronger": [0]})
    table = lexical_report.paper_check(live_test, pd.DataFrame(columns=["source", "spec", "prompt", "n_positive"]),
                                       status=status)
    assert table["recomputed"].isna().all() and table["verdict"].str.startswith("not recomputed here").all()
    notes = [o for o in shown if "<table" not in o.data]
    assert len(notes) == 1 and "2 of 2 files" in _text(notes)


def test_ci_table_keeps_p_and_scorer_kind():
    df = pd.DataFrame({"model": ["m"], "prompt": ["best"], "n": [12.0], "slope": [0.123456], "ci_low": [0.01],
                       "ci_high": [0.2], "p": [0.000123], "se": [1.0]})
    html = lexical_report.ci_table(df, ["model", "prompt"], "c").data
    assert "<th>p</th>" in html and "0.00012" in html and "0.01 to 0.2" in html and "<th>se</th>" not in html
    assert lexical_report.scorer_kind(pd.DataFrame({"scorer": ["logprob", "logprob"]})) == "language-model log-probs"
    assert lexical_report.scorer_kind(pd.DataFrame({"scorer": ["logprob", "classifier"]})) == \
        "reward-model scores and language-model log-probs"


def test_sentiment_scatter_draws_the_ols_lines_and_whole_points():
    long = _synthetic_long([2.0], [1.0])
    t = {("m", "best"): long[long["prompt"] == datasets.PAPER_TOKEN_PROMPTS["best"]]}
    spec = figures.sentiment_scatter(t, AFINN, strip=False, max_points=50).to_dict()
    rows = spec["datasets"][spec["data"]["name"]] if "data" in spec else next(iter(spec["datasets"].values()))
    g = t[("m", "best")]
    a = AFINN.reindex(g["decoded"]).to_numpy(float)
    s = g["score"].to_numpy(float)
    for valence, mask in (("positive", a > 0), ("negative", a < 0)):
        fit = sps.linregress(a[mask], s[mask])
        line = sorted((r["sentiment"], r["score"]) for r in rows if r["kind"] == "fit" and r["valence"] == valence)
        assert len(line) == 2
        for x, y in line:
            assert y == pytest.approx(fit.intercept + fit.slope * x, rel=1e-4)
    assert sum(r["kind"] == "token" for r in rows) == 50
    assert spec["layer"][0]["encoding"]["x"]["scale"]["domain"] == [-5.5, 5.5]


def test_lexical_findings_are_generated_from_the_results():
    slopes = pd.DataFrame({"model": ["a", "b"]})
    test = pd.DataFrame({"prompt": ["greatest"], "n_pos_stronger": [1], "n_models": [2], "mean_diff": [0.5],
                         "df": [1], "t": [1.5], "p": [0.37]})
    corr = pd.DataFrame({"pair": ["best vs worst"] * 2, "Spearman rho": [0.9, 0.5]})
    counts = pd.DataFrame({"source": ["BNC", "wordfreq"], "spec": "log_freq + sentiment", "prompt": "best",
                           "n_models": 2, "n_positive": [1, 2], "n_negative": 0})
    rows = pd.DataFrame({"recomputed": [None, None], "verdict": ["not recomputed here"] * 2})
    text = std_html.unescape(lexical_report.findings(slopes, test, corr, counts, "LM log-probs", rows).data)
    assert "in 1 of 2 model(s) (mean difference 0.5); paired t(1) = 1.50, p = 0.37." in text
    assert "Spearman rho 0.50 to 0.90 (every model positive)" in text
    assert "1 of 2 ('best')" in text and "2 of 2" not in text  # BNC only, not wordfreq
    assert "none of the 2 printed §3 values can be recomputed" in text
    d = pd.DataFrame({"greatest": {"a": 0.4}, "worst": {"a": -0.25}})
    text = std_html.unescape(lexical_report.findings(slopes, test, corr, counts, "reward-model scores", rows, d).data)
    assert "a scores Bing-positive words above negative ones by Cohen's d 'greatest' +0.40, 'worst' -0.25" in text
    assert "trained on one data source" in text and "log-probability measures" not in text
    rows = pd.DataFrame({"recomputed": ["2.6", "3"], "verdict": ["reproduces", "differs: x"]})
    text = std_html.unescape(lexical_report.findings(slopes, test, corr, counts, "k", rows).data)
    assert "2 of the 2 printed §3 values recomputed from its released scores, 1 of them reproduce" in text


def test_published_tables_a8_a9_head_and_recomputed_comparison(monkeypatch, shown):
    absent = pd.DataFrame({"present": [False]})
    lexical_report.published_tables(3, status=absent)
    assert len(shown) == 2 and "The paper's Table A.8" in _text(shown[:1]) and "Table A.9" in _text(shown[1:])
    pub = datasets.published_table("A.8")
    assert shown[0].data.count("<tr>") == 1 + 6  # header + 3 top + 3 bottom
    from rmlib.viz.html import visible
    assert std_html.escape(visible(pub.iloc[0]["N-Gem-27B"])) in shown[0].data
    shown.clear()
    # with the files "here": the published table itself as the recomputation must compare as identical
    monkeypatch.setattr(lexical_report, "_PAPER_LONG", "long")
    from rmlib.stats import paper
    monkeypatch.setattr(paper, "appendix_table", lambda long, key: datasets.published_table(key))
    lexical_report.published_tables(3, status=pd.DataFrame({"present": [True]}))
    assert len(shown) == 4 and "recomputed from the paper's released scores" in _text(shown[1:2])
    assert "True" in _text(shown[1:2]) and "False" not in _text(shown[1:2])


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
