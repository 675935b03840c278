"""Rendering options of general viz functions: wrapped table columns, missing cells, and the
least-squares lines of charts.scatter (checked against numpy's fit on the points drawn)."""

import numpy as np
import pandas as pd
import pytest

from rmlib.viz import charts, html


def test_wrap_marks_only_the_named_columns_and_none_is_a_dash():
    df = pd.DataFrame({"claim": ["a long sentence"], "token": [" good"], "value": [None]})
    out = html.escape_table(df, wrap=["claim"])
    assert '<td class="rmlib-wrap">a long sentence</td>' in out
    assert "<td>\u2423good</td>" in out and f"<td>{html.MISSING_SYMBOL}</td>" in out and "None" not in out
    assert out.count("rmlib-wrap") == 2  # the column's header and its cell
    assert html.escape_table(df, wrap=True).count("rmlib-wrap") == 2 * 3
    with pytest.raises(ValueError, match="wrap names columns"):
        html.escape_table(df, wrap=["nope"])


def test_scatter_fit_draws_one_regression_line_per_colour():
    rng = np.random.default_rng(0)
    x = rng.normal(size=60)
    df = pd.DataFrame({"x": x, "y": 2 * x + rng.normal(size=60), "valence": np.where(x > 0, "pos", "neg")})
    spec = charts.scatter(df, "x", "y", color="valence", dropdown=False, fit=True).to_dict()
    layers = spec["layer"]
    assert len(layers) == 2 and layers[0]["mark"]["type"] == "circle"
    reg = layers[1]["transform"][0]
    assert reg == {"regression": "y", "on": "x", "groupby": ["valence"]} and layers[1]["mark"]["type"] == "line"
    rows = next(iter(spec["datasets"].values()))
    assert len(rows) == 60  # the line is fitted on the points drawn: the same data, nothing else embedded
    plain = charts.scatter(df, "x", "y", dropdown=False).to_dict()
    assert "layer" not in plain and plain["mark"]["type"] == "circle"


def test_snake_case_headers_may_break_after_underscores():
    out = html.escape_table(pd.DataFrame({"p_perm_units_bonf": [0.5], "<b>_x": [1]}))
    assert "<th>p_<wbr>perm_<wbr>units_<wbr>bonf</th>" in out and "<th>&lt;b&gt;_<wbr>x</th>" in out


def test_a_wrapped_column_named_in_show_whitespace_stays_marked():
    df = pd.DataFrame({"prefix": ["User:  hi\nAssistant: "], "note": ["two  words"]})
    out = html.escape_table(df, show_whitespace=["prefix"], wrap=["prefix", "note"])
    assert '<td class="rmlib-wrap">User:<wbr>\u2423<wbr>\u2423<wbr>hi\\n<wbr>Assistant:<wbr>\u2423<wbr></td>' in out
    assert '<td class="rmlib-wrap">two  words</td>' in out  # prose: white space as written
    one = html.escape_table(pd.DataFrame({"prefix": ["User: hi"]}), show_whitespace=["prefix"], wrap=True)
    assert '<td class="rmlib-wrap">User:<wbr> hi</td>' in one  # a single space between words stays a space


def test_a_wrapped_cell_may_break_after_path_and_id_separators_only():
    df = pd.DataFrame({"source": ["scripts/boost_values_via_SFT.py", "a & b"], "token": ["x_y", "c:d"]})
    out = html.escape_table(df, wrap=["source"])
    assert '<td class="rmlib-wrap">scripts/<wbr>boost_<wbr>values_<wbr>via_<wbr>SFT.py</td>' in out
    template = html.escape_table(pd.DataFrame({"t": ["<|im|>x\n<y>"]}), wrap=True, show_whitespace=["t"])
    assert "&lt;|im|&gt;<wbr>x\\n<wbr>&lt;y&gt;<wbr>" in template
    assert '<td class="rmlib-wrap">a &amp; b</td>' in out  # entities untouched
    assert "<td>x_y</td>" in out and "<td>c:d</td>" in out  # vocabulary cells are never broken
