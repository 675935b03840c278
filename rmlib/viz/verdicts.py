"""The book's verdicts: one vocabulary, one function that turns a comparison into a row.

A chapter puts a claim of the paper beside what it computes with :func:`judge`,
on the page, in plain sight::

    judge("human-RM tau, mean over the ten RMs", printed("facct2025", "elo_human_model", "mean"),
          tau.mean(), unit="RM", correction="none")

* :data:`VERDICTS`: the only words a verdict cell may hold, each with its
  definition (the book's page ``verdicts`` prints them).
* :func:`judge`: one row (:data:`COLUMNS`). Without ``verdict=`` it compares
  the printed value with the recomputed one at the paper's printed precision
  (:func:`rmlib.stats.verdict.compare_printed`: the value rounded half away
  from zero to the printed decimals; bounds such as ``"< .001"``; ranges) or
  within ``tolerance`` (:func:`rmlib.stats.verdict.within_tolerance`), and says
  ``reproduces`` or ``differs``; ``recomputed=None`` says
  ``not testable here``. With ``verdict=`` the chapter's own judgement
  (``consistent``, ``not robust``, ...), with its reason in ``why``.
* :func:`judge_stricter`: the two rows of one printed value recomputed with the
  paper's unit of analysis and with a stricter one (``not robust`` where only
  the paper's way holds).
* :func:`verdict_table` stacks rows; :func:`render` shows them (at most
  :data:`SHOWN_ROWS` rows, the rest collapsed; a column with one value on every
  row goes into the caption).
* :func:`claim` and :func:`printed` (from :mod:`rmlib.tables.findings`): the
  papers' numbers, only from the claims files.
* :func:`table_problems`: the verdict cells of HTML tables that use another word.
"""

from __future__ import annotations

import html as _html
import math
import numbers
import re
from collections.abc import Iterable

import pandas as pd

from ..errors import InputError
from ..stats.verdict import compare_printed, within_tolerance
from ..tables.findings import claim, printed
from . import html as rhtml
from .sentences import number

#: The verdict vocabulary, in order: word -> what it means. Every verdict cell uses one of these words.
VERDICTS: dict[str, str] = {
    "reproduces": "the paper's number, recomputed from the same data by the same method, "
                  "within the paper's printed precision or a stated tolerance; for a claim stated "
                  "in words, the same released data, read as the claim describes, show what it "
                  "says by a rule the row states",
    "consistent": "the same direction as the paper, but on other items, with another statistic, "
                  "another unit of analysis or a live model: a replication, not a recomputation",
    "not robust": "holds with the paper's unit of analysis, but not with a stricter one "
                  "or not after correcting for multiple comparisons",
    "differs": "recomputed or replicated, and the number or the direction is not the paper's",
    "not testable here": "the data, model or code the claim needs is not here, "
                         "or the paper states nothing that can be tested",
}

#: A verdict row's columns.
COLUMNS = ("claim", "unit", "correction", "published", "recomputed", "live", "verdict", "why")

#: The order :func:`render` shows the columns in: the verdict right after its claim, so that a wide
#: table shows it without scrolling sideways; the unit and the correction last.
SHOWN_ORDER = ("claim", "verdict", "published", "recomputed", "live", "why", "unit", "correction")

#: The most rows :func:`render` shows before the rest is collapsed.
SHOWN_ROWS = 15


def _missing(x) -> bool:
    return x is None or (isinstance(x, float) and math.isnan(x))


def _text(x, decimals: int | None = None) -> str | None:
    """A cell value as a reader reads it (numbers via :func:`rmlib.viz.sentences.number`)."""
    if _missing(x):
        return None
    if isinstance(x, (tuple, list)):
        return "–".join(_text(v, decimals) or "" for v in x)
    if isinstance(x, numbers.Real) and not isinstance(x, bool):
        if decimals is not None and float(x) != int(float(x)):
            return f"{float(x):,.{decimals}f}"
        return number(x)
    return str(x)


def _need(name: str, value) -> str:
    if not isinstance(value, str) or not value.strip():
        raise InputError(f"judge() needs {name}: a non-empty text (got {value!r})")
    return value.strip()


def judge(claim: str, published, recomputed, *, unit: str, correction: str = "none",
          decimals: int | None = None, tolerance: float | None = None, live=None,
          verdict: str | None = None, why: str = "") -> dict:
    """One verdict row: ``claim, unit, correction, published, recomputed, live, verdict, why``.

    ``claim``: what is compared (a short phrase). ``published``: the paper's
    value as printed (from :func:`printed`: ``"0.29"``, ``"< .001"``,
    ``"0.22-0.39"``; a number needs ``decimals``), or what the paper says in
    words when ``verdict`` is given. ``recomputed``: the value from the
    released data (a pair for a range), or text when ``verdict`` is given;
    None when it cannot be computed here. ``unit``: the unit of analysis
    (RM, prompt, word, item, token, ...). ``correction``: the
    multiple-comparison correction ("none", "Bonferroni over 10 RMs", ...).
    ``live``: an analogue from a model scored here, shown only.

    Without ``verdict``: ``recomputed`` None -> ``not testable here`` (``why``
    required); ``tolerance`` given -> ``reproduces`` when
    ``|recomputed - published| <= tolerance``; else at the printed precision
    (:func:`rmlib.stats.verdict.compare_printed`) -> ``reproduces`` or
    ``differs`` (``why`` defaults to "X here, Y printed").
    With ``verdict``: one of :data:`VERDICTS`, ``why`` required.
    """
    claim, unit, correction = _need("claim", claim), _need("unit (the unit of analysis)", unit), \
        _need("correction ('none' when there is none)", correction)
    why = why.strip() if isinstance(why, str) else why
    if why is not None and not isinstance(why, str):
        raise InputError(f"why must be text, got {why!r}")
    row = {"claim": claim, "unit": unit, "correction": correction, "live": _text(live)}
    if verdict is not None:
        if verdict not in VERDICTS:
            raise InputError(f"verdict={verdict!r} is not one of the book's verdicts {list(VERDICTS)}")
        if not why:
            raise InputError(f"verdict={verdict!r} needs why= (a few words a reader can check)")
        return {**row, "published": _text(published, decimals), "recomputed": _text(recomputed, decimals),
                "verdict": verdict, "why": why}
    if _missing(recomputed):
        if not why:
            raise InputError(f"{claim!r} is not testable here: say why (why=...)")
        return {**row, "published": _text(published, decimals), "recomputed": None,
                "verdict": "not testable here", "why": why}
    if isinstance(recomputed, str):
        raise InputError(f"recomputed={recomputed!r} is text: give the number, or give verdict= and why=")
    if tolerance is not None:
        ok, pub, here = within_tolerance(published, recomputed, tolerance)
        within = f"within {number(tolerance)} of the printed value"
    else:
        ok, pub, here = compare_printed(published, recomputed, decimals)
        if isinstance(published, str) and published.strip()[:1] in "<>≤≥":
            here = number(recomputed, 2)  # a p-value against a bound: 3.6 × 10⁻²⁰, 0.59
        elif re.fullmatch(r"-?\d{4,}", here):
            here = f"{int(here):,}"  # 7,530 as the paper prints it
        within = "at the paper's printed precision"
    if not why:
        why = f"equal {within}" if ok else f"{here} here, {pub} printed"
    return {**row, "published": pub, "recomputed": here, "verdict": "reproduces" if ok else "differs",
            "why": why}


def judge_stricter(claim: str, published, recomputed, stricter, *, unit: str, stricter_unit: str,
                   not_robust_why: str, correction: str = "none", decimals: int | None = None,
                   tolerance: float | None = None, why: str = "") -> list[dict]:
    """Two rows of :func:`judge` for one printed value: recomputed with the paper's unit of
    analysis (``recomputed``, ``unit``, ``why``) and with a stricter one (``stricter``,
    ``stricter_unit``). Where the paper's way reproduces and the stricter way differs, the second
    row says ``not robust`` with ``not_robust_why`` (the book's definition of the word)."""
    if not isinstance(not_robust_why, str) or not not_robust_why.strip():
        raise InputError("judge_stricter() needs not_robust_why: what the claim needs to hold")
    how = {"correction": correction, "decimals": decimals, "tolerance": tolerance}
    paper_way = judge(claim, published, recomputed, unit=unit, why=why, **how)
    strict = judge(claim, published, stricter, unit=stricter_unit, **how)
    if paper_way["verdict"] == "reproduces" and strict["verdict"] == "differs":
        strict = judge(claim, published, stricter, unit=stricter_unit, verdict="not robust",
                       why=not_robust_why, **how)
    return [paper_way, strict]


def verdict_table(rows: Iterable[dict]) -> pd.DataFrame:
    """Rows of :func:`judge` -> a DataFrame with columns :data:`COLUMNS`; a row with another
    verdict word is an InputError."""
    rows = list(rows)
    bad = [r.get("verdict") for r in rows if r.get("verdict") not in VERDICTS]
    if bad:
        raise InputError(f"verdicts {bad} are not among {list(VERDICTS)}: make rows with judge()")
    return pd.DataFrame(rows, columns=list(COLUMNS))


def render(table: pd.DataFrame | Iterable[dict], *, caption: str, short: pd.DataFrame | int | None = None):
    """A verdict table for the page: the columns in :data:`SHOWN_ORDER` (the verdict beside its
    claim), at most :data:`SHOWN_ROWS` rows shown (``short``: the rows that
    carry the point, default the first ones), the whole table collapsed below
    (:func:`rmlib.viz.html.short_table`). Columns with one value on every row of two or more (a
    unit, the correction, the reason) leave the table and are named once in the caption; an empty
    ``live`` column leaves it too. The
    verdict words link to nothing: the chapter links the book's page ``verdicts`` once."""
    full = table if isinstance(table, pd.DataFrame) else verdict_table(table)
    if list(full.columns) != list(COLUMNS):
        raise InputError(f"render() expects a verdict_table (columns {list(COLUMNS)}), got {list(full.columns)}")
    notes = []
    drop = []
    for col in ("unit", "correction", "live", "why"):
        values = full[col].map(lambda v: None if _missing(v) or v == "" else v).unique()
        if len(full) > 1 and len(values) == 1 or col == "live" and len(values) == 1 and values[0] is None:
            drop.append(col)
            if values[0] is not None:
                notes.append(f"{'unit of analysis' if col == 'unit' else col}: {values[0]}")
    caption = caption + (f" ({'; '.join(notes)})" if notes else "")
    full = full[[c for c in SHOWN_ORDER if c not in drop]]
    if short is None:
        short = SHOWN_ROWS
    elif isinstance(short, pd.DataFrame):
        short = short[[c for c in SHOWN_ORDER if c in short.columns and c not in drop]]
    if isinstance(short, int):
        short = full.head(min(short, SHOWN_ROWS))
    if len(short) > SHOWN_ROWS:
        raise InputError(f"short has {len(short)} rows; a page shows at most {SHOWN_ROWS}")
    wrap = [c for c in ("claim", "unit", "correction", "published", "recomputed", "live", "why") if c in full.columns]
    return rhtml.short_table(full, short, caption=caption, show_whitespace=False, wrap=wrap)


_TABLE = re.compile(r"<table\b.*?</table>", re.S | re.I)
_ROW = re.compile(r"<tr\b.*?</tr>", re.S | re.I)
_CELL = re.compile(r"<t([hd])\b[^>]*>(.*?)</t[hd]>", re.S | re.I)
_TAG = re.compile(r"<[^>]+>")


def _cell_text(fragment: str) -> str:
    return " ".join(_html.unescape(_TAG.sub("", fragment)).split())


def table_problems(page_html: str) -> list[str]:
    """Every cell of a column headed ``verdict`` (in any HTML table of ``page_html``) whose text is
    not one of :data:`VERDICTS`, as ``"table N, row M: 'text'"``; an empty list when all are."""
    problems = []
    for t_no, table in enumerate(_TABLE.findall(page_html), 1):
        column = None
        for r_no, row in enumerate(_ROW.findall(table)):
            cells = _CELL.findall(row)
            texts = [_cell_text(c) for _, c in cells]
            if column is None:
                if cells and all(kind.lower() == "h" for kind, _ in cells) and "verdict" in [x.lower() for x in texts]:
                    column = [x.lower() for x in texts].index("verdict")
                continue
            if column < len(texts) and texts[column] not in VERDICTS:
                problems.append(f"table {t_no}, row {r_no}: {texts[column]!r}")
    return problems


__all__ = ["COLUMNS", "SHOWN_ORDER", "SHOWN_ROWS", "VERDICTS", "claim", "judge", "judge_stricter", "printed", "render", "table_problems",
           "verdict_table"]
