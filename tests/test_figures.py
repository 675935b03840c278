"""rmlib.viz.figures: the chapters' chart recipes build valid Vega-Lite with the right data and dropdowns."""

import json

import numpy as np
import pandas as pd
import pytest

from rmlib.viz import figures


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
