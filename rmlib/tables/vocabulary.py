"""Join several single-model score tables on a shared vocabulary.

Different tokenizers share many decoded strings ("Love", " love", ...).
:func:`shared_vocabulary` keys every table by its decoded string (optionally
normalised), keeps the strings scored by every table and returns one wide
table (index = string, one column per model), which is what the rank
agreement and moment statistics take.

Duplicates
----------
Within one vocabulary several token ids can decode to the same string (byte
fallback tokens decoding to U+FFFD, added tokens duplicating normal ones...),
and normalisation creates more (``"Love"`` and ``"love"`` under ``"lower"``).
One string then has several scores in one model. The rule is a parameter:

* ``duplicates="drop"`` (default; what the paper did in
  ``identify_duplicate_encodings`` / ``generate_figure_2.py`` /
  ``generate_table_3.py``): a string duplicated in *any* table is removed
  from the shared vocabulary altogether;
* ``"max"`` / ``"mean"`` / ``"first"``: collapse each string's scores in a
  table to their maximum / mean / the first row (table order).

Missing scores (NaN) are dropped before anything else, as the paper did.
The per-model counts are returned by :func:`duplicate_report` and attached
to the wide table as ``attrs["duplicates"]`` (a plain dict).
"""

from __future__ import annotations

import unicodedata
from collections.abc import Callable, Mapping

import pandas as pd
from ..errors import InputError

DUPLICATE_RULES = ("drop", "max", "mean", "first")

_NORMALIZERS: dict[str, Callable[[str], str]] = {
    "strip": str.strip,
    "lower": str.lower,
    "strip_lower": lambda s: s.strip().lower(),
    "nfkc": lambda s: unicodedata.normalize("NFKC", s),
    "nfkc_strip_lower": lambda s: unicodedata.normalize("NFKC", s).strip().lower(),
}


def _normalizer(normalize) -> Callable[[str], str] | None:
    if normalize is None or callable(normalize):
        return normalize
    try:
        return _NORMALIZERS[normalize]
    except KeyError:
        raise InputError(
            f"normalize must be None, a callable or one of {sorted(_NORMALIZERS)}, got {normalize!r}"
        ) from None


def _keyed(table: pd.DataFrame, name, key: str, value: str, norm) -> pd.DataFrame:
    missing = [c for c in (key, value) if c not in table.columns]
    if missing:
        raise KeyError(f"table {name!r} lacks columns {missing} (has {list(table.columns)})")
    df = table[[key, value]].dropna(subset=[value])
    keys = df[key].astype(str)
    if norm is not None:
        keys = keys.map(norm)
    return pd.DataFrame({"key": keys.to_numpy(), "score": df[value].to_numpy(dtype=float)})


def duplicate_report(tables: Mapping[str, pd.DataFrame], key: str = "decoded",
                     value: str = "score", normalize=None) -> pd.DataFrame:
    """Per table: rows with a score, distinct strings, strings that occur
    more than once (``n_duplicate_strings``) and the rows those strings
    cover (``n_duplicate_rows``), after normalisation."""
    norm = _normalizer(normalize)
    rows = {}
    for name, table in tables.items():
        k = _keyed(table, name, key, value, norm)["key"]
        counts = k.value_counts()
        dup = counts[counts > 1]
        rows[name] = {
            "n_rows": int(len(k)),
            "n_strings": int(len(counts)),
            "n_duplicate_strings": int(len(dup)),
            "n_duplicate_rows": int(dup.sum()),
        }
    out = pd.DataFrame.from_dict(rows, orient="index")
    out.index.name = "model"
    return out


def shared_vocabulary(tables: Mapping[str, pd.DataFrame], key: str = "decoded",
                      value: str = "score", normalize=None,
                      duplicates: str = "drop", how: str = "inner") -> pd.DataFrame:
    """Wide table of the strings that every table scored (``how="outer"``: that any table scored).

    ``tables``: name (column of the result, e.g. a hub id) -> score table
    with columns ``key`` (default ``decoded``) and ``value`` (``score``).
    ``normalize``: None (exact strings, as the paper), ``"strip"``,
    ``"lower"``, ``"strip_lower"``, ``"nfkc"``, ``"nfkc_strip_lower"`` or a
    callable ``str -> str``. ``duplicates``: see the module docstring.
    ``how="outer"`` keeps every string some table scored, NaN where a table
    did not; ``"drop"`` then removes a duplicated string only from the
    tables that duplicate it, so that each pair of columns holds the
    strings both scored once (what a pairwise statistic such as
    :func:`rmlib.stats.rank_agreement` needs).

    Returns a DataFrame indexed by the (normalised) string, sorted, one
    float column per table. ``attrs``: ``duplicates`` (the
    :func:`duplicate_report` as a dict), ``duplicate_rule``, ``normalize``,
    ``n_dropped_duplicates`` (shared strings removed by the ``"drop"``
    rule).
    """
    if duplicates not in DUPLICATE_RULES:
        raise InputError(f"duplicates must be one of {DUPLICATE_RULES}, got {duplicates!r}")
    if how not in ("inner", "outer"):
        raise InputError(f"how must be 'inner' (strings every table scored) or 'outer' (any table), got {how!r}")
    if len(tables) == 0:
        raise InputError("no tables given")
    norm = _normalizer(normalize)
    keyed = {name: _keyed(t, name, key, value, norm) for name, t in tables.items()}
    shared = None
    dup_any: set[str] = set()
    for k in keyed.values():
        strings = set(k["key"])
        shared = strings if shared is None else (shared & strings if how == "inner" else shared | strings)
        dup_any |= set(k["key"][k["key"].duplicated()])
    n_dropped = 0
    if duplicates == "drop" and how == "inner":
        n_dropped = len(shared & dup_any)
        shared = shared - dup_any
    index = pd.Index(sorted(shared), name=key)
    cols = {}
    for name, k in keyed.items():
        k = k[k["key"].isin(shared)]
        if duplicates == "drop" and how == "outer":  # only this table's duplicated strings leave its column
            dup = k["key"].duplicated(keep=False)
            n_dropped += int(k.loc[dup, "key"].nunique())
            k = k[~dup]
        if duplicates in ("drop", "first"):
            s = k.drop_duplicates("key", keep="first").set_index("key")["score"]
        else:
            s = k.groupby("key", sort=False)["score"].agg(duplicates)
        cols[name] = s.reindex(index)
    wide = pd.DataFrame(cols, index=index)
    wide.attrs["duplicates"] = duplicate_report(tables, key, value, normalize).to_dict("index")
    wide.attrs["duplicate_rule"] = duplicates
    wide.attrs["normalize"] = normalize if normalize is None or isinstance(normalize, str) else repr(normalize)
    wide.attrs["n_dropped_duplicates"] = n_dropped
    wide.attrs["how"] = how
    return wide


__all__ = ["DUPLICATE_RULES", "duplicate_report", "shared_vocabulary"]
