"""Preference data: EloEverything or a CSV (``item, rating`` or ``[prompt,] chosen, rejected``), read
and checked (errors name the file's rows), and the seeded split of its items into train and test."""

from __future__ import annotations

import dataclasses
import pathlib

import numpy as np
import pandas as pd

from ..errors import InputError
from ..tables.downloads import sha256sum
from .configuration import DEFAULT_PROMPT, MIN_TEST_ITEMS, MIN_TRAIN_ITEMS

@dataclasses.dataclass
class Preferences:
    """Preference data: items (``prompt, text, rating, row``) and, for pair data, ``pairs``."""

    items: pd.DataFrame  # columns prompt, text, rating (NaN without ratings), row (its first row in the file)
    pairs: pd.DataFrame | None  # pair data: columns chosen, rejected (indices into items)
    source: str
    sha256: str
    kind: str  # "ratings" or "pairs"
    prompt_column: bool = False  # the prompts come from the file's 'prompt' column (else from the config)


#: The largest preference CSV read (a larger file, or an endless one, is refused before it fills memory).
MAX_DATA_FILE = 512 << 20


def load_preferences(data: str = "eloeverything", prompt: str = DEFAULT_PROMPT) -> Preferences:
    """EloEverything (``"eloeverything"``) or a CSV of ``item, rating`` / ``[prompt,] chosen, rejected``.

    A CSV is read as UTF-8 text (a byte-order mark and Windows line ends are text, not data); column
    names are matched without regard to case or surrounding spaces. Refused, naming the rows: empty
    items, prompts or responses; an item listed twice with different ratings (listed twice with the
    same rating, it is kept once); a pair whose responses are the same; a file with both kinds of
    columns.
    """
    if not isinstance(prompt, str) or not prompt.strip():
        raise InputError("prompt must be a non-empty string")
    if data == "eloeverything":
        from ..tables import downloads, paper_release

        df = paper_release.eloeverything("greatest_ever")
        path = downloads.fetch("elo_greatest_ever")
        items = pd.DataFrame({"prompt": prompt, "text": df["name"].astype(str),
                              "rating": df["elo_score"].astype(float), "row": np.arange(1, len(df) + 1)})
        return Preferences(_unique_items(items, f"EloEverything ({path.name})"), None, df.attrs["source"],
                           sha256sum(path), "ratings")
    path = pathlib.Path(data).expanduser()
    if not path.is_file():
        raise InputError(f"data {data!r} is neither 'eloeverything' nor a CSV file"
                         f"{' (it is a folder)' if path.is_dir() else ''}: pass one of them")
    raw = _read_data_csv(path)
    cols = set(raw.columns)
    row = pd.Series(np.arange(1, len(raw) + 1), index=raw.index)
    pair_cols, rating_cols = {"chosen", "rejected"} <= cols, {"item", "rating"} <= cols
    if pair_cols and rating_cols:
        raise InputError(f"{path}: has both 'item, rating' and 'chosen, rejected' columns, so it cannot be told "
                         "which to train on: keep one kind of data per file")
    if pair_cols:
        with_prompt = "prompt" in cols
        for col in ("prompt", "chosen", "rejected") if with_prompt else ("chosen", "rejected"):
            blank = raw[col].isna() | (raw[col].str.strip() == "")
            if blank.any():
                fix = ("fill in every prompt, or drop the 'prompt' column so that every pair answers --prompt"
                       if col == "prompt" else "every pair needs two responses")
                raise InputError(f"{file_rows(path, row[blank])}: the {col!r} cell is empty; {fix}")
        prompts = raw["prompt"] if with_prompt else pd.Series(prompt, index=raw.index)
        same = (raw["chosen"] == raw["rejected"]).to_numpy()
        if same.any():
            raise InputError(f"{file_rows(path, row[same])}: the chosen and the rejected response are the same text; "
                             "a pair compares two different responses")
        spaced = (_spaces_folded(raw["chosen"]) == _spaces_folded(raw["rejected"])).to_numpy()
        if spaced.any():
            raise InputError(f"{file_rows(path, row[spaced])}: the chosen and the rejected response differ only in white "
                             "space, which a reward model should not learn to prefer; give two different responses "
                             "or remove the row")
        repeated = pd.DataFrame({"p": prompts, "c": raw["chosen"], "r": raw["rejected"]}).duplicated(keep=False)
        if repeated.any():
            first = raw[repeated.to_numpy()].iloc[0]
            rows = row[repeated.to_numpy() & (raw["chosen"] == first["chosen"]).to_numpy()
                       & (raw["rejected"] == first["rejected"]).to_numpy()]
            raise InputError(f"{file_rows(path, rows)}: the same pair ({first['chosen']!r} over {first['rejected']!r}"
                             f"{' for one prompt' if with_prompt else ''}) is listed {len(rows)} times, which would "
                             "count it as that many pairs; keep one row per pair")
        units = pd.concat([pd.DataFrame({"prompt": prompts, "text": raw["chosen"], "row": row}),
                           pd.DataFrame({"prompt": prompts, "text": raw["rejected"], "row": row})])
        items = units.drop_duplicates(["prompt", "text"]).reset_index(drop=True)  # chosen first: the order is the split's
        items.insert(2, "rating", np.nan)
        index = {(p, t): i for i, (p, t) in enumerate(zip(items["prompt"], items["text"]))}
        pairs = pd.DataFrame({"chosen": [index[k] for k in zip(prompts, raw["chosen"])],
                              "rejected": [index[k] for k in zip(prompts, raw["rejected"])]})
        return Preferences(items, pairs, str(path), sha256sum(path), "pairs", prompt_column=with_prompt)
    if rating_cols:
        blank = (raw["item"].isna() | (raw["item"].str.strip() == "")).to_numpy()
        if blank.any():
            raise InputError(f"{file_rows(path, row[blank])}: the 'item' cell is empty; every row names an item "
                             "(fill it in or remove the row)")
        rating = pd.to_numeric(raw["rating"].str.strip(), errors="coerce")
        bad = ~np.isfinite(rating.to_numpy(float))
        if bad.any():
            raise InputError(f"{file_rows(path, row[bad])}: column 'rating' must be finite numbers (Elo scale), not "
                             f"{raw['rating'][bad].iloc[0]!r}")
        items = pd.DataFrame({"prompt": prompt, "text": raw["item"], "rating": rating.astype(float), "row": row})
        items = _unique_items(items, str(path))
        _check_ratings(items["rating"].to_numpy(float), str(path))
        return Preferences(items, None, str(path), sha256sum(path), "ratings")
    raise InputError(f"{path}: needs columns 'item, rating' (ratings on the Elo scale) or 'chosen, rejected' "
                     f"(optionally 'prompt'); it has {sorted(cols)}")


def _read_data_csv(path: pathlib.Path) -> pd.DataFrame:
    """A preference CSV as strings (empty cells NaN), its header names stripped and lower-cased, each once."""
    import csv
    import io

    from ..tables.textfiles import read_text

    text = read_text(path, str(path), limit=MAX_DATA_FILE)
    if not text.strip():
        raise InputError(f"{path}: the file is empty; expected a header 'item,rating' or '[prompt,]chosen,rejected' "
                         "and one row per item or pair")
    header = [name.strip().lower() for name in next(r for r in csv.reader(io.StringIO(text)) if r)]
    repeated = sorted({name for name in header if header.count(name) > 1})
    if repeated:
        raise InputError(f"{path}: the header names column {repeated[0]!r} more than once (names are read without "
                         "regard to case or spaces); keep one column per name")
    try:
        raw = pd.read_csv(io.StringIO(text), header=0, names=header, dtype=str, keep_default_na=False,
                          na_values=[""])
    except (pd.errors.ParserError, pd.errors.EmptyDataError) as err:
        raise InputError(f"{path}: not a well-formed CSV ({str(err).strip().splitlines()[0]}); every row needs the "
                         "header's number of fields") from None
    if raw.empty:
        raise InputError(f"{path}: the CSV has a header but no rows; nothing to train on")
    return raw


def file_rows(where, rows) -> str:
    """``"<file>: row 3 (line 4)"`` / ``"<file>: rows 3, 9 (lines 4, 10)"``: rows counted from 1 after the header."""
    rows = [int(r) for r in rows]
    shown = rows[:5]
    more = " …" if len(rows) > 5 else ""
    if len(rows) == 1:
        return f"{where}: row {rows[0]} (line {rows[0] + 1})"
    return (f"{where}: rows {', '.join(map(str, shown))}{more} "
            f"(lines {', '.join(str(r + 1) for r in shown)}{more})")


def _spaces_folded(texts: pd.Series) -> pd.Series:
    """Each text with its runs of white space made one space and its ends stripped."""
    return texts.str.split().str.join(" ")


#: The largest rating magnitude read: Elo differences of twice this still have a finite win probability
#: (``elo_probability``) and a finite score difference.
MAX_RATING = 1e12


def _check_ratings(ratings: np.ndarray, what: str) -> None:
    """Ratings that can train a model: not all equal (nothing to learn), none beyond :data:`MAX_RATING`."""
    huge = np.abs(ratings) > MAX_RATING
    if huge.any():
        raise InputError(f"{what}: {int(huge.sum())} rating(s) beyond ±{MAX_RATING:g} (e.g. "
                         f"{ratings[huge][0]:g}): ratings are on the Elo scale (about 0 to 3000); rescale them")
    if len(ratings) and np.all(ratings == ratings[0]):
        raise InputError(f"{what}: every item has the same rating ({ratings[0]:g}), so there is no preference to "
                         "learn; give items with different ratings")


def _unique_items(items: pd.DataFrame, what: str) -> pd.DataFrame:
    """One row per item: an item repeated with the same rating is kept once; with different ratings it is
    an error naming the rows."""
    repeated = items[items["text"].duplicated(keep=False)]
    for text, group in repeated.groupby("text", sort=False):
        if group["rating"].nunique() > 1:
            raise InputError(f"{file_rows(what, group['row'])}: the item {text!r} is listed with different ratings "
                             f"({', '.join(f'{r:g}' for r in group['rating'])}); keep one row per item")
    return items.drop_duplicates("text", keep="first").reset_index(drop=True)


def split_items(n: int, test_fraction: float = 0.5, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Seeded item split: (train indices, test indices), both sorted, disjoint, covering 0..n-1."""
    n_test = int(round(n * test_fraction))
    if n - n_test < MIN_TRAIN_ITEMS or n_test < MIN_TEST_ITEMS:
        raise InputError(f"too few items ({n}) for a {test_fraction:.0%} test split: need at least "
                         f"{MIN_TRAIN_ITEMS} training and {MIN_TEST_ITEMS} test items")
    perm = np.random.default_rng(seed).permutation(n)
    return np.sort(perm[n_test:]), np.sort(perm[:n_test])
