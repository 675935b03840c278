"""Public data downloaded for real: the registered files served over HTTP on 127.0.0.1.

A mirror of the upstream hosts (``tests/data_mirror.py``: the reference folder's
files at their pinned URLs' places) stands in for the internet, reached through
``RMLIB_DATA_MIRROR``, the variable a user's own mirror would use. pooch really
downloads; the hashes are really checked. ``RMLIB_DATA_DIR`` points at an empty
folder, the cache starts empty and offline mode (the test suite's default) is
turned off here only.
"""

import dataclasses
import hashlib
import os
import pathlib

import numpy as np
import pandas as pd
import pytest

from rmlib.cli import main as cli_main
from rmlib.prompts import PAPER_PROMPTS
from rmlib.errors import DataFileError, InputError
from rmlib.tables import data_files, downloads, lexicons, paper_release, word_frequencies
from tests import data_mirror
from tests.local_http import live_server_threads
from tests.released_files import git_blob

DATA = pathlib.Path(os.environ["RMLIB_DATA_DIR"])
ELO = "elo_one_word_greatest"


@pytest.fixture(scope="module")
def mirror_folder(tmp_path_factory):
    folder = tmp_path_factory.mktemp("mirror")
    names = data_mirror.build(DATA, folder)
    assert {ELO, "afinn_111", "bnc_1_1_all_alpha", "bing_positive", "paper_table_2a"} <= set(names)
    return folder


@pytest.fixture
def cuts():
    """Request paths whose next GETs the mirror cuts off (:func:`tests.data_mirror.serve`)."""
    return {}


@pytest.fixture
def online(mirror_folder, tmp_path, monkeypatch, cuts):
    """Online with an empty data folder and an empty cache, the mirror served locally."""
    (tmp_path / "empty").mkdir()
    monkeypatch.setenv("RMLIB_DATA_DIR", str(tmp_path / "empty"))
    monkeypatch.setenv("RMLIB_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("RMLIB_OFFLINE", "0")
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    monkeypatch.setenv("no_proxy", "127.0.0.1,localhost")
    with data_mirror.serve(mirror_folder, cut=cuts) as (url, requested):
        monkeypatch.setenv("RMLIB_DATA_MIRROR", url)
        yield url, requested, tmp_path / "cache"
    assert live_server_threads() == []


def test_mirror_url_keeps_the_upstream_host_and_quoted_path(monkeypatch):
    entry = data_files.REGISTRY[ELO]
    monkeypatch.delenv("RMLIB_DATA_MIRROR", raising=False)
    assert downloads.download_url(ELO) == entry.url
    monkeypatch.setenv("RMLIB_DATA_MIRROR", "http://mirror.example/data/")
    assert downloads.download_url(ELO) == "http://mirror.example/data/" + entry.url.removeprefix("https://")
    assert downloads.mirror_path(ELO).endswith("/data/elo/What, in one word, is the greatest thing ever.csv")


def test_download_into_an_empty_cache_checks_and_keeps_it(online):
    url, requested, cache = online
    path = downloads.fetch(ELO)
    entry = data_files.REGISTRY[ELO]
    assert path == cache / entry.path
    assert path.read_bytes() == (DATA / entry.path).read_bytes()
    assert hashlib.sha256(path.read_bytes()).hexdigest() == entry.sha256
    assert requested == ["/" + downloads.download_url(ELO).removeprefix(url + "/")]
    assert downloads.fetch(ELO) == path and len(requested) == 1  # the second time from the cache
    # a copy in RMLIB_DATA_DIR wins over the cache
    local = pathlib.Path(os.environ["RMLIB_DATA_DIR"]) / entry.path
    local.parent.mkdir(parents=True)
    local.write_bytes(path.read_bytes())
    assert downloads.fetch(ELO) == local


def test_tampered_file_on_the_server_is_refused_and_not_kept(online, mirror_folder):
    _, requested, cache = online
    served = mirror_folder / downloads.mirror_path("afinn_111")
    original = served.read_bytes()
    served.write_bytes(original.replace(b"abandon\t-2", b"abandon\t+2", 1))
    try:
        with pytest.raises(DataFileError) as err:
            downloads.fetch("afinn_111")
    finally:
        served.write_bytes(original)
    msg = str(err.value)
    assert "afinn_111" in msg and "fails its SHA-256 check" in msg and downloads.download_url("afinn_111") in msg
    assert "\n" not in msg
    assert not (cache / data_files.REGISTRY["afinn_111"].path).exists()
    assert downloads.fetch("afinn_111").read_bytes() == original  # the genuine file, downloaded again
    assert len(requested) == 2


def test_an_interrupted_download_starts_again_and_keeps_nothing_partial(online, cuts):
    """The server closes the connection midway through the body: the download starts again and the whole file
    is kept; cut off every time, it is a clear error and the cache holds nothing of it, not even a part."""
    url, requested, cache = online
    served = {name: "/" + downloads.download_url(name).removeprefix(url + "/") for name in ("afinn_111", "bnc_1_1_all_alpha")}
    cuts[served["afinn_111"]] = [1000]
    path = downloads.fetch("afinn_111")
    entry = data_files.REGISTRY["afinn_111"]
    assert path.read_bytes() == (DATA / entry.path).read_bytes()
    assert hashlib.sha256(path.read_bytes()).hexdigest() == entry.sha256
    assert requested.count(served["afinn_111"]) == 2 and not cuts[served["afinn_111"]]
    assert sorted(p.name for p in path.parent.iterdir()) == [path.name]  # no temporary file left beside it

    cuts[served["bnc_1_1_all_alpha"]] = [500] * downloads.DOWNLOAD_ATTEMPTS
    with pytest.raises(DataFileError) as err:
        downloads.fetch("bnc_1_1_all_alpha")
    msg = str(err.value)
    assert "could not download bnc_1_1_all_alpha" in msg and "\n" not in msg
    assert requested.count(served["bnc_1_1_all_alpha"]) == downloads.DOWNLOAD_ATTEMPTS
    bnc = cache / data_files.REGISTRY["bnc_1_1_all_alpha"].path
    assert bnc.parent == path.parent and sorted(p.name for p in bnc.parent.iterdir()) == [path.name]  # no part of it
    assert len(word_frequencies.bnc_frequencies("raw")) == 18088  # the connection whole again: downloaded


def test_git_blob_pinned_download_is_checked(online, mirror_folder, monkeypatch):
    """A per-token file (pinned by git blob id): a genuine download kept, a different one refused."""
    _, requested, cache = online
    key = data_files.rm_scores_key("R-Gem-2B")
    served = mirror_folder / downloads.mirror_path(key)
    served.parent.mkdir(parents=True, exist_ok=True)
    served.write_bytes(b"token_id,token_name,token_decoded,greatest,best,worst\n0,a,a,1.0,2.0,3.0\n")
    monkeypatch.setitem(data_files.REGISTRY, key, dataclasses.replace(data_files.REGISTRY[key], git_blob=git_blob(served)))
    long = paper_release.paper_token_scores(["R-Gem-2B"], progress=False)
    assert long["score"].tolist() == [1.0, 2.0, 3.0]
    (cache / data_files.REGISTRY[key].path).unlink()
    served.write_bytes(served.read_bytes().replace(b"1.0", b"9.0"))
    with pytest.raises(DataFileError, match="git blob id mismatch.*not kept"):
        downloads.fetch(key)
    assert not (cache / data_files.REGISTRY[key].path).exists()


@pytest.fixture
def served_logits(mirror_folder, monkeypatch):
    """Small files of the FAccT base-model logit format (3 tokens x the 3 prompts) served at the pinned places
    of the released ones and pinned here by their blob ids; removed from the mirror after the test."""
    keys = {hub: data_files.base_logits_key(hub) for hub in data_files.PAPER_BASE_LOGIT_BLOBS}
    logits, paths = {}, []
    for i, (hub, key) in enumerate(keys.items()):
        served = mirror_folder / downloads.mirror_path(key)
        assert not served.exists()
        served.parent.mkdir(parents=True, exist_ok=True)
        paths.append(served)
        logits[hub] = np.array([[1.0, 2.0, 0.5], [3.0, -1.0, 0.5], [0.0, 0.0, 4.0 + i]])
        rows = [f"{t},tok{t},w{t},{','.join(map(str, v))}" for t, v in enumerate(logits[hub])]
        served.write_text("token_id,token_name,token_decoded,greatest,best,worst\n" + "\n".join(rows) + "\n")
        monkeypatch.setitem(data_files.REGISTRY, key, dataclasses.replace(data_files.REGISTRY[key],
                                                                           git_blob=git_blob(served)))
    yield logits
    for served in paths:
        served.unlink()


def test_the_optional_large_sets_download_when_asked_and_chapters_read_them(online, served_logits):
    """The FAccT base-model logits (too large to ship; chapter 6 uses them when present): not here until asked
    for; ``paper-data --download`` fetches and checks them; then the chapters' reader uses them."""
    _, requested, cache = online
    assert not downloads.paper_data_status("base_logits")["present"].any() and requested == []
    assert cli_main(["paper-data", "--group", "base_logits", "--download"]) == 0
    assert len(requested) == len(served_logits) and downloads.paper_data_status("base_logits")["present"].all()
    long = paper_release.paper_base_logits(progress=False)
    for hub, values in served_logits.items():
        got = long[long["model"] == hub].pivot(index="token_id", columns="prompt", values="logit")
        np.testing.assert_array_equal(got[[PAPER_PROMPTS[k] for k in ("greatest", "best", "worst")]].to_numpy(), values)
        lp = long[(long["model"] == hub) & (long["prompt"] == PAPER_PROMPTS["greatest"])]["log_prob"].to_numpy()
        np.testing.assert_allclose(lp, values[:, 0] - np.log(np.exp(values[:, 0]).sum()))
    assert len(requested) == len(served_logits)  # read from the cache after


def test_chapters_4_and_6_released_files_download_with_no_data_folder(online, monkeypatch):
    """What chapters 4 and 6 read of the releases (EloEverything; the follow-up's Big Two scores, its
    training ranks and the published Table A.1; two RMs and two runs here, for time), with RMLIB_DATA_DIR unset
    and an empty cache: downloaded, checked and read the same as the reference folder's copies."""
    _, requested, cache = online
    from rmlib.tables import followup

    def read():
        return {"elo": paper_release.eloeverything("one_word_greatest"),
                "big2": followup.scores("big2", models=["R-Gem-2B", "F-Lla-8B-v0.1"], prompts_subset=["best_ever_one"]),
                "ranks": followup.training_ranks(["uf_13", "grm_80k"]), "A.1": paper_release.published_table("A.1")}

    monkeypatch.setenv("RMLIB_DATA_DIR", str(DATA))
    reference = read()
    assert requested == []
    monkeypatch.delenv("RMLIB_DATA_DIR")
    downloaded = read()
    assert len(requested) >= 6
    for name, frame in reference.items():
        pd.testing.assert_frame_equal(downloaded[name], frame, check_like=False, obj=name)
    assert all(str(p).startswith(str(cache)) for p in (downloads.local_copy(data_files.REGISTRY[ELO]),))
    asked = len(requested)
    monkeypatch.setenv("RMLIB_OFFLINE", "1")
    read()
    assert len(requested) == asked


def test_a_file_the_server_lacks_is_a_clear_error(online):
    with pytest.raises(DataFileError) as err:
        downloads.fetch("elo_humans_most_prefer")  # not in the reference folder, so not on the mirror
    msg = str(err.value)
    assert "could not download elo_humans_most_prefer" in msg and "404" in msg
    assert "RMLIB_DATA_MIRROR" in msg and "eloeverything/humans_most_prefer.csv" in msg


def test_offline_names_the_file_the_folders_and_the_fix(online, monkeypatch):
    _, requested, cache = online
    monkeypatch.setenv("RMLIB_OFFLINE", "1")
    with pytest.raises(DataFileError) as err:
        downloads.fetch("bnc_1_1_all_alpha")
    msg = str(err.value)
    empty = pathlib.Path(os.environ["RMLIB_DATA_DIR"])
    assert str(empty / "corpora" / "1_1_all_alpha.txt") in msg and str(cache / "corpora" / "1_1_all_alpha.txt") in msg
    assert "RMLIB_OFFLINE=1 forbids" in msg and "put the file at" in msg
    assert requested == []
    monkeypatch.setenv("RMLIB_OFFLINE", "perhaps")
    with pytest.raises(InputError, match="RMLIB_OFFLINE"):
        downloads.fetch("bnc_1_1_all_alpha")


def test_a_chapters_data_path_downloads_everything_it_reads(online, monkeypatch):
    """What chapters 1-4 read (EloEverything, lexicons, frequencies, published tables and figures),
    with an empty data folder: every file downloaded once, each equal to the reference copy."""
    _, requested, cache = online
    monkeypatch.setattr(lexicons, "_afinn_package_file", lambda: None)  # AFINN from the network too
    elo = paper_release.eloeverything("one_word_greatest")
    assert len(elo) == 7530
    assert len(lexicons.afinn111()) == 2477
    assert lexicons.bing_lexicon()["sentiment"].value_counts().to_dict() == {"negative": 4783, "positive": 2006}
    assert len(word_frequencies.bnc_frequencies("raw")) == 18088
    table = paper_release.published_table("2a")
    assert list(table.columns[:2]) == ["part", "rank"]
    fig = paper_release.published_figure("1")
    assert fig.read_bytes() == (DATA / data_files.REGISTRY["paper_figure_1"].path).read_bytes()
    assert len(requested) == 6  # one zip for both Bing lists
    # the same calls now read the cache only
    monkeypatch.setenv("RMLIB_OFFLINE", "1")
    pd.testing.assert_frame_equal(paper_release.eloeverything("one_word_greatest"), elo)
    assert len(requested) == 6


def test_paper_data_command_reports_both_modes(online, monkeypatch, capsys):
    _, requested, cache = online
    monkeypatch.setenv("RMLIB_OFFLINE", "1")
    assert cli_main(["paper-data", "--group", "published_tables", "-v"]) == 1
    out = capsys.readouterr().out
    assert out.count("absent ") == 13 and "RMLIB_OFFLINE=1 forbids" in out and "unset RMLIB_OFFLINE" in out
    monkeypatch.setenv("RMLIB_OFFLINE", "0")
    assert cli_main(["paper-data", "--group", "published_tables", "-v"]) == 1
    out = capsys.readouterr().out
    assert "not downloaded yet" in out and "paper-data --download" in out and requested == []
    assert cli_main(["paper-data", "--group", "published_tables", "--download"]) == 0
    out = capsys.readouterr().out
    assert out.count("\npresent ") == 12 and len(requested) == 13
    monkeypatch.setenv("RMLIB_OFFLINE", "1")  # downloaded files count as present offline
    assert cli_main(["paper-data", "--group", "published_tables"]) == 0


@pytest.mark.parametrize("key", ["04", "06"])
def test_a_clone_without_shared_data_executes_chapters_4_and_6_from_downloads(online, key, tmp_path, monkeypatch):
    """A fresh clone (no ``../shared``: RMLIB_DATA_DIR an empty folder, an empty cache and score store) with
    RMLIB_DATA_MIRROR at the mirror executes chapter 4 / 6 with its tiny parameters: every released file it reads
    is downloaded into the cache (hash-checked) and the page has no error."""
    import nbformat

    from rmlib import book

    _, requested, cache = online
    monkeypatch.setenv("RMLIB_SCORES_DIR", str(tmp_path / "scores"))
    source = book.chapter_notebook(key)
    out = book.run_chapter(source, book.tiny_parameters(source), output_dir=tmp_path / "page", cell_timeout=600)
    page = nbformat.read(str(out), as_version=4)
    assert not [o for c in page.cells if c.cell_type == "code" for o in c.get("outputs", [])
                if o.get("output_type") == "error"]
    assert not list(pathlib.Path(os.environ["RMLIB_DATA_DIR"]).iterdir())  # nothing written into the data folder
    downloaded = {e.name for e in data_files.REGISTRY.values() if e.url and downloads.local_copy(e) is not None}
    reads = {"04": {ELO}, "06": {"followup:prompts", "followup:big2_nouns", "followup:mfd20"}}[key]
    assert reads <= downloaded and len(requested) >= len(downloaded)
    assert all(str(downloads.local_copy(data_files.REGISTRY[n])).startswith(str(cache)) for n in downloaded)
