"""The book's chart builders, and ``enable()``, which makes rmlib's offline renderer Altair's active one.

Chapters call ``rmlib.viz.charts.enable()`` once near the top: a chart that ends a cell is then drawn
offline (:mod:`rmlib.viz.rendering`: no CDN, the page's vendored Vega bundle), in the static book and in
Jupyter.

The builders take a *long table* (columns ``model, prompt, token_id, token, decoded,
score``) or a matrix / coordinates table, pre-aggregate in pandas so the page
stays small, and add dropdowns (``alt.binding_select``) over ``model`` and
``prompt`` when there is more than one value (:mod:`rmlib.viz.chart_parts`; for a hand-made chart, use
its :func:`~rmlib.viz.chart_parts.inline_data` and :func:`~rmlib.viz.chart_parts.add_dropdowns` to get
the same behaviour). Vocabulary strings are shown through :func:`rmlib.viz.html.visible` (``␣`` for a
leading, trailing or repeated space, ``\\n`` ...); Vega draws them as text, never as HTML, and its
tooltips escape HTML. The vocabulary explorer is :func:`rmlib.viz.explorers.explorer`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import altair as alt
import numpy as np
import pandas as pd

from ..errors import InputError
from ..tables.schema import LONG_COLUMNS
from .chart_parts import VOCAB_COLUMNS, add_dropdowns, check_n, inline_data, require_columns, stack_frames, wrap_title
from .html import visible
from .rendering import spec_to_html

__all__ = [
    "RENDERER_NAME", "enable", "top_bottom_bar", "score_distribution", "heatmap", "scatter", "line_chart",
    "mds_plot", "LONG_COLUMNS", "dot_plot",
]

#: The name rmlib's offline renderer is registered under with Altair.
RENDERER_NAME = "rmlib_offline"
#: Dash patterns of :func:`line_chart`'s ``dash`` values, in order: solid, dashed, dotted, dash-dot.
DASHES = [[1, 0], [6, 3], [2, 2], [6, 2, 2, 2]]


def _renderer(spec: dict, **metadata) -> dict:
    return {"text/html": spec_to_html(spec)}


alt.renderers.register(RENDERER_NAME, _renderer)


def enable() -> None:
    """Make the offline renderer Altair's active renderer."""
    alt.renderers.enable(RENDERER_NAME)


# --------------------------------------------------------------------------- builders
def _extremes_by_group(long_table: pd.DataFrame, n: int) -> pd.DataFrame:
    """Per (model, prompt): the top ``n`` rows, then the bottom ``n`` among the rest (column ``end``),
    ties broken by ``token_id`` then table order: the explorer's selection (:mod:`rmlib.viz.explorers`) for every group
    at once (two sorts of the whole table, not two per group, for tables of hundreds of groups).
    Groups in order of first appearance; categorical columns come back as strings."""
    table = long_table.reset_index(drop=True)
    table = table[table["score"].notna()]
    table = table.assign(_group=table.groupby(["model", "prompt"], sort=False, observed=True).ngroup().to_numpy())
    top = (table.sort_values(["score", "token_id"], ascending=[False, True], kind="stable")
           .groupby("_group", sort=False).head(n))
    rest = table.drop(index=top.index)
    bottom = (rest.sort_values(["score", "token_id"], ascending=[True, True], kind="stable")
              .groupby("_group", sort=False).head(n))
    both = pd.concat([top.assign(end="top", _end=0), bottom.assign(end="bottom", _end=1)])
    both = both.sort_values(["_group", "_end"], kind="stable").drop(columns=["_group", "_end"])
    cats = [c for c in both.columns if isinstance(both[c].dtype, pd.CategoricalDtype)]
    return both.astype({c: str for c in cats}) if cats else both


def top_bottom_bar(long_table: pd.DataFrame, n: int = 10, *, title: str | None = None) -> alt.Chart:
    """Bar chart of the ``n`` highest- and ``n`` lowest-scoring tokens.

    One panel per (model, prompt), chosen with dropdowns. Bars are labelled
    with ``visible(decoded)``; ties are broken by ``token_id``.
    """
    require_columns(long_table, LONG_COLUMNS, "top_bottom_bar")
    n = check_n(n)
    both = _extremes_by_group(long_table, n)
    labels = both["decoded"].map(visible)
    dup = both.assign(label=labels).duplicated(["model", "prompt", "label"], keep=False)
    both["label"] = labels.where(~dup, labels + " #" + both["token_id"].astype(str))
    rows = [both]
    data = pd.concat(rows)[[*LONG_COLUMNS, "end", "label"]]
    data["model"] = data["model"].astype(str)
    data["prompt"] = data["prompt"].astype(str)
    for col in VOCAB_COLUMNS:
        data[col] = data[col].map(visible)
    data["score"] = data["score"].astype(float)
    chart = alt.Chart(inline_data(data)).mark_bar().encode(
        x=alt.X("score:Q", title="score"),
        y=alt.Y("label:N", sort=alt.EncodingSortField("score", order="descending"), title=None),
        color=alt.Color("end:N", scale=alt.Scale(domain=["top", "bottom"], range=["#1b7837", "#762a83"]),
                        title=None),
        tooltip=["model:N", "prompt:N", "token_id:Q", "token:N", "decoded:N", alt.Tooltip("score:Q", format=".4f")],
    ).properties(height=alt.Step(14), title=title or f"Top and bottom {n} tokens")
    return add_dropdowns(chart, data, ["model", "prompt"])


def score_distribution(long_table: pd.DataFrame, bins: int = 40, *, title: str | None = None) -> alt.Chart:
    """Histogram of the scores of one (model, prompt), chosen with dropdowns.

    Binned in pandas (``numpy.histogram`` over each group's own range), so only
    ``bins`` rows per group go into the page, whatever the vocabulary size.
    """
    require_columns(long_table, ("model", "prompt", "score"), "score_distribution")
    bins = check_n(bins, "bins")
    rows = []
    for (model, prompt), group in long_table.groupby(["model", "prompt"], sort=False):
        scores = group["score"].to_numpy(dtype=float)
        scores = scores[np.isfinite(scores)]
        if scores.size == 0:
            raise InputError(f"score_distribution: no finite scores for model {model!r}, prompt {prompt!r}")
        counts, edges = np.histogram(scores, bins=bins)
        rows.append(pd.DataFrame({
            "model": str(model), "prompt": str(prompt),
            "bin_start": edges[:-1], "bin_end": edges[1:], "count": counts.astype(int),
        }))
    data = pd.concat(rows, ignore_index=True)
    chart = alt.Chart(inline_data(data)).mark_bar().encode(
        x=alt.X("bin_start:Q", title="score", scale=alt.Scale(zero=False)),
        x2="bin_end:Q",
        y=alt.Y("count:Q", title="tokens"),
        y2=alt.datum(0),  # bars stand on zero (without y2 Vega draws ticks at each count)
        tooltip=["model:N", "prompt:N", alt.Tooltip("bin_start:Q", format=".3f"),
                 alt.Tooltip("bin_end:Q", format=".3f"), "count:Q"],
    ).properties(width=480, height=240, title=title or "Score distribution")
    return add_dropdowns(chart, data, ["model", "prompt"])


def heatmap(
    matrix: pd.DataFrame | Mapping[str, pd.DataFrame], *, value_name: str = "value",
    dropdown_name: str = "prompt", fmt: str = ".2f", title: str | None = None, cell: int = 36,
    columns: int | None = None, text: bool = True,
) -> alt.LayerChart | alt.FacetChart:
    """Heatmap of a matrix (e.g. model-by-model RBO or correlation), with values written in.

    ``cell``: the width of a cell in pixels (narrower for many columns, so the chart fits the page).

    ``matrix`` is a DataFrame (row labels = index, column labels = columns) or a
    dict ``{name: DataFrame}``, in which case a dropdown named ``dropdown_name``
    picks the matrix; with ``columns`` the matrices are drawn side by side
    instead (small multiples, ``columns`` to a row, each titled by its name,
    one colour scale). ``text=False`` leaves the values out (small cells).
    Row and column order are kept.
    """
    frames, stacked = stack_frames(matrix, dropdown_name, "heatmap")
    if not isinstance(frames, pd.DataFrame) or frames.empty:
        raise InputError("heatmap expects a non-empty DataFrame (or dict of them)")
    value_cols = [c for c in frames.columns if c != dropdown_name] if stacked else list(frames.columns)
    non_numeric = [c for c in value_cols if not pd.api.types.is_numeric_dtype(frames[c])]
    if non_numeric:
        raise InputError(f"heatmap: matrix columns must be numeric, these are not: {non_numeric}")
    id_vars = [dropdown_name] if stacked else []
    # The data field is always "value" (a name like "Cohen's d" would break a Vega field
    # path); value_name is only a title.
    data = (
        frames.rename_axis("row").reset_index()
        .melt(id_vars=["row", *id_vars], value_vars=value_cols, var_name="column", value_name="value")
    )
    row_order = list(dict.fromkeys(str(r) for r in frames.index))
    col_order = [str(c) for c in value_cols]
    data["row"] = data["row"].astype(str)
    data["column"] = data["column"].astype(str)
    base = alt.Chart(inline_data(data)).encode(
        x=alt.X("column:N", sort=col_order, title=None),
        y=alt.Y("row:N", sort=row_order, title=None),
    )
    rect = base.mark_rect().encode(
        color=alt.Color("value:Q", title=value_name),
        tooltip=["row:N", "column:N", alt.Tooltip("value:Q", format=fmt, title=value_name)],
    )
    values = data["value"].astype(float)
    middle = float((values.min() + values.max()) / 2) if values.notna().any() else 0.0
    labels = base.mark_text(fontSize=10).encode(
        text=alt.Text("value:Q", format=fmt),
        # viridis is dark at the top of its range: white text there
        color=alt.condition(alt.datum["value"] > middle, alt.value("white"), alt.value("black")),
    )
    layers = [rect, labels] if text else [rect]
    if columns is not None:
        if not stacked:
            raise InputError("heatmap: columns (small multiples) needs a dict {name: matrix}")
        names = list(dict.fromkeys(data[dropdown_name]))
        cells = alt.layer(*layers).properties(width=alt.Step(cell), height=alt.Step(cell if not text else 24))
        return cells.facet(facet=alt.Facet(f"{dropdown_name}:N", sort=names, title=None),
                           columns=check_n(columns, "columns")).properties(title=wrap_title(title or value_name))
    chart = alt.layer(*layers).properties(width=alt.Step(cell), height=alt.Step(24),
                                          title=wrap_title(title or value_name))
    return add_dropdowns(chart, data, [dropdown_name])


def scatter(
    df: pd.DataFrame, x: str, y: str, color: str | None = None, tooltip: Sequence[str] | None = None,
    *, dropdown: str | bool | None = None, max_points: int = 5000, title: str | None = None,
    fit: bool = False, colors: tuple[Sequence[str], Sequence[str]] | None = None,
    x_title: str | None = None, y_title: str | None = None,
) -> alt.Chart:
    """Scatter plot of ``y`` against ``x``, optionally coloured, with a dropdown.

    ``colors``: ``(values, colours)`` fixing the colour of each value of ``color``
    (e.g. :data:`rmlib.viz.figures.POSITIVE_NEGATIVE`, so that one concept has one colour
    across the book); ``x_title`` / ``y_title``: axis titles (default: the column names).

    ``dropdown`` names the column to choose with a dropdown; by default the
    first of ``prompt``, ``model`` that exists and is not ``color``; ``False``
    for none. At most ``max_points`` points per dropdown value are embedded
    (a seeded random sample beyond that, said in the subtitle). Columns named
    ``token`` or ``decoded`` are shown through :func:`rmlib.viz.html.visible`.
    ``fit``: also draw the least-squares line of ``y`` on ``x`` per colour,
    fitted in the browser on the points drawn (the subtitle says so).
    """
    tooltip = list(tooltip or [])
    if dropdown is None:
        dropdown = next((c for c in ("prompt", "model") if c in df.columns and c != color), False)
    needed = [x, y] + ([color] if color else []) + tooltip + ([dropdown] if dropdown else [])
    require_columns(df, list(dict.fromkeys(needed)), "scatter")
    max_points = check_n(max_points, "max_points")
    data = df[list(dict.fromkeys(needed))].copy()
    subtitle = None
    key = [dropdown] if dropdown else []
    sizes = data.groupby(key, sort=False).size() if key else pd.Series([len(data)])
    if (sizes > max_points).any():
        shuffled = data.sample(frac=1.0, random_state=0)
        kept = shuffled.groupby(key, sort=False).head(max_points) if key else shuffled.head(max_points)
        data = kept.sort_index()
        subtitle = f"random sample of at most {max_points} points per panel"
    for col in VOCAB_COLUMNS:
        if col in data.columns:
            data[col] = data[col].map(visible)
    for col in data.columns:
        if data[col].dtype == object or isinstance(data[col].dtype, pd.CategoricalDtype):
            data[col] = data[col].astype(str)
    def typed(col: str) -> str:
        return f"{col}:{'Q' if pd.api.types.is_numeric_dtype(data[col]) else 'N'}"

    enc = {"x": alt.X(f"{x}:Q", scale=alt.Scale(zero=False), title=x_title or x),
           "y": alt.Y(f"{y}:Q", scale=alt.Scale(zero=False), title=y_title or y),
           "tooltip": [typed(c) for c in (tooltip or [x, y])]}
    if colors is not None and (len(colors) != 2 or len(colors[0]) != len(colors[1])):
        raise InputError("colors must be (values, colours) of the same length, e.g. (['positive', 'negative'], "
                         "['#3A6E97', '#B95C5A'])")
    if color:
        enc["color"] = alt.Color(typed(color), **({"scale": alt.Scale(domain=list(colors[0]), range=list(colors[1]))}
                                                  if colors is not None else {}))
    props = {"width": 420, "height": 320}
    if fit:
        subtitle = "; ".join(filter(None, [subtitle, f"lines: least squares per {color or 'panel'} on the points drawn"]))
    if title or subtitle:
        props["title"] = alt.TitleParams(title or "", subtitle=subtitle or "")
    points = alt.Chart().mark_circle(size=40, opacity=0.7).encode(**enc)
    if not fit:
        chart = points.properties(data=inline_data(data), **props)
    else:
        lines = alt.Chart().transform_regression(x, y, groupby=[color] if color else []).mark_line(size=3).encode(
            x=enc["x"], y=enc["y"], **({"color": enc["color"]} if color else {}))
        chart = alt.layer(points, lines, data=inline_data(data)).properties(**props)
    return add_dropdowns(chart, data, key)


def line_chart(
    df: pd.DataFrame, x: str, y: str, color: str | None = None, *, dropdowns: Sequence[str] = ("model", "prompt"),
    log_x: bool = False, log_y: bool = False, points: bool = False, tooltip: Sequence[str] | None = None,
    x_title: str | None = None, y_title: str | None = None, title: str | None = None,
    column: str | None = None, reverse_y: bool = False, width: int = 440, height: int = 280,
    dash: str | None = None,
) -> alt.Chart:
    """Lines of ``y`` against ``x``, one per value of ``color`` (and of ``dash``), in ``x`` order.

    ``dropdowns``: columns chosen with a dropdown (each that exists and has
    more than one value); ``log_x`` / ``log_y``: logarithmic axes (rows whose
    value there is not positive are left out, since a log axis cannot show
    them); ``points``: mark each row; ``dash``: a column whose values are
    drawn as solid, dashed, dotted lines (its legend draws lines), for a
    second grouping beside ``color``; ``column``: one panel per value;
    ``reverse_y``: smaller values at the top (ranks). Rows with a missing or infinite ``x`` or
    ``y`` are left out, and other infinite values are shown as missing (JSON has
    no infinity). Columns named ``token`` or
    ``decoded`` are shown through :func:`rmlib.viz.html.visible`.
    """
    tooltip = list(tooltip or [])
    fields = [c for c in dropdowns if c in df.columns]
    needed = list(dict.fromkeys([x, y] + [c for c in (color, dash, column) if c] + tooltip + fields))
    require_columns(df, needed, "line_chart")
    data = df[needed].copy()
    for col in (x, y):
        if not pd.api.types.is_numeric_dtype(data[col]):
            raise InputError(f"line_chart: column {col!r} must be numeric, it is {data[col].dtype}")
    keep = np.isfinite(data[x].astype(float)) & np.isfinite(data[y].astype(float))
    for col, log in ((x, log_x), (y, log_y)):
        if log:
            keep &= data[col].astype(float) > 0
    data = data[keep].sort_values(x, kind="stable")
    numeric = [c for c in data.columns if pd.api.types.is_numeric_dtype(data[c])]
    data[numeric] = data[numeric].replace([np.inf, -np.inf], np.nan)  # tooltips: JSON has no infinity
    if data.empty:
        raise InputError(f"line_chart: no row has a finite {x!r} and {y!r}" + (" > 0 on the log axes" if log_x or log_y
                                                                               else ""))
    for col in data.columns:
        if col in VOCAB_COLUMNS:
            data[col] = data[col].map(visible)
        elif not pd.api.types.is_numeric_dtype(data[col]):
            data[col] = data[col].astype(str)
    types = {c: "Q" if pd.api.types.is_numeric_dtype(data[c]) else "N" for c in data.columns}
    enc = {
        "x": alt.X(f"{x}:Q", title=x_title or x, scale=alt.Scale(type="log") if log_x else alt.Scale(zero=False)),
        "y": alt.Y(f"{y}:Q", title=y_title or y, scale=alt.Scale(type="log", reverse=reverse_y) if log_y
                   else alt.Scale(zero=False, reverse=reverse_y)),
        "order": alt.Order(f"{x}:Q"),
        "tooltip": [f"{c}:{types[c]}" for c in (tooltip or [c for c in (color, x, y) if c])],
    }
    if color:
        enc["color"] = alt.Color(f"{color}:N", sort=list(dict.fromkeys(data[color])), title=None)
    props = dict(width=width, height=height, title=wrap_title(title or f"{y} against {x}"))
    facet = alt.Column(f"{column}:N", sort=list(dict.fromkeys(data[column])), title=None) if column else None
    if not dash:
        chart = alt.Chart(inline_data(data)).mark_line(point=points).encode(**enc).properties(**props)
        return add_dropdowns(chart.encode(column=facet) if column else chart, data, fields)
    order = list(dict.fromkeys(data[dash]))
    lines = alt.Chart().mark_line().encode(**enc, strokeDash=alt.StrokeDash(
        f"{dash}:N", sort=order, title=None, scale=alt.Scale(domain=order, range=DASHES[:len(order)]),
        legend=alt.Legend(symbolType="stroke", symbolStrokeColor="#333", symbolStrokeWidth=2, symbolSize=300)))
    # points in a layer of their own: on the line mark (point=True) Vega-Lite draws the dash legend's
    # symbols with a transparent stroke, i.e. not at all
    layers = [lines] + ([alt.Chart().mark_point(filled=True).encode(
        **{k: v for k, v in enc.items() if k != "order"}, detail=f"{dash}:N")] if points else [])
    chart = alt.layer(*layers, data=inline_data(data))
    chart = chart.properties(width=width, height=height).facet(column=facet).properties(title=props["title"]) \
        if column else chart.properties(**props)
    return add_dropdowns(chart, data, fields)


def mds_plot(
    coords: pd.DataFrame | Mapping[str, pd.DataFrame], *, x: str = "x", y: str = "y",
    color: str | None = None, dropdown_name: str = "prompt", title: str | None = None,
) -> alt.LayerChart:
    """Labelled 2-D map of items (e.g. reward models placed by MDS).

    ``coords``: index = item label, columns ``x`` and ``y`` (names settable),
    optionally a ``color`` column (e.g. ``family``) and a ``prompt`` column; or
    a dict ``{name: coords}``. A dropdown over ``dropdown_name`` appears when it
    has more than one value.
    """
    frames, _ = stack_frames(coords, dropdown_name, "mds_plot")
    needed = [x, y] + ([color] if color else [])
    require_columns(frames, needed, "mds_plot")
    keep = needed + ([dropdown_name] if dropdown_name in frames.columns else [])
    data = frames[keep].rename_axis("item").reset_index()
    data["item"] = data["item"].astype(str)
    if color:
        data[color] = data[color].astype(str)
    base = alt.Chart(inline_data(data)).encode(
        x=alt.X(f"{x}:Q", title="MDS 1", scale=alt.Scale(zero=False)),
        y=alt.Y(f"{y}:Q", title="MDS 2", scale=alt.Scale(zero=False)),
    )
    points = base.mark_circle(size=90).encode(
        tooltip=["item:N", alt.Tooltip(f"{x}:Q", format=".3f"), alt.Tooltip(f"{y}:Q", format=".3f")],
        **({"color": alt.Color(f"{color}:N")} if color else {}),
    )
    labels = base.mark_text(align="left", dx=7, fontSize=11).encode(text="item:N")
    chart = alt.layer(points, labels).properties(width=420, height=360, title=title or "MDS")
    return add_dropdowns(chart, data, [dropdown_name])


def _typed(data: pd.DataFrame, col: str) -> str:
    return f"{col}:{'Q' if pd.api.types.is_numeric_dtype(data[col]) else 'N'}"


def _plain(df: pd.DataFrame, cols: Sequence[str]) -> pd.DataFrame:
    """The columns ``cols`` of ``df`` with categoricals and objects as strings (what Vega compares)."""
    data = df[list(dict.fromkeys(c for c in cols if c))].copy()
    for col in data.columns:
        if not pd.api.types.is_numeric_dtype(data[col]) or isinstance(data[col].dtype, pd.CategoricalDtype):
            data[col] = data[col].astype(str)
    return data


def _order(df: pd.DataFrame, col: str | None) -> list | None:
    if not col or pd.api.types.is_numeric_dtype(df[col]):
        return None
    values = df[col].cat.categories if isinstance(df[col].dtype, pd.CategoricalDtype) else df[col]
    present = set(df[col].astype(str))
    return [v for v in dict.fromkeys(str(v) for v in values) if v in present]


def dot_plot(df: pd.DataFrame, x: str, y: str, *, color: str | None = None, shape: str | None = None,
             column: str | None = None, row: str | None = None, err: str | None = None,
             dropdown: str | Sequence[str] | None = None, tooltip: Sequence[str] = (), reverse_y: bool = False,
             y_title: str | None = None, line: str | None = None, width: int = 160, height: int = 160,
             title: str | None = None, colors: tuple[Sequence[str], Sequence[str]] | None = None,
             x_title: str | None = None) -> alt.Chart:
    """Points of ``y`` against ``x`` (nominal or numeric), in small multiples.

    ``colors``: ``(values, colours)`` fixing the colour of each value of ``color`` (as :func:`scatter`).

    ``err``: a column of half-widths drawn as error bars (y ± err).
    ``column`` / ``row``: facets; ``dropdown``: columns chosen with dropdowns.
    ``line``: a column whose groups are joined by a line (e.g. a model
    across sizes). ``reverse_y``: smaller values at the top (ranks: 1 = best).
    Category orders follow the table (categoricals: their levels). Use it for
    summary tables (a few hundred rows); aggregate first. ``x_title`` /
    ``y_title``: the axis titles (default: the column names). The y axis spans
    every point and error bar with a margin of 5% of the range (one domain for
    all panels), so no point sits on a panel's border.
    """
    dropdown = [dropdown] if isinstance(dropdown, str) else list(dropdown or [])
    cols = [x, y, color, shape, column, row, err, line, *dropdown, *tooltip]
    require_columns(df, [c for c in cols if c], "dot_plot")
    data = _plain(df, cols)
    if err:
        data["_low"], data["_high"] = data[y] - data[err], data[y] + data[err]
    enc_x = alt.X(_typed(data, x), sort=_order(df, x), title=x_title or x,
                  scale=alt.Scale(zero=False) if pd.api.types.is_numeric_dtype(data[x]) else alt.Undefined)
    ends = data[[y, "_low", "_high"] if err else [y]].to_numpy(dtype=float)
    lo, hi = float(np.nanmin(ends)), float(np.nanmax(ends))
    pad = 0.05 * (hi - lo) or 0.5 * abs(hi) or 1.0
    y_scale = alt.Scale(zero=False, nice=False, reverse=reverse_y, domain=[lo - pad, hi + pad])
    enc_y = alt.Y(f"{y}:Q", title=y_title or y, scale=y_scale)
    shown = dict.fromkeys([x, y, *tooltip, *(c for c in (color, shape) if c)])
    enc = {"x": enc_x, "y": enc_y, "tooltip": [_typed(data, c) for c in shown]}
    if color:
        enc["color"] = (alt.Color(_typed(data, color), scale=alt.Scale(domain=list(colors[0]), range=list(colors[1])))
                        if colors is not None else alt.Color(_typed(data, color), sort=_order(df, color)))
    if shape:
        enc["shape"] = alt.Shape(_typed(data, shape), sort=_order(df, shape))
    base = alt.Chart()
    layers = [base.mark_point(filled=True, size=60).encode(**enc)]
    if err:
        layers.append(base.mark_rule().encode(x=enc_x, y=alt.Y("_low:Q", scale=y_scale),
                                              y2="_high:Q", **({"color": enc["color"]} if color else {})))
    if line:
        layers.append(base.mark_line(strokeDash=[2, 2], color="gray", opacity=0.6).encode(
            x=enc_x, y=enc_y, detail=f"{line}:N"))
    chart = alt.layer(*layers, data=inline_data(data)).properties(width=width, height=height)
    facets = {}
    if column:
        facets["column"] = alt.Column(_typed(data, column), sort=_order(df, column))
    if row:
        facets["row"] = alt.Row(_typed(data, row), sort=_order(df, row))
    if facets:
        chart = chart.facet(**facets)
    if title:
        chart = chart.properties(title=wrap_title(title))
    return add_dropdowns(chart, data, dropdown)


