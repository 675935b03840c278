"""Chart recipes the chapters share: points with intervals, and search trajectories.

Every recipe takes tidy DataFrames (as the :mod:`rmlib.stats` functions
return them) and returns an Altair chart whose data are embedded inline
(:func:`rmlib.viz.charts.inline_data`, NaN as null) and filtered by dropdowns
(:func:`rmlib.viz.charts.add_dropdowns`). Strings from vocabularies go
through :func:`rmlib.viz.html.visible` where Vega draws them as text. One
generic recipe, :func:`ci_dots`, draws every point-with-interval plot.
"""

from __future__ import annotations

from collections.abc import Sequence

import altair as alt
import pandas as pd

from .charts import add_dropdowns, inline_data
from .html import visible
from ..errors import InputError

__all__ = [
    "ci_dots", "gcg_trajectories",
]

#: Colours shared by the figures (positive/negative, top/bottom, maximize/minimize).
POSITIVE_NEGATIVE = (["positive", "negative"], ["#3A6E97", "#B95C5A"])
TOP_BOTTOM = (["top", "bottom"], ["#1b7837", "#762a83"])
MAXIMIZE_MINIMIZE = (["maximize", "minimize"], ["#1b7837", "#762a83"])


def _require(df: pd.DataFrame, columns: Sequence[str], what: str) -> None:
    missing = [c for c in columns if c not in df.columns]
    if missing:
        raise InputError(f"{what}: the table lacks columns {missing}; it has {list(df.columns)}")


def _fmt(field: str, fmt: str) -> alt.Tooltip:
    return alt.Tooltip(f"{field}:Q", format=fmt)


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


def gcg_trajectories(results, label=lambda p: p, scorer: str = "") -> alt.LayerChart:
    """Score of each step's best candidate and the best so far, per GCG search.

    ``results``: :class:`rmlib.engine.gcg.GCGResult` objects; ``label`` maps
    a prompt to its name in the dropdown; ``scorer`` names the scorer kind in
    the title (e.g. "language model log-prob, SmolLM2-135M-Instruct"). The two
    series differ by line width *and* dash, and the legend draws them as lines.
    """
    rows = []
    for r in results:
        h = r.history
        rows.append(pd.DataFrame({
            "prompt": label(r.prompt), "length": f"{len(r.best_ids)} tokens",
            "direction": "maximize" if r.maximize else "minimize", "step": h["step"],
            "step best": h["score"], "best so far": h["best_so_far"],
            "text": h["text"].map(visible),  # Vega draws text as text; visible() shows spaces
        }))
    data = pd.concat(rows, ignore_index=True).melt(
        id_vars=["prompt", "length", "direction", "step", "text"], value_vars=["step best", "best so far"],
        var_name="series", value_name="score")
    series = ["step best", "best so far"]
    legend = alt.Legend(symbolType="stroke", symbolStrokeColor="#333", symbolSize=300)  # one legend, lines
    base = alt.Chart(inline_data(data)).encode(
        x=alt.X("step:Q", title="GCG step", axis=alt.Axis(tickMinStep=1)),
        y=alt.Y("score:Q", title="score", scale=alt.Scale(zero=False)),
        color=alt.Color("direction:N", scale=alt.Scale(domain=MAXIMIZE_MINIMIZE[0], range=MAXIMIZE_MINIMIZE[1])),
    )
    lines = base.mark_line().encode(  # points in their own layer: the series legend then draws lines
        strokeWidth=alt.StrokeWidth("series:O", sort=series, scale=alt.Scale(domain=series, range=[1, 3]), legend=legend),
        strokeDash=alt.StrokeDash("series:O", sort=series, scale=alt.Scale(domain=series, range=[[4, 3], [1, 0]]),
                                  legend=legend),
    )
    points = base.mark_point(filled=True, size=30).encode(
        detail="series:N",
        tooltip=["prompt:N", "length:N", "direction:N", "series:N", "step:Q", "text:N", _fmt("score", ".3f")])
    chart = alt.layer(lines, points).properties(
        width=480, height=280, title="GCG score trajectories" + (f" | {scorer}" if scorer else ""))
    return add_dropdowns(chart, data, ["prompt", "length"])

