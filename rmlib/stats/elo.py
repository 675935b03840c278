"""Chapter 4 statistics: reward models against human EloEverything ratings.

The released EloEverything tables (``paper_release.eloeverything(prompt)``) hold,
per item, the human Elo rating and the score each of the paper's ten reward
models gave the item as a whole response. :func:`elo_wide` turns one into a
wide table (index = item, column ``human`` then one column per model,
nicknamed); the rest works on such wide tables.

What the paper computed (``figures/generate_figure_a5.py``,
``generate_figure_5.py``) and how it maps here:

* The Kendall tau-b matrix of all rankers, humans included (Fig. A.5):
  :func:`tau_matrix`. Human-model agreement on "What, in one word, is the
  greatest thing ever?": mean 0.294, SD 0.059 (ddof=1), range 0.219-0.390.
* The paper's "mean model-model tau of 0.55" is reproduced only when the
  diagonal (each model with itself, tau = 1) is averaged in;
  :func:`model_model_mean` gives both numbers, named.
* Rank differences (Fig. 5B, A.7): items ranked (1 = best) by every ranker;
  the paper's "average model rank" is the *median* over the rank columns,
  and its code included the human column in that median.
  :func:`rank_differences` excludes humans by default and reproduces the
  paper with ``include_human_in_average=True``.
* Bootstrap intervals (items resampled) for every tau: :func:`bootstrap_taus`,
  built on :func:`rmlib.stats.tau.kendall_tau_b` (an O(n log^2 n) tau-b that
  takes bootstrap resamples as integer weights) and on the draws and
  percentile intervals of :mod:`rmlib.stats.resampling`.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd

from rmlib import registry
from rmlib.stats.agreement import rank_agreement, upper_triangle
from rmlib.stats.resampling import bootstrap_weights, percentile_interval
from rmlib.stats.tau import kendall_tau_b, kendall_tau_b_matrix
from rmlib.stats.vocab import top_bottom
from ..errors import InputError

HUMAN = "human"


# --------------------------------------------------------------------------
# Wide tables
# --------------------------------------------------------------------------


def elo_wide(df: pd.DataFrame, *, nicknames: bool = True) -> pd.DataFrame:
    """EloEverything table -> wide table: index ``name``, ``human`` + one column per model.

    ``df`` has columns ``name, elo_score, elo_rank, elo_matches`` and one
    column per reward model (hub id), as ``paper_release.eloeverything``
    returns. With ``nicknames`` the model columns are renamed to the
    paper's nicknames (``registry.nickname``). ``attrs["prompt"]`` is
    carried over.
    """
    if not isinstance(df, pd.DataFrame):
        raise TypeError(f"df must be a DataFrame, got {type(df).__name__}")
    missing = [c for c in ("name", "elo_score") if c not in df.columns]
    if missing:
        raise InputError(
            f"df lacks columns {missing}; pass the table from rmlib.tables.paper_release.eloeverything()"
        )
    if df["name"].duplicated().any():
        dup = df.loc[df["name"].duplicated(), "name"].iloc[0]
        raise InputError(f"item names must be unique; {dup!r} appears more than once")
    models = [c for c in df.columns if c not in ("name", "elo_score", "elo_rank", "elo_matches")]
    if not models:
        raise InputError("df has no model score columns")
    wide = df.set_index("name")[["elo_score"] + models].rename(columns={"elo_score": HUMAN})
    if nicknames:
        wide = wide.rename(columns={m: registry.nickname(m) for m in models})
    wide = wide.astype("float64")
    wide.index.name = "item"
    wide.attrs = {k: v for k, v in df.attrs.items() if k in ("prompt", "source")}
    return wide


def _check_wide(wide: pd.DataFrame, human: str | None = HUMAN) -> None:
    if not isinstance(wide, pd.DataFrame):
        raise TypeError(f"expected a wide DataFrame (index = item, columns = rankers), got {type(wide).__name__}")
    if human is not None and human not in wide.columns:
        raise InputError(
            f"wide table has no {human!r} column (columns: {list(wide.columns)}); "
            "build it with elo_wide() or pass human=<column>"
        )
    if wide.shape[1] < 2:
        raise InputError("need at least two ranker columns")


# --------------------------------------------------------------------------
# Agreement summaries
# --------------------------------------------------------------------------


def tau_matrix(wide: pd.DataFrame) -> pd.DataFrame:
    """Kendall tau-b between all rankers (humans included), Fig. A.5.

    Computed with :func:`rmlib.stats.agreement.rank_agreement` on the
    items every ranker scored.
    """
    _check_wide(wide, human=None)
    return rank_agreement(wide.dropna(), "kendall")


def human_model_summary(tau: pd.DataFrame, *, human: str = HUMAN) -> pd.Series:
    """Mean, SD (ddof=1), min and max of the human-model taus, with the extreme models."""
    if human not in tau.index:
        raise InputError(f"tau matrix has no {human!r} row; rows are {list(tau.index)}")
    hm = tau.loc[human].drop(human)
    return pd.Series({
        "n_models": len(hm),
        "mean": hm.mean(),
        "sd": hm.std(ddof=1),
        "min": hm.min(),
        "max": hm.max(),
        "min_model": hm.idxmin(),
        "max_model": hm.idxmax(),
    })


def model_model_mean(tau: pd.DataFrame, *, human: str | None = HUMAN) -> pd.Series:
    """Mean model-model tau, off-diagonal only and with the diagonal averaged in.

    ``mean_offdiag`` averages the distinct model pairs (the meaningful
    number); ``mean_with_diagonal`` averages the whole model-by-model
    block, ones on the diagonal included, which is how the paper's 0.55
    comes out.
    """
    models = [c for c in tau.columns if c != human]
    block = tau.loc[models, models].to_numpy(dtype=float)
    k = len(models)
    off = block[~np.eye(k, dtype=bool)]
    return pd.Series({"n_models": k, "mean_offdiag": off.mean(), "mean_with_diagonal": block.mean()})


def _split_size(n: int, fraction: float, n_items: int | None) -> int:
    if n_items is not None:
        if int(n_items) != n_items or not 2 <= n_items <= n // 2:
            raise InputError(f"n_items must be an integer from 2 to {n // 2} (half of {n} items), got {n_items}")
        return int(n_items)
    if not 0 < fraction <= 0.5:
        raise InputError(f"fraction must be in (0, 0.5], got {fraction}")
    k = int(np.floor(fraction * n))
    if k < 2:
        raise InputError(f"fraction {fraction} of {n} items leaves fewer than 2 per group")
    return k


def split_agreement(wide: pd.DataFrame, *, fraction: float = 0.5, n_items: int | None = None,
                    human: str = HUMAN) -> pd.DataFrame:
    """Human-model tau within the top and within the bottom items by human Elo.

    The items are sorted by the human rating; ``fraction`` of them form
    the top group (highest Elo) and the same number the bottom group
    (``fraction=0.5``: top vs bottom half; ``0.1``: top vs bottom 10%).
    ``n_items`` (overrides ``fraction``) sets the group size directly,
    e.g. ``n_items=100``: the 100 highest- and 100 lowest-rated items.
    The paper (§4.1) reports 0.19 (top) vs 0.08 (bottom) without saying
    which split; its code for this was not released.
    Items tied with the cut-off are assigned by table order (stable sort).
    One row per model: ``tau_top, tau_bottom, diff`` (top minus bottom),
    plus a ``mean`` row.
    """
    _check_wide(wide, human)
    d = wide.dropna()
    order = np.argsort(-d[human].to_numpy(float), kind="stable")
    k = _split_size(len(d), fraction, n_items)
    top, bottom = d.iloc[order[:k]], d.iloc[order[-k:]]
    rows = {}
    for m in [c for c in d.columns if c != human]:
        rows[m] = {
            "tau_top": kendall_tau_b(top[human], top[m]),
            "tau_bottom": kendall_tau_b(bottom[human], bottom[m]),
        }
    out = pd.DataFrame(rows).T
    out["diff"] = out["tau_top"] - out["tau_bottom"]
    out.loc["mean"] = out.mean()
    out.attrs = {"fraction": fraction if n_items is None else k / len(d), "n_per_group": k}
    return out


# --------------------------------------------------------------------------
# Ranks: differences and trajectories
# --------------------------------------------------------------------------


def ranks(wide: pd.DataFrame) -> pd.DataFrame:
    """Rank of every item for every ranker, 1 = highest score, ties averaged."""
    return wide.rank(ascending=False, method="average")


def rank_differences(
    wide: pd.DataFrame,
    n: int = 10,
    *,
    human: str = HUMAN,
    include_human_in_average: bool = False,
) -> pd.DataFrame:
    """Items whose average model rank differs most from the human rank (Fig. 5B).

    Ranks as :func:`ranks`; the average model rank is the median over the
    model columns (with ``include_human_in_average=True`` over all
    columns, humans included, as the paper's code did). ``diff`` is
    average model rank minus human rank: positive = humans rank the item
    better than models do. Returns the ``n`` largest and ``n`` smallest
    differences, columns ``item, human_rank, model_rank, diff, side``
    (``"humans_better"`` / ``"models_better"``), sorted by ``diff``
    descending.
    """
    _check_wide(wide, human)
    r = ranks(wide.dropna())
    cols = list(r.columns) if include_human_in_average else [c for c in r.columns if c != human]
    d = pd.DataFrame({"human_rank": r[human], "model_rank": r[cols].median(axis=1)})
    d["diff"] = d["model_rank"] - d["human_rank"]
    d.index.name = "item"
    ends = top_bottom(d.reset_index(), n, score="diff")
    hi = ends[ends["end"] == "top"].assign(side="humans_better")
    lo = ends[ends["end"] == "bottom"].assign(side="models_better")
    cols = ["item", "human_rank", "model_rank", "diff", "side"]
    return pd.concat([hi, lo.iloc[::-1]], ignore_index=True)[cols]


def rank_trajectories(
    wide: pd.DataFrame,
    *,
    n_top: int = 5,
    n_bottom: int = 5,
    model_favourites: bool = True,
    human: str = HUMAN,
) -> pd.DataFrame:
    """Ranks of highlighted items across all rankers (Fig. 5C), tidy.

    Groups: the ``n_top`` best and ``n_bottom`` worst items by human Elo
    (``human_top``, ``human_bottom``) and, with ``model_favourites``,
    each model's top-ranked item not already among the human top
    (``model_top``). Columns ``item, group, ranker, rank, human_rank``,
    rankers in table order (humans first when built by :func:`elo_wide`).
    The figure's faint background lines are
    ``rank_trajectories(wide, n_top=100, n_bottom=100, model_favourites=False)``.
    """
    _check_wide(wide, human)
    r = ranks(wide.dropna())
    hr = r[human].sort_values(kind="stable")
    groups = {}
    for item in hr.index[:n_top]:
        groups.setdefault(item, "human_top")
    for item in hr.index[::-1][:n_bottom]:
        groups.setdefault(item, "human_bottom")
    if model_favourites:
        for m in [c for c in r.columns if c != human]:
            item = r[m].sort_values(kind="stable").index[0]
            groups.setdefault(item, "model_top")
    sub = r.loc[list(groups)]
    out = sub.reset_index(names="item").melt(id_vars="item", var_name="ranker", value_name="rank")
    out["group"] = out["item"].map(groups)
    out["human_rank"] = out["item"].map(r[human])
    return out[["item", "group", "ranker", "rank", "human_rank"]]


# --------------------------------------------------------------------------
# Bootstrap
# --------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class TauBootstrap:
    """Bootstrap of the tau matrix, items resampled (see :func:`bootstrap_taus`).

    ``point``: the tau matrix of the data; ``samples``: ``(n_boot, k, k)``
    taus of the resamples; ``labels``: ranker names; ``human``: the human
    column name (or None).
    """

    point: pd.DataFrame
    samples: np.ndarray = dataclasses.field(repr=False)
    labels: list
    human: str | None
    seed: int | None

    @property
    def n_boot(self) -> int:
        return self.samples.shape[0]

    def ci(self, level: float = 0.95) -> tuple[pd.DataFrame, pd.DataFrame]:
        """Percentile interval of every tau: ``(low, high)`` matrices."""
        lo, hi = percentile_interval(self.samples, level)
        return (pd.DataFrame(lo, index=self.labels, columns=self.labels),
                pd.DataFrame(hi, index=self.labels, columns=self.labels))

    def tidy(self, level: float = 0.95) -> pd.DataFrame:
        """One row per distinct pair: ``a, b, tau, low, high``."""
        lo, hi = self.ci(level)
        out = pd.DataFrame({"tau": upper_triangle(self.point), "low": upper_triangle(lo),
                            "high": upper_triangle(hi)})
        return out.reset_index()

    def summary(self, level: float = 0.95) -> pd.DataFrame:
        """Point value and percentile interval of the summary statistics.

        Rows: ``human_model_mean``, ``human_model_sd`` (when there is a
        human column), ``model_model_mean_offdiag``,
        ``model_model_mean_with_diagonal``; columns ``estimate, low,
        high``.
        """
        labels = list(self.labels)
        models = [i for i, c in enumerate(labels) if c != self.human]
        k = len(models)
        blocks = self.samples[:, models][:, :, models]
        off = ~np.eye(k, dtype=bool)
        stats = {
            "model_model_mean_offdiag": blocks[:, off].mean(axis=1),
            "model_model_mean_with_diagonal": blocks.reshape(len(blocks), -1).mean(axis=1),
        }
        pt = self.point.to_numpy()[np.ix_(models, models)]
        point = {"model_model_mean_offdiag": pt[off].mean(), "model_model_mean_with_diagonal": pt.mean()}
        if self.human is not None:
            h = labels.index(self.human)
            hm = self.samples[:, h, models]
            stats = {"human_model_mean": hm.mean(axis=1), "human_model_sd": hm.std(axis=1, ddof=1), **stats}
            php = self.point.to_numpy()[h, models]
            point = {"human_model_mean": php.mean(), "human_model_sd": php.std(ddof=1), **point}
        rows = {key: dict(zip(("estimate", "low", "high"), (point[key], *percentile_interval(v, level))))
                for key, v in stats.items()}
        return pd.DataFrame(rows).T


def bootstrap_taus(
    wide: pd.DataFrame,
    n_boot: int = 200,
    *,
    seed: int | None = 0,
    human: str | None = HUMAN,
) -> TauBootstrap:
    """Bootstrap the full tau-b matrix, resampling items with replacement.

    Every resample draws ``n`` items with replacement (the same draws for
    all pairs, so summaries across pairs get valid intervals too). Uses
    :func:`kendall_tau_b_matrix` with bootstrap weights, so the 11 x 11
    EloEverything matrix (7,530 items) is resampled without a Python loop
    over resamples or pairs.
    """
    if n_boot < 1:
        raise InputError(f"n_boot must be positive, got {n_boot}")
    _check_wide(wide, human)
    d = wide.dropna()
    W = bootstrap_weights(len(d), n_boot, seed)
    samples = kendall_tau_b_matrix(d, W)
    labels = list(d.columns)
    point = pd.DataFrame(kendall_tau_b_matrix(d), index=labels, columns=labels)
    return TauBootstrap(point=point, samples=samples, labels=labels, human=human, seed=seed)


def bootstrap_split_agreement(
    wide: pd.DataFrame,
    n_boot: int = 200,
    *,
    fraction: float = 0.5,
    n_items: int | None = None,
    seed: int | None = 0,
    level: float = 0.95,
    human: str = HUMAN,
) -> pd.DataFrame:
    """:func:`split_agreement` with percentile intervals (items resampled within group).

    Columns ``tau_top, tau_top_low, tau_top_high, tau_bottom, ...``, one
    row per model.
    """
    point = split_agreement(wide, fraction=fraction, n_items=n_items, human=human)
    d = wide.dropna()
    order = np.argsort(-d[human].to_numpy(float), kind="stable")
    k = point.attrs["n_per_group"]
    out = point.drop(index="mean")[["tau_top", "tau_bottom"]].copy()
    for name, rows, s in (("tau_top", order[:k], 1), ("tau_bottom", order[-k:], 2)):
        g = d.iloc[rows]
        W = bootstrap_weights(k, n_boot, None if seed is None else seed + s)
        lows, highs = [], []
        for m in out.index:
            low, high = percentile_interval(kendall_tau_b(g[human], g[m], W), level)
            lows.append(low)
            highs.append(high)
        out[f"{name}_low"], out[f"{name}_high"] = lows, highs
    return out[["tau_top", "tau_top_low", "tau_top_high", "tau_bottom", "tau_bottom_low", "tau_bottom_high"]]


# --------------------------------------------------------------------------
# Items and the data set (§4 facts)
# --------------------------------------------------------------------------


def top_items(wide: pd.DataFrame, *, human: str | None = HUMAN) -> pd.DataFrame:
    """Each model's highest-scored item(s), ties kept: one row per (model, item).

    Columns ``model, item, score, n_tied`` (``n_tied`` > 1 when several
    items share the maximum). The paper's §4.1 names one top item per
    model; a tie is a fact it did not report.
    """
    models = [c for c in wide.columns if c != human]
    rows = []
    for m in models:
        col = wide[m].dropna()
        best = col[col == col.max()]
        for item, score in best.items():
            rows.append({"model": m, "item": item, "score": float(score), "n_tied": len(best)})
    return pd.DataFrame(rows, columns=["model", "item", "score", "n_tied"])


def top_item_counts(wide: pd.DataFrame, *, human: str | None = HUMAN) -> pd.Series:
    """How many models have each item as (one of) their top item(s), most first."""
    tops = top_items(wide, human=human)
    return tops.groupby("item")["model"].nunique().sort_values(ascending=False, kind="stable").rename("n_models")


def comparisons_summary(df: pd.DataFrame) -> pd.Series:
    """Facts of the EloEverything data set from its ``elo_matches`` column (§4).

    Every comparison pairs two items, so the number of comparisons is half
    the sum of ``elo_matches``: ``comparisons`` (that half, rounded down),
    ``matches_sum`` (the sum itself; odd in the released files, so the
    counts are not exactly consistent), ``items``, ``matches_mean``,
    ``matches_sd`` (ddof=1), ``words_mean`` and ``words_sd`` (words per
    item name, split on whitespace).
    """
    if "elo_matches" not in df.columns or "name" not in df.columns:
        raise InputError("df needs columns 'name' and 'elo_matches': pass paper_release.eloeverything(prompt)")
    m = df["elo_matches"].astype("int64")
    words = df["name"].astype(str).str.split().str.len()
    total = int(m.sum())
    return pd.Series({
        "items": len(df),
        "matches_sum": total,
        "comparisons": total // 2,
        "matches_mean": float(m.mean()),
        "matches_sd": float(m.std(ddof=1)),
        "words_mean": float(words.mean()),
        "words_sd": float(words.std(ddof=1)),
    }, dtype=object)


__all__ = [
    "HUMAN",
    "comparisons_summary",
    "top_item_counts",
    "top_items",
    "TauBootstrap",
    "bootstrap_split_agreement",
    "bootstrap_taus",
    "elo_wide",
    "human_model_summary",
    "model_model_mean",
    "rank_differences",
    "rank_trajectories",
    "ranks",
    "split_agreement",
    "tau_matrix",
]
