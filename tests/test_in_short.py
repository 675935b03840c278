"""The In short box: the answer first, then labelled parts, every sentence escaped, never a missing value."""

import html.parser

import pytest

from rmlib.errors import InputError
from rmlib.viz import html as rhtml


class _Parts(html.parser.HTMLParser):
    """(tag, class, text) of each element of the box, in order."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.found, self.open = [], []

    def handle_starttag(self, tag, attrs):
        self.open.append([tag, dict(attrs).get("class", ""), ""])

    def handle_data(self, data):
        if self.open:
            self.open[-1][2] += data

    def handle_endtag(self, tag):
        self.found.append(tuple(self.open.pop()))


def parts(out):
    p = _Parts()
    p.feed(out.data)
    return p.found


def test_in_short_puts_the_answer_first_then_the_labelled_parts_escaped():
    out = rhtml.in_short("RMs prefer <script>x</script>.", data=["Ten RMs' scores.", "  Tau-b.  "],
                         paper="Consistent.")
    got = parts(out)
    assert got[0] == ("p", "in-short-answer", "RMs prefer <script>x</script>.")
    assert "<script>" not in out.data and "&lt;script&gt;" in out.data
    labels = [t for tag, cls, t in got if cls == "in-short-label"]
    assert labels == ["Data and scorer:", "Against the paper:"]
    lines = [t for tag, cls, t in got if cls == "in-short-part"]
    assert lines == [" Ten RMs' scores. Tau-b.", " Consistent."]
    assert got[-1][:2] == ("div", "in-short-text")


def test_in_short_lists_one_answer_per_question_and_shows_the_models_run_here():
    got = parts(rhtml.in_short(["Frequency: yes.", "Identity: no."], data="d.", paper="p.", here="h."))
    assert [t for tag, cls, t in got if tag == "li"] == ["Frequency: yes.", "Identity: no."]
    assert ("ul", "in-short-answer") in [(tag, cls) for tag, cls, _ in got]
    assert [t for _, cls, t in got if cls == "in-short-label"] == [
        f"{rhtml.IN_SHORT_PARTS[k]}:" for k in ("data", "paper", "here")]
    one = parts(rhtml.in_short(["Only one."], data="d.", paper="p."))
    assert one[0] == ("p", "in-short-answer", "Only one.")


@pytest.mark.parametrize("kwargs, fragment", [
    (dict(answer=[], data="d.", paper="p."), "no answer"),
    (dict(answer="a.", data=[], paper="p."), "no data"),
    (dict(answer="a.", data="d.", paper="  "), "empty sentence"),
    (dict(answer="tau = nan.", data="d.", paper="p."), "missing value"),
    (dict(answer="a.", data="the best: None.", paper="p."), "missing value"),
    (dict(answer="a.", data="d.", paper="p.", here="scored where `full_vocab` says."), "backtick"),
])
def test_in_short_refuses_what_a_reader_should_not_meet(kwargs, fragment):
    with pytest.raises(InputError, match=fragment):
        rhtml.in_short(**kwargs)


def test_in_short_needs_the_data_and_the_verdict():
    with pytest.raises(TypeError):
        rhtml.in_short("An answer alone.")  # no data, no verdict


def test_in_short_box_is_a_myst_admonition_pasting_the_key():
    box = rhtml.IN_SHORT_BOX.format(key="ch01_in_short")
    assert box.splitlines()[:2] == [":::{admonition} In short", ":class: in-short"]
    assert "```{glue} ch01_in_short" in box and box.endswith(":::")


def test_in_short_allows_none_as_a_word():
    assert "None of the ten" in rhtml.in_short("None of the ten RMs agrees.", data="d.", paper="p.").data
