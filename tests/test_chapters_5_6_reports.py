"""Chapters 5 and 6 beside the paper: the transcribed Tables 4-5, GCG results next to them, Tables
A.1-A.5 published beside live LMs (and recomputed from synthetic released logits), short tables with
"show all", and the Big Two findings' numbers checked against independent computations."""

import re

import numpy as np
import pandas as pd
import pytest

from rmlib import resources
from rmlib.tables import datasets
from rmlib.tables.store import PAPER_PROMPTS
from rmlib.viz import html as rhtml
from rmlib.viz import reports


@pytest.fixture
def shown(monkeypatch):
    out = []

    def show(*objs):
        out.extend(o.data if hasattr(o, "data") else o for o in objs)

    monkeypatch.setattr(reports, "show", show)
    return out


# --------------------------------------------------------------------------- Tables 4-5
def test_published_gcg_tables_read_back():
    t = datasets.published_gcg_tables()
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
    with pytest.raises(datasets.DataFileError, match="part optimal/pessimal"):
        datasets.published_gcg_tables()


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


def test_bullets_escape():
    html = rhtml.bullets(["a < b", "<i>x</i>"]).data
    assert html == "<ul><li>a &lt; b</li><li>&lt;i&gt;x&lt;/i&gt;</li></ul>"


# --------------------------------------------------------------------------- Tables A.1-A.5
def _score_table(rng, n=30):
    return pd.DataFrame({"token_id": range(n), "decoded": [f"w{i}" for i in range(n)], "score": rng.normal(size=n)})


def _synthetic_logits():
    """Released-logits long table that reproduces the published A.1-A.3 columns (not A.4/A.5)."""
    pubs = {k: datasets.published_table(k) for k in ("A.1", "A.2", "A.3")}
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


# --------------------------------------------------------------------------- Big Two findings
def test_gcg_findings_numbers(shown):
    table = pd.DataFrame({"prompt": ["best", "best", "worst", "worst"],
                          "direction": ["maximize", "minimize", "maximize", "minimize"],
                          "start_score": [-10.0, -10.0, -12.0, -12.0], "best_score": [-2.0, -30.0, -4.0, -20.0],
                          "re-tokenizes": [True, True, False, True]})
    check = pd.DataFrame([{"searches": 4, "max |reported - rescored|": 2e-5,
                           "searches that improved on their start": 4, "total seconds": 1.0}])
    facts = pd.DataFrame([{"scorer": "logprob", "model": "m"}])
    out = reports.gcg_findings(table, check, facts)
    assert out[0].startswith("4 searches; 4 improved") and "median |change| 8.00" in out[0]  # |8|,|20|,|8|,|8|
    assert out[1] == "3 of 4 best sequences re-tokenize to their own ids."
    assert "'worst' -4.00 vs 'best' -2.00: lower, as the paper found" in out[2] and "log-probabilities" in out[2]
    assert "not comparable here" in out[3]
    facts_rm = pd.DataFrame([{"scorer": "classifier", "model": "Ray2333/GRM-gemma2-2B-rewardmodel-ft"}])
    assert "compare the strings" in reports.gcg_findings(table, check, facts_rm)[3]


# --------------------------------------------------------------------------- figures
class _Result:
    def __init__(self, maximize):
        self.prompt, self.maximize, self.best_ids = "What is the best food?", maximize, [1, 2]
        self.history = pd.DataFrame({"step": [0, 1], "score": [0.0, 1.0], "best_so_far": [0.0, 1.0],
                                     "text": ["a", "b"]})


def test_gcg_trajectories_legend_and_title():
    from rmlib.viz import figures

    spec = figures.gcg_trajectories([_Result(True), _Result(False)], scorer="language model log-prob, M").to_dict()
    assert spec["title"] == "GCG score trajectories | language model log-prob, M"
    lines = next(layer for layer in spec["layer"] if layer["mark"]["type"] == "line")
    for channel in ("strokeWidth", "strokeDash"):  # sorted, so Vega-Lite does not warn; one legend of lines
        enc = lines["encoding"][channel]
        assert enc["sort"] == ["step best", "best so far"] and enc["legend"]["symbolType"] == "stroke"
    assert lines["mark"].get("point") is None  # points live in their own layer (a legend of filled dots otherwise)

