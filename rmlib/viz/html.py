"""Safe HTML for strings that come from model vocabularies.

Every vocabulary string is untrusted: a tokenizer may contain ``<script>``,
``"><img src=x onerror=...>``, ``</table>`` or invisible control characters.
This module is the ONE place where such strings become HTML:

- :func:`visible` makes whitespace and control characters visible, so that a
  reader can tell ``" the"`` (``␣the``) from ``"the"`` while ``"common ground"``
  stays as it is (the convention is documented there).
- :func:`escape_table` turns a DataFrame into an HTML ``<table>`` string in which
  every column name, index label and cell is HTML-escaped.
- :func:`table` wraps that string in an ``IPython.display.HTML`` object, for
  notebooks and the book.

A table's **key columns** (what a reader looks for first: a verdict, a score,
the live "here" numbers) carry the class ``rmlib-key`` on their header and
cells, so that a test can check they are visible without scrolling sideways
(``tests/test_browser.py``): columns named like :data:`KEY_COLUMN_RE`, and any
named with ``key=``.

Charts (:mod:`rmlib.viz.charts`) need no HTML escaping because Vega draws text as
text, but they use :func:`visible` for their labels so that the two agree.
"""

from __future__ import annotations

import html as _html
import math
import numbers
import re
import unicodedata
from collections.abc import Sequence

import numpy as np
import pandas as pd

from ..errors import InputError
from .sentences import significant

__all__ = ["visible", "escape", "escape_table", "table", "note", "key_columns", "number_format", "BOOL_WORDS",
           "ITEM_SEPARATOR", "G_SPEC_RE"]

#: What a table shows for a missing value (None), never the word "None".
MISSING_SYMBOL = "\u2013"  # – EN DASH

#: The symbol that stands for a space character in :func:`visible`.
SPACE_SYMBOL = "\u2423"  # ␣ OPEN BOX
#: What :func:`visible` shows for the empty string.
EMPTY_SYMBOL = "\u2205"  # ∅ EMPTY SET

_NAMED_ESCAPES = {"\n": "\\n", "\t": "\\t", "\r": "\\r", "\\": "\\\\"}


def visible(text: object) -> str:
    """Return ``text`` with whitespace and control characters made visible, losslessly.

    The convention, used in every table and chart of the book:

    - a single space (U+0020) with a non-whitespace character on each side stays
      a plain space (``"common ground"`` shows as ``common ground``); every other
      space becomes ``␣``: a leading or trailing one and each space of a run of
      two or more (``" the"`` shows as ``␣the``, ``"a  b"`` as ``a␣␣b``);
    - newline, tab and carriage return become the two characters ``\\n``,
      ``\\t`` and ``\\r``; a literal backslash becomes ``\\\\`` so that the
      escapes stay unambiguous;
    - any other control, format, separator or unassigned character (Unicode
      categories ``Cc``, ``Cf``, ``Cs``, ``Co``, ``Cn``, ``Zl``, ``Zp`` and
      ``Zs`` other than the space), e.g. a no-break or zero-width space or a
      right-to-left override, becomes ``\\xNN``, ``\\uNNNN`` or ``\\UNNNNNNNN``;
    - the empty string becomes ``∅``.

    A plain space in the result therefore always stands for one space between
    two visible characters, which HTML never collapses. Everything else,
    including non-Latin letters and emoji, is kept. The result is plain text:
    it still needs HTML escaping (see :func:`escape`). Non-string values are
    converted with ``str``.
    """
    if not isinstance(text, str):
        text = str(text)
    if text == "":
        return EMPTY_SYMBOL
    out = []
    last = len(text) - 1
    for i, ch in enumerate(text):
        if ch == " ":
            plain = 0 < i < last and not text[i - 1].isspace() and not text[i + 1].isspace()
            out.append(" " if plain else SPACE_SYMBOL)
        elif ch in _NAMED_ESCAPES:
            out.append(_NAMED_ESCAPES[ch])
        elif unicodedata.category(ch) in {"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp", "Zs"}:
            code = ord(ch)
            if code <= 0xFF:
                out.append(f"\\x{code:02x}")
            elif code <= 0xFFFF:
                out.append(f"\\u{code:04x}")
            else:
                out.append(f"\\U{code:08x}")
        else:
            out.append(ch)
    return "".join(out)


def escape(value: object) -> str:
    """HTML-escape ``str(value)`` for use in element content or an attribute.

    Escapes ``& < > " '``; nothing that passes through it can open a tag,
    close an attribute or start an entity.
    """
    return _html.escape(value if isinstance(value, str) else str(value), quote=True)


#: Column names marked as key columns without being named: a verdict, a score, the live or
#: "here" values, as a whole word (case-insensitive, underscores read as spaces: "verdict",
#: "here: SmolLM2", "score_here", "live tau"; not "scores" or "scorer").
KEY_COLUMN_RE = re.compile(r"\b(verdict|score|live|here)\b", re.I)
#: The class of a key column's header and cells.
KEY_CLASS = "rmlib-key"
#: The class of a column whose cells may wrap (``wrap=``).
WRAP_CLASS = "rmlib-wrap"


def key_columns(columns, key: Sequence[str] = ()) -> list:
    """The columns :func:`escape_table` marks as key columns: those named in ``key`` and those
    whose name matches :data:`KEY_COLUMN_RE` (a verdict, a score, the live or "here" values)."""
    named = set(key)
    unknown = named - set(columns)
    if unknown:
        raise InputError(f"key names columns the table does not have: {sorted(map(str, unknown))}; "
                         f"its columns: {list(columns)}")
    return [c for c in columns if c in named or KEY_COLUMN_RE.search(str(c).replace("_", " "))]


#: In a wrapped cell, a line may also break after these (a file path, an id such as
#: ``Care_Virtue:Sanctity_Virtue``, a prompt's spaces shown as ``␣``, a chat template's
#: ``|>`` and shown newline ``\n``), so that a long name does not widen the table, while ordinary
#: words stay whole. The cell is escaped first: ``>`` is ``&gt;`` there.
_BREAK_AFTER = re.compile(r"(&gt;|\\n|[_/:=␣])")


def _header(name: object) -> str:
    """An escaped column name that may break after an underscore (``<wbr>``), so that long
    snake_case names wrap in a narrow column instead of widening the table."""
    return escape(name).replace("_", "_<wbr>")


#: What a table shows for a true and a false value (Python or numpy booleans).
BOOL_WORDS = {True: "yes", False: "no"}
#: What separates the items of a list-valued cell (each item shown on its own, e.g. through
#: :func:`visible`).
ITEM_SEPARATOR = ", "


#: A ``"g"`` format spec that :func:`escape_table` writes by :func:`rmlib.viz.sentences.significant`:
#: an optional sign (``+``, ``-`` or a space), an optional ``,``, a precision, and ``g`` or ``G``.
G_SPEC_RE = re.compile(r"(?P<sign>[+\- ]?),?(?:\.(?P<digits>\d+))?[gG]")


def number_format(float_format):
    """The function of a finite or infinite float that writes a table cell for ``float_format``
    (a ``format`` spec or a function of the number, see :func:`escape_table`).

    A ``"g"`` spec (``".3g"``, ``".4g"``, ``"g"``, ``"+.2g"``) never prints Python's exponent
    notation: its precision counts the significant digits of
    :func:`rmlib.viz.sentences.significant` (``1,110``, ``0.000123``, ``4.98 × 10⁻¹⁵``); an
    infinity still prints ``inf`` or ``-inf``. Any other spec (``".3f"``) goes to ``format`` and a
    function is used as it is. A ``"g"`` spec with a width, fill, ``#`` or ``0`` is refused.
    """
    if callable(float_format):
        return float_format
    if not isinstance(float_format, str):
        raise InputError(f"float_format={float_format!r}: give a format spec such as '.3g' or '.3f', "
                         "or a function of the number")
    if not float_format.endswith(("g", "G")):
        return lambda value: format(value, float_format)
    spec = G_SPEC_RE.fullmatch(float_format)
    if spec is None:
        raise InputError(f"float_format={float_format!r}: a table's 'g' spec takes only a sign, a ',' and a "
                         "precision (e.g. '.3g' or '+.3g'); drop the width, fill, '#' or '0'")
    digits = 6 if spec["digits"] is None else int(spec["digits"])
    sign = spec["sign"] if spec["sign"] in ("+", " ") else ""

    def write(value: float) -> str:
        if math.isinf(value):
            return format(value, float_format)
        text = significant(value, digits)
        return text if text.startswith("-") else sign + text

    return write



def _format_cell(value: object, float_format, show_whitespace: bool, mark_items: bool | None = None) -> str:
    """The text of one cell; ``mark_items``: whether a list-valued cell's strings go through
    :func:`visible` (default: as ``show_whitespace``)."""
    if isinstance(value, str):
        return visible(value) if show_whitespace else value
    if value is None:
        return MISSING_SYMBOL
    if isinstance(value, (bool, np.bool_)):
        return BOOL_WORDS[bool(value)]
    if isinstance(value, (list, tuple)):
        mark = show_whitespace if mark_items is None else mark_items
        return ITEM_SEPARATOR.join(_format_cell(item, float_format, mark) for item in value)
    if isinstance(value, numbers.Integral):
        return str(int(value))
    if isinstance(value, numbers.Real):
        value = float(value)
        if math.isnan(value):
            return ""
        return number_format(float_format)(value)
    return str(value)


def escape_table(
    df: pd.DataFrame,
    *,
    float_format=".4g",
    show_whitespace: bool | list[str] = True,
    index: bool = False,
    max_rows: int | None = 200,
    caption: str | None = None,
    wrap: bool | Sequence[str] = (),
    key: Sequence[str] = (),
) -> str:
    """Render ``df`` as an HTML ``<table>`` string with every text HTML-escaped.

    Parameters
    ----------
    df:
        The table. Column names, index labels and cells may hold any string,
        including hostile vocabulary entries. A list or tuple in a cell (e.g.
        the tokens two lists share) is shown item by item, each formatted as a
        cell of its own, joined by :data:`ITEM_SEPARATOR`; a boolean shows as
        ``yes`` or ``no`` (:data:`BOOL_WORDS`).
    float_format:
        ``format`` spec for real numbers (default ``".4g"``), or a function of
        the number that returns its text (e.g. :func:`rmlib.viz.sentences.number`:
        ``2,620`` rather than ``2.62e+03``); NaN shows empty, None as ``–``. A
        ``"g"`` spec never prints Python's exponent notation: its precision is
        the count of significant digits, written by
        :func:`rmlib.viz.sentences.significant` (``1,110`` rather than
        ``1.11e+03``, ``4.98 × 10⁻¹⁵`` rather than ``4.98e-15``; see
        :func:`number_format`). Integers print in full, as ``str`` writes them.
    show_whitespace:
        Pass string cells through :func:`visible` first (default ``True``), so
        leading, trailing and repeated spaces and control characters can be
        seen; a list of column names: only the cells of those columns (e.g. the
        vocabulary strings, not the prose beside them). Column names and the
        caption are escaped but not transformed.
    index:
        Also render the index as the first column.
    max_rows:
        Render at most this many rows (``None`` for all); a note says how many
        were left out.
    caption:
        Optional caption, escaped.
    wrap:
        Columns whose cells may break across lines at spaces (long text such as
        claims, prompts or sources), so that the table fits the page; ``True``
        for every column. Wrapped cells are prose: their white space is not
        marked by :func:`visible`, unless ``show_whitespace`` lists the column
        (an exact prompt text: marked, and broken after each ``␣``); the items
        of a list-valued cell are marked whenever ``show_whitespace`` covers
        the column (its default ``True`` does), wrapped or not. A wrapped
        line may also break after ``_``, ``/``, ``:``, ``=``, ``>`` and a
        shown ``\n`` (paths, ids, chat templates). Other cells keep their white space as written, on one line (a
        vocabulary string is never broken).
    key:
        Key columns besides those found by name (:func:`key_columns`): their
        header and cells get the class ``rmlib-key``.

    A missing value shows as an empty cell (NaN) or ``–`` (None), never as the
    word "None". Column names may break after an underscore.

    Returns
    -------
    str
        ``<table class="rmlib-table">...</table>``, safe to embed in a page.
    """
    if not isinstance(df, pd.DataFrame):
        raise TypeError(
            f"escape_table expects a pandas DataFrame, got {type(df).__name__}; "
            "wrap a Series with .to_frame()"
        )
    write_number = number_format(float_format)  # a bad spec is refused before any cell is written
    if max_rows is not None and (not isinstance(max_rows, int) or max_rows < 0):
        raise InputError(f"max_rows must be a non-negative int or None, got {max_rows!r}")
    shown = df if max_rows is None else df.iloc[:max_rows]

    listed = isinstance(show_whitespace, (list, tuple, set, pd.Index))
    if listed:
        unknown = [c for c in show_whitespace if c not in df.columns]
        if unknown:
            raise InputError(f"show_whitespace names columns {unknown} that the table does not have")
    wrapped = set(df.columns) if wrap is True else set(wrap or ())
    unknown = wrapped - set(df.columns)
    if unknown:
        raise InputError(f"wrap names columns the table does not have: {sorted(map(str, unknown))}; "
                         f"its columns: {list(df.columns)}")
    # a wrapped column holds prose: its white space stays as written (where the line may break)
    # unless listed; the items of a list-valued cell (vocabulary strings) are marked in every column
    # that show_whitespace covers, wrapped or not
    items_marked = [c in set(show_whitespace) if listed else bool(show_whitespace) for c in df.columns]
    marked = [m and (listed or c not in wrapped) for m, c in zip(items_marked, df.columns)]

    def cell(value: object, mark: bool = True, wrapped: bool = False, mark_items: bool | None = None) -> str:
        text = escape(_format_cell(value, write_number, mark, mark_items))
        return _BREAK_AFTER.sub(r"\1<wbr>", text) if wrapped else text

    keys = set(key_columns(df.columns, key))
    classes = [" ".join(([KEY_CLASS] if c in keys else []) + ([WRAP_CLASS] if c in wrapped else []))
               for c in df.columns]
    attrs = [f' class="{c}"' if c else "" for c in classes]

    parts = ['<table class="rmlib-table">']
    if caption is not None:
        parts.append(f"<caption>{escape(caption)}</caption>")
    header = ([("", _header(df.index.name or ""))] if index else []) + [
        (a, _header(c)) for a, c in zip(attrs, df.columns)]
    parts.append("<thead><tr>" + "".join(f"<th{a}>{h}</th>" for a, h in header) + "</tr></thead>")
    parts.append("<tbody>")
    for label, row in zip(shown.index, shown.itertuples(index=False, name=None)):
        cells = ([f"<th>{cell(label, not listed and bool(show_whitespace))}</th>"] if index else []) + [
            f"<td{a}>{cell(v, m, c in wrapped, i)}</td>"
            for a, v, m, i, c in zip(attrs, row, marked, items_marked, df.columns)
        ]
        parts.append("<tr>" + "".join(cells) + "</tr>")
    parts.append("</tbody>")
    left_out = len(df) - len(shown)
    if left_out:
        parts.append(
            f'<tfoot><tr><td colspan="{len(header)}">… {left_out} more rows not shown</td></tr></tfoot>'
        )
    parts.append("</table>")
    return "".join(parts)


def table(df: pd.DataFrame, **kwargs) -> "IPython.display.HTML":  # noqa: F821
    """Return an ``IPython.display.HTML`` showing ``df`` via :func:`escape_table`.

    Use this (never ``df.to_html()`` or hand-built HTML) for any table that
    holds vocabulary strings. Keyword arguments go to :func:`escape_table`.
    """
    from IPython.display import HTML

    return HTML(escape_table(df, **kwargs))


def note(text: object):
    """A paragraph of generated text for a chapter page, HTML-escaped (it may hold
    model ids, prompts or tokens), as an ``IPython.display.HTML`` object."""
    from IPython.display import HTML

    return HTML(f"<p>{escape(text)}</p>")


#: The class of collapsed parts of a page that the book's search index leaves out
#: (:mod:`rmlib.book.sphinx_ext`): the "show all N rows" of :func:`short_table`.
NOINDEX_CLASS = "rmlib-noindex"


def short_table(full: pd.DataFrame, short: pd.DataFrame | int = 10, *, caption: str | None = None,
                **kwargs) -> "IPython.display.HTML":  # noqa: F821
    """A short table with the whole one in a collapsed ``<details>`` ("show all N rows") below it.

    ``short``: the rows to show (a DataFrame, e.g. the top and bottom five of a
    top/bottom table, possibly with fewer columns, so that it fits the page) or a
    number of leading rows of ``full``. Both tables go through
    :func:`escape_table` with ``kwargs``; the full one is never cut, and the
    summary says when it also has more columns.
    The ``<details>`` has the class :data:`NOINDEX_CLASS`: the book's search
    index leaves it out (it repeats the rows above it, and a list of hundreds of
    item names would make the index heavier than the pages).
    """
    from IPython.display import HTML

    if isinstance(short, int):
        if short < 1:
            raise InputError(f"short={short}: show at least one row (or pass the short table itself)")
        short = full.head(short)
    wrap = kwargs.get("wrap")
    head_kwargs = ({**kwargs, "wrap": [c for c in wrap if c in short.columns]}
                   if isinstance(wrap, (list, tuple)) else kwargs)  # the short table may have fewer columns
    head = escape_table(short, caption=caption, **head_kwargs)
    more_columns = short.shape[1] < full.shape[1]
    if len(short) >= len(full) and not more_columns:
        return HTML(head)
    kwargs["max_rows"] = None
    what = f"all {len(full)} rows" + (f" and {full.shape[1]} columns" if more_columns else "")
    return HTML(f'{head}<details class="{NOINDEX_CLASS}"><summary>show {what}</summary>'
                f"{escape_table(full, caption=caption, **kwargs)}</details>")
__all__ += ["short_table", "NOINDEX_CLASS"]


def bullets(items) -> "IPython.display.HTML":  # noqa: F821
    """Generated sentences as an HTML bullet list, each escaped (findings with a run's numbers)."""
    from IPython.display import HTML

    return HTML("<ul>" + "".join(f"<li>{escape(item)}</li>" for item in items) + "</ul>")


__all__ += ["bullets"]


#: The labelled parts of an *In short* box after its answer, in their order: the keyword of
#: :func:`in_short` and the label a reader sees.
IN_SHORT_PARTS = {"data": "Data and scorer", "paper": "Against the paper", "here": "Models run here"}

#: The most characters an *In short* box's text holds when a chapter runs with its default
#: parameters (``tests/test_browser.py`` measures the built pages): a box a reader takes in at once.
IN_SHORT_MAX_CHARS = 900

#: The Markdown a chapter puts right under its question (MyST): an admonition with the
#: class ``in-short`` whose body is the glued output of :func:`in_short`, computed later in
#: the same notebook (myst-nb reads a notebook's glued outputs before it renders the page).
IN_SHORT_BOX = """:::{{admonition}} In short
:class: in-short

```{{glue}} {key}
```
:::"""


def _in_short_sentences(part: str, value) -> list[str]:
    """One part of an In short box as a list of checked sentences (a string is one)."""
    items = [value] if isinstance(value, str) else list(value) if isinstance(value, Sequence) else [value]
    if not items:
        raise InputError(f"in_short() got no {part}: pass generated text")
    for s in items:
        if not isinstance(s, str) or not s.strip():
            raise InputError(f"in_short() got an empty sentence ({s!r}) for its {part}; pass generated text")
        if re.search(r"\bnan\b|[=:]\s*None\b", s):
            raise InputError(f"in_short() sentence prints a missing value: {s!r}; say what is missing instead")
        if "`" in s:
            raise InputError(f"in_short() sentence has a backtick, which the box shows as it is: {s!r}; "
                             "name the parameter or function in plain words")
    return [s.strip() for s in items]


def in_short(answer, *, data, paper, here=None) -> "IPython.display.HTML":  # noqa: F821
    """A chapter's answer, for its *In short* box (:data:`IN_SHORT_BOX`), as escaped HTML.

    ``answer``: the answer to the chapter's question, first and in bold: a sentence, or
    a list of sentences, one per question, shown as a list. Then the labelled parts of
    :data:`IN_SHORT_PARTS`, each a sentence or a list of them: ``data`` (the data and the
    scorer behind the answer), ``paper`` (the verdict against the paper) and, optionally,
    ``here`` (what the models run on this machine show). Every sentence is generated from
    the run's numbers.

    Refuses what a reader should never meet in the box: a part left empty, an empty
    sentence, one that prints ``nan`` or ``None``, or a backtick (the box is HTML: markup
    would show as it is).
    """
    from IPython.display import HTML

    answers = _in_short_sentences("answer", answer)
    parts = {k: _in_short_sentences(k, v) for k, v in (("data", data), ("paper", paper), ("here", here))
             if k != "here" or v is not None}
    if len(answers) == 1 or isinstance(answer, str):
        head = f'<p class="in-short-answer">{escape(" ".join(answers))}</p>'
    else:
        head = '<ul class="in-short-answer">' + "".join(f"<li>{escape(a)}</li>" for a in answers) + "</ul>"
    body = "".join(f'<p class="in-short-part"><span class="in-short-label">{IN_SHORT_PARTS[k]}:</span> '
                   f'{escape(" ".join(v))}</p>' for k, v in parts.items())
    return HTML(f'<div class="in-short-text">{head}{body}</div>')


__all__ += ["in_short", "IN_SHORT_BOX", "IN_SHORT_MAX_CHARS", "IN_SHORT_PARTS"]

