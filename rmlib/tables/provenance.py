"""Which scorer and which data made a page's numbers: one compact table.

Score tables carry their provenance in ``attrs["provenance"]``: a list of
dicts, one per scored (model, prompt) table (:func:`rmlib.runs.scoring.score_models`,
:func:`rmlib.runs.scoring.live_scores`) or one per released file read
(:func:`rmlib.tables.followup.scores`, ``value_word_scores``). Where no table
holds them (a page that searches rather than scores a table), the dicts
themselves will do: ``[scorer.provenance(prompt, "token") for prompt in prompts]``.
:func:`provenance_table` folds them into one row per model scored here and
one row per released source, so that a chapter states its scorers once, in
one table. :func:`score_kind` names what made a table's scores in words, for
chart titles.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping

import pandas as pd

from ..errors import InputError

__all__ = ["ANSWER", "COLUMNS", "SCORER_WORDS", "provenance_table", "score_kind", "template_fingerprint"]

#: The columns of :func:`provenance_table`, in order.
COLUMNS = ("data", "model", "revision", "scorer", "answer in template", "prompts", "items", "source")
MISSING = "–"
#: What stands for the scored answer between the template's text before and after it.
ANSWER = "⟨answer⟩"
#: How a page names each scorer kind of :mod:`rmlib.engine.scorers` (no parentheses: see :func:`score_kind`).
SCORER_WORDS = {"logprob": "language model log-probability", "classifier": "reward model score",
                "implicit": "implicit reward: log p_model − log p_reference"}
_RAW_GITHUB = re.compile(r"https://raw\.githubusercontent\.com/([^/]+/[^/]+)/([0-9a-f]{7,40})/")


def template_fingerprint(template: str | None) -> str:
    """A short, stable name for a chat template: the first 10 hex digits of its SHA-256 (``–`` for none)."""
    if not isinstance(template, str) or not template:
        return MISSING
    return "sha256:" + hashlib.sha256(template.encode("utf-8")).hexdigest()[:10]


def _answer(entry: Mapping) -> str:
    """Where the answer sits: the last line of the template's text before it, :data:`ANSWER`, the text
    after it; without those texts, :func:`template_fingerprint` of the chat template."""
    before, after = entry.get("prefix_text"), entry.get("suffix_text")
    if not isinstance(before, str):
        return template_fingerprint(entry.get("chat_template"))
    lines = before.split("\n")
    last = lines[-1] if lines[-1] or len(lines) == 1 else lines[-2] + "\n"
    return last + ANSWER + (after if isinstance(after, str) else "")


def _entries(table) -> list[dict]:
    """The provenance dicts of a score table (``attrs["provenance"]``), or the dicts themselves."""
    if isinstance(table, Mapping) or (isinstance(table, (list, tuple)) and all(isinstance(e, Mapping) for e in table)):
        entries = table
        if not len(entries):
            raise InputError("an empty list of provenance dicts: give one per scored prompt")
        return [dict(entries)] if isinstance(entries, Mapping) else [dict(e) for e in entries]
    if not isinstance(table, pd.DataFrame):
        raise InputError(f"provenance_table takes score tables (DataFrames) or lists of provenance dicts, "
                         f"got {type(table).__name__}")
    entries = table.attrs.get("provenance")
    if entries is None:
        raise InputError("the table has no attrs['provenance']: pass the table a loader or score_models returned, "
                         "before any step that drops its attrs")
    return [entries] if isinstance(entries, dict) else list(entries)


def _rows_of(table: pd.DataFrame, names: set) -> pd.DataFrame | None:
    """The rows of ``table`` for the model known by any of ``names`` (its spec, id or label)."""
    if not {"model", "prompt"} <= set(table.columns):
        return None
    rows = table[table["model"].astype(str).isin(names)]
    return rows if len(rows) else None


def _source(url: str) -> str:
    m = _RAW_GITHUB.match(url or "")
    return f"{m.group(1)}@{m.group(2)[:7]}" if m else (url or MISSING)


def provenance_table(tables: Mapping[str, pd.DataFrame]) -> pd.DataFrame:
    """One row per model scored here and one per released source, from the tables' provenance.

    ``tables``: ``{what the data are: table}``, e.g. ``{"tokens, scored here": long,
    "value words, released": released}``; the key fills the ``data`` column. A
    value may also be a list of provenance dicts (``scorer.provenance(prompt,
    mode)``, one per prompt) where no score table holds them.
    Scored here (entries with a ``revision``): ``model`` (id), ``revision``,
    ``scorer`` (the scorer, scoring mode and dtype, in one cell: ``classifier``
    is a reward model's scalar, ``logprob`` a language model's
    log-probability, ``implicit`` the difference of two language models'
    log-probabilities, then "minus" and the reference model), ``answer in template`` (the end of the template's text
    before the answer, :data:`ANSWER`, the text after it), ``prompts`` (how
    many), ``items`` (tokens or texts per prompt, the most), and in
    ``source`` the rmlib version. Released files (entries with a
    ``source`` URL and no revision): one row per repository and commit, with
    the number of models, prompts and items in the table and how the files
    were checked. An empty table adds no row; missing values are ``–``.
    Columns :data:`COLUMNS`.
    """
    if not isinstance(tables, Mapping) or not tables:
        raise InputError("provenance_table takes {what the data are: table}, with at least one table")
    rows = []
    for what, table in tables.items():
        if isinstance(table, pd.DataFrame) and table.empty:
            continue
        entries = _entries(table)
        if not isinstance(table, pd.DataFrame):
            table = pd.DataFrame()
        scored = pd.DataFrame([e for e in entries if "revision" in e])
        for model_id, g in (scored.groupby("model_id", sort=False) if len(scored) else []):
            first = g.iloc[0]
            names = {str(model_id), *(str(v) for c in ("spec", "column") if c in g for v in g[c].dropna())}
            how = [first.get(k) for k in ("scorer", "mode", "dtype")]
            reference = first.get("reference_model_id")
            if isinstance(reference, str) and reference:
                how.append(f"minus {reference}")
            version = first.get("rmlib_version")
            mine = _rows_of(table, names)
            rows.append({
                "data": what, "model": model_id, "revision": first.get("revision"),
                "scorer": ", ".join(str(h) for h in how if isinstance(h, str) and h) or None,
                "answer in template": _answer(first),
                "prompts": g["prompt"].nunique() if "prompt" in g else None if mine is None else mine["prompt"].nunique(),
                "items": g["items"].max() if "items" in g else None if mine is None else int(
                    mine.groupby("prompt", observed=True).size().max()),
                "source": "scored on this machine" + (f", rmlib {version}" if isinstance(version, str) else "")})
        released = {}
        for e in entries:
            if "revision" not in e and "source" in e:
                r = released.setdefault(_source(e["source"]), {"models": set(), "files": 0, "sha256": True,
                                                               "by": e.get("scored_by", "released")})
                r["models"].add(e.get("model_id"))
                r["files"] += 1
                r["sha256"] &= bool(e.get("sha256"))
        words = "word" if "word" in table.columns else "decoded" if "decoded" in table.columns else None
        for source, r in released.items():
            rows.append({
                "data": what, "model": f"{len(r['models'])} models", "scorer": r["by"],
                "prompts": table["prompt"].nunique() if "prompt" in table.columns else None,
                "items": table[words].nunique() if words else None,
                "source": f"{source} ({r['files']} files" + (", SHA-256 checked)" if r["sha256"] else ")")})
    out = pd.DataFrame(rows, columns=list(COLUMNS)).astype(object)
    return out.where(out.notna(), MISSING)


def score_kind(long) -> str:
    """What made a long table's scores, in words without parentheses, so that a chapter may put them in
    its own (a title such as ``f"Optimal tokens ({kind})"``): ``"reward model score"``, ``"language
    model log-probability"`` or both joined by ``" and "``; ``", RMs trained here"`` after the reward
    model score when a ``trained:`` model made them (``"reward model score, RMs trained here"``), and
    ``", random test models"`` at the end for ``tiny:``/``random:`` ones.
    ``long``: a score table with ``attrs["provenance"]``, or a list of provenance dicts."""
    if isinstance(long, pd.DataFrame):
        entries = long.attrs.get("provenance") or []
        entries = [entries] if isinstance(entries, Mapping) else entries
    else:
        entries = _entries(long)
    prov = pd.DataFrame(entries)
    if prov.empty or "scorer" not in prov:
        return "scores"
    ids = prov["model_id"].astype(str)
    kinds = [SCORER_WORDS.get(k, str(k)) for k in dict.fromkeys(prov["scorer"])]
    if ids.str.startswith("trained:").any():
        kinds = [k + ", RMs trained here" if k == SCORER_WORDS["classifier"] else k for k in kinds]
    return " and ".join(kinds) + (", random test models" if ids.str.startswith(("tiny:", "random:")).any() else "")
