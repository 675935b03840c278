"""The chapters' chart recipes: each figure of the book in one function.

Every recipe takes tidy DataFrames (as the :mod:`rmlib.stats` functions
return them) and returns an Altair chart whose data are embedded inline
(:func:`rmlib.viz.charts.inline_data`, NaN as null) and filtered by dropdowns
(:func:`rmlib.viz.charts.add_dropdowns`). Strings from vocabularies go
through :func:`rmlib.viz.html.visible` where Vega draws them as text. One
generic recipe, :func:`ci_dots`, draws every point-with-interval plot.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import altair as alt
import numpy as np
import pandas as pd

from .charts import add_dropdowns, inline_data
from .html import visible

__all__ = ["ci_dots", "split_agreement",
           "rank_differences", "rank_trajectories", "gcg_trajectories", "word_strip", "forest",
           "round_floats"]

#: Colours shared by the figures (positive/negative, top/bottom, maximize/minimize, agency/communion).
POSITIVE_NEGATIVE = (["positive", "negative"], ["#3A6E97", "#B95C5A"])
TOP_BOTTOM = (["top", "bottom"], ["#1b7837", "#762a83"])
MAXIMIZE_MINIMIZE = (["maximize", "minimize"], ["#1b7837", "#762a83"])
AGENCY_COMMUNION = (["agency", "communion"], ["#b35806", "#542788"])
def _require(df: pd.DataFrame, columns: Sequence[str], what: str) -> None:
    missing = [c for c in columns if c not in df.columns]
    if missing:
        raise ValueError(f"{what}: the table lacks columns {missing}; it has {list(df.columns)}")


def round_floats(df: pd.DataFrame, digits: int = 5) -> pd.DataFrame:
    """Float columns rounded to ``digits`` significant digits (the page embeds every point)."""
    num = df.select_dtypes("float").columns
    return df.assign(**{c: df[c].map(lambda v: float(f"{v:.{digits}g}")) for c in num})


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


def split_agreement(splits: pd.DataFrame) -> alt.LayerChart:
    """Human-RM tau within the top and the bottom items, with bootstrap intervals.

    ``splits``: columns ``prompt, model, tau_top, tau_top_low, tau_top_high``
    and the same for ``bottom`` (:func:`rmlib.stats.bootstrap_split_agreement`).
    """
    sp = pd.concat([
        splits[["prompt", "model", f"tau_{g}", f"tau_{g}_low", f"tau_{g}_high"]]
        .set_axis(["prompt", "model", "tau", "low", "high"], axis=1).assign(group=g) for g in TOP_BOTTOM[0]
    ], ignore_index=True)
    return ci_dots(sp, x="model", y="tau", low="low", high="high", color="group",
                   x_sort=list(dict.fromkeys(sp["model"])), x_title=None, offset="group",
                   offset_sort=TOP_BOTTOM[0], colors=TOP_BOTTOM, size=60, y_title="human-RM Kendall tau",
                   dropdowns=["prompt"], width=360, height=260,
                   tooltip=["prompt:N", "model:N", "group:N", _fmt("tau", ".3f"), _fmt("low", ".3f"),
                            _fmt("high", ".3f")],
                   title="Human Elo vs the paper's released RM scores: tau within the top and bottom items (95% CI)")


def rank_differences(diffs: pd.DataFrame) -> alt.Chart:
    """Bars of the largest human-model rank differences, one dropdown view per prompt (Fig. 5B)."""
    dd = diffs[["prompt", "item", "human_rank", "model_rank", "diff", "side"]].copy()
    bars = alt.Chart(inline_data(dd)).mark_bar().encode(
        x=alt.X("diff:Q", title="median RM rank minus human rank"),
        y=alt.Y("item:N", sort=alt.EncodingSortField("diff", order="descending"), title=None),
        color=alt.Color("side:N", scale=alt.Scale(domain=["humans_better", "models_better"],
                                                  range=["#762a83", "#1b7837"]), title=None),
        tooltip=["prompt:N", "item:N", _fmt("human_rank", ".1f"), _fmt("model_rank", ".1f"), _fmt("diff", ".1f")],
    ).properties(width=360, height=alt.Step(16), title="Largest rank differences, humans vs the paper's released RM scores (Fig. 5B)")
    return add_dropdowns(bars, dd, ["prompt"])


def rank_trajectories(elo: Mapping[str, pd.DataFrame], n_highlight: int, n_background: int = 100, *,
                      first: str = "greatest_ever", log_scale: bool = False,
                      scorer: str = "the paper's released RM scores") -> alt.LayerChart:
    """Lines following items from the human rank through every RM's rank (Fig. 5C).

    ``elo``: prompt key -> wide table (:func:`rmlib.stats.elo_wide`). The
    ``n_highlight`` top and bottom items by human Elo (and each RM's
    favourites) are drawn bold and named; the ``n_background`` top and bottom
    items faintly, keyed by a number instead of their name (a smaller page).
    ``first``: the prompt the dropdown opens on (the paper's Fig. 5C shows
    ``greatest_ever``). Ranks are on a linear axis by default, so an item
    that people rank near the bottom and the RMs in the middle (the
    Holocaust) visibly rises; ``log_scale=True`` spreads the top ranks instead.
    """
    if not elo:
        raise ValueError("rank_trajectories: no prompts; give at least one wide Elo table")
    if first in elo:
        elo = {first: elo[first], **{k: w for k, w in elo.items() if k != first}}
    from ..stats.elo import rank_trajectories as trajectories

    traj, background = [], []
    for key, w in elo.items():
        traj.append(trajectories(w, n_top=n_highlight, n_bottom=n_highlight).assign(prompt=key))
        background.append(trajectories(w, n_top=n_background, n_bottom=n_background, model_favourites=False)
                          .assign(prompt=key))
    traj = pd.concat(traj, ignore_index=True).assign(layer="highlight")
    background = pd.concat(background, ignore_index=True).assign(layer="background")
    background["item"] = background.groupby(["prompt", "item"], sort=False).ngroup().astype(str)
    background = background.drop(columns="human_rank")
    tr = pd.concat([background, traj], ignore_index=True)
    rankers = list(next(iter(elo.values())).columns)
    base = alt.Chart(inline_data(tr)).encode(
        x=alt.X("ranker:N", sort=rankers, title=None, axis=alt.Axis(labelAngle=-45)),
        y=alt.Y("rank:Q", scale=alt.Scale(type="log", reverse=True) if log_scale else
                alt.Scale(reverse=True, domain=[1, max(len(w) for w in elo.values())], nice=False),
                title="rank (1 = best" + (", log scale)" if log_scale else ")")),
        detail="item:N",
    )
    layer = alt.layer(
        base.transform_filter(alt.datum.layer == "background").mark_line(strokeWidth=1, opacity=0.08).encode(
            color=alt.Color("group:N", legend=None, scale=alt.Scale(domain=["human_top", "human_bottom", "model_top"],
                                                                    range=["#2166ac", "#b2182b", "#e6ab02"]))),
        base.transform_filter(alt.datum.layer == "highlight").mark_line(point=True, strokeWidth=2.5).encode(
            color=alt.Color("item:N", scale=alt.Scale(scheme="category20"), title="item",
                            legend=alt.Legend(labelLimit=220)),
            strokeDash=alt.StrokeDash("group:N", legend=None),  # the shapes' legend names the groups
            shape=alt.Shape("group:N", title="group (line style)", legend=alt.Legend(symbolFillColor="#444")),
            tooltip=["prompt:N", "item:N", "group:N", "ranker:N", _fmt("rank", ".1f"), _fmt("human_rank", ".1f")]),
    ).resolve_scale(color="independent").properties(
        width=380, height=420, title=f"Rank of highlighted items: humans and {scorer} (Fig. 5C)")
    return add_dropdowns(layer, tr, ["prompt"])


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


def word_strip(matched: pd.DataFrame) -> alt.Chart:
    """One tick per matched word and its score, agency vs communion (``bigtwo_matches`` rows + model, prompt)."""
    strip = matched.assign(word=matched["word"].map(visible))
    chart = alt.Chart(inline_data(strip)).mark_tick(thickness=2, size=20).encode(
        x=alt.X("score:Q", title="score (log-probability or implicit reward)", scale=alt.Scale(zero=False)),
        y=alt.Y("dimension:N", title=None),
        color=alt.Color("dimension:N", scale=alt.Scale(domain=AGENCY_COMMUNION[0], range=AGENCY_COMMUNION[1])),
        tooltip=["model:N", "prompt:N", "word:N", "dimension:N", _fmt("score", ".3f")],
    ).properties(width=520, height=120,
                 title="Every matched word | language model log-prob (or implicit reward); hover for the word")
    return add_dropdowns(chart, strip, ["model", "prompt"])


def forest(rm_bt: pd.DataFrame, lm_bt: pd.DataFrame, freq_bt: pd.DataFrame, alpha: float = 0.05) -> alt.LayerChart:
    """Hedges' g (agency minus communion) per model: the RMs on EloEverything items, the LMs on
    their tokens and word frequency itself (beside every LM view), one dropdown view per prompt.

    Inputs: :func:`rmlib.stats.bigtwo_scores` results with ``family`` (and
    ``prompt``) columns. Rows without a g are left out; the shape marks p < ``alpha``.
    """
    cols = ["view", "model", "family", "n_agency", "n_communion", "hedges_g", "p"]
    data = pd.concat([
        rm_bt.assign(view="RMs: EloEverything | " + rm_bt["prompt"]),
        lm_bt.assign(view="LMs: tokens | " + lm_bt["prompt"]),
        *[freq_bt.assign(view="LMs: tokens | " + p, family="word frequency") for p in lm_bt["prompt"].unique()],
    ], ignore_index=True)[cols]
    data = data.dropna(subset=["hedges_g"])
    data["model"] = data["model"].astype(str).str.replace("HuggingFaceTB/", "", regex=False)
    data["significant"] = np.where(data["p"] < alpha, f"p < {alpha}", f"p ≥ {alpha}")
    lim = float(np.ceil(data["hedges_g"].abs().max() * 10) / 10) if len(data) else 1.0
    base = alt.Chart(inline_data(data))
    points = base.mark_point(filled=True, size=90).encode(
        x=alt.X("hedges_g:Q", title="Hedges' g: agency − communion (> 0: prefers agency)",
                scale=alt.Scale(domain=[-lim, lim])),
        y=alt.Y("model:N", sort=None, title=None, axis=alt.Axis(labelLimit=0)),  # full names, never cut
        color=alt.Color("family:N", legend=alt.Legend(labelLimit=0)),
        shape=alt.Shape("significant:N", scale=alt.Scale(domain=[f"p < {alpha}", f"p ≥ {alpha}"],
                                                         range=["circle", "triangle-down"])),
        tooltip=["view:N", "model:N", "family:N", "n_agency:Q", "n_communion:Q", _fmt("hedges_g", ".3f"),
                 _fmt("p", ".4f")],
    )
    zero = base.mark_rule(color="#888").encode(x=alt.datum(0))
    return add_dropdowns(alt.layer(zero, points).properties(
        width=460, title="Agency vs communion by model | RMs: the paper's released scores; LMs: log-prob"),
                         data, ["view"])
