"""What a reader sees of a vocabulary string, a list of them or a boolean in the book's tables, charts and
explorer: one rule (rmlib.viz.html.visible), checked on the rendered HTML and chart spec."""

import html
import itertools
import json
import re

import numpy as np
import pandas as pd

from rmlib import stats
from rmlib.viz import charts, explorers, rendering
from rmlib.viz import html as rhtml

#: The strings of the audit, and what a reader must see of each (written by hand).
SHOWN = {" Mind": "\u2423Mind", "common ground": "common ground", "a  b": "a\u2423\u2423b"}


def _cells(fragment: str) -> list[str]:
    """The text of every data cell of an HTML table, entities decoded, <wbr> dropped."""
    return [html.unescape(re.sub(r"<wbr>", "", c)) for c in re.findall(r"<td[^>]*>(.*?)</td>", fragment)]


def test_visible_is_lossless_on_every_short_string_of_white_space_and_letters():
    alphabet = [" ", "a", "\t", "\n", "\\", "\u00a0", "\u200b", "n"]
    strings = ["".join(p) for k in range(5) for p in itertools.product(alphabet, repeat=k)]
    shown = {}
    for s in strings:
        out = rhtml.visible(s)
        assert out not in shown, f"{s!r} and {shown.get(out)!r} both show as {out!r}"
        shown[out] = s
        # a plain space in the result is one space of the input, between two non-white-space characters
        for m in re.finditer(" ", out):
            i = m.start()
            assert 0 < i < len(out) - 1 and not out[i - 1].isspace() and not out[i + 1].isspace()


def test_a_table_shows_the_audit_strings_by_the_rule():
    df = pd.DataFrame({"decoded": list(SHOWN), "prose": ["two words"] * 3})
    assert _cells(rhtml.escape_table(df)) == [c for s in SHOWN for c in (SHOWN[s], "two words")]
    short = rhtml.short_table(df, 1).data
    assert _cells(short)[:2] == ["\u2423Mind", "two words"] and "common ground" in _cells(short)
    assert "a\u2423\u2423b" in _cells(short)


def test_a_chart_shows_the_audit_strings_by_the_rule_in_labels_and_tooltips():
    vocab = [*SHOWN, "x"]
    long = pd.DataFrame({"model": "m", "prompt": "p", "token_id": range(4), "token": vocab, "decoded": vocab,
                         "score": [4.0, 3.0, 2.0, 1.0]})
    chart = charts.top_bottom_bar(long, n=2)
    page = rendering.spec_to_html(chart.to_dict())
    spec = json.loads(re.search(r"var spec = (.*);\n", page).group(1))
    (values,) = spec["datasets"].values()
    by_id = {v["token_id"]: v for v in values}
    for i, s in enumerate(SHOWN):
        assert by_id[i]["label"] == by_id[i]["decoded"] == by_id[i]["token"] == SHOWN[s]
    assert "decoded" in {t["field"] for t in spec["encoding"]["tooltip"]}


class _Scorer:
    def __init__(self, model):
        self.model = model

    def score_tokens(self, prompt, token_ids=None):
        vocab = list(SHOWN)
        return pd.DataFrame({"token_id": range(3), "token": vocab, "decoded": vocab, "score": [3.0, 2.0, 1.0]})


def test_the_explorer_shows_the_audit_strings_by_the_rule():
    box = explorers.explorer(_Scorer, ["m"], "best?", n=1)
    cells = _cells(box.children[-1].value)
    assert cells == ["0", "\u2423Mind", "3", "2", "a\u2423\u2423b", "1"]  # top 1, then bottom 1


def test_a_wrapped_list_cell_marks_each_item():
    df = pd.DataFrame({"model": ["m"], "items": [[" Great", "Great", "common ground", "a  b"]]})
    out = rhtml.escape_table(df, wrap=["items"])
    assert _cells(out) == ["m", "\u2423Great, Great, common ground, a\u2423\u2423b"]
    assert '<td class="rmlib-wrap">' in out
    # as written when asked, and marked when the column is named
    raw, marked = " Great, Great, common ground, a  b", "\u2423Great, Great, common ground, a\u2423\u2423b"
    assert _cells(rhtml.escape_table(df, wrap=["items"], show_whitespace=False))[1] == raw
    assert _cells(rhtml.escape_table(df, show_whitespace=["items"]))[1] == marked
    assert _cells(rhtml.escape_table(df, show_whitespace=["model"]))[1] == raw
    # items are cells of their own: numbers formatted, hostile text escaped
    mixed = rhtml.escape_table(pd.DataFrame({"x": [(1, 0.123456, "<b>", None)]}), float_format=".2f")
    assert _cells(mixed) == ["1, 0.12, <b>, \u2013"] and "<b>" not in mixed


def test_prompt_overlap_items_keep_a_leading_space_apart_in_the_chapter_table():
    rows = [("m", p, i, d, s) for p, scores in (("best", [3, 2, 1]), ("worst", [3, 2, 1]))
            for i, (d, s) in enumerate(zip([" Great", "Great", "x"], scores))]
    long = pd.DataFrame(rows, columns=["model", "prompt", "token_id", "decoded", "score"])
    overlap = stats.prompt_overlap(long, "best", "worst", 2)
    assert overlap.loc[0, "items"] == [" Great", "Great"]
    assert _cells(rhtml.escape_table(overlap, wrap=["items"]))[-1] == "\u2423Great, Great"


def test_booleans_show_as_yes_and_no():
    df = pd.DataFrame({"py": pd.Series([True, False], dtype=object), "np": np.array([False, True]),
                       "mixed": [np.bool_(True), None]})
    assert isinstance(df["np"].iloc[0], np.bool_)
    assert _cells(rhtml.escape_table(df)) == ["yes", "no", "yes", "no", "yes", "\u2013"]
    compared = (pd.Series([1, 3]) > 2).to_frame("big")  # a comparison's column, as chapters build them
    assert _cells(rhtml.escape_table(compared)) == ["no", "yes"]
