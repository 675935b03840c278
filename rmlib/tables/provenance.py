"""Where a page's scores come from, from the ``attrs["provenance"]`` of its score tables.

:func:`provenance_table` gives one compact row per model (model id, revision,
scorer, mode, dtype, where the answer sits in the chat template, items scored
per prompt, rmlib version): the one provenance table a chapter shows.
:func:`score_kind` names what made the scores in words, for chart titles.
"""

from __future__ import annotations

from collections.abc import Mapping

import pandas as pd

__all__ = ["SCORER_WORDS", "provenance_table", "score_kind"]

#: How a page names each scorer kind of :mod:`rmlib.engine.scorers`.
SCORER_WORDS = {"logprob": "language model log-probability", "classifier": "reward model score"}

#: What stands for the scored answer between the template's text before and after it.
ANSWER = "⟨answer⟩"


def _rows(long: pd.DataFrame) -> pd.DataFrame:
    """The provenance rows of one table, with the items each (model, prompt) holds."""
    prov = pd.DataFrame(long.attrs.get("provenance") or [])
    if prov.empty:
        raise ValueError("the table has no attrs['provenance']: pass a table made by rmlib "
                         "(results.score_models, followup.live_scores, ...)")
    if "items" not in prov.columns:  # score_models: one provenance dict per (model, prompt) table, in table order
        sizes = long.groupby(["model", "prompt"], sort=False).size().to_numpy()
        if len(sizes) != len(prov):
            raise ValueError(f"{len(prov)} provenance rows for {len(sizes)} (model, prompt) tables: "
                             "the table was filtered or joined after scoring; pass it as scored")
        prov["items"] = sizes
    return prov


def _answer(row: Mapping) -> str:
    """The last line of the template's text before the answer, the answer, and the text after it."""
    before, after = row.get("prefix_text"), row.get("suffix_text")
    if not isinstance(before, str):
        return ""
    lines = before.split("\n")
    last = lines[-1] if lines[-1] or len(lines) == 1 else lines[-2] + "\n"
    return last + ANSWER + (after if isinstance(after, str) else "")


def provenance_table(tables: Mapping[str, pd.DataFrame]) -> pd.DataFrame:
    """One row per model of the score tables ``tables`` (label -> a table with ``attrs["provenance"]``,
    e.g. ``{"tokens": long, "Big Two nouns": words}``), a model scored in several tables once.

    Columns ``model_id``, ``revision``, ``scorer`` (``scorer, mode, dtype``:
    ``classifier`` is a reward model's scalar, ``logprob`` a language model's
    log-probability; ``token`` or ``paper`` mode), ``answer in template``
    (the end of the template's text before the answer, :data:`ANSWER`, the
    text after it), ``scored per prompt`` (per table: its label and the items
    scored under each prompt, in order) and ``rmlib`` (the library version
    that scored them). A field no table recorded is empty.
    """
    frames = [_rows(long).assign(table=label) for label, long in tables.items()]
    prov = pd.concat(frames, ignore_index=True)
    rows = []
    for model_id, g in prov.groupby("model_id", sort=False):
        first = {c: next((str(v) for v in g[c] if isinstance(v, str) and v), "") if c in g else ""
                 for c in ("revision", "scorer", "mode", "dtype", "rmlib_version")}
        answer = next((a for a in (_answer(r) for r in g.to_dict("records")) if a), "")
        scored = "; ".join(f"{label}: " + " / ".join(f"{int(n):,}" for n in t["items"])
                           for label, t in g.groupby("table", sort=False))
        rows.append({"model_id": model_id, "revision": first["revision"],
                     "scorer": ", ".join(v for v in (first["scorer"], first["mode"], first["dtype"]) if v),
                     "answer in template": answer, "scored per prompt": scored, "rmlib": first["rmlib_version"]})
    return pd.DataFrame(rows, columns=["model_id", "revision", "scorer", "answer in template", "scored per prompt",
                                       "rmlib"])


def score_kind(long: pd.DataFrame) -> str:
    """What made a long table's scores, for a chart title: ``"reward model score"``, ``"language model
    log-probability"`` or both joined by ``" and "``; ``"(RMs trained here)"`` after the reward model
    score when a ``trained:`` model made them, ``"(random test models)"`` for ``tiny:``/``random:`` ones."""
    prov = pd.DataFrame(long.attrs.get("provenance") or [])
    if prov.empty:
        return "scores"
    ids = prov["model_id"].astype(str)
    kinds = [SCORER_WORDS.get(k, str(k)) for k in dict.fromkeys(prov["scorer"])]
    if ids.str.startswith("trained:").any():
        kinds = [k + " (RMs trained here)" if k == SCORER_WORDS["classifier"] else k for k in kinds]
    return " and ".join(kinds) + (" (random test models)" if ids.str.startswith(("tiny:", "random:")).any() else "")
