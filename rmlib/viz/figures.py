"""Chart recipes the chapters share: points with intervals.

Every recipe takes tidy DataFrames (as the :mod:`rmlib.stats` functions
return them) and returns an Altair chart whose data are embedded inline
(:func:`rmlib.viz.chart_parts.inline_data`, NaN as null) and filtered by dropdowns
(:func:`rmlib.viz.chart_parts.add_dropdowns`). One generic recipe,
:func:`ci_dots`, draws every point-with-interval plot.
"""

from __future__ import annotations

from collections.abc import Sequence

import altair as alt
import pandas as pd

from .chart_parts import add_dropdowns, inline_data
from ..errors import InputError

__all__ = [
    "ci_dots",
]

#: Colours shared by the figures (positive/negative, top/bottom).
POSITIVE_NEGATIVE = (["positive", "negative"], ["#3A6E97", "#B95C5A"])
TOP_BOTTOM = (["top", "bottom"], ["#1b7837", "#762a83"])


def _require(df: pd.DataFrame, columns: Sequence[str], what: str) -> None:
    missing = [c for c in columns if c not in df.columns]
    if missing:
        raise InputError(f"{what}: the table lacks columns {missing}; it has {list(df.columns)}")


def ci_dots(
    data: pd.DataFrame, *, x: str, y: str, low: str, high: str, color: str, title: str, y_title: str,
    tooltip: Sequence, dropdowns: Sequence[str] = (), x_sort=alt.Undefined, x_title=alt.Undefined,
    offset: str | None = None, offset_sort=alt.Undefined, colors: tuple | None = None,
    y_zero: bool = True, connect: bool = False, zero_line: bool = False, size: int = 80,
    width: int = 320, height: int = 260,
) -> alt.LayerChart:
    """Points at ``y`` with a rule from ``low`` to ``high``, per ``x`` (and ``offset``) and ``color``.

    ``colors``: ``(domain, range)`` of the colour scale. ``y_zero=False`` lets
    the y axis leave out 0; ``connect`` joins the points of one colour with a
    faint line; ``zero_line`` draws a dashed rule at y = 0. ``dropdowns``
    name the columns that become dropdown filters.
    """
    _require(data, [x, y, low, high, color] + ([offset] if offset else []), "ci_dots")
    chart_data = alt.Chart(inline_data(data))  # one data object: the dropdowns filter every layer
    enc = {"x": alt.X(f"{x}:N", sort=x_sort, title=x_title),
           "color": alt.Color(f"{color}:N", scale=alt.Scale(domain=colors[0], range=colors[1]))
           if colors else alt.Color(f"{color}:N")}
    if offset:
        enc["xOffset"] = alt.XOffset(f"{offset}:N", sort=offset_sort)
    base = chart_data.encode(**enc)
    scale = alt.Undefined if y_zero else alt.Scale(zero=False)
    layers = []
    if connect:
        layers.append(base.mark_line(opacity=0.5).encode(y=alt.Y(f"{y}:Q", title=y_title), detail=f"{color}:N"))
        rule_y = alt.Y(f"{low}:Q")
    else:
        rule_y = alt.Y(f"{low}:Q", title=y_title, scale=scale)
    layers.append(base.mark_rule(strokeWidth=2).encode(y=rule_y, y2=f"{high}:Q"))
    layers.append(base.mark_point(filled=True, size=size).encode(y=f"{y}:Q", tooltip=list(tooltip)))
    if zero_line:
        layers.append(chart_data.mark_rule(strokeDash=[4, 4], color="black").encode(y=alt.datum(0)))
    chart = alt.layer(*layers).properties(width=width, height=height, title=title)
    return add_dropdowns(chart, data, list(dropdowns))
