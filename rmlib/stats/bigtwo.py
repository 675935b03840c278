"""Agency vs communion ("the Big Two") in reward-model scores.

Do reward models prefer agentic words (achievement, independence,
competence) or communal ones (friendship, kindness, cooperation)? The
follow-up claim to test: Llama-based reward models prefer agency,
Gemma-based ones communion.

Word lists (every function takes them: statistics read no file). rmlib's lists
(:func:`rmlib.tables.lexicons.bigtwo_lists`: ``rmlib/resources/bigtwo/agency.txt``,
``communion.txt``) are small lists the rmlib authors derived from Princeton
WordNet 3.0 (seed senses named in ``tools/build_bigtwo_lists.py``, see the
README there); they are *not* the validated Big Two dictionaries of
Pietraszkiewicz et al. (2019), whose licence we could not establish. Users
who have those (or any LIWC-style dictionary) pass them with
:func:`rmlib.tables.lexicons.read_dictionary`; patterns ending in ``*`` match any string with that
prefix, as in LIWC.

Matching: the table's strings (``decoded`` for token tables, the index for
wide tables such as EloEverything items) are lower-cased and stripped and
must match a pattern as a whole; a string matching both dimensions is left
out. With ``aggregate=True`` (default) the scores of strings that normalize
to the same word (``"Love"``, ``" love"``) are averaged first, so that each
word counts once.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd

from rmlib import registry
from rmlib.stats.lexical import iter_tables, normalize_strings
from rmlib.stats.resampling import cohens_d, permutation_test
from rmlib.options import BIGTWO_DIMENSIONS as DIMENSIONS
from ..errors import InputError

def classify(strings, lists: Mapping[str, list[str]], *, strip: bool = True) -> pd.Series:
    """Dimension of each string: ``"agency"``, ``"communion"``, ``"both"`` or NaN, by ``lists``
    (``{"agency": patterns, "communion": patterns}``, as :func:`rmlib.tables.lexicons.bigtwo_lists` reads them).

    Strings are lower-cased (and stripped); a pattern ``prefix*`` matches
    any string starting with ``prefix``, any other pattern the whole string.
    """
    exact, prefixes = {}, {}
    for dim in DIMENSIONS:
        if dim not in lists:
            raise InputError(f"lists needs keys {DIMENSIONS}; got {list(lists)} (see bigtwo_lists)")
        pats = [p for p in lists[dim] if p]
        exact[dim] = {p for p in pats if not p.endswith("*")}
        prefixes[dim] = {p[:-1] for p in pats if p.endswith("*")}
    keys = normalize_strings(strings, strip)

    def dim_of(s):
        if not isinstance(s, str) or not s:
            return None
        found = [d for d in DIMENSIONS
                 if s in exact[d] or any(s[:k] in prefixes[d] for k in range(1, len(s) + 1))]
        return found[0] if len(found) == 1 else ("both" if found else None)

    index = strings.index if isinstance(strings, pd.Series) else None
    return pd.Series([dim_of(s) for s in keys], index=index, dtype="object")


# --------------------------------------------------------------------------
# Scores
# --------------------------------------------------------------------------


def hedges_g(a, b) -> float:
    """Hedges' g of ``a`` minus ``b``: Cohen's d times ``1 - 3 / (4 (na + nb) - 9)``."""
    na, nb = len(a), len(b)
    return cohens_d(a, b) * (1 - 3 / (4 * (na + nb) - 9))


def _compare(words: pd.DataFrame, n_perm: int, seed) -> dict:
    a = words.loc[words["dimension"] == "agency", "score"].to_numpy(float)
    c = words.loc[words["dimension"] == "communion", "score"].to_numpy(float)
    row = {"n_agency": len(a), "n_communion": len(c),
           "mean_agency": a.mean() if len(a) else np.nan,
           "mean_communion": c.mean() if len(c) else np.nan}
    row["diff"] = row["mean_agency"] - row["mean_communion"]
    if len(a) >= 2 and len(c) >= 2:
        res = permutation_test(a, c, n_perm=n_perm, seed=seed)
        row.update(cohens_d=res.cohens_d, hedges_g=hedges_g(a, c), p=res.pvalue)
    else:
        row.update(cohens_d=np.nan, hedges_g=np.nan, p=np.nan)
    row["prefers"] = "agency" if row["diff"] > 0 else ("communion" if row["diff"] < 0 else None)
    return row


def _matched(strings: pd.Series, scores: pd.Series, lists, strip: bool, aggregate: bool) -> pd.DataFrame:
    df = pd.DataFrame({"word": normalize_strings(strings.to_numpy(), strip).to_numpy(),
                       "dimension": classify(strings.to_numpy(), lists, strip=strip).to_numpy(),
                       "score": pd.to_numeric(scores, errors="coerce").to_numpy()})
    df = df[df["dimension"].isin(DIMENSIONS)].dropna(subset=["score"])
    if aggregate:
        df = df.groupby(["word", "dimension"], as_index=False)["score"].mean()
    return df


def _col(table: pd.DataFrame, col):
    if col not in table.columns:
        raise InputError(f"table has no column {col!r} (columns: {list(table.columns)})")
    return table[col]


def bigtwo_scores(
    scores,
    lists: Mapping[str, list[str]],
    *,
    on: str | None = "decoded",
    score: str = "score",
    strip: bool = True,
    aggregate: bool = True,
    n_perm: int = 9999,
    seed: int | None = 0,
) -> pd.DataFrame:
    """Mean score of agentic vs communal words, per model (and prompt).

    ``scores`` is one of

    * a wide table (index = item, one column per model or ranker, e.g.
      ``elo.elo_wide(paper_release.eloeverything(...))``): pass ``on=None``;
      one row per column, ``prompt`` from ``attrs["prompt"]``;
    * a score table (``decoded``, ``score``): one row;
    * a mapping ``{(model, prompt): score_table}`` or ``{model: table}``.

    Columns: ``model, prompt, n_agency, n_communion, mean_agency,
    mean_communion, diff`` (agency minus communion), ``cohens_d``,
    ``hedges_g`` (both agency minus communion, pooled SD), ``p`` (two-sided
    permutation test of the mean difference, ``resampling.permutation_test``
    with ``n_perm`` relabelings), ``prefers``.
    """
    rows = []
    if isinstance(scores, pd.DataFrame) and on is None:
        strings = scores.index.to_series()
        for col in scores.columns:
            if not pd.api.types.is_numeric_dtype(scores[col]):
                continue
            words = _matched(strings, scores[col], lists, strip, aggregate)
            rows.append({"model": col, "prompt": scores.attrs.get("prompt"), **_compare(words, n_perm, seed)})
    else:
        for model, prompt, table in iter_tables(scores):
            words = _matched(_col(table, on), _col(table, score), lists, strip, aggregate)
            rows.append({"model": model, "prompt": prompt, **_compare(words, n_perm, seed)})
    if not rows:
        raise InputError("no numeric score columns or tables to compare")
    return pd.DataFrame(rows)


def family_of(model) -> str | None:
    """Base-model family of a model named by hub id or paper nickname (registry), else None."""
    if not isinstance(model, str):
        return None
    entry = registry.lookup(model)
    return entry["family"] if entry else None


def family_summary(results: pd.DataFrame, *, alpha: float = 0.05,
                   families: Mapping[str, str] | None = None) -> pd.DataFrame:
    """Agency vs communion preference per base-model family.

    ``results`` from :func:`bigtwo_scores`; models are mapped to families
    with the registry (``paper_models()`` ``family`` column); rows whose
    model is not in the registry (e.g. ``human``) form their own group
    named after the model. Per family and prompt: ``n_models``,
    ``mean_g`` (Hedges' g, agency minus communion), ``n_prefer_agency``,
    ``n_prefer_communion``, ``n_sig_agency`` / ``n_sig_communion``
    (p < alpha in that direction) and ``models``. The paper's claim holds
    when Llama families show agency and Gemma families communion.

    ``families`` maps model names to families for models the registry does
    not know (language models such as ``google/gemma-3-270m``); it is
    consulted before the registry.
    """
    need = {"model", "prompt", "hedges_g", "diff", "p"}
    if not need <= set(results.columns):
        raise InputError(f"results needs columns {sorted(need)} (output of bigtwo_scores)")
    r = results.copy()
    if families is not None and not isinstance(families, Mapping):
        raise TypeError(f"families must be a mapping {{model: family}}, got {type(families).__name__}")
    given = dict(families or {})
    r["family"] = [given.get(m) or family_of(m) or str(m) for m in r["model"]]
    r["prompt"] = r["prompt"].astype("object").where(r["prompt"].notna(), "")
    sig = r["p"] < alpha
    r["_ag"] = r["diff"] > 0
    r["_co"] = r["diff"] < 0
    r["_sag"] = sig & r["_ag"]
    r["_sco"] = sig & r["_co"]
    g = r.groupby(["family", "prompt"], sort=False)
    out = pd.DataFrame({
        "n_models": g.size(),
        "mean_g": g["hedges_g"].mean(),
        "n_prefer_agency": g["_ag"].sum().astype(int),
        "n_prefer_communion": g["_co"].sum().astype(int),
        "n_sig_agency": g["_sag"].sum().astype(int),
        "n_sig_communion": g["_sco"].sum().astype(int),
        "models": g["model"].agg(lambda s: ", ".join(map(str, s))),
    })
    return out.reset_index()


__all__ = [
    "DIMENSIONS",
    "bigtwo_scores",
    "classify",
    "family_of",
    "family_summary",
    "hedges_g",
]
