"""The paper's tables and statistics recomputed from a long score table (pure functions).

Each function takes the data it needs as a DataFrame: the released per-token
scores or the EloEverything files read by :mod:`rmlib.tables.paper_release`,
or a live analogue scored here; nothing here reads a file. Values are returned
unrounded; chapters compare them with the paper's printed numbers (from the
claims files) with :func:`rmlib.viz.verdicts.judge`.

* Figure 2C's RSA (§2.2): :func:`fig2a_rsa` on a Figure 2A matrix, both ways
  (45 distinct pairs; the full 10 x 10 matrix the paper used), and
  :func:`rsa_key_numbers` for the numbers the paper printed.
* Tables 2, 3 and A.1-A.9 (token level, from a long score table):
  :func:`table2`, :func:`table3`, :func:`appendix_table`, compared with the
  published tables by :func:`compare_top_bottom`; Fig. 2A at token level:
  :func:`token_wide`; §3's slopes: :func:`sentiment_asymmetry`,
  :func:`frequency_counts`.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from rmlib.stats import rsa
from ..errors import InputError

#: The paper's predictors of Figure 2C, in its order.
RSA_PREDICTORS = ("base_model", "developer", "params", "rewardbench_rank")


# --------------------------------------------------------------------------
# Figure 2A / 2C: RSA
# --------------------------------------------------------------------------


def fig2a_predictors(labels) -> dict[str, pd.DataFrame]:
    """The four theoretical similarity matrices of Fig. 2C for the paper's models (nicknames)."""
    from rmlib import registry

    facts = registry.paper_models().set_index("nickname")
    labels = list(labels)
    unknown = [x for x in labels if x not in facts.index]
    if unknown:
        raise KeyError(f"not the paper's models (nicknames): {unknown}; known: {list(facts.index)}")
    mats = rsa.similarity_matrices(facts.loc[labels], id_col=None)
    return {k: mats[k] for k in RSA_PREDICTORS}


def fig2a_rsa(tau: pd.DataFrame, kinds=("single", "multiple", "stepwise"), **kwargs) -> pd.DataFrame:
    """RSA of the Figure 2A tau matrix on the four model facts, on the 45 pairs and on the full matrix.

    ``tau``: a model x model matrix labelled by nicknames (e.g. the matrix
    transcribed from the published heatmap,
    :func:`rmlib.tables.paper_release.fig2a_tau_transcribed`). Returns
    :func:`rmlib.stats.rsa.rsa_both_ways` (columns ``cells, kind, model,
    term, coef, se, t, p, r2, ...``). Why the 45 distinct pairs are the
    defensible analysis and the full matrix only reproduces the paper: see
    :mod:`rmlib.stats.rsa`.
    """
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
# Token-level tables (§2-3, Tables 2, 3, A.1-A.9) from a long score table
# --------------------------------------------------------------------------
#
# These take any long table (columns model, prompt, token_id, token,
# decoded, score): the paper's released scores
# (paper_release.paper_token_scores) or a live analogue scored here. They follow
# the authors' scripts (tables/generate_table_2.py, generate_table_3.py,
# generate_tables_a1_through_a5.py, generate_tables_a6_through_a9.py):
# the same sort call (pandas' default, so ties fall as they did), the same
# shared vocabulary, the same layout as paper_release.published_table.


def _prompt_text(prompt: str) -> str:
    from rmlib.prompts import PAPER_PROMPTS

    return PAPER_PROMPTS.get(prompt, prompt)


def _check_long(long: pd.DataFrame, value: str = "score") -> None:
    need = ["model", "prompt", "decoded", value]
    missing = [c for c in need if c not in long.columns]
    if missing:
        raise InputError(f"not a long score table: missing columns {missing} (has {list(long.columns)}); "
                         "use rmlib.tables.paper_release.paper_token_scores or rmlib.runs.scoring.score_models")


def _models_in_paper_order(long) -> list[str]:
    """The table's models: the paper's RMs by RewardBench rank, then any other model in table order (the
    released base models' logits come in the authors' config order from their reader)."""
    from rmlib import registry

    present = list(long.models) if isinstance(long, _Groups) else list(pd.unique(long["model"]))
    order = list(registry.paper_models()["hub_id"])
    known = [m for m in order if m in present]
    return known + [m for m in present if m not in known]


class _Groups:
    """Row positions of every (model, prompt) of a long table, found once.

    Boolean masks over millions of object-dtype rows per (model, prompt)
    made the token-level tables slow on the released files; here
    the two columns are factorized once and each group is a slice of one
    stable argsort.
    """

    def __init__(self, long: pd.DataFrame):
        self.long = long
        mcode, self.models = pd.factorize(long["model"])
        pcode, self.prompts = pd.factorize(long["prompt"])
        gid = mcode.astype(np.int64) * max(len(self.prompts), 1) + pcode
        order = np.argsort(gid, kind="stable")
        bounds = np.flatnonzero(np.diff(gid[order])) + 1
        self._pos = {}
        for chunk in np.split(order, bounds) if len(order) else []:
            g = int(gid[chunk[0]])
            key = (self.models[g // max(len(self.prompts), 1)], self.prompts[g % max(len(self.prompts), 1)])
            self._pos[key] = chunk

    def keys(self):
        return list(self._pos)

    def prompts_of(self, model: str) -> list[str]:
        return [p for (m, p) in self._pos if m == model]

    def rows(self, model: str, prompt: str) -> pd.DataFrame:
        pos = self._pos.get((model, _prompt_text(prompt)))
        if pos is None:
            raise InputError(f"the table has no rows for model {model!r} and prompt {_prompt_text(prompt)!r}; "
                             f"models: {list(self.models)}, prompts: {list(self.prompts)}")
        return self.long.iloc[pos]


def _label(model: str) -> str:
    from rmlib import registry

    return registry.nickname(model)


def _one(long, model: str, prompt: str) -> pd.DataFrame:
    g = long if isinstance(long, _Groups) else _Groups(long)
    return g.rows(model, prompt)


def score_tables(long: pd.DataFrame, *, nicknames: bool = True, value: str = "score") -> dict:
    """A long table -> ``{(model, prompt_key): score table}`` for :mod:`rmlib.stats.lexical`.

    ``prompt_key`` is ``"greatest"``, ``"best"``, ``"worst"`` for the
    paper's prompts (else the prompt text); ``model`` the paper nickname
    when ``nicknames`` (else the hub id). Each table has columns
    ``token_id, token, decoded, score`` (``value`` renamed to ``score``).
    """
    from rmlib.prompts import PAPER_PROMPTS

    _check_long(long, value)
    key_of = {v: k for k, v in PAPER_PROMPTS.items()}
    groups = _Groups(long)
    out = {}
    for model in _models_in_paper_order(groups):
        for prompt in groups.prompts_of(model):
            t = groups.rows(model, prompt)
            t = t[[c for c in ("token_id", "token", "decoded") if c in t.columns] + [value]]
            t = t.rename(columns={value: "score"}).reset_index(drop=True)
            t.attrs["provenance"] = {"model_id": model, "prompt": prompt}
            out[(_label(model) if nicknames else model, key_of.get(prompt, prompt))] = t
    return out


def paper_shared_vocabulary(long: pd.DataFrame, value: str = "score") -> pd.Index:
    """The paper's shared vocabulary: decoded strings every model has for every prompt,
    minus any string that two token ids of one model decode to.

    As ``analysis_support.get_shared_vocabulary`` + ``identify_duplicate_encodings``
    (the intersection runs over all three prompts; rows with a missing score
    are out first). Sorted, as an Index.
    """
    return _shared(long, value)[0]


def _shared(long: pd.DataFrame, value: str = "score") -> tuple[pd.Index, np.ndarray]:
    """:func:`paper_shared_vocabulary` and a row mask of ``long`` (score present, string shared).

    Computed on integer codes of the strings: ``Series.isin`` on pandas'
    Arrow-backed strings iterates in Python (slow on a 256,000-token
    vocabulary, once per model).
    """
    _check_long(long, value)
    present = long[value].notna().to_numpy()
    d = long[present]
    if d.empty:
        raise InputError("the table is empty")
    code, uniques = pd.factorize(d["decoded"])  # missing strings -> -1
    mcode, models = pd.factorize(d["model"])
    pcode, prompts = pd.factorize(d["prompt"])
    gid = mcode.astype(np.int64) * len(prompts) + pcode
    n_groups = len(np.unique(gid))
    ok = code >= 0
    pair = gid[ok] * len(uniques) + code[ok]
    upair, counts = np.unique(pair, return_counts=True)
    ucode = upair % len(uniques)
    groups_per_string = np.bincount(ucode, minlength=len(uniques))
    duplicated = np.zeros(len(uniques), dtype=bool)
    duplicated[ucode[counts > 1]] = True
    keep = (groups_per_string == n_groups) & ~duplicated
    mask = np.zeros(len(long), dtype=bool)
    mask[np.flatnonzero(present)] = np.where(code >= 0, keep[np.maximum(code, 0)], False)
    return pd.Index(sorted(uniques[keep]), name="decoded"), mask


def token_wide(long: pd.DataFrame, prompt: str = "greatest", *, vocabulary: str = "paper",
               value: str = "score") -> pd.DataFrame:
    """Wide table for Fig. 2A/2B and Fig. A.1: index = decoded string, one column per model (nicknames).

    ``vocabulary="paper"``: :func:`paper_shared_vocabulary` (what the paper
    correlated). Pass the result to :func:`rmlib.stats.agreement.rank_agreement`
    (``"kendall"``: Fig. 2A), :func:`rmlib.stats.agreement.mds_embedding`
    (Fig. 2B) and :func:`fig2a_rsa` (Fig. 2C on the token-level matrix).
    """
    if vocabulary != "paper":
        raise InputError("vocabulary must be 'paper' (use rmlib.tables.vocabulary.shared_vocabulary for other rules)")
    vocab, mask = _shared(long, value)
    groups = _Groups(long[mask])
    cols = {}
    for model in _models_in_paper_order(groups):
        t = groups.rows(model, prompt)
        cols[_label(model)] = t.set_index("decoded")[value]
    wide = pd.DataFrame(cols).loc[vocab]
    wide.index.name = "item"
    wide.attrs["prompt"] = _prompt_text(prompt)
    return wide


def _sorted(t: pd.DataFrame, value: str) -> pd.DataFrame:
    # the authors' call exactly (pandas' default sort kind), so ties fall as they did
    return t.sort_values(value, ascending=False).reset_index(drop=True)


def table2(long: pd.DataFrame, model: str = "R-Gem-2B", prompt: str = "greatest", n: int = 22) -> pd.DataFrame:
    """Table 2a/2b: one model's top and bottom ``n`` tokens, in :func:`published_table` layout.

    Columns ``part, rank, token_id, decoded, score`` (``rank`` counts
    within each part as printed). ``model``: hub id or nickname.
    """
    from rmlib import registry

    _check_long(long)
    entry = registry.lookup(model)
    hub = entry["hub_id"] if entry and entry["hub_id"] in set(long["model"]) else model
    s = _sorted(_one(long, hub, prompt), "score")
    top, bottom = s.head(n), s.tail(n)
    out = pd.concat([top, bottom], ignore_index=True)[["token_id", "decoded", "score"]]
    out.insert(0, "rank", list(range(1, len(top) + 1)) + list(range(1, len(bottom) + 1)))
    out.insert(0, "part", ["top"] * len(top) + ["bottom"] * len(bottom))
    return out


def table3(long: pd.DataFrame, prompt: str = "greatest", *, shared: bool = True) -> pd.DataFrame:
    """Table 3: mean, variance (ddof=0) and skewness (biased, scipy's default) per model.

    Over :func:`paper_shared_vocabulary` when ``shared`` (the paper), else
    each model's whole vocabulary. Unrounded (the paper printed 3 decimals);
    columns ``Model, Mean, Variance, Skewness, n`` as the published table.
    """
    from scipy.stats import skew

    _check_long(long)
    rows_in = _shared(long)[1] if shared else long["score"].notna().to_numpy()
    groups = _Groups(long[rows_in])
    rows = []
    for model in _models_in_paper_order(groups):
        t = groups.rows(model, prompt)
        x = t["score"].to_numpy(float)
        rows.append({"Model": _label(model), "Mean": float(np.mean(x)), "Variance": float(np.var(x)),
                     "Skewness": float(skew(x)), "n": len(x)})
    return pd.DataFrame(rows)


def _top_bottom_columns(frames: dict[str, pd.DataFrame], value: str, n: int) -> pd.DataFrame:
    top, bottom = {}, {}
    for label, t in frames.items():
        cells = _sorted(t, value)["decoded"]
        top[label] = pd.Series(cells.head(n).to_numpy(), dtype=object)
        bottom[label] = pd.Series(cells.tail(n).to_numpy(), dtype=object)
    top_df, bottom_df = pd.DataFrame(top), pd.DataFrame(bottom)
    out = pd.concat([top_df, bottom_df], ignore_index=True)
    out.insert(0, "rank", list(range(1, len(top_df) + 1)) + list(range(1, len(bottom_df) + 1)))
    out.insert(0, "part", ["top"] * len(top_df) + ["bottom"] * len(bottom_df))
    return out


APPENDIX_TABLES = {
    # key: (score prompt(s), combine, vocabulary)
    "A.1": ("greatest", None, "raw"), "A.2": ("best", None, "raw"), "A.3": ("worst", None, "raw"),
    "A.4": (("best", "worst"), "plus", "raw"), "A.5": (("best", "worst"), "minus", "raw"),
    "A.6": ("greatest", None, "raw"), "A.7": ("greatest", None, "shared"),
    "A.8": (("best", "worst"), "plus", "shared"), "A.9": (("best", "worst"), "minus", "shared"),
}


def appendix_table(long: pd.DataFrame, which: str, n: int = 20, *, value: str | None = None) -> pd.DataFrame:
    """Tables A.1-A.9 from a long table, in :func:`rmlib.tables.paper_release.published_table` layout.

    A.1-A.5: the Gemma base/instruct models' next-token scores (from
    :func:`rmlib.tables.paper_release.paper_base_logits`; ``value`` defaults to
    ``"logit"`` as the authors ranked): greatest, best, worst, best + worst,
    best - worst, whole vocabulary. A.6: the reward models, greatest, whole
    vocabulary; A.7-A.9: shared vocabulary (:func:`paper_shared_vocabulary`)
    for greatest, best + worst, best - worst (best and worst joined on the
    decoded string, as the authors merged them). Columns ``part, rank``
    and one column of decoded strings per model (nicknames for the RMs).
    """
    key = which.strip().upper()
    key = key if key.startswith("A.") else "A." + key.lstrip("A")
    if key not in APPENDIX_TABLES:
        raise KeyError(f"unknown appendix table {which!r}; choose from {list(APPENDIX_TABLES)}")
    prompts, combine, vocab_rule = APPENDIX_TABLES[key]
    if value is None:
        value = "logit" if key in ("A.1", "A.2", "A.3", "A.4", "A.5") else "score"
    _check_long(long, value)
    if vocab_rule == "shared":
        d = long[_shared(long, value)[1]]
    else:
        d = long[long[value].notna().to_numpy()]
    frames = {}
    d = _Groups(d)
    for model in _models_in_paper_order(d):
        if combine is None:
            t = _one(d, model, prompts)[["decoded", value]]
        elif key in ("A.4", "A.5"):
            # base models: one vocabulary, joined on the row (token id), as the authors added columns
            a = _one(d, model, prompts[0]).reset_index(drop=True)
            b = _one(d, model, prompts[1]).reset_index(drop=True)
            if "token_id" in a.columns and not a["token_id"].equals(b["token_id"]):
                raise InputError(f"{model}: the best and worst rows are not the same tokens in the same order")
            sign = 1.0 if combine == "plus" else -1.0
            t = pd.DataFrame({"decoded": a["decoded"], value: a[value].to_numpy() + sign * b[value].to_numpy()})
        else:
            a = _one(d, model, prompts[0])[["decoded", value]].rename(columns={value: "a"})
            b = _one(d, model, prompts[1])[["decoded", value]].rename(columns={value: "b"})
            m = a.merge(b, on="decoded")
            m[value] = m["a"] + m["b"] if combine == "plus" else m["a"] - m["b"]
            t = m[["decoded", value]]
        frames[_label(model)] = t
    out = _top_bottom_columns(frames, value, n)
    out.attrs["table"] = key
    return out


def compare_top_bottom(recomputed: pd.DataFrame, published: pd.DataFrame) -> pd.DataFrame:
    """Cell by cell: how much of a recomputed top/bottom table the published one shows.

    Both in :func:`rmlib.tables.paper_release.published_table` layout (``part``,
    ``rank`` and string columns; for Table 2 the ``decoded`` column). One
    row per model column present in both: ``n``, ``same_position`` (cells
    equal at the same part and rank), ``same_set`` (recomputed strings found
    anywhere in the same part of the published column, ties reordered
    included), and ``identical`` (all cells equal).
    """
    for t, what in ((recomputed, "recomputed"), (published, "published")):
        if not {"part", "rank"} <= set(t.columns):
            raise InputError(f"{what} is not in published_table layout (needs 'part' and 'rank' columns)")
    cols = [c for c in recomputed.columns if c in published.columns and c not in ("part", "rank", "token_id", "score")]
    if not cols:
        raise InputError("no model columns in common")
    a = recomputed.set_index(["part", "rank"])
    b = published.set_index(["part", "rank"])
    idx = a.index.intersection(b.index)
    rows = []
    for c in cols:
        x, y = a.loc[idx, c], b.loc[idx, c]
        same_pos = float((x.to_numpy() == y.to_numpy()).mean())
        found = [v in set(b.loc[part, c]) for (part, _), v in x.items()]
        rows.append({"model": c, "n": len(idx), "same_position": same_pos, "same_set": float(np.mean(found)),
                     "identical": bool(same_pos == 1.0 and len(idx) == len(b))})
    return pd.DataFrame(rows)


def sentiment_asymmetry(long: pd.DataFrame, prompts=("greatest", "best", "worst"), *, lexicon: pd.Series,
                        strip: bool = False, cov_type: str = "nonrobust") -> dict:
    """§3.1-3.2 (Fig. 3A-C): slopes of score on AFINN sentiment per valence, model and prompt,
    and the paired test of |positive slope| vs |negative slope| across models (the paper's t-test).

    ``lexicon``: the paper's is AFINN-111 (:func:`rmlib.tables.lexicons.afinn111`). Defaults are
    the paper's settings: tokens lower-cased but not stripped (``strip=False``), classical SEs.
    Returns ``{"slopes", "asymmetry", "test"}`` from
    :func:`rmlib.stats.lexical.sentiment_slopes`, ``slope_asymmetry`` and
    ``asymmetry_test`` (the test's ``n_pos_stronger`` is the paper's
    "8/10 models").
    """
    from rmlib.stats import lexical

    tables = _prompt_tables(long, prompts)
    slopes = lexical.sentiment_slopes(tables, lexicon, strip=strip, cov_type=cov_type)
    return {"slopes": slopes, "asymmetry": lexical.slope_asymmetry(slopes), "test": lexical.asymmetry_test(slopes)}


def _prompt_tables(long: pd.DataFrame, prompts) -> dict:
    """:func:`score_tables` restricted to ``prompts`` (an error when none is there)."""
    keys = set(prompts)
    tables = {k: t for k, t in score_tables(long).items() if k[1] in keys}
    if not tables:
        raise InputError(f"the table has none of the prompts {list(prompts)}")
    return tables


def frequency_counts(long: pd.DataFrame, prompts=("greatest", "best", "worst"), *, frequencies: pd.Series,
                     lexicon: pd.Series, strip: bool = False, cov_type: str = "nonrobust", alpha: float = 0.05) -> dict:
    """§3.3 (Fig. 3D): slope of score on log BNC frequency per model and prompt, alone and
    controlling for sentiment, and how many models have a significant positive slope.

    The paper's data: the BNC list 1.1 as its R code joined it
    (:func:`rmlib.tables.word_frequencies.bnc_frequencies` ``(rows="paper")``) and AFINN-111;
    the defaults are its settings, ``strip=False`` and classical SEs. Returns ``{"slopes", "counts"}``.
    """
    from rmlib.stats import frequency

    tables = _prompt_tables(long, prompts)
    slopes = frequency.frequency_slopes(tables, frequencies, lexicon, strip=strip, cov_type=cov_type)
    return {"slopes": slopes, "counts": frequency.count_significant(slopes, alpha=alpha)}


def published_side_by_side(published: pd.DataFrame, prefix: str = "paper: ") -> pd.DataFrame:
    """A published top/bottom table (:func:`rmlib.tables.paper_release.published_table` layout: ``part``,
    ``rank`` and one column per model) in :func:`rmlib.stats.vocab.side_by_side` layout: index
    ``top-1 … top-n, bottom-n … bottom-1`` (bottom-1 = the lowest), columns ``prefix`` + the model's
    short name, so that it joins a table made here on the index."""
    if not {"part", "rank"} <= set(published.columns):
        raise InputError("published is not in published_table layout (needs 'part' and 'rank' columns)")
    top, bottom = published[published["part"] == "top"], published[published["part"] == "bottom"]
    index = [f"top-{r}" for r in top["rank"]] + [f"bottom-{len(bottom) + 1 - r}" for r in bottom["rank"]]
    out = pd.concat([top, bottom]).drop(columns=["part", "rank"])
    out.index = pd.Index(index, name="rank")
    return out.rename(columns=lambda c: prefix + str(c).rsplit("/", 1)[-1])


__all__ = [
    "APPENDIX_TABLES",
    "frequency_counts",
    "sentiment_asymmetry",
    "RSA_PREDICTORS",
    "published_side_by_side",
    "appendix_table",
    "compare_top_bottom",
    "paper_shared_vocabulary",
    "score_tables",
    "table2",
    "table3",
    "token_wide",
    "fig2a_predictors",
    "fig2a_rsa",
    "rsa_key_numbers",
]
