"""The readers of the FAccT 2025 paper's released files (Christian, Kirk, Thompson, Summerfield,
Dumbalska, MIT licence: credit the authors where shown).

* :func:`eloeverything`: the EloEverything items with human Elo ratings and
  the scores of the paper's ten reward models, one table per prompt;
* :func:`paper_token_scores`, :func:`paper_base_logits`: the per-token scores
  of the ten reward models and the Gemma next-token logits, three prompts,
  as long tables (read by :func:`rmlib.tables.token_csv.read_token_csv`);
* :func:`published_table`, :func:`published_figure`: the published tables and
  figures; :func:`fig2a_tau_transcribed`: Figure 2A's matrix, transcribed
  (project material); :func:`published_gcg_tables`: Tables 4 and 5 as printed
  (shipped with rmlib, transcribed from the text).

Every file is pinned in :mod:`rmlib.tables.data_files` and fetched, its hash
checked, by :func:`rmlib.tables.downloads.fetch` first. Readers return plain
pandas objects; strings such as ``"nan"`` stay strings.
"""

from __future__ import annotations

import pathlib

import numpy as np
import pandas as pd

from ..errors import DataFileError, InputError
from ..paths import offline
from ..prompts import ELO_PROMPTS, PAPER_PROMPTS
from .data_files import (PAPER_BASE_LOGIT_BLOBS, PAPER_COMMIT, PAPER_RM_SCORE_BLOBS, PUBLISHED_FIGURES,
                         PUBLISHED_TABLES, REGISTRY, DataFile, base_logits_key, paper_hub_id, rm_scores_key)
from .downloads import fetch, local_copy, remedy
from .token_csv import read_token_csv

__all__ = ["ELO_COLUMNS", "eloeverything", "fig2a_tau_transcribed", "paper_base_logits", "paper_token_scores",
           "published_figure", "published_gcg_tables", "published_table"]

ELO_COLUMNS = ("name", "elo_score", "elo_rank", "elo_matches")


def elo_key(prompt: str) -> str:
    if prompt in ELO_PROMPTS:
        return prompt
    norm = prompt.strip()
    for key, text in ELO_PROMPTS.items():
        if norm == text or norm == text.rstrip("?"):
            return key
    choices = "; ".join(f"{k!r} ({v!r})" for k, v in ELO_PROMPTS.items())
    raise InputError(f"unknown EloEverything prompt {prompt!r}; choose one of: {choices}")


def eloeverything(prompt: str = "one_word_greatest") -> pd.DataFrame:
    """EloEverything items with human Elo ratings and reward-model scores.

    One row per item (7,530), columns ``name, elo_score, elo_rank,
    elo_matches`` followed by one float64 column per reward model, named by
    its Hugging Face hub id (as in the released CSV). ``prompt`` is a short
    key of :data:`rmlib.prompts.ELO_PROMPTS` or the verbatim prompt text. The verbatim
    prompt is in ``df.attrs["prompt"]``, the file name in
    ``df.attrs["source"]``.
    """
    key = elo_key(prompt)
    entry = REGISTRY[f"elo_{key}"]
    raw = pd.read_csv(fetch(entry.name), keep_default_na=False, na_values=[""])
    missing = [c for c in ELO_COLUMNS if c not in raw.columns]
    if missing:
        raise DataFileError(f"{entry.path}: missing columns {missing}")
    model_cols = [c for c in raw.columns if c not in ELO_COLUMNS]
    df = raw[list(ELO_COLUMNS) + model_cols].copy()
    df["name"] = df["name"].astype(str)
    df[model_cols] = df[model_cols].astype("float64")
    df["elo_score"] = df["elo_score"].astype("float64")
    df.attrs["prompt"] = ELO_PROMPTS[key]
    df.attrs["source"] = entry.url
    return df


# ---- the per-token files ---------------------------------------------------


def _prompt_keys(prompts) -> list[str]:
    if prompts is None:
        return list(PAPER_PROMPTS)
    if isinstance(prompts, str):
        prompts = [prompts]
    out = []
    for p in prompts:
        key = next((k for k, v in PAPER_PROMPTS.items() if p in (k, v)), None)
        if key is None:
            raise InputError(f"unknown paper prompt {p!r}; choose from {list(PAPER_PROMPTS)} "
                             "or their verbatim texts")
        out.append(key)
    return out


def _long_table(entry: DataFile, model: str, keys: list[str], value: str,
                reader: str) -> tuple[pd.DataFrame, pathlib.Path]:
    """The file of ``entry``, fetched and read (:func:`~rmlib.tables.token_csv.read_token_csv` with
    ``reader``), as a long table: columns ``model, prompt, token_id, token, decoded, <value>``, the
    prompts ``keys`` in turn (``reader="authors"``: the rows with a missing value dropped, per prompt, as
    the authors' scripts did); and the file's path."""
    path = fetch(entry.name)
    try:
        raw = read_token_csv(path, {k: PAPER_PROMPTS[k] for k in keys}, reader=reader)
    except InputError as err:
        if reader != "exact":  # a reader that is none of the two
            raise
        raise DataFileError(f"{err} (a file of the paper's release whose hash checks out)") from None
    missing = [k for k in keys if k not in raw.columns]
    if missing:
        raise DataFileError(f"{path}: not a per-token file of the paper: missing columns {missing} "
                            f"(has {list(raw.columns)})")
    parts = []
    for k in keys:
        part = pd.DataFrame({
            "model": model, "prompt": PAPER_PROMPTS[k], "token_id": raw["token_id"].to_numpy(),
            "token": raw["token_name"].to_numpy(), "decoded": raw["token_decoded"].to_numpy(),
            value: raw[k].to_numpy(),
        })
        if reader == "authors":
            part = part[part[value].notna()]
        parts.append(part)
    return pd.concat(parts, ignore_index=True), path


def _provenance(entry: DataFile, hub: str, path: pathlib.Path, kind: str, keys) -> dict:
    return {"model_id": hub, "revision": None, "source": entry.url, "git_blob": entry.git_blob,
            "local": str(path), "kind": kind, "scored_by": "the paper's authors (released file)",
            "prompts": {k: PAPER_PROMPTS[k] for k in keys}, "paper_commit": PAPER_COMMIT}


def _paper_long(blobs: dict[str, str], key_of, models, prompts, value: str, kind: str,
                progress: bool, reader: str = "exact") -> pd.DataFrame:
    if isinstance(models, str) and models == "present":
        key_list = [key_of(h) for h in blobs]
        hubs = [h for h, k in zip(blobs, key_list) if local_copy(REGISTRY[k]) is not None]
        if not hubs:
            raise DataFileError(f"none of the paper's {kind} files is here. "
                                + remedy(REGISTRY[key_list[0]], online=not offline()))
    else:
        if isinstance(models, str):
            models = [models]
        hubs = [paper_hub_id(m, blobs, kind) for m in (models if models is not None else list(blobs))]
    keys = _prompt_keys(prompts)
    parts, prov = [], []
    from ..progress import bar as progress_bar

    bar = progress_bar(len(hubs), progress=progress, desc=f"released {kind} files", unit="file")
    for hub in hubs:
        entry = REGISTRY[key_of(hub)]
        long, path = _long_table(entry, hub, keys, value, reader)
        parts.append(long)
        prov.append(dict(_provenance(entry, hub, path, kind, keys), reader=reader))
        bar.update(1)
    bar.close()
    long = pd.concat(parts, ignore_index=True)
    long.attrs = {"provenance": prov}
    return long


def paper_token_scores(models=None, prompts=None, *, progress: bool = True, reader: str = "exact") -> pd.DataFrame:
    """The paper's released per-token scores, as a long score table.

    ``models``: hub ids or paper nicknames (None = all ten; ``"present"`` =
    those whose verified file is already here, nothing downloaded); ``prompts``:
    ``"greatest"``, ``"best"``, ``"worst"`` or their verbatim texts (None =
    all three). Every file is fetched and checked against its git blob id
    first (a missing file raises :class:`DataFileError` naming the file and
    both remedies; :func:`rmlib.tables.downloads.paper_data_status` asks
    without raising).
    Columns :data:`rmlib.tables.results.LONG_COLUMNS`; ``model`` is the hub
    id; ``attrs["provenance"]`` one dict per file. ``reader="authors"``
    reads the files as the paper's scripts did (see
    :func:`rmlib.tables.token_csv.read_token_csv`; rows with a missing score
    dropped per prompt, ``decoded`` may be missing, ``token_id`` float where
    rows were split), to reproduce the published tables.
    """
    return _paper_long(PAPER_RM_SCORE_BLOBS, rm_scores_key, models, prompts, "score", "reward model", progress,
                       reader)


def paper_base_logits(models=None, prompts=None, *, log_probs: bool = True,
                      progress: bool = True, reader: str = "exact") -> pd.DataFrame:
    """The paper's released Gemma next-token logits (Tables A.1–A.5), long.

    The files hold raw last-position logits (the authors' script has the
    ``log_softmax`` commented out). Columns ``model, prompt, token_id,
    token, decoded, logit`` and, with ``log_probs``, ``log_prob``: the
    log-softmax over the file's whole vocabulary per (model, prompt). Ranks
    within one prompt are the same either way; sums and differences across
    prompts (Tables A.4, A.5) differ by a constant per model, so their
    rankings are the same too.
    """
    long = _paper_long(PAPER_BASE_LOGIT_BLOBS, base_logits_key, models, prompts, "logit", "base model", progress,
                       reader)
    if log_probs:
        from scipy.special import logsumexp

        lse = long.groupby(["model", "prompt"], sort=False)["logit"].transform(lambda v: logsumexp(v.to_numpy()))
        long["log_prob"] = long["logit"] - lse
    return long


def published_table(key: str) -> pd.DataFrame:
    """One of the paper's published tables (``"1"``, ``"2a"``, ``"2b"``, ``"3"``, ``"A.1"``..``"A.9"``).

    Tables 1 and 3 as printed (numbers parsed). Tables 2a/2b: columns
    ``part`` (``"top"``/``"bottom"``), ``rank`` (1 = best within its part's
    order as printed), ``token_id``, ``decoded`` (exact whitespace), ``score``.
    Tables A.1–A.9: ``part``, ``rank`` and one column of decoded token
    strings per model, the ``...`` separator row dropped. Strings such as
    ``"nan"`` stay strings; tokens with ``\\r`` or ``\\n`` are read whole.
    ``attrs["source"]`` is the upstream URL.
    """
    k = key.strip()
    k = k.upper() if k.lower().startswith("a") else k.lower()
    if k.startswith("A") and not k.startswith("A."):
        k = "A." + k[1:]
    if k not in PUBLISHED_TABLES:
        raise KeyError(f"unknown published table {key!r}; choose from {list(PUBLISHED_TABLES)}")
    entry = REGISTRY[f"paper_table_{k}"]
    path = fetch(entry.name)
    if k in ("1", "3"):
        df = pd.read_csv(path)
    else:
        raw = pd.read_csv(path, lineterminator="\n", keep_default_na=False, na_values=[], dtype=str)
        sep = raw.eq("...").all(axis=1)
        if sep.sum() != 1:
            raise DataFileError(f"{path}: expected one '...' row between top and bottom, found {int(sep.sum())}")
        cut = int(np.flatnonzero(sep.to_numpy())[0])
        top, bottom = raw.iloc[:cut], raw.iloc[cut + 1:]
        df = pd.concat([top, bottom], ignore_index=True)
        df.insert(0, "rank", list(range(1, len(top) + 1)) + list(range(1, len(bottom) + 1)))
        df.insert(0, "part", ["top"] * len(top) + ["bottom"] * len(bottom))
        if k in ("2a", "2b"):
            df = df.rename(columns={"Token ID": "token_id", "Decoded": "decoded", "Score": "score"})
            df["token_id"] = df["token_id"].astype(np.int64)
            df["score"] = df["score"].astype(np.float64)
    df.attrs["source"] = entry.url
    df.attrs["table"] = k
    return df


def published_figure(key: str) -> pathlib.Path:
    """Local path of one of the paper's published figures (PNG; ``"1"``, ``"2A"``, ..., ``"A.7"``).

    MIT License, © 2025 Christian, Kirk, Thompson, Summerfield, Dumbalska:
    credit the authors where shown.
    """
    k = key.strip().upper()
    if k.startswith("A") and not k.startswith("A."):
        k = "A." + k[1:]
    if k not in PUBLISHED_FIGURES:
        raise KeyError(f"unknown published figure {key!r}; choose from {list(PUBLISHED_FIGURES)}")
    return fetch(f"paper_figure_{k}")


def fig2a_tau_transcribed(missing_ok: bool = False) -> pd.DataFrame | None:
    """The 10 x 10 Kendall tau matrix of Figure 2A, read off the published heatmap.

    Two decimals, symmetric, ones on the diagonal, rows/columns the paper's
    nicknames in the paper's order. The matrix the paper's RSA (§2.2,
    Fig. 2C) was run on. Project material (no upstream file): found only in ``RMLIB_DATA_DIR``.
    ``missing_ok``: return None when the file is not there (a damaged file is still an error).
    """
    try:
        path = fetch("fig2a_tau_transcribed")
    except DataFileError:
        if missing_ok:
            return None
        raise
    df = pd.read_csv(path, index_col=0)
    df.index = df.index.astype(str).str.strip()
    df.columns = df.columns.astype(str).str.strip()
    arr = df.to_numpy(dtype=float)
    if arr.shape[0] != arr.shape[1] or list(df.index) != list(df.columns):
        raise DataFileError(f"{path}: not a square matrix with the same labels on both axes")
    if not np.allclose(arr, arr.T) or not np.allclose(np.diag(arr), 1.0):
        raise DataFileError(f"{path}: the transcribed matrix must be symmetric with ones on the diagonal")
    df.index.name = None
    return df.astype(float)


def published_gcg_tables() -> pd.DataFrame:
    """The paper's Tables 4 and 5 (GCG results on R-Gem-2B) as printed, transcribed from its text.

    Columns ``table`` ("4" or "5"), ``prompt`` (greatest / best / worst for
    Table 4, the full prompt for Table 5), ``part`` (optimal / pessimal),
    ``start``, ``result``. No scores: they are not in the text copy here
    (see ``rmlib/resources/paper_gcg/README.md``). The authors released no
    file with these results. MIT-licensed paper material: credit Christian,
    Kirk, Thompson, Summerfield, Dumbalska (2025).
    """
    from .. import resources

    path = resources.path("paper_gcg/tables_4_5.csv")
    df = pd.read_csv(path, dtype=str, keep_default_na=False, na_values=[])
    expected = ["table", "prompt", "part", "start", "result"]
    if list(df.columns) != expected or not df["part"].isin(["optimal", "pessimal"]).all():
        raise DataFileError(f"{path}: expected columns {expected} and part optimal/pessimal; reinstall rmlib")
    df.attrs["source"] = "Christian et al. (2025), §5, Tables 4-5 (arXiv 2506.07326), transcribed"
    return df
