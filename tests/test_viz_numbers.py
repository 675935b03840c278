"""How numbers look in the book's tables: a "g" format spec never prints Python's exponent notation
(``1.11e+03``, ``4.98e-15``); it writes plain decimals and, for tiny or huge values, ``a × 10ⁿ`` as the
book's sentences do (rmlib.viz.sentences.significant / times_ten, used by rmlib.viz.html)."""

import html
import random
import re

import numpy as np
import pandas as pd
import pytest

from rmlib.errors import InputError
from rmlib.viz import html as rhtml
from rmlib.viz import sentences

#: (value, spec, what a reader must see), written by hand.
CASES = [
    (1110.4, ".3g", "1,110"),
    (2670.0, ".3g", "2,670"),
    (4.98e-15, ".3g", "4.98 × 10⁻¹⁵"),
    (0.000123, ".3g", "0.000123"),
    (0.5, ".3g", "0.5"),
    (123456789.0, ".4g", "123,500,000"),
    (1e20, ".3g", "1 × 10²⁰"),
    (-0.0021, ".2g", "-0.0021"),
    (0.0, ".3g", "0"),
    (-0.0, ".3g", "0"),
    (12345.678, ".4g", "12,350"),
    (9.996, ".3g", "10"),
    (0.1 + 0.2, ".4g", "0.3"),
    (3.14159, "g", "3.14159"),
    (2.0, ".3G", "2"),
    (-7.2e-9, ".2g", "-7.2 × 10⁻⁹"),
    (1e15, ".3g", "1 × 10¹⁵"),
    (999999999999999.9, ".3g", "1 × 10¹⁵"),  # rounds up past the plain range
    (9.99996e-5, ".3g", "0.0001"),  # rounds up into the plain range
    (0.05, "+.2g", "+0.05"),
    (-0.05, "+.2g", "-0.05"),
    (1234.5, ",.4g", "1,234"),
    (float("inf"), ".3g", "inf"),
    (float("-inf"), ".3g", "-inf"),
]


def _cells(fragment: str) -> list[str]:
    return [html.unescape(re.sub(r"<wbr>", "", c)) for c in re.findall(r"<td[^>]*>(.*?)</td>", fragment)]


@pytest.mark.parametrize("value, spec, shown", CASES)
def test_a_g_spec_writes_each_case_as_a_reader_does(value, spec, shown):
    assert rhtml.number_format(spec)(value) == shown
    assert _cells(rhtml.escape_table(pd.DataFrame({"x": [value]}), float_format=spec)) == [shown]


def test_nan_still_shows_as_an_empty_cell_and_none_as_a_dash():
    df = pd.DataFrame({"x": pd.Series([np.nan, None, 1.5], dtype=object)})
    assert _cells(rhtml.escape_table(df, float_format=".3g")) == ["", "\u2013", "1.5"]


def _read_back(text: str) -> float:
    """The number a reader reads in ``text`` (independently of how it was written)."""
    m = re.fullmatch(r"(-?[\d.]+) × 10([⁻⁰¹²³⁴⁵⁶⁷⁸⁹]+)", text)
    if m:
        exponent = int(m[2].translate(str.maketrans("⁻⁰¹²³⁴⁵⁶⁷⁸⁹", "-0123456789")))
        return float(f"{m[1]}e{exponent}")
    assert re.fullmatch(r"-?\d{1,3}(,\d{3})*(\.\d*[1-9])?", text), text
    return float(text.replace(",", ""))


def test_random_values_read_back_as_pythons_own_rounding_and_never_in_e_notation():
    rng = random.Random(7)
    for _ in range(3000):
        digits = rng.randint(1, 6)
        value = rng.choice([-1, 1]) * rng.random() * 10.0 ** rng.randint(-30, 30)
        text = rhtml.number_format(f".{digits}g")(value)
        assert "e" not in text.lower(), (value, digits, text)
        # the same value, to the same significant digits, as Python's own rounding gives it
        assert _read_back(text) == float(format(value, f".{digits}g")), (value, digits, text)
        plain = sentences.PLAIN_FROM <= abs(float(format(value, f".{digits}e"))) < sentences.PLAIN_ABOVE
        assert ("×" not in text) == plain, (value, digits, text)


def test_table_and_short_table_show_no_exponent():
    values = [1110.4, 2670.0, 4.98e-15, 0.000123, 123456789.0, 1e20, -0.0021, 3.0e-7, 45678.9]
    df = pd.DataFrame({"name": [f"row {i}" for i in range(len(values))], "value": values})
    for spec in (".3g", ".4g", ".2g"):
        pages = [(rhtml.table(df, float_format=spec).data, values, spec),
                 (rhtml.short_table(df, 3, float_format=spec).data, values[:3] + values, spec),  # head, then all
                 (rhtml.escape_table(df), values, ".4g")]  # the default spec
        for page, shown, written in pages:
            numbers = _cells(page)[1::2]
            assert len(numbers) == len(shown), page
            assert not re.search(r"\d[eE][+-]?\d", page), page
            for text, value in zip(numbers, shown):
                assert _read_back(text) == float(format(value, written)), (text, value, written)
    full = _cells(rhtml.short_table(df, 3, float_format=".3g").data)
    assert full[:6] == ["row 0", "1,110", "row 1", "2,670", "row 2", "4.98 × 10⁻¹⁵"]
    assert full[6:][1::2] == ["1,110", "2,670", "4.98 × 10⁻¹⁵", "0.000123", "123,000,000", "1 × 10²⁰",
                              "-0.0021", "3 × 10⁻⁷", "45,700"]


def test_other_specs_and_functions_keep_their_behaviour():
    df = pd.DataFrame({"x": [1110.4, 4.98e-15, -0.5]})
    assert _cells(rhtml.escape_table(df, float_format=".3f")) == ["1110.400", "0.000", "-0.500"]
    assert _cells(rhtml.escape_table(df, float_format="+.2f")) == ["+1110.40", "+0.00", "-0.50"]
    assert _cells(rhtml.escape_table(df, float_format=".1e")) == ["1.1e+03", "5.0e-15", "-5.0e-01"]
    assert _cells(rhtml.escape_table(df, float_format=lambda v: f"<{v:.1f}>")) == ["<1110.4>", "<0.0>", "<-0.5>"]
    assert _cells(rhtml.escape_table(df, float_format=sentences.number)) == ["1,110", "4.98 × 10⁻¹⁵", "-0.5"]
    # integers are written in full, as before
    assert _cells(rhtml.escape_table(pd.DataFrame({"n": [1234567]}), float_format=".3g")) == ["1234567"]


@pytest.mark.parametrize("spec", ["10.3g", "<8.3g", "#.3g", "08.3g", "_.3g"])
def test_a_g_spec_it_cannot_honour_is_refused_before_any_cell(spec):
    with pytest.raises(InputError, match="sign"):
        rhtml.escape_table(pd.DataFrame({"x": [1.0]}), float_format=spec)
    with pytest.raises(InputError, match="format spec"):
        rhtml.escape_table(pd.DataFrame({"x": [1.0]}), float_format=3)


def test_sentences_write_tiny_numbers_the_same_way_as_tables():
    for value, digits in [(4.98e-15, 3), (5e-15, 2), (3.2e-8, 2), (-1.234e-12, 4)]:
        assert sentences.number(value, digits) == sentences.times_ten(value, digits)
        assert rhtml.number_format(f".{digits}g")(value) == sentences.times_ten(value, digits)
    assert sentences.times_ten(3.2e-8, 2) == "3.2 × 10⁻⁸" and sentences.p_cell(5e-15) == "5 × 10⁻¹⁵"
    with pytest.raises(InputError, match="number"):
        sentences.times_ten(0.0)
    with pytest.raises(InputError, match="significant digits"):
        sentences.significant(1.0, -1)
