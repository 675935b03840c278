"""The follow-up study's released data as long tables.

"Reward Models Inherit Value Biases from Pretraining" (Christian, Thompson,
Yang, Adam, Kirk, Summerfield, Dumbalska; arXiv 2601.20838, ICLR 2026)
released each of the FAccT paper's ten reward models' score of two word
lists, every word given as the whole answer to each of 54 prompts, and the
rank summaries of its own RM training runs. The files are pinned in the data
registry (:mod:`rmlib.tables.data_files`, entries ``followup:<name>``, listed
in ``rmlib/resources/followup.yaml``); this module reads them:

* :func:`prompts`: the 54 prompts (6 adjectives x 3 scopes x 3 concision
  styles) with their factors and framing;
* :func:`dictionary`: the Big Two nouns (263), the expanded Big Two list
  (936) and the Moral Foundations Dictionary 2.0 (2,040 terms);
* :func:`scores`: one long table, one row per (RM, word, prompt), for the
  Big Two nouns or the MFD 2.0 terms; :func:`value_word_scores` for the
  2,258 distinct words of both;
* :func:`training_ranks`: the authors' own RMs' median ranks per training
  checkpoint;
* :func:`rmlib.runs.scoring.live_scores` (not here: it runs models) scores the same words with any
  model rmlib loads (the trained RMs of chapter 7), in the same long layout.

What the released files hold beyond the dictionaries, and how it is treated:

* The Big Two score files have 265 rows: the 263 nouns plus ``discussion``
  and ``eagerness``, which are in no category. The authors' inner join with
  the dictionary drops them; so does :func:`scores` (they are named in
  ``attrs["not_in_dictionary"]``).
* The MFD 2.0 has ten columns (five foundations x virtue/vice), one label
  per term. The authors' R code pivots ``Care_Virtue:Sanctity_Virtue``, which
  leaves out the last column, ``Sanctity_Vice`` (388 terms): their analysis
  ranks 1,652 terms, and their Sanctity is virtue words only.
  ``scores("mfd")`` keeps all 2,040 (``mfd_terms="all"``) unless asked for
  the authors' 1,652 (``mfd_terms="authors"``).
* 45 words are in both lists. Their scores in the two files differ by
  rounding (the RMs ran in bfloat16 in different batches; at most 0.02, on
  scales whose SD is about 2): :func:`value_word_scores` averages the two.
* The training summaries: ``rank_results_uf_100.csv`` repeats most rows
  (60,956 rows hold 84 distinct ones; dropped here, counted in
  ``attrs["duplicates_dropped"]``); ``rank_results_uf_13.csv`` and
  ``rank_results_uf_27.csv`` are byte-identical upstream (same git blob id,
  model ids ``*_unified27k_*``, final step 3314 = 26.5k pairs at batch 16
  over 2 epochs), so the "13k" run is a copy of the 27k run
  (``attrs["identical_files"]``).

Model facts (nickname, base-model family) come from rmlib's registry
(``rmlib/resources/reward_models.yaml``); the family is the first word of the
registry's ``base_model`` (Gemma / Llama), the follow-up's grouping.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from ..errors import DataFileError, InputError
from . import data_files, downloads

CORPORA = ("big2", "mfd")
#: Each corpus as a reader names its words (a count goes before it: "263 Big Two nouns").
CORPUS_NAMES = {"big2": "Big Two nouns", "mfd": "Moral Foundations Dictionary 2.0 terms"}
#: Adjectives of the positive framing (the rest are negative), as the authors' code decides.
POSITIVE_ADJECTIVES = ("greatest", "best", "good")
ADJECTIVES = ("best", "greatest", "good", "worst", "bad", "terrible")
SCOPES = ("ever", "world", "time")
CONCISIONS = ("one", "single", "please")
PROMPT_FACTORS = ("adjective", "scope", "concision", "framing")
#: Columns of :func:`scores`, :func:`value_word_scores` and :func:`rmlib.runs.scoring.live_scores`.
LONG_COLUMNS = ("source", "model", "nickname", "family", "corpus", "word", "category", "polarity", "prompt",
                *PROMPT_FACTORS, "score")
RELEASED = "released by the authors"
TRAINED_HERE = "trained here"
MFD_TERMS = ("all", "authors")
MFD_FOUNDATIONS = ("Care", "Fairness", "Loyalty", "Authority", "Sanctity")
#: The MFD 2.0 column the authors' code leaves out (see the module docstring).
DROPPED_BY_AUTHORS = "Sanctity_Vice"
TRAINING_COLUMNS = ("run", "data_source", "data_size", "method", "model_id", "family", "category", "checkpoint",
                    "median_rank")

_PROMPT_KEY = re.compile(r"^(?P<adjective>[a-z]+)_(?P<scope>[a-z]+)_(?P<concision>[a-z]+)$")


def _read_yaml(name: str):
    import yaml

    path = downloads.fetch(data_files.followup_key(name))
    with open(path, encoding="utf-8") as f:
        return yaml.load(f, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader)), path


# --------------------------------------------------------------------------- prompts
def prompts() -> pd.DataFrame:
    """The 54 prompts of ``config/prompts.yaml``, one row each, in the file's order.

    Columns ``prompt`` (the key, e.g. ``greatest_ever_one``), ``text`` (verbatim),
    ``adjective`` (best, greatest, good, worst, bad, terrible), ``scope`` (ever,
    world = "in the world", time = "of all time"), ``concision`` (one = "in one
    word", single = "in a single word", please = "Please answer in one word
    only.") and ``framing`` (positive for greatest / best / good, else negative:
    27 each).
    """
    data, path = _read_yaml("prompts")
    if not isinstance(data, Mapping) or not data:
        raise DataFileError(f"{path}: expected a mapping prompt key -> prompt text")
    rows = []
    for key, text in data.items():
        m = _PROMPT_KEY.match(str(key))
        if m is None or m["adjective"] not in ADJECTIVES or m["scope"] not in SCOPES \
                or m["concision"] not in CONCISIONS:
            raise DataFileError(f"{path}: prompt key {key!r} is not <adjective>_<scope>_<concision> "
                                f"with adjective in {ADJECTIVES}, scope in {SCOPES}, concision in {CONCISIONS}")
        rows.append({"prompt": str(key), "text": str(text), **m.groupdict(),
                     "framing": "positive" if m["adjective"] in POSITIVE_ADJECTIVES else "negative"})
    out = pd.DataFrame(rows)
    out.attrs["source"] = data_files.REGISTRY[data_files.followup_key("prompts")].url
    return out


def prompt_keys(keys=None, table: pd.DataFrame | None = None) -> list[str]:
    """Prompt keys checked against :func:`prompts` (or ``table``, its output; None: all 54); a clear
    error names the choices."""
    known = (prompts() if table is None else table)["prompt"].tolist()
    if keys is None:
        return known
    if isinstance(keys, str):
        keys = [keys]
    if not len(keys):
        raise InputError(f"no prompt keys given: name at least one of the follow-up's 54 prompts, e.g. {known[9]!r}, "
                         "or None for all of them")
    bad = [k for k in keys if k not in known]
    if bad:
        raise InputError(f"unknown prompt keys {bad}: use keys of the follow-up's config/prompts.yaml, "
                         f"<adjective>_<scope>_<concision>, e.g. {known[9]!r}; all: {known}")
    return list(dict.fromkeys(keys))


# --------------------------------------------------------------------------- dictionaries
def dictionary(corpus: str = "big2") -> pd.DataFrame:
    """One of the follow-up's word lists: columns ``word, category, polarity``.

    ``"big2"``: the 263 Big Two nouns (``dict_big2_nouns.csv``: 104 Agency,
    159 Communion; polarity empty). ``"big2_expanded"``: the expanded list
    used for the training checkpoints (``Agency`` / ``Communion`` columns
    marked ``X``; 936 rows, 36 of them exact repeats, so 900 terms). ``"mfd"``: the Moral Foundations Dictionary 2.0
    (2,040 terms; category = foundation, polarity = Virtue / Vice, from the
    column marked ``X``; every term has exactly one). Rows repeated exactly
    are kept once (``attrs["duplicate_rows"]``); a word under two labels is
    an error.
    """
    if corpus == "big2":
        path = downloads.fetch(data_files.followup_key("big2_nouns"))
        raw = pd.read_csv(path, keep_default_na=False, dtype=str)
        _require(raw, ["Category", "token_decoded"], path)
        out = pd.DataFrame({"word": raw["token_decoded"], "category": raw["Category"], "polarity": ""})
    elif corpus in ("big2_expanded", "mfd"):
        name = "big2_expanded" if corpus == "big2_expanded" else "mfd20"
        path = downloads.fetch(data_files.followup_key(name))
        raw = pd.read_csv(path, keep_default_na=False, dtype=str)
        _require(raw, ["DicTerm"], path)
        labels = [c for c in raw.columns if c != "DicTerm"]
        marked = raw[labels].eq("X")
        if not (marked.sum(axis=1) == 1).all():
            bad = raw.loc[marked.sum(axis=1) != 1, "DicTerm"].tolist()[:5]
            raise DataFileError(f"{path}: every term needs exactly one column marked X; not so for {bad}")
        label = marked.idxmax(axis=1)
        category = label.str.split("_").str[0]
        polarity = label.str.split("_").str[1].fillna("") if corpus == "mfd" else ""
        out = pd.DataFrame({"word": raw["DicTerm"], "category": category, "polarity": polarity})
    else:
        raise InputError(f"unknown word list {corpus!r}: choose 'big2', 'big2_expanded' or 'mfd'")
    n_rows = len(out)
    out = out.drop_duplicates()
    if out["word"].duplicated().any():
        raise DataFileError(f"{path}: words listed under two labels: "
                            f"{out.loc[out['word'].duplicated(), 'word'].tolist()[:5]}")
    out = out.reset_index(drop=True)
    out.attrs = {"source": str(path), "duplicate_rows": n_rows - len(out)}
    return out


def _require(df: pd.DataFrame, columns, path) -> None:
    missing = [c for c in columns if c not in df.columns]
    if missing:
        raise DataFileError(f"{path}: missing columns {missing} (has {list(df.columns)})")


#: The largest score file read.
MAX_SCORE_FILE = 512 << 20


def _read_score_table(path: str) -> pd.DataFrame:
    """A score file as a table: Parquet by its ``.parquet`` name, else CSV read as checked UTF-8 text; a file
    of the other format, an empty one or a broken one refused with the fix."""
    import io

    import pyarrow as pa

    from .textfiles import read_text

    try:
        with open(path, "rb") as f:
            head = f.read(4)
    except OSError as err:
        raise InputError(f"{path}: cannot read it ({err.strerror or err})") from None
    if path.endswith(".parquet"):
        if head != b"PAR1":
            raise InputError(f"{path}: not a Parquet file ({'it is empty' if not head else 'perhaps a CSV'}); give "
                             "a Parquet file, or a CSV named .csv")
        try:
            return pd.read_parquet(path)
        except (OSError, pa.ArrowException) as err:
            raise InputError(f"{path}: an unreadable Parquet file ({str(err).splitlines()[0]}); use the released "
                             "file again") from None
    if head == b"PAR1":
        raise InputError(f"{path}: a Parquet file with a CSV name; rename it to end in .parquet")
    text = read_text(path, path, limit=MAX_SCORE_FILE)
    if not text.strip():
        raise InputError(f"{path}: the file is empty; expected a header 'response,<prompt keys>' and one row per "
                         "response")
    try:
        return pd.read_csv(io.StringIO(text), keep_default_na=False, na_values=[""])
    except (pd.errors.ParserError, pd.errors.EmptyDataError) as err:
        raise InputError(f"{path}: not a well-formed CSV ({str(err).strip().splitlines()[0]})") from None


# --------------------------------------------------------------------------- models
def reward_models() -> pd.DataFrame:
    """The ten RMs whose scores the follow-up released: ``model`` (hub id), ``nickname``, ``family``
    (Gemma / Llama), ``params_b``, in the paper's order (RewardBench rank), from rmlib's registry."""
    from .. import registry

    facts = registry.models("followup").sort_values("rewardbench_rank")
    facts = facts[facts["hub_id"].isin(_score_entries("big2"))]
    return pd.DataFrame({"model": facts["hub_id"], "nickname": facts["nickname"],
                         "family": facts["base_model"].str.split().str[0], "params_b": facts["params_b"]}
                        ).reset_index(drop=True)


def _score_entries(corpus: str) -> dict[str, str]:
    """Hub id -> registry name of its released score file for ``corpus``."""
    if corpus not in CORPORA:
        raise InputError(f"unknown corpus {corpus!r}: choose one of {CORPORA}")
    prefix = "big2_scores:" if corpus == "big2" else "mfd_scores:"
    return {f["model"]: data_files.followup_key(f["name"]) for f in data_files.followup_manifest()["files"]
            if f["name"].startswith(prefix)}


def _pick_models(models, facts: pd.DataFrame) -> pd.DataFrame:
    if models is None:
        return facts
    if isinstance(models, str):
        models = [models]
    if not len(models):
        raise InputError(f"no models given: name at least one of the released RMs {facts['nickname'].tolist()} "
                         "(hub id or nickname), or None for all ten")
    rows = []
    for m in models:
        hit = facts[(facts["model"] == m) | (facts["nickname"] == m)]
        if hit.empty:
            raise InputError(f"no released scores for {m!r}: choose hub ids or nicknames of "
                             f"{facts['nickname'].tolist()}")
        rows.append(hit)
    return pd.concat(rows).drop_duplicates("model")


def read_score_file(path, keys: Sequence[str]) -> pd.DataFrame:
    """One released score file (CSV or Parquet: ``response`` + one column per prompt key) as written.

    Words stay strings (``keep_default_na=False``: a word such as ``null``
    is not missing); scores must be finite numbers.
    """
    path = str(path)
    raw = _read_score_table(path)
    if raw.empty:
        raise InputError(f"{path}: the table has a header but no rows; expected one row per response")
    _require(raw, ["response", *keys], path)
    values = raw[list(keys)].apply(pd.to_numeric, errors="coerce").to_numpy(dtype=float)
    if not np.isfinite(values).all():
        r, c = (int(v[0]) for v in np.nonzero(~np.isfinite(values)))
        cell = raw[list(keys)[c]].iloc[r]
        what = "is missing" if pd.isna(cell) or str(cell).strip() == "" else f"{cell!r} is not a finite number"
        raise InputError(f"{path}: row {r + 1} (line {r + 2} of a CSV), column {list(keys)[c]!r}: the score {what}; "
                         "every score must be a finite number (use the released file, or fill it in)")
    words = raw["response"].astype(str)
    if words.duplicated().any():
        raise DataFileError(f"{path}: responses repeat: {words[words.duplicated()].tolist()[:5]}")
    return pd.DataFrame(values, index=pd.Index(words.to_numpy(dtype=object), name="response"), columns=list(keys))


def _codes(values, n_repeat: int = 1, n_tile: int = 1) -> pd.Categorical:
    """``values`` (one per block) as a categorical repeated ``n_repeat`` times each, tiled ``n_tile`` times."""
    cats, codes = np.unique(np.asarray(values, dtype=object).astype(str), return_inverse=True)
    order = list(dict.fromkeys(np.asarray(values, dtype=object).astype(str)))  # first-appearance order
    remap = np.array([order.index(c) for c in cats])
    return pd.Categorical.from_codes(np.tile(np.repeat(remap[codes], n_repeat), n_tile), categories=order)


def _long(cube: np.ndarray, models: pd.DataFrame, words: pd.DataFrame, ptab: pd.DataFrame,
          source: str) -> pd.DataFrame:
    """Scores ``cube[model, word, prompt]`` -> long rows (model-major, then word, then prompt), string
    columns as categoricals (levels in first-appearance order). ``words``: ``word, category, polarity,
    corpus``; ``models``: ``model, nickname, family``."""
    n_m, n_w, n_p = cube.shape
    out = {"source": pd.Categorical.from_codes(np.zeros(cube.size, dtype=np.int8), categories=[source])}
    for col in ("model", "nickname", "family"):
        out[col] = _codes(models[col], n_w * n_p)
    for col in ("corpus", "word", "category", "polarity"):
        out[col] = _codes(words[col], n_p, n_m)
    for col in ("prompt", *PROMPT_FACTORS):
        out[col] = _codes(ptab[col], 1, n_m * n_w)
    out["score"] = cube.ravel()
    return pd.DataFrame(out)[list(LONG_COLUMNS)]


def _released_cube(corpus: str, facts: pd.DataFrame, words: pd.DataFrame, keys: Sequence[str],
                   all_prompts: pd.DataFrame, listed: set) -> tuple[np.ndarray, list, set]:
    """Scores ``[model, word, prompt]`` of ``words`` from the released files, their provenance and the
    words the files hold beyond the dictionary."""
    files = _score_entries(corpus)
    cube = np.empty((len(facts), len(words), len(keys)))
    prov, extra = [], set()
    for i, row in enumerate(facts.itertuples()):
        key = files[row.model]
        path = downloads.fetch(key)
        wide = read_score_file(path, all_prompts["prompt"].tolist())
        extra |= set(wide.index) - listed
        missing = listed - set(wide.index)
        if missing:
            raise DataFileError(f"{path}: no scores for the listed words {sorted(missing)[:5]}")
        cube[i] = wide.loc[words["word"], list(keys)].to_numpy()
        entry = data_files.REGISTRY[key]
        prov.append({"model_id": row.model, "nickname": row.nickname, "corpus": corpus, "source": entry.url,
                     "git_blob": entry.git_blob, "sha256": entry.sha256, "local": str(path),
                     "scored_by": "the follow-up's authors (released file)"})
    return cube, prov, extra


def scores(corpus: str = "big2", models=None, *, mfd_terms: str = "all", prompts_subset=None) -> pd.DataFrame:
    """The released RM scores of one word list as one long table (columns :data:`LONG_COLUMNS`).

    One row per (RM, word, prompt): ``score`` is the RM's raw scalar reward
    for the word given as the whole answer to the prompt (its own scale).
    ``corpus``: ``"big2"`` (the 263 Big Two nouns; ``discussion`` and
    ``eagerness``, which the files add, are dropped: ``attrs["not_in_dictionary"]``)
    or ``"mfd"`` (MFD 2.0; ``mfd_terms="all"``: all 2,040 terms,
    ``"authors"``: the 1,652 the authors' code keeps, ``Sanctity_Vice``
    left out). ``models``: hub ids or nicknames (None: the ten).
    ``prompts_subset``: prompt keys (None: all 54). Every file is fetched
    and hash-checked first. String columns are categoricals (levels in
    the order of the files: RMs by RewardBench rank, words as listed,
    prompts as in ``config/prompts.yaml``). ``attrs["provenance"]``: one
    dict per file.
    """
    if mfd_terms not in MFD_TERMS:
        raise InputError(f"mfd_terms must be one of {MFD_TERMS}, got {mfd_terms!r}")
    all_prompts = prompts()
    keys = prompt_keys(prompts_subset, all_prompts)
    ptab = all_prompts.set_index("prompt").loc[keys].reset_index()
    words = dictionary(corpus)
    listed = set(words["word"])
    dropped_col = []
    if corpus == "mfd" and mfd_terms == "authors":
        cat, pol = DROPPED_BY_AUTHORS.split("_")
        drop = (words["category"] == cat) & (words["polarity"] == pol)
        dropped_col = words.loc[drop, "word"].tolist()
        words = words[~drop].reset_index(drop=True)
    facts = _pick_models(models, reward_models()).reset_index(drop=True)
    cube, prov, extra = _released_cube(corpus, facts, words, keys, all_prompts, listed)
    long = _long(cube, facts, words.assign(corpus=corpus), ptab, RELEASED)
    long.attrs = {"provenance": prov, "corpus": corpus, "not_in_dictionary": sorted(extra),
                  "mfd_terms": mfd_terms if corpus == "mfd" else None, "dropped_terms": dropped_col,
                  "n_words": len(words)}
    return long


def value_word_scores(models=None, *, prompts_subset=None) -> pd.DataFrame:
    """The released scores of the 2,258 distinct words of both lists (263 nouns and 2,040 MFD terms).

    Columns :data:`LONG_COLUMNS`: the Big Two nouns first, then the MFD terms
    not among them. ``corpus`` is ``big2``, ``mfd`` or ``both`` (45 words);
    for those ``category`` joins the two labels (``"Communion / Care"``).
    The two files' scores of a shared word differ by rounding (bfloat16 runs
    in other batches); they are averaged.
    """
    all_prompts = prompts()
    keys = prompt_keys(prompts_subset, all_prompts)
    ptab = all_prompts.set_index("prompt").loc[keys].reset_index()
    facts = _pick_models(models, reward_models()).reset_index(drop=True)
    big2, mfd = dictionary("big2"), dictionary("mfd")
    cube_b, prov_b, _ = _released_cube("big2", facts, big2, keys, all_prompts, set(big2["word"]))
    cube_m, prov_m, _ = _released_cube("mfd", facts, mfd, keys, all_prompts, set(mfd["word"]))
    in_b = mfd["word"].isin(set(big2["word"])).to_numpy()
    pos_in_b = big2.reset_index().set_index("word").loc[mfd.loc[in_b, "word"], "index"].to_numpy()
    cube_b[:, pos_in_b] = (cube_b[:, pos_in_b] + cube_m[:, in_b]) / 2
    words = pd.concat([big2.assign(corpus="big2"), mfd[~in_b].assign(corpus="mfd")], ignore_index=True)
    words.loc[pos_in_b, "corpus"] = "both"
    words.loc[pos_in_b, "category"] = (big2.loc[pos_in_b, "category"].to_numpy() + " / "
                                       + mfd.loc[in_b, "category"].to_numpy())
    words.loc[pos_in_b, "polarity"] = mfd.loc[in_b, "polarity"].to_numpy()
    cube = np.concatenate([cube_b, cube_m[:, ~in_b]], axis=1)
    long = _long(cube, facts, words, ptab, RELEASED)
    long.attrs = {"provenance": prov_b + prov_m, "n_words": len(words), "n_shared_words": int(in_b.sum())}
    return long


# --------------------------------------------------------------------------- other layouts
def as_score_table(*longs: pd.DataFrame, value: str = "score") -> pd.DataFrame:
    """Long tables of this module -> one long score table of rmlib (``model, prompt, token_id, token,
    decoded, score``), so that every function on score tables applies (``stats.side_by_side``,
    ``charts.top_bottom_bar``, ``results.tables``, the lexicon statistics).

    ``model`` is the ``nickname``, ``prompt`` the prompt key, ``token`` and
    ``decoded`` the word, ``token_id`` the word's position among all words
    given (first appearance), ``score`` the column ``value``. Several tables
    (the released scores, those scored here) are stacked without copying
    their strings (categoricals). A word listed twice for one model and
    prompt (the 45 words of both lists, scored here once per list) gets the
    mean.
    """
    from pandas.api.types import union_categoricals

    if not longs:
        raise InputError("as_score_table needs at least one long table")
    need = ["nickname", "prompt", "word", value]
    for t in longs:
        _require(t, need, "the long table")
    parts = []
    for t in longs:
        t = t[need]
        if t.duplicated(["nickname", "prompt", "word"]).any():
            t = t.groupby(["nickname", "prompt", "word"], sort=False, observed=True)[value].mean().reset_index()
        parts.append(t)
    parts = [t for t in parts if len(t)] or parts[:1]  # an empty table (no model scored here) adds nothing
    cols = {c: union_categoricals([pd.Categorical(t[c]) for t in parts], sort_categories=False, ignore_order=True)
            for c in ("nickname", "prompt", "word")}
    return pd.DataFrame({"model": cols["nickname"], "prompt": cols["prompt"],
                         "token_id": cols["word"].codes.astype(np.int64), "token": cols["word"],
                         "decoded": cols["word"],
                         "score": np.concatenate([t[value].to_numpy(dtype=float) for t in parts])})


def wide(long: pd.DataFrame, prompt: str, value: str = "score") -> pd.DataFrame:
    """One prompt's scores as a words x models table (columns: nicknames, in the table's order), for
    the agreement statistics; words a model did not score are left out (complete rows only)."""
    _require(long, ["nickname", "prompt", "word", value], "the long table")
    sub = long[long["prompt"] == prompt]
    if sub.empty:
        raise InputError(f"no rows for prompt {prompt!r}; prompts here: {sorted(set(long['prompt'].astype(str)))}")
    out = sub.pivot_table(index="word", columns="nickname", values=value, aggfunc="mean", observed=True, sort=False)
    out.columns = out.columns.astype(str)
    out.index = out.index.astype(str)
    return out.dropna()


# --------------------------------------------------------------------------- training runs
def _family_from_id(model_id: str) -> str | None:
    """The authors' rule (R ``grepl``): gem/Gem -> Gemma, lam/Lla -> Llama, qwe/Qwe -> Qwen."""
    for needles, fam in ((("gem", "Gem"), "Gemma"), (("lam", "Lla"), "Llama"), (("Qwe", "qwe"), "Qwen")):
        if any(n in model_id for n in needles):
            return fam
    return None


def training_ranks(runs=None) -> pd.DataFrame:
    """The authors' RM-training summaries (``rank_results_<run>.csv``) as one long table.

    Columns :data:`TRAINING_COLUMNS`: ``run`` (uf_13, uf_27, uf_54, uf_100,
    sky_80k, grm_80k), the authors' manifest for it (``data_source``,
    ``data_size`` in thousands of pairs, ``method`` BT or GRM), ``model_id``,
    ``family`` (from the model id, as the authors' code; the CSVs leave it
    empty for Qwen in two files), ``category`` (Agency / Communion),
    ``checkpoint`` (training step; 1 for the GRM file, which holds finished
    off-the-shelf models) and ``median_rank`` (the files' ``sum_value``: the
    median rank, 1 = best of about 1,365, of the category's expanded-list
    tokens under ``greatest_ever_one``). Exact duplicate rows are dropped
    (``attrs["duplicates_dropped"]``: run -> rows); runs whose files are
    byte-identical upstream are named in ``attrs["identical_files"]``;
    ``attrs["file_labels"]``: what the GRM file's own columns say.
    """
    man = data_files.followup_manifest()
    manifest = man["training_runs"]
    if runs is None:
        runs = list(manifest)
    elif isinstance(runs, str):
        runs = [runs]
    bad = [r for r in runs if r not in manifest]
    if bad:
        raise InputError(f"unknown training runs {bad}: choose from {list(manifest)}")
    parts, dropped, blobs, labels = [], {}, {}, {}
    for run in runs:
        key = data_files.followup_key(f"training:{run}")
        path = downloads.fetch(key)
        raw = pd.read_csv(path, keep_default_na=True)
        _require(raw, ["model_id", "Category", "checkpoint", "sum_value"], path)
        for col in ("data_size", "data_source", "method"):
            if col in raw.columns:
                labels.setdefault(run, {})[col] = raw[col].dropna().unique().tolist()
        body = raw[["model_id", "Category", "checkpoint", "sum_value"]]
        n0 = len(body)
        body = body.drop_duplicates()
        dropped[run] = n0 - len(body)
        if body.duplicated(["model_id", "Category", "checkpoint"]).any():
            raise DataFileError(f"{path}: one (model, category, checkpoint) has two different values")
        blobs.setdefault(data_files.REGISTRY[key].git_blob, []).append(run)
        fam = body["model_id"].map(_family_from_id)
        parts.append(pd.DataFrame({
            "run": run, "data_source": manifest[run]["data_source"], "data_size": manifest[run]["data_size"],
            "method": manifest[run]["method"], "model_id": body["model_id"].astype(str), "family": fam,
            "category": body["Category"].astype(str), "checkpoint": body["checkpoint"].astype(int),
            "median_rank": body["sum_value"].astype(float)}))
    out = pd.concat(parts, ignore_index=True)[list(TRAINING_COLUMNS)]
    out.attrs = {"duplicates_dropped": {r: n for r, n in dropped.items() if n},
                 "identical_files": [names for names in blobs.values() if len(names) > 1],
                 "file_labels": labels}
    return out


def distinct_runs(training: pd.DataFrame) -> pd.DataFrame:
    """:func:`training_ranks` with one run for each set of byte-identical files
    (``attrs["identical_files"]``), named by its runs joined with " = " ("uf_13 = uf_27"), its rows
    once: what a chart with a run dropdown shows (two identical options would draw the same lines),
    and what a count of runs counts (one run, not two).

    ``data_size`` of such a run: the size its model ids name (``gemma2b_unified27k_lora``: 27, in
    thousands of pairs) when they all name the same one of the group's sizes, since a file holds the
    models it was written for; otherwise the group's first run's. The other columns are the files' own.
    """
    same = {run: " = ".join(group) for group in training.attrs.get("identical_files", []) for run in group}
    if not same:
        return training
    out = training.assign(run=training["run"].replace(same))
    out = out.drop_duplicates(["run", "method", "model_id", "category", "checkpoint"]).reset_index(drop=True)
    for group in training.attrs.get("identical_files", []):
        rows = out["run"] == " = ".join(group)
        named = out.loc[rows, "model_id"].str.extract(r"(\d+)k", expand=False)
        sizes = set(training.loc[training["run"].isin(group), "data_size"].astype(int))
        ok = named.notna().all() and named.nunique() == 1 and int(named.iloc[0]) in sizes
        out.loc[rows, "data_size"] = int(named.iloc[0]) if ok else int(
            training.loc[training["run"] == group[0], "data_size"].iloc[0])
    out.attrs = dict(training.attrs)
    return out


# --------------------------------------------------------------------------- scored here
def words_by_prompt(subset: Mapping[str, Sequence[str]]) -> dict[str, list[str]]:
    """``{corpus: [prompt keys]}`` -> ``{prompt key: words}``: the union of the corpora's words asked for
    under each prompt (a word in both lists once), in dictionary order."""
    out: dict[str, list[str]] = {}
    for corpus, keys in subset.items():
        if corpus not in CORPORA:
            raise InputError(f"unknown corpus {corpus!r} in the live subset: choose from {CORPORA}")
        words = dictionary(corpus)["word"].tolist()
        for k in prompt_keys(list(keys)):
            out[k] = list(dict.fromkeys(out.get(k, []) + words))
    return out


__all__ = [
    "ADJECTIVES", "CONCISIONS", "CORPORA", "DROPPED_BY_AUTHORS", "LONG_COLUMNS", "MFD_FOUNDATIONS", "MFD_TERMS",
    "POSITIVE_ADJECTIVES", "PROMPT_FACTORS", "RELEASED", "SCOPES", "TRAINED_HERE", "TRAINING_COLUMNS",
    "as_score_table", "dictionary", "distinct_runs", "prompt_keys", "prompts",
    "read_score_file", "reward_models", "scores",
    "training_ranks", "value_word_scores", "wide", "words_by_prompt",
]
