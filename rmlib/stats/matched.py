"""Target items against matched controls: covariates, control selection, the matched comparison.

A group of items (the *targets*, e.g. the EloEverything items that name an
identity group) is compared with *controls*: other items that resemble each
target on stated covariates, so that a difference between the two is not the
covariates' doing.

* :func:`text_covariates`: per text, its length in characters and words and the
  mean log frequency of its words in a given frequency list (per million words);
  :func:`deciles`: decile labels 1-10 of a number (e.g. the human Elo rating).
* :func:`matched_controls`: for each target, ``k`` controls from the same
  stratum (equal values of the ``exact`` columns) that are nearest on the
  ``nearest`` columns (Euclidean distance on z-scores), drawn without
  replacement across targets, targets taken in a seeded random order, ties
  broken by a seeded random key: the same inputs and seed give the same sets.
* :func:`compare_matched`: per measure, the mean over targets of *target minus
  the mean of its controls*, a percentile bootstrap interval (sets resampled,
  :func:`rmlib.stats.resampling.bootstrap_ci`) and a permutation p-value
  (target label permuted within each set,
  :func:`rmlib.stats.resampling.matched_permutation_test`).
* :func:`balance`: the covariates' means over targets and controls.
* :func:`matched_differences`: per target, its value minus its controls' mean;
  :func:`token_frame`: tokens of many score tables, their percentile under
  each prompt and their matching covariates (frequency of the word).
* :func:`rank_gaps`: per item, each ranker's rank minus the human rank (the
  paper's Fig. 5B rank difference, 1 = best, ties averaged, per model rather
  than their median); :func:`percentile_ranks`: scores as percentiles within
  groups (100 = the highest score).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from ..errors import InputError
from .resampling import bootstrap_ci, matched_permutation_test
from .terms import words_of

__all__ = ["balance", "compare_matched", "deciles", "matched_controls", "matched_differences", "percentile_ranks", "rank_gaps",
           "text_covariates", "token_frame"]

MATCH_COLUMNS = ("set", "target", "control", "distance")


def _log_frequencies(frequencies, words) -> dict:
    """``word -> log_freq`` from a table (columns ``word, log_freq``) or a function of the words giving one."""
    if callable(frequencies):
        frequencies = frequencies(sorted(set(words)))
    if not isinstance(frequencies, pd.DataFrame) or not {"word", "log_freq"} <= set(frequencies.columns):
        raise InputError("frequencies must be a table with columns 'word' and 'log_freq' (word_frequencies.bnc_frequencies()) "
                         "or a function of a word list that returns one (stats.wordfreq_frequencies)")
    f = frequencies[np.isfinite(frequencies["log_freq"].to_numpy(float))]
    return dict(zip(f["word"].astype(str).str.lower(), f["log_freq"].astype(float)))


def text_covariates(texts, frequencies=None) -> pd.DataFrame:
    """Per text (index, duplicates once): ``n_chars``, ``n_words`` (:func:`rmlib.stats.terms.words_of`) and,
    with ``frequencies`` (a table with columns ``word, log_freq`` such as ``word_frequencies.bnc_frequencies()``, or
    a function of a word list returning one, such as :func:`rmlib.stats.frequency.wordfreq_frequencies`),
    ``log_freq``: the mean log frequency of the text's words that the list holds with a finite value
    (NaN when it holds none)."""
    texts = list(dict.fromkeys(str(t) for t in texts))
    words = [words_of(t) for t in texts]
    out = pd.DataFrame({"n_chars": [len(t) for t in texts], "n_words": [len(ws) for ws in words]},
                       index=pd.Index(texts, name="text"))
    if frequencies is not None:
        logf = _log_frequencies(frequencies, [w for ws in words for w in ws])
        out["log_freq"] = [np.mean([logf[w] for w in ws if w in logf]) if any(w in logf for w in ws) else np.nan
                           for ws in words]
    return out


def deciles(values: pd.Series, q: int = 10) -> pd.Series:
    """Quantile group 1..q of each value (``pandas.qcut``; 1 = lowest); NaN stays NaN."""
    if q < 2:
        raise InputError(f"q must be at least 2 groups, got {q}")
    return pd.qcut(values, q, labels=False, duplicates="drop").add(1).astype("Int64").rename(f"{values.name}_q{q}"
                                                                                        if values.name else None)


def _mask(frame: pd.DataFrame, value, name: str) -> np.ndarray:
    if isinstance(value, str):
        if value not in frame.columns:
            raise InputError(f"{name}={value!r} is not a column of the frame (columns: {list(frame.columns)})")
        value = frame[value]
    if isinstance(value, pd.Series):
        if not value.index.equals(frame.index):
            value = value.reindex(frame.index)
        value = value.fillna(False).to_numpy()
    mask = np.asarray(value)
    if mask.shape != (len(frame),) or mask.dtype != bool:
        raise InputError(f"{name} must be a boolean mask with one value per row of the frame ({len(frame)} rows)")
    return mask


def matched_controls(frame: pd.DataFrame, target, *, exact: Sequence[str] = (), nearest: Sequence[str] = (),
                     k: int = 5, seed: int = 0, candidates=None) -> pd.DataFrame:
    """Choose ``k`` controls for every target row of ``frame`` (see the module docstring).

    ``frame``: one row per item, a unique index (the labels returned), the
    covariate columns. ``target``: a boolean mask (array, Series or column
    name) of the target rows. ``candidates``: the rows that may serve as
    controls (default: every non-target row; targets never do). ``exact``:
    columns whose values a control must share with its target;
    ``nearest``: numeric columns, standardised by their standard deviation
    over the candidates, on which the closest candidates are taken (none:
    a seeded random choice within the stratum). Rows with a missing covariate
    are neither matched nor used. A target whose stratum runs out of
    candidates gets fewer than ``k`` controls, or none (its set is then left
    out).

    Returns one row per (target, control): ``set`` (0, 1, ... in the frame's
    order of targets), ``target``, ``control`` (index labels), ``distance``,
    and the ``exact`` columns (the set's stratum).
    ``attrs``: ``k``, ``exact``, ``nearest``, ``seed``, ``n_targets``,
    ``unmatched`` (targets left without a control), ``short`` (targets with
    fewer than ``k``).
    """
    if not isinstance(frame, pd.DataFrame):
        raise InputError(f"frame must be a DataFrame, got {type(frame).__name__}")
    if not frame.index.is_unique:
        raise InputError("frame's index must be unique: it names the targets and controls")
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
        raise InputError(f"k must be a positive number of controls per target, got {k!r}")
    exact, nearest = list(exact), list(nearest)
    missing = [c for c in exact + nearest if c not in frame.columns]
    if missing:
        raise InputError(f"frame lacks the covariate columns {missing}; it has {list(frame.columns)}")
    is_target = _mask(frame, target, "target")
    pool = ~is_target if candidates is None else _mask(frame, candidates, "candidates") & ~is_target
    complete = frame[exact + nearest].notna().all(axis=1).to_numpy()
    pool &= complete
    rng = np.random.default_rng(seed)
    tie = rng.random(len(frame))
    if nearest:
        values = frame[nearest].to_numpy(dtype=float)
        sd = np.nanstd(values[pool], axis=0, ddof=1) if pool.sum() > 1 else np.ones(len(nearest))
        z = values / np.where(sd > 0, sd, 1.0)
    if exact:  # one integer code per combination of the exact columns' values (as text)
        parts = [frame[c].astype(str) for c in exact]
        strata = pd.factorize(parts[0].str.cat(parts[1:], sep="\x1f") if len(parts) > 1 else parts[0])[0]
    else:
        strata = np.zeros(len(frame), dtype=np.int64)
    labels = frame.index.to_numpy()
    targets = np.flatnonzero(is_target)
    set_of = {t: s for s, t in enumerate(targets)}
    used = np.zeros(len(frame), dtype=bool)
    rows, unmatched, short = [], [], []
    for t in rng.permutation(targets):
        if not complete[t]:
            unmatched.append(labels[t])
            continue
        avail = np.flatnonzero(pool & ~used & (strata == strata[t]))
        dist = np.sqrt(((z[avail] - z[t]) ** 2).sum(axis=1)) if nearest else np.zeros(len(avail))
        chosen = avail[np.lexsort((tie[avail], dist))][:k]
        dist_of = dict(zip(avail, dist))
        used[chosen] = True
        if len(chosen) == 0:
            unmatched.append(labels[t])
        elif len(chosen) < k:
            short.append(labels[t])
        rows += [(set_of[t], labels[t], labels[c], float(dist_of[c])) for c in chosen]
    out = pd.DataFrame(rows, columns=list(MATCH_COLUMNS)).sort_values(["set", "distance"], kind="stable")
    for col in exact:  # the stratum of each set, for comparisons by group
        out[col] = frame.loc[out["target"], col].to_numpy()
    out = out.reset_index(drop=True)
    out.attrs = {"k": int(k), "exact": exact, "nearest": nearest, "seed": seed, "n_targets": int(len(targets)),
                 "unmatched": unmatched, "short": short}
    return out


def balance(frame: pd.DataFrame, matches: pd.DataFrame, columns: Sequence[str]) -> pd.DataFrame:
    """How alike the targets and their controls are: per covariate (rows), the mean over the matched
    targets, the mean over their controls (each control once per set it serves) and the standardised
    difference (targets minus controls, over the pooled standard deviation; within 0.1 counts as
    well balanced)."""
    _check_matches(matches)
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise InputError(f"frame lacks the covariate columns {missing}")
    t = frame.loc[matches.drop_duplicates("set")["target"], list(columns)].astype(float)
    c = frame.loc[matches["control"], list(columns)].astype(float)
    pooled = np.sqrt((t.var(ddof=1) + c.var(ddof=1)) / 2)
    out = pd.DataFrame({"targets": t.mean(), "controls": c.mean(),
                        "std_diff": (t.mean() - c.mean()) / pooled.where(pooled > 0)})
    out.index.name = "covariate"
    return out


def _check_matches(matches: pd.DataFrame) -> None:
    if not isinstance(matches, pd.DataFrame) or not set(MATCH_COLUMNS[:3]) <= set(matches.columns):
        raise InputError("matches must be the table of matched_controls (columns set, target, control)")
    if matches.empty:
        raise InputError("matches is empty: no target found a control (check the strata or lower k)")


def _sets(v: pd.Series, matches: pd.DataFrame) -> tuple[list, list]:
    """Per set with a target value and at least one control value: its target label and
    ``[target value, control values...]``."""
    labels, sets = [], []
    for _, g in matches.groupby("set", sort=True):
        target = v.loc[g["target"].iloc[0]]
        controls = v.loc[g["control"]].dropna().to_numpy()
        if np.isfinite(target) and len(controls):
            labels.append(g["target"].iloc[0])
            sets.append(np.concatenate([[target], controls]))
    return labels, sets


def _values(values, matches: pd.DataFrame) -> pd.DataFrame:
    _check_matches(matches)
    frame = values.to_frame() if isinstance(values, pd.Series) else values
    if not isinstance(frame, pd.DataFrame):
        raise InputError(f"values must be a Series or DataFrame, got {type(values).__name__}")
    labels = pd.Index(pd.unique(pd.concat([matches["target"], matches["control"]])))
    absent = labels.difference(frame.index)
    if len(absent):
        raise InputError(f"values has no row for {len(absent)} matched label(s), e.g. {list(absent[:3])}")
    return frame


def matched_differences(values, matches: pd.DataFrame) -> pd.DataFrame:
    """Per target (index) and measure (columns): its value minus the mean of its controls' values
    (NaN where the target or all its controls lack a value)."""
    frame = _values(values, matches)
    out = {}
    for col in frame.columns:
        labels, sets = _sets(frame[col].astype(float), matches)
        out[col] = pd.Series([s[0] - s[1:].mean() for s in sets], index=labels, dtype=float)
    targets = pd.Index(matches.drop_duplicates("set")["target"], name="target")
    return pd.DataFrame(out).reindex(targets)


def compare_matched(values, matches: pd.DataFrame, *, by: str | Sequence[str] | None = None, n_boot: int = 2000,
                    n_perm: int = 9999, seed: int = 0, ci: float = 0.95,
                    alternative: str = "two-sided") -> pd.DataFrame:
    """Targets against their matched controls, for every measure in ``values``.

    ``values``: a Series (one measure) or a DataFrame (one column per
    measure, e.g. per ranker), indexed by the labels in ``matches``
    (:func:`matched_controls`). ``by``: columns of ``matches`` (its ``exact``
    strata, e.g. ``"model"``) to compare within each group separately. One
    row per (group and) measure: the ``by`` columns, ``measure``, ``n_sets``,
    ``n_controls``, ``mean_target``, ``mean_control`` (mean over sets of the
    mean of each set's controls), ``diff`` (their difference: the mean over
    sets of target minus its controls' mean), ``low``/``high`` (percentile
    bootstrap interval of ``diff``, sets resampled with their controls),
    ``p`` (within-set permutation test) and ``cohens_d`` (targets against
    all controls). Sets whose target or every control lacks a value are left
    out for that measure; a measure with no set left is skipped.
    """
    frame = _values(values, matches)
    by = [by] if isinstance(by, str) else list(by or [])
    missing = [c for c in by if c not in matches.columns]
    if missing:
        raise InputError(f"matches has no column {missing}: `by` names strata given to matched_controls(exact=...)")
    groups = matches.groupby(by, sort=False) if by else [((), matches)]
    rows = []
    for key, part in groups:
        key = key if isinstance(key, tuple) else (key,)
        for col in frame.columns:
            _, sets = _sets(frame[col].astype(float), part)
            if not sets:
                continue
            d = np.array([s[0] - s[1:].mean() for s in sets])
            boot = (bootstrap_ci(np.mean, d, n_boot=n_boot, seed=seed, ci=ci, vectorized=True) if len(d) > 1
                    else None)
            perm = matched_permutation_test(sets, n_perm=n_perm, seed=seed, alternative=alternative)
            rows.append({**dict(zip(by, key)), "measure": col, "n_sets": len(sets),
                         "n_controls": int(sum(len(s) - 1 for s in sets)),
                         "mean_target": float(np.mean([s[0] for s in sets])),
                         "mean_control": float(np.mean([s[1:].mean() for s in sets])),
                         "diff": float(d.mean()), "low": boot.low if boot else np.nan,
                         "high": boot.high if boot else np.nan, "p": perm.pvalue, "cohens_d": perm.cohens_d})
    if not rows:
        raise InputError("no set has a target value and a control value for any measure")
    out = pd.DataFrame(rows)
    out.attrs = {"n_boot": n_boot, "n_perm": n_perm, "seed": seed, "ci": ci, "alternative": alternative}
    return out


def rank_gaps(wide: pd.DataFrame, human: str = "human") -> pd.DataFrame:
    """Per item and ranker: the ranker's rank minus the human rank (1 = best, ties averaged).

    ``wide``: index = item, a ``human`` column and one column per ranker
    (:func:`rmlib.stats.elo.elo_wide`); items with a missing score are left
    out. Positive: the ranker puts the item further down than people do. The
    paper's Fig. 5B plots the median of these ranks over models (and people)
    minus the human rank, for the items where it is most extreme.
    """
    if not isinstance(wide, pd.DataFrame) or human not in wide.columns or wide.shape[1] < 2:
        raise InputError(f"wide must have a {human!r} column and at least one ranker column")
    r = wide.dropna().rank(ascending=False, method="average")
    return r.drop(columns=human).sub(r[human], axis=0)


def percentile_ranks(table: pd.DataFrame, score: str = "score", by: Sequence[str] = ("model", "prompt")) -> pd.Series:
    """Each row's score as a percentile within its group (``by``): 100 x the share of the group's scores
    at or below it, ties averaged (``rank(pct=True)``); 100 = the group's best."""
    by = [c for c in by if c in table.columns]
    if score not in table.columns:
        raise InputError(f"table has no score column {score!r}")
    g = table.groupby(by, sort=False)[score] if by else table[score]
    return (g.rank(method="average", pct=True) * 100).rename("percentile")


def token_frame(long: pd.DataFrame, frequencies, *, targets, exclude=(), across: Sequence[str] = ("prompt",),
                score: str = "score") -> pd.DataFrame:
    """Score tables of many models as one row per (model, token) with the covariates token matching needs.

    ``long``: columns ``model, token_id, decoded`` and ``score`` plus the
    ``across`` columns (a long table of :func:`rmlib.runs.scoring.score_models`;
    a (model, token, across) row listed twice is kept once). Each score becomes
    a percentile within its (model, across) group (:func:`percentile_ranks`),
    and the percentiles are spread to one column per ``across`` value (values
    of several columns joined with ``" | "``). Per token: ``model``,
    ``token_id``, ``decoded``, ``key`` (decoded text lower-cased and stripped
    of white space), ``log_freq`` (of ``key``; ``frequencies`` as in
    :func:`text_covariates`), ``target`` (``key`` is one of ``targets``) and
    ``candidate`` (a possible control: ``key`` is alphabetic, has a
    frequency, is neither a target nor in ``exclude``, and the token has a
    score under every ``across`` value). Index: the
    string ``"<model>|<token_id>"``. ``attrs["measures"]``: the percentile
    columns.
    """
    across = list(across)
    need = ["model", "token_id", "decoded", score] + across
    missing = [c for c in need if c not in long.columns]
    if missing:
        raise InputError(f"long lacks columns {missing}; it has {list(long.columns)}")
    long = long.drop_duplicates(["model", "token_id"] + across).reset_index(drop=True)
    pct = percentile_ranks(long, score=score, by=["model"] + across)
    if across:  # the across values joined with " | ", column by column (a row-wise join is slow at 100k rows)
        parts = [long[c].astype(str) for c in across]
        column = parts[0].str.cat(parts[1:], sep=" | ") if len(parts) > 1 else parts[0]
    else:
        column = pd.Series("percentile", index=long.index)
    wide = (long[["model", "token_id"]].assign(column=column.to_numpy(), value=pct.to_numpy())
            .pivot_table(index=["model", "token_id"], columns="column", values="value", aggfunc="first", sort=False))
    measures = list(dict.fromkeys(column))
    tokens = long.drop_duplicates(["model", "token_id"]).set_index(["model", "token_id"])["decoded"]
    out = wide.reindex(columns=measures).join(tokens).reset_index()
    out["key"] = out["decoded"].astype(str).str.lower().str.strip()
    logf = _log_frequencies(frequencies, [k for k in out["key"] if k.isalpha()])
    out["log_freq"] = out["key"].map(logf).astype(float)
    target_keys, excluded = {str(t).lower() for t in targets}, {str(t).lower() for t in exclude}
    out["target"] = out["key"].isin(target_keys)
    out["candidate"] = (out["key"].str.isalpha() & out["log_freq"].notna() & ~out["target"]
                        & ~out["key"].isin(excluded) & out[measures].notna().all(axis=1))
    out.index = pd.Index(out["model"].astype(str) + "|" + out["token_id"].astype(str), name="token")
    out = out[["model", "token_id", "decoded", "key", "log_freq", "target", "candidate"] + measures]
    out.attrs = {"measures": measures}
    return out
