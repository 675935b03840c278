"""The pinned public files (data_files, downloads) and their readers (paper_release, lexicons,
word_frequencies) on the real reference files in RMLIB_DATA_DIR (../shared/data)."""

import csv
import hashlib
import io
import os
import pathlib
import shutil
import urllib.parse
import zipfile

import numpy as np
import pandas as pd
import pytest

from rmlib import prompts
from rmlib.errors import DataFileError
from rmlib import registry
from rmlib.tables import data_files, downloads, lexicons, paper_release, word_frequencies

DATA = pathlib.Path(os.environ["RMLIB_DATA_DIR"])


def _sha256sums() -> dict[str, str]:
    """The published hash lists: the top level, paper_published/ and followup/ (paths relative to DATA)."""
    out = {}
    for sums, prefix in ((DATA / "SHA256SUMS", ""), (DATA / "paper_published" / "SHA256SUMS", "paper_published/"),
                         (DATA / "followup" / "SHA256SUMS", "followup/")):
        for line in sums.read_text().splitlines():
            digest, path = line.split(maxsplit=1)
            out[prefix + path.removeprefix("./")] = digest
    return out


# --------------------------------------------------------------------------
# registry and fetch
# --------------------------------------------------------------------------


def test_registry_hashes_match_the_published_sha256sums():
    sums = _sha256sums()
    local = {e.path: e.sha256 for e in data_files.REGISTRY.values()
             if e.sha256 is not None and (DATA / e.path).is_file()}
    assert local == sums  # every local file registered, with its published hash
    # pinned files that are not in the shared folder: the third Elo prompt (SHA-256 from the
    # folder's README) and the per-token files (git blob ids instead)
    absent = {e.name for e in data_files.REGISTRY.values() if not (DATA / e.path).is_file()}
    assert "elo_humans_most_prefer" in absent
    assert data_files.REGISTRY["elo_humans_most_prefer"].sha256 == (
        "e0054924df7dfad64408c263ba373e5b27ebe78432ae7ba4c0ca5172073c1ed2")
    readme = (DATA / "README.md").read_text()
    for e in data_files.REGISTRY.values():
        if e.git_blob is not None and e.group not in data_files.FOLLOWUP_GROUPS:  # those: followup/BLOBS
            assert f"| data/{e.path} | {e.git_blob} |" in readme


def test_registry_urls_are_pinned_and_name_the_upstream_files():
    commit = "42dc162d0f88825d67f22f64ecc45648a9a09a48"
    for key, prompt in prompts.ELO_PROMPTS.items():
        url = data_files.REGISTRY[f"elo_{key}"].url
        assert f"/{commit}/data/elo/" in url
        assert " " not in url and "," not in url.rsplit("/", 1)[-1]  # URL-encoded
        assert urllib.parse.unquote(url.rsplit("/", 1)[-1]) == prompt.rstrip("?") + ".csv"
    for name in ("afinn_111", "bnc_1_1_all_alpha"):
        assert f"/{commit}/data/corpora/" in data_files.REGISTRY[name].url


def test_fetch_returns_verified_local_files():
    for e in data_files.REGISTRY.values():
        if e.sha256 is None or not (DATA / e.path).is_file():
            continue
        path = downloads.fetch(e.name)
        assert path == DATA / e.path
        assert hashlib.sha256(path.read_bytes()).hexdigest() == e.sha256


def test_fetch_unknown_name_lists_the_registry():
    with pytest.raises(KeyError, match="afinn_111"):
        downloads.fetch("no_such_file")


def test_sha_mismatch_is_a_clear_error(tmp_path, monkeypatch):
    target = tmp_path / "corpora" / "AFINN-111.txt"
    target.parent.mkdir()
    data = (DATA / "corpora" / "AFINN-111.txt").read_bytes()
    target.write_bytes(data.replace(b"abandon\t-2", b"abandon\t+2", 1))
    monkeypatch.setenv("RMLIB_DATA_DIR", str(tmp_path))
    with pytest.raises(DataFileError, match="SHA-256 mismatch") as exc:
        downloads.fetch("afinn_111")
    assert str(target) in str(exc.value)


def test_missing_file_names_both_remedies(tmp_path, monkeypatch):
    monkeypatch.setenv("RMLIB_DATA_DIR", str(tmp_path))
    with pytest.raises(DataFileError) as exc:
        downloads.fetch("bnc_1_1_all_alpha")
    msg = str(exc.value)
    assert "corpora/1_1_all_alpha.txt" in msg
    assert "RMLIB_DATA_DIR" in msg and "network" in msg


def test_third_elo_prompt_is_not_local_and_says_so():
    with pytest.raises(DataFileError, match="humans_most_prefer.csv"):
        paper_release.eloeverything("humans_most_prefer")


def test_offline_download_failure_names_both_remedies(tmp_path, monkeypatch):
    import pooch

    def offline(*args, **kwargs):
        raise ConnectionError("network is unreachable")

    monkeypatch.delenv("RMLIB_DATA_DIR", raising=False)
    monkeypatch.setenv("RMLIB_OFFLINE", "0")
    monkeypatch.setenv("RMLIB_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(pooch, "retrieve", offline)
    with pytest.raises(DataFileError) as exc:
        downloads.fetch("elo_one_word_greatest")
    msg = str(exc.value)
    assert "eloeverything/one_word_greatest.csv" in msg
    assert "RMLIB_DATA_DIR" in msg and "network" in msg


def test_download_passes_pinned_url_and_hash_to_pooch(tmp_path, monkeypatch):
    import pooch

    calls = []

    def fake_retrieve(url, known_hash, fname, path, progressbar):
        calls.append((url, known_hash, fname, pathlib.Path(path)))
        dest = pathlib.Path(path) / fname
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(DATA / "corpora" / "AFINN-111.txt", dest)
        return str(dest)

    monkeypatch.delenv("RMLIB_DATA_DIR", raising=False)
    monkeypatch.setenv("RMLIB_OFFLINE", "0")
    monkeypatch.setenv("RMLIB_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(pooch, "retrieve", fake_retrieve)
    path = downloads.fetch("afinn_111")
    entry = data_files.REGISTRY["afinn_111"]
    assert calls == [(entry.url, "sha256:" + entry.sha256, "AFINN-111.txt", tmp_path / "corpora")]
    assert path == tmp_path / "corpora" / "AFINN-111.txt"


def _original_form_zip(dest: pathlib.Path) -> pathlib.Path:
    """An opinion_lexicon.zip in the upstream form: Latin-1, long header."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for kind in ("positive", "negative"):
            words = [
                w
                for w in (DATA / "opinion_lexicon" / f"{kind}-words.txt").read_text("utf-8").splitlines()
                if w and not w.startswith(";")
            ]
            header = [";" * 60, f";  Opinion Lexicon: {kind.title()}", ";", ";  (long header)", ";" * 60, ""]
            text = "\n".join(header + words) + "\n"
            zf.writestr(f"opinion_lexicon/{kind}-words.txt", text.encode("latin-1"))
    dest.write_bytes(buf.getvalue())
    return dest


def test_bing_lexicon_reads_the_upstream_zip_form(tmp_path, monkeypatch):
    _original_form_zip(tmp_path / "opinion_lexicon.zip")
    monkeypatch.setenv("RMLIB_DATA_DIR", str(tmp_path))
    monkeypatch.setenv("RMLIB_CACHE_DIR", str(tmp_path / "cache"))
    from_zip = lexicons.bing_lexicon()
    monkeypatch.setenv("RMLIB_DATA_DIR", str(DATA))
    from_text = lexicons.bing_lexicon()
    pd.testing.assert_frame_equal(from_zip, from_text)
    assert "naïve" in set(from_zip["word"])  # Latin-1 decoded


def test_bing_lexicon_via_pooch_extracts_the_zip_member(tmp_path, monkeypatch):
    import pooch

    archive = _original_form_zip(tmp_path / "upstream.zip")

    def fake_retrieve(url, known_hash, fname, path, progressbar):
        assert url.endswith("opinion_lexicon.zip") and known_hash is None
        dest = pathlib.Path(path) / fname
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(archive, dest)
        return str(dest)

    monkeypatch.delenv("RMLIB_DATA_DIR", raising=False)
    monkeypatch.setenv("RMLIB_OFFLINE", "0")
    monkeypatch.setenv("RMLIB_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(pooch, "retrieve", fake_retrieve)
    df = lexicons.bing_lexicon()
    assert df["sentiment"].value_counts().to_dict() == {"negative": 4783, "positive": 2006}


def test_bing_word_list_that_differs_is_rejected(tmp_path, monkeypatch):
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr("opinion_lexicon/positive-words.txt", "good\ngreat\n")
        zf.writestr("opinion_lexicon/negative-words.txt", "bad\n")
    (tmp_path / "opinion_lexicon.zip").write_bytes(buf.getvalue())
    monkeypatch.setenv("RMLIB_DATA_DIR", str(tmp_path))
    monkeypatch.setenv("RMLIB_CACHE_DIR", str(tmp_path / "cache"))
    with pytest.raises(DataFileError, match="differs from the pinned"):
        lexicons.bing_lexicon()


# --------------------------------------------------------------------------
# EloEverything
# --------------------------------------------------------------------------


def test_eloeverything_shape_and_columns():
    df = paper_release.eloeverything("one_word_greatest")
    hub_ids = set(registry.paper_models()["hub_id"])
    assert len(df) == 7530
    assert list(df.columns[:4]) == ["name", "elo_score", "elo_rank", "elo_matches"]
    assert set(df.columns[4:]) == hub_ids
    assert all(df[c].dtype == np.float64 for c in hub_ids)
    assert df["name"].is_unique
    # independent read of the same file with the csv module
    with open(DATA / "eloeverything" / "one_word_greatest.csv", newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == len(df)
    assert [r["name"] for r in rows] == df["name"].tolist()
    col = "Ray2333/GRM-gemma2-2B-rewardmodel-ft"
    np.testing.assert_array_equal([float(r[col]) for r in rows], df[col].to_numpy())


def test_eloeverything_accepts_verbatim_prompts_and_shares_elo_columns():
    a = paper_release.eloeverything("What, in one word, is the greatest thing ever?")
    b = paper_release.eloeverything(prompts.ELO_PROMPTS["greatest_ever"])
    assert a.attrs["prompt"] == prompts.ELO_PROMPTS["one_word_greatest"]
    cols = ["name", "elo_score", "elo_rank", "elo_matches"]
    pd.testing.assert_frame_equal(a[cols], b[cols])
    assert not np.allclose(a.iloc[:, 4:].to_numpy(), b.iloc[:, 4:].to_numpy())


def test_eloeverything_unknown_prompt_lists_choices():
    with pytest.raises(ValueError) as exc:
        paper_release.eloeverything("worst thing ever")
    for key, prompt in prompts.ELO_PROMPTS.items():
        assert key in str(exc.value) and prompt in str(exc.value)


# --------------------------------------------------------------------------
# Lexicons and frequencies
# --------------------------------------------------------------------------


def test_afinn111_matches_an_independent_read():
    s = lexicons.afinn111()
    ref = pd.read_csv(DATA / "corpora" / "AFINN-111.txt", sep="\t", header=None,
                      names=["word", "score"], quoting=csv.QUOTE_NONE, keep_default_na=False)
    assert len(s) == 2477 == len(ref)
    assert s.dtype == np.int64
    assert s.to_dict() == dict(zip(ref["word"], ref["score"]))
    assert s.min() == -5 and s.max() == 5


def test_afinn111_falls_back_to_fetch(monkeypatch):
    from_package = lexicons.afinn111()
    monkeypatch.setattr(lexicons, "_afinn_package_file", lambda: None)
    from_fetch = lexicons.afinn111()
    assert from_fetch.attrs["source"] == str(DATA / "corpora" / "AFINN-111.txt")
    pd.testing.assert_series_equal(from_package, from_fetch)


def test_bing_lexicon_counts_and_overlap():
    df = lexicons.bing_lexicon()
    assert df["sentiment"].value_counts().to_dict() == {"negative": 4783, "positive": 2006}
    assert not df["word"].str.startswith(";").any()
    both = df.groupby("word")["sentiment"].nunique()
    assert sorted(both[both > 1].index) == df.attrs["in_both"] == ["envious", "enviously", "enviousness"]


def _bnc_lines():
    text = (DATA / "corpora" / "1_1_all_alpha.txt").read_bytes().decode("latin-1")
    return [ln.lstrip("\t").split("\t") for ln in text.split("\n")[1:] if ln]


def test_bnc_raw_has_every_line():
    raw = word_frequencies.bnc_frequencies("raw")
    lines = _bnc_lines()
    assert len(raw) == 18088 == len(lines)
    assert int(raw["is_form"].sum()) == sum(f[0] == "@" for f in lines)
    assert raw["word"].tolist() == [f[0] for f in lines]


def test_bnc_lemma_rows_sum_freq_over_pos():
    lem = word_frequencies.bnc_frequencies("lemma").set_index("word")
    lines = [f for f in _bnc_lines() if f[0] != "@"]
    for word in ("work", "love", "present", "the"):
        freqs = [float(f[3].rstrip("#")) for f in lines if f[0].lower() == word]
        assert lem.loc[word, "freq"] == pytest.approx(sum(freqs))
        assert lem.loc[word, "n_pos"] == len(freqs)
    assert lem.index.is_unique and (lem.index == lem.index.str.lower()).all()
    ok = lem["freq"] > 0
    np.testing.assert_allclose(lem.loc[ok, "log_freq"], np.log(lem.loc[ok, "freq"]))


def test_bnc_forms_carry_the_form_string_and_lemma():
    forms = word_frequencies.bnc_frequencies("forms")
    work = forms[forms["lemma"] == "work"]
    assert {"work", "works", "worked", "working"} <= set(work["word"])
    assert (forms["word"] != "@").all()


def test_bnc_paper_rows_drop_marked_and_zero_frequencies():
    paper = word_frequencies.bnc_frequencies("paper")
    lines = [f for f in _bnc_lines() if f[0] != "@" and len(f) >= 4]
    numeric = [f for f in lines if f[3].isdigit() and int(f[3]) > 0]
    assert len(paper) == len(numeric)
    assert (paper["freq"] > 0).all()
    base = paper[paper["word"] == "base"]
    assert base["pos"].tolist() == ["Verb"]  # the noun's Freq is "98#" in the file


def test_bnc_rejects_unknown_rows():
    with pytest.raises(ValueError, match="lemma"):
        word_frequencies.bnc_frequencies("words")
