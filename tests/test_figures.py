"""rmlib.viz.figures: the chapters' chart recipes build valid Vega-Lite with the right data and dropdowns."""

import json

import numpy as np
import pandas as pd
import pytest

from rmlib.viz import figures
from rmlib.viz.html import visible


def _spec(chart):
    return chart.to_dict()


def _values(spec):
    """Every inline data row of a spec (top level or in its layers; Altair moves them to ``datasets``)."""
    out = []
    for part in [spec] + spec.get("layer", []):
        data = part.get("data", {})
        out += data.get("values", spec.get("datasets", {}).get(data.get("name"), []))
    return out


def _params(spec):
    return [p["name"] for p in spec.get("params", [])] + [p["name"] for l in spec.get("layer", [])
                                                          for p in l.get("params", [])]


def test_ci_dots_layers_and_dropdown():
    data = pd.DataFrame({"model": ["m1", "m1", "m2", "m2"], "x": ["a", "b", "a", "b"], "y": [1.0, 2.0, 3.0, np.nan],
                         "lo": [0.5, 1.5, 2.5, np.nan], "hi": [1.5, 2.5, 3.5, np.nan], "g": ["u", "v", "u", "v"]})
    spec = _spec(figures.ci_dots(data, x="x", y="y", low="lo", high="hi", color="g", title="T", y_title="Y",
                                 tooltip=["model:N"], dropdowns=["model"], connect=True, zero_line=True,
                                 colors=(["u", "v"], ["#000000", "#ffffff"])))
    marks = [l["mark"]["type"] for l in spec["layer"]]
    assert marks == ["line", "rule", "point", "rule"]
    assert spec["layer"][1]["encoding"]["y2"]["field"] == "hi"
    assert spec["layer"][0]["encoding"]["color"]["scale"] == {"domain": ["u", "v"], "range": ["#000000", "#ffffff"]}
    assert _params(spec) == ["model_select"]
    rows = _values(spec)
    assert len(rows) == 4 and rows[3]["y"] is None  # NaN as null, one data object for all layers
    json.dumps(spec, allow_nan=False)
    with pytest.raises(ValueError, match="ci_dots"):
        figures.ci_dots(data.drop(columns="lo"), x="x", y="y", low="lo", high="hi", color="g", title="T",
                        y_title="Y", tooltip=[])


def test_class_means_chart_draws_the_t_interval():
    """Chapter 3's class means: summaries.mean_ci drawn by ci_dots, one offset dot per class."""
    from scipy import stats as sps

    from rmlib.stats import summaries

    by_class = pd.DataFrame({"model": "m", "prompt": ["best", "best"], "class": ["positive", "negative"],
                             "n": [5, 8], "mean": [1.0, -1.0], "sem": [0.5, 0.25]})
    spec = _spec(figures.ci_dots(summaries.mean_ci(by_class), x="prompt", y="mean", low="low", high="high",
                                 color="class", offset="class", x_sort=["greatest", "best", "worst"],
                                 colors=figures.POSITIVE_NEGATIVE, y_zero=False, dropdowns=["model"],
                                 y_title="mean score", tooltip=["class:N", "n:Q", "mean:Q"], title="t"))
    rows = {r["class"]: r for r in _values(spec)}
    assert rows["positive"]["high"] == pytest.approx(1.0 + sps.t.ppf(0.975, 4) * 0.5)
    assert rows["negative"]["low"] == pytest.approx(-1.0 - sps.t.ppf(0.975, 7) * 0.25)
    assert spec["layer"][0]["encoding"]["x"]["sort"] == ["greatest", "best", "worst"]


def _elo(n=300, seed=0):
    rng = np.random.default_rng(seed)
    h = rng.normal(size=n)
    return pd.DataFrame({"human": h, "A": h + rng.normal(size=n), "B": -h + rng.normal(size=n)},
                        index=pd.Index([f"<b>item {i}</b>" for i in range(n)], name="item"))


class _Result:
    def __init__(self, prompt, maximize, texts, scores):
        self.prompt, self.maximize, self.best_ids = prompt, maximize, [1, 2]
        best = np.maximum.accumulate(scores) if maximize else np.minimum.accumulate(scores)
        self.history = pd.DataFrame({"step": range(len(scores)), "score": scores, "best_so_far": best, "text": texts})


def test_gcg_trajectories_marks_spaces_and_labels_prompts():
    res = [_Result("What is the best food?", True, [" a", "b c"], [1.0, 0.5]),
           _Result("What is the best food?", False, ["x", "</script>"], [0.0, -1.0])]
    spec = _spec(figures.gcg_trajectories(res, label=lambda p: "best"))
    rows = _values(spec)
    assert len(rows) == 8 and {r["prompt"] for r in rows} == {"best"}
    assert {r["text"] for r in rows} == {visible(t) for t in (" a", "b c", "x", "</script>")}
    so_far = [r["score"] for r in rows if r["series"] == "best so far" and r["direction"] == "maximize"]
    assert so_far == [1.0, 1.0]

