"""rmlib.viz.verdicts (the verdict vocabulary, judge, render, the verdict-cell check),
rmlib.viz.sentences (general templates, numbers for people), the claims reader and the book page."""

import json
import pathlib
import re
import sys

import pandas as pd
import pytest

from rmlib.book import pages
from rmlib.errors import InputError
from rmlib.stats.verdict import compare_printed, within_tolerance
from rmlib.tables import findings
from rmlib.viz import sentences, verdicts
from rmlib.viz.verdicts import VERDICTS, judge, verdict_table

ROOT = pathlib.Path(__file__).resolve().parents[1]


def test_vocabulary_is_the_five_words_in_order():
    assert list(VERDICTS) == ["reproduces", "consistent", "not robust", "differs", "not testable here"]
    assert all(isinstance(d, str) and len(d) > 20 for d in VERDICTS.values())


# --------------------------------------------------------------------------- precision rules
def test_printed_precision_rounds_half_away_from_zero():
    # 0.2936 rounds to 0.29; 0.2849 to 0.28; .125 to .13 (not to even, .12)
    assert compare_printed("0.29", 0.2936) == (True, "0.29", "0.29")
    assert compare_printed("0.29", 0.2849) == (False, "0.29", "0.28")
    assert compare_printed("0.3", 0.2849)[0]  # one decimal printed: 0.2849 -> 0.3
    assert compare_printed("0.13", 0.125)[0] and compare_printed("-0.13", -0.125)[0]
    assert compare_printed(0.55, 0.5537, decimals=2)[0]
    with pytest.raises(InputError, match="decimals"):
        compare_printed(0.55, 0.5537)


def test_counts_ranges_and_bounds():
    assert compare_printed("1,805,124", 1804776) == (False, "1,805,124", "1,804,776")
    assert compare_printed("0.22-0.39", (0.2189, 0.3898))[0]  # 0.2189 -> 0.22, 0.3898 -> 0.39
    assert not compare_printed("0.22–0.39", (0.2006, 0.3844))[0]  # 0.20 != 0.22
    assert compare_printed("< .001", 3e-8)[0] and not compare_printed("< .001", 0.59)[0]
    assert compare_printed("> .10", 0.70)[0]
    with pytest.raises(InputError, match="pair"):
        compare_printed("0.22-0.39", 0.3)
    with pytest.raises(InputError, match="number"):
        compare_printed("about a third", 0.3)


def test_tolerance():
    # |0.806 - 0.80| = 0.006 <= 0.01; |0.82 - 0.80| = 0.02 > 0.01
    assert within_tolerance(".80", 0.806, 0.01) == (True, ".80", "0.806")
    assert not within_tolerance(".80", 0.82, 0.01)[0]
    assert within_tolerance("0.22-0.39", (0.21, 0.40), 0.01)[0]
    with pytest.raises(InputError, match="tolerance"):
        within_tolerance(".80", 0.8, -1)
    with pytest.raises(InputError, match="bound"):
        within_tolerance("< .05", 0.01, 0.01)


# --------------------------------------------------------------------------- judge
def test_judge_compares_at_the_printed_precision():
    row = judge("human-RM tau, mean", "0.29", 0.2936, unit="RM")
    assert row == {"claim": "human-RM tau, mean", "unit": "RM", "correction": "none", "published": "0.29",
                   "recomputed": "0.29", "live": None, "verdict": "reproduces",
                   "why": "equal at the paper's printed precision"}
    assert judge("items", "7,530", 7530, unit="item")["recomputed"] == "7,530"
    row = judge("comparisons", "1,805,124", 1804776, unit="comparison")
    assert row["verdict"] == "differs" and row["why"] == "1,804,776 here, 1,805,124 printed"
    row = judge("R²", ".80", 0.806, unit="cell", tolerance=0.01, why="printed .80: cut, not rounded")
    assert row["verdict"] == "reproduces" and row["recomputed"] == "0.806"
    assert judge("R²", ".80", 0.806, unit="cell")["verdict"] == "differs"  # 0.806 rounds to .81
    row = judge("p, RewardBench rank", "< .0001", 3.6e-20, unit="cell")
    assert row["verdict"] == "reproduces" and row["recomputed"] == "3.6 × 10⁻²⁰"
    assert judge("p, developer", "< .001", 0.5912, unit="pair")["recomputed"] == "0.59"


def test_judge_with_the_chapters_own_verdict_and_missing_values():
    row = judge("steeper positive slope", "t(9) = 2.6, 8 of 10 RMs", "t(9) = 7.85, 10 of 10 RMs", unit="RM",
                verdict="consistent", why="other items: 318 AFINN words")
    assert row["verdict"] == "consistent" and row["recomputed"] == "t(9) = 7.85, 10 of 10 RMs"
    row = judge("t", "2.6", None, unit="RM", why="needs the per-token files")
    assert row["verdict"] == "not testable here" and row["recomputed"] is None
    assert judge("t", "2.6", float("nan"), unit="RM", why="x")["verdict"] == "not testable here"
    row = judge("count", "8", 8, unit="RM", correction="Bonferroni over 10 RMs", live=2.5)
    assert row["correction"] == "Bonferroni over 10 RMs" and row["live"] == "2.5"


def test_judge_stricter_says_not_robust_only_where_the_paper_way_alone_holds():
    kw = {"unit": "cell (n = 100)", "stricter_unit": "pair (n = 45)", "not_robust_why": "needs the diagonal"}
    paper_way, strict = verdicts.judge_stricter("R²", ".80", 0.804, 0.62, **kw)
    assert paper_way == judge("R²", ".80", 0.804, unit="cell (n = 100)")
    assert (paper_way["verdict"], strict["verdict"], strict["why"]) == ("reproduces", "not robust",
                                                                       "needs the diagonal")
    assert strict["unit"] == "pair (n = 45)" and strict["recomputed"] == "0.62"
    # both ways hold, or neither: the plain comparison, the reason judge() writes
    assert [r["verdict"] for r in verdicts.judge_stricter("R²", ".80", 0.804, 0.799, **kw)] == [
        "reproduces", "reproduces"]
    rows = verdicts.judge_stricter("R²", ".80", 0.9, 0.62, **kw)
    assert [r["verdict"] for r in rows] == ["differs", "differs"] and rows[1]["why"] == "0.62 here, .80 printed"
    # a tolerance and the paper-way reason reach the first row; the stricter row gets its own
    rows = verdicts.judge_stricter("R²", ".80", 0.806, 0.7, tolerance=0.01, why="cut, not rounded", **kw)
    assert [(r["verdict"], r["why"]) for r in rows] == [("reproduces", "cut, not rounded"),
                                                        ("not robust", "needs the diagonal")]
    with pytest.raises(InputError, match="not_robust_why"):
        verdicts.judge_stricter("R²", ".80", 0.8, 0.7, unit="cell", stricter_unit="pair", not_robust_why=" ")


@pytest.mark.parametrize("kwargs, message", [
    ({"unit": ""}, "unit"),
    ({"unit": "RM", "correction": ""}, "correction"),
    ({"unit": "RM", "verdict": "holds"}, "not one of"),
    ({"unit": "RM", "verdict": "consistent"}, "why"),
])
def test_judge_refuses_bad_input(kwargs, message):
    with pytest.raises(InputError, match=message):
        judge("a claim", "0.29", 0.3, **kwargs)
    with pytest.raises(InputError, match="why"):
        judge("a claim", "0.29", None, unit="RM")
    with pytest.raises(InputError, match="claim"):
        judge("", "0.29", 0.3, unit="RM")
    with pytest.raises(InputError, match="text"):
        judge("a claim", "0.29", "0.3", unit="RM")


def test_verdict_table_and_render():
    rows = [judge(f"claim {i}", "0.29", 0.29 + i / 1000, unit="RM") for i in range(20)]
    t = verdict_table(rows)
    assert list(t.columns) == list(verdicts.COLUMNS) and len(t) == 20
    # 0.29 + 0.005 = 0.295 rounds to 0.30: rows 5 to 19 differ
    assert t["verdict"].tolist() == ["reproduces"] * 5 + ["differs"] * 15
    with pytest.raises(InputError, match="judge"):
        verdict_table([{**rows[0], "verdict": "reproduces if truncated"}])
    html = verdicts.render(t, caption="Twenty claims").data
    shown, _, hidden = html.partition("<details")
    assert shown.count("<tr>") == 1 + verdicts.SHOWN_ROWS and "show all 20 rows" in hidden
    # one unit and one correction on every row: named once in the caption, not on every row
    assert "(unit of analysis: RM; correction: none)" in shown and "<th>unit</th>" not in shown
    same_why = verdict_table([judge(f"c{i}", "1", None, unit="RM", why="needs the per-token files") for i in range(3)])
    head = verdicts.render(same_why, caption="x").data
    assert "why: needs the per-token files" in head and head.count("needs the per-token files") == 1
    one = verdicts.render(verdict_table(rows[:1]), caption="x").data  # a single row keeps its columns
    assert "<th>unit</th>" in one.replace("<wbr>", "") or "unit" in one.split("<tbody>")[0]
    mixed = verdict_table(rows[:2] + [judge("c", "0.29", 0.29, unit="prompt")])
    assert "unit" in verdicts.render(mixed, caption="x").data.split("<tbody>")[0]
    with pytest.raises(InputError, match="at most"):
        verdicts.render(t, caption="x", short=t)
    # the verdict sits beside its claim, in the shown rows and in the whole table, short's order aside
    both = verdicts.render(mixed, caption="x", short=mixed[["why", "verdict", "claim"]].head(2)).data
    heads = [re.findall(r"<th[^>]*>([^<]*)</th>", part.split("<tbody>")[0].replace("<wbr>", ""))
             for part in both.split("<table")[1:]]
    assert heads[0] == ["claim", "verdict"]  # short gave why, verdict, claim; why is one value: caption
    assert heads[1][:3] == ["claim", "verdict", "published"] and heads[1][-1] == "unit"


def test_table_problems_finds_other_words_in_verdict_cells():
    good = verdicts.render(verdict_table([judge("a", "0.29", 0.29, unit="RM"),
                                          judge("b", "1", None, unit="RM", why="w")]), caption="c").data
    assert verdicts.table_problems(good) == []
    bad = good.replace(">not testable here<", ">not recomputed here: no<")
    assert verdicts.table_problems(bad) == ["table 1, row 2: 'not recomputed here: no'"]
    other = "<table><tr><th>x</th><th>Verdict</th></tr><tr><td>1</td><td>holds</td></tr></table>"
    assert verdicts.table_problems(other) == ["table 1, row 1: 'holds'"]
    assert verdicts.table_problems("<table><tr><th>x</th></tr><tr><td>holds</td></tr></table>") == []


def test_the_book_check_reads_an_executed_notebook_and_a_built_page(tmp_path):
    bad = "<table><tr><th>verdict</th></tr><tr><td>reproduces</td></tr><tr><td>mostly</td></tr></table>"
    nb = {"cells": [{"cell_type": "code", "source": "", "outputs": [
        {"output_type": "display_data", "data": {"text/html": [bad[:30], bad[30:]]}}]},
        {"cell_type": "markdown", "source": "| verdict |\n|---|\n| mostly |"}], "metadata": {}}
    (tmp_path / "ch.ipynb").write_text(json.dumps(nb))
    assert pages.verdict_problems(tmp_path / "ch.ipynb") == ["table 1, row 2: 'mostly'"]
    (tmp_path / "ch.html").write_text(f"<html><body>{bad}</body></html>")
    assert pages.verdict_problems(tmp_path / "ch.html") == ["table 1, row 2: 'mostly'"]
    with pytest.raises(InputError, match="does not exist"):
        pages.verdict_problems(tmp_path / "none.ipynb")
    (tmp_path / "x.txt").write_text("x")
    with pytest.raises(InputError, match="expected"):
        pages.verdict_problems(tmp_path / "x.txt")


# --------------------------------------------------------------------------- the book page
def test_the_book_page_defines_exactly_the_vocabulary():
    text = (ROOT / "book" / "verdicts.md").read_text(encoding="utf-8")
    defined = re.findall(r"^- \*\*(.+?)\*\*: (.+)\.$", text, re.M)
    assert defined == list(VERDICTS.items())
    toc = (ROOT / "_toc.yml").read_text(encoding="utf-8")
    assert re.search(r"^\s*- file: verdicts\s*$", toc, re.M)


# --------------------------------------------------------------------------- claims reader
def test_printed_values_come_from_the_claims_file(tmp_path):
    assert verdicts.printed("facct2025", "elo_human_model", "mean") == "0.29"
    c = verdicts.claim("facct2025", "sentiment_asymmetry")
    assert c["values"]["t"] == "2.6" and "t(9) = 2.6" in c["claim"]
    with pytest.raises(InputError, match="no value 'median'"):
        verdicts.printed("facct2025", "elo_human_model", "median")
    with pytest.raises(InputError, match="ids"):
        verdicts.claim("facct2025", "nope")
    with pytest.raises(InputError, match="papers"):
        verdicts.claim("neurips", "x")
    (tmp_path / "facct2025.yaml").write_text("- id: a\n  claim: b\n  values: {x: 0.3}\n")
    with pytest.raises(InputError, match="quoted"):
        findings.claim("facct2025", "a", path=tmp_path)
    (tmp_path / "facct2025.yaml").write_text("- id: a\n  claim: b\n  values: {x: '0.30'}\n")
    assert findings.printed("facct2025", "a", "x", path=tmp_path) == "0.30"


def test_every_printed_value_is_in_its_claim_sentence():
    """The values are the sentence's numbers, quoted: each appears in the claim as printed."""
    for cid in findings.load_findings().index:
        c = findings.claim("facct2025", cid)
        for name, value in c["values"].items():
            core = value.lstrip("<>= ").lstrip("0") if value[:1] in "<>" else value
            assert core.replace("-", " to ").split(" to ")[0] in c["claim"] or value in c["claim"], (cid, name)


# --------------------------------------------------------------------------- sentences
@pytest.mark.parametrize("x, text", [(2620.0, "2,620"), (2620, "2,620"), (45.0, "45"), (0.41234, "0.412"),
                                     (-12.345, "-12.3"), (1234.5, "1,234"), (2.6, "2.6"), (0.0, "0"),
                                     (3.2e-8, "3.2 × 10⁻⁸"), (1805124, "1,805,124")])
def test_numbers_for_people(x, text):
    assert sentences.number(x) == text


def test_p_values_and_templates():
    assert sentences.p_value(0.0) == "p < 0.001" and sentences.p_value(0.0291) == "p = 0.029"
    assert sentences.p_value(0.41) == "p = 0.41"
    with pytest.raises(InputError, match="probability"):
        sentences.p_value(1.5)
    assert sentences.count(6, 10, "have a positive slope", correction="Bonferroni over 10 RMs") == (
        "6 of 10 RMs have a positive slope (Bonferroni over 10 RMs)")
    assert sentences.count(3, 27, "score higher", of="prompts") == "3 of 27 prompts score higher"
    with pytest.raises(InputError, match="0 <= k <= n"):
        sentences.count(11, 10, "x")
    assert sentences.result("t", 2.6, df=9, p=0.029, unit="RM", n=10) == (
        "t(9) = 2.6, p = 0.029 (unit: RM, n = 10; correction: none)")
    assert sentences.result("g", -0.243, ci=(-0.47, -0.016), p=0.036, unit="word",
                            correction="Holm over 3 prompts") == (
        "g = -0.243, 95% CI -0.47 to -0.016, p = 0.036 (unit: word; correction: Holm over 3 prompts)")
    with pytest.raises(InputError, match="unit"):
        sentences.result("t", 1.0, unit="")
    with pytest.raises(InputError, match="NaN"):
        sentences.number(float("nan"))
    assert sentences.interval(12.44, 3, 20.5, p=0.0123) == "12.4 (95% CI 3 to 20.5, p = 0.012)"
    assert sentences.comparison("agency", 112, "communion", 144, "median rank") == (
        "median rank: agency 112 vs communion 144")


def test_counted_lists_counts_as_a_reader_writes_them():
    from rmlib.tables import followup

    names = followup.CORPUS_NAMES
    assert set(names) == set(followup.CORPORA)
    assert sentences.counted({"big2": 263}, names) == "263 Big Two nouns"
    assert sentences.counted(pd.Series({"big2": 263, "mfd": 2040}), names) == (
        "263 Big Two nouns and 2,040 Moral Foundations Dictionary 2.0 terms")
    assert sentences.counted({"a": 1, "b": 0, "c": 3, "d": 12}) == "1 a, 3 c and 12 d"  # zero left out
    assert sentences.counted({}) == "none" and sentences.counted({"big2": 0}, empty="no words") == "no words"
    # a groupby's counts read as they come (the order the table gives), numpy integers included
    words = pd.DataFrame({"corpus": ["mfd", "mfd", "big2"], "word": ["x", "y", "x"]})
    assert sentences.counted(words.groupby("corpus")["word"].nunique(), names) == (
        "1 Big Two nouns and 2 Moral Foundations Dictionary 2.0 terms")
    with pytest.raises(InputError, match="whole counts"):
        sentences.counted({"big2": 2.5})
    with pytest.raises(InputError, match="NaN"):
        sentences.counted({"big2": float("nan")})


def test_p_cells_never_read_zero_or_exponent_notation():
    assert sentences.p_cell(5e-15) == "5 × 10⁻¹⁵" and sentences.p_cell(0.0291) == "0.029"
    assert sentences.p_cell(1.0) == "1"
    assert sentences.p_cell(0.0) == "< 2.2 × 10⁻³⁰⁸"  # underflow: below the smallest normal float
    assert float(sentences.p_cell(0.0).split("×")[0].strip("< ")) * 1e-308 == pytest.approx(
        sys.float_info.min, rel=0.01)
    with pytest.raises(InputError, match="probability"):
        sentences.p_cell(-0.1)


def test_tables_can_format_numbers_for_people():
    from rmlib.viz import html as rhtml

    t = pd.DataFrame({"diff": [2620.3, 0.41234], "p": [0.0001, 45.0]})
    cells = re.findall(r"<td[^>]*>(.*?)</td>", rhtml.escape_table(t, float_format=sentences.number))
    assert cells == ["2,620", "0.0001", "0.412", "45"]
