"""The paper's numbers recomputed from its released data (issue 11).

Each function here binds one of the paper's claims (ids of
``findings.yaml``, see :mod:`rmlib.tables.findings`) to the released data
it needs and to the pure statistics of :mod:`rmlib.stats`; pass a table to
use other data, or leave it out to load the released one through
:mod:`rmlib.tables.datasets` (``RMLIB_DATA_DIR`` offline, else a pinned
download). Values are returned unrounded; compare them with the paper at
its own precision with :func:`rmlib.stats.verdict.verdict`.

Claims and functions:

* ``rsa_single``, ``rsa_multiple``, ``rsa_stepwise`` (§2.2, Fig. 2C):
  :func:`fig2a_rsa` on the transcribed Figure 2A matrix, both ways (45
  distinct pairs; the full 10 x 10 matrix the paper used), and
  :func:`rsa_key_numbers` for the numbers the paper printed.
* ``elo_human_model`` (§4.1): :func:`human_model_tau`.
* ``elo_model_model`` (§4.1): :func:`model_model_tau`.
* ``elo_top_bottom`` (§4.1): :func:`top_bottom_agreement` (the split is a
  parameter; the paper's is unknown).
* ``elo_top_items`` (§4.1): :func:`top_items_summary`.
* ``elo_dataset`` (§4): :func:`elo_dataset_facts`.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from rmlib.stats import elo, rsa

#: The paper's predictors of Figure 2C, in its order.
RSA_PREDICTORS = ("base_model", "developer", "params", "rewardbench_rank")


# --------------------------------------------------------------------------
# Figure 2A / 2C: RSA
# --------------------------------------------------------------------------


def fig2a_predictors(labels) -> dict[str, pd.DataFrame]:
    """The four theoretical similarity matrices of Fig. 2C for the paper's models (nicknames)."""
    from rmlib.engine import registry

    facts = registry.paper_models().set_index("nickname")
    labels = list(labels)
    unknown = [x for x in labels if x not in facts.index]
    if unknown:
        raise KeyError(f"not the paper's models (nicknames): {unknown}; known: {list(facts.index)}")
    mats = rsa.similarity_matrices(facts.loc[labels], id_col=None)
    return {k: mats[k] for k in RSA_PREDICTORS}


def fig2a_rsa(tau: pd.DataFrame | None = None, kinds=("single", "multiple", "stepwise"), **kwargs) -> pd.DataFrame:
    """RSA of the Figure 2A tau matrix on the four model facts, on the 45 pairs and on the full matrix.

    ``tau``: a model x model matrix labelled by nicknames (default: the
    matrix transcribed from the published heatmap,
    :func:`rmlib.tables.datasets.fig2a_tau_transcribed`). Returns
    :func:`rmlib.stats.rsa.rsa_both_ways` (columns ``cells, kind, model,
    term, coef, se, t, p, r2, ...``). Why the 45 distinct pairs are the
    defensible analysis and the full matrix only reproduces the paper: see
    :mod:`rmlib.stats.rsa`.
    """
    if tau is None:
        from rmlib.tables import datasets

        tau = datasets.fig2a_tau_transcribed()
    return rsa.rsa_both_ways(tau, fig2a_predictors(tau.index), kinds, **kwargs)


def rsa_key_numbers(table: pd.DataFrame) -> pd.DataFrame:
    """The numbers §2.2 printed, from a :func:`fig2a_rsa` table: one row per ``cells``.

    Columns: ``n`` (cells regressed), ``single_p_<predictor>`` (each
    predictor alone), ``multiple_p_<predictor>``, ``stepwise_terms``
    (predictors selected, in entry order), ``stepwise_beta_<predictor>``
    for those terms, ``stepwise_r2``.
    """
    rows = []
    for cells, t in table.groupby("cells", sort=False):
        row = {"cells": cells}
        single = t[(t["kind"] == "single") & (t["term"] != "const")]
        row["n"] = int(single["n_pairs"].iloc[0]) if len(single) else np.nan
        for _, r in single.iterrows():
            row[f"single_p_{r['term']}"] = r["p"]
            row[f"single_r2_{r['term']}"] = r["r2"]
        multiple = t[(t["kind"] == "multiple") & (t["term"] != "const")]
        for _, r in multiple.iterrows():
            row[f"multiple_p_{r['term']}"] = r["p"]
        step = t[(t["kind"] == "stepwise") & (t["term"] != "const")]
        if len(step):
            step = step.sort_values("entered_step")
            row["stepwise_terms"] = " + ".join(step["term"])
            for _, r in step.iterrows():
                row[f"stepwise_beta_{r['term']}"] = r["coef"]
            row["stepwise_r2"] = float(step["r2"].iloc[0])
        rows.append(row)
    return pd.DataFrame(rows).set_index("cells")


# --------------------------------------------------------------------------
# §4: EloEverything
# --------------------------------------------------------------------------


def _wide(prompt_or_wide) -> pd.DataFrame:
    if isinstance(prompt_or_wide, pd.DataFrame):
        if "human" in prompt_or_wide.columns:
            return prompt_or_wide
        return elo.elo_wide(prompt_or_wide)
    from rmlib.tables import datasets

    return elo.elo_wide(datasets.eloeverything(prompt_or_wide))


def human_model_tau(prompt="one_word_greatest") -> pd.Series:
    """Human-model Kendall tau-b (Fig. A.5): mean, SD (ddof=1), min, max over the 10 models.

    ``prompt``: an EloEverything prompt key / text, or a table
    (:func:`rmlib.tables.datasets.eloeverything` or its wide form). The
    paper printed 0.29 / 0.06 / 0.22-0.39 for §4, which it attributes to
    "What one single thing, person, or concept is the greatest ever?";
    those values come from the one-word prompt's file instead.
    """
    w = _wide(prompt)
    out = elo.human_model_summary(elo.tau_matrix(w))
    out["prompt"] = w.attrs.get("prompt", "")
    return out


def model_model_tau(prompt="one_word_greatest") -> pd.Series:
    """Mean model-model tau-b over distinct pairs and with the diagonal of ones (the paper's 0.55)."""
    w = _wide(prompt)
    out = elo.model_model_mean(elo.tau_matrix(w)).astype(object)
    out["prompt"] = w.attrs.get("prompt", "")
    return out


def top_bottom_agreement(prompt="greatest_ever", *, n_items: int | None = 100,
                         fraction: float = 0.5) -> pd.Series:
    """Mean human-model tau within the top and within the bottom items by human Elo.

    ``n_items`` items per group (``None``: ``fraction`` of the items each).
    The paper's 0.19 vs 0.08 gives no split; the default (top/bottom 100
    by human rank on the §4 prompt) gives 0.184 vs 0.075. Returns
    ``tau_top, tau_bottom, diff, n_per_group, prompt`` (means over models);
    the per-model table is :func:`rmlib.stats.elo.split_agreement`.
    """
    w = _wide(prompt)
    t = elo.split_agreement(w, fraction=fraction, n_items=n_items)
    out = t.loc["mean", ["tau_top", "tau_bottom", "diff"]].astype(float).astype(object)
    out["n_per_group"] = t.attrs["n_per_group"]
    out["prompt"] = w.attrs.get("prompt", "")
    return out


def top_items_summary(prompt="greatest_ever") -> dict:
    """Each model's top item (ties kept) and how many models share each top item.

    Returns ``{"per_model": DataFrame, "counts": Series, "prompt": str}``
    (see :func:`rmlib.stats.elo.top_items`). On the §4 prompt
    "Unconditional love" is the top item of 6 models (the paper says 5).
    """
    w = _wide(prompt)
    return {"per_model": elo.top_items(w), "counts": elo.top_item_counts(w), "prompt": w.attrs.get("prompt", "")}


def elo_dataset_facts(prompt="one_word_greatest") -> pd.Series:
    """§4's data-set facts from the released ``elo_matches`` (identical in every prompt's file)."""
    if isinstance(prompt, pd.DataFrame):
        df = prompt
    else:
        from rmlib.tables import datasets

        df = datasets.eloeverything(prompt)
    return elo.comparisons_summary(df)


__all__ = [
    "RSA_PREDICTORS",
    "elo_dataset_facts",
    "fig2a_predictors",
    "fig2a_rsa",
    "human_model_tau",
    "model_model_tau",
    "rsa_key_numbers",
    "top_bottom_agreement",
    "top_items_summary",
]
