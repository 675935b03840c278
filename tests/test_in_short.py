"""The In short box: the answer's sentences, escaped, at most six, never a missing value."""

import pytest

from rmlib.errors import InputError
from rmlib.viz import html as rhtml


def test_in_short_joins_escaped_sentences():
    out = rhtml.in_short("RMs prefer <script>x</script>.", "  Tau is 0.41.  ").data
    assert out == '<p class="in-short-text">RMs prefer &lt;script&gt;x&lt;/script&gt;. Tau is 0.41.</p>'


@pytest.mark.parametrize("sentences, fragment", [
    ((), "at least one"),
    (tuple(f"S{i}." for i in range(rhtml.IN_SHORT_MAX + 1)), "at most 6"),
    (("ok.", "  "), "empty sentence"),
    (("tau = nan.",), "missing value"),
    (("the best: None.",), "missing value"),
    (("scored where `full_vocab` says.",), "backtick"),
])
def test_in_short_refuses_what_a_reader_should_not_meet(sentences, fragment):
    with pytest.raises(InputError, match=fragment):
        rhtml.in_short(*sentences)


def test_in_short_box_is_a_myst_admonition_pasting_the_key():
    box = rhtml.IN_SHORT_BOX.format(key="ch01_in_short")
    assert box.splitlines()[:2] == [":::{admonition} In short", ":class: in-short"]
    assert "```{glue} ch01_in_short" in box and box.endswith(":::")


def test_in_short_allows_none_as_a_word():
    assert "None of the ten" in rhtml.in_short("None of the ten RMs agrees.").data

