"""rmlib.tables.token_csv: the one reader of the paper's per-token CSV format, against an independent parse.

The real per-token files are not in the shared folder (too large; their git blobs are not in the
mirrored repository either), so the files here are written the way the authors wrote theirs (pandas
``to_csv(index=False)``): one from the real R-Gem-2B tokens and scores of the published Table 2a,
and one of random scores at full precision with the format's traps (a bare carriage return, "nan",
"", a newline, a comma, a quote). The independent parse is the csv module and ``float``.
"""

import csv
import dataclasses
import io
import os
import pathlib

import numpy as np
import pandas as pd
import pytest

from rmlib.errors import DataFileError, InputError
from rmlib.tables import data_files, paper_release, store
from rmlib.tables.token_csv import read_token_csv
from tests.released_files import git_blob

DATA = pathlib.Path(os.environ["RMLIB_DATA_DIR"])
PROMPTS = ("greatest", "best", "worst")
GEM = "Ray2333/GRM-gemma2-2B-rewardmodel-ft"  # R-Gem-2B
TRAPS = ["\r", "nan", "", "\n", " a,b", '"', "null", "<pad>"]


def independent_parse(path: pathlib.Path) -> pd.DataFrame:
    """The csv module's reading, a bare "\\r" kept as a character (it ends no line in the authors' files)."""
    hold = "\ue000"  # a private-use character the files do not hold
    text = path.read_bytes().decode("utf-8")
    assert hold not in text
    rows = list(csv.reader(io.StringIO(text.replace("\r", hold), newline="")))
    header, body = rows[0], [[f.replace(hold, "\r") for f in r] for r in rows[1:] if r]
    cols = dict(zip(header, zip(*body)))
    out = pd.DataFrame({"token_id": np.array([int(v) for v in cols["token_id"]], dtype=np.int64),
                        "token_name": list(cols["token_name"]), "token_decoded": list(cols["token_decoded"])})
    for p in PROMPTS:
        out[p] = np.array([float(v) for v in cols[p]], dtype=np.float64)
    return out


def _pin_as_released(path: pathlib.Path, tmp_path: pathlib.Path, monkeypatch) -> None:
    """``path`` as R-Gem-2B's released per-token file in a data folder, pinned by its git blob id."""
    key = data_files.rm_scores_key(GEM)
    entry = data_files.REGISTRY[key]
    pinned = tmp_path / "data" / entry.path
    pinned.parent.mkdir(parents=True)
    pinned.write_bytes(path.read_bytes())
    monkeypatch.setenv("RMLIB_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setitem(data_files.REGISTRY, key, dataclasses.replace(entry, git_blob=git_blob(pinned)))


def _written(df: pd.DataFrame, path: pathlib.Path) -> pathlib.Path:
    df.to_csv(path, index=False)  # exactly the authors' call
    return path


@pytest.fixture
def table2a_file(tmp_path):
    """R-Gem-2B's real top and bottom tokens and scores (published Table 2a) in the per-token format."""
    t = pd.read_csv(DATA / "paper_published/tables/table_2a_top_bottom_tokens_R-Gem-2B.csv",
                    keep_default_na=False, dtype={"Decoded": str}, lineterminator="\n")
    t = t[t["Token ID"] != "..."]
    df = pd.DataFrame({"token_id": t["Token ID"].astype(np.int64), "token_name": t["Decoded"],
                       "token_decoded": t["Decoded"]})
    for i, p in enumerate(PROMPTS):
        df[p] = t["Score"].astype(float).to_numpy() - i
    return _written(df, tmp_path / "table2a_tokens.csv")


@pytest.fixture
def traps_file(tmp_path):
    rng = np.random.default_rng(11)
    n = 2000
    names = [f"t{i}" for i in range(n)]
    names[1:1 + len(TRAPS)] = TRAPS
    df = pd.DataFrame({"token_id": rng.permutation(n), "token_name": names, "token_decoded": names})
    for p in PROMPTS:
        df[p] = rng.normal(size=n) * np.exp(rng.normal(size=n) * 8)  # every digit of a float64, wide exponents
    return _written(df, tmp_path / "traps.csv")


@pytest.mark.parametrize("fixture", ["table2a_file", "traps_file"])
def test_values_equal_an_independent_parse(fixture, request):
    path = request.getfixturevalue(fixture)
    got, want = read_token_csv(path), independent_parse(path)
    assert list(got.columns) == list(want.columns)
    for col in want.columns:
        a, b = got[col].to_numpy(), want[col].to_numpy()
        assert a.dtype == b.dtype or a.dtype == object, col
        if a.dtype.kind == "f":
            np.testing.assert_array_equal(a.view(np.int64), b.view(np.int64))  # the same bits
        else:
            assert a.tolist() == b.tolist(), col
    if fixture == "traps_file":
        assert set(TRAPS) <= set(got["token_decoded"])  # "\r", "nan", "" intact


def test_the_store_and_the_release_read_the_same_values(traps_file, tmp_path, monkeypatch):
    """import_paper_csv (a user's copy) and paper_token_scores (the pinned file) read through the one reader."""
    _pin_as_released(traps_file, tmp_path, monkeypatch)
    long = paper_release.paper_token_scores([GEM], progress=False)
    want = independent_parse(traps_file)
    for p, (text, table) in zip(PROMPTS, store.import_paper_csv(traps_file, GEM).items()):
        part = long[long["prompt"] == text].sort_values("token_id")
        np.testing.assert_array_equal(part["score"].to_numpy(), table["score"].to_numpy())
        np.testing.assert_array_equal(table["score"].to_numpy(), want.sort_values("token_id")[p].to_numpy())
        assert part["decoded"].tolist() == table["decoded"].tolist()


def test_the_authors_reader_is_an_option_of_the_one_reader(traps_file):
    """``reader="authors"``: pandas' plain read_csv, which splits the carriage-return row and loses "nan"."""
    exact, authors = read_token_csv(traps_file), read_token_csv(traps_file, reader="authors")
    assert len(authors) > len(exact) and authors["token_id"].isna().any()  # the "\r" row split in two
    assert "nan" not in set(authors["token_decoded"].dropna())
    whole = authors.dropna(subset=["token_id", *PROMPTS]).astype({"token_id": np.int64}).set_index("token_id")
    same = exact.set_index("token_id").loc[whole.index]
    np.testing.assert_array_equal(whole[list(PROMPTS)].to_numpy(), same[list(PROMPTS)].to_numpy())
    with pytest.raises(InputError, match="'exact' or 'authors'"):
        read_token_csv(traps_file, reader="pandas")


def test_a_bad_field_is_named_and_a_released_file_says_so(traps_file, tmp_path, monkeypatch):
    bad = tmp_path / "bad.csv"
    bad.write_text(_with_bad_score(traps_file), encoding="utf-8")
    with pytest.raises(InputError, match=r"column 'best': 'oops' is not a finite number"):
        read_token_csv(bad)
    _pin_as_released(bad, tmp_path, monkeypatch)
    with pytest.raises(DataFileError, match="'oops' is not a finite number.*paper's release"):
        paper_release.paper_token_scores([GEM], progress=False)


def _with_bad_score(path: pathlib.Path) -> str:
    df = pd.read_csv(path, keep_default_na=False, dtype=str, lineterminator="\n")
    df.loc[5, "best"] = "oops"
    out = io.StringIO()
    df.to_csv(out, index=False)
    return out.getvalue()
