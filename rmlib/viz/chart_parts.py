"""What every chart shares: its data inlined in the page, its dropdowns over ``model`` and ``prompt``
(or any field), the checks of its arguments, and its title wrapped to the plot's width.

Use :func:`inline_data` and :func:`add_dropdowns` for a hand-made chart, so it behaves as the builders'
(:mod:`rmlib.viz.charts`) do.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

import altair as alt
import numpy as np
import pandas as pd

from ..errors import InputError
from ..tables.schema import check_columns


#: Columns that hold vocabulary strings and are shown through ``visible``.
VOCAB_COLUMNS = ("token", "decoded")


def require_columns(df: pd.DataFrame, columns: Sequence[str], what: str) -> None:
    """``df`` has rows and every column of ``columns``, else an InputError naming ``what`` needs them."""
    check_columns(df, columns, what, allow_empty=False)


def check_n(n: object, name: str = "n") -> int:
    """``n`` as an int when it is a whole number >= 1 (not a bool), else an InputError naming ``name``."""
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
        raise InputError(f"{name} must be a positive int, got {n!r}")
    return int(n)


def inline_data(df: pd.DataFrame) -> alt.InlineData:
    """``df`` as Altair inline data, NaN as null.

    Embedded as-is, without Altair's 5,000-row limit: pre-aggregate first so
    the page stays small. Use it for hand-made charts in chapters.
    """
    clean = df.astype(object).where(df.notna(), None)
    return alt.InlineData(values=clean.to_dict("records"))


def stack_frames(frames: pd.DataFrame | Mapping[str, pd.DataFrame], key: str, what: str) -> tuple[pd.DataFrame, bool]:
    """A dict of frames becomes one frame with a ``key`` column; returns (frame, was_dict)."""
    if isinstance(frames, Mapping):
        if not frames:
            raise InputError(f"{what}: got an empty dict")
        parts = []
        for name, frame in frames.items():
            if not isinstance(frame, pd.DataFrame):
                raise TypeError(f"{what}: value for {name!r} is {type(frame).__name__}, not a DataFrame")
            parts.append(frame.assign(**{key: str(name)}))
        return pd.concat(parts), True
    return frames, False


def _dropdowns(df: pd.DataFrame, fields: Sequence[str]) -> list[tuple[str, alt.Parameter]]:
    """One ``binding_select`` parameter per field with more than one distinct value."""
    out = []
    for field in fields:
        if field not in df.columns:
            continue
        column = df[field]
        if not pd.api.types.is_numeric_dtype(column):
            column = column.astype(str)  # the filter compares with ===: same type as the data
        values = list(dict.fromkeys(column.tolist()))
        if len(values) > 1:
            param = alt.param(
                # a Vega signal name must be an identifier: "prompt | method" -> "prompt___method"
                name=re.sub(r"\W", "_", f"{field}_select"), value=values[0],
                bind=alt.binding_select(options=values, name=f"{field}: "),
            )
            out.append((field, param))
    return out


def add_dropdowns(chart, data: pd.DataFrame, fields: Sequence[str]):
    """Add one dropdown (``alt.binding_select``) per field of ``fields`` with more
    than one distinct value in ``data``, and filter ``chart`` to the chosen value.

    Works for ``alt.Chart`` and layered charts. The parameter is named
    ``<field>_select`` and its options keep the order of first appearance.
    Use it for hand-made charts in chapters, so every chart's dropdowns look
    and behave alike.
    """
    for field, param in _dropdowns(data, fields):
        chart = chart.add_params(param).transform_filter(alt.datum[field] == param)
    return chart


def wrap_title(title: str, width: int = 64):
    """A chart title broken into lines of at most ``width`` characters (a list, which Vega draws as
    lines): a title longer than the chart widens it past the page's column."""
    import textwrap

    lines = textwrap.wrap(title, width) if title else [title]
    return lines[0] if len(lines) == 1 else lines
