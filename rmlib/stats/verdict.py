"""The paper beside what is computed here: one row, one verdict.

:func:`verdict` compares a value the paper printed with the value
recomputed from its released data (and, optionally, shows a live or
trained-model analogue beside them), at the paper's own precision:

* ``published`` as the paper printed it, best as a string: ``"0.29"`` (two
  decimals are inferred), ``"1,805,124"`` (an integer, commas allowed),
  ``"< .001"`` / ``"> .10"`` (a bound: the recomputed value must satisfy
  it), or a range ``"0.22-0.39"`` / a tuple ``(0.22, 0.39)`` (compare
  ``recomputed`` given as a pair). A number is accepted with ``decimals``.
* the recomputed value is rounded half away from zero to that precision
  and compared with the published one; equal -> ``"reproduces"``, else
  ``"differs: here X, paper Y"`` and ``, because ...`` when a reason is
  given.

:func:`holds` is the row for a claim that is a direction or a pattern,
:func:`unreported` for a number the paper's text gives but that could not
be read here. :func:`verdict_table` stacks rows into a DataFrame for a chapter.

The precision rules themselves are :func:`compare_printed` (and
:func:`within_tolerance`), the numeric method that
:func:`rmlib.viz.verdicts.judge` (the book's verdict rows, in the book's
vocabulary) builds on. :func:`verdict`, :func:`holds`, :func:`unreported` and
:func:`verdict_table` are the older rows whose verdict is free text; only the
follow-up study's claims module still uses them, and they go with it.
"""

from __future__ import annotations

import decimal
import math
import re
from collections.abc import Iterable

import pandas as pd
from ..errors import InputError

COLUMNS = ("claim", "what", "published", "recomputed", "live", "verdict")

_NUM = r"[-+−]?(?:\d[\d,]*)?(?:\.\d+)?"


def _parse_number(text: str) -> tuple[float, int]:
    """'0.29' -> (0.29, 2); '1,805,124' -> (1805124.0, 0); '.59' -> (0.59, 2)."""
    t = text.strip().replace("−", "-").replace(",", "")
    if not re.fullmatch(r"[-+]?(\d+)?(\.\d+)?", t) or t in ("", "+", "-", "."):
        raise InputError(f"cannot read a number from {text!r}; give the value as printed, e.g. '0.29' or '1,805,124'")
    decimals = len(t.split(".", 1)[1]) if "." in t else 0
    return float(t), decimals


def _round(x: float, decimals: int) -> decimal.Decimal:
    """Round half away from zero (as a reader rounds), not to even."""
    q = decimal.Decimal(1).scaleb(-decimals)
    return decimal.Decimal(repr(float(x))).quantize(q, rounding=decimal.ROUND_HALF_UP)


def _fmt(x: float, decimals: int) -> str:
    d = _round(x, decimals)
    return f"{d:,}" if decimals == 0 and abs(d) >= 10000 else str(d)


def verdict(published, recomputed, *, decimals: int | None = None, live=None, claim: str = "",
            what: str = "", because: str | None = None, truncation: bool = False) -> dict:
    """One "paper / here" row: ``claim, what, published, recomputed, live, verdict``.

    ``published``: the printed value (see the module docstring for the
    forms). ``recomputed``: the value from released data (a number; a pair
    for a range; None when it cannot be recomputed here). ``decimals``:
    the paper's precision, inferred from a string ``published``. ``live``:
    an analogue computed here (a number or short text), shown only.
    ``because``: why it differs, appended to a ``differs`` verdict.
    ``truncation=True``: a value that matches only when cut off rather than
    rounded (R^2 = .806 printed as .80) is reported as ``"reproduces if
    truncated (rounds to X)"`` instead of ``differs``.
    """
    if recomputed is None or (isinstance(recomputed, float) and math.isnan(recomputed)):
        pub = published if isinstance(published, str) else str(published)
        return {"claim": claim, "what": what, "published": pub, "recomputed": None, "live": live,
                "verdict": "not recomputed here" + (f": {because}" if because else "")}
    ok, pub_text, here_text = compare_printed(published, recomputed, decimals)
    if ok:
        v = "reproduces"
    elif truncation and _truncated_matches(published, recomputed, decimals):
        v = f"reproduces if truncated (rounds to {here_text})"
    else:
        v = f"differs: here {here_text}, paper {pub_text}" + (f", because {because}" if because else "")
    return {"claim": claim, "what": what, "published": pub_text, "recomputed": here_text, "live": live,
            "verdict": v}


def compare_printed(published, recomputed, decimals: int | None = None) -> tuple[bool, str, str]:
    """Compare ``recomputed`` with a value the paper printed, at the paper's precision.

    ``published``: ``"0.29"`` (two decimals inferred), ``"1,805,124"``, a bound
    ``"< .001"``, a range ``"0.22-0.39"`` or a pair (then ``recomputed`` is a
    pair), or a number with ``decimals``. The recomputed value is rounded half
    away from zero to that precision. Returns ``(matches, published as text,
    recomputed as text at that precision)``.
    """
    # range: "0.22-0.39" or a tuple
    if isinstance(published, (tuple, list)) or (isinstance(published, str) and re.fullmatch(
            rf"\s*{_NUM}\s*(?:-|–|to)\s*{_NUM}\s*", published) and not published.strip().startswith("-")):
        if isinstance(published, str):
            lo, hi = re.split(r"\s*(?:–|to|(?<=\d)-)\s*", published.strip(), maxsplit=1)
            parts = [lo, hi]
        else:
            parts = list(published)
        if not isinstance(recomputed, (tuple, list)) or len(recomputed) != 2 or len(parts) != 2:
            raise InputError("a range needs a pair of recomputed values (low, high)")
        results = [compare_printed(p, r, decimals) for p, r in zip(parts, recomputed)]
        return (all(r[0] for r in results), "–".join(r[1] for r in results), "–".join(r[2] for r in results))
    if isinstance(published, str) and published.strip()[:1] in "<>≤≥":
        op = published.strip()[0]
        value, dec = _parse_number(published.strip()[1:])
        d = dec if decimals is None else decimals
        x = float(recomputed)
        ok = {"<": x < value, ">": x > value, "≤": x <= value, "≥": x >= value}[op]
        shown = f"{x:.2g}" if abs(x) < 10 ** -max(d, 1) else _fmt(x, max(d, 3 if abs(x) < 1 else d))
        return ok, f"{op} {published.strip()[1:].strip()}", shown
    if isinstance(published, str):
        value, dec = _parse_number(published)
        d = dec if decimals is None else decimals
        pub_text = published.strip()
    else:
        if decimals is None:
            raise InputError(f"published={published!r} is a number: give decimals= (the paper's precision) "
                             "or pass the value as printed, e.g. '0.29'")
        value, d = float(published), decimals
        pub_text = _fmt(value, d)
    here = _round(float(recomputed), d)
    return here == _round(value, d), pub_text, _fmt(float(recomputed), d)


def within_tolerance(published, recomputed, tolerance: float) -> tuple[bool, str, str]:
    """``|recomputed - published| <= tolerance`` for a printed number (or a range / pair, element by
    element, with a pair ``recomputed``). Returns ``(matches, published as text, recomputed as text)``,
    the recomputed value shown at one decimal more than the tolerance needs."""
    if not isinstance(tolerance, (int, float)) or isinstance(tolerance, bool) or not tolerance >= 0:
        raise InputError(f"tolerance={tolerance!r}: give a non-negative number (the largest difference "
                         "that still counts as the same value)")
    if isinstance(published, (tuple, list)) or (isinstance(published, str) and re.fullmatch(
            rf"\s*{_NUM}\s*(?:-|–|to)\s*{_NUM}\s*", published) and not published.strip().startswith("-")):
        parts = (re.split(r"\s*(?:–|to|(?<=\d)-)\s*", published.strip(), maxsplit=1)
                 if isinstance(published, str) else list(published))
        if not isinstance(recomputed, (tuple, list)) or len(recomputed) != 2 or len(parts) != 2:
            raise InputError("a range needs a pair of recomputed values (low, high)")
        results = [within_tolerance(p, r, tolerance) for p, r in zip(parts, recomputed)]
        return (all(r[0] for r in results), "–".join(r[1] for r in results), "–".join(r[2] for r in results))
    if isinstance(published, str):
        if published.strip()[:1] in "<>≤≥":
            raise InputError(f"published={published!r} is a bound: compare it without a tolerance")
        value, _ = _parse_number(published)
        pub_text = published.strip()
    else:
        value, pub_text = float(published), f"{float(published):g}"
    d = max(0, -math.floor(math.log10(tolerance))) + 1 if tolerance > 0 else 3
    x = float(recomputed)
    return abs(x - value) <= tolerance + 1e-12, pub_text, _fmt(x, d)


def _truncated_matches(published, recomputed, decimals) -> bool:
    if not isinstance(published, (str, int, float)) or isinstance(recomputed, (tuple, list)):
        return False
    if isinstance(published, str):
        if published.strip()[:1] in "<>≤≥":
            return False
        try:
            value, d = _parse_number(published)
        except ValueError:
            return False
        d = d if decimals is None else decimals
    else:
        if decimals is None:
            return False
        value, d = float(published), decimals
    q = decimal.Decimal(1).scaleb(-d)
    cut = decimal.Decimal(repr(float(recomputed))).quantize(q, rounding=decimal.ROUND_DOWN)
    return cut == _round(value, d)


def holds(published: str, recomputed: str, ok: bool, *, claim: str = "", what: str = "", live=None,
          because: str | None = None) -> dict:
    """A row for a claim that is a direction or a pattern, not a printed number.

    ``published``: what the paper says, briefly; ``recomputed``: what the
    data show here, as text; ``ok``: whether that is what the paper says.
    Verdict ``"reproduces"`` or ``"differs"`` (``, because ...`` with ``because``).
    """
    v = "reproduces" if ok else "differs" + (f", because {because}" if because else "")
    return {"claim": claim, "what": what, "published": published, "recomputed": recomputed, "live": live,
            "verdict": v}


def unreported(recomputed: str, *, claim: str = "", what: str = "", live=None) -> dict:
    """A row for a number the paper reports but that could not be read here: the value computed here,
    verdict ``"computed here; the paper's value was not retrieved"``."""
    return {"claim": claim, "what": what, "published": "not retrieved", "recomputed": recomputed, "live": live,
            "verdict": "computed here; the paper's value was not retrieved"}


def verdict_table(rows: Iterable[dict]) -> pd.DataFrame:
    """Rows of :func:`verdict` -> a DataFrame with columns :data:`COLUMNS`."""
    return pd.DataFrame(list(rows), columns=list(COLUMNS))


__all__ = ["COLUMNS", "compare_printed", "holds", "unreported", "verdict", "verdict_table", "within_tolerance"]
