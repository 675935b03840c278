"""The one reader of the paper's per-token CSV format.

The paper released, per model, a CSV of every token of its vocabulary with its
score under each of the three prompts (``data/reward_model_scores/<org>--<name>.csv``;
the Gemma next-token logits in ``data/base_model_logits/`` have the same
layout): columns ``token_id, token_name, token_decoded, greatest, best,
worst``, written by pandas ``to_csv(index=False)``. Two traps of that format:
a token that decodes to a bare ``"\\r"`` is written unquoted (a reader that
ends lines at ``"\\r"`` splits its row), and tokens such as ``"nan"``,
``"null"`` or ``""`` are strings, not missing values.

:func:`read_token_csv` reads it for every caller: the released files
(:mod:`rmlib.tables.paper_release`) and the copies a user hands to
``python -m rmlib import-paper-csv`` or a chapter's ``paper_scores_dir``
(:func:`rmlib.tables.store.import_paper_csv`). ``reader="authors"`` reads a
file the way the authors' analysis scripts did, to reproduce their tables.
"""

from __future__ import annotations

import csv
import io
import pathlib
from collections.abc import Mapping

import numpy as np
import pandas as pd

from ..errors import InputError
from ..prompts import PAPER_PROMPTS
from .textfiles import read_text

__all__ = ["MAX_TOKEN_CSV", "READERS", "TOKEN_COLUMNS", "read_token_csv"]

#: The largest per-token CSV read (the authors' largest, a 256,000-token vocabulary, is about 20 MB).
MAX_TOKEN_CSV = 512 << 20
#: The columns before the prompt columns.
TOKEN_COLUMNS = ("token_id", "token_name", "token_decoded")
#: ``"exact"``: every token read whole, checked; ``"authors"``: as the authors' scripts read the file.
READERS = ("exact", "authors")


def read_token_csv(path, prompts: Mapping[str, str] = PAPER_PROMPTS, *, reader: str = "exact") -> pd.DataFrame:
    """A per-token CSV as a table: ``token_id``, ``token_name``, ``token_decoded`` and its prompt columns.

    ``prompts``: prompt column name -> prompt (default the paper's three,
    :data:`rmlib.prompts.PAPER_PROMPTS`); the file must hold at least one
    of those columns.

    ``reader="exact"`` (default): the file is read as UTF-8 text (a
    byte-order mark and Windows line ends are text, not data), with
    ``"\\n"`` alone ending a line, so that a bare ``"\\r"`` token stays one
    token, and the token strings as strings, so that ``"nan"``, ``"null"``
    and ``""`` stay strings. The header's names are matched without regard to
    case or surrounding spaces, each once; every row has the header's number
    of fields; token ids are unique non-negative integers (``int64``); every
    score is a finite number (``float64``). An error (:class:`InputError`)
    names the file, the row and the column.

    ``reader="authors"``: ``pd.read_csv(path)`` as the authors' analysis
    scripts called it, no checks. There a bare ``"\\r"`` ends a line (that
    token's row is split into fragments whose scores are missing or
    misplaced) and ``"nan"``, ``"null"``, ``""`` become missing; token ids
    and scores are coerced to numbers (NaN where a fragment has none, float
    ids where a row was split). Only for reproducing the published tables:
    the authors' scripts then dropped the rows with a missing score, per
    prompt.
    """
    path = pathlib.Path(path)
    if reader == "authors":
        return _as_authors(path, prompts)
    if reader != "exact":
        raise InputError(f"reader must be 'exact' or 'authors', got {reader!r}")
    text, header = _text_and_header(path, prompts)
    raw = _read_table(text, header, path, {"token_name": str, "token_decoded": str})
    _check_columns(raw, path, prompts)
    keep = [*TOKEN_COLUMNS, *(c for c in prompts if c in raw.columns)]
    scores = keep[len(TOKEN_COLUMNS):]
    if _numbers_valid(raw, scores):  # the numbers as pandas read them: whole ids, unique, >= 0; finite scores
        return raw[keep].astype({"token_id": np.int64, **dict.fromkeys(scores, np.float64)})
    raw = _read_table(text, header, path, str)  # every field as written, to find the one at fault and name it
    _check_ids(raw, path)
    for col in scores:
        num = pd.to_numeric(raw[col].str.strip(), errors="coerce").to_numpy(np.float64)
        bad = ~np.isfinite(num)
        if bad.any():
            raise InputError(_where(raw, path, bad, col) + " is not a finite number; scores must be numbers")
        raw[col] = num
    return raw[keep]


def _as_authors(path: pathlib.Path, prompts: Mapping[str, str]) -> pd.DataFrame:
    df = pd.read_csv(path, dtype={"token_name": object, "token_decoded": object})
    df["token_id"] = pd.to_numeric(df["token_id"], errors="coerce")
    for col in (c for c in prompts if c in df.columns):
        df[col] = pd.to_numeric(df[col], errors="coerce")
    return df


def _text_and_header(path: pathlib.Path, prompts: Mapping[str, str]) -> tuple[str, list[str]]:
    """The file's text and its header's column names (lower case, stripped, each once), every row
    checked to have the header's number of fields."""
    if not path.is_file():
        raise InputError(f"{path}: no such file; pass the path of one of the paper's per-model CSVs")
    text = read_text(path, str(path), limit=MAX_TOKEN_CSV)
    if not text.strip():
        raise InputError(f"{path}: the file is empty; expected a header {','.join(TOKEN_COLUMNS)},"
                         f"{','.join(prompts)} and one row per token")
    # Field counts only: a bare "\r" (a token that decodes to it) is a character here, not a line end.
    rows = (r for r in csv.reader(io.StringIO(text.replace("\r", " "), newline="")) if r)
    header = [name.strip().lower() for name in next(rows)]
    repeated = sorted({name for name in header if header.count(name) > 1})
    if repeated:
        raise InputError(f"{path}: the header names column {repeated[0]!r} more than once (names are read without "
                         "regard to case or spaces); keep one column per name")
    width = len(header)
    for row, fields in enumerate(rows, start=1):
        if len(fields) != width:
            raise InputError(f"{path}: row {row} (line {row + 1}) has {len(fields)} fields, the header {width}; "
                             "fix or remove that row")
    return text, header


def _read_table(text: str, header: list[str], path: pathlib.Path, dtype) -> pd.DataFrame:
    """The rows under ``header``, ``"\\n"`` alone ending a line (the authors' ``to_csv`` leaves a token that
    decodes to a bare ``"\\r"`` unquoted), ``""``, ``"nan"``, ``"null"`` kept as written."""
    try:
        return pd.read_csv(io.StringIO(text), dtype=dtype, keep_default_na=False, na_values=[], lineterminator="\n",
                           header=0, names=header)
    except (pd.errors.ParserError, pd.errors.EmptyDataError) as err:
        raise InputError(f"{path}: not a well-formed CSV ({str(err).strip()}); every row needs the header's "
                         "number of fields") from None


def _check_columns(raw: pd.DataFrame, path: pathlib.Path, prompts: Mapping[str, str]) -> None:
    missing = set(TOKEN_COLUMNS) - set(raw.columns)
    if missing:
        raise InputError(f"{path}: not the paper's per-model format, missing columns {sorted(missing)}")
    if not any(c in raw.columns for c in prompts):
        raise InputError(f"{path}: none of the prompt columns {sorted(prompts)} is present")
    if raw.empty:
        raise InputError(f"{path}: the CSV has a header but no rows; nothing to import")


def _numbers_valid(raw: pd.DataFrame, scores: list[str]) -> bool:
    """Whether pandas read whole, unique, non-negative token ids and finite scores."""
    ids = raw["token_id"]
    if ids.dtype.kind != "i" or (ids < 0).any() or ids.duplicated().any():
        return False
    return all(raw[c].dtype.kind in "iuf" and np.isfinite(raw[c].to_numpy(np.float64)).all() for c in scores)


def _where(raw: pd.DataFrame, path: pathlib.Path, mask, col: str) -> str:
    row = int(np.argmax(mask))
    return f"{path}: row {row + 1} (line {row + 2}), column {col!r}: {raw[col].iloc[row]!r}"


def _check_ids(raw: pd.DataFrame, path: pathlib.Path) -> None:
    """``token_id`` checked (whole, small, non-negative, unique) and made ``int64``."""
    ids = raw["token_id"].str.strip()
    bad = ~ids.str.fullmatch(r"[+-]?\d+").to_numpy(dtype=bool)
    if bad.any():
        raise InputError(_where(raw, path, bad, "token_id") + " is not a whole number; token ids are integers")
    huge = ids.str.lstrip("+-").str.lstrip("0").str.len().to_numpy() > 18  # beyond int64 (and any vocabulary)
    if huge.any():
        raise InputError(_where(raw, path, huge, "token_id") + " is far beyond any vocabulary; token ids are small "
                         "integers")
    as_int = ids.astype(np.int64)
    neg = (as_int < 0).to_numpy()
    if neg.any():
        raise InputError(_where(raw, path, neg, "token_id") + " is negative; token ids start at 0")
    dup = as_int.duplicated().to_numpy()
    if dup.any():
        raise InputError(_where(raw, path, dup, "token_id") + " appears twice; each token id must be listed once")
    raw["token_id"] = as_int
