"""A few general sentence templates for a chapter's generated text, and numbers written for people.

Chapters build their findings and *In short* sentences from the run's numbers
with these (or plain f-strings); there is no template per claim.

* :func:`number` and :func:`p_value`: a number as a reader writes it
  (``2,620``, ``0.412``, ``p < 0.001``), never ``2.62e+03``, ``45.000`` or
  ``p 0``.
* :func:`significant` and :func:`times_ten`: a number with a given count of significant
  digits, as the book's tables print a ``"g"`` format spec (``1,110``, ``0.000123``,
  ``5 × 10⁻¹⁵``); never Python's ``1.11e+03``.
* :func:`p_cell`: a p-value in a table's p column (``5 × 10⁻¹⁵``, ``0.03``; an underflowed
  p of 0 reads ``< 2.2 × 10⁻³⁰⁸``, never ``0``).
* :func:`count`: "6 of 10 RMs score ... (Bonferroni over 10 RMs)".
* :func:`result`: "t(9) = 2.6, p = 0.03 (unit: RM, n = 10; correction: none)".
* :func:`interval`: "12.4 (95% CI 3 to 20.5, p = 0.012)".
* :func:`comparison`: "A ranks *x* 12th, B 140th".
* :func:`counted`: "263 Big Two nouns and 2,040 MFD terms", from counts by key.
"""

from __future__ import annotations

import math
import numbers
import sys

from ..errors import InputError


def _real(x, name: str) -> float:
    if isinstance(x, bool) or not isinstance(x, numbers.Real):
        raise InputError(f"{name}={x!r}: give a number")
    x = float(x)
    if math.isnan(x):
        raise InputError(f"{name} is NaN: say what is missing instead of printing it")
    return x


def number(x, digits: int = 3) -> str:
    """``x`` as a reader writes it: whole numbers with thousands separators (``2,620``), others
    with ``digits`` significant digits but never in exponent notation above 1e-4 and never
    with trailing zeros (``0.412``, ``1.5``, ``-12.3``, ``1,234``); a float that is a whole
    number prints as one (``45``). Tiny values keep an exponent written as ``3.2 × 10⁻⁸``."""
    x = _real(x, "x")
    if math.isinf(x):
        return "∞" if x > 0 else "−∞"
    if x == int(x) and abs(x) < 1e15:
        return f"{int(x):,}"
    if abs(x) >= 10 ** (digits - 1):
        return f"{round(x):,}"
    return significant(x, digits)


#: Below this magnitude (and from :data:`PLAIN_ABOVE` up) :func:`significant` writes a
#: number as ``a × 10ⁿ``; between them, as a plain decimal.
PLAIN_FROM = 1e-4
#: See :data:`PLAIN_FROM`.
PLAIN_ABOVE = 1e15

_SUPERSCRIPT = str.maketrans("-0123456789", "⁻⁰¹²³⁴⁵⁶⁷⁸⁹")


def times_ten(x, digits: int = 3) -> str:
    """``x`` as ``a × 10ⁿ`` with ``digits`` significant digits in ``a``, its trailing zeros
    dropped, and the exponent in superscript digits: ``3.2 × 10⁻⁸``, ``1 × 10²⁰``."""
    x = _real(x, "x")
    if math.isinf(x) or x == 0:
        raise InputError(f"x={x!r} has no power of ten: write it with number()")
    mantissa, exponent = f"{x:.{max(digits - 1, 0)}e}".split("e")
    if "." in mantissa:
        mantissa = mantissa.rstrip("0").rstrip(".")
    return f"{mantissa} × 10{str(int(exponent)).translate(_SUPERSCRIPT)}"


def significant(x, digits: int = 3) -> str:
    """``x`` rounded to ``digits`` significant digits, as the book's tables print a ``"g"``
    format spec, never in Python's exponent notation: from :data:`PLAIN_FROM` up to below
    :data:`PLAIN_ABOVE` a plain decimal with thousands separators and no trailing zeros
    (``1,110`` for 1110.4 with 3 digits, ``123,500,000``, ``0.000123``, ``-0.0021``, ``0.5``),
    smaller or larger as :func:`times_ten` writes it (``4.98 × 10⁻¹⁵``, ``1 × 10²⁰``); zero
    (either sign) is ``0``, infinities ``∞`` and ``−∞``."""
    x = _real(x, "x")
    if isinstance(digits, bool) or not isinstance(digits, numbers.Integral) or digits < 0:
        raise InputError(f"digits={digits!r}: give a whole number of significant digits, e.g. 3")
    digits = max(int(digits), 1)  # as Python's "g": a precision of 0 means 1
    if math.isinf(x):
        return "∞" if x > 0 else "−∞"
    if x == 0:
        return "0"
    scientific = f"{x:.{digits - 1}e}"  # rounded; the rounding may carry into the next power (9.996 -> 1.00e+01)
    rounded, exponent = float(scientific), int(scientific.split("e")[1])
    if not PLAIN_FROM <= abs(rounded) < PLAIN_ABOVE:
        return times_ten(x, digits)
    decimals = max(digits - 1 - exponent, 0)
    text = f"{rounded:,.{decimals}f}"
    return text.rstrip("0").rstrip(".") if "." in text else text


def p_value(p, floor: float = 0.001) -> str:
    """A p-value as a reader writes it: ``p = 0.03``, ``p = 0.41``, ``p < 0.001`` below ``floor``."""
    p = _real(p, "p")
    if not 0 <= p <= 1:
        raise InputError(f"p={p!r} is not a probability")
    if p < floor:
        return f"p < {number(floor)}"
    return f"p = {number(p, 2)}"


def p_cell(p) -> str:
    """A p-value for a table cell under a "p" heading, as :func:`number` writes it with two
    significant digits (``0.03``, ``5 × 10⁻¹⁵``); a p of exactly 0, which only underflow gives,
    reads as below the smallest normal float (``< 2.2 × 10⁻³⁰⁸``), never ``0``."""
    p = _real(p, "p")
    if not 0 <= p <= 1:
        raise InputError(f"p={p!r} is not a probability")
    return f"< {number(sys.float_info.min, 2)}" if p == 0 else number(p, 2)


def _unit_note(unit: str, n, correction: str) -> str:
    if not isinstance(unit, str) or not unit.strip():
        raise InputError("name the unit of analysis (unit='RM', 'prompt', 'word', 'item', ...)")
    if not isinstance(correction, str) or not correction.strip():
        raise InputError("name the multiple-comparison correction (correction='none' when there is none)")
    size = "" if n is None else f", n = {number(n)}"
    return f"(unit: {unit.strip()}{size}; correction: {correction.strip()})"


def count(k, n, what: str, *, of: str = "RMs", correction: str | None = None) -> str:
    """"``k`` of ``n`` ``of`` ``what``", e.g. ``count(6, 10, "have a slope with p < 0.05",
    correction="Bonferroni over 10 RMs")`` -> "6 of 10 RMs have a slope with p < 0.05
    (Bonferroni over 10 RMs)"."""
    k, n = _real(k, "k"), _real(n, "n")
    if k != int(k) or n != int(n) or not 0 <= k <= n:
        raise InputError(f"count needs whole numbers 0 <= k <= n, got k={k}, n={n}")
    if not isinstance(what, str) or not what.strip():
        raise InputError("count needs what the k items do (what=...)")
    tail = f" ({correction.strip()})" if correction and correction.strip() else ""
    return f"{int(k)} of {int(n)} {of} {what.strip()}{tail}".replace("  ", " ")


def result(statistic: str, value, *, p=None, ci=None, df=None, unit: str, n=None,
                correction: str = "none", level: float = 0.95) -> str:
    """One test result with its unit of analysis and correction, e.g.
    ``result("t", 2.6, df=9, p=0.029, unit="RM", n=10)`` ->
    "t(9) = 2.6, p = 0.029 (unit: RM, n = 10; correction: none)";
    ``ci=(lo, hi)`` adds "95% CI lo to hi"."""
    if not isinstance(statistic, str) or not statistic.strip():
        raise InputError("result needs the statistic's name (statistic='t', 'g', 'tau', ...)")
    head = statistic.strip() + (f"({number(df)})" if df is not None else "") + f" = {number(value)}"
    parts = [head]
    if ci is not None:
        lo, hi = ci
        parts.append(f"{number(level * 100)}% CI {number(lo)} to {number(hi)}")
    if p is not None:
        parts.append(p_value(p))
    return ", ".join(parts) + " " + _unit_note(unit, n, correction)


def interval(value, low, high, *, p=None, level: float = 0.95) -> str:
    """An estimate with its interval (and p): ``interval(12.4, 3, 20.5, p=0.012)`` ->
    "12.4 (95% CI 3 to 20.5, p = 0.012)"."""
    tail = f", {p_value(p)}" if p is not None else ""
    return f"{number(value)} ({number(level * 100)}% CI {number(low)} to {number(high)}{tail})"


def comparison(a: str, x, b: str, y, what: str = "") -> str:
    """Two things side by side: ``comparison("agency", 112, "communion", 144, "median rank")``
    -> "median rank: agency 112 vs communion 144"."""
    for name, v in (("a", a), ("b", b)):
        if not isinstance(v, str) or not v.strip():
            raise InputError(f"comparison needs a name for {name}")
    fx = x if isinstance(x, str) else number(x)
    fy = y if isinstance(y, str) else number(y)
    lead = f"{what.strip()}: " if what and what.strip() else ""
    return f"{lead}{a.strip()} {fx} vs {b.strip()} {fy}"


def counted(counts, names=None, *, empty: str = "none") -> str:
    """Counts listed as a reader writes them, in the order given: ``counted({"big2": 263, "mfd": 2040},
    {"big2": "Big Two nouns", "mfd": "MFD terms"})`` -> "263 Big Two nouns and 2,040 MFD terms"
    (three or more: "a, b and c"). ``counts``: a mapping or Series, key -> count; ``names``: key ->
    what is counted (default: the key itself). Zero counts are left out; with none left, ``empty``."""
    items = list(counts.items())
    names = {} if names is None else names
    parts = []
    for key, n in items:
        n = _real(n, f"the count of {key!r}")
        if n != int(n) or n < 0:
            raise InputError(f"counted needs whole counts >= 0, got {n} for {key!r}")
        if n:
            parts.append(f"{number(n)} {names.get(key, key)}")
    if not parts:
        return empty
    return parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]


__all__ = ["comparison", "count", "counted", "interval", "number", "p_cell", "p_value", "result", "significant", "times_ten",
           "PLAIN_FROM", "PLAIN_ABOVE"]
