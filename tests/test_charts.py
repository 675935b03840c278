"""rmlib.viz.html (escaping, visible whitespace) and rmlib.viz.charts (offline renderer, builders, explorer)."""

import html.parser
import json
import re
import shlex
import unicodedata

import altair as alt
import numpy as np
import pandas as pd
import pytest

from rmlib.viz import chart_parts, charts, explorers, rendering
from rmlib.viz import html as rhtml

HOSTILE = [
    "<table>", "</table>", "</script>", "<script>window.__pwned=1</script>",
    '"><img src=x onerror="window.__pwned=1">', "{{x}}", "javascript:alert(1)", "<!--", "]]>",
    "&amp;", " the", "\n", "", "\u200b", "<b>x</b>", "\u2028", "'",
]
TABLE_TAGS = {"table", "caption", "thead", "tbody", "tfoot", "tr", "th", "td", "wbr"}  # wbr: header breaks


class _Collector(html.parser.HTMLParser):
    """Collects start tags and, per cell, its text (entities decoded)."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.tags, self.cells, self._buf = [], [], None

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        if tag in ("td", "th"):
            self._buf = []

    def handle_endtag(self, tag):
        if tag in ("td", "th") and self._buf is not None:
            self.cells.append("".join(self._buf))
            self._buf = None

    def handle_data(self, data):
        if self._buf is not None:
            self._buf.append(data)

    def handle_comment(self, data):
        self.tags.append("<!--")


def parse(fragment):
    c = _Collector()
    c.feed(fragment)
    c.close()
    return c


def long_table(seed=0, vocab=None, models=("m1", "m2"), prompts=("p1", "p2")):
    vocab = list(vocab if vocab is not None else HOSTILE + [f"w{i}" for i in range(30)])
    rng = np.random.default_rng(seed)
    frames = [
        pd.DataFrame({"model": m, "prompt": p, "token_id": np.arange(len(vocab)), "token": vocab,
                      "decoded": vocab, "score": rng.normal(size=len(vocab))})
        for m in models for p in prompts
    ]
    return pd.concat(frames, ignore_index=True)


def spec_values(chart):
    """The inline data rows of a chart spec (Altair moves them to `datasets`)."""
    spec = chart.to_dict()
    if "datasets" in spec:
        (values,) = spec["datasets"].values()
        return spec, values
    return spec, spec["data"]["values"]


def spec_params(spec):
    return {p["name"]: p for p in spec.get("params", [])}


# --------------------------------------------------------------------------- visible / escape
@pytest.mark.parametrize("text, expected", [
    # spaces: one between two non-white-space characters stays; every other one is marked
    (" the", "\u2423the"),  # leading
    ("the ", "the\u2423"),  # trailing
    ("a b", "a b"),  # interior, single
    ("common ground", "common ground"),
    ("a  b", "a\u2423\u2423b"),  # interior, a run of two
    ("a   b c", "a\u2423\u2423\u2423b c"),
    (" ", "\u2423"),  # only spaces
    ("   ", "\u2423\u2423\u2423"),
    ("a \tb", "a\u2423\\tb"),  # beside a tab: marked
    ("a\tb", "a\\tb"),  # tab
    ("a\nb c", "a\\nb c"),  # newline
    ("a \nb", "a\u2423\\nb"),
    ("a\u00a0b", "a\\xa0b"),  # no-break space
    ("a \u00a0b", "a\u2423\\xa0b"),  # beside a no-break space (white space): marked
    ("a\u200bb", "a\\u200bb"),  # zero-width space
    ("SmolLM2-135M-Instruct + trained:default", "SmolLM2-135M-Instruct + trained:default"),
    ("A.1 (greatest)", "A.1 (greatest)"),
    ("\n", "\\n"),
    ("\t\r", "\\t\\r"),
    ("a\\b", "a\\\\b"),
    ("", "\u2205"),
    ("\x00", "\\x00"),
    ("\u200b", "\\u200b"),
    ("\u202eevil", "\\u202eevil"),
    ("\u00a0", "\\xa0"),
    ("\U000e0001", "\\U000e0001"),
    ("café 🙂 中文", "café 🙂 中文"),
    ("café  🙂", "café\u2423\u2423🙂"),
])
def test_visible_by_hand(text, expected):
    assert rhtml.visible(text) == expected


def test_visible_leaves_no_invisible_character():
    every = "".join(chr(c) for c in range(0x0, 0x3000))
    out = rhtml.visible(every)
    bad = {unicodedata.category(ch) for ch in out} & {"Cc", "Cf", "Zl", "Zp", "Zs", "Cs", "Co", "Cn"}
    assert not bad


def test_visible_non_string():
    assert rhtml.visible(12) == "12"


@pytest.mark.parametrize("s", HOSTILE)
def test_escape_round_trips_as_text(s):
    out = rhtml.escape(s)
    assert "<" not in out and ">" not in out and '"' not in out and "'" not in out
    assert html.unescape(out) == s


# --------------------------------------------------------------------------- escape_table
def test_escape_table_hostile_cells_and_headers_stay_text():
    df = pd.DataFrame({"<th>col</th>": HOSTILE, "score": np.arange(len(HOSTILE), dtype=float) / 3})
    out = rhtml.escape_table(df, caption="<script>alert(1)</script>")
    parsed = parse(out)
    assert set(parsed.tags) <= TABLE_TAGS, parsed.tags
    header, cells = parsed.cells[:2], parsed.cells[2:]
    assert header == ["<th>col</th>", "score"]
    assert cells[0::2] == [rhtml.visible(s) for s in HOSTILE]
    assert [float(x) for x in cells[1::2]] == pytest.approx(
        [float(format(v, ".4g")) for v in df["score"]])
    assert "<script>alert(1)</script>" not in out


def test_escape_table_raw_strings_when_asked():
    df = pd.DataFrame({"t": [" a", "<b>"]})
    parsed = parse(rhtml.escape_table(df, show_whitespace=False))
    assert parsed.cells[1:] == [" a", "<b>"]


def test_escape_table_marks_white_space_only_in_the_named_columns():
    df = pd.DataFrame({"text": [" a", "b\tc"], "note": ["two words", "<b> x"]})
    parsed = parse(rhtml.escape_table(df, show_whitespace=["text"]))
    assert parsed.cells[2:] == [rhtml.visible(" a"), "two words", rhtml.visible("b\tc"), "<b> x"]
    assert rhtml.visible(" a") != " a"
    with pytest.raises(ValueError, match="does not have"):
        rhtml.escape_table(df, show_whitespace=["nope"])


def test_escape_table_index_max_rows_nan_and_ints():
    df = pd.DataFrame({"v": [1.5, np.nan, 3.0], "n": [1, 2, 3]}, index=pd.Index(["<a>", "b", "c"], name="item"))
    parsed = parse(rhtml.escape_table(df, index=True, max_rows=2))
    assert parsed.cells[:3] == ["item", "v", "n"]
    assert parsed.cells[3:6] == ["<a>", "1.5", "1"]
    assert parsed.cells[6:9] == ["b", "", "2"]
    assert "1 more rows not shown" in parsed.cells[-1]
    assert len(parsed.cells) == 10


def test_escape_table_rejects_bad_input():
    with pytest.raises(TypeError, match="DataFrame"):
        rhtml.escape_table(pd.Series([1, 2]))
    with pytest.raises(ValueError, match="max_rows"):
        rhtml.escape_table(pd.DataFrame({"a": [1]}), max_rows=-1)


def _cell_classes(out):
    """``[(tag, class attribute, text)]`` of every header and data cell."""
    found = []

    class P(html.parser.HTMLParser):
        def handle_starttag(self, tag, attrs):
            if tag in ("th", "td"):
                found.append([tag, dict(attrs).get("class", ""), ""])

        def handle_data(self, data):
            if found:
                found[-1][2] += data

    P(convert_charrefs=True).feed(out)
    return [tuple(f) for f in found]


def test_key_columns_by_name_and_by_argument():
    cols = ["model", "verdict", "here: SmolLM2", "score_here", "live", "scores", "scorer", "mean score", "p"]
    assert rhtml.key_columns(cols) == ["verdict", "here: SmolLM2", "score_here", "live", "mean score"]
    assert rhtml.key_columns(cols, key=["p"]) == ["verdict", "here: SmolLM2", "score_here", "live", "mean score", "p"]
    with pytest.raises(ValueError, match="key names columns the table does not have: \\['nope'\\]"):
        rhtml.key_columns(cols, key=["nope"])


def test_key_and_wrap_columns_are_marked_and_still_escaped():
    df = pd.DataFrame({"<b>claim</b>": ["a long claim", "<script>x</script>"], "Verdict": ["reproduces", None],
                       "diff_low": [1.0, np.nan]})
    out = rhtml.escape_table(df, wrap=["<b>claim</b>"], key=["diff_low"])
    assert "<script>" not in out and "<b>" not in out
    cells = _cell_classes(out)
    assert cells[:3] == [("th", "rmlib-wrap", "<b>claim</b>"), ("th", "rmlib-key", "Verdict"),
                         ("th", "rmlib-key", "diff_low")]
    assert cells[3:] == [("td", "rmlib-wrap", "a long claim"), ("td", "rmlib-key", "reproduces"),
                         ("td", "rmlib-key", "1"), ("td", "rmlib-wrap", "<script>x</script>"),
                         ("td", "rmlib-key", ""), ("td", "rmlib-key", "")]  # missing in a text column: empty, never "None"
    assert "diff_<wbr>low" in out  # a long snake_case header may break after its underscore
    assert rhtml.escape_table(df, wrap=True).count('class="rmlib-wrap"') == 3 + 3
    with pytest.raises(ValueError, match="wrap names columns"):
        rhtml.escape_table(df, wrap=["nope"])


def test_table_returns_ipython_html():
    from IPython.display import HTML

    obj = rhtml.table(pd.DataFrame({"a": ["<x>"]}))
    assert isinstance(obj, HTML)
    assert "&lt;x&gt;" in obj.data


# --------------------------------------------------------------------------- renderer
SCRIPT_RE = re.compile(r"<script\b[^>]*>(.*?)</script>", re.S | re.I)


def test_spec_to_html_cannot_be_broken_out_of():
    spec = {"data": {"values": [{"t": s} for s in HOSTILE]}, "mark": "text",
            "encoding": {"text": {"field": "t", "type": "nominal"}}}
    out = rendering.spec_to_html(spec, element_id="c1")
    assert out.lower().count("<script") == 1 and out.lower().count("</script") == 1
    (body,) = SCRIPT_RE.findall(out)
    assert "<" not in body and ">" not in body.replace("=>", "") and "&" not in body.replace("&&", "")
    # the spec survives the escaping exactly
    m = re.search(r"var spec = (.*?);\n", body)
    assert json.loads(m.group(1)) == spec
    assert '<div class="rmlib-chart" id="c1"></div>' in out


def test_spec_to_html_rejects_nan_and_non_dict():
    with pytest.raises(ValueError, match="NaN"):
        rendering.spec_to_html({"data": {"values": [{"x": float("nan")}]}})
    with pytest.raises(TypeError, match="to_dict"):
        rendering.spec_to_html("not a spec")


def test_renderer_registered_and_show():
    chart = alt.Chart(pd.DataFrame({"x": [1, 2]})).mark_point().encode(x="x:Q")
    old = alt.renderers.active
    try:
        charts.enable()
        assert alt.renderers.active == charts.RENDERER_NAME
        bundle = chart._repr_mimebundle_()
        bundle = bundle[0] if isinstance(bundle, tuple) else bundle
        assert set(bundle) == {"text/html"}
        assert "window.rmlibVegaEmbed" in bundle["text/html"]
        assert "cdn" not in bundle["text/html"].lower()
    finally:
        alt.renderers.enable(old)
    shown = rendering.show(chart)
    assert 'class="rmlib-chart"' in shown._repr_html_()
    with pytest.raises(TypeError):
        rendering.show(42)


# --------------------------------------------------------------------------- builders
def test_top_bottom_bar_selects_extremes_per_group():
    df = long_table(seed=1)
    n = 4
    spec, values = spec_values(charts.top_bottom_bar(df, n=n))
    got = pd.DataFrame(values)
    for (m, p), g in df.groupby(["model", "prompt"]):
        order = np.lexsort((g["token_id"].to_numpy(), -g["score"].to_numpy()))
        ids = g["token_id"].to_numpy()[order]
        sel = got[(got.model == m) & (got.prompt == p)]
        assert set(sel[sel.end == "top"].token_id) == set(ids[:n])
        assert set(sel[sel.end == "bottom"].token_id) == set(ids[-n:])
        assert sel["label"].is_unique
    # labels and tooltips show visible strings, never raw control characters
    decoded = df.drop_duplicates("token_id").set_index("token_id")["decoded"]
    assert all(lbl == rhtml.visible(decoded[t]) or lbl == f"{rhtml.visible(decoded[t])} #{t}"
               for lbl, t in zip(got.label, got.token_id))
    assert list(got.decoded) == [rhtml.visible(decoded[t]) for t in got.token_id]
    params = spec_params(spec)
    assert params["model_select"]["bind"]["options"] == ["m1", "m2"]
    assert params["prompt_select"]["bind"]["options"] == ["p1", "p2"]
    assert params["model_select"]["bind"]["input"] == "select"
    filters = [t["filter"] for t in spec["transform"]]
    assert filters == ["(datum['model'] === model_select)", "(datum['prompt'] === prompt_select)"]


def test_top_bottom_bar_small_vocab_no_overlap_and_duplicate_labels():
    df = long_table(vocab=["a", "a", "b"], models=("m",), prompts=("p",))
    spec, values = spec_values(charts.top_bottom_bar(df, n=2))
    got = pd.DataFrame(values)
    assert sorted(got.token_id) == [0, 1, 2]           # top 2 + the 1 left over
    assert got.label.is_unique and any(lbl.startswith("a #") for lbl in got.label)
    assert "params" not in spec                         # one model, one prompt: no dropdown


def test_top_bottom_bar_bad_input():
    with pytest.raises(ValueError, match="missing column"):
        charts.top_bottom_bar(pd.DataFrame({"model": ["m"], "score": [1.0]}))
    with pytest.raises(ValueError, match="positive int"):
        charts.top_bottom_bar(long_table(), n=0)


def test_score_distribution_counts_match_scores():
    df = long_table(seed=2)
    spec, values = spec_values(charts.score_distribution(df, bins=7))
    got = pd.DataFrame(values)
    for (m, p), g in df.groupby(["model", "prompt"]):
        sel = got[(got.model == m) & (got.prompt == p)].sort_values("bin_start")
        s = g["score"].to_numpy()
        assert sel["count"].sum() == len(s) and len(sel) == 7
        assert sel.bin_start.iloc[0] == pytest.approx(s.min()) and sel.bin_end.iloc[-1] == pytest.approx(s.max())
        for i, row in enumerate(sel.itertuples()):
            upper = (s <= row.bin_end) if i == len(sel) - 1 else (s < row.bin_end)
            assert row.count == np.sum((s >= row.bin_start) & upper)
    assert set(spec_params(spec)) == {"model_select", "prompt_select"}


def test_heatmap_values_and_dropdown():
    m1 = pd.DataFrame([[1.0, 0.5], [0.5, 1.0]], index=["a", "<b>"], columns=["a", "<b>"])
    m2 = m1 * 0.5
    spec, values = spec_values(charts.heatmap({"p1": m1, "p2": m2}, value_name="Cohen's d"))
    got = pd.DataFrame(values)
    for name, mat in (("p1", m1), ("p2", m2)):
        sel = got[got.prompt == name]
        for r in mat.index:
            for c in mat.columns:
                assert sel[(sel.row == r) & (sel.column == c)].value.item() == mat.loc[r, c]
    assert spec_params(spec)["prompt_select"]["bind"]["options"] == ["p1", "p2"]
    assert "Cohen's d" in json.dumps(spec)  # as a title; the field itself is "value"
    spec1, _ = spec_values(charts.heatmap(m1))
    assert "params" not in spec1
    with pytest.raises(ValueError, match="numeric"):
        charts.heatmap(pd.DataFrame({"a": ["x"]}))


def test_scatter_dropdown_sampling_and_visible():
    df = long_table(seed=3).pivot_table(index=["prompt", "token_id", "decoded"], columns="model",
                                        values="score").reset_index()
    spec, values = spec_values(charts.scatter(df, x="m1", y="m2", tooltip=["decoded", "m1"], max_points=10))
    got = pd.DataFrame(values)
    assert got.groupby("prompt").size().to_dict() == {"p1": 10, "p2": 10}
    assert set(got.decoded) <= {rhtml.visible(s) for s in df.decoded}
    assert spec_params(spec)["prompt_select"]["bind"]["options"] == ["p1", "p2"]
    assert "random sample" in spec["title"]["subtitle"]
    # rows kept are real rows of the input
    merged = got.merge(df.assign(decoded=df.decoded.map(rhtml.visible)), on=["prompt", "decoded"])
    assert np.allclose(merged.m1_x, merged.m1_y)
    spec2, _ = spec_values(charts.scatter(df, x="m1", y="m2", dropdown=False))
    assert "params" not in spec2
    with pytest.raises(ValueError, match="missing column"):
        charts.scatter(df, x="m1", y="nope")


def test_scatter_fixes_colours_and_axis_titles():
    df = pd.DataFrame({"afinn": [-3, -1, 2, 4], "score": [0.1, 0.2, 0.5, 0.9],
                       "valence": ["negative", "negative", "positive", "positive"]})
    spec = charts.scatter(df, "afinn", "score", color="valence", dropdown=False, fit=True,
                          colors=(["positive", "negative"], ["#3A6E97", "#B95C5A"]),
                          x_title="AFINN sentiment", y_title="reward").to_dict()
    enc = spec["layer"][0]["encoding"]
    assert enc["color"]["scale"] == {"domain": ["positive", "negative"], "range": ["#3A6E97", "#B95C5A"]}
    assert enc["x"]["title"] == "AFINN sentiment" and enc["y"]["title"] == "reward"
    assert spec["layer"][1]["encoding"]["color"]["scale"]["range"] == ["#3A6E97", "#B95C5A"]
    plain = charts.scatter(df, "afinn", "score", dropdown=False).to_dict()["encoding"]
    assert plain["x"]["title"] == "afinn" and "color" not in plain
    with pytest.raises(ValueError, match="same length"):
        charts.scatter(df, "afinn", "score", color="valence", colors=(["positive"], ["#000", "#fff"]))
    dots = charts.dot_plot(df, "afinn", "score", color="valence", colors=(["positive", "negative"], ["#3A6E97", "#B95C5A"]))
    assert json.dumps(dots.to_dict()).count('"range": ["#3A6E97", "#B95C5A"]') >= 1


def test_mds_plot_keeps_coordinates():
    coords = pd.DataFrame({"x": [0.1, 0.2], "y": [1.0, -1.0], "family": ["f", "g"]}, index=["<m1>", "m2"])
    spec, values = spec_values(charts.mds_plot(coords, color="family"))
    got = pd.DataFrame(values).set_index("item")
    assert got.loc["<m1>", "x"] == 0.1 and got.loc["m2", "y"] == -1.0
    both = {"p1": coords, "p2": coords.assign(x=coords.x * 2)}
    spec2, values2 = spec_values(charts.mds_plot(both, color="family"))
    got2 = pd.DataFrame(values2)
    assert got2[(got2.prompt == "p2") & (got2.item == "m2")].x.item() == pytest.approx(0.4)
    assert spec_params(spec2)["prompt_select"]["bind"]["options"] == ["p1", "p2"]
    with pytest.raises(ValueError, match="missing column"):
        charts.mds_plot(coords.drop(columns="y"))


# --------------------------------------------------------------------------- explorer
class FakeScorer:
    made = []

    def __init__(self, model):
        FakeScorer.made.append(model)
        self.model = model

    def score_tokens(self, prompt, token_ids=None):
        if prompt == "boom":
            raise RuntimeError("<img src=x onerror=alert(1)>")
        vocab = HOSTILE
        return pd.DataFrame({"token_id": range(len(vocab)), "token": vocab, "decoded": vocab,
                             "score": np.linspace(1, 0, len(vocab)) * (1 if self.model == "a" else -1)})


def test_explorer_scores_escapes_and_caches():
    FakeScorer.made = []
    box = explorers.explorer(FakeScorer, ["a", "<b>"], "best?", n=3)
    prompt_box, model_box, button = box.children[0].children
    result = box.children[-1]
    parsed = parse(result.value)
    assert set(parsed.tags) <= TABLE_TAGS | {"div", "p", "q"}
    cells = parsed.cells
    # top 3 by score for model "a" are the first three vocabulary entries
    assert cells[3:6] == ["0", rhtml.visible(HOSTILE[0]), "1"]
    model_box.value = "<b>"
    button.click()
    button.click()
    assert FakeScorer.made == ["a", "<b>"]                  # one scorer per model
    assert "&lt;b&gt;" in result.value and "<b>" not in result.value
    prompt_box.value = "boom"
    box.run()
    assert "RuntimeError" in result.value and "<img" not in result.value
    prompt_box.value = "   "
    box.run()
    assert "Enter a prompt" in result.value


def test_explorer_static_version_is_a_note_and_the_result(monkeypatch):
    monkeypatch.setenv(explorers.CHAPTER_ENV, "01")
    box = explorers.explorer(FakeScorer, ["a", "<b>"], "it's <best>?", n=3)
    controls, result = box.children
    bundle = box._repr_mimebundle_()
    # a live front end gets the widgets, a page without a kernel the static HTML
    assert bundle["application/vnd.jupyter.widget-view+json"]["model_id"] == box.model_id
    static = bundle["text/html"]
    assert static.endswith(result.value + "</div>") and "<button" not in static and "<select" not in static
    parsed = parse(static)
    assert set(parsed.tags) <= TABLE_TAGS | {"div", "p", "q", "code"}
    note = re.search(r'<p class="rmlib-explorer-note">.*?</p>', static).group(0)
    text = html.unescape(note)
    assert "needs a running Python kernel" in text and "notebooks/01_*.ipynb" in text and "<best>" not in note
    # the command is a working shell line: the prompt survives the quoting
    command = re.search(r"<code>(python -m rmlib.book chapter[^<]*)</code>", note).group(1)
    assert shlex.split(html.unescape(command)) == ["python", "-m", "rmlib.book", "chapter", "01", "-p", "prompt",
                                                   "it's <best>?"]
    simple = explorers.static_explorer_note("What is the best <food>?", "01")
    argv = shlex.split(html.unescape(re.search(r"<code>(make chapter[^<]*)</code>", simple).group(1)))
    assert argv[:3] == ["make", "chapter", "CH=01"]
    assert shlex.split(argv[3].removeprefix("PARAMS=")) == ["-p", "prompt", "What is the best <food>?"]
    # the static version follows the widgets' state: a new model's result, the new prompt in the note
    controls.children[0].value = "best snack?"
    controls.children[1].value = "<b>"
    box.run()
    static = box._repr_mimebundle_()["text/html"]
    assert "&lt;b&gt;" in static and "best snack?" in static and "<b>" not in static
    monkeypatch.delenv(explorers.CHAPTER_ENV)
    assert "make chapter CH=NN" in explorers.static_explorer_note("x")


def test_explorer_bad_arguments():
    with pytest.raises(ValueError, match="non-empty"):
        explorers.explorer(FakeScorer, ["a"], "")
    with pytest.raises(ValueError, match="at least one model"):
        explorers.explorer(FakeScorer, [], "x")


def test_load_in_notebook_inlines_bundle_safely(tmp_path):
    bundle = tmp_path / "b.js"
    bundle.write_text('window.rmlibVegaEmbed = function () {}; var s = "</script><b>";')
    out = rendering.load_in_notebook(str(bundle)).data
    assert out.lower().count("</script") == 1 and out.endswith("</script>")
    assert 'var s = "<\\/script><b>";' in out
    with pytest.raises(FileNotFoundError, match="make vendor"):
        rendering.load_in_notebook(str(tmp_path / "missing.js"))


def test_numeric_dropdown_keeps_numbers():
    df = pd.DataFrame({"x": [1.0, 2.0, 3.0, 4.0], "y": [1.0, 0.0, 1.0, 0.0], "layer": [1, 1, 2, 2]})
    spec, values = spec_values(charts.scatter(df, x="x", y="y", dropdown="layer"))
    assert spec_params(spec)["layer_select"]["bind"]["options"] == [1, 2]
    assert spec_params(spec)["layer_select"]["value"] == 1
    assert {row["layer"] for row in values} == {1, 2}


def test_add_dropdowns_on_hand_made_layer():
    df = pd.DataFrame({"g": ["<a>", "b", "b"], "v": [1.0, np.nan, 3.0]})
    base = alt.Chart(chart_parts.inline_data(df))
    chart = chart_parts.add_dropdowns(alt.layer(base.mark_point().encode(x="v:Q"), base.mark_rule().encode(x="v:Q")),
                                 df, ["g", "missing_column"])
    spec = chart.to_dict()
    assert spec_params(spec)["g_select"]["bind"]["options"] == ["<a>", "b"]
    assert spec["transform"] == [{"filter": "(datum['g'] === g_select)"}]
    _, values = spec_values(base.mark_point().encode(x="v:Q"))
    assert values[1]["v"] is None                     # NaN becomes null, valid JSON
    single = chart_parts.add_dropdowns(base.mark_point(), df.iloc[:1], ["g"])
    assert "params" not in single.to_dict()


def test_note_escapes_generated_text():
    from rmlib.viz.html import note

    out = note('model "<script>alert(1)</script>" & friends').data
    assert out.startswith("<p>") and "<script>" not in out and "&lt;script&gt;" in out and "&amp;" in out


def test_charts_and_stats_import_without_torch():
    """Charts and statistics stay light: the column names come from rmlib.tables.schema, not results."""
    import subprocess
    import sys

    code = ("import sys, rmlib.viz.charts, rmlib.stats; from rmlib.tables.schema import LONG_COLUMNS; "
            "assert rmlib.viz.charts.LONG_COLUMNS is LONG_COLUMNS; print('torch' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_heatmap_cell_width_is_a_parameter():
    m = pd.DataFrame([[1.0, 0.5], [0.5, 1.0]], index=["a", "b"], columns=["a", "b"])
    assert charts.heatmap(m).to_dict()["width"] == {"step": 36}
    assert charts.heatmap(m, cell=20).to_dict()["width"] == {"step": 20}


def test_long_chart_titles_are_wrapped_into_lines():
    """A title longer than its chart widens the chart past the page: wrap_title breaks it (heatmap uses it)."""
    import pandas as pd

    from rmlib.viz import charts as C

    assert chart_parts.wrap_title("short title") == "short title"
    long = "Cohen's d: Bing positive minus negative, in pooled SDs (reward model score, RMs trained here)"
    lines = chart_parts.wrap_title(long, 40)
    assert isinstance(lines, list) and all(len(x) <= 40 for x in lines) and " ".join(lines) == long
    spec = C.heatmap(pd.DataFrame([[1.0, 2.0]], index=["a"], columns=["x", "y"]), title=long).to_dict()
    assert spec["title"] == chart_parts.wrap_title(long)


def test_line_chart_orders_drops_what_a_log_axis_cannot_show_and_escapes():
    df = pd.DataFrame({"beta": [10.0, 0.0, 1.0, np.inf, 0.1, 1.0], "kl": [0.1, 3.0, 1.0, 0.0, 2.0, 0.5],
                       "decoded": [" a", " a", " a", " a", " a", "<b>"], "pair": ["x"] * 5 + ["y"],
                       "n": [1.0, 2.0, np.inf, 4.0, 5.0, 6.0]})
    spec, values = spec_values(charts.line_chart(df, "beta", "kl", color="decoded", dropdowns=["pair", "nope"],
                                                 log_x=True, points=True, tooltip=["n"]))
    assert [v["beta"] for v in values] == [0.1, 1.0, 1.0, 10.0]  # sorted; 0 and inf left out
    assert [v["n"] for v in values] == [5.0, None, 6.0, 1.0]  # an infinite tooltip value is missing
    assert {v["decoded"] for v in values} == {rhtml.visible(" a"), "<b>"}
    assert spec["encoding"]["x"]["scale"] == {"type": "log"}
    assert spec_params(spec)["pair_select"]["bind"]["options"] == ["x", "y"]
    with pytest.raises(ValueError, match="no row has a finite"):
        charts.line_chart(df.assign(kl=-1.0), "beta", "kl", log_y=True)
    with pytest.raises(ValueError, match="must be numeric"):
        charts.line_chart(df, "decoded", "kl")


def test_dot_plot_axis_spans_every_point_and_error_bar_and_names_the_axes():
    df = pd.DataFrame({"family": ["Gemma", "Llama", "Gemma", "Llama"], "mean": [97.5, 103.0, 132.5, 128.3],
                       "se": [1.0, 2.0, 0.5, 0.5], "framing": ["negative", "negative", "positive", "positive"]})
    spec = charts.dot_plot(df, "family", "mean", err="se", row="framing", reverse_y=True, x_title="base model",
                           y_title="mean median rank").to_dict()
    layers = spec["spec"]["layer"]
    lo, hi = layers[0]["encoding"]["y"]["scale"]["domain"]
    assert lo < 97.5 - 1.0 and hi > 132.5 + 0.5  # the lowest error bar and the highest point inside, with a margin
    assert layers[0]["encoding"]["y"]["scale"]["reverse"] is True
    assert layers[1]["encoding"]["y"]["scale"]["domain"] == [lo, hi]  # the error bars on the same scale
    assert layers[0]["encoding"]["x"]["title"] == "base model"
    assert layers[0]["encoding"]["y"]["title"] == "mean median rank"
