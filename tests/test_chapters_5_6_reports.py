"""Chapters 5 and 6 beside the paper: the transcribed Tables 4-5, GCG results next to them (their
steps as one long table), Tables A.1-A.5 published beside
live LMs (and recomputed from synthetic released logits), and short tables with "show all"."""

import re

import numpy as np
import pandas as pd
import pytest

from rmlib.errors import DataFileError
from rmlib import resources, stats
from rmlib.engine import gcg
from rmlib.tables import paper_release, provenance
from rmlib.prompts import PAPER_PROMPTS
from rmlib.viz import charts
from rmlib.viz import html as rhtml


# --------------------------------------------------------------------------- Tables 4-5
def test_published_gcg_tables_read_back():
    t = paper_release.published_gcg_tables()
    assert list(t.columns) == ["table", "prompt", "part", "start", "result"]
    t4, t5 = t[t["table"] == "4"], t[t["table"] == "5"]
    assert len(t4) == 12 and set(t4["prompt"]) == {"greatest", "best", "worst"}
    assert len(t5) == 8 and set(t5["prompt"]) == {"What is the best thing ever?", "What is the worst thing ever?"}
    # the claim the chapter quotes: "Jews" among the pessimal answers for greatest and worst
    pess = t4[t4["part"] == "pessimal"]
    assert {p for p, r in zip(pess["prompt"], pess["result"]) if re.search("jew", r, re.I)} == {"greatest", "worst"}
    assert (t5["start"].str.split().str.len() >= 10).all()  # Table 5 searched long responses


def test_published_gcg_tables_rejects_a_damaged_file(tmp_path, monkeypatch):
    bad = tmp_path / "t.csv"
    bad.write_text("table,prompt,part,start,result\n4,best,middle,x,y\n", encoding="utf-8")
    monkeypatch.setattr(resources, "path", lambda name: bad)
    with pytest.raises(DataFileError, match="part optimal/pessimal"):
        paper_release.published_gcg_tables()


# --------------------------------------------------------------------------- HTML helpers
def test_short_table_shows_head_and_all_rows_collapsed():
    df = pd.DataFrame({"w": [f"t{i}" for i in range(12)] + ["<script>x</script>"]})
    html = rhtml.short_table(df, 3, caption="c").data
    head, rest = html.split('<details class="rmlib-noindex">')  # the search index leaves it out
    assert head.count("<tr>") == 1 + 3 and "show all 13 rows" in rest
    assert rest.count("<tr>") == 1 + 13 and "&lt;script&gt;" in rest and "<script>" not in html
    assert "<details>" not in rhtml.short_table(df.head(2), 5).data
    with pytest.raises(ValueError, match="at least one row"):
        rhtml.short_table(df, 0)
    wide = df.assign(x=1, y=2)  # a short view with fewer columns (to fit the page): the summary says so
    assert "show all 13 rows and 3 columns" in rhtml.short_table(wide, wide.head(3)[["w"]]).data
    assert "show all 2 rows and 3 columns" in rhtml.short_table(wide.head(2), wide.head(2)[["w"]]).data
    # the columns to wrap are the whole table's: the short view wraps those it has
    both = rhtml.short_table(wide, wide.head(3)[["w"]], wrap=["w", "x"]).data
    head, rest = both.split("<details")
    assert head.count("rmlib-wrap") == 1 + 3 and rest.count("rmlib-wrap") == 2 * (1 + 13)


def test_bullets_escape():
    html = rhtml.bullets(["a < b", "<i>x</i>"]).data
    assert html == "<ul><li>a &lt; b</li><li>&lt;i&gt;x&lt;/i&gt;</li></ul>"


# --------------------------------------------------------------------------- Tables A.1-A.5
def _score_table(rng, n=30):
    return pd.DataFrame({"token_id": range(n), "decoded": [f"w{i}" for i in range(n)], "score": rng.normal(size=n)})


def _synthetic_logits():
    """Released-logits long table that reproduces the published A.1-A.3 columns (not A.4/A.5)."""
    pubs = {k: paper_release.published_table(k) for k in ("A.1", "A.2", "A.3")}
    models = [c for c in pubs["A.1"].columns if c not in ("part", "rank")]
    vocab = sorted({s for p in pubs.values() for m in models for s in p[m]})
    ids = {s: i for i, s in enumerate(vocab)}
    rows = []
    for key, prompt in (("A.1", "greatest"), ("A.2", "best"), ("A.3", "worst")):
        pub = pubs[key]
        for m in models:
            logit = np.zeros(len(vocab))
            for part, rank, s in zip(pub["part"], pub["rank"], pub[m]):
                logit[ids[s]] = 100.0 - rank if part == "top" else -100.0 - rank  # printed lowest last
            rows.append(pd.DataFrame({"model": m, "prompt": PAPER_PROMPTS[prompt], "token_id": range(len(vocab)),
                                      "token": vocab, "decoded": vocab, "logit": logit}))
    return pd.concat(rows, ignore_index=True)


def _live():
    rng = np.random.default_rng(1)
    t = {"HuggingFaceTB/SmolLM2-135M-Instruct": _score_table(rng)}
    bw = {m: tab.assign(sum=tab["score"], diff=-tab["score"]) for m, tab in t.items()}
    return {"A.1": t, "A.2": t, "A.3": t, "A.4": bw, "A.5": bw}


def test_a_searching_page_states_its_scorer_from_provenance_dicts():
    entries = [{"model_id": "trained:default", "revision": "trained:abc", "scorer": "classifier", "mode": "token",
                "dtype": "float32", "prompt": p, "prefix_text": "user\n" + p + "\nassistant\n", "suffix_text": ""}
               for p in ("best?", "worst?")]
    table = provenance.provenance_table({"searches, scored here": entries})
    assert len(table) == 1 and table.iloc[0]["prompts"] == 2 and table.iloc[0]["scorer"] == "classifier, token, float32"
    assert provenance.score_kind(entries) == "reward model score, RMs trained here"
    implicit = [dict(entries[0], scorer="implicit", reference_model_id="base-lm")]
    assert provenance.provenance_table({"x": implicit}).iloc[0]["scorer"].endswith("minus base-lm")
    assert provenance.score_kind(implicit) == "implicit reward: log p_model − log p_reference"
    both = [dict(entries[0], model_id="tiny:rm"), dict(entries[0], model_id="random:lm", scorer="logprob")]
    assert provenance.score_kind(both) == ("reward model score and language model log-probability, "
                                           "random test models")
    # a chapter puts the kind in its own parentheses: they must not nest
    for kind in (provenance.score_kind(e) for e in (entries, implicit, both)):
        assert "(" not in kind and ")" not in kind
    with pytest.raises(ValueError, match="empty list"):
        provenance.provenance_table({"x": []})


# --------------------------------------------------------------------------- chapter 5's trajectories
class _Result:
    def __init__(self, maximize, texts=("a", "b"), scores=(0.0, 1.0)):
        self.prompt, self.maximize, self.best_ids = "What is the best food?", maximize, [1, 2]
        best = np.maximum.accumulate(scores) if maximize else np.minimum.accumulate(scores)
        self.history = pd.DataFrame({"step": range(len(scores)), "score": scores, "best_so_far": best,
                                     "text": list(texts)})


def test_gcg_history_table_is_long_two_rows_a_step():
    res = [_Result(True, [" a", "b c"], [1.0, 0.5]), _Result(False, ["x", "</script>"], [0.0, -1.0])]
    hist = gcg.history_table(res, label=lambda p: "best")
    assert list(hist.columns) == ["prompt", "length", "direction", "step", "series", "score", "decoded"]
    assert len(hist) == 8 and set(hist["prompt"]) == {"best"} and set(hist["length"]) == {"2 tokens"}
    so_far = hist.query("series == 'best so far' and direction == 'maximize'")["score"].tolist()
    assert so_far == [1.0, 1.0]
    step = hist.query("series == 'step best' and direction == 'minimize'")
    assert step["score"].tolist() == [0.0, -1.0] and step["decoded"].tolist() == ["x", "</script>"]
    assert gcg.history_table([]).empty


def test_gcg_trajectories_draw_as_a_line_chart_with_dashes():
    res = [_Result(True, [" a", "b c"], [1.0, 0.5]), _Result(False, ["x", "</script>"], [0.0, -1.0])]
    chart = charts.line_chart(gcg.history_table(res), "step", "score", color="direction", dash="series", points=True,
                              dropdowns=["prompt", "length"], tooltip=["series", "decoded", "score"],
                              title="GCG score trajectories | language model log-prob, M")
    spec = chart.to_dict()
    assert spec["title"] == "GCG score trajectories | language model log-prob, M"
    lines, points = spec["layer"]  # points in their own layer: on the line mark they hide the dash legend
    assert lines["mark"]["type"] == "line" and points["mark"]["type"] == "point"
    dash = lines["encoding"]["strokeDash"]
    assert dash["sort"] == ["best so far", "step best"] and dash["scale"]["range"] == [[1, 0], [6, 3]]
    assert dash["legend"]["symbolType"] == "stroke"  # the legend draws lines, not dots
    assert points["encoding"]["detail"]["field"] == "series" and "strokeDash" not in points["encoding"]
    faceted = charts.line_chart(gcg.history_table(res), "step", "score", dash="series", column="direction",
                                points=True).to_dict()
    assert faceted["facet"]["column"]["field"] == "direction" and len(faceted["spec"]["layer"]) == 2
    (values,) = spec["datasets"].values()
    assert {v["decoded"] for v in values} == {rhtml.visible(t) for t in (" a", "b c", "x", "</script>")}
