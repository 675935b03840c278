"""The paper's printed value beside a recomputed one: the precision rules.

:func:`compare_printed` compares a value the paper printed with the value
recomputed from its released data, at the paper's own precision:

* ``published`` as the paper printed it, best as a string: ``"0.29"`` (two
  decimals are inferred), ``"1,805,124"`` (an integer, commas allowed),
  ``"< .001"`` / ``"> .10"`` (a bound: the recomputed value must satisfy
  it), or a range ``"0.22-0.39"`` / a tuple ``(0.22, 0.39)`` (compare
  ``recomputed`` given as a pair). A number is accepted with ``decimals``.
* the recomputed value is rounded half away from zero to that precision
  and compared with the published one.

:func:`within_tolerance` compares within a stated tolerance instead. Both
return ``(equal, printed text, recomputed text)``: numbers, no words; the
book's verdict rows are :func:`rmlib.viz.verdicts.judge`.
"""

from __future__ import annotations

import decimal
import math
import re

from ..errors import InputError

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


__all__ = ["compare_printed", "within_tolerance"]
